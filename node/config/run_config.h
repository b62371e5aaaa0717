// The run configuration shared by starling-sim and starlingd: what to optimise, on which data,
// over which graph, with which algorithm. Every node of a run must hold the same values (the
// run id is a hash of them, and of the chosen method's own parameters).
#pragma once

#include <cstdint>
#include <string>

#include "algorithms/params.h"

namespace starling::node {

struct RunConfig {
  // Algorithm.
  std::string algorithm = "extra";
  double step = 0.0;  // 0 = the algorithm's default / L
  // How the step changes over the run (algorithms/schedule/step_schedule.h): constant, inv-sqrt,
  // step:every=N,factor=F, cosine[:T=N], each with an optional warmup=W.
  std::string step_schedule = "constant";
  int batch = 0;                     // mini-batch size for stochastic methods; 0 = full gradients
                                     // (pairwise methods, which are always stochastic, then use 8)
  int local_steps = 1;               // H: local steps between exchanges (pairwise methods)
  std::string compression = "none";  // SwarmSGD: none | f32 | lattice:BITS[:SCALE]
  int64_t iterations = 1000;  // round-based: outer iterations; pairwise: local steps per node
  // Each method's own parameters (OPTRA's --optra-nu, CHOCO-SGD's --top-k, the diffusion's --rho,
  // ...) by option name, declared next to the method's code (algorithms/params.h) and bound to the
  // command line by AddRunOptions. A name not set takes its declared default.
  algorithms::ParamValues params;
  // Problem and data.
  std::string problem = "logistic";
  double l2 = 1e-4;
  int hidden = 64;                // MLP hidden units
  std::string data;               // training data file (IDX: the images file)
  std::string format = "auto";    // libsvm | idx | csv | auto
  int label_column = 0;           // CSV: the label's column (0-based, counted in the file)
  int features = 0;               // declared feature count for LIBSVM (0 = from the data)
  int num_classes = 0;            // classes 0..K-1 as written; 0 = the distinct labels, sorted
  std::string scale = "none";     // none | standard | minmax | maxabs (fitted on --data)
  std::string test_data;          // optional test set, same format
  std::string partition = "iid";  // iid | label | dirichlet:ALPHA
  // Block-cyclic data, "none" or "B:S" (algorithms/data/block_cyclic.h): rows in B blocks by
  // class group, and step t of a node samples only block floor(t/S) mod B. dgd, dpsgd, mm-psgd,
  // swarmsgd.
  std::string block_cyclic = "none";
  // auto | zeros | uniform (U[0,1] per node) | small | a file (1 or N rows); auto is zeros, or
  // small for the MLP, which does not learn from zeros (ResolvedX0).
  std::string x0 = "auto";
  double loss_scale = 0.0;  // s in f_i = s sum l + (lambda/2)||x||^2; 0 = N/M
  std::string x_star;       // file with a minimiser x*: adds the Bregman gap to metrics
  // What every node's model must share beyond what it exchanges (a front end's frozen
  // parameters), as a digest; empty = nothing. In the run id, so that differing nodes are refused.
  std::string model_digest;
  // Network.
  int nodes = 8;
  std::string topology = "ring";
  std::string mixing_file;     // explicit W (overrides --topology and the MH weights)
  std::string laplacian_file;  // explicit Lap = I - W (likewise)
  uint64_t seed = 1;
  // Stragglers: "NODE:FACTOR[,...]" (node/config/slow_nodes.h); not part of the run id.
  std::string slow_nodes;
  // Output.
  std::string metrics;            // JSON-lines file, empty = none
  std::string reference_optimum;  // "", a number f*, or "auto" (solve centrally)
  int64_t log_every = 0;          // metrics period in iterations, 0 = about 200 lines per run
};

// The starting point --x0 names, with auto resolved: small for the MLP (from zeros every hidden
// unit gets the same gradient and the model never learns), zeros otherwise.
inline std::string ResolvedX0(const RunConfig& c) {
  if (c.x0 != "auto") return c.x0;
  return c.problem == "mlp" ? "small" : "zeros";
}

}  // namespace starling::node
