#include "algorithms/round/choco_sgd.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

#include "algorithms/compression/cross_polytope_quantizer.h"
#include "algorithms/round/neighbor_mix.h"
#include "algorithms/round/round_method.h"

namespace starling::algorithms {
namespace {

std::unique_ptr<RoundAlgorithm> MakeChocoSgd(const RoundOptions& options, const NodeSetup& setup) {
  const ScheduledStep step{ResolveStep(options), options.step_schedule};
  const ChocoSgdParams params = ChocoSgdParamTable().Read(options.params);
  return std::make_unique<ChocoSgd>(setup, step, options.batch_size, params.top_k, params.gamma,
                                    params.vq_samples);
}

}  // namespace

const ParamTable<ChocoSgdParams>& ChocoSgdParamTable() {
  static const auto* const table = new ParamTable<ChocoSgdParams>(
      ParamTable<ChocoSgdParams>("CHOCO-SGD")
          .Add("top-k", &ChocoSgdParams::top_k,
               "CHOCO-SGD: send the k largest entries of x - x_hat (0 = all; error feedback "
               "through the public copy x_hat)",
               Range::NonNegative())
          .Add("choco-gamma", &ChocoSgdParams::gamma, "CHOCO-SGD: consensus step gamma in (0, 1]",
               Range::OpenClosed(0, 1))
          .Add("vq-samples", &ChocoSgdParams::vq_samples,
               "CHOCO-SGD: compress x - x_hat with S samples of vqSGD's cross-polytope quantizer "
               "(arXiv:1911.07971), scaled by 1/(1 + (d-1)/S); 0 = off (then --top-k applies)",
               Range::NonNegative()));
  return *table;
}

// 1/L (the reference code fixes no step): bench/step_sweep.py found the best fixed step of the
// grid c/L at c = 2 on a9a, on the OPTRA least-squares instance and on its multinomial set, c = 4
// diverging or worse, so 0.5/L would be 4x below the best; with top-k 10% on a9a, 1/L and 2/L
// converge too.
const RoundMethod& ChocoSgdMethod() {
  static const RoundMethod method = RoundMethod("choco-sgd", MakeChocoSgd)
                                        .DefaultStep(1.0)
                                        .SchedulesStep()
                                        .Params(ChocoSgdParamTable());
  return method;
}

ChocoSgd::ChocoSgd(const NodeSetup& setup, ScheduledStep step, int batch_size, int top_k,
                   double gamma, int vq_samples)
    : setup_(setup),
      step_(step),
      gamma_(gamma),
      top_k_(top_k),
      vq_samples_(vq_samples),
      oracle_(setup.problem, batch_size, setup.seed),
      x_(setup.x0) {
  if (top_k < 0) throw std::invalid_argument("--top-k must be >= 0");
  if (vq_samples < 0) throw std::invalid_argument("--vq-samples must be >= 0");
  if (vq_samples > 0 && top_k > 0) {
    throw std::invalid_argument("--vq-samples and --top-k are two compressors: give one");
  }
  if (!(gamma > 0) || gamma > 1) throw std::invalid_argument("--choco-gamma must be in (0, 1]");
  // The wire's bound (net/envelope.h): a message never larger than a top-k one of d entries.
  if (vq_samples > std::max<Eigen::Index>(x_.size(), 64)) {
    throw std::invalid_argument("--vq-samples must be at most max(d, 64) = " +
                                std::to_string(std::max<Eigen::Index>(x_.size(), 64)));
  }
  // The public copies start at zero on every node, as the neighbours' copies of them do.
  xhat_self_ = Vec::Zero(x_.size());
  xhat_neighbors_.assign(setup_.neighbors.size(), Vec::Zero(x_.size()));
  Prepare();
}

void ChocoSgd::Prepare() {
  oracle_.Compute(x_, &grad_);
  x_.noalias() -= step_.At(iteration_) * grad_;
  Compress();
}

void ChocoSgd::Compress() {
  diff_ = x_ - xhat_self_;
  const Eigen::Index d = diff_.size();
  if (vq_samples_ > 0) {
    // One generator per (node seed, iteration): SplitMix64's constants decorrelate the two.
    std::mt19937_64 rng(setup_.seed * 0x9E3779B97F4A7C15ull +
                        static_cast<uint64_t>(iteration_) * 0xBF58476D1CE4E5B9ull + 1);
    const CrossPolytopeMessage m = CrossPolytopeQuantizer::Encode(diff_, vq_samples_, &rng);
    message_.resize(1 + vq_samples_);
    message_[0] = m.norm;
    for (int s = 0; s < vq_samples_; ++s) message_[1 + s] = m.codes[s];
    // The same function decodes the neighbours' messages (DecodeMessage).
    DecodeMessage(message_, &q_);
    return;
  }
  if (top_k_ == 0 || top_k_ >= d) {
    q_ = diff_;
    return;
  }
  // Top-k by magnitude; ties broken by the lower index so that the choice is deterministic.
  order_.resize(d);
  for (Eigen::Index k = 0; k < d; ++k) order_[k] = k;
  std::nth_element(order_.begin(), order_.begin() + top_k_, order_.end(),
                   [&](Eigen::Index a, Eigen::Index b) {
                     const double fa = std::abs(diff_[a]), fb = std::abs(diff_[b]);
                     return fa > fb || (fa == fb && a < b);
                   });
  q_ = Vec::Zero(d);
  for (int k = 0; k < top_k_; ++k) q_[order_[k]] = diff_[order_[k]];
}

void ChocoSgd::DecodeMessage(const Vec& message, Vec* q) const {
  const Eigen::Index d = x_.size();
  CrossPolytopeMessage m;
  bool ok = message.size() == 1 + vq_samples_;
  if (ok) {
    m.norm = message[0];
    m.codes.resize(vq_samples_);
    for (int s = 0; s < vq_samples_ && ok; ++s) {
      const double c = message[1 + s];
      ok = c >= 0 && c < 2.0 * static_cast<double>(d) && c == std::floor(c);
      if (ok) m.codes[s] = static_cast<uint32_t>(c);
    }
  }
  if (!ok || !CrossPolytopeQuantizer::DecodeScaled(
                 m, d, CrossPolytopeQuantizer::ContractionDivisor(d, vq_samples_), q)) {
    throw std::invalid_argument("choco-sgd: malformed vq message");
  }
}

int64_t ChocoSgd::OutgoingBits() const {
  const int64_t d = q_.size();
  if (vq_samples_ > 0) return CrossPolytopeQuantizer::MessageBits(d, vq_samples_);
  if (top_k_ == 0 || top_k_ >= d) return 64 * d;
  return int64_t{top_k_} * (32 + 64);
}

void ChocoSgd::Advance(const std::vector<const Vec*>& inbox) {
  CheckInbox(setup_, inbox, Outgoing().size());
  xhat_self_ += q_;
  for (size_t k = 0; k < inbox.size(); ++k) {
    if (vq_samples_ > 0) {
      DecodeMessage(*inbox[k], &decoded_);
      xhat_neighbors_[k] += decoded_;
    } else {
      xhat_neighbors_[k] += *inbox[k];
    }
  }
  // x_i += gamma sum_j W_ij (xhat_j - xhat_i); the self term vanishes.
  std::vector<const Vec*> copies;
  copies.reserve(xhat_neighbors_.size());
  for (const Vec& v : xhat_neighbors_) copies.push_back(&v);
  Vec mixed;
  MixSegment(setup_, xhat_self_, copies, 0, x_.size(), &mixed);
  x_.noalias() += gamma_ * (mixed - xhat_self_);
  ++iteration_;
  Prepare();
}

AlgorithmCounters ChocoSgd::counters() const { return {iteration_, iteration_, oracle_.passes()}; }

bool ChocoSgd::SaveState(AlgorithmState* s) const {
  *s = AlgorithmState();
  s->algorithm = name();
  s->ints = {iteration_};
  s->reals = {oracle_.passes()};
  s->vectors = {x_, q_, xhat_self_};
  s->vectors.insert(s->vectors.end(), xhat_neighbors_.begin(), xhat_neighbors_.end());
  s->texts = {oracle_.SaveEngine()};
  return true;
}

void ChocoSgd::LoadState(const AlgorithmState& s) {
  // One public copy per neighbour: a checkpoint of a node with another neighbourhood is refused.
  CheckStateShape(s, name(), 1, 1, 3 + xhat_neighbors_.size(), 1);
  for (const Vec& v : s.vectors) {
    if (v.size() != x_.size()) throw std::invalid_argument("checkpoint: wrong dimension");
  }
  if (s.ints[0] < 0) throw std::invalid_argument("checkpoint: negative choco-sgd iteration");
  oracle_.LoadEngine(s.texts[0], s.reals[0]);
  iteration_ = s.ints[0];
  x_ = s.vectors[0];
  q_ = s.vectors[1];
  xhat_self_ = s.vectors[2];
  for (size_t k = 0; k < xhat_neighbors_.size(); ++k) xhat_neighbors_[k] = s.vectors[3 + k];
  // The message of this iteration, drawn again from the same generator (q comes out the same).
  if (vq_samples_ > 0) Compress();
}

}  // namespace starling::algorithms
