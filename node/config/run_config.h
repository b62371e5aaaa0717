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
  std::string compression = "none";  // SwarmSGD: none | lattice:BITS[:SCALE]
  int top_k = 0;              // CHOCO-SGD: coordinates sent per message (0 = all)
  double choco_gamma = 0.5;   // CHOCO-SGD: consensus step
  double optra_nu = 100;   // OPTRA's nu (ALGORITHMS.md §3.2)
  int optra_inner = 4;     // OPTRA's 2K: gossip exchanges per iteration (even)
  int64_t iterations = 1000;  // round-based: outer iterations; pairwise: local steps per node
  int64_t horizon = 0;     // OPTRA's T, which its steps depend on; 0 = iterations
  double apmc_beta0 = 1e4;       // APM-C's beta0 (ALGORITHMS.md §3.3)
  double apmc_inner_const = 0.2; // APM-C: T_k = ceil(const * log(k) / sqrt(1 - lambda2(W')))
  // Network-DANE/SVRG/SARAH (ALGORITHMS.md §2.4): the proximal weight mu, n_mix exchanges per
  // iteration, and K_in inner steps (0 = 5% of the node's samples) of step --step.
  double dane_mu = 0.0;
  int mix_rounds = 1;
  int inner_steps = 0;
  // The diffusion of topology inference (ALGORITHMS.md §5.2): A = rho (I - (c/d_max) Lap).
  double rho = 0.75;
  double diffusion_c = 0.9;
  // Problem and data.
  std::string problem = "logistic";
  double l2 = 1e-4;
  int hidden = 64;                 // MLP hidden units
  std::string data;                // training data file (IDX: the images file)
  std::string format = "auto";     // libsvm | idx | csv | auto
  int label_column = 0;            // CSV: the label's column (0-based, counted in the file)
  int features = 0;                // declared feature count for LIBSVM (0 = from the data)
  std::string test_data;           // optional test set, same format
  std::string partition = "iid";   // iid | label | dirichlet:ALPHA
  std::string x0 = "zeros";        // zeros | uniform (U[0,1] per node) | a file (1 or N rows)
  double loss_scale = 0.0;         // s in f_i = s sum l + (lambda/2)||x||^2; 0 = N/M
  std::string x_star;              // file with a minimiser x*: adds the Bregman gap to metrics
  // Network.
  int nodes = 8;
  std::string topology = "ring";
  std::string mixing_file;         // explicit W (overrides --topology and the MH weights)
  std::string laplacian_file;      // explicit Lap = I - W (likewise)
  uint64_t seed = 1;
  // Output.
  std::string metrics;             // JSON-lines file, empty = none
  std::string reference_optimum;   // "", a number f*, or "auto" (solve centrally)
  int64_t log_every = 0;           // metrics period in iterations, 0 = about 200 lines per run
};

}  // namespace starling::node
