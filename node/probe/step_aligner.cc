#include "node/probe/step_aligner.h"

#include <algorithm>
#include <stdexcept>

namespace starling::node {

namespace {
// A node that never reports would make rows pile up; beyond this many the oldest are dropped.
constexpr size_t kMaxPendingRows = 1u << 20;
}  // namespace

StepAligner::StepAligner(int observed, int64_t burn_in, topology::MomentAccumulator* moments)
    : observed_(observed),
      burn_in_(burn_in),
      moments_(moments),
      last_step_(observed, -1),
      row_(observed) {
  if (moments == nullptr || moments->dim() != observed) {
    throw std::invalid_argument("step aligner: moments of the wrong dimension");
  }
}

void StepAligner::Add(int index, int64_t first_step, const std::vector<double>& values) {
  if (index < 0 || index >= observed_) throw std::invalid_argument("step aligner: bad index");
  for (size_t m = 0; m < values.size(); ++m) {
    const int64_t step = first_step + static_cast<int64_t>(m);
    if (step <= last_step_[index]) continue;
    last_step_[index] = step;
    if (step < burn_in_) continue;
    Row& row = pending_[step];
    if (row.values.empty()) row.values.assign(observed_, 0.0);
    row.values[index] = values[m];
    ++row.count;
  }
  Settle();
}

void StepAligner::Settle() {
  // Every node has reported up to `frontier`: rows at or before it can gain nothing more.
  const int64_t frontier = *std::min_element(last_step_.begin(), last_step_.end());
  while (!pending_.empty() &&
         (pending_.begin()->first <= frontier || pending_.size() > kMaxPendingRows)) {
    const auto it = pending_.begin();
    if (it->second.count == observed_) {
      if (it->first != last_emitted_ + 1) moments_->Break();
      for (int k = 0; k < observed_; ++k) row_[k] = it->second.values[k];
      moments_->Add(row_);
      last_emitted_ = it->first;
      ++complete_rows_;
    } else {
      ++dropped_rows_;
    }
    pending_.erase(it);
  }
}

}  // namespace starling::node
