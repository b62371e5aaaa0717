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

namespace {

// The hash of the lattice integers, one multiply per integer: four lanes, each updated as
// lane = (lane ^ n_k) * P (odd P: a bijection of the lane for a fixed n_k, so integers that differ
// in any one coordinate always leave different lanes), then mixed into 32 bits. The lanes break
// the multiply's dependency chain; byte-wise FNV-1a (the earlier hash) took 68 us of a 98 us
// Encode at d = 7840 (bench/lattice_bench.cc). It detects a failed decoding, not an adversary
// (a faulty peer's reply is merged as a failure when its hash does not match, see
// QuantizedSwarmSgd).
class LatticeHasher {
 public:
  void Add(size_t k, int64_t v) {
    uint64_t& lane = lanes_[k & 3];
    lane = (lane ^ static_cast<uint64_t>(v)) * 0x100000001b3ULL;
  }
  uint32_t Finish() const {
    uint64_t h = 0;
    for (uint64_t lane : lanes_) h = Mix(h ^ Mix(lane));
    return static_cast<uint32_t>(h ^ (h >> 32));
  }

 private:
  // MurmurHash3's 64-bit finalizer (a bijection that spreads every bit over the word).
  static uint64_t Mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
  }
  uint64_t lanes_[4] = {0xcbf29ce484222325ULL, 0x84222325cbf29ce4ULL, 0x9e3779b97f4a7c15ULL,
                        0xbf58476d1ce4e5b9ULL};
};

}  // namespace

uint32_t LatticeQuantizer::Hash(const std::vector<int64_t>& n) {
  LatticeHasher hasher;
  for (size_t k = 0; k < n.size(); ++k) hasher.Add(k, n[k]);
  return hasher.Finish();
}

uint32_t LatticeQuantizer::Encode(const Vec& x, const Vec& dither, std::vector<int64_t>* n,
                                  std::vector<uint32_t>* codes, Vec* point) const {
  const Eigen::Index d = x.size();
  n->resize(d);
  codes->resize(d);
  point->resize(d);
  // v mod q for q = 2^bits, negative v included (two's complement).
  const uint64_t mask = static_cast<uint64_t>(modulus_) - 1;
  LatticeHasher hasher;
  for (Eigen::Index k = 0; k < d; ++k) {
    const int64_t v = static_cast<int64_t>(std::llround(x[k] / scale_ + dither[k]));
    (*n)[k] = v;
    hasher.Add(static_cast<size_t>(k), v);
    (*codes)[k] = static_cast<uint32_t>(static_cast<uint64_t>(v) & mask);
    (*point)[k] = scale_ * (static_cast<double>(v) - dither[k]);
  }
  return hasher.Finish();
}

uint32_t LatticeQuantizer::Decode(const std::vector<uint32_t>& codes, const Vec& reference,
                                  const Vec& dither, Vec* point) const {
  const Eigen::Index d = reference.size();
  point->resize(d);
  const double q = static_cast<double>(modulus_);
  const double inverse_q = 1.0 / q;  // exact: q is a power of two
  LatticeHasher hasher;
  for (Eigen::Index k = 0; k < d; ++k) {
    const double c = codes[k];
    const double b = reference[k] / scale_ + dither[k];
    const int64_t v = static_cast<int64_t>(c + q * std::round((b - c) * inverse_q));
    hasher.Add(static_cast<size_t>(k), v);
    (*point)[k] = scale_ * (static_cast<double>(v) - dither[k]);
  }
  return hasher.Finish();
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
