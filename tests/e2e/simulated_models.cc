// The simulator's final model of every node of a round-based run, for a shell test that compares
// real daemons with it (tests/e2e/netns_join_test.sh): the same algorithm objects, run in one
// process on the graph of --topology, node i with shard i.
//
// Usage: simulated_models OUT_PREFIX RUN_OPTIONS...  (the daemons' run options, --nodes and
// --topology among them). Writes OUT_PREFIX-i.txt for every node i, one value per line with 17
// significant digits, as starlingd --final-model does, so equal models give equal files.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "algorithms/round/round_algorithm.h"
#include "node/config/run_options.h"
#include "node/config/run_setup.h"
#include "node/sim/round_simulator.h"

int main(int argc, char** argv) {
  try {
    if (argc < 2) {
      std::fprintf(stderr, "usage: simulated_models OUT_PREFIX RUN_OPTIONS...\n");
      return 2;
    }
    const std::string prefix = argv[1];
    starling::node::RunConfig config;
    boost::program_options::options_description options("run options");
    starling::node::AddRunOptions(&options, &config);
    starling::node::ParseCommandLine(argc - 1, argv + 1, options);
    if (!starling::algorithms::IsRoundAlgorithm(config.algorithm)) {
      std::fprintf(stderr, "simulated_models: --algorithm %s is not round-based\n",
                   config.algorithm.c_str());
      return 2;
    }
    starling::node::BuildScope scope;
    scope.global = false;
    const starling::node::RunSetup setup = starling::node::BuildRunSetup(config, scope);
    starling::node::RoundSimulator sim(setup.nodes, starling::node::RoundOptionsFor(config, setup));
    sim.RunUntilIteration(config.iterations);
    for (int i = 0; i < config.nodes; ++i) {
      const std::string path = prefix + "-" + std::to_string(i) + ".txt";
      std::FILE* f = std::fopen(path.c_str(), "w");
      if (f == nullptr) throw std::runtime_error(path + ": cannot write");
      for (double v : sim.node(i).Model()) std::fprintf(f, "%.17g\n", v);
      std::fclose(f);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "simulated_models: error: %s\n", e.what());
    return 2;
  }
}
