// vqSGD's cross-polytope vector quantizer (Gandikota et al., arXiv:1911.07971; the form as
// recalled, not checked against the paper's text). For g != 0 and v = g / ||g||_2 the 2d points
// are +-sqrt(d) e_k with probabilities
//   p(+k) = max(v_k, 0)/sqrt(d) + r/(2d),   p(-k) = max(-v_k, 0)/sqrt(d) + r/(2d),
//   r = 1 - ||v||_1/sqrt(d)  (>= 0 since ||v||_1 <= sqrt(d) ||v||_2),
// which sum to 1. One sample decodes to ||g|| sqrt(d) (+-e_k); S independent samples are averaged.
// Derived (docs/explanations/algorithms/swarmsgd.md): E[point] = sum_k sqrt(d) e_k (p(+k) - p(-k))
// = v (the r terms cancel), so E Q(g) = g; every decoded sample has norm sqrt(d) ||g||, so ||Q(g)||
// <= sqrt(d) ||g|| and E||Q(g) - g||^2 = (d - 1) ||g||^2 / S. On the wire: the norm as a float64
// and S codes of 1 + ceil(log2 d) bits (code = 2k + sign, sign 1 = negative), packed least
// significant bit first.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/types.h"

namespace starling::algorithms {

struct CrossPolytopeMessage {
  double norm = 0.0;            // ||g||_2
  std::vector<uint32_t> codes;  // one per sample: 2k for +sqrt(d) e_k, 2k + 1 for -sqrt(d) e_k
};

class CrossPolytopeQuantizer {
 public:
  // The 2d sampling probabilities of g (index 2k: +e_k, 2k + 1: -e_k). For g = 0 (or a g
  // whose norm is not finite) every point gets 1/(2d): the decoded vector is 0 anyway.
  static void Probabilities(const Vec& g, std::vector<double>* p);
  // S >= 1 independent samples of g, drawn with `rng` (raw 53-bit uniforms: every build draws
  // the same points from the same seed).
  static CrossPolytopeMessage Encode(const Vec& g, int samples, std::mt19937_64* rng);
  // Q(g) = norm sqrt(d) / S * sum of the samples' signed unit vectors. False (and *out
  // untouched) unless the message is valid for dimension d: norm finite and >= 0, every code
  // < 2d, at least one code.
  static bool Decode(const CrossPolytopeMessage& m, Eigen::Index d, Vec* out);
  // Decode, then *out /= divisor: the scaled Q'(g) = Q(g) / (1 + omega) of CHOCO-SGD and
  // SwarmSGD's public copies. Sender and receiver both compute it with this function from the
  // same message, so they hold the same vector bit for bit.
  static bool DecodeScaled(const CrossPolytopeMessage& m, Eigen::Index d, double divisor,
                           Vec* out);
  // 1 + omega = 1 + (d - 1)/S, the divisor that makes Q' contract: E||Q'(x) - x||^2 =
  // omega/(1 + omega) ||x||^2, i.e. delta = S/(d - 1 + S).
  static double ContractionDivisor(Eigen::Index d, int samples);

  // Bits of one code: 1 sign bit + ceil(log2 d) index bits (d >= 1).
  static int CodeBits(Eigen::Index d);
  // Bits of one message on the wire: 64 (the norm) + S * CodeBits(d).
  static int64_t MessageBits(Eigen::Index d, int samples);
  // The wire form: 8 bytes of the norm (little-endian IEEE double), then the codes packed in
  // ceil(S * CodeBits(d) / 8) bytes, unused high bits 0.
  static void Pack(const CrossPolytopeMessage& m, Eigen::Index d, std::string* out);
  // The inverse for bytes from the network: false unless the size is exactly that of S codes,
  // the unused bits are 0, every code < 2d and the norm is finite and >= 0.
  static bool Unpack(std::string_view bytes, Eigen::Index d, int samples, CrossPolytopeMessage* m);
  // The codes alone (what a kCrossPolytope wire payload carries, its norm travelling in the
  // payload's scale field): ceil(S * CodeBits(d) / 8) bytes, appended to *out after clearing it.
  static void PackCodes(const std::vector<uint32_t>& codes, Eigen::Index d, std::string* out);
  // The inverse for bytes from the network: false unless the size is that of `samples` codes,
  // the unused bits are 0 and every code < 2d (d in [1, 2^30], samples >= 1).
  static bool UnpackCodes(std::string_view bytes, Eigen::Index d, int samples,
                          std::vector<uint32_t>* codes);
};

}  // namespace starling::algorithms
