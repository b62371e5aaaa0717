#include "algorithms/compression/lattice_quantizer.h"

#include <cmath>
#include <random>
#include <stdexcept>

#include "algorithms/compression/bit_packing.h"

namespace starling::algorithms {

LatticeQuantizer::LatticeQuantizer(int bits, double scale)
    : bits_(bits), scale_(scale), modulus_(int64_t{1} << (bits > 0 && bits <= 16 ? bits : 1)) {
  if (bits < 1 || bits > 16) {
    throw std::invalid_argument("lattice: bits must be in [1, 16], got " + std::to_string(bits));
  }
  if (!(scale > 0) || !std::isfinite(scale)) {
    throw std::invalid_argument("lattice: the scale must be a positive number");
  }
}

void LatticeQuantizer::Dither(uint64_t seed, Eigen::Index dim, Vec* u) {
  // Raw generator output, so that every build draws the same dither.
  std::mt19937_64 rng(seed);
  u->resize(dim);
  for (Eigen::Index k = 0; k < dim; ++k) {
    (*u)[k] = static_cast<double>(rng() >> 11) * 0x1.0p-53 - 0.5;
  }
}

uint32_t LatticeQuantizer::Hash(const std::vector<int64_t>& n) {
  uint32_t h = 2166136261u;  // FNV-1a over the little-endian bytes of each integer
  for (int64_t v : n) {
    uint64_t bits = static_cast<uint64_t>(v);
    for (int b = 0; b < 8; ++b) {
      h ^= static_cast<uint32_t>(bits & 0xff);
      h *= 16777619u;
      bits >>= 8;
    }
  }
  return h;
}

uint32_t LatticeQuantizer::Encode(const Vec& x, const Vec& dither, std::vector<int64_t>* n,
                                  std::vector<uint32_t>* codes, Vec* point) const {
  const Eigen::Index d = x.size();
  n->resize(d);
  codes->resize(d);
  point->resize(d);
  for (Eigen::Index k = 0; k < d; ++k) {
    const int64_t v = static_cast<int64_t>(std::llround(x[k] / scale_ + dither[k]));
    (*n)[k] = v;
    (*codes)[k] = static_cast<uint32_t>(((v % modulus_) + modulus_) % modulus_);
    (*point)[k] = scale_ * (static_cast<double>(v) - dither[k]);
  }
  return Hash(*n);
}

uint32_t LatticeQuantizer::Decode(const std::vector<uint32_t>& codes, const Vec& reference,
                                  const Vec& dither, Vec* point) const {
  const Eigen::Index d = reference.size();
  std::vector<int64_t> n(d);
  point->resize(d);
  const double q = static_cast<double>(modulus_);
  for (Eigen::Index k = 0; k < d; ++k) {
    const double c = codes[k];
    const double b = reference[k] / scale_ + dither[k];
    const int64_t v = static_cast<int64_t>(c + q * std::round((b - c) / q));
    n[k] = v;
    (*point)[k] = scale_ * (static_cast<double>(v) - dither[k]);
  }
  return Hash(n);
}

void LatticeQuantizer::PackCodes(const std::vector<uint32_t>& codes, int bits, std::string* out) {
  out->clear();
  AppendPackedBits(codes, bits, out);
}

bool LatticeQuantizer::UnpackCodes(std::string_view bytes, size_t dim, int bits,
                                   std::vector<uint32_t>* codes) {
  return bits >= 1 && bits <= 16 && UnpackBits(bytes, dim, bits, codes);
}

}  // namespace starling::algorithms
