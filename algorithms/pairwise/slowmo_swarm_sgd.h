// SlowMo over SwarmSGD (SlowMo: Wang et al., arXiv:1910.00643, the form
// [RECALLED, UNVERIFIED]; its pairwise form here is [DERIVED]). SwarmSGD has no global step at
// which to average exactly, so the slow momentum loop is node-local: every tau of the node's own
// local steps (--swarm-slowmo-tau), with x0 the node's model at the start of the period and gamma
// the step of the period's first local step,
//   u <- b u + (x0 - x) / gamma,   x <- x0 - a gamma u,
// where x is the node's model at the end of the period: its local steps plus whatever the
// pairwise averages merged into it meanwhile, which stand in for SlowMo's x_bar. x is the next
// period's x0. b = 0, a = 1 leaves x as it is: SwarmSGD exactly. The outer step moves one node's
// model alone, so the sum of the models is not conserved across it (as with any local step).
// Full precision only (no --compression); external steps (the C ABI) take no outer step.
#pragma once

#include <string>

#include "algorithms/pairwise/swarm_sgd.h"
#include "algorithms/params.h"

namespace starling::algorithms {

struct SlowMoSwarmParams {
  int tau = 8;         // local steps per outer period (--swarm-slowmo-tau)
  double beta = 0.0;   // slow momentum b (--swarm-slowmo-beta), in [0, 1)
  double alpha = 1.0;  // slow step a (--swarm-slowmo-alpha)
};
const ParamTable<SlowMoSwarmParams>& SlowMoSwarmParamTable();

class SlowMoSwarmSgd : public SwarmSgd {
 public:
  SlowMoSwarmSgd(const NodeSetup& setup, ScheduledStep step, int batch_size, int local_steps,
                 const SlowMoSwarmParams& p);

  std::string name() const override { return "slowmo-swarmsgd"; }
  void LocalStep() override;
  // Checkpoints: SwarmSGD's state, then x0 and u (the period's step is recomputed from the step
  // count).
  bool SaveState(AlgorithmState* state) const override;
  void LoadState(const AlgorithmState& state) override;
  // No push-sum shares: an adopted or absorbed model would also need the period's x0 and u.
  bool KeepsShares() const override { return false; }

 private:
  SlowMoSwarmParams params_;
  Vec start_, slow_u_;
};

}  // namespace starling::algorithms
