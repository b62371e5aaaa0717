#include "node/drivers/vector_wire.h"

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

#include "algorithms/compression/bit_packing.h"
#include "algorithms/compression/cross_polytope_quantizer.h"
#include "algorithms/compression/range_quantizer.h"
#include "algorithms/round/quantized_gossip.h"
#include "net/payload.h"
#include "net/payload_view.h"

namespace starling::node {

void AttachVectors(const Vec& v, int dim, net::Envelope* e) {
  e->payloads.clear();
  for (Eigen::Index off = 0; off < v.size(); off += dim) {
    e->payloads.push_back(net::Float64Payload(v.data() + off, static_cast<uint32_t>(dim)));
  }
}

net::Payload SparsePayload(const double* x, int dim, std::string* storage) {
  std::vector<uint32_t> indices;
  std::vector<double> values;
  for (int k = 0; k < dim; ++k) {
    if (x[k] != 0.0) {
      indices.push_back(static_cast<uint32_t>(k));
      values.push_back(x[k]);
    }
  }
  return net::TopKPayload(static_cast<uint32_t>(dim), indices, values, storage);
}

void AttachSparseVectors(const Vec& v, int dim, std::vector<std::string>* storage,
                         net::Envelope* e) {
  e->payloads.clear();
  const size_t blocks = dim > 0 ? static_cast<size_t>(v.size() / dim) : 0;
  storage->resize(blocks);
  for (size_t b = 0; b < blocks; ++b) {
    e->payloads.push_back(SparsePayload(v.data() + b * dim, dim, &(*storage)[b]));
  }
}

void AttachCrossPolytope(const Vec& message, int dim, int samples, std::string* storage,
                         net::Envelope* e) {
  std::vector<uint32_t> codes(samples);
  for (int s = 0; s < samples; ++s) codes[s] = static_cast<uint32_t>(message[1 + s]);
  algorithms::CrossPolytopeQuantizer::PackCodes(codes, dim, storage);
  e->payloads.clear();
  e->payloads.push_back(net::CrossPolytopePayload(static_cast<uint32_t>(dim), message[0],
                                                  static_cast<uint32_t>(samples), *storage));
}

bool CollectCrossPolytope(const net::Envelope& e, int dim, int samples, Vec* out,
                          net::Reject* reject) {
  auto fail = [&](net::RejectReason reason, std::string detail) {
    reject->reason = reason;
    reject->detail = std::move(detail);
    return false;
  };
  if (e.payloads.size() != 1) {
    return fail(net::RejectReason::kBadPayloadCount,
                std::to_string(e.payloads.size()) + " payloads in a vq round, expected 1");
  }
  if (e.payloads[0].encoding != net::Encoding::kCrossPolytope) {
    return fail(net::RejectReason::kBadEncoding,
                std::string("a ") + net::EncodingName(e.payloads[0].encoding) +
                    " payload in a run whose rounds send cross-polytope codes");
  }
  net::PayloadReader reader;
  const auto view = reader.Read(e.payloads[0], static_cast<uint32_t>(dim), reject);
  if (!view) return false;
  const auto& cp = std::get<net::CrossPolytopeView>(*view);
  if (cp.samples != static_cast<uint32_t>(samples)) {
    return fail(net::RejectReason::kBadField, "cross-polytope samples " +
                                                  std::to_string(cp.samples) + ", ours " +
                                                  std::to_string(samples));
  }
  // Checked by the reader; the quantizer's unpacking checks the codes again.
  std::vector<uint32_t> codes;
  if (!algorithms::CrossPolytopeQuantizer::UnpackCodes(cp.codes, dim, samples, &codes)) {
    return fail(net::RejectReason::kBadSparse, "cross-polytope codes out of range");
  }
  out->resize(1 + samples);
  (*out)[0] = cp.norm;
  for (int s = 0; s < samples; ++s) (*out)[1 + s] = codes[s];
  return true;
}

void AttachRangeCodes(const Vec& coded, int dim, int bits, std::vector<std::string>* storage,
                      net::Envelope* e) {
  e->payloads.clear();
  const size_t segments = dim > 0 ? static_cast<size_t>(coded.size() / (1 + dim)) : 0;
  storage->resize(segments);
  std::vector<uint32_t> codes(dim);
  for (size_t s = 0; s < segments; ++s) {
    const double* in = coded.data() + s * (1 + dim);
    for (int k = 0; k < dim; ++k) codes[k] = static_cast<uint32_t>(in[1 + k]);
    (*storage)[s].clear();
    algorithms::AppendPackedBits(codes, bits, &(*storage)[s]);
    e->payloads.push_back(net::RangeCodesPayload(static_cast<uint32_t>(dim), in[0],
                                                 static_cast<uint32_t>(bits), (*storage)[s]));
  }
}

bool CollectRangeCodes(const net::Envelope& e, int dim, int segments, int bits, Vec* out,
                       net::Reject* reject) {
  auto fail = [&](net::RejectReason reason, std::string detail) {
    reject->reason = reason;
    reject->detail = std::move(detail);
    return false;
  };
  if (e.payloads.size() != static_cast<size_t>(segments)) {
    return fail(net::RejectReason::kBadPayloadCount,
                std::to_string(e.payloads.size()) +
                    " payloads in a quantized-gossip round, expected " + std::to_string(segments));
  }
  const algorithms::RangeQuantizer quantizer(bits);
  net::PayloadReader reader;
  std::vector<uint32_t> codes;
  out->resize(static_cast<Eigen::Index>(segments) * dim);
  for (int s = 0; s < segments; ++s) {
    const net::Payload& p = e.payloads[s];
    if (p.encoding != net::Encoding::kRangeCodes) {
      return fail(net::RejectReason::kBadEncoding,
                  std::string("a ") + net::EncodingName(p.encoding) +
                      " payload in a run whose rounds send range codes (--gossip-bits)");
    }
    const auto view = reader.Read(p, static_cast<uint32_t>(dim), reject);
    if (!view) return false;
    const auto& rc = std::get<net::RangeCodesView>(*view);
    if (rc.bits != bits) {
      return fail(net::RejectReason::kBadField, "range-codes bits " + std::to_string(rc.bits) +
                                                    ", ours (--gossip-bits) " +
                                                    std::to_string(bits));
    }
    // Checked by the reader (length, padding); the unpacking checks them again.
    if (!algorithms::UnpackBits(rc.codes, static_cast<size_t>(dim), bits, &codes)) {
      return fail(net::RejectReason::kBadLength, "range codes do not unpack");
    }
    algorithms::QuantizedGossip::DecodeSegment(quantizer, rc.range, codes.data(), dim,
                                               out->data() + static_cast<Eigen::Index>(s) * dim);
  }
  return true;
}

bool CollectVectors(const net::Envelope& e, Vec* out, net::Reject* reject) {
  Eigen::Index total = 0;
  for (const auto& p : e.payloads) total += p.dim;
  out->resize(total);
  net::PayloadReader reader;
  Eigen::Index off = 0;
  for (const auto& p : e.payloads) {
    // Each block at its declared dim (bounded by the run's decode limits); the synchronizer
    // checks the total against the algorithm's payload for the step.
    const auto view = reader.Read(p, p.dim, reject, out->data() + off);
    if (!view) return false;
    if (const auto* sparse = std::get_if<net::SparseView>(&*view)) {
      sparse->ScatterInto(out->data() + off);
    } else if (!std::holds_alternative<net::DenseView>(*view)) {
      reject->reason = net::RejectReason::kBadEncoding;
      reject->detail = std::string("a ") + net::EncodingName(p.encoding) +
                       " payload in a round-based run that does not send them";
      return false;
    }
    off += p.dim;
  }
  return true;
}

}  // namespace starling::node
