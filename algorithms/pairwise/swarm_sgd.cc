#include "algorithms/pairwise/swarm_sgd.h"

#include <stdexcept>
#include <string>

#include "algorithms/compression/compression_spec.h"
#include "algorithms/compression/float32_rounding.h"
#include "algorithms/pairwise/checked_merge.h"
#include "algorithms/pairwise/pairwise_method.h"
#include "algorithms/pairwise/quantized_swarm_sgd.h"
#include "algorithms/pairwise/sparse_swarm_sgd.h"
#include "algorithms/pairwise/vq_swarm_sgd.h"

namespace starling::algorithms {
namespace {

std::unique_ptr<PairwiseAlgorithm> MakeSwarmSgd(const PairwiseOptions& options,
                                                const NodeSetup& setup) {
  const ScheduledStep step{ResolvePairwiseStep(options), options.step_schedule};
  const SwarmSgdParams p = SwarmSgdParamTable().Read(options.params);
  return MakeSwarmSgdVariant(setup, step, options.batch_size, options.local_steps,
                             options.compression, options.iterations, p);
}

}  // namespace

std::unique_ptr<PairwiseAlgorithm> MakeSwarmSgdVariant(const NodeSetup& setup, ScheduledStep step,
                                                       int batch_size, int local_steps,
                                                       const std::string& compression,
                                                       int64_t iterations,
                                                       const SwarmSgdParams& params) {
  auto with_tail = [&](auto algorithm) -> std::unique_ptr<PairwiseAlgorithm> {
    algorithm->AverageTail(iterations, params.tail_average);
    algorithm->PaceMerges(params.merge_pace);
    return algorithm;
  };
  if (IsTopKSpec(compression)) {
    return with_tail(std::make_unique<SparseSwarmSgd>(setup, step, batch_size, local_steps,
                                                      ParseTopKSpec(compression)));
  }
  if (IsVqSpec(compression)) {
    return with_tail(std::make_unique<VqSwarmSgd>(setup, step, batch_size, local_steps,
                                                  ParseVqSpec(compression)));
  }
  if (compression != "none" && !IsFloat32Spec(compression)) {
    return with_tail(std::make_unique<QuantizedSwarmSgd>(setup, step, batch_size, local_steps,
                                                         ParseLatticeSpec(compression)));
  }
  return with_tail(
      std::make_unique<SwarmSgd>(setup, step, batch_size, local_steps, IsFloat32Spec(compression)));
}

const ParamTable<SwarmSgdParams>& SwarmSgdParamTable() {
  static const auto* const table = new ParamTable<SwarmSgdParams>(
      ParamTable<SwarmSgdParams>("SwarmSGD")
          .Add("tail-average", &SwarmSgdParams::tail_average,
               "SwarmSGD: report each node's mean model over its last FRACTION x --iterations "
               "local steps (Polyak-Ruppert tail averaging; telemetry, dense curve and final "
               "model; exchanges still use the live model); 0 = off, the last model",
               Range::NonNegative())
          .OnlySetInRunId()
          .Add("merge-pace", &SwarmSgdParams::merge_pace,
               "SwarmSGD, starlingd only: a node starts local step k+1 only once it has completed "
               "(started or served) at least R x k merges since its last pace time-out, serving "
               "and offering meanwhile; a wait longer than 25 ms is a pace time-out (counted "
               "and logged; the node steps on and its deficit is forgiven). Raises the "
               "daemons' merges per local step toward the simulator's (about 2 with H = 1); "
               "starling-sim ignores it; 0 = off",
               Range::NonNegative())
          .OnlySetInRunId()
          .CrossCheck([](const SwarmSgdParams& p, const ParamContext&) {
            if (p.tail_average > 1.0) FailParam("tail-average", p.tail_average, "must be <= 1");
            if (p.merge_pace > 4.0) FailParam("merge-pace", p.merge_pace, "must be <= 4");
          }));
  return *table;
}

const PairwiseMethod& SwarmSgdMethod() {
  // Every variant samples by blocks on block-cyclic data (SwarmSgdBase::LocalStep).
  static const PairwiseMethod method{"swarmsgd", MakeSwarmSgd, &SwarmSgdParamTable(),
                                     nullptr,    true,         true};
  return method;
}

SwarmSgd::SwarmSgd(const NodeSetup& setup, ScheduledStep step, int batch_size, int local_steps,
                   bool float32_wire)
    : SwarmSgdBase(setup, step, batch_size, local_steps), float32_wire_(float32_wire) {}

std::shared_ptr<const Vec> SwarmSgd::BeginExchange(int /*peer*/, uint64_t seq) {
  std::shared_ptr<Vec> snapshot = snapshots_.Take();
  if (float32_wire_) {
    // S_i' = X_i rounded: the offer sent and the snapshot the merge subtracts.
    snapshot->resize(x_.size());
    RoundToFloat32(x_.data(), static_cast<size_t>(x_.size()), snapshot->data());
  } else {
    *snapshot = x_;
  }
  KeepOffer({seq, snapshot});
  counters_.bits_sent += (float32_wire_ ? 32 : 64) * x_.size();
  return snapshot;
}

void SwarmSgd::CheckDimension(const Eigen::Ref<const Vec>& their_snapshot) const {
  // The wire checks every received vector's dimension against the run's (exchange_wire.h), so
  // a mismatch here is a local bug; the merge's raw loop must not read past either vector.
  if (their_snapshot.size() != x_.size()) {
    throw std::invalid_argument("SwarmSGD: a partner's vector of " +
                                std::to_string(their_snapshot.size()) + " values, the model has " +
                                std::to_string(x_.size()));
  }
}

bool SwarmSgd::CompleteExchange(uint64_t seq, const Eigen::Ref<const Vec>& their_snapshot) {
  size_t unused;
  return MergeReply(seq, their_snapshot, /*check=*/false, &unused) == MergeResult::kMerged;
}

SwarmSgd::MergeResult SwarmSgd::CompleteExchangeChecked(uint64_t seq,
                                                        const Eigen::Ref<const Vec>& their_snapshot,
                                                        size_t* first_bad) {
  return MergeReply(seq, their_snapshot, /*check=*/true, first_bad);
}

SwarmSgd::MergeResult SwarmSgd::MergeReply(uint64_t seq,
                                           const Eigen::Ref<const Vec>& their_snapshot, bool check,
                                           size_t* first_bad) {
  CheckDimension(their_snapshot);
  const SwarmSgdOffer* offer = FindOffer(seq);
  if (offer == nullptr) {
    ForgetPartnerShare();
    return MergeResult::kNoSnapshot;
  }
  // X_i <- (S_i + S_j)/2 + (X_i - S_i) = X_i + (S_j - S_i)/2, into merged_: committed only if
  // S_j was finite, which the same pass checks. With push-sum shares the 1/2 is
  // w_j / (w_i + w_j) (push_sum_share.h).
  const size_t n = static_cast<size_t>(x_.size());
  merged_.resize(x_.size());
  const bool finite =
      AddScaledDifferenceIfFinite(x_.data(), their_snapshot.data(), offer->snapshot->data(),
                                  ShareCoefficient(), merged_.data(), n);
  if (check && !finite) {
    ForgetPartnerShare();
    *first_bad = FirstNonFinite(their_snapshot.data(), n);
    return MergeResult::kRefused;
  }
  x_.swap(merged_);
  CommitShare();
  FinishOffer(seq, /*merged=*/true);
  return MergeResult::kMerged;
}

std::shared_ptr<const Vec> SwarmSgd::Respond(int /*peer*/,
                                             const Eigen::Ref<const Vec>& their_snapshot) {
  size_t unused;
  return MergeRequest(their_snapshot, /*check=*/false, &unused);
}

std::shared_ptr<const Vec> SwarmSgd::RespondChecked(int /*peer*/,
                                                    const Eigen::Ref<const Vec>& their_snapshot,
                                                    size_t* first_bad) {
  return MergeRequest(their_snapshot, /*check=*/true, first_bad);
}

std::shared_ptr<const Vec> SwarmSgd::MergeRequest(const Eigen::Ref<const Vec>& their_snapshot,
                                                  bool check, size_t* first_bad) {
  CheckDimension(their_snapshot);
  if (float32_wire_) return MergeRequestFloat32(their_snapshot, check, first_bad);
  // S_j = X_j without a copy: the model's storage becomes the snapshot, and the pooled buffer
  // (nobody else holds it) receives the merge.
  std::shared_ptr<Vec> snapshot = snapshots_.Take();
  snapshot->swap(x_);
  const Eigen::Index n = snapshot->size();
  x_.resize(n);
  // X_j <- (S_i + S_j)/2, computed as S_j + (S_i - S_j)/2: the exact negative of the
  // initiator's change, so the sum of models is conserved.
  const bool finite =
      AddScaledDifferenceIfFinite(snapshot->data(), their_snapshot.data(), snapshot->data(),
                                  ShareCoefficient(), x_.data(), static_cast<size_t>(n));
  if (check && !finite) {
    x_.swap(*snapshot);  // the model as it was; the buffer goes back to the pool
    ForgetPartnerShare();
    *first_bad = FirstNonFinite(their_snapshot.data(), static_cast<size_t>(n));
    return nullptr;
  }
  CommitShare();
  NoteServed();
  counters_.bits_sent += 64 * n;
  return snapshot;
}

std::shared_ptr<const Vec> SwarmSgd::MergeRequestFloat32(
    const Eigen::Ref<const Vec>& their_snapshot, bool check, size_t* first_bad) {
  // The reply S_j' = X_j rounded; X_j <- X_j + (S_i' - S_j')/2 into merged_, committed only if
  // S_i' was finite (the same pass checks it).
  std::shared_ptr<Vec> reply = snapshots_.Take();
  const size_t n = static_cast<size_t>(x_.size());
  reply->resize(x_.size());
  RoundToFloat32(x_.data(), n, reply->data());
  merged_.resize(x_.size());
  const bool finite = AddScaledDifferenceIfFinite(x_.data(), their_snapshot.data(), reply->data(),
                                                  ShareCoefficient(), merged_.data(), n);
  if (check && !finite) {
    ForgetPartnerShare();
    *first_bad = FirstNonFinite(their_snapshot.data(), n);
    return nullptr;  // the model unchanged; the reply's buffer goes back to the pool
  }
  x_.swap(merged_);
  CommitShare();
  NoteServed();
  counters_.bits_sent += 32 * static_cast<int64_t>(n);
  return reply;
}

bool SwarmSgd::SaveState(AlgorithmState* s) const {
  SaveCommon("swarmsgd", s);
  SaveTail(s);
  return true;
}

void SwarmSgd::LoadState(const AlgorithmState& s) { LoadCommon("swarmsgd", s, 0, 0); }

}  // namespace starling::algorithms
