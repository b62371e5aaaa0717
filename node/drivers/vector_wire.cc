#include "node/drivers/vector_wire.h"

#include <cstdint>
#include <variant>

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
    } else if (std::holds_alternative<net::LatticeView>(*view)) {
      reject->reason = net::RejectReason::kBadEncoding;
      reject->detail = "a lattice payload in a round-based run: it needs its compressor";
      return false;
    }
    off += p.dim;
  }
  return true;
}

}  // namespace starling::node
