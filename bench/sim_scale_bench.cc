// starling-bench-sim-scale: 1,000 nodes of EXTRA and of SwarmSGD in one process, through
// the simulator classes that starling-sim uses, against the bare gradient work of the same nodes
// measured in the same run.
//
// Data: a9a (LIBSVM, d = 123, 32,561 samples, so about 32 per node at N = 1000), binary logistic
// regression, lambda = 1e-2, i.i.d. split, ring, seed 1.
//   extra:    RoundSimulator::Step (every node advances one iteration: mixing over its neighbours
//             plus one full local gradient). Reference: one Problem::Gradient per node at its
//             current model, i.e. the compute floor of an EXTRA step.
//   swarmsgd: PairwiseSimulator::Activate (a random node's local steps, then an exchange with a
//             random neighbour; default batch 8, H = 1). Reference: one mini-batch gradient of 8
//             samples through a GradientOracle per local step.
// Simulated batches and reference batches are interleaved; the fastest batch of each is kept (the
// machine is shared). One JSON line per algorithm:
//   {"bench":"sim-scale","algorithm":..,"nodes":N,"steps_per_s":..,"reference_steps_per_s":..,
//    "ratio":..}
// where a step is one iteration of all N nodes (extra) or one local step of one node (swarmsgd)
// and ratio = simulated steps/s over reference steps/s (1.0: the simulator adds nothing to the
// gradient work).
// Usage: starling-bench-sim-scale [--data A9A] [--nodes N] [--seconds S]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "algorithms/problems/gradient_oracle.h"
#include "node/config/run_config.h"
#include "node/config/run_setup.h"
#include "node/sim/pairwise_simulator.h"
#include "node/sim/round_simulator.h"

namespace {

using BenchClock = std::chrono::steady_clock;
namespace node = starling::node;
namespace algorithms = starling::algorithms;

constexpr int kRounds = 7;

void Usage() {
  std::fprintf(stderr,
               "usage: starling-bench-sim-scale [--data PATH_TO_A9A] [--nodes N] [--seconds S]\n"
               "  defaults: --data %s/a9a --nodes 1000 --seconds 6 (per algorithm)\n",
               STARLING_SHARED_DATA);
}

double Seconds(BenchClock::time_point a, BenchClock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Runs op until it has taken about `seconds`; returns (calls, seconds).
template <typename Op>
std::pair<int64_t, double> TimeFor(double seconds, Op&& op) {
  const auto start = BenchClock::now();
  int64_t n = 0;
  double elapsed = 0;
  do {
    op();
    ++n;
    elapsed = Seconds(start, BenchClock::now());
  } while (elapsed < seconds);
  return {n, elapsed};
}

void Print(const char* algorithm, int nodes, const char* unit, double sim_rate, double ref_rate,
           const std::string& extra) {
  std::printf(
      "{\"bench\":\"sim-scale\",\"algorithm\":\"%s\",\"nodes\":%d,\"step\":\"%s\","
      "\"steps_per_s\":%.4g,\"reference_steps_per_s\":%.4g,\"ratio\":%.3f%s}\n",
      algorithm, nodes, unit, sim_rate, ref_rate, sim_rate / ref_rate, extra.c_str());
  std::fflush(stdout);
}

void BenchExtra(const node::RunConfig& base, double seconds) {
  node::RunConfig config = base;
  config.algorithm = "extra";
  const node::RunSetup setup = node::BuildRunSetup(config, {-1, true, false});
  node::RoundSimulator sim(setup.nodes, node::RoundOptionsFor(config, setup));
  const int n = static_cast<int>(setup.nodes.size());
  std::vector<starling::Vec> grads(n);
  for (int i = 0; i < 3; ++i) sim.Step();  // warm up buffers
  auto reference = [&] {
    for (int i = 0; i < n; ++i) setup.problems[i]->Gradient(sim.node(i).Model(), &grads[i]);
  };
  double best_sim = 1e300, best_ref = 1e300;
  for (int r = 0; r < kRounds; ++r) {
    const auto s = TimeFor(seconds / (2 * kRounds), [&] { sim.Step(); });
    best_sim = std::min(best_sim, s.second / s.first);
    const auto f = TimeFor(seconds / (2 * kRounds), reference);
    best_ref = std::min(best_ref, f.second / f.first);
  }
  Print("extra", n, "iteration of all nodes", 1.0 / best_sim, 1.0 / best_ref,
        ",\"node_steps_per_s\":" + std::to_string(n / best_sim));
}

void BenchSwarm(const node::RunConfig& base, double seconds) {
  node::RunConfig config = base;
  config.algorithm = "swarmsgd";
  const node::RunSetup setup = node::BuildRunSetup(config, {-1, true, false});
  const algorithms::PairwiseOptions options = node::PairwiseOptionsFor(config, setup);
  node::PairwiseSimulator sim(setup.nodes, options, config.seed);
  const int n = static_cast<int>(setup.nodes.size());
  std::vector<algorithms::GradientOracle> oracles;
  for (int i = 0; i < n; ++i) {
    oracles.emplace_back(setup.problems[i].get(), options.batch_size, 7 + i);
  }
  starling::Vec g;
  for (int i = 0; i < 100; ++i) sim.Activate();
  int next = 0;
  auto reference = [&] {  // one local step's gradient at a node's current model
    oracles[next].Compute(sim.node(next).Model(), &g);
    next = (next + 1) % n;
  };
  double best_sim = 1e300, best_ref = 1e300;
  for (int r = 0; r < kRounds; ++r) {
    const int64_t steps0 = sim.total_local_steps();
    const auto s = TimeFor(seconds / (2 * kRounds), [&] { sim.Activate(); });
    best_sim = std::min(best_sim, s.second / static_cast<double>(sim.total_local_steps() - steps0));
    const auto f = TimeFor(seconds / (2 * kRounds), reference);
    best_ref = std::min(best_ref, f.second / f.first);
  }
  Print("swarmsgd", n, "local step of one node", 1.0 / best_sim, 1.0 / best_ref,
        ",\"exchanges_per_s\":" + std::to_string(1.0 / best_sim / options.local_steps));
}

}  // namespace

int main(int argc, char** argv) {
  node::RunConfig config;
  config.problem = "logistic";
  config.l2 = 1e-2;
  config.data = std::string(STARLING_SHARED_DATA) + "/a9a";
  config.format = "libsvm";
  config.nodes = 1000;
  config.topology = "ring";
  config.seed = 1;
  double seconds = 6;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) {
      Usage();
      return 2;
    }
    const char* value = argv[++i];
    if (arg == "--data") {
      config.data = value;
    } else if (arg == "--nodes") {
      config.nodes = std::atoi(value);
    } else if (arg == "--seconds") {
      seconds = std::atof(value);
    } else {
      Usage();
      return 2;
    }
  }
  if (config.nodes < 2 || !(seconds > 0)) {
    Usage();
    return 2;
  }
  try {
    BenchExtra(config, seconds);
    BenchSwarm(config, seconds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "starling-bench-sim-scale: %s\n", e.what());
    return 1;
  }
  return 0;
}
