// The list of pairwise methods. A new method defines `const PairwiseMethod& FooMethod()` in its
// own .cc file (pairwise_method.h) and adds one X(Foo) line here; the order is --help's.
#include "algorithms/pairwise/pairwise_method.h"

#define STARLING_PAIRWISE_METHODS(X) \
  X(SwarmSgd)                        \
  X(SlowMoSwarmSgd)                  \
  X(Acid)                            \
  X(AsyncAdmm)                       \
  X(AsySonata)                       \
  X(Dadao)                           \
  X(Adfs)                            \
  X(PairwiseDiffusion)

namespace starling::algorithms {

#define STARLING_DECLARE_METHOD(M) const PairwiseMethod& M##Method();
STARLING_PAIRWISE_METHODS(STARLING_DECLARE_METHOD)
#undef STARLING_DECLARE_METHOD

const std::vector<const PairwiseMethod*>& PairwiseMethods() {
#define STARLING_LIST_METHOD(M) &M##Method(),
  static const auto* const methods =
      new std::vector<const PairwiseMethod*>{STARLING_PAIRWISE_METHODS(STARLING_LIST_METHOD)};
#undef STARLING_LIST_METHOD
  return *methods;
}

const PairwiseMethod* FindPairwiseMethod(const std::string& name) {
  return FindMethod(PairwiseMethods(), name);
}

std::vector<const ParamSet*> PairwiseParamSets() { return ParamSetsOf(PairwiseMethods()); }

}  // namespace starling::algorithms
