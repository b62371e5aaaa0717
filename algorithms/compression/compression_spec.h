// --compression specs: "none", "lattice:BITS[:SCALE]" (LatticeQuantizer), "topk:K[:GAMMA]"
// (SparseSwarmSgd's top-k with error feedback), "vq:S[:GAMMA]" (VqSwarmSgd: vqSGD's
// cross-polytope quantizer with S samples, error feedback through the same public copies), "f32"
// (plain SwarmSGD whose exchanged models are rounded to binary32: float32_rounding.h). Every spec
// but "none" and "f32" has the shape PREFIX INTEGER [":" NUMBER]; each compressor checks its own
// ranges.
#pragma once

#include <optional>
#include <string>

#include "algorithms/compression/lattice_quantizer.h"

namespace starling::algorithms {

struct CompressionSpecFields {
  long integer = 0;
  std::optional<double> number;  // absent when the spec has no ":NUMBER" part
};

// The fields of `spec` if it is `prefix` (e.g. "lattice:") followed by a whole number and
// optionally ":" and a number, with nothing after; nullopt otherwise. Never throws.
std::optional<CompressionSpecFields> ParseCompressionSpec(const std::string& spec,
                                                          const std::string& prefix);

// The quantizer of a "lattice:BITS[:SCALE]" --compression spec; std::invalid_argument otherwise.
LatticeQuantizer ParseLatticeSpec(const std::string& spec);
// True for a "topk:..." spec (parsed by ParseTopKSpec below).
bool IsTopKSpec(const std::string& spec);
// True for "f32" (plain SwarmSGD, exchanges sent as float32).
bool IsFloat32Spec(const std::string& spec);
// Throws std::invalid_argument naming --compression unless `spec` is none, f32, lattice, topk or
// vq.
void CheckCompressionSpec(const std::string& spec);

// "topk:K[:GAMMA]": K entries per message (>= 1), consensus step GAMMA in (0, 1]; without GAMMA
// (gamma = 0 here) the algorithm uses min(1/2, K/d).
struct TopKSpec {
  int k = 0;
  double gamma = 0.0;
};
// Throws std::invalid_argument naming --compression on a malformed spec.
TopKSpec ParseTopKSpec(const std::string& spec);

// "vq:S[:GAMMA]": S cross-polytope samples per message (>= 1), consensus step GAMMA in (0, 1];
// without GAMMA (gamma = 0 here) the algorithm uses min(1/2, S/(d - 1 + S)/2).
struct VqSpec {
  int samples = 0;
  double gamma = 0.0;
};
bool IsVqSpec(const std::string& spec);
// Throws std::invalid_argument naming --compression on a malformed spec.
VqSpec ParseVqSpec(const std::string& spec);

}  // namespace starling::algorithms
