// A pairwise algorithm's exchange messages (algorithms/, one Vec each) <-> XCHG_REQ / XCHG_REP
// payloads (net/). The algorithm's message shape depends on --compression:
//   none:        the snapshot, d doubles   <-> one float64 payload.
//   f32:         the snapshot rounded to binary32 by SwarmSgd (every value a float)
//                                          <-> one float32 payload (exact both ways); a float64
//                                              payload is a reject (kBadEncoding).
//   lattice:B:S: QuantizedSwarmSgd's [tag, hash, dither seed, body] (quantized_swarm_sgd.h)
//                  tag full    <-> one float64 payload (the body),
//                  tag lattice <-> one lattice payload: modulus 2^B, scale S, the codes packed by
//                                  LatticeQuantizer::PackCodes, check = seed << 32 | hash,
//                  tag failed  <-> no payload (a reply only: "could not decode your offer").
//   topk:K:G:    SparseSwarmSgd's [tag, hash, hash, body] (sparse_swarm_sgd.h)
//                  tag full    <-> one float64 payload,
//                  tag sparse  <-> one top-k payload of the body's nonzero entries, check = the
//                                  second hash << 32 | the first,
//                  tag failed  <-> no payload (a reply only: "our copies disagree").
//   vq:S:G:      VqSwarmSgd's [tag, hash, hash, norm, S codes] (vq_swarm_sgd.h)
//                  tag full    <-> one float64 payload,
//                  tag vq      <-> one cross-polytope payload: scale = the norm, modulus = S, the
//                                  codes packed by CrossPolytopeQuantizer::PackCodes, check as
//                                  top-k's,
//                  tag failed  <-> no payload.
// So the wire carries log2 q bits per coordinate, 12 bytes per kept entry, or 1 + ceil(log2 d)
// bits per cross-polytope sample, not a double per coordinate.
//
// Everything received is checked against the run before the algorithm sees it: a payload of
// another encoding, dimension, lattice modulus or scale, or cross-polytope sample count than this
// run's, a cross-polytope code >= 2 d, or a request without a
// payload, is a reject (the caller counts it); the algorithm never throws on network input.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/compression/lattice_quantizer.h"
#include "algorithms/pairwise/pairwise_algorithm.h"
#include "net/envelope.h"
#include "net/payload_view.h"
#include "net/reject.h"
#include "node/drivers/exchange_driver.h"

namespace starling::node {

class ExchangeWire {
 public:
  // Throws std::invalid_argument for a bad --compression spec (as MakePairwiseAlgorithm does).
  // `blocks`: payloads of dim doubles per message (a method whose message holds more than the
  // model, PairwiseMessageSize; full precision only). Such messages are read into this object's
  // storage, not viewed in place.
  ExchangeWire(const algorithms::PairwiseOptions& options, int dim, int blocks = 1);

  // Replaces e->payloads with `message`'s and returns the keepalive to pass to
  // Transport::Send with them, without a copy. When every payload views `message` itself
  // (--compression none, and the full-precision messages of the compressed modes) that is
  // `message`: the algorithm never changes a message it handed out (pairwise_algorithm.h), so
  // ZeroMQ sends the algorithm's vector without a copy and drops the reference when done. Otherwise
  // (lattice codes, top-k entries, packed into this object's storage) it is null: the storage
  // must stay unchanged until Send returns, which copies what it keeps.
  std::shared_ptr<const void> Attach(const std::shared_ptr<const Vec>& message, net::Envelope* e);
  // The same payloads, viewing `message` or this object's storage, which must both stay
  // unchanged until the envelope is sent (for tests and callers that send without keepalive).
  void Attach(const Vec& message, net::Envelope* e);
  // The driver's message `m` as the envelope *out to send: XCHG_REQ, XCHG_REP or BUSY, its
  // sequence number, its payloads (Attach); returns Attach's keepalive, null without a payload.
  // `m` must not be kRefused (a refused request gets no answer: the caller sends nothing).
  std::shared_ptr<const void> Fill(const ExchangeMessage& m, net::Envelope* out);

  // Reads the payloads of a received XCHG_REQ (`request`) or XCHG_REP as a message in the
  // algorithm's shape and returns a view of it; nullopt with *reject if they are not what this
  // run's exchanges send.
  // Finiteness, explicit per message kind (docs/explanations/architecture.md): a message of one
  // float64/float32 payload in a run without --compression is NOT scanned for NaN/Inf here: its
  // consumer, the merge (ExchangeDriver -> PairwiseAlgorithm::CompleteExchangeChecked /
  // RespondChecked), checks every value in its own pass and refuses the vector as a whole, so
  // the view may hold NaN/Inf and must go to those merges only. Every other message (the
  // compressed modes, whose dense bodies, top-k values and norms are checked as they are copied;
  // the multi-payload messages of methods that send more than the model) is refused here when it
  // holds NaN/Inf.
  // --compression none: a float64 payload that arrived in a frame of its own (at least
  // net::kOutOfLineMinBytes), aligned, is viewed in place (net::PayloadReader), without a copy;
  // the view is then valid only while e's bytes are, i.e. during the transport's handler call.
  // Otherwise (a small or float32 payload, a compressed mode) the view is of this object's
  // storage, valid until the next Collect.
  std::optional<Eigen::Map<const Vec>> Collect(const net::Envelope& e, bool request,
                                               net::Reject* reject);
  // As above, copied into *message. False with *reject on a reject.
  bool Collect(const net::Envelope& e, bool request, Vec* message, net::Reject* reject);
  // True when Collect refuses NaN/Inf itself, as it copies (the compressed modes and the
  // multi-payload messages, see Collect): the merge then needs no check of its own
  // (ExchangeDriver::SetVectorsChecked).
  bool ChecksValues() const {
    return blocks_ != 1 || (mode_ != Mode::kPlain && mode_ != Mode::kFloat32);
  }

 private:
  // The compressed modes: the message in the algorithm's shape, into message_.
  bool CollectCompressed(const net::Envelope& e, bool request, net::Reject* reject);
  // A lattice message's codes (already checked for dimension) into message_, if they are of
  // this run's lattice.
  bool CollectLattice(const net::LatticeView& lattice, net::Reject* reject);
  // A cross-polytope message (already checked for dimension and code range by the reader) into
  // message_, if it has this run's S.
  bool CollectCrossPolytope(const net::CrossPolytopeView& cp, net::Reject* reject);

  enum class Mode { kPlain, kFloat32, kLattice, kTopK, kVq };
  int dim_;
  int blocks_;
  Mode mode_ = Mode::kPlain;
  algorithms::LatticeQuantizer quantizer_{8, 1.0};  // meaningful only in Mode::kLattice
  int vq_samples_ = 0;                              // Mode::kVq: S
  std::string packed_;  // lattice / cross-polytope codes, top-k entries or f32 values to send
  std::vector<uint32_t> codes_;
  Vec message_;                // a compressed mode's received message
  net::PayloadReader reader_;  // every received payload goes through it (net/payload_view.h)
};

}  // namespace starling::node
