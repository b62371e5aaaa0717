// SwarmSGD with lattice-quantized exchanges: the same local steps and
// non-blocking averaging as SwarmSgd, but each side sends its snapshot as dithered lattice codes
// (LatticeQuantizer, log2 q bits per coordinate) that the other decodes against its own model,
// and both sides average the same lattice points: avg = (Q(S_i) + Q(S_j)) / 2, each keeping the
// progress it made since its snapshot. The sum of models changes only by the (unbiased)
// quantization error.
//
// Exact decoding is checked, never assumed. The responder decodes the offer against its model
// and compares the hash of the lattice integers; it also checks |Q(S_j) - Q(S_i)| < (q/2 - 1) s in
// every coordinate, which guarantees that the initiator, decoding against its kept S_i
// (|Q(S_i) - S_i| <= s/2), recovers Q(S_j) exactly. If either check fails the responder merges
// nothing and answers "failed"; the initiator merges nothing either and makes its next offer at
// full precision (the retry), which the responder answers at full precision.
//
// Message layout (a Vec of dim + 3 numbers; the simulator passes it as it is, the daemon
// translates it to wire payloads in node/drivers/exchange_wire.h): [tag, hash, dither seed, body],
// tag 0 = full precision (body: the values), 1 = lattice (body: the codes), 2 = failed. A reply
// whose hash does not match what it decodes to (a faulty peer) is merged as a failure, never
// thrown. bits_sent counts what a packed wire message holds: 8 bits of tag, plus 64 per value
// (full), or 64 bits of hash and seed plus log2 q per code (lattice).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "algorithms/compression/lattice_quantizer.h"
#include "algorithms/pairwise/snapshot_pool.h"
#include "algorithms/pairwise/swarm_sgd_base.h"

namespace starling::algorithms {

struct QuantizedOffer {
  uint64_t seq;
  Vec snapshot;  // S_i
  Vec point;     // Q(S_i), or S_i for a full-precision offer
};

class QuantizedSwarmSgd : public SwarmSgdBase<QuantizedOffer> {
 public:
  QuantizedSwarmSgd(const NodeSetup& setup, ScheduledStep step, int batch_size, int local_steps,
                    LatticeQuantizer quantizer);

  std::shared_ptr<const Vec> BeginExchange(int peer, uint64_t seq) override;
  bool CompleteExchange(uint64_t seq, const Eigen::Ref<const Vec>& reply) override;
  std::shared_ptr<const Vec> Respond(int peer, const Eigen::Ref<const Vec>& offer) override;
  // Checkpoints hold the model, the counters, the dither counter (so that a resumed node never
  // reuses a dither seed), whether the next offer goes at full precision, and the oracle's
  // engine. Offers outstanding at the save are dropped on load, as for SwarmSgd.
  bool SaveState(AlgorithmState* state) const override;
  void LoadState(const AlgorithmState& state) override;

  // Exchanges that fell back because a decoding check failed, and full-precision offers made.
  int64_t decode_failures() const { return counters_.decode_failures; }
  int64_t full_precision_offers() const { return full_offers_; }

  enum Tag { kFull = 0, kLattice = 1, kFailed = 2 };
  static constexpr int kHeaderSize = 3;  // [tag, hash, dither seed] before the body

 private:
  // Writes a lattice message of `x` with a fresh dither into *message; *point = Q(x).
  void EncodeLattice(const Vec& x, uint64_t dither_seed, Vec* message, Vec* point);
  void EncodeFull(const Vec& x, Vec* message);
  uint64_t NextDitherSeed();

  LatticeQuantizer quantizer_;
  SnapshotPool messages_;  // offers and replies handed out
  Vec dither_, point_, their_point_;
  std::vector<int64_t> ints_;
  std::vector<uint32_t> codes_;
  bool next_full_ = false;
  uint64_t dither_counter_ = 0;
  int64_t full_offers_ = 0;
};

}  // namespace starling::algorithms
