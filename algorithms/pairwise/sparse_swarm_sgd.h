// SwarmSGD with top-k sparsified exchanges and error feedback (sparsification applied to
// SwarmSGD's model deltas; CHOCO's public copies made pairwise).
//
// Each edge (i, j) keeps two public copies on both of its nodes: x̂_{i->j}, what j knows of i's
// model, and x̂_{j->i}. An exchange sends q = TopK(S - x̂) (the k largest entries of the
// snapshot's difference from the copy the partner holds, by magnitude) and both sides add q to
// that copy; then both merge with the same public values:
//   X_i <- X_i + gamma (x̂_{j->i} - x̂_{i->j}),   X_j <- X_j + gamma (x̂_{i->j} - x̂_{j->i}),
// exactly opposite changes, so the sum of models is conserved bit for bit in any interleaving.
// What top-k leaves out stays in S - x̂ and goes in a later exchange (error feedback through
// the copy). gamma = 1/2 with copies equal to the snapshots is SwarmSGD's averaging, but with
// copies that lag, gamma must shrink with the fraction k/d sent (CHOCO's condition, gamma about
// the compression ratio): with 3 of 20 entries, gossip alone diverges at gamma = 0.5 and
// converges at 0.2 (tests/compression_test). The default is min(1/2, k/d).
//
// The copies of an edge must agree on both nodes, and lost replies, timeouts or a restart can
// make them differ. So they are checked, never assumed: an offer carries hashes of both copies
// as the initiator holds them; the responder merges only if its own copies hash the same, and
// answers "failed" otherwise; a reply carries hashes the initiator checks before merging. An edge
// never synchronised, or whose check failed, exchanges at full precision next, which resets both
// copies to the two snapshots.
//
// Message layout (a Vec of dim + 3 numbers, as QuantizedSwarmSgd's; node/drivers/exchange_wire.h
// sends it as a top-k payload): [tag, hash, hash, body], tag 0 = full (body: the snapshot), 3 =
// sparse (body: q, dense with at most k nonzeros; hashes of the sender's copy of itself before
// adding q and of its copy of the partner), 2 = failed. bits_sent counts 8 bits of tag plus 64 per
// value (full), or 64 bits of hashes plus k (32-bit index + 64-bit value) pairs (sparse).
//
// The compressor is a hook (Compress / Expand below): VqSwarmSgd (vq_swarm_sgd.h) replaces
// top-k by vqSGD's cross-polytope quantizer on the same public copies.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/compression/compression_spec.h"
#include "algorithms/pairwise/snapshot_pool.h"
#include "algorithms/pairwise/swarm_sgd_base.h"

namespace starling::algorithms {

struct SparseOffer {
  uint64_t seq;
  int peer;
  Vec next_self;  // x̂_{i->j} once j has applied this offer
  bool full;
};

class SparseSwarmSgd : public SwarmSgdBase<SparseOffer> {
 public:
  SparseSwarmSgd(const NodeSetup& setup, ScheduledStep step, int batch_size, int local_steps,
                 TopKSpec spec);

  std::shared_ptr<const Vec> BeginExchange(int peer, uint64_t seq) override;
  bool CompleteExchange(uint64_t seq, const Eigen::Ref<const Vec>& reply) override;
  std::shared_ptr<const Vec> Respond(int peer, const Eigen::Ref<const Vec>& offer) override;
  bool SaveState(AlgorithmState* state) const override;
  void LoadState(const AlgorithmState& state) override;

  // Tags 0 and 2 as QuantizedSwarmSgd's (kFull, kFailed); 4 is VqSwarmSgd's compressed tag.
  enum Tag { kFull = 0, kFailed = 2, kSparse = 3, kVq = 4 };
  static constexpr int kHeaderSize = 3;
  // 32-bit hash of a vector's bits (as a double, exactly), for the copy checks.
  static double HashOf(const Vec& v);

  // The public copies of the edge to `peer` (for tests): x̂_{self->peer} and x̂_{peer->self}.
  const Vec& CopyOfSelf(int peer) const { return edges_.at(peer).self; }
  const Vec& CopyOfPeer(int peer) const { return edges_.at(peer).peer; }
  double gamma() const { return gamma_; }

 protected:
  // For a variant with another compressor: its compressed tag, its consensus step and its
  // checkpoint layout name.
  SparseSwarmSgd(const NodeSetup& setup, ScheduledStep step, int batch_size, int local_steps,
                 double gamma, double compressed_tag, std::string layout);
  // The compressor. Compress writes a compressed message's body for diff = S - copy into
  // *message (resized; words [0, kHeaderSize) are the caller's), the vector q both sides add to
  // the copy into *q, and returns the bits the message takes on the wire. Expand reads q back
  // from a received compressed message, exactly as Compress computed it (both sides must add
  // the same q); false if the body is malformed. Defaults: top-k.
  virtual int64_t Compress(const Vec& diff, Vec* message, Vec* q);
  virtual bool Expand(const Eigen::Ref<const Vec>& message, Vec* q);
  // A variant's own integers, saved after the edges in a checkpoint and restored by LoadExtra.
  virtual std::vector<int64_t> SaveExtra() const { return {}; }
  virtual void LoadExtra(const std::vector<int64_t>& /*ints*/) {}
  virtual size_t ExtraInts() const { return 0; }

 private:
  struct Edge {
    Vec self;  // x̂_{i->j}: i's public copy as j holds it
    Vec peer;  // x̂_{j->i}
    bool synced = false;
  };
  Edge& EdgeTo(int peer);
  // Writes TopK(v) into *q (dense, zeros elsewhere).
  void TopK(const Vec& v, Vec* q);
  void Merge(const Edge& e);
  // Fills *reply with a failure answer.
  void Failed(Vec* reply);

  TopKSpec spec_;
  double gamma_;
  double compressed_tag_ = kSparse;
  std::string layout_ = "swarmsgd-topk";
  SnapshotPool messages_;  // offers and replies handed out
  Vec q_, diff_, their_q_;
  std::vector<Eigen::Index> order_;
  std::map<int, Edge> edges_;
};

}  // namespace starling::algorithms
