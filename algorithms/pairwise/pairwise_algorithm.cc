#include "algorithms/pairwise/pairwise_algorithm.h"

#include <stdexcept>

#include "algorithms/pairwise/checked_merge.h"
#include "algorithms/pairwise/pairwise_method.h"

namespace starling::algorithms {

// The default checked merges: a scan of their_snapshot, then the plain merge. The methods whose
// vector reaches them unscanned (one payload, no --compression: net/payload_view.h,
// ReadDenseUnchecked) override them to check in the merge's own pass: SwarmSGD (and
// SlowMo-SwarmSGD), A2CiD2, edge ADMM (whose responder, when a solve is due first, scans before
// that solve), and the C ABI's ExternalPairwise (its inner SwarmSGD's). The pairwise diffusion
// keeps the defaults: its message is one value, whose check before the merge is the merge's own
// read. ASY-SONATA's, DADAO's and ADFS's messages are several payloads, and the compressed
// SwarmSGD variants' are codes: the wire checks those as it copies them, and the daemon's driver
// then calls the plain merges (ExchangeWire::ChecksValues, ExchangeDriver::SetVectorsChecked).
PairwiseAlgorithm::MergeResult PairwiseAlgorithm::CompleteExchangeChecked(
    uint64_t seq, const Eigen::Ref<const Vec>& their_snapshot, size_t* first_bad) {
  const size_t n = static_cast<size_t>(their_snapshot.size());
  if (!their_snapshot.allFinite()) {
    *first_bad = FirstNonFinite(their_snapshot.data(), n);
    return MergeResult::kRefused;
  }
  return CompleteExchange(seq, their_snapshot) ? MergeResult::kMerged : MergeResult::kNoSnapshot;
}

std::shared_ptr<const Vec> PairwiseAlgorithm::RespondChecked(
    int peer, const Eigen::Ref<const Vec>& their_snapshot, size_t* first_bad) {
  const size_t n = static_cast<size_t>(their_snapshot.size());
  if (!their_snapshot.allFinite()) {
    *first_bad = FirstNonFinite(their_snapshot.data(), n);
    return nullptr;
  }
  return Respond(peer, their_snapshot);
}

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

int PairwiseMessageSize(const PairwiseOptions& options, int dim) {
  const PairwiseMethod* method = FindPairwiseMethod(options.algorithm);
  if (method == nullptr) {
    throw std::invalid_argument("--algorithm '" + options.algorithm + "': unknown (one of " +
                                PairwiseAlgorithmNames() + ")");
  }
  return method->message_size ? method->message_size(dim) : dim;
}

std::unique_ptr<PairwiseAlgorithm> MakePairwiseAlgorithm(const PairwiseOptions& options,
                                                         const NodeSetup& setup) {
  const PairwiseMethod* method = FindPairwiseMethod(options.algorithm);
  if (method == nullptr) {
    throw std::invalid_argument("--algorithm '" + options.algorithm + "': unknown (one of " +
                                PairwiseAlgorithmNames() + ")");
  }
  if (method->needs_problem && setup.problem == nullptr) {
    throw std::invalid_argument("node setup without a problem");
  }
  if (options.batch_size < 1) throw std::invalid_argument("--batch must be >= 1 for swarmsgd");
  if (options.local_steps < 1) throw std::invalid_argument("--local-steps must be >= 1");
  return method->make(options, setup);
}

}  // namespace starling::algorithms
