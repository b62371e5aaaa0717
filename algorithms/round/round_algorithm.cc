#include "algorithms/round/round_algorithm.h"

#include <stdexcept>

#include "algorithms/round/round_method.h"

namespace starling::algorithms {
namespace {

const RoundMethod& MethodOrThrow(const std::string& name) {
  const RoundMethod* method = FindRoundMethod(name);
  if (method == nullptr) {
    throw std::invalid_argument("--algorithm '" + name + "': unknown (one of " +
                                RoundAlgorithmNames() + ")");
  }
  return *method;
}

}  // namespace

std::string StepKey::ToString() const {
  return "(" + std::to_string(iteration) + "," + std::to_string(phase) + "," +
         std::to_string(subround) + ")";
}

const char* RoundAlgorithmNames() {
  static const std::string* const names = new std::string(NamesOf(RoundMethods()));
  return names->c_str();
}

bool IsRoundAlgorithm(const std::string& name) { return FindRoundMethod(name) != nullptr; }

bool NeedsSmoothness(const std::string& name) {
  const RoundMethod* method = FindRoundMethod(name);
  return method != nullptr && method->needs_smoothness;
}

double ResolveStep(const RoundOptions& options) {
  const double factor = MethodOrThrow(options.algorithm).default_step_factor;
  if (!(factor > 0)) {
    throw std::invalid_argument("--algorithm " + options.algorithm + ": takes no --step");
  }
  if (options.step > 0) return options.step;
  if (!(options.smoothness > 0)) {
    throw std::invalid_argument("--step: no step given and no smoothness bound to derive one");
  }
  return factor / options.smoothness;
}

std::vector<std::string> RoundWarnings(const RoundOptions& options) {
  const RoundMethod* method = FindRoundMethod(options.algorithm);
  if (method == nullptr || method->warnings == nullptr) return {};
  return method->warnings(options);
}

std::unique_ptr<RoundAlgorithm> MakeRoundAlgorithm(const RoundOptions& options,
                                                   const NodeSetup& setup) {
  const RoundMethod& method = MethodOrThrow(options.algorithm);
  if (!method.takes_step_schedule && !options.step_schedule.constant()) {
    throw std::invalid_argument("--step-schedule " + options.step_schedule.Canonical() +
                                ": --algorithm " + options.algorithm +
                                " takes a constant step only");
  }
  if (method.needs_problem) {
    if (setup.problem == nullptr) throw std::invalid_argument("node setup without a problem");
    if (setup.x0.size() != setup.problem->dim()) {
      throw std::invalid_argument("starting point has dimension " +
                                  std::to_string(setup.x0.size()) + " but the problem has " +
                                  std::to_string(setup.problem->dim()));
    }
    if (options.batch_size < 0) throw std::invalid_argument("--batch must be >= 0");
  }
  return method.make(options, setup);
}

}  // namespace starling::algorithms
