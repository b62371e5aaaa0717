// Helpers for tests that run real starlingd processes on loopback: a scratch folder, a cluster
// file (node i at 127.0.0.(i+1):PORT, optionally with fresh CURVE keys), and the final models
// the daemons write.
#pragma once

#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/data/readers.h"
#include "algorithms/problems/problem_factory.h"
#include "algorithms/problems/reference_solver.h"
#include "algorithms/types.h"
#include "net/curve_keys.h"
#include "node/config/run_setup.h"
#include "node/report/model_spread.h"
#include "node/sim/round_simulator.h"
#include "tests/subprocess.h"
#include "topology/cluster_file.h"
#include "topology/graph.h"

namespace starling::testing {

inline const std::string kDaemonBinary = std::string(STARLING_BINARY_DIR) + "/node/starlingd";

// A fresh, empty folder under the system's temporary directory, unique per test process.
inline std::string FreshTempDir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("starling-" + name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// Writes DIR/cluster.conf for `graph` with node i at tcp://127.0.0.(i+1):port. With `keys`, each
// node also gets a fresh key pair DIR/keys/node-i.{key,pub} whose public key the file lists.
inline std::string WriteLoopbackCluster(const std::string& dir, const topology::Graph& graph,
                                        int port, bool keys) {
  topology::Cluster cluster;
  cluster.graph = graph;
  if (keys) std::filesystem::create_directories(dir + "/keys");
  for (int i = 0; i < graph.num_nodes(); ++i) {
    const std::string key =
        keys ? net::WriteCurveKeyFiles(dir + "/keys/node-" + std::to_string(i)).public_key : "";
    cluster.nodes.push_back(
        {i, "tcp://127.0.0." + std::to_string(i + 1) + ":" + std::to_string(port), key});
  }
  const std::string path = dir + "/cluster.conf";
  topology::WriteClusterFile(cluster, path);
  return path;
}

// The number after "key": in a flat JSON line (starlingd --metrics); 0 if the key is absent.
inline double MetricsField(const std::string& line, const std::string& key) {
  const size_t at = line.find("\"" + key + "\":");
  return at == std::string::npos ? 0.0 : std::strtod(line.c_str() + at + key.size() + 3, nullptr);
}

// A model file written by starlingd --final-model (one number per line).
inline Vec ReadModelFile(const std::string& path) {
  std::ifstream in(path);
  std::vector<double> values;
  double v;
  while (in >> v) values.push_back(v);
  return Eigen::Map<Vec>(values.data(), static_cast<Eigen::Index>(values.size()));
}

// Runs one starlingd per node of the loopback cluster written by WriteLoopbackCluster(keys =
// true) with `args`, each with --final-model DIR/model-i.txt, --metrics DIR/node-i.jsonl and its
// log in DIR/node-i.log; waits for all with a deadline and returns the final models. Fails the
// test (with the node's log) if a node fails or hangs.
inline std::vector<Vec> RunLoopbackDaemons(const std::string& dir, const std::string& cluster,
                                           int n, const std::vector<std::string>& args,
                                           int timeout_s) {
  std::vector<std::unique_ptr<Subprocess>> procs;
  for (int i = 0; i < n; ++i) {
    const std::string node = std::to_string(i);
    std::vector<std::string> argv = {kDaemonBinary, "--cluster", cluster, "--id", node,
                                     "--final-model", dir + "/model-" + node + ".txt",
                                     "--metrics", dir + "/node-" + node + ".jsonl",
                                     "--secret-key", dir + "/keys/node-" + node + ".key"};
    argv.insert(argv.end(), args.begin(), args.end());
    procs.push_back(std::make_unique<Subprocess>(argv, dir + "/node-" + node + ".log"));
  }
  std::vector<Vec> models;
  std::string failed;
  for (int i = 0; i < n; ++i) {
    const int code = procs[i]->Wait(std::chrono::seconds(timeout_s));
    const std::string log = ReadFile(dir + "/node-" + std::to_string(i) + ".log");
    EXPECT_EQ(code, 0) << "node " << i << " log:\n" << log;
    if (code != 0) failed += " " + std::to_string(i);
    models.push_back(ReadModelFile(dir + "/model-" + std::to_string(i) + ".txt"));
  }
  // Ends the test (GoogleTest reports the exception as a failure): its callers compare the
  // models coordinate by coordinate, and a failed node's empty model would be read out of bounds.
  if (!failed.empty()) throw std::runtime_error("starlingd failed on node(s)" + failed);
  return models;
}

// A run in which one node dies and comes back: `n` starlingd processes of `args` on the
// plaintext loopback `cluster`, node i with --final-model DIR/model-i, --checkpoint
// DIR/checkpoint-i and its log in DIR/log-i. Once node `victim` has written its first checkpoint
// (60 s at most) and `pause` has passed, so that the kill lands mid-run, it is killed with
// SIGKILL and started again with --resume (log DIR/log-VICTIM-resumed). Waits for every node
// (120 s each), expects exit 0 of each, prints the resumed node's "resumed from" line and
// returns the final models; empty, with the test failed, if the victim never checkpointed or
// had finished before the kill.
inline std::vector<Vec> RunWithKilledAndResumedNode(const std::string& dir,
                                                    const std::string& cluster, int n, int victim,
                                                    const std::vector<std::string>& args,
                                                    std::chrono::milliseconds pause) {
  using namespace std::chrono_literals;
  auto path = [&](const std::string& what, int i) {
    return dir + "/" + what + "-" + std::to_string(i);
  };
  auto start = [&](int i, const std::vector<std::string>& extra, const std::string& log) {
    std::vector<std::string> argv = {
        kDaemonBinary,         "--cluster",        cluster,          "--id",
        std::to_string(i),     "--final-model",    path("model", i), "--checkpoint",
        path("checkpoint", i), "--allow-plaintext"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return std::make_unique<Subprocess>(argv, log);
  };
  std::vector<std::unique_ptr<Subprocess>> procs;
  for (int i = 0; i < n; ++i) procs.push_back(start(i, args, path("log", i)));
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!std::filesystem::exists(path("checkpoint", victim))) {
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "no checkpoint of node " << victim << " after 60 s:\n"
                    << ReadFile(path("log", victim));
      return {};
    }
    std::this_thread::sleep_for(20ms);
  }
  std::this_thread::sleep_for(pause);
  procs[victim]->Signal(SIGKILL);
  EXPECT_EQ(procs[victim]->Wait(5s), 128 + SIGKILL);
  if (std::filesystem::exists(path("model", victim))) {
    ADD_FAILURE() << "node " << victim << " was killed after it finished";
    return {};
  }
  std::vector<std::string> resume = args;
  resume.push_back("--resume");
  procs[victim] = start(victim, resume, path("log", victim) + "-resumed");
  std::vector<Vec> models;
  for (int i = 0; i < n; ++i) {
    const int code = procs[i]->Wait(120s);
    const std::string log = path("log", i) + (i == victim ? "-resumed" : "");
    EXPECT_EQ(code, 0) << "node " << i << " log:\n" << ReadFile(log);
    models.push_back(ReadModelFile(path("model", i)));
  }
  const std::string resumed_log = ReadFile(path("log", victim) + "-resumed");
  const auto at = resumed_log.find("resumed from");
  EXPECT_NE(at, std::string::npos) << resumed_log;
  if (at != std::string::npos) {
    std::printf("%s\n", resumed_log.substr(at, resumed_log.find('\n', at) - at).c_str());
  }
  return models;
}

// a9a's file is LIBSVM's training split (32,561 rows) followed by its test split: written apart
// into DIR/a9a.train and DIR/a9a.test so that accuracy is measured on held-out rows.
struct A9aSplit {
  std::string train, test;
};
inline A9aSplit SplitA9a(const std::string& a9a, const std::string& dir) {
  A9aSplit split{dir + "/a9a.train", dir + "/a9a.test"};
  std::ifstream in(a9a);
  std::ofstream train(split.train), test(split.test);
  std::string line;
  for (int row = 0; std::getline(in, line); ++row) (row < 32561 ? train : test) << line << '\n';
  return split;
}

// The daemons' average model against the centralized L2-logistic optimum on the training split,
// solved here, independently of the daemons: held-out accuracy of both, the relative objective
// gap of the average, and the consensus distance.
struct A9aOutcome {
  double accuracy, reference_accuracy, gap, consensus;
};
inline A9aOutcome EvaluateOnA9a(const A9aSplit& split, double l2, const std::vector<Vec>& models) {
  algorithms::ProblemSpec spec;
  spec.kind = "logistic";
  spec.l2 = l2;
  algorithms::Dataset train = algorithms::ReadLibsvm(split.train, 123);
  const int m = train.num_samples();
  const auto global = algorithms::MakeProblem(spec, std::move(train), 1.0 / m);
  const auto held_out = algorithms::MakeProblem(spec, algorithms::ReadLibsvm(split.test, 123), 1.0);
  const algorithms::ReferenceSolution ref = algorithms::SolveReference(*global);
  std::vector<const Vec*> views;
  for (const Vec& v : models) views.push_back(&v);
  const node::ModelSpread spread = node::SpreadOf(views);
  return {*held_out->Accuracy(spread.mean), *held_out->Accuracy(ref.x),
          (global->Value(spread.mean) - ref.value) / ref.value, spread.consensus};
}

// The simulator's per-node models for the round-based runs the daemon tests start: `algorithm`
// on a9a (logistic, lambda 1e-2, LIBSVM, seed 7) over the graph of `cluster`, `iterations`
// iterations, with `adjust` applied to the configuration. The daemons must end at these.
inline std::vector<Vec> SimulatedA9aModels(
    const std::string& algorithm, const std::string& a9a, const std::string& cluster, int n,
    int64_t iterations, const std::function<void(node::RunConfig*)>& adjust = nullptr) {
  node::RunConfig config;
  config.algorithm = algorithm;
  config.problem = "logistic";
  config.l2 = 1e-2;
  config.data = a9a;
  config.format = "libsvm";
  config.seed = 7;
  config.iterations = iterations;
  config.nodes = n;
  config.topology = "file:" + cluster;
  if (adjust) adjust(&config);  // options beyond these, as the daemons were given them
  node::BuildScope scope;
  scope.global = false;
  const node::RunSetup setup = node::BuildRunSetup(config, scope);
  node::RoundSimulator sim(setup.nodes, node::RoundOptionsFor(config, setup));
  sim.RunUntilIteration(iterations);
  std::vector<Vec> models;
  for (int i = 0; i < n; ++i) models.push_back(sim.node(i).Model());
  return models;
}

}  // namespace starling::testing
