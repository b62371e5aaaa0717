#include "algorithms/round/local_sgd.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/round/neighbor_mix.h"
#include "algorithms/round/round_method.h"

namespace starling::algorithms {

int64_t AdaptiveTau(int tau, int64_t period) {
  return static_cast<int64_t>(std::ceil(tau * std::sqrt(static_cast<double>(period + 1))));
}

int ExactAveragingRounds(int height) { return std::max(1, 2 * height); }

namespace {

// Position of `node` in the ascending neighbour list, -1 if absent.
int NeighborIndex(const NodeSetup& setup, int node) {
  const auto it = std::lower_bound(setup.neighbors.begin(), setup.neighbors.end(), node);
  if (it == setup.neighbors.end() || *it != node) return -1;
  return static_cast<int>(it - setup.neighbors.begin());
}

}  // namespace

LocalSgd::LocalSgd(const NodeSetup& setup, ScheduledStep step, int batch_size,
                   const LocalSgdParams& p, Inner inner)
    : setup_(setup),
      step_(step),
      params_(p),
      inner_(inner),
      oracle_(setup.problem, batch_size, setup.seed),
      x_(setup.x0),
      slow_u_(Vec::Zero(setup.x0.size())),
      sum_(Vec::Zero(setup.x0.size())) {
  if (params_.exact) {
    const TreePlace& tree = setup_.tree;
    const std::string where = "--local-exact: node " + std::to_string(setup_.id) + ": ";
    if (tree.depth < 0 || tree.num_nodes < 1 || tree.depth > tree.height) {
      throw std::invalid_argument(where + "not in the run's spanning tree (disconnected graph?)");
    }
    // A NodeSetup built by hand keeps the default single-node tree: with neighbours, that would
    // skip the averaging silently.
    if (tree.height == 0 && !setup_.neighbors.empty()) {
      throw std::invalid_argument(where +
                                  "the setup holds no spanning tree (node::NodeSetupOf "
                                  "fills it)");
    }
    if ((tree.parent < 0) != (tree.depth == 0)) {
      throw std::invalid_argument(where + "only the tree's root has no parent");
    }
    if (tree.parent >= 0) {
      parent_index_ = NeighborIndex(setup_, tree.parent);
      if (parent_index_ < 0) throw std::invalid_argument(where + "tree parent is no neighbour");
    }
    for (int c : tree.children) {
      const int k = NeighborIndex(setup_, c);
      if (k < 0) throw std::invalid_argument(where + "tree child is no neighbour");
      child_index_.push_back(k);
    }
  }
  StartPeriod();
}

int LocalSgd::AveragingRounds() const {
  return params_.exact ? ExactAveragingRounds(setup_.tree.height) : params_.gossip;
}

bool LocalSgd::InTreeUpPhase() const {
  const int64_t a = phase_round_ - InnerRounds();
  return params_.exact && a >= 0 && a < setup_.tree.height;
}

void LocalSgd::StartPeriod() {
  start_ = x_;
  period_step_ = step_.At(local_steps_);
  period_tau_ = params_.adaptive ? AdaptiveTau(params_.tau, period_) : params_.tau;
  phase_round_ = 0;
  if (inner_ == Inner::kLocalSteps) {
    for (int64_t s = 0; s < period_tau_; ++s) {
      oracle_.Compute(x_, &grad_);
      x_ -= step_.At(local_steps_) * grad_;
      ++local_steps_;
    }
    StartAveraging();
  }
}

void LocalSgd::StartAveraging() {
  if (params_.exact) sum_ = x_;
}

void LocalSgd::AveragingRound(int64_t a, const std::vector<const Vec*>& inbox) {
  if (!params_.exact) {
    MixSegment(setup_, x_, inbox, 0, x_.size(), &mixed_);
    x_.swap(mixed_);
    return;
  }
  const TreePlace& tree = setup_.tree;
  const int h = tree.height;
  if (a < h) {
    // Up: the children (depth H-a) sent their subtree sums this round.
    if (tree.depth == h - a - 1) {
      for (int k : child_index_) sum_ += *inbox[k];
      if (tree.depth == 0) x_ = sum_ / static_cast<double>(tree.num_nodes);
    }
  } else if (a < 2 * h) {
    // Down: the nodes of depth a-H hold the mean and sent it this round.
    if (tree.depth == a - h + 1) x_ = *inbox[parent_index_];
  }
}

void LocalSgd::EndPeriod() {
  if (params_.slowmo_beta != 0.0 || params_.slowmo_alpha != 1.0) {
    slow_u_ = params_.slowmo_beta * slow_u_ + (start_ - x_) / period_step_;
    x_ = start_ - params_.slowmo_alpha * period_step_ * slow_u_;
  }
  ++period_;
  StartPeriod();
}

void LocalSgd::Advance(const std::vector<const Vec*>& inbox) {
  CheckInbox(setup_, inbox, x_.size());
  const int64_t inner = InnerRounds();
  if (phase_round_ < inner) {
    // A D-PSGD iteration, as Dgd::Advance.
    oracle_.Compute(x_, &grad_);
    MixSegment(setup_, x_, inbox, 0, x_.size(), &mixed_);
    x_ = mixed_ - step_.At(local_steps_) * grad_;
    ++local_steps_;
  } else {
    AveragingRound(phase_round_ - inner, inbox);
  }
  ++round_;
  ++phase_round_;
  if (phase_round_ == inner) StartAveraging();
  if (phase_round_ == inner + AveragingRounds()) EndPeriod();
}

AlgorithmCounters LocalSgd::counters() const { return {round_, round_, oracle_.passes()}; }

bool LocalSgd::SaveState(AlgorithmState* s) const {
  *s = AlgorithmState();
  s->algorithm = name();
  s->ints = {round_, period_, phase_round_, local_steps_};
  s->reals = {oracle_.passes(), period_step_};
  s->vectors = {x_, start_, slow_u_, sum_};
  s->texts = {oracle_.SaveEngine()};
  return true;
}

void LocalSgd::LoadState(const AlgorithmState& s) {
  CheckStateShape(s, name(), 4, 2, 4, 1);
  for (const Vec& v : s.vectors) {
    if (v.size() != x_.size()) throw std::invalid_argument("checkpoint: wrong dimension");
  }
  if (s.ints[0] < 0 || s.ints[1] < 0 || s.ints[2] < 0 || s.ints[3] < 0) {
    throw std::invalid_argument("checkpoint: negative local-sgd counters");
  }
  const int64_t tau = params_.adaptive ? AdaptiveTau(params_.tau, s.ints[1]) : params_.tau;
  if (s.ints[2] >= (inner_ == Inner::kDpsgd ? tau : 0) + AveragingRounds()) {
    throw std::invalid_argument("checkpoint: a position past the end of its local-sgd period");
  }
  round_ = s.ints[0];
  period_ = s.ints[1];
  period_tau_ = tau;
  phase_round_ = s.ints[2];
  local_steps_ = s.ints[3];
  period_step_ = s.reals[1];
  x_ = s.vectors[0];
  start_ = s.vectors[1];
  slow_u_ = s.vectors[2];
  sum_ = s.vectors[3];
  oracle_.LoadEngine(s.texts[0], s.reals[0]);
}

namespace {

std::unique_ptr<RoundAlgorithm> MakeLocalSgd(const RoundOptions& options, const NodeSetup& setup) {
  const ScheduledStep step{ResolveStep(options), options.step_schedule};
  return std::make_unique<LocalSgd>(setup, step, options.batch_size,
                                    LocalSgdParamTable().Read(options.params));
}

std::unique_ptr<RoundAlgorithm> MakeSlowMoDpsgd(const RoundOptions& options,
                                                const NodeSetup& setup) {
  const ScheduledStep step{ResolveStep(options), options.step_schedule};
  return std::make_unique<LocalSgd>(setup, step, options.batch_size,
                                    LocalSgdParamTable().Read(options.params),
                                    LocalSgd::Inner::kDpsgd);
}

// --local-gossip is a no-op next to --local-exact: say so rather than let a sweep over K run
// the same thing under different names.
std::vector<std::string> LocalSgdWarnings(const RoundOptions& options) {
  const LocalSgdParams p = LocalSgdParamTable().Read(options.params);
  if (p.exact == 0 || p.gossip == 1) return {};
  return {"--local-gossip " + std::to_string(p.gossip) +
          " is ignored: --local-exact averages over the spanning tree instead"};
}

}  // namespace

const ParamTable<LocalSgdParams>& LocalSgdParamTable() {
  static const auto* const table = new ParamTable<LocalSgdParams>(
      ParamTable<LocalSgdParams>(
          "Local SGD / LUPA-SGD (arXiv:1910.13598) and SlowMo on D-PSGD "
          "(arXiv:1910.00643)")
          .Add("local-tau", &LocalSgdParams::tau,
               "local-sgd: local steps, slowmo-dpsgd: D-PSGD iterations, between averagings (the "
               "first interval with --local-adaptive)",
               Range::Positive())
          .Add("local-gossip", &LocalSgdParams::gossip,
               "local-sgd/slowmo-dpsgd: gossip rounds K (x <- W x) per averaging",
               Range::Positive())
          .Add("local-exact", &LocalSgdParams::exact,
               "local-sgd/slowmo-dpsgd: nonzero = average exactly over the BFS spanning tree from "
               "node 0 (2 x its height rounds) instead of --local-gossip rounds",
               Range::NonNegative())
          .OnlySetInRunId()  // added after local-sgd runs existed: keep their ids
          .Add("local-adaptive", &LocalSgdParams::adaptive,
               "local-sgd/slowmo-dpsgd: nonzero = growing intervals tau_j = ceil(tau sqrt(j+1)) "
               "(Starling's own schedule, not the paper's), 0 = fixed",
               Range::NonNegative())
          .Add("slowmo-beta", &LocalSgdParams::slowmo_beta,
               "local-sgd/slowmo-dpsgd: SlowMo slow momentum beta in [0, 1) (arXiv:1910.00643; 0 "
               "= off)",
               Range::ClosedOpen(0.0, 1.0))
          .Add("slowmo-alpha", &LocalSgdParams::slowmo_alpha,
               "local-sgd/slowmo-dpsgd: SlowMo slow step alpha (1 with beta 0 = off)",
               Range::Positive()));
  return *table;
}

// 0.5/L as DGD/D-PSGD: the same local step, not tuned for tau > 1.
const RoundMethod& LocalSgdMethod() {
  static const RoundMethod method = RoundMethod("local-sgd", MakeLocalSgd)
                                        .DefaultStep(0.5)
                                        .SchedulesStep()
                                        .Params(LocalSgdParamTable())
                                        .Warnings(LocalSgdWarnings);
  return method;
}

const RoundMethod& SlowMoDpsgdMethod() {
  static const RoundMethod method = RoundMethod("slowmo-dpsgd", MakeSlowMoDpsgd)
                                        .DefaultStep(0.5)
                                        .SchedulesStep()
                                        .Params(LocalSgdParamTable())
                                        .Warnings(LocalSgdWarnings);
  return method;
}

}  // namespace starling::algorithms
