#include "algorithms/pairwise/vq_swarm_sgd.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

namespace starling::algorithms {

namespace {

double DefaultGamma(const VqSpec& spec, Eigen::Index d) {
  if (spec.gamma > 0) return spec.gamma;
  const double delta = spec.samples / (static_cast<double>(d) - 1 + spec.samples);
  return std::min(0.5, delta / 2);  // the heuristic bound of vq_swarm_sgd.h
}

}  // namespace

VqSwarmSgd::VqSwarmSgd(const NodeSetup& setup, ScheduledStep step, int batch_size, int local_steps,
                       VqSpec spec)
    : SparseSwarmSgd(setup, step, batch_size, local_steps, DefaultGamma(spec, setup.x0.size()), kVq,
                     "swarmsgd-vq"),
      samples_(spec.samples),
      divisor_(CrossPolytopeQuantizer::ContractionDivisor(setup.x0.size(), spec.samples)) {
  const Eigen::Index d = setup.x0.size();
  if (samples_ < 1 || samples_ > std::max<Eigen::Index>(d, 64) || d > (Eigen::Index{1} << 30)) {
    throw std::invalid_argument("--compression vq:" + std::to_string(spec.samples) +
                                ": S must be in [1, max(d, 64)] = [1, " +
                                std::to_string(std::max<Eigen::Index>(d, 64)) + "]");
  }
}

int64_t VqSwarmSgd::Compress(const Vec& diff, Vec* message, Vec* q) {
  const Eigen::Index d = diff.size();
  // One generator per (node seed, message): SplitMix64's constants decorrelate the two.
  std::mt19937_64 rng(setup_.seed * 0x9E3779B97F4A7C15ull + (++encoded_) * 0xBF58476D1CE4E5B9ull);
  m_ = CrossPolytopeQuantizer::Encode(diff, samples_, &rng);
  message->resize(kVqHeaderSize + samples_);
  (*message)[3] = m_.norm;
  for (int s = 0; s < samples_; ++s) (*message)[kVqHeaderSize + s] = m_.codes[s];
  CrossPolytopeQuantizer::DecodeScaled(m_, d, divisor_, q);
  return CrossPolytopeQuantizer::MessageBits(d, samples_);
}

bool VqSwarmSgd::Expand(const Eigen::Ref<const Vec>& message, Vec* q) {
  const Eigen::Index d = x_.size();
  if (message.size() != kVqHeaderSize + samples_) return false;
  m_.norm = message[3];
  m_.codes.resize(samples_);
  for (int s = 0; s < samples_; ++s) {
    const double c = message[kVqHeaderSize + s];
    // Codes travel as doubles here: whole numbers in [0, 2d) only (Decode checks the rest).
    if (!(c >= 0) || c >= 2.0 * static_cast<double>(d) || c != std::floor(c)) return false;
    m_.codes[s] = static_cast<uint32_t>(c);
  }
  return CrossPolytopeQuantizer::DecodeScaled(m_, d, divisor_, q);
}

void VqSwarmSgd::LoadExtra(const std::vector<int64_t>& ints) {
  encoded_ = static_cast<uint64_t>(ints.at(0));
}

}  // namespace starling::algorithms
