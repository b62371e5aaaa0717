#include "node/config/method_params.h"

#include "algorithms/pairwise/pairwise_method.h"
#include "algorithms/round/round_method.h"

namespace starling::node {

std::vector<const algorithms::ParamSet*> MethodParamSets() {
  std::vector<const algorithms::ParamSet*> sets = algorithms::RoundParamSets();
  for (const algorithms::ParamSet* set : algorithms::PairwiseParamSets()) sets.push_back(set);
  return sets;
}

// SwarmSGD declares no parameters of its own: --compression stays a run option, which the
// exchange wire reads as its mode too.
const algorithms::ParamSet* MethodParamsOf(const std::string& algorithm) {
  if (const algorithms::RoundMethod* method = algorithms::FindRoundMethod(algorithm)) {
    return method->params;
  }
  if (const algorithms::PairwiseMethod* method = algorithms::FindPairwiseMethod(algorithm)) {
    return method->params;
  }
  return nullptr;
}

bool MethodNeedsData(const std::string& algorithm) {
  if (const algorithms::RoundMethod* method = algorithms::FindRoundMethod(algorithm)) {
    return method->needs_problem;
  }
  if (const algorithms::PairwiseMethod* method = algorithms::FindPairwiseMethod(algorithm)) {
    return method->needs_problem;
  }
  return true;
}

}  // namespace starling::node
