#include "algorithms/compression/compression_spec.h"

#include <cstdlib>
#include <stdexcept>

namespace starling::algorithms {

std::optional<CompressionSpecFields> ParseCompressionSpec(const std::string& spec,
                                                          const std::string& prefix) {
  if (spec.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  const std::string rest = spec.substr(prefix.size());
  char* end = nullptr;
  CompressionSpecFields fields;
  fields.integer = std::strtol(rest.c_str(), &end, 10);
  if (end == rest.c_str() || (*end != '\0' && *end != ':')) return std::nullopt;
  if (*end == ':') {
    const char* number = end + 1;
    fields.number = std::strtod(number, &end);
    if (end == number || *end != '\0') return std::nullopt;
  }
  return fields;
}

LatticeQuantizer ParseLatticeSpec(const std::string& spec) {
  const std::string prefix = "lattice:";
  auto bad = [&]() {
    return std::invalid_argument("--compression '" + spec +
                                 "': expected none, f32, lattice:BITS[:SCALE] (e.g. "
                                 "lattice:8:1e-4), topk:K[:GAMMA] or vq:S[:GAMMA]");
  };
  const auto fields = ParseCompressionSpec(spec, prefix);
  if (!fields) throw bad();
  const long bits = fields->integer;
  const double scale = fields->number.value_or(1e-4);
  // One bit leaves no margin for the exactness check (q/2 - 1 = 0): every exchange would fall back.
  if (bits < 2 || bits > 16 || !(scale > 0)) throw bad();
  return LatticeQuantizer(static_cast<int>(bits), scale);
}

bool IsTopKSpec(const std::string& spec) { return spec.compare(0, 5, "topk:") == 0; }

bool IsFloat32Spec(const std::string& spec) { return spec == "f32"; }

void CheckCompressionSpec(const std::string& spec) {
  if (spec == "none" || IsFloat32Spec(spec)) return;
  if (IsTopKSpec(spec)) {
    ParseTopKSpec(spec);
  } else if (IsVqSpec(spec)) {
    ParseVqSpec(spec);
  } else {
    ParseLatticeSpec(spec);
  }
}

TopKSpec ParseTopKSpec(const std::string& spec) {
  const std::string prefix = "topk:";
  auto bad = [&]() {
    return std::invalid_argument("--compression '" + spec +
                                 "': expected topk:K[:GAMMA] with K >= 1 and GAMMA in (0, 1], "
                                 "e.g. topk:50:0.5");
  };
  const auto fields = ParseCompressionSpec(spec, prefix);
  if (!fields) throw bad();
  const long k = fields->integer;
  TopKSpec out;
  if (fields->number) {
    out.gamma = *fields->number;
    if (!(out.gamma > 0) || out.gamma > 1) throw bad();
  }
  if (k < 1 || k > (1L << 30)) throw bad();
  out.k = static_cast<int>(k);
  return out;
}

bool IsVqSpec(const std::string& spec) { return spec.compare(0, 3, "vq:") == 0; }

VqSpec ParseVqSpec(const std::string& spec) {
  auto bad = [&]() {
    return std::invalid_argument("--compression '" + spec +
                                 "': expected vq:S[:GAMMA] with S in [1, 2^24] and GAMMA in "
                                 "(0, 1], e.g. vq:64");
  };
  const auto fields = ParseCompressionSpec(spec, "vq:");
  if (!fields) throw bad();
  VqSpec out;
  if (fields->number) {
    out.gamma = *fields->number;
    if (!(out.gamma > 0) || out.gamma > 1) throw bad();
  }
  if (fields->integer < 1 || fields->integer > (1L << 24)) throw bad();
  out.samples = static_cast<int>(fields->integer);
  return out;
}

}  // namespace starling::algorithms
