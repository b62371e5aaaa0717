// The list of round-based methods. A new method defines `const RoundMethod& FooMethod()` in its
// own .cc file (round_method.h) and adds one X(Foo) line here; the order is --help's.
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
  X(LocalSgd)                     \
  X(MmPsgd)                       \
  X(SlowMoDpsgd)                  \
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
  return FindMethod(RoundMethods(), name);
}

std::vector<const ParamSet*> RoundParamSets() { return ParamSetsOf(RoundMethods()); }

}  // namespace starling::algorithms
