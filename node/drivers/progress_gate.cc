#include "node/drivers/progress_gate.h"

#include <algorithm>

namespace starling::node {

namespace {
constexpr char kPrefix[] = "progress:";
}  // namespace

int64_t ProgressGate::WindowFor(int64_t budget, int local_steps) {
  return std::max<int64_t>(8 * static_cast<int64_t>(std::max(local_steps, 1)), budget / 40);
}

void ProgressGate::Note(int peer, int64_t steps) {
  const auto it = steps_.find(peer);
  if (it == steps_.end()) {
    steps_.emplace(peer, steps);
  } else {
    it->second = std::max(it->second, steps);
  }
}

void ProgressGate::Release(int peer) {
  steps_.erase(peer);
  steps_.emplace(peer, INT64_MAX);
}

std::optional<int> ProgressGate::Holder(int64_t steps, const std::function<bool(int)>& live) const {
  for (const auto& [peer, theirs] : steps_) {
    if (theirs != INT64_MAX && steps - theirs > window_ && live(peer)) return peer;
  }
  return std::nullopt;
}

bool ProgressGate::Holds(int64_t steps, const std::function<bool(int)>& live) const {
  return Holder(steps, live).has_value();
}

bool ProgressGate::AnnounceDue(int64_t steps) {
  if (last_announced_ >= 0 && steps - last_announced_ < std::max<int64_t>(1, window_ / 4)) {
    return false;
  }
  last_announced_ = steps;
  return true;
}

std::string ProgressGate::Text(int64_t steps) { return kPrefix + std::to_string(steps); }

std::optional<int64_t> ProgressGate::Parse(const std::string& text) {
  const std::string prefix = kPrefix;
  if (text.size() <= prefix.size() || text.size() > prefix.size() + 15 ||
      text.compare(0, prefix.size(), prefix) != 0) {
    return std::nullopt;
  }
  int64_t steps = 0;
  for (size_t k = prefix.size(); k < text.size(); ++k) {
    if (text[k] < '0' || text[k] > '9') return std::nullopt;
    steps = 10 * steps + (text[k] - '0');
  }
  return steps;
}

}  // namespace starling::node
