#include "node/config/method_params.h"

#include "algorithms/round/round_method.h"

namespace starling::node {

// Pairwise methods declare no parameters of their own yet (--compression is a run option that the
// exchange wire reads too); theirs would join here.
std::vector<const algorithms::ParamSet*> MethodParamSets() { return algorithms::RoundParamSets(); }

const algorithms::ParamSet* MethodParamsOf(const std::string& algorithm) {
  const algorithms::RoundMethod* method = algorithms::FindRoundMethod(algorithm);
  return method != nullptr ? method->params : nullptr;
}

}  // namespace starling::node
