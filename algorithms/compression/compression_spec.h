// The shape every --compression spec but "none" has: PREFIX INTEGER [":" NUMBER]
// (lattice:BITS[:SCALE], topk:K[:GAMMA]). Each compressor checks its own ranges.
#pragma once

#include <optional>
#include <string>

namespace starling::algorithms {

struct CompressionSpecFields {
  long integer = 0;
  std::optional<double> number;  // absent when the spec has no ":NUMBER" part
};

// The fields of `spec` if it is `prefix` (e.g. "lattice:") followed by a whole number and
// optionally ":" and a number, with nothing after; nullopt otherwise. Never throws.
std::optional<CompressionSpecFields> ParseCompressionSpec(const std::string& spec,
                                                          const std::string& prefix);

}  // namespace starling::algorithms
