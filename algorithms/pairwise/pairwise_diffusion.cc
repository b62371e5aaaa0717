#include "algorithms/pairwise/pairwise_diffusion.h"

#include <cmath>
#include <stdexcept>

#include "algorithms/pairwise/pairwise_method.h"

namespace starling::algorithms {
namespace {

std::unique_ptr<PairwiseAlgorithm> MakePairwiseDiffusion(const PairwiseOptions& options,
                                                         const NodeSetup& setup) {
  return std::make_unique<PairwiseDiffusion>(setup,
                                             PairwiseDiffusionParamTable().Read(options.params));
}

// The coin's stream must differ from the noise's, which is seeded with the node's seed itself.
constexpr uint64_t kCoinSalt = 0x9e3779b97f4a7c15ULL;

}  // namespace

const ParamTable<PairwiseDiffusionParams>& PairwiseDiffusionParamTable() {
  static const auto* const table = new ParamTable<PairwiseDiffusionParams>(
      ParamTable<PairwiseDiffusionParams>("pairwise diffusion (topology inference)")
          .Add("decay", &PairwiseDiffusionParams::decay,
               "pairwise-diffusion: y_i <- decay y_i + noise at each local tick", Range::Open(0, 1))
          .Add("mix", &PairwiseDiffusionParams::mix,
               "pairwise-diffusion: an exchange moves each state by mix times the difference "
               "(0.5: both take the average)",
               Range::OpenClosed(0, 0.5))
          .Add("exchange-prob", &PairwiseDiffusionParams::exchange_prob,
               "pairwise-diffusion: probability that a node initiates an exchange after a tick",
               Range::OpenClosed(0, 1))
          // Added after simulated runs existed: at their defaults they keep those run ids.
          .Add("tick-ms", &PairwiseDiffusionParams::tick_ms,
               "pairwise-diffusion (starlingd): mean interval of a node's ticks, in ms, on its "
               "own clock (the simulator's time unit is one mean tick)",
               Range::ClosedOpen(0.05, 3.6e6))
          .OnlySetInRunId()
          .Add("tick-fixed", &PairwiseDiffusionParams::tick_fixed,
               "pairwise-diffusion (starlingd): 1 = a tick every --tick-ms exactly, 0 = a Poisson "
               "clock (exponential gaps of mean --tick-ms, as in the simulator)",
               Range::ClosedOpen(0, 2))
          .OnlySetInRunId());
  return *table;
}

const PairwiseMethod& PairwiseDiffusionMethod() {
  static const PairwiseMethod method{"pairwise-diffusion", MakePairwiseDiffusion,
                                     &PairwiseDiffusionParamTable(), /*message_size=*/nullptr,
                                     /*needs_problem=*/false};
  return method;
}

double NormalStream::Next() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  // 53 random bits shifted into (0, 1], so that the logarithm is finite.
  const double u1 = (static_cast<double>(rng_() >> 11) + 1.0) * 0x1.0p-53;
  const double u2 = (static_cast<double>(rng_() >> 11) + 1.0) * 0x1.0p-53;
  const double radius = std::sqrt(-2.0 * std::log(u1));
  spare_ = radius * std::sin(kTwoPi * u2);
  has_spare_ = true;
  return radius * std::cos(kTwoPi * u2);
}

PairwiseDiffusion::PairwiseDiffusion(const NodeSetup& setup, const PairwiseDiffusionParams& params)
    : setup_(setup),
      params_(params),
      noise_(setup.seed),
      coin_(setup.seed ^ kCoinSalt),
      y_(Vec::Zero(1)) {
  if (!(params_.sigma > 0) || !std::isfinite(params_.sigma)) {
    throw std::invalid_argument("pairwise-diffusion: noise sigma must be positive");
  }
}

void PairwiseDiffusion::LocalStep() {
  y_[0] = params_.decay * y_[0] + params_.sigma * noise_.Next();
  ++counters_.local_steps;
  ++changes_;
  // 53 bits against the probability: exchange_prob = 1 always wants one.
  const double u = static_cast<double>(coin_() >> 11) * 0x1.0p-53;
  if (u < params_.exchange_prob) wants_exchange_ = true;
}

std::shared_ptr<const Vec> PairwiseDiffusion::BeginExchange(int /*peer*/, uint64_t seq) {
  if (outstanding_)
    throw std::logic_error("pairwise-diffusion: an exchange is already outstanding");
  if (offers_.size() > kKeptOfferSnapshots) offers_.pop_front();
  offers_.emplace_back(seq, y_[0]);
  outstanding_ = true;
  std::shared_ptr<Vec> snapshot = snapshots_.Take();
  *snapshot = y_;
  counters_.bits_sent += 64;
  return snapshot;
}

bool PairwiseDiffusion::CompleteExchange(uint64_t seq,
                                         const Eigen::Ref<const Vec>& their_snapshot) {
  if (their_snapshot.size() != 1) return false;
  for (auto it = offers_.begin(); it != offers_.end(); ++it) {
    if (it->first != seq) continue;
    // y_i <- y_i + mix (S_j - S_i): the responder moved by exactly the opposite amount.
    y_[0] += params_.mix * (their_snapshot[0] - it->second);
    ++changes_;
    if (outstanding_ && std::next(it) == offers_.end()) {
      outstanding_ = false;
      wants_exchange_ = false;
    }
    offers_.erase(it);
    ++counters_.exchanges_initiated;
    return true;
  }
  return false;
}

void PairwiseDiffusion::AbortExchange(bool may_still_reply) {
  if (!outstanding_) return;
  outstanding_ = false;
  ++counters_.exchanges_aborted;
  if (!may_still_reply) offers_.pop_back();
}

std::shared_ptr<const Vec> PairwiseDiffusion::Respond(int /*peer*/,
                                                      const Eigen::Ref<const Vec>& their_snapshot) {
  std::shared_ptr<Vec> snapshot = snapshots_.Take();
  *snapshot = y_;
  if (their_snapshot.size() == 1) {
    y_[0] += params_.mix * (their_snapshot[0] - (*snapshot)[0]);
    ++changes_;
    ++counters_.exchanges_served;
  }
  counters_.bits_sent += 64;
  return snapshot;
}

}  // namespace starling::algorithms
