#include "algorithms/round/quantized_gossip.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>
#include <vector>

#include "algorithms/round/neighbor_mix.h"

namespace starling::algorithms {

const ParamTable<GossipQuantParams>& GossipQuantParamTable() {
  static const auto* const table = new ParamTable<GossipQuantParams>(
      ParamTable<GossipQuantParams>("Quantized gossip (DGD, D-PSGD, gradient tracking, EXTRA)")
          .Add("gossip-bits", &GossipQuantParams::bits,
               "dgd/dpsgd/gradient-tracking/extra: send each d-vector as R bits per coordinate "
               "on the range max|v| (sent as one double); 0 = exact doubles",
               Range::NonNegative())
          .OnlySetInRunId()  // added after runs of these methods existed: keep their ids
          .Add("gossip-quantizer", &GossipQuantParams::quantizer,
               "with --gossip-bits: 'differential' sends Q(z - zh) and keeps the public copy zh "
               "(arXiv:2002.02508, CHOCO), 'naive' sends Q(z)")
          .OnlySetInRunId()
          .CrossCheck([](const GossipQuantParams& p, const ParamContext&) {
            if (p.bits > 30) FailParam("gossip-bits", int64_t{p.bits}, "must be <= 30");
            if (p.quantizer != "differential" && p.quantizer != "naive") {
              FailParam("gossip-quantizer", p.quantizer, "must be 'differential' or 'naive'");
            }
          }));
  return *table;
}

double QuantizeWithOwnRange(const RangeQuantizer& quantizer, const Vec& v, Vec* out) {
  double range = 0.0;
  for (Eigen::Index k = 0; k < v.size(); ++k) {
    if (!std::isfinite(v[k])) {
      *out = v;  // diverged: let the drivers' checks see it
      return std::abs(v[k]);
    }
    range = std::max(range, std::abs(v[k]));
  }
  if (range == 0.0) {
    out->setZero(v.size());
    return 0.0;
  }
  quantizer.Quantize(v, range, out);
  return range;
}

void QuantizedGossip::DecodeSegment(const RangeQuantizer& quantizer, double range,
                                    const uint32_t* codes, Eigen::Index dim, double* out) {
  if (range == 0.0) {
    std::fill(out, out + dim, 0.0);
    return;
  }
  quantizer.Decode(codes, dim, range, out);
}

bool QuantizedGossip::DecodeCoded(const Vec& coded, Eigen::Index dim, int segments, int bits,
                                  Vec* values) {
  if (bits < 1 || bits > 30 || dim < 1 || segments < 1 || coded.size() != segments * (1 + dim)) {
    return false;
  }
  const RangeQuantizer quantizer(bits);
  const double levels = std::ldexp(1.0, bits);
  std::vector<uint32_t> codes(dim);
  values->resize(segments * dim);
  for (int s = 0; s < segments; ++s) {
    const double* in = coded.data() + s * (1 + dim);
    if (!std::isfinite(in[0]) || in[0] < 0.0) return false;
    for (Eigen::Index k = 0; k < dim; ++k) {
      const double c = in[1 + k];
      if (!(c >= 0.0 && c < levels && c == std::floor(c))) return false;
      codes[k] = static_cast<uint32_t>(c);
    }
    DecodeSegment(quantizer, in[0], codes.data(), dim, values->data() + s * dim);
  }
  return true;
}

QuantizedGossip::QuantizedGossip(const NodeSetup& setup, Eigen::Index dim, int segments,
                                 const GossipQuantParams& params)
    : setup_(setup),
      dim_(dim),
      segments_(segments),
      differential_(params.quantizer == "differential"),
      quantizer_(params.bits) {
  if (params.quantizer != "differential" && params.quantizer != "naive") {
    FailParam("gossip-quantizer", params.quantizer, "must be 'differential' or 'naive'");
  }
  // The public copies start at zero on every node, as the neighbours' copies of them do.
  self_copy_ = Vec::Zero(dim * segments);
  copies_.assign(setup.neighbors.size(), Vec::Zero(dim * segments));
  message_ = Vec::Zero(dim * segments);
  coded_ = Vec::Zero((1 + dim) * segments);
}

void QuantizedGossip::Encode(const Vec& z) {
  if (z.size() != dim_ * segments_) throw std::logic_error("QuantizedGossip: wrong payload size");
  for (int s = 0; s < segments_; ++s) {
    if (differential_) {
      diff_ = z.segment(s * dim_, dim_) - self_copy_.segment(s * dim_, dim_);
    } else {
      diff_ = z.segment(s * dim_, dim_);
    }
    // The range r = max_k |v_k| of the vector quantized (QuantizeWithOwnRange's).
    double range = 0.0;
    bool finite = true;
    for (Eigen::Index k = 0; k < dim_ && finite; ++k) {
      finite = std::isfinite(diff_[k]);
      range = finite ? std::max(range, std::abs(diff_[k])) : std::abs(diff_[k]);
    }
    double* coded = coded_.data() + s * (1 + dim_);
    coded[0] = range;
    if (!finite) {
      // Diverged: the values go on unchanged for the drivers' checks; never sent.
      message_.segment(s * dim_, dim_) = diff_;
      std::fill(coded + 1, coded + 1 + dim_, 0.0);
      continue;
    }
    if (range == 0.0) {
      codes_.assign(dim_, 0);
    } else {
      quantizer_.Encode(diff_, range, &codes_);
    }
    for (Eigen::Index k = 0; k < dim_; ++k) coded[1 + k] = codes_[k];
    DecodeSegment(quantizer_, range, codes_.data(), dim_, message_.data() + s * dim_);
  }
}

int64_t QuantizedGossip::MessageBits() const {
  return int64_t{segments_} * (int64_t{quantizer_.bits()} * dim_ + 64);
}

void QuantizedGossip::Receive(const std::vector<const Vec*>& inbox) {
  if (inbox.size() != copies_.size()) throw std::logic_error("QuantizedGossip: wrong inbox");
  staged_.resize(copies_.size());
  if (differential_) {
    staged_self_ = self_copy_ + message_;
    for (size_t k = 0; k < copies_.size(); ++k) staged_[k] = copies_[k] + *inbox[k];
  } else {
    staged_self_ = message_;
    for (size_t k = 0; k < copies_.size(); ++k) staged_[k] = *inbox[k];
  }
}

void QuantizedGossip::Mix(const Vec& z, int segment, Vec* out) const {
  std::vector<const Vec*> copies;
  copies.reserve(staged_.size());
  for (const Vec& v : staged_) copies.push_back(&v);
  MixSegment(setup_, staged_self_, copies, segment * dim_, dim_, out);
  // The self term W_ii zh_i is in the sum; adding z_i - zh_i leaves z_i + sum_j W_ij (zh_j - zh_i).
  *out += z.segment(segment * dim_, dim_) - staged_self_.segment(segment * dim_, dim_);
}

void QuantizedGossip::Commit() {
  self_copy_.swap(staged_self_);
  copies_.swap(staged_);
}

void QuantizedGossip::Save(AlgorithmState* state) const {
  state->vectors.push_back(coded_);
  state->vectors.push_back(self_copy_);
  state->vectors.insert(state->vectors.end(), copies_.begin(), copies_.end());
}

void QuantizedGossip::Load(const AlgorithmState& state, size_t first) {
  if (state.vectors.size() < first + StateVectors()) {
    throw std::invalid_argument("checkpoint: missing quantized-gossip copies");
  }
  for (size_t k = first + 1; k < first + StateVectors(); ++k) {
    if (state.vectors[k].size() != dim_ * segments_) {
      throw std::invalid_argument("checkpoint: wrong dimension");
    }
  }
  // The values of the message come from its codes by the function the neighbours use.
  Vec values;
  if (!DecodeCoded(state.vectors[first], dim_, segments_, quantizer_.bits(), &values)) {
    throw std::invalid_argument(
        "checkpoint: the quantized-gossip message is not this run's (dimension, bits or codes)");
  }
  coded_ = state.vectors[first];
  message_ = std::move(values);
  self_copy_ = state.vectors[first + 1];
  for (size_t k = 0; k < copies_.size(); ++k) copies_[k] = state.vectors[first + 2 + k];
}

}  // namespace starling::algorithms
