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

std::vector<std::string> IgnoredMethodParams(const std::string& algorithm,
                                             const algorithms::ParamValues& values) {
  std::vector<std::string> warnings;
  if (algorithms::FindRoundMethod(algorithm) == nullptr &&
      algorithms::FindPairwiseMethod(algorithm) == nullptr) {
    return warnings;
  }
  const algorithms::ParamSet* chosen = MethodParamsOf(algorithm);
  for (const algorithms::ParamSet* set : MethodParamSets()) {
    if (set == chosen) continue;
    for (const algorithms::ParamDecl& decl : set->decls()) {
      if (values.Find(decl.name) == nullptr) continue;
      const algorithms::ParamValue value = algorithms::ParamSet::TypedValueOf(decl, values);
      const algorithms::ParamValue fallback =
          algorithms::ParamSet::TypedValueOf(decl, algorithms::ParamValues());
      if (algorithms::CanonicalText(value) == algorithms::CanonicalText(fallback)) continue;
      warnings.push_back("--" + decl.name + " " + algorithms::DisplayText(value) +
                         ": not read by --algorithm " + algorithm + " (a parameter of " +
                         set->title() + "); ignored");
    }
  }
  return warnings;
}

}  // namespace starling::node
