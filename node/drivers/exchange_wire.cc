#include "node/drivers/exchange_wire.h"

#include <cstdint>
#include <stdexcept>
#include <variant>

#include "algorithms/compression/compression_spec.h"
#include "algorithms/compression/cross_polytope_quantizer.h"
#include "algorithms/pairwise/quantized_swarm_sgd.h"
#include "algorithms/pairwise/sparse_swarm_sgd.h"
#include "algorithms/pairwise/vq_swarm_sgd.h"
#include "net/payload.h"
#include "net/payload_view.h"
#include "node/drivers/vector_wire.h"

namespace starling::node {

namespace {

using algorithms::QuantizedSwarmSgd;
using algorithms::SparseSwarmSgd;
using algorithms::VqSwarmSgd;

// Both compressed message layouts share the header size and the full / failed tags.
constexpr int kHeader = QuantizedSwarmSgd::kHeaderSize;
static_assert(kHeader == SparseSwarmSgd::kHeaderSize);
static_assert(static_cast<int>(QuantizedSwarmSgd::kFull) == SparseSwarmSgd::kFull);
static_assert(static_cast<int>(QuantizedSwarmSgd::kFailed) == SparseSwarmSgd::kFailed);
constexpr double kFullTag = QuantizedSwarmSgd::kFull;
constexpr double kFailedTag = QuantizedSwarmSgd::kFailed;
constexpr int kVqHeader = VqSwarmSgd::kVqHeaderSize;

// Every encoding PayloadReader does not hand up as a DenseView (range codes: quantized gossip's,
// never an exchange's, refused here like the others).
bool IsCompressed(net::Encoding encoding) {
  return encoding == net::Encoding::kLattice || encoding == net::Encoding::kTopK ||
         encoding == net::Encoding::kCrossPolytope || encoding == net::Encoding::kRangeCodes;
}

bool Fail(net::Reject* reject, net::RejectReason reason, std::string detail) {
  reject->reason = reason;
  reject->detail = std::move(detail);
  return false;
}

// The two 32-bit numbers of a message header in one 64-bit check word, and back.
uint64_t CheckOf(const Vec& message) {
  return static_cast<uint64_t>(message[2]) << 32 |
         static_cast<uint64_t>(static_cast<uint32_t>(message[1]));
}
void SetCheck(uint64_t check, Vec* message) {
  (*message)[1] = static_cast<double>(static_cast<uint32_t>(check));
  (*message)[2] = static_cast<double>(check >> 32);
}

}  // namespace

ExchangeWire::ExchangeWire(const algorithms::PairwiseOptions& options, int dim, int blocks)
    : dim_(dim), blocks_(blocks) {
  if (options.compression == "none") return;
  if (blocks != 1)
    throw std::invalid_argument("--compression: not for --algorithm " + options.algorithm);
  if (algorithms::IsFloat32Spec(options.compression)) {
    mode_ = Mode::kFloat32;
  } else if (algorithms::IsTopKSpec(options.compression)) {
    algorithms::ParseTopKSpec(options.compression);
    mode_ = Mode::kTopK;
  } else if (algorithms::IsVqSpec(options.compression)) {
    vq_samples_ = algorithms::ParseVqSpec(options.compression).samples;
    if (static_cast<uint32_t>(vq_samples_) > net::MaxCrossPolytopeSamples(dim)) {
      throw std::invalid_argument("--compression " + options.compression +
                                  ": S must be at most max(d, 64) = " +
                                  std::to_string(net::MaxCrossPolytopeSamples(dim)));
    }
    mode_ = Mode::kVq;
  } else {
    quantizer_ = algorithms::ParseLatticeSpec(options.compression);
    mode_ = Mode::kLattice;
  }
}

std::shared_ptr<const void> ExchangeWire::Fill(const ExchangeMessage& m, net::Envelope* out) {
  if (m.kind == ExchangeMessage::Kind::kRefused) {
    throw std::logic_error("ExchangeWire::Fill: a refused request is not answered");
  }
  out->type = m.kind == ExchangeMessage::Kind::kRequest ? net::MessageType::kXchgReq
              : m.kind == ExchangeMessage::Kind::kReply ? net::MessageType::kXchgRep
                                                        : net::MessageType::kBusy;
  out->exchange_seq = m.seq;
  out->payloads.clear();
  return m.payload ? Attach(m.payload, out) : nullptr;
}

std::shared_ptr<const void> ExchangeWire::Attach(const std::shared_ptr<const Vec>& message,
                                                 net::Envelope* e) {
  Attach(*message, e);
  // Only a float64 payload views the message; float32 values, codes and top-k entries view
  // packed_.
  const bool views_message =
      mode_ == Mode::kPlain || (mode_ != Mode::kFloat32 && (*message)[0] == kFullTag);
  return views_message ? message : nullptr;
}

void ExchangeWire::Attach(const Vec& message, net::Envelope* e) {
  if (mode_ == Mode::kPlain) {
    AttachVectors(message, dim_, e);
    return;
  }
  e->payloads.clear();
  if (mode_ == Mode::kFloat32) {
    e->payloads.push_back(
        net::Float32Payload(message.data(), static_cast<uint32_t>(dim_), &packed_));
    return;
  }
  const double tag = message[0];
  if (tag == kFullTag) {
    e->payloads.push_back(
        net::Float64Payload(message.data() + kHeader, static_cast<uint32_t>(dim_)));
  } else if (tag == kFailedTag) {
    // No payload.
  } else if (mode_ == Mode::kLattice) {
    codes_.resize(dim_);
    for (int k = 0; k < dim_; ++k) codes_[k] = static_cast<uint32_t>(message[kHeader + k]);
    algorithms::LatticeQuantizer::PackCodes(codes_, quantizer_.bits(), &packed_);
    e->payloads.push_back(net::LatticePayload(static_cast<uint32_t>(dim_), quantizer_.scale(),
                                              static_cast<uint32_t>(quantizer_.modulus()), packed_,
                                              CheckOf(message)));
  } else if (mode_ == Mode::kVq) {
    codes_.resize(vq_samples_);
    for (int s = 0; s < vq_samples_; ++s) {
      codes_[s] = static_cast<uint32_t>(message[kVqHeader + s]);
    }
    algorithms::CrossPolytopeQuantizer::PackCodes(codes_, dim_, &packed_);
    e->payloads.push_back(net::CrossPolytopePayload(static_cast<uint32_t>(dim_), message[3],
                                                    static_cast<uint32_t>(vq_samples_), packed_,
                                                    CheckOf(message)));
  } else {
    net::Payload p = SparsePayload(message.data() + kHeader, dim_, &packed_);
    p.check = CheckOf(message);
    e->payloads.push_back(p);
  }
}

std::optional<Eigen::Map<const Vec>> ExchangeWire::Collect(const net::Envelope& e, bool request,
                                                           net::Reject* reject) {
  if (mode_ != Mode::kPlain && mode_ != Mode::kFloat32) {
    if (!CollectCompressed(e, request, reject)) return std::nullopt;
    return Eigen::Map<const Vec>(message_.data(), message_.size());
  }
  if (blocks_ != 1) {
    if (e.payloads.size() != static_cast<size_t>(blocks_)) {
      Fail(reject, net::RejectReason::kBadPayloadCount,
           std::to_string(e.payloads.size()) + " payloads in an exchange, expected " +
               std::to_string(blocks_));
      return std::nullopt;
    }
    for (const net::Payload& p : e.payloads) {
      if (IsCompressed(p.encoding)) {
        Fail(reject, net::RejectReason::kBadEncoding,
             "a compressed payload in a run without --compression");
        return std::nullopt;
      }
    }
    if (!CollectVectors(e, &message_, reject)) return std::nullopt;
    return Eigen::Map<const Vec>(message_.data(), message_.size());
  }
  if (e.payloads.size() != 1) {
    Fail(reject, net::RejectReason::kBadPayloadCount,
         std::to_string(e.payloads.size()) + " payloads in an exchange, expected 1");
    return std::nullopt;
  }
  // The encoding is this run's choice: a compressed one is refused before anything is read.
  const net::Encoding encoding = e.payloads[0].encoding;
  if (IsCompressed(encoding)) {
    Fail(reject, net::RejectReason::kBadEncoding,
         "a compressed payload in a run without --compression");
    return std::nullopt;
  }
  if (mode_ == Mode::kFloat32 && encoding != net::Encoding::kFloat32) {
    Fail(reject, net::RejectReason::kBadEncoding,
         std::string("a ") + net::EncodingName(encoding) + " payload in a --compression f32 run");
    return std::nullopt;
  }
  // In place when aligned float64 (no copy), else converted into the reader's scratch. Every
  // check but the NaN/Inf scan: the merge this vector goes to checks finiteness in its own pass
  // (ExchangeDriver calls PairwiseAlgorithm's *Checked merges).
  const auto view = reader_.ReadDenseUnchecked(e.payloads[0], static_cast<uint32_t>(dim_), reject);
  if (!view) return std::nullopt;
  return Eigen::Map<const Vec>(view->values, dim_);
}

bool ExchangeWire::Collect(const net::Envelope& e, bool request, Vec* message,
                           net::Reject* reject) {
  const auto view = Collect(e, request, reject);
  if (!view) return false;
  *message = *view;
  return true;
}

bool ExchangeWire::CollectCompressed(const net::Envelope& e, bool request, net::Reject* reject) {
  message_.resize(dim_ + kHeader);
  if (e.payloads.empty()) {
    if (request) {
      return Fail(reject, net::RejectReason::kBadPayloadCount,
                  "an exchange request without payload");
    }
    message_.setZero();
    message_[0] = kFailedTag;
    return true;
  }
  if (e.payloads.size() != 1) {
    return Fail(reject, net::RejectReason::kBadPayloadCount,
                std::to_string(e.payloads.size()) + " payloads in an exchange, expected 0 or 1");
  }
  // A dense payload (the first offer on an edge, or the retry after a failure) lands in the
  // message's body directly.
  double* body = message_.data() + kHeader;
  const auto view = reader_.Read(e.payloads[0], static_cast<uint32_t>(dim_), reject, body);
  if (!view) return false;
  if (std::holds_alternative<net::DenseView>(*view)) {
    message_[0] = kFullTag;
    SetCheck(0, &message_);
    return true;
  }
  if (const auto* lattice = std::get_if<net::LatticeView>(&*view);
      lattice && mode_ == Mode::kLattice) {
    return CollectLattice(*lattice, reject);
  }
  if (const auto* cp = std::get_if<net::CrossPolytopeView>(&*view); cp && mode_ == Mode::kVq) {
    return CollectCrossPolytope(*cp, reject);
  }
  if (const auto* sparse = std::get_if<net::SparseView>(&*view); sparse && mode_ == Mode::kTopK) {
    sparse->ScatterInto(body);
    message_[0] = SparseSwarmSgd::kSparse;
    SetCheck(sparse->check, &message_);
    return true;
  }
  return Fail(reject, net::RejectReason::kBadEncoding,
              std::string("a ") + net::EncodingName(e.payloads[0].encoding) + " payload in a " +
                  (mode_ == Mode::kLattice ? "lattice"
                   : mode_ == Mode::kTopK  ? "top-k"
                                           : "vq") +
                  " run");
}

bool ExchangeWire::CollectLattice(const net::LatticeView& lattice, net::Reject* reject) {
  if (lattice.modulus != static_cast<uint32_t>(quantizer_.modulus()) ||
      lattice.scale != quantizer_.scale()) {
    return Fail(reject, net::RejectReason::kBadField,
                "lattice modulus " + std::to_string(lattice.modulus) + " scale " +
                    std::to_string(lattice.scale) + ", ours " +
                    std::to_string(quantizer_.modulus()) + " scale " +
                    std::to_string(quantizer_.scale()));
  }
  if (!algorithms::LatticeQuantizer::UnpackCodes(lattice.codes, dim_, quantizer_.bits(), &codes_)) {
    return Fail(reject, net::RejectReason::kBadLength, "lattice codes: unused bits are not 0");
  }
  message_[0] = QuantizedSwarmSgd::kLattice;
  SetCheck(lattice.check, &message_);
  for (int k = 0; k < dim_; ++k) message_[kHeader + k] = codes_[k];
  return true;
}

bool ExchangeWire::CollectCrossPolytope(const net::CrossPolytopeView& cp, net::Reject* reject) {
  if (cp.samples != static_cast<uint32_t>(vq_samples_)) {
    return Fail(reject, net::RejectReason::kBadField,
                "cross-polytope samples " + std::to_string(cp.samples) + ", ours " +
                    std::to_string(vq_samples_));
  }
  // The reader checked the codes' range and unused bits; the quantizer's own unpacking checks
  // them again, so that nothing reaches the algorithm on the codec's word alone.
  if (!algorithms::CrossPolytopeQuantizer::UnpackCodes(cp.codes, dim_, vq_samples_, &codes_)) {
    return Fail(reject, net::RejectReason::kBadSparse, "cross-polytope codes out of range");
  }
  message_.resize(kVqHeader + vq_samples_);
  message_[0] = SparseSwarmSgd::kVq;
  SetCheck(cp.check, &message_);
  message_[3] = cp.norm;
  for (int s = 0; s < vq_samples_; ++s) message_[kVqHeader + s] = codes_[s];
  return true;
}

}  // namespace starling::node
