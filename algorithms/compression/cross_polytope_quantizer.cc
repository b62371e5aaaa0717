#include "algorithms/compression/cross_polytope_quantizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "algorithms/compression/bit_packing.h"

namespace starling::algorithms {

void CrossPolytopeQuantizer::Probabilities(const Vec& g, std::vector<double>* p) {
  const Eigen::Index d = g.size();
  p->assign(2 * d, 1.0 / (2.0 * d));
  const double norm = g.norm();
  if (!(norm > 0) || !std::isfinite(norm)) return;
  const double root = std::sqrt(static_cast<double>(d));
  double l1 = 0;
  for (Eigen::Index k = 0; k < d; ++k) l1 += std::abs(g[k] / norm);
  // Rounding can push ||v||_1 a hair above sqrt(d) (v = +-e_k/sqrt(d) patterns): clamp at 0.
  const double spread = std::max(0.0, 1.0 - l1 / root) / (2.0 * d);
  for (Eigen::Index k = 0; k < d; ++k) {
    const double v = g[k] / norm;
    (*p)[2 * k] = std::max(v, 0.0) / root + spread;
    (*p)[2 * k + 1] = std::max(-v, 0.0) / root + spread;
  }
}

CrossPolytopeMessage CrossPolytopeQuantizer::Encode(const Vec& g, int samples,
                                                    std::mt19937_64* rng) {
  std::vector<double> p;
  Probabilities(g, &p);
  // Inverse CDF; the last point takes whatever rounding leaves above the final partial sum.
  std::partial_sum(p.begin(), p.end(), p.begin());
  CrossPolytopeMessage m;
  const double norm = g.norm();
  m.norm = std::isfinite(norm) ? norm : 0.0;
  m.codes.resize(std::max(samples, 0));
  for (uint32_t& code : m.codes) {
    const double u = static_cast<double>((*rng)() >> 11) * 0x1.0p-53 * p.back();
    const auto it = std::upper_bound(p.begin(), p.end() - 1, u);
    code = static_cast<uint32_t>(it - p.begin());
  }
  return m;
}

bool CrossPolytopeQuantizer::Decode(const CrossPolytopeMessage& m, Eigen::Index d, Vec* out) {
  if (d < 1 || m.codes.empty() || !std::isfinite(m.norm) || m.norm < 0) return false;
  for (uint32_t code : m.codes) {
    if (code >= 2 * static_cast<uint64_t>(d)) return false;
  }
  const double step = m.norm * std::sqrt(static_cast<double>(d)) / m.codes.size();
  *out = Vec::Zero(d);
  for (uint32_t code : m.codes) (*out)[code / 2] += (code % 2 == 0) ? step : -step;
  return true;
}

bool CrossPolytopeQuantizer::DecodeScaled(const CrossPolytopeMessage& m, Eigen::Index d,
                                          double divisor, Vec* out) {
  if (!Decode(m, d, out)) return false;
  *out /= divisor;
  return true;
}

double CrossPolytopeQuantizer::ContractionDivisor(Eigen::Index d, int samples) {
  return 1.0 + static_cast<double>(d - 1) / samples;
}

int CrossPolytopeQuantizer::CodeBits(Eigen::Index d) {
  int index_bits = 0;
  while ((Eigen::Index{1} << index_bits) < d) ++index_bits;
  return 1 + index_bits;
}

int64_t CrossPolytopeQuantizer::MessageBits(Eigen::Index d, int samples) {
  return 64 + int64_t{samples} * CodeBits(d);
}

void CrossPolytopeQuantizer::Pack(const CrossPolytopeMessage& m, Eigen::Index d, std::string* out) {
  uint64_t raw;
  std::memcpy(&raw, &m.norm, 8);
  out->assign(8, '\0');
  for (int b = 0; b < 8; ++b) (*out)[b] = static_cast<char>((raw >> (8 * b)) & 0xff);
  AppendPackedBits(m.codes, CodeBits(d), out);
}

bool CrossPolytopeQuantizer::Unpack(std::string_view bytes, Eigen::Index d, int samples,
                                    CrossPolytopeMessage* m) {
  if (bytes.size() < 8) return false;
  uint64_t raw = 0;
  for (int b = 0; b < 8; ++b) raw |= uint64_t{static_cast<uint8_t>(bytes[b])} << (8 * b);
  CrossPolytopeMessage read;
  std::memcpy(&read.norm, &raw, 8);
  if (!std::isfinite(read.norm) || read.norm < 0) return false;
  if (!UnpackCodes(bytes.substr(8), d, samples, &read.codes)) return false;
  *m = std::move(read);
  return true;
}

void CrossPolytopeQuantizer::PackCodes(const std::vector<uint32_t>& codes, Eigen::Index d,
                                       std::string* out) {
  out->clear();
  AppendPackedBits(codes, CodeBits(d), out);
}

bool CrossPolytopeQuantizer::UnpackCodes(std::string_view bytes, Eigen::Index d, int samples,
                                         std::vector<uint32_t>* codes) {
  if (d < 1 || d > (Eigen::Index{1} << 30) || samples < 1) return false;
  std::vector<uint32_t> read;
  if (!UnpackBits(bytes, static_cast<size_t>(samples), CodeBits(d), &read)) return false;
  for (uint32_t code : read) {
    if (code >= 2 * static_cast<uint64_t>(d)) return false;
  }
  *codes = std::move(read);
  return true;
}

}  // namespace starling::algorithms
