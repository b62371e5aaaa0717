#include "algorithms/pairwise/pairwise_algorithm.h"

#include <stdexcept>

#include "algorithms/compression/compression_spec.h"
#include "algorithms/pairwise/pairwise_method.h"
#include "algorithms/pairwise/sparse_swarm_sgd.h"

namespace starling::algorithms {

const char* PairwiseAlgorithmNames() {
  static const std::string* const names = new std::string(NamesOf(PairwiseMethods()));
  return names->c_str();
}

bool IsPairwiseAlgorithm(const std::string& name) { return FindPairwiseMethod(name) != nullptr; }

double ResolvePairwiseStep(const PairwiseOptions& options) {
  if (options.step > 0) return options.step;
  if (!(options.smoothness > 0)) {
    throw std::invalid_argument("--step: no step given and no smoothness bound to derive one");
  }
  return 0.5 / options.smoothness;
}

LatticeQuantizer ParseLatticeSpec(const std::string& spec) {
  const std::string prefix = "lattice:";
  auto bad = [&]() {
    return std::invalid_argument("--compression '" + spec +
                                 "': expected none, lattice:BITS[:SCALE] (e.g. lattice:8:1e-4) "
                                 "or topk:K[:GAMMA]");
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

void CheckCompressionSpec(const std::string& spec) {
  if (spec == "none") return;
  if (IsTopKSpec(spec)) {
    ParseTopKSpec(spec);
  } else {
    ParseLatticeSpec(spec);
  }
}

std::unique_ptr<PairwiseAlgorithm> MakePairwiseAlgorithm(const PairwiseOptions& options,
                                                         const NodeSetup& setup) {
  if (setup.problem == nullptr) throw std::invalid_argument("node setup without a problem");
  if (options.batch_size < 1) throw std::invalid_argument("--batch must be >= 1 for swarmsgd");
  if (options.local_steps < 1) throw std::invalid_argument("--local-steps must be >= 1");
  const PairwiseMethod* method = FindPairwiseMethod(options.algorithm);
  if (method == nullptr) {
    throw std::invalid_argument("--algorithm '" + options.algorithm + "': unknown (one of " +
                                PairwiseAlgorithmNames() + ")");
  }
  return method->make(options, setup);
}

}  // namespace starling::algorithms
