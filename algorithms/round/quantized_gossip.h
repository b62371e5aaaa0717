// Quantized gossip messages for the round-based DGD, gradient tracking and EXTRA
// (differential quantization after Lin, Kostina, Hassibi, arXiv:2002.02508, with
// CHOCO's public copies): --gossip-bits R > 0 replaces each exact d-vector segment z_i of a
// node's payload by an R-bit-per-coordinate message.
//
//   naive:        m_i = Q(z_i);                 zh_i = m_i
//   differential: m_i = Q(z_i - zh_i);          zh_i <- zh_i + m_i      (zh_i starts at 0)
//
// zh_i is node i's public copy: i and each neighbour compute it from the same m_i, so all copies
// are bit-identical. The mixing every method does, sum_j W_ij z_j, becomes
//
//   mix_i = z_i + sum_j W_ij (zh_j - zh_i)     (j over i and its neighbours; CHOCO with gamma = 1)
//
// which keeps sum_i mix_i = sum_i z_i exactly (W doubly stochastic), so gradient tracking still
// conserves sum_i y_i = sum_i grad f_i(x_i). With the differential rule the error zh_i - z_i
// shrinks with z_i - zh_i: the method converges at its unquantized rate once 2^-R is small
// enough; with the naive rule the error stays about |z|_inf 2^-R: an error floor.
//
// The quantizer is compression/range_quantizer.h's on the range r = max_k |v_k| of the vector v
// being quantized, sent as one double per segment (a per-message range: it needs no schedule
// tuned to the unknown contraction factor and never saturates; the cost is a 64-bit header).
// message() holds the decoded values Q(v) (what Advance's inbox holds, in the simulator as in the
// daemon); coded() holds what they are decoded from, per segment [r, d codes < 2^R], and the
// daemon sends that, packed (net/envelope.h's range-codes payloads, node/drivers/vector_wire.h).
// Sender and receivers decode with the same function (DecodeSegment), so every copy of m_i is
// bit-identical. OutgoingBits counts segments * (R d + 64). A non-finite v is passed on unchanged
// in message() (so that the drivers' divergence checks see it; its coded() range is then not
// finite and it is never sent).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/algorithm_state.h"
#include "algorithms/compression/range_quantizer.h"
#include "algorithms/node_setup.h"
#include "algorithms/params.h"
#include "algorithms/types.h"

namespace starling::algorithms {

// --gossip-bits, --gossip-quantizer (GossipQuantParamTable(), shared by dgd, dpsgd,
// gradient-tracking and extra).
struct GossipQuantParams {
  int bits = 0;                            // R bits per coordinate; 0 = exact doubles
  std::string quantizer = "differential";  // or "naive"
};
const ParamTable<GossipQuantParams>& GossipQuantParamTable();

// Q(v) with the per-message range r = max_k |v_k| (0 if v = 0) into *out; returns r. The
// quantization error is at most r 2^-R per coordinate.
double QuantizeWithOwnRange(const RangeQuantizer& quantizer, const Vec& v, Vec* out);

// One node's side of a quantized exchange of `segments` d-vectors: its message and the public
// copies of itself and of each neighbour (NodeSetup::neighbors order).
class QuantizedGossip {
 public:
  // Throws std::invalid_argument on bits outside [1, 30] or an unknown quantizer name.
  QuantizedGossip(const NodeSetup& setup, Eigen::Index dim, int segments,
                  const GossipQuantParams& params);

  // The message for this node's exact payload z (segments * dim values).
  void Encode(const Vec& z);
  const Vec& message() const { return message_; }
  // The same message as it travels: per segment [r, dim codes], segments * (1 + dim) numbers.
  const Vec& coded() const { return coded_; }
  int bits() const { return quantizer_.bits(); }
  int segments() const { return segments_; }
  int64_t MessageBits() const;

  // One segment's values from its range r (finite, >= 0) and dim codes (each < 2^bits): 0 if
  // r = 0, else the quantizer's cell points. The function the sender's message() and every
  // receiver's copy come from.
  static void DecodeSegment(const RangeQuantizer& quantizer, double range, const uint32_t* codes,
                            Eigen::Index dim, double* out);
  // A whole coded() message into its values (segments * dim); false (and *values unspecified)
  // unless it has segments * (1 + dim) numbers, finite ranges >= 0 and integer codes < 2^bits.
  static bool DecodeCoded(const Vec& coded, Eigen::Index dim, int segments, int bits, Vec* values);

  // Takes in the neighbours' messages (as Advance gets them, same order) and this node's own:
  // the public copies after this exchange, staged until Commit() so that an Advance that throws
  // (a gradient interrupted) leaves the committed copies as they were.
  void Receive(const std::vector<const Vec*>& inbox);
  // z.segment(segment * dim, dim) + sum_j W_ij (zh_j - zh_i) with the staged copies, into *out.
  void Mix(const Vec& z, int segment, Vec* out) const;
  void Commit();

  // Checkpoints: the coded message and the public copies, appended to / read from state->vectors
  // from index `first` on; StateVectors() of them.
  size_t StateVectors() const { return 2 + copies_.size(); }
  void Save(AlgorithmState* state) const;
  void Load(const AlgorithmState& state, size_t first);

 private:
  NodeSetup setup_;
  Eigen::Index dim_;
  int segments_;
  bool differential_;
  RangeQuantizer quantizer_;
  Vec message_, coded_, self_copy_, diff_;
  std::vector<uint32_t> codes_;
  std::vector<Vec> copies_;  // neighbours' public copies
  Vec staged_self_;
  std::vector<Vec> staged_;
};

}  // namespace starling::algorithms
