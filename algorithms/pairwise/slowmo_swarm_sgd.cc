#include "algorithms/pairwise/slowmo_swarm_sgd.h"

#include <memory>
#include <stdexcept>

#include "algorithms/pairwise/pairwise_method.h"

namespace starling::algorithms {

SlowMoSwarmSgd::SlowMoSwarmSgd(const NodeSetup& setup, ScheduledStep step, int batch_size,
                               int local_steps, const SlowMoSwarmParams& p)
    : SwarmSgd(setup, step, batch_size, local_steps),
      params_(p),
      start_(setup.x0),
      slow_u_(Vec::Zero(setup.x0.size())) {}

void SlowMoSwarmSgd::LocalStep() {
  SwarmSgd::LocalStep();
  const int64_t t = counters_.local_steps;
  if (t % params_.tau != 0) return;
  if (params_.beta != 0.0 || params_.alpha != 1.0) {
    const double gamma = step_.At(t - params_.tau);
    slow_u_ = params_.beta * slow_u_ + (start_ - x_) / gamma;
    x_ = start_ - params_.alpha * gamma * slow_u_;
  }
  start_ = x_;
}

bool SlowMoSwarmSgd::SaveState(AlgorithmState* s) const {
  SaveCommon("slowmo-swarmsgd", s);
  s->vectors.push_back(start_);
  s->vectors.push_back(slow_u_);
  return true;
}

void SlowMoSwarmSgd::LoadState(const AlgorithmState& s) {
  LoadCommon("slowmo-swarmsgd", s, 0, 2);
  start_ = s.vectors[1];
  slow_u_ = s.vectors[2];
}

namespace {

std::unique_ptr<PairwiseAlgorithm> MakeSlowMoSwarmSgd(const PairwiseOptions& options,
                                                      const NodeSetup& setup) {
  if (options.compression != "none") {
    throw std::invalid_argument("--algorithm slowmo-swarmsgd takes no --compression (got '" +
                                options.compression + "')");
  }
  const ScheduledStep step{ResolvePairwiseStep(options), options.step_schedule};
  return std::make_unique<SlowMoSwarmSgd>(setup, step, options.batch_size, options.local_steps,
                                          SlowMoSwarmParamTable().Read(options.params));
}

}  // namespace

const ParamTable<SlowMoSwarmParams>& SlowMoSwarmParamTable() {
  static const auto* const table = new ParamTable<SlowMoSwarmParams>(
      ParamTable<SlowMoSwarmParams>(
          "SlowMo over SwarmSGD (arXiv:1910.00643 applied at each node on its own; Starling's "
          "combination)")
          .Add("swarm-slowmo-tau", &SlowMoSwarmParams::tau,
               "slowmo-swarmsgd: local steps of a node between its outer (slow momentum) steps",
               Range::Positive())
          .Add("swarm-slowmo-beta", &SlowMoSwarmParams::beta,
               "slowmo-swarmsgd: slow momentum beta in [0, 1) (0 with alpha 1 = SwarmSGD)",
               Range::ClosedOpen(0.0, 1.0))
          .Add("swarm-slowmo-alpha", &SlowMoSwarmParams::alpha, "slowmo-swarmsgd: slow step alpha",
               Range::Positive()));
  return *table;
}

const PairwiseMethod& SlowMoSwarmSgdMethod() {
  static const PairwiseMethod method{"slowmo-swarmsgd", MakeSlowMoSwarmSgd,
                                     &SlowMoSwarmParamTable()};
  return method;
}

}  // namespace starling::algorithms
