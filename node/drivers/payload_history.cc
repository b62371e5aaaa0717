#include "node/drivers/payload_history.h"

#include <algorithm>

namespace starling::node {

void PayloadHistory::Record(const algorithms::StepKey& key, const Vec& payload) {
  if (capacity_ == 0) return;
  if (!entries_.empty() && !(entries_.back().first < key)) return;
  if (entries_.size() >= capacity_) {
    // Reuse the oldest entry's storage.
    auto oldest = std::move(entries_.front());
    entries_.pop_front();
    oldest.first = key;
    oldest.second = payload;
    entries_.push_back(std::move(oldest));
    return;
  }
  entries_.emplace_back(key, payload);
}

const Vec* PayloadHistory::Find(const algorithms::StepKey& key) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), key,
                             [](const std::pair<algorithms::StepKey, Vec>& e,
                                const algorithms::StepKey& k) { return e.first < k; });
  if (it == entries_.end() || it->first != key) return nullptr;
  return &it->second;
}

std::vector<std::pair<algorithms::StepKey, const Vec*>> PayloadHistory::Newest(size_t n) const {
  std::vector<std::pair<algorithms::StepKey, const Vec*>> newest;
  for (size_t i = entries_.size() - std::min(n, entries_.size()); i < entries_.size(); ++i) {
    newest.emplace_back(entries_[i].first, &entries_[i].second);
  }
  return newest;
}

}  // namespace starling::node
