#include "node/drivers/vector_wire.h"

#include <cstdint>

#include "net/payload.h"

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
  Eigen::Index off = 0;
  std::vector<uint32_t> indices;
  std::vector<double> values;
  for (const auto& p : e.payloads) {
    if (p.encoding == net::Encoding::kTopK) {
      if (!net::UnpackTopK(p, &indices, &values, reject)) return false;
      out->segment(off, p.dim).setZero();
      for (size_t i = 0; i < indices.size(); ++i) (*out)[off + indices[i]] = values[i];
    } else if (!net::PayloadToDoubles(p, out->data() + off, p.dim, reject)) {
      return false;
    }
    off += p.dim;
  }
  return true;
}

}  // namespace starling::node
