#include "algorithms/round/local_sgd.h"

#include <cmath>
#include <stdexcept>

#include "algorithms/round/neighbor_mix.h"
#include "algorithms/round/round_method.h"

namespace starling::algorithms {

int64_t AdaptiveTau(int tau, int64_t period) {
  return static_cast<int64_t>(std::ceil(tau * std::sqrt(static_cast<double>(period + 1))));
}

LocalSgd::LocalSgd(const NodeSetup& setup, ScheduledStep step, int batch_size,
                   const LocalSgdParams& p)
    : setup_(setup),
      step_(step),
      params_(p),
      oracle_(setup.problem, batch_size, setup.seed),
      x_(setup.x0),
      slow_u_(Vec::Zero(setup.x0.size())) {
  LocalPhase();
}

void LocalSgd::LocalPhase() {
  start_ = x_;
  period_step_ = step_.At(local_steps_);
  const int64_t steps = params_.adaptive ? AdaptiveTau(params_.tau, period_) : params_.tau;
  for (int64_t s = 0; s < steps; ++s) {
    oracle_.Compute(x_, &grad_);
    x_ -= step_.At(local_steps_) * grad_;
    ++local_steps_;
  }
}

void LocalSgd::Advance(const std::vector<const Vec*>& inbox) {
  CheckInbox(setup_, inbox, x_.size());
  MixSegment(setup_, x_, inbox, 0, x_.size(), &mixed_);
  x_.swap(mixed_);
  ++round_;
  if (++gossip_done_ == params_.gossip) {
    gossip_done_ = 0;
    if (params_.slowmo_beta != 0.0 || params_.slowmo_alpha != 1.0) {
      slow_u_ = params_.slowmo_beta * slow_u_ + (start_ - x_) / period_step_;
      x_ = start_ - params_.slowmo_alpha * period_step_ * slow_u_;
    }
    ++period_;
    LocalPhase();
  }
}

AlgorithmCounters LocalSgd::counters() const { return {round_, round_, oracle_.passes()}; }

namespace {

std::unique_ptr<RoundAlgorithm> MakeLocalSgd(const RoundOptions& options, const NodeSetup& setup) {
  const ScheduledStep step{ResolveStep(options), options.step_schedule};
  return std::make_unique<LocalSgd>(setup, step, options.batch_size,
                                    LocalSgdParamTable().Read(options.params));
}

}  // namespace

const ParamTable<LocalSgdParams>& LocalSgdParamTable() {
  static const auto* const table = new ParamTable<LocalSgdParams>(
      ParamTable<LocalSgdParams>("Local SGD / LUPA-SGD (arXiv:1910.13598; ALGORITHMS.md T10)")
          .Add("local-tau", &LocalSgdParams::tau,
               "local SGD: local steps tau between averagings (the first interval with "
               "--local-adaptive)",
               Range::Positive())
          .Add("local-gossip", &LocalSgdParams::gossip,
               "local SGD: gossip rounds K (x <- W x) per averaging", Range::Positive())
          .Add("local-adaptive", &LocalSgdParams::adaptive,
               "local SGD: nonzero = growing intervals tau_j = ceil(tau sqrt(j+1)) [DERIVED], 0 = "
               "fixed",
               Range::NonNegative())
          .Add("slowmo-beta", &LocalSgdParams::slowmo_beta,
               "local SGD: SlowMo slow momentum beta in [0, 1) (arXiv:1910.00643; 0 = off)",
               Range::NonNegative())
          .Add("slowmo-alpha", &LocalSgdParams::slowmo_alpha,
               "local SGD: SlowMo slow step alpha (1 with beta 0 = off)", Range::Positive()));
  return *table;
}

// 0.5/L as DGD/D-PSGD: the same local step, not tuned for tau > 1.
const RoundMethod& LocalSgdMethod() {
  static const RoundMethod method = RoundMethod("local-sgd", MakeLocalSgd)
                                        .DefaultStep(0.5)
                                        .SchedulesStep()
                                        .Params(LocalSgdParamTable());
  return method;
}

}  // namespace starling::algorithms
