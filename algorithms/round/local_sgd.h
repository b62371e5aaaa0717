// Local SGD with periodic averaging (LUPA-SGD, Haddadpour et al., arXiv:1910.13598;
// details as recalled, not checked against the paper's text) and SlowMo on D-PSGD (Wang et al.,
// arXiv:1910.00643).
//
// A run is a sequence of periods. Period j has an inner phase of tau_j steps, then an averaging
// phase, then (with SlowMo) an outer step:
//   inner, local-sgd:     tau_j local (mini-batch) SGD steps, no exchange;
//   inner, slowmo-dpsgd:  tau_j D-PSGD iterations x <- W x - gamma g(x), one exchange each (the
//                         gradient at the pre-mix x, as dgd.h);
//   averaging, gossip:    K rounds x <- W x (--local-gossip K, the run's Metropolis weights);
//   averaging, exact:     (--local-exact 1) the exact mean over the run's spanning tree
//                         (NodeSetup::tree), in 2 H rounds for a tree of height H (1 if H = 0):
//     up, round u = 0..H-1: every node sends its partial sum s; the nodes of depth H-u-1 add
//       their children's, so a node's s is its subtree's sum before it is sent at round H-depth;
//       after round H-1 the root holds sum_i x_i and sets x = that / n;
//     down, round v = 0..H-1: every node sends x; the nodes of depth v+1 take their parent's.
//   The synchronizer needs a same-size payload from every neighbour at every step, so nodes off
//   the current wave send their (unused) vector too: each of the 2H rounds moves one d-vector per
//   edge direction, though only tree edges carry a used one, two per tree edge per averaging.
//
// Rounds are counted honestly: one StepKey is one exchange, and local steps run inside a round's
// compute (the constructor runs period 0's when its inner phase is local; the Advance that ends a
// period runs the next one's). With local inner steps the averaging keeps the mean (W is doubly
// stochastic; the tree phase computes it), so x_bar is the mean of the post-local models, the
// virtual average local SGD's theory speaks of.
//
// The adaptive schedule (--local-adaptive 1) [DERIVED, not the paper's rule, which is not
// recalled]: period j (0-based) takes tau_j = ceil(tau * sqrt(j + 1)) inner steps, i.e. the
// interval grows as the iterates approach the optimum and the local drift, which scales with the
// gradient norms, shrinks.
//
// SlowMo (the form [RECALLED, UNVERIFIED]): with --slowmo-beta b or --slowmo-alpha a away from
// (0, 1), the averaged x_bar becomes an outer step from the period's start x0 with the period's
// first step gamma:
//   u <- b u + (x0 - x_bar) / gamma,   x <- x0 - a gamma u,
// and x is the next period's start. b = 0, a = 1 gives x = x_bar (then skipped, so that those
// runs stay bit for bit what they were).
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/problems/gradient_oracle.h"
#include "algorithms/round/round_algorithm.h"

namespace starling::algorithms {

// Local SGD's own parameters (LocalSgdParamTable() in local_sgd.cc); slowmo-dpsgd shares them.
struct LocalSgdParams {
  int tau = 1;                // inner steps per period (--local-tau)
  int gossip = 1;             // gossip rounds K per averaging (--local-gossip)
  int exact = 0;              // nonzero: exact averaging over the spanning tree (--local-exact)
  int adaptive = 0;           // 1: tau_j = ceil(tau sqrt(j + 1)) (--local-adaptive)
  double slowmo_beta = 0.0;   // SlowMo's slow momentum b (--slowmo-beta), in [0, 1)
  double slowmo_alpha = 1.0;  // SlowMo's slow step a (--slowmo-alpha)
};
const ParamTable<LocalSgdParams>& LocalSgdParamTable();

// The adaptive schedule's interval of period j (0-based), tau_j = ceil(tau * sqrt(j + 1)).
int64_t AdaptiveTau(int tau, int64_t period);

// Rounds one exact averaging over a tree of height `height` takes: 2 height, at least 1.
int ExactAveragingRounds(int height);

class LocalSgd : public RoundAlgorithm {
 public:
  enum class Inner { kLocalSteps, kDpsgd };

  // Throws std::invalid_argument if exact averaging is asked for and setup.tree is not a
  // spanning tree over this node's neighbours.
  LocalSgd(const NodeSetup& setup, ScheduledStep step, int batch_size, const LocalSgdParams& p,
           Inner inner = Inner::kLocalSteps);

  std::string name() const override {
    return inner_ == Inner::kDpsgd ? "slowmo-dpsgd" : "local-sgd";
  }
  StepKey key() const override { return {round_, 0, 0}; }
  const Vec& Outgoing() const override { return InTreeUpPhase() ? sum_ : x_; }
  void Advance(const std::vector<const Vec*>& inbox) override;
  int64_t iteration() const override { return round_; }
  const Vec& Model() const override { return x_; }
  AlgorithmCounters counters() const override;
  // Checkpoints hold the round, period and position in it, the step count, x, the period's start,
  // the slow momentum, the partial tree sum and the mini-batch engine.
  bool SaveState(AlgorithmState* state) const override;
  void LoadState(const AlgorithmState& state) override;

  int64_t local_steps() const { return local_steps_; }
  // Rounds one averaging takes (K, or ExactAveragingRounds of the tree).
  int AveragingRounds() const;

 private:
  int64_t InnerRounds() const { return inner_ == Inner::kDpsgd ? period_tau_ : 0; }
  bool InTreeUpPhase() const;
  // Sets the period's start, step and interval; runs the local steps of a local inner phase.
  void StartPeriod();
  // Called when the averaging phase begins (the tree's partial sum starts at x).
  void StartAveraging();
  void AveragingRound(int64_t a, const std::vector<const Vec*>& inbox);
  void EndPeriod();

  NodeSetup setup_;
  ScheduledStep step_;  // t = local_steps_ (gradient steps taken)
  LocalSgdParams params_;
  Inner inner_;
  GradientOracle oracle_;
  std::vector<int> child_index_;  // positions of the tree children in setup_.neighbors
  int parent_index_ = -1;         // position of the tree parent, -1 at the root
  int64_t round_ = 0;             // communication rounds completed
  int64_t period_ = 0;            // the current period
  int64_t period_tau_ = 0;        // its interval tau_j
  int64_t phase_round_ = 0;       // rounds done in the current period
  int64_t local_steps_ = 0;       // gradient steps taken so far
  double period_step_ = 0.0;      // gamma: the step of the period's first gradient step
  Vec x_, mixed_, grad_;
  Vec start_, slow_u_;  // SlowMo: the period's start x0 and the slow momentum u
  Vec sum_;             // exact averaging: the partial subtree sum
};

}  // namespace starling::algorithms
