// The run configuration shared by starling-sim and starlingd: what to optimise, on which data,
// over which graph, with which algorithm. Every node of a run must hold the same values (the
// run id is a hash of them).
#pragma once

#include <cstdint>
#include <string>

namespace starling::node {

struct RunConfig {
  // Algorithm.
  std::string algorithm = "extra";
  double step = 0.0;       // 0 = the algorithm's default / L
  int batch = 0;           // mini-batch size for stochastic methods; 0 = full gradients
                           // (pairwise methods, which are always stochastic, then use 8)
  int local_steps = 1;     // H: local steps between exchanges (pairwise methods)
  double optra_nu = 100;   // OPTRA's nu (ALGORITHMS.md §3.2)
  int optra_inner = 4;     // OPTRA's 2K: gossip exchanges per iteration (even)
  int64_t iterations = 1000;  // round-based: outer iterations; pairwise: local steps per node
  // Problem and data.
  std::string problem = "logistic";
  double l2 = 1e-4;
  std::string data;                // training data file (IDX: the images file)
  std::string format = "auto";     // libsvm | idx | csv | auto
  int features = 0;                // declared feature count for LIBSVM (0 = from the data)
  std::string test_data;           // optional test set, same format
  std::string partition = "iid";   // iid | label | dirichlet:ALPHA
  std::string x0 = "zeros";        // zeros | uniform (U[0,1], a different draw per node)
  // Network.
  int nodes = 8;
  std::string topology = "ring";
  uint64_t seed = 1;
  // Output.
  std::string metrics;             // JSON-lines file, empty = none
  std::string reference_optimum;   // "", a number f*, or "auto" (solve centrally)
  int64_t log_every = 0;           // metrics period in iterations, 0 = about 200 lines per run
};

}  // namespace starling::node
