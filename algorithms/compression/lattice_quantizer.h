// The cubic-lattice quantizer with a reference point (SwarmSGD's lattice:BITS compression,
// docs/explanations/algorithms/swarmsgd.md), dithered:
//   n_k    = round(x_k / s + u_k)          (u_k ~ U(-1/2, 1/2) from a shared seed)
//   Q(x)_k = s (n_k - u_k)                 (subtractive dither: unbiased, |Q(x) - x| <= s/2)
//   code_k = n_k mod q                     (log2 q bits on the wire)
// A receiver holding a reference b recovers n_k = c + q round((b_k/s + u_k - c)/q), which is
// exact iff |n_k - (b_k/s + u_k)| < q/2 in every coordinate, i.e. roughly |Q(x) - b| < q s/2.
// A 32-bit hash of the integers n lets the receiver detect a failed decoding.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/types.h"

namespace starling::algorithms {

class LatticeQuantizer {
 public:
  // `bits` in [1, 16] (q = 2^bits), `scale` s > 0. Throws std::invalid_argument otherwise.
  LatticeQuantizer(int bits, double scale);

  int bits() const { return bits_; }
  double scale() const { return scale_; }
  int64_t modulus() const { return modulus_; }

  // The dither for `dim` coordinates from `seed` (the same on both sides).
  static void Dither(uint64_t seed, Eigen::Index dim, Vec* u);
  // Lattice integers n and codes n mod q of x; *point = Q(x). Returns hash(n).
  uint32_t Encode(const Vec& x, const Vec& dither, std::vector<int64_t>* n,
                  std::vector<uint32_t>* codes, Vec* point) const;
  // Recovers n from codes with the reference b and returns Q = s (n - u) in *point; returns
  // hash(n), which equals the sender's hash when the decoding was exact.
  uint32_t Decode(const std::vector<uint32_t>& codes, const Vec& reference, const Vec& dither,
                  Vec* point) const;
  static uint32_t Hash(const std::vector<int64_t>& n);

  // The packed form of codes (each < 2^bits) that travels on the wire: code k occupies bits
  // [k*bits, (k+1)*bits) of the byte string, least significant bit first, in ceil(d*bits/8)
  // bytes whose unused high bits are 0. Replaces *out's contents, keeping its capacity.
  static void PackCodes(const std::vector<uint32_t>& codes, int bits, std::string* out);
  // The inverse, for bytes from the network: false unless bytes.size() == ceil(dim*bits/8) and
  // the unused bits are 0. Every code read is < 2^bits by construction.
  static bool UnpackCodes(std::string_view bytes, size_t dim, int bits,
                          std::vector<uint32_t>* codes);

 private:
  int bits_;
  double scale_;
  int64_t modulus_;
};

}  // namespace starling::algorithms
