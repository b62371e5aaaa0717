// Local SGD with periodic averaging (LUPA-SGD, Haddadpour et al., arXiv:1910.13598; ALGORITHMS.md
// §6 and T10; [ABS], details [RECALLED]). Each node runs tau local (mini-batch) SGD steps, then the
// models are averaged by K gossip rounds x <- W x (the run's Metropolis weights, as DGD mixes).
//
// Communication rounds are counted honestly: one StepKey is one exchange. The tau local steps of a
// period happen inside a round's compute: the constructor runs the first period's, and the
// Advance() that completes a period's K-th gossip round runs the next one's. So after R = m K
// rounds a node has taken (m + 1) tau local steps (periods of the adaptive schedule add up the
// same way), and the network mean x_bar is exactly the mean of the post-local models (W is doubly
// stochastic: gossip keeps the mean), the virtual average local SGD's theory speaks of.
//
// The adaptive schedule (--local-adaptive 1) [DERIVED, not the paper's rule, which is not
// recalled]: period j (0-based) takes tau_j = ceil(tau * sqrt(j + 1)) local steps, i.e. the
// interval grows as the iterates approach the optimum and the local drift, which scales with the
// gradient norms, shrinks.
//
// SlowMo (Wang et al., arXiv:1910.00643; the form [RECALLED, UNVERIFIED]): with --slowmo-beta b
// or --slowmo-alpha a away from (0, 1), the end of a period's gossip, x_bar (the node's gossip
// average), becomes an outer step from the period's start x0 with the period's first step gamma:
//   u <- b u + (x0 - x_bar) / gamma,   x <- x0 - a gamma u,
// and x is the next period's start. b = 0, a = 1 gives x = x_bar, plain local SGD (then skipped,
// so that those runs stay bit for bit what they were).
//
// Exact averaging over a spanning tree is NOT implemented (NodeSetup holds only the node's
// neighbours, so a tree cannot be derived locally without a new field); K gossip rounds only.
#pragma once

#include <cstdint>

#include "algorithms/problems/gradient_oracle.h"
#include "algorithms/round/round_algorithm.h"

namespace starling::algorithms {

// Local SGD's own parameters (LocalSgdParamTable() in local_sgd.cc).
struct LocalSgdParams {
  int tau = 1;                // local steps per period (--local-tau)
  int gossip = 1;             // gossip rounds K per averaging (--local-gossip)
  int adaptive = 0;           // 1: tau_j = ceil(tau sqrt(j + 1)) (--local-adaptive)
  double slowmo_beta = 0.0;   // SlowMo's slow momentum b (--slowmo-beta)
  double slowmo_alpha = 1.0;  // SlowMo's slow step a (--slowmo-alpha)
};
const ParamTable<LocalSgdParams>& LocalSgdParamTable();

// The adaptive schedule's interval of period j (0-based), tau_j = ceil(tau * sqrt(j + 1)).
int64_t AdaptiveTau(int tau, int64_t period);

class LocalSgd : public RoundAlgorithm {
 public:
  LocalSgd(const NodeSetup& setup, ScheduledStep step, int batch_size, const LocalSgdParams& p);

  std::string name() const override { return "local-sgd"; }
  StepKey key() const override { return {round_, 0, 0}; }
  const Vec& Outgoing() const override { return x_; }
  void Advance(const std::vector<const Vec*>& inbox) override;
  int64_t iteration() const override { return round_; }
  const Vec& Model() const override { return x_; }
  AlgorithmCounters counters() const override;
  int64_t local_steps() const { return local_steps_; }

 private:
  // The tau_j local steps of period_, step t = local_steps_ of the schedule.
  void LocalPhase();

  NodeSetup setup_;
  ScheduledStep step_;
  LocalSgdParams params_;
  GradientOracle oracle_;
  int64_t round_ = 0;         // communication rounds completed
  int64_t period_ = 0;        // the period whose local steps were last taken
  int gossip_done_ = 0;       // gossip rounds done in this period
  int64_t local_steps_ = 0;   // local SGD steps taken so far
  double period_step_ = 0.0;  // gamma: the step of the period's first local step
  Vec x_, mixed_, grad_;
  Vec start_, slow_u_;  // SlowMo: the period's start x0 and the slow momentum u
};

}  // namespace starling::algorithms
