// The pairwise diffusion of topology inference (docs/how-to/topology-inference.md): stabilised
// noisy random gossip on the exchange driver. Node i holds one scalar y_i.
//
//   local tick of node i (its own clock):  y_i <- decay * y_i + sigma * xi_i,  xi_i ~ N(0, 1)
//   exchange of edge (i, j):               y_i <- y_i + mix (y_j - y_i),  y_j <- y_j + mix (y_i -
//   y_j)
//
// After each tick the node wants an exchange with probability exchange_prob (its own seeded coin),
// so that with Poisson ticks its initiations are a Poisson stream. Why the decay is applied on
// the node's own ticks and not inside the exchange (A6 writes y <- rho W(t) y for a global tick):
// a node that exchanges rarely must still be stable, and only the node's own clock reaches it
// every time; with Poisson ticks at rate 1 the two are the same process in expectation.
//
// Expected dynamics (DERIVED; tests/pairwise_inference_test.cc checks it): with Poisson ticks
// of rate 1 per unit time, a uniformly random partner among deg_i neighbours, and A6's order at
// a tick (the exchange the coin of the previous tick asked for, then decay and noise),
// E[y(t + D) | y(t)] = exp(G D) y(t) with, for p = exchange_prob, w = mix, rho = decay,
//   G_ij = p w (rho/deg_i + 1/deg_j)                   on every edge (i, j), 0 off the edges,
//   G_ii = -(1 - rho) - p w rho - p w sum_{j in N(i)} 1/deg_j
// (docs/how-to/topology-inference.md). The off-diagonal support of G
// is exactly the graph; exp(G D) spreads beyond it as D grows.
//
// The sum of the states is conserved by every exchange (both sides move by opposite amounts), as
// for SwarmSGD; a late reply to an abandoned offer is merged as an addition too. No problem, no
// gradients; Model() is y, a vector of size 1. Randomness only from NodeSetup::seed.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <utility>

#include "algorithms/pairwise/pairwise_algorithm.h"
#include "algorithms/pairwise/snapshot_pool.h"
#include "algorithms/params.h"

namespace starling::algorithms {

struct PairwiseDiffusionParams {
  double decay = 0.75;         // --decay, in (0, 1): the factor of each local tick
  double mix = 0.5;            // --mix, in (0, 0.5]: the weight of an exchange (0.5 = averaging)
  double exchange_prob = 1.0;  // --exchange-prob, in (0, 1]: P(initiate) after each tick
  double sigma = 1.0;          // noise standard deviation (not an option)
  // starlingd only (the simulator's time unit is one mean tick): a node's ticks come at
  // exponential gaps of mean tick_ms (a Poisson clock), or every tick_ms with tick_fixed = 1.
  double tick_ms = 10.0;  // --tick-ms
  int tick_fixed = 0;     // --tick-fixed
};

const ParamTable<PairwiseDiffusionParams>& PairwiseDiffusionParamTable();

// Standard normal draws by Box-Muller from std::mt19937_64, both outputs used: the same numbers
// on every platform (std::normal_distribution is not). (The round-based diffusion has its own,
// in a library this one may not use.)
class NormalStream {
 public:
  explicit NormalStream(uint64_t seed) : rng_(seed) {}
  double Next();

 private:
  std::mt19937_64 rng_;
  bool has_spare_ = false;
  double spare_ = 0.0;
};

class PairwiseDiffusion : public PairwiseAlgorithm {
 public:
  // Ignores setup.problem, setup.x0 and the mixing weights.
  PairwiseDiffusion(const NodeSetup& setup, const PairwiseDiffusionParams& params);

  std::string name() const override { return "pairwise-diffusion"; }
  // One local tick: decay, noise, and the coin for an exchange.
  void LocalStep() override;
  bool WantsExchange() const override { return wants_exchange_; }
  // The diffusion's clock never waits for an exchange.
  bool ShouldWait() const override { return false; }
  std::shared_ptr<const Vec> BeginExchange(int peer, uint64_t seq) override;
  bool CompleteExchange(uint64_t seq, const Eigen::Ref<const Vec>& their_snapshot) override;
  void AbortExchange(bool may_still_reply) override;
  bool exchange_outstanding() const override { return outstanding_; }
  std::shared_ptr<const Vec> Respond(int peer,
                                     const Eigen::Ref<const Vec>& their_snapshot) override;
  // The checked merges are PairwiseAlgorithm's defaults: the partner's y_j is one value, and
  // their check of it before the plain merge is the merge's own read.
  const Vec& Model() const override { return y_; }
  PairwiseCounters counters() const override { return counters_; }
  // Changes of y so far (ticks and merges): a node publishing its samples numbers them with it.
  int64_t changes() const { return changes_; }

 private:
  NodeSetup setup_;
  PairwiseDiffusionParams params_;
  NormalStream noise_;
  std::mt19937_64 coin_;
  Vec y_;
  bool wants_exchange_ = false;
  bool outstanding_ = false;
  // (seq, snapshot value) of the outstanding offer (back) and abandoned ones, oldest first.
  std::deque<std::pair<uint64_t, double>> offers_;
  SnapshotPool snapshots_;
  PairwiseCounters counters_;
  int64_t changes_ = 0;
};

}  // namespace starling::algorithms
