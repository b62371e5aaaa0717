#include "algorithms/round/round_algorithm.h"

#include <stdexcept>

#include "algorithms/round/apm_c.h"
#include "algorithms/round/choco_sgd.h"
#include "algorithms/round/dgd.h"
#include "algorithms/round/diffusion.h"
#include "algorithms/round/extra.h"
#include "algorithms/round/gradient_tracking.h"
#include "algorithms/round/network_dane.h"
#include "algorithms/round/optra.h"

namespace starling::algorithms {
namespace {

// Default steps as multiples of 1/L, L = the network-wide smoothness bound. Chosen from the
// stability conditions of ALGORITHMS.md §6 (EXTRA: step < 2 lambda_min(W~)/L, and lambda_min(W~)
// >= 1/3 on the rings and sparse graphs used here) with margin, and checked on a9a.
double DefaultStepFactor(const std::string& name) {
  if (name == "dgd" || name == "dpsgd" || name == "choco-sgd") return 0.5;
  if (name == "gradient-tracking") return 0.5;
  if (name == "extra") return 0.5;
  // Network-SVRG/SARAH's inner step eta (the reference experiments' 0.1/L, ALGORITHMS.md §2.5).
  if (name == "network-svrg" || name == "network-sarah") return 0.1;
  // Network-DANE takes no step; APM-C's gradient step is 1/L by construction.
  if (name == "network-dane" || name == "apm-c") return 1.0;
  throw std::invalid_argument("--algorithm '" + name + "': not a round-based algorithm (one of " +
                              RoundAlgorithmNames() + ")");
}

}  // namespace

std::string StepKey::ToString() const {
  return "(" + std::to_string(iteration) + "," + std::to_string(phase) + "," +
         std::to_string(subround) + ")";
}

const char* RoundAlgorithmNames() {
  return "dgd, dpsgd, gradient-tracking, extra, optra, apm-c, network-dane, network-svrg, "
         "network-sarah, choco-sgd, diffusion";
}

bool IsRoundAlgorithm(const std::string& name) {
  return name == "dgd" || name == "dpsgd" || name == "gradient-tracking" || name == "extra" ||
         name == "optra" || name == "apm-c" || name == "choco-sgd" || IsNetworkDaneFamily(name) ||
         name == "diffusion";
}

bool IsNetworkDaneFamily(const std::string& name) {
  return name == "network-dane" || name == "network-svrg" || name == "network-sarah";
}

bool NeedsSmoothness(const std::string& name) {
  return name == "optra" || name == "apm-c" || name == "network-dane";
}

bool NeedsLaplacianSpectrum(const std::string& name) {
  return name == "optra" || name == "apm-c";
}

double ResolveStep(const RoundOptions& options) {
  const double factor = DefaultStepFactor(options.algorithm);
  if (options.step > 0) return options.step;
  if (!(options.smoothness > 0)) {
    throw std::invalid_argument("--step: no step given and no smoothness bound to derive one");
  }
  return factor / options.smoothness;
}

std::unique_ptr<RoundAlgorithm> MakeRoundAlgorithm(const RoundOptions& options,
                                                   const NodeSetup& setup) {
  // The diffusion of topology inference has no objective (ALGORITHMS.md §5.8).
  if (options.algorithm == "diffusion") {
    return std::make_unique<Diffusion>(setup, options.diffusion);
  }
  if (setup.problem == nullptr) throw std::invalid_argument("node setup without a problem");
  if (setup.x0.size() != setup.problem->dim()) {
    throw std::invalid_argument("starting point has dimension " + std::to_string(setup.x0.size()) +
                                " but the problem has " + std::to_string(setup.problem->dim()));
  }
  if (options.batch_size < 0) throw std::invalid_argument("--batch must be >= 0");
  if (options.algorithm == "optra") {
    // No step to resolve: OPTRA derives its steps from nu, L and the horizon.
    return std::make_unique<Optra>(setup, options);
  }
  if (options.algorithm == "apm-c") return std::make_unique<ApmC>(setup, options);
  if (options.algorithm == "network-dane") {
    return std::make_unique<NetworkDane>(setup, options, NetworkDane::Variant::kDane, 0.0);
  }
  if (options.algorithm == "network-svrg" || options.algorithm == "network-sarah") {
    const auto variant = options.algorithm == "network-svrg" ? NetworkDane::Variant::kSvrg
                                                             : NetworkDane::Variant::kSarah;
    return std::make_unique<NetworkDane>(setup, options, variant, ResolveStep(options));
  }
  const double step = ResolveStep(options);
  const std::string& name = options.algorithm;
  if (name == "dgd" || name == "dpsgd") {
    if (name == "dpsgd" && options.batch_size == 0) {
      throw std::invalid_argument("--algorithm dpsgd needs --batch > 0");
    }
    return std::make_unique<Dgd>(setup, step, options.batch_size);
  }
  if (name == "gradient-tracking") return std::make_unique<GradientTracking>(setup, step);
  if (name == "extra") return std::make_unique<Extra>(setup, step);
  if (name == "choco-sgd") {
    return std::make_unique<ChocoSgd>(setup, step, options.batch_size, options.choco_top_k,
                                      options.choco_gamma);
  }
  throw std::invalid_argument("--algorithm '" + name + "': unknown (one of " +
                              RoundAlgorithmNames() + ")");
}

}  // namespace starling::algorithms
