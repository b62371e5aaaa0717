#include "node/probe/infer_probe.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <memory>
#include <optional>
#include <ostream>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <zmq.hpp>

#include "net/codec.h"
#include "net/endpoint.h"
#include "net/security.h"
#include "node/config/curve_setup.h"
#include "node/report/json_line.h"
#include "node/drivers/sample_telemetry.h"
#include "node/probe/step_aligner.h"
#include "topology/cluster_file.h"
#include "topology/inference.h"

extern char** environ;

namespace starling::node {

namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

int ParseId(const std::string& text, const std::string& spec) {
  size_t used = 0;
  int value = -1;
  try {
    value = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || value < 0) {
    throw std::invalid_argument("--observe '" + spec + "': '" + text + "' is not a node id");
  }
  return value;
}

// Runs `python3 script dir` with a deadline; returns a note for the user (empty = drawn).
std::string Plot(const std::string& script, const std::string& dir) {
  const std::string python = "/usr/bin/python3";
  if (access(python.c_str(), X_OK) != 0) return "no " + python + ": no PNG drawn";
  if (access(script.c_str(), R_OK) != 0) return script + " not found: no PNG drawn";
  std::vector<std::string> argv = {python, script, dir};
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, python.c_str(), nullptr, nullptr, args.data(), environ) != 0) {
    return "cannot start " + python + ": no PNG drawn";
  }
  const auto start = Clock::now();
  while (true) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
      return script + " failed: no PNG drawn";
    }
    if (SecondsSince(start) > 60) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return script + " took longer than 60 s: no PNG drawn";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

double Field(const net::Envelope& e, const char* name, double fallback) {
  for (const auto& f : e.telemetry) {
    if (f.name == name) return f.value;
  }
  return fallback;
}

}  // namespace

std::vector<int> ParseObservedNodes(const std::string& spec, int num_nodes,
                                    const std::string& cluster_file) {
  std::vector<int> ids;
  std::set<int> seen;
  std::stringstream items(spec);
  std::string item;
  while (std::getline(items, item, ',')) {
    const size_t dash = item.find('-', 1);
    const int lo = ParseId(item.substr(0, dash), spec);
    const int hi = dash == std::string::npos ? lo : ParseId(item.substr(dash + 1), spec);
    if (hi < lo) throw std::invalid_argument("--observe '" + spec + "': empty range " + item);
    for (int id = lo; id <= hi; ++id) {
      if (id >= num_nodes) {
        throw std::invalid_argument("--observe: node " + std::to_string(id) + " is not in " +
                                    cluster_file + " (it lists nodes 0.." +
                                    std::to_string(num_nodes - 1) + ")");
      }
      if (!seen.insert(id).second) {
        throw std::invalid_argument("--observe: node " + std::to_string(id) + " is listed twice");
      }
      ids.push_back(id);
    }
  }
  if (ids.size() < 2) {
    throw std::invalid_argument("--observe '" + spec + "': give at least two node ids");
  }
  return ids;
}

