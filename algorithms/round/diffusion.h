// The noisy linear diffusion used for topology inference
// (docs/explanations/algorithms/diffusion.md):
//   y_t = A y_{t-1} + x_t,   x_t ~ N(0, sigma^2 I) i.i.d.,   y_0 = 0,
// with the Laplacian combination rule A = rho (I - (c / d_max)(D - Adj)), 0 < rho, c < 1:
// a_ij = rho c / d_max on edges, a_ii = rho (1 - c deg_i / d_max); every row sums to rho, so A
// is symmetric, non-negative and stable. d_max is the graph's largest degree, which every node
// must know (it comes from the cluster file every node reads).
//
// Node i's state is one scalar; one step sends it to every neighbour (a payload of size 1).
// Node i's noise comes from its own generator seeded with NodeSetup::seed and converted by hand
// (GaussianStream), so every build of every binary draws the same numbers. Diffusion (one node,
// a RoundAlgorithm for the daemon's synchronizer) and DiffusionNetwork (all nodes at once, for
// the simulator at scale) share the per-node update and give bit-identical states.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "algorithms/algorithm_state.h"
#include "algorithms/params.h"
#include "algorithms/round/diffusion_params.h"
#include "algorithms/round/round_algorithm.h"
#include "algorithms/types.h"

namespace starling::algorithms {

// Standard normal draws from std::mt19937_64 by the Box-Muller transform, both outputs used.
// Deterministic for a seed on every platform (std::normal_distribution is not).
class GaussianStream {
 public:
  explicit GaussianStream(uint64_t seed) : rng_(seed) {}
  double Next();
  // The generator's state (engine and the spare draw) as text, and back. Load throws
  // std::invalid_argument for text that Save did not write.
  std::string Save() const;
  void Load(const std::string& text);

 private:
  double Uniform();  // in (0, 1]
  std::mt19937_64 rng_;
  bool has_spare_ = false;
  double spare_ = 0.0;
};

// The diffusion's own parameters, --rho and --c (DiffusionParams::rho, c; sigma and max_degree
// are not options).
const ParamTable<DiffusionParams>& DiffusionParamTable();

class Diffusion : public RoundAlgorithm {
 public:
  // Ignores setup.problem, setup.x0 and the mixing weights (the Laplacian rule replaces them).
  Diffusion(const NodeSetup& setup, const DiffusionParams& params);

  std::string name() const override { return "diffusion"; }
  StepKey key() const override { return {iteration_, 0, 0}; }
  const Vec& Outgoing() const override { return y_; }
  void Advance(const std::vector<const Vec*>& inbox) override;
  int64_t iteration() const override { return iteration_; }
  // y_t, a vector of size 1.
  const Vec& Model() const override { return y_; }
  AlgorithmCounters counters() const override { return {iteration_, iteration_, 0.0}; }
  bool SaveState(AlgorithmState* state) const override;
  void LoadState(const AlgorithmState& state) override;

 private:
  NodeSetup setup_;
  DiffusionParams params_;
  double self_weight_, edge_weight_;
  GaussianStream noise_;
  int64_t iteration_ = 0;
  Vec y_;
};

// All nodes of the diffusion in lockstep, in one process: the matrix form, computed node by node
// with the same arithmetic as Diffusion so that the states agree bit for bit.
class DiffusionNetwork {
 public:
  // nodes[i].id must be i and nodes[i].neighbors ascending (as RunSetup builds them).
  DiffusionNetwork(const std::vector<NodeSetup>& nodes, const DiffusionParams& params);

  void Step();
  int64_t step() const { return step_; }
  const Vec& state() const { return y_; }  // y_t, one entry per node

 private:
  std::vector<NodeSetup> nodes_;
  DiffusionParams params_;
  std::vector<double> self_weight_;
  std::vector<GaussianStream> noise_;
  int64_t step_ = 0;
  Vec y_, next_;
};

}  // namespace starling::algorithms
