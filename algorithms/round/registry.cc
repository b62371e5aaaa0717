// The list of round-based methods. A new method defines `const RoundMethod& FooMethod()` in its
// own .cc file (round_method.h) and adds one X(Foo) line here; the order is --help's.
#include <algorithm>

#include "algorithms/round/round_method.h"

#define STARLING_ROUND_METHODS(X) \
  X(Dgd)                          \
  X(Dpsgd)                        \
  X(GradientTracking)             \
  X(Extra)                        \
  X(Optra)                        \
  X(ApmC)                         \
  X(NetworkDane)                  \
  X(NetworkSvrg)                  \
  X(NetworkSarah)                 \
  X(ChocoSgd)                     \
  X(Diffusion)

namespace starling::algorithms {

#define STARLING_DECLARE_METHOD(M) const RoundMethod& M##Method();
STARLING_ROUND_METHODS(STARLING_DECLARE_METHOD)
#undef STARLING_DECLARE_METHOD

const std::vector<const RoundMethod*>& RoundMethods() {
#define STARLING_LIST_METHOD(M) &M##Method(),
  static const auto* const methods =
      new std::vector<const RoundMethod*>{STARLING_ROUND_METHODS(STARLING_LIST_METHOD)};
#undef STARLING_LIST_METHOD
  return *methods;
}

const RoundMethod* FindRoundMethod(const std::string& name) {
  for (const RoundMethod* m : RoundMethods()) {
    if (name == m->name) return m;
  }
  return nullptr;
}

std::vector<const ParamSet*> RoundParamSets() {
  std::vector<const ParamSet*> sets;
  for (const RoundMethod* m : RoundMethods()) {
    if (m->params != nullptr && std::find(sets.begin(), sets.end(), m->params) == sets.end()) {
      sets.push_back(m->params);
    }
  }
  return sets;
}

}  // namespace starling::algorithms
