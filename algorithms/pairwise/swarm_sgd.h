// SwarmSGD (Nadiradze et al., arXiv:1910.12308), in non-blocking form
// (docs/explanations/algorithms/swarmsgd.md):
// H local SGD steps between the exchanges a node initiates; an exchange averages the two
// published snapshots and each side keeps the local progress it made since its snapshot.
// Full precision, or (--compression f32, `float32_wire`) every message rounded to binary32:
// the initiator keeps its rounded snapshot S_i' as the offer, the responder replies with its
// rounded model S_j' and both merge with the rounded pair, X_i += (S_j' - S_i')/2 and
// X_j += (S_i' - S_j')/2, so the sum of models is still conserved and each side keeps its own
// rounding error. The compressed variants are QuantizedSwarmSgd and SparseSwarmSgd.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "algorithms/pairwise/snapshot_pool.h"
#include "algorithms/pairwise/swarm_sgd_base.h"
#include "algorithms/params.h"

namespace starling::algorithms {

// SwarmSGD's own parameters (the same for its lattice and top-k variants).
struct SwarmSgdParams {
  double tail_average = 0.0;  // fraction of --iterations whose models are averaged; 0 = off
  // Daemons only (PairwiseAlgorithm::merge_pace): merges a node completes per local step before
  // it takes the next; 0 = off.
  double merge_pace = 0.0;
};
const ParamTable<SwarmSgdParams>& SwarmSgdParamTable();

// The SwarmSGD variant --compression `compression` names: full precision ("none"), binary32
// messages ("f32"), lattice
// codes ("lattice:..."), top-k ("topk:...") or vqSGD's quantizer ("vq:..."), with SwarmSGD's own
// parameters `params` (`iterations`, the budget of local steps, sizes the tail average). The
// registry and the C ABI both build theirs here, so they accept the same specs. Throws
// std::invalid_argument naming the option for a bad spec or parameter.
std::unique_ptr<PairwiseAlgorithm> MakeSwarmSgdVariant(const NodeSetup& setup, ScheduledStep step,
                                                       int batch_size, int local_steps,
                                                       const std::string& compression,
                                                       int64_t iterations,
                                                       const SwarmSgdParams& params);

struct SwarmSgdOffer {
  uint64_t seq;
  std::shared_ptr<const Vec> snapshot;  // S_i, also the message offered
};

class SwarmSgd : public SwarmSgdBase<SwarmSgdOffer> {
 public:
  SwarmSgd(const NodeSetup& setup, ScheduledStep step, int batch_size, int local_steps,
           bool float32_wire = false);

  std::shared_ptr<const Vec> BeginExchange(int peer, uint64_t seq) override;
  bool CompleteExchange(uint64_t seq, const Eigen::Ref<const Vec>& their_snapshot) override;
  std::shared_ptr<const Vec> Respond(int peer,
                                     const Eigen::Ref<const Vec>& their_snapshot) override;
  // The merges check the partner's vector in their own pass (checked_merge.h).
  MergeResult CompleteExchangeChecked(uint64_t seq, const Eigen::Ref<const Vec>& their_snapshot,
                                      size_t* first_bad) override;
  std::shared_ptr<const Vec> RespondChecked(int peer, const Eigen::Ref<const Vec>& their_snapshot,
                                            size_t* first_bad) override;
  bool SaveState(AlgorithmState* state) const override;
  void LoadState(const AlgorithmState& state) override;
  // Full precision and f32 merge with push-sum shares (push_sum_share.h).
  bool KeepsShares() const override { return true; }
  // The offers' and replies' vectors (for tests: allocations()).
  const SnapshotPool& snapshot_pool() const { return snapshots_; }

 private:
  // Offer and reply snapshots: kept offers and messages the transport still sends hold theirs.
  SnapshotPool snapshots_;
  bool float32_wire_;  // --compression f32: messages rounded to binary32
  // The initiator's merge is written here and swapped with x_ when it is committed.
  Vec merged_;

  // The merges, plain (`check` false: always committed, as the simulators' trusted vectors
  // are) or checked; one code path for both, so that daemons and simulators agree bit for bit.
  void CheckDimension(const Eigen::Ref<const Vec>& their_snapshot) const;
  MergeResult MergeReply(uint64_t seq, const Eigen::Ref<const Vec>& their_snapshot, bool check,
                         size_t* first_bad);
  std::shared_ptr<const Vec> MergeRequest(const Eigen::Ref<const Vec>& their_snapshot, bool check,
                                          size_t* first_bad);
  // MergeRequest's --compression f32 form: the reply is a rounded copy, the model stays in x_.
  std::shared_ptr<const Vec> MergeRequestFloat32(const Eigen::Ref<const Vec>& their_snapshot,
                                                 bool check, size_t* first_bad);
};

}  // namespace starling::algorithms
