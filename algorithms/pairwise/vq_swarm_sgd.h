// SwarmSGD with vqSGD's cross-polytope quantizer (Gandikota et al., arXiv:1911.07971; compression/
// cross_polytope_quantizer.h) on the exchanges: `--compression vq:S[:GAMMA]`.
//
// [DERIVED] What the pairwise merge needs. SwarmSGD's compressed variants must leave the sum of
// models unchanged (both sides use the same quantized values). Averaging the
// two quantized snapshots, as the lattice variant does, would change the sum by
// (Q(S_i) - S_i) + (Q(S_j) - S_j): zero in expectation, but of size sqrt((d - 1)/S) ||S|| per
// exchange, since the quantizer's error scales with the norm of what it quantizes, and the
// models' norm does not shrink. So the quantizer is applied where its error shrinks, to the
// difference from a public copy, with SparseSwarmSgd's scheme (error feedback through copies
// that both nodes of an edge hold): a message carries Q'(S - x̂) with Q' = Q / (1 + omega),
// omega = (d - 1)/S, CHOCO's contractive scaling (E||Q'(v) - v||^2 =
// omega/(1 + omega) ||v||^2); both sides add the same q to the copy and merge
//   X_i <- X_i + gamma (x̂_{j->i} - x̂_{i->j}),   X_j <- X_j + gamma (x̂_{i->j} - x̂_{j->i}).
// The two changes are exact negatives (fl(a - b) = -fl(b - a), and gamma * -t = -(gamma * t)),
// so the sum of models is conserved by every merge, not just in expectation, whatever the
// samples drew. Both sides get the same q because q is a function of the sender's message only
// (DecodeScaled of its norm and codes): the receiver decodes the very message the sender
// decoded, never a sample of its own. Expected progress: E q = delta (S - x̂), delta =
// S/(d - 1 + S), so the copies track the snapshots at rate delta and gamma must shrink with it,
// as CHOCO's theory asks. [DERIVED, heuristic] How far: a merge moves the models' difference D
// by -2 gamma D plus 2 gamma times the copies' error e; e is fed about gamma |D| per merge and
// decays by sqrt(1 - delta) ~ 1 - delta/2 (E||v - Q'(v)||^2 = (1 - delta)||v||^2), so it settles
// near 2 gamma |D| / delta, and D still shrinks iff 4 gamma^2 / delta < 2 gamma, i.e.
// gamma < delta/2. This adds amplitudes (not a proof); a sweep of pure gossip (5 nodes on a
// ring, d = 20, 20000 merges; docs/results/compression.md) diverged at gamma >= 1.26 delta
// for S = 2 and >= delta for S = 6, and converged at gamma <= 0.63 delta (S = 2), <= delta/2 (S = 6) and at
// every gamma tried for S = 20 (delta 0.51, gamma up to 0.5). The default is
// min(1/2, delta/2); top-k's rule carried over, min(1/2, delta), diverged for S = 6.
//
// Message layout (the simulator passes it as it is; node/drivers/exchange_wire.h sends a
// compressed one as a packed kCrossPolytope payload): full and failed as SparseSwarmSgd's
// ([tag, 0, 0, snapshot] of d + 3, [2, 0...]); compressed: [4, hash of the sender's copy of
// itself before adding q, hash of its copy of the partner, norm, S codes] of 4 + S numbers.
// bits_sent counts 8 bits of tag, 64 of hashes and the packed message, 64 + S (1 + ceil(log2 d)).
// The samples come from a generator seeded by (node seed, messages encoded so far); that count
// is checkpointed, so a resumed node draws fresh samples.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/compression/compression_spec.h"
#include "algorithms/compression/cross_polytope_quantizer.h"
#include "algorithms/pairwise/sparse_swarm_sgd.h"

namespace starling::algorithms {

class VqSwarmSgd : public SparseSwarmSgd {
 public:
  // Throws std::invalid_argument naming --compression if S > max(d, 64) (the wire's bound,
  // net/envelope.h: a message never larger than a top-k one of d entries).
  VqSwarmSgd(const NodeSetup& setup, ScheduledStep step, int batch_size, int local_steps,
             VqSpec spec);

  static constexpr int kVqHeaderSize = 4;  // [tag, hash, hash, norm] before the codes
  int samples() const { return samples_; }

 protected:
  int64_t Compress(const Vec& diff, Vec* message, Vec* q) override;
  bool Expand(const Eigen::Ref<const Vec>& message, Vec* q) override;
  std::vector<int64_t> SaveExtra() const override { return {static_cast<int64_t>(encoded_)}; }
  void LoadExtra(const std::vector<int64_t>& ints) override;
  size_t ExtraInts() const override { return 1; }

 private:
  int samples_;
  double divisor_;  // 1 + omega
  uint64_t encoded_ = 0;
  CrossPolytopeMessage m_;
};

}  // namespace starling::algorithms