int RunInferProbe(const InferProbeOptions& options, const std::atomic<bool>* stop,
                  std::ostream& out) {
  if (options.cluster_file.empty()) throw std::invalid_argument("--cluster: required");
  if (options.observe.empty()) throw std::invalid_argument("--observe: required (node ids)");
  const topology::Cluster cluster = topology::ReadClusterFile(options.cluster_file);
  const int n = static_cast<int>(cluster.nodes.size());
  const std::vector<int> ids = ParseObservedNodes(options.observe, n, options.cluster_file);
  const int s = static_cast<int>(ids.size());
  const std::vector<topology::Estimator> estimators = topology::ParseEstimators(options.estimator);
  const topology::Clustering clustering = topology::ParseClustering(options.clustering);
  int64_t minimum = 0;
  for (auto e : estimators) {
    const int64_t need = topology::MinimumSamples(e, s);
    if (options.samples < need) {
      throw std::invalid_argument("--samples " + std::to_string(options.samples) + ": the " +
                                  topology::EstimatorName(e) + " estimator needs at least " +
                                  std::to_string(need) + " for " + std::to_string(s) +
                                  " observed nodes");
    }
    minimum = std::max(minimum, need);
  }
  if (options.burn_in < 0) throw std::invalid_argument("--burn-in: must be >= 0");
  if (!(options.connect_timeout_seconds > 0) || !(options.timeout_seconds > 0)) {
    throw std::invalid_argument("--connect-timeout-s and --timeout-s must be positive");
  }
  if (!(options.drop_fraction >= 0 && options.drop_fraction < 1)) {
    throw std::invalid_argument("--drop-fraction: must be in [0, 1)");
  }
  std::filesystem::create_directories(options.out_dir);

  // One SUB socket per observed node, so that a message's socket tells who sent it: a sender
  // field that disagrees is rejected rather than trusted.
  const std::optional<net::CurveOptions> curve =
      ProbeCurveOptions(cluster, options.secret_key_file, options.allow_plaintext);
  zmq::context_t context(1);
  net::DecodeLimits limits = net::LimitsForRun(kMaxSampleBatch, 1);
  std::vector<std::unique_ptr<zmq::socket_t>> subs;
  std::vector<std::string> endpoints;
  for (int id : ids) {
    auto sub = std::make_unique<zmq::socket_t>(context, zmq::socket_type::sub);
    sub->set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(limits.max_message_bytes));
    sub->set(zmq::sockopt::subscribe, "");
    sub->set(zmq::sockopt::linger, 0);
    const std::string endpoint = net::TelemetryEndpointFor(cluster.nodes[id].endpoint);
    try {
      if (curve) net::MakeCurveClient(sub.get(), *curve, curve->server_keys.at(id));
      sub->connect(endpoint);
    } catch (const zmq::error_t& e) {
      throw std::runtime_error("cannot connect to the telemetry of node " + std::to_string(id) +
                               " at " + endpoint + ": " + e.what());
    }
    endpoints.push_back(endpoint);
    subs.push_back(std::move(sub));
  }

  topology::MomentAccumulator moments(s);
  StepAligner aligner(s, options.burn_in, &moments);
  std::vector<bool> heard(s, false), final(s, false);
  std::optional<uint64_t> run_id;
  int64_t rejected = 0, wrong_run = 0, batches = 0, dropped_batches = 0;
  std::mt19937_64 drop_rng(12345);
  std::uniform_real_distribution<double> unit(0.0, 1.0);

  out << "infer: watching nodes " << options.observe << " of " << options.cluster_file << " (" << s
      << " nodes, " << s * (s - 1) / 2 << " pairs) for " << options.samples << " aligned samples"
      << std::endl;
  const Clock::time_point start = Clock::now();
  Clock::time_point last_progress = start;
  std::string stop_reason;
  zmq::message_t message;
  net::Envelope envelope;
  net::Reject reject;
  std::vector<zmq::pollitem_t> items;
  for (auto& sub : subs) items.push_back({sub->handle(), 0, ZMQ_POLLIN, 0});
  while (aligner.pairs() < options.samples) {
    if (stop->load()) {
      stop_reason = "stopped by a signal";
      break;
    }
    try {
      zmq::poll(items.data(), items.size(), std::chrono::milliseconds(100));
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;
    }
    for (int k = 0; k < s; ++k) {
      for (int budget = 0; budget < 256; ++budget) {
        try {
          if (!subs[k]->recv(message, zmq::recv_flags::dontwait)) break;
        } catch (const zmq::error_t&) {
          break;  // EINTR: the loop checks the stop flag
        }
        if (!net::Decode(static_cast<const char*>(message.data()), message.size(), limits,
                         &envelope, &reject) ||
            envelope.type != net::MessageType::kTelemetry || envelope.sender != ids[k]) {
          ++rejected;
          continue;
        }
        if (!run_id) run_id = envelope.run_id;
        if (envelope.run_id != *run_id) {
          if (++wrong_run == 1) {
            out << "infer: node " << ids[k] << " publishes another run's telemetry than the "
                << "first node heard; ignoring it (check the cluster file)" << std::endl;
          }
          continue;
        }
        heard[k] = true;
        if (auto batch = ParseSampleBatch(envelope)) {
          ++batches;
          if (options.drop_fraction > 0 && unit(drop_rng) < options.drop_fraction) {
            ++dropped_batches;
            continue;
          }
          aligner.Add(k, batch->first_step, batch->values);
        } else if (Field(envelope, "final", 0.0) != 0.0) {
          final[k] = true;  // the node's last samples were published before this
        }
      }
    }
    const double elapsed = SecondsSince(start);
    if (elapsed >= options.connect_timeout_seconds) {
      for (int k = 0; k < s; ++k) {
        if (!heard[k]) {
          std::ostringstream msg;
          msg << "infer: no telemetry from node " << ids[k] << " at " << endpoints[k] << " within "
              << options.connect_timeout_seconds
              << " s: is it running (a diffusion run), and is that its address?";
          out << msg.str() << std::endl;
          return 3;
        }
      }
    }
    if (std::all_of(final.begin(), final.end(), [](bool f) { return f; })) {
      stop_reason = "the observed nodes have finished";
      break;
    }
    if (elapsed >= options.timeout_seconds) {
      stop_reason = "--timeout-s passed";
      break;
    }
    if (SecondsSince(last_progress) >= 2.0) {
      last_progress = Clock::now();
      out << "infer: t=" << std::fixed << std::setprecision(1) << elapsed << "s "
          << std::defaultfloat << aligner.pairs() << "/" << options.samples << " sample pairs, "
          << aligner.dropped_rows() << " incomplete steps dropped" << std::endl;
    }
  }
  const int64_t pairs = aligner.pairs();
  out << "infer: " << pairs << " aligned sample pairs from " << aligner.complete_rows()
      << " complete steps (" << aligner.dropped_rows() << " steps not seen from every observed "
      << "node dropped; " << batches << " batches";
  if (dropped_batches) out << ", " << dropped_batches << " discarded by --drop-fraction";
  out << ") in " << std::fixed << std::setprecision(1) << SecondsSince(start) << " s"
      << std::defaultfloat << std::endl;
  if (rejected) out << "infer: rejected " << rejected << " malformed or misattributed messages\n";
  if (pairs < minimum) {
    out << "infer: only " << pairs << " aligned sample pairs"
        << (stop_reason.empty() ? "" : " (" + stop_reason + ")") << "; the estimator needs at "
        << "least " << minimum << " for " << s << " observed nodes" << std::endl;
    return 3;
  }
  if (pairs < options.samples) {
    out << "infer: " << stop_reason << " before " << options.samples
        << " samples; inferring from the " << pairs << " there are" << std::endl;
  }

  // Inference and the comparison with the cluster file's graph.
  const topology::Moments m = moments.Finish();
  const auto pair_list = topology::ObservedPairs(s);
  std::vector<bool> truth;
  for (const auto& [i, j] : pair_list) truth.push_back(cluster.graph.HasEdge(ids[i], ids[j]));
  const std::string dir = options.out_dir;
  std::ofstream edges(dir + "/edges.tsv"), summary(dir + "/summary.jsonl");
  if (!edges || !summary) throw std::runtime_error(dir + ": cannot write the results");
  edges << "estimator\tnode_i\tnode_j\tscore\tinferred\ttrue\n" << std::setprecision(10);
  for (size_t e = 0; e < estimators.size(); ++e) {
    const topology::InferenceResult r = topology::Infer(estimators[e], m, clustering);
    const topology::Classification c = topology::Compare(r.split.upper, truth);
    const double gap = topology::IdentifiabilityGap(r.scores, truth);
    const char* name = topology::EstimatorName(estimators[e]);
    for (size_t p = 0; p < pair_list.size(); ++p) {
      edges << name << '\t' << ids[pair_list[p].first] << '\t' << ids[pair_list[p].second] << '\t'
            << r.scores[p] << '\t' << r.split.upper[p] << '\t' << truth[p] << '\n';
    }
    JsonLine line;
    line.Add("estimator", std::string(name))
        .Add("clustering", options.clustering)
        .Add("samples", pairs)
        .Add("accuracy", c.accuracy)
        .Add("sensitivity", c.sensitivity)
        .Add("specificity", c.specificity)
        .Add("gap", gap)
        .Add("threshold", r.split.threshold)
        .Add("true_edges", c.true_positives + c.false_negatives)
        .Add("inferred_edges", c.true_positives + c.false_positives)
        .Add("observe", options.observe);
    summary << line.str() << '\n';
    out << name << ": accuracy " << c.accuracy << "  sensitivity " << c.sensitivity
        << "  specificity " << c.specificity << "  gap " << std::setprecision(4) << gap
        << std::setprecision(6) << "  (" << c.true_positives + c.false_positives
        << " edges inferred, " << c.true_positives + c.false_negatives << " true, " << pairs
        << " samples)" << std::endl;
    if (e == 0) {
      std::ofstream dot(dir + "/inferred.dot");
      dot << "graph inferred {\n  // " << name << " estimator, " << pairs << " samples, nodes "
          << options.observe << " of " << options.cluster_file
          << ".\n  // green: inferred and true; red: inferred, not true; grey dashed: missed.\n";
      for (int id : ids) dot << "  " << id << ";\n";
      for (size_t p = 0; p < pair_list.size(); ++p) {
        if (!r.split.upper[p] && !truth[p]) continue;
        const char* style = r.split.upper[p] && truth[p] ? "color=green"
                            : r.split.upper[p]           ? "color=red"
                                                         : "color=grey, style=dashed";
        dot << "  " << ids[pair_list[p].first] << " -- " << ids[pair_list[p].second] << " ["
            << style << ", label=\"" << std::setprecision(3) << r.scores[p] << "\"];\n";
      }
      dot << "}\n";
      if (!dot) throw std::runtime_error(dir + "/inferred.dot: write failed");
    }
  }
  edges.close();
  summary.close();
  if (!edges || !summary) throw std::runtime_error(dir + ": write failed");
  out << "infer: wrote " << dir << "/edges.tsv, " << dir << "/inferred.dot, " << dir
      << "/summary.jsonl";
  if (!options.plot_script.empty()) {
    const std::string note = Plot(options.plot_script, dir);
    if (note.empty()) {
      out << ", " << dir << "/inference.png";
    } else {
      out << "\ninfer: " << note;
    }
  }
  out << std::endl;
  return 0;
}

}  // namespace starling::node
