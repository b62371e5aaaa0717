#include "topology/clock_offsets.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace starling::topology {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

ClockOffsetEstimator::ClockOffsetEstimator(int observed)
    : lead_(std::max(observed, 0), kNaN), batches_(std::max(observed, 0), 0) {}

void ClockOffsetEstimator::Observe(int index, double last_stamp, double arrival) {
  if (index < 0 || index >= observed()) {
    throw std::invalid_argument("clock offsets: bad index " + std::to_string(index));
  }
  const double lead = last_stamp - arrival;
  if (!std::isfinite(lead)) return;
  ++batches_[index];
  // NaN before the first batch: the comparison is false, so the first lead is taken.
  if (!(lead <= lead_[index])) lead_[index] = lead;
}

int64_t ClockOffsetEstimator::min_batches() const {
  return batches_.empty() ? 0 : *std::min_element(batches_.begin(), batches_.end());
}

int64_t ClockOffsetEstimator::max_batches() const {
  return batches_.empty() ? 0 : *std::max_element(batches_.begin(), batches_.end());
}

std::vector<double> ClockOffsetEstimator::Relative(int reference) const {
  std::vector<double> relative(lead_.size());
  for (size_t k = 0; k < lead_.size(); ++k) relative[k] = lead_[k] - lead_[reference];
  return relative;
}

OffsetEstimatingFeed::OffsetEstimatingFeed(TimeAligner* aligner, int observed,
                                           int64_t warmup_batches, int reference)
    : aligner_(aligner),
      warmup_(warmup_batches),
      reference_(reference),
      estimator_(observed),
      released_(warmup_batches == 0),
      offsets_(std::max(observed, 0), 0.0) {
  if (aligner == nullptr || warmup_batches < 0 || reference < -1 || reference >= observed) {
    throw std::invalid_argument("clock offsets: bad warm-up or reference");
  }
}

void OffsetEstimatingFeed::AddBatch(int index, int64_t first_seq, const double* times,
                                    const double* values, size_t count, double arrival) {
  if (count == 0) return;
  estimator_.Observe(index, times[count - 1], arrival);
  if (released_) {
    for (size_t m = 0; m < count; ++m) {
      aligner_->Add(index, first_seq + static_cast<int64_t>(m), times[m], values[m]);
    }
    return;
  }
  for (size_t m = 0; m < count; ++m) {
    held_.push_back({index, first_seq + static_cast<int64_t>(m), times[m], values[m]});
  }
  if (estimator_.min_batches() >= warmup_ ||
      estimator_.max_batches() >= kStalledWarmupFactor * warmup_) {
    Release();
  }
}

void OffsetEstimatingFeed::Release() {
  if (released_) return;
  released_ = true;
  const double base = reference_ >= 0 ? estimator_.Lead(reference_) : 0.0;
  for (int k = 0; k < estimator_.observed(); ++k) {
    const double offset = estimator_.Lead(k) - (std::isfinite(base) ? base : 0.0);
    offsets_[k] = std::isfinite(offset) ? offset : 0.0;
    aligner_->SetClockOffset(k, offsets_[k]);
  }
  held_at_release_ = static_cast<int64_t>(held_.size());
  for (const Held& h : held_) aligner_->Add(h.index, h.seq, h.time, h.value);
  held_.clear();
  held_.shrink_to_fit();
}

}  // namespace starling::topology
