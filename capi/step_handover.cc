#include "capi/step_handover.h"

namespace starling::capi {

bool StepHandover::Ready() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pending_;
}

void StepHandover::Take(Vec* x) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    *x = staged_ + delta_;
    pending_ = false;
  }
  taken_.notify_all();
}

void StepHandover::AddDelta(const Vec& delta) {
  std::lock_guard<std::mutex> lock(mutex_);
  delta_ += delta;
}

void StepHandover::SetResumed(const Vec& x) {
  std::lock_guard<std::mutex> lock(mutex_);
  resumed_ = x;
  has_resumed_ = true;
  delta_.setZero();
}

void StepHandover::EndSteps() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ended_ = true;
  }
  taken_.notify_all();
}

void StepHandover::Publish(const algorithms::PairwiseCounters& c) {
  std::lock_guard<std::mutex> lock(mutex_);
  counters_ = c;
}

algorithms::PairwiseCounters StepHandover::counters() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counters_;
}

}  // namespace starling::capi
