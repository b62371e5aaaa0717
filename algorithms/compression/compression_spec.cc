#include "algorithms/compression/compression_spec.h"

#include <cstdlib>

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

}  // namespace starling::algorithms
