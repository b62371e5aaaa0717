#include "node/exchange_wire.h"

#include <cstdint>

#include "algorithms/quantized_swarm_sgd.h"
#include "net/payload.h"
#include "node/vector_wire.h"

namespace starling::node {

namespace {

using algorithms::QuantizedSwarmSgd;

bool Fail(net::Reject* reject, net::RejectReason reason, std::string detail) {
  reject->reason = reason;
  reject->detail = std::move(detail);
  return false;
}

}  // namespace

ExchangeWire::ExchangeWire(const algorithms::PairwiseOptions& options, int dim) : dim_(dim) {
  if (options.compression != "none") {
    lattice_ = true;
    quantizer_ = algorithms::ParseLatticeSpec(options.compression);
  }
}

void ExchangeWire::Attach(const Vec& message, net::Envelope* e) {
  if (!lattice_) {
    AttachVectors(message, dim_, e);
    return;
  }
  constexpr int h = QuantizedSwarmSgd::kHeaderSize;
  e->payloads.clear();
  switch (static_cast<int>(message[0])) {
    case QuantizedSwarmSgd::kFull:
      e->payloads.push_back(net::Float64Payload(message.data() + h, static_cast<uint32_t>(dim_)));
      break;
    case QuantizedSwarmSgd::kLattice: {
      codes_.resize(dim_);
      for (int k = 0; k < dim_; ++k) codes_[k] = static_cast<uint32_t>(message[h + k]);
      algorithms::LatticeQuantizer::PackCodes(codes_, quantizer_.bits(), &packed_);
      const uint64_t check = static_cast<uint64_t>(message[2]) << 32 |
                             static_cast<uint64_t>(static_cast<uint32_t>(message[1]));
      e->payloads.push_back(net::LatticePayload(static_cast<uint32_t>(dim_), quantizer_.scale(),
                                                static_cast<uint32_t>(quantizer_.modulus()),
                                                packed_, check));
      break;
    }
    default:  // kFailed: no payload
      break;
  }
}

bool ExchangeWire::Collect(const net::Envelope& e, bool request, Vec* message,
                           net::Reject* reject) {
  if (lattice_) return CollectLattice(e, request, message, reject);
  if (e.payloads.size() != 1) {
    return Fail(reject, net::RejectReason::kBadPayloadCount,
                std::to_string(e.payloads.size()) + " payloads in an exchange, expected 1");
  }
  if (e.payloads[0].encoding == net::Encoding::kLattice) {
    return Fail(reject, net::RejectReason::kBadEncoding,
                "a lattice payload in a run without --compression");
  }
  return CollectVectors(e, message, reject);
}

bool ExchangeWire::CollectLattice(const net::Envelope& e, bool request, Vec* message,
                                  net::Reject* reject) {
  constexpr int h = QuantizedSwarmSgd::kHeaderSize;
  message->resize(dim_ + h);
  if (e.payloads.empty()) {
    if (request) {
      return Fail(reject, net::RejectReason::kBadPayloadCount, "an exchange request without payload");
    }
    message->setZero();
    (*message)[0] = QuantizedSwarmSgd::kFailed;
    return true;
  }
  if (e.payloads.size() != 1) {
    return Fail(reject, net::RejectReason::kBadPayloadCount,
                std::to_string(e.payloads.size()) + " payloads in an exchange, expected 0 or 1");
  }
  const net::Payload& p = e.payloads[0];
  if (p.dim != static_cast<uint32_t>(dim_)) {
    return Fail(reject, net::RejectReason::kWrongDimension,
                "dim " + std::to_string(p.dim) + ", ours " + std::to_string(dim_));
  }
  if (p.encoding != net::Encoding::kLattice) {
    // A full-precision offer or reply (the retry after a failed decoding).
    if (!CollectVectors(e, &body_, reject)) return false;
    (*message)[0] = QuantizedSwarmSgd::kFull;
    (*message)[1] = 0;
    (*message)[2] = 0;
    message->tail(dim_) = body_;
    return true;
  }
  if (p.modulus != static_cast<uint32_t>(quantizer_.modulus()) || p.scale != quantizer_.scale()) {
    return Fail(reject, net::RejectReason::kBadField,
                "lattice modulus " + std::to_string(p.modulus) + " scale " +
                    std::to_string(p.scale) + ", ours " + std::to_string(quantizer_.modulus()) +
                    " scale " + std::to_string(quantizer_.scale()));
  }
  if (!algorithms::LatticeQuantizer::UnpackCodes(p.bytes, dim_, quantizer_.bits(), &codes_)) {
    return Fail(reject, net::RejectReason::kBadLength, "lattice codes: unused bits are not 0");
  }
  (*message)[0] = QuantizedSwarmSgd::kLattice;
  (*message)[1] = static_cast<double>(static_cast<uint32_t>(p.check));
  (*message)[2] = static_cast<double>(p.check >> 32);
  for (int k = 0; k < dim_; ++k) (*message)[h + k] = codes_[k];
  return true;
}

}  // namespace starling::node
