#include "node/drivers/progress_gate.h"

#include <algorithm>

namespace starling::node {

namespace {
constexpr char kPrefix[] = "progress:";
}  // namespace

int64_t ProgressGate::WindowFor(int64_t budget, int local_steps, int diameter) {
  return std::max<int64_t>(8 * static_cast<int64_t>(std::max(local_steps, 1)),
                           budget / (40 * static_cast<int64_t>(std::max(diameter, 1))));
}

void ProgressGate::Note(int peer, int64_t steps, int64_t now_ms) {
  const auto it = steps_.find(peer);
  if (it == steps_.end()) {
    steps_.emplace(peer, Count{steps, now_ms});
  } else if (it->second.steps != INT64_MAX) {
    it->second = Count{std::max(it->second.steps, steps), now_ms};
  }
}

void ProgressGate::Release(int peer) { steps_[peer] = Count{INT64_MAX, 0}; }

std::optional<int> ProgressGate::Holder(int64_t steps, int64_t now_ms,
                                        const std::function<bool(int)>& live) const {
  for (const auto& [peer, theirs] : steps_) {
    if (theirs.steps == INT64_MAX || now_ms - theirs.noted_ms > stale_ms_) continue;
    if (steps - theirs.steps > window_ && live(peer)) return peer;
  }
  return std::nullopt;
}

bool ProgressGate::Holds(int64_t steps, int64_t now_ms,
                         const std::function<bool(int)>& live) const {
  return Holder(steps, now_ms, live).has_value();
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
