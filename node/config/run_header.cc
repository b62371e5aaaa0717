#include "node/config/run_header.h"

#include <cstdio>

#include "node/config/run_id.h"

namespace starling::node {

std::vector<std::pair<std::string, std::string>> RunHeaderFields(const RunConfig& config,
                                                                 const RunSetup& setup) {
  char id[24];
  std::snprintf(id, sizeof id, "0x%016llx",
                static_cast<unsigned long long>(RunIdFor(config, setup)));
  return {{"run_id", id}, {"labels", setup.labels.Describe()}, {"scale", setup.scaling.Describe()}};
}

}  // namespace starling::node
