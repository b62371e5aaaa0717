#include "node/drivers/round_synchronizer.h"

#include <algorithm>
#include <stdexcept>

namespace starling::node {

RoundSynchronizer::RoundSynchronizer(std::unique_ptr<algorithms::RoundAlgorithm> algorithm,
                                     const algorithms::NodeSetup& setup)
    : algorithm_(std::move(algorithm)), neighbors_(setup.neighbors), slots_(neighbors_.size()) {
  if (!algorithm_) throw std::invalid_argument("RoundSynchronizer needs an algorithm");
}

int RoundSynchronizer::IndexOf(int neighbor) const {
  auto it = std::lower_bound(neighbors_.begin(), neighbors_.end(), neighbor);
  if (it == neighbors_.end() || *it != neighbor) return -1;
  return static_cast<int>(it - neighbors_.begin());
}

const Vec* RoundSynchronizer::PayloadFor(const algorithms::StepKey& key) const {
  if (key == algorithm_->key()) return &algorithm_->Outgoing();
  if (previous_key_ && key == *previous_key_) return &previous_payload_;
  return nullptr;
}

RoundSynchronizer::Verdict RoundSynchronizer::OnPayload(int from, const algorithms::StepKey& key,
                                                        Vec payload) {
  const int index = IndexOf(from);
  if (index < 0) return Verdict::kNotNeighbor;
  Slot& slot = slots_[index];
  const algorithms::StepKey current = algorithm_->key();
  if (key < current) return Verdict::kDuplicate;
  if (key == current) {
    if (slot.current) return Verdict::kDuplicate;
    slot.current = std::move(payload);
    return Verdict::kStored;
  }
  if (slot.next_key) return *slot.next_key == key ? Verdict::kDuplicate : Verdict::kTooFarAhead;
  slot.next_key = key;
  slot.next = std::move(payload);
  return Verdict::kStored;
}

bool RoundSynchronizer::ReadyToAdvance() const {
  return std::all_of(slots_.begin(), slots_.end(),
                     [](const Slot& s) { return s.current.has_value(); });
}

bool RoundSynchronizer::Advance() {
  if (!ReadyToAdvance()) throw std::logic_error("RoundSynchronizer::Advance before ready");
  const Eigen::Index expected = algorithm_->Outgoing().size();
  bool sizes_ok = true;
  for (Slot& slot : slots_) {
    if (slot.current->size() != expected) {
      slot.current.reset();
      sizes_ok = false;
    }
  }
  if (!sizes_ok) return false;

  previous_key_ = algorithm_->key();
  previous_payload_ = algorithm_->Outgoing();
  inbox_.clear();
  for (const Slot& slot : slots_) inbox_.push_back(&*slot.current);
  algorithm_->Advance(inbox_);

  const algorithms::StepKey now = algorithm_->key();
  for (Slot& slot : slots_) {
    slot.current.reset();
    if (slot.next_key && *slot.next_key == now) slot.current = std::move(slot.next);
    // A stored future key that is not the new key cannot come from a correct peer: drop it.
    slot.next_key.reset();
    slot.next = Vec();
  }
  return true;
}

std::vector<int> RoundSynchronizer::Waiting() const {
  std::vector<int> waiting;
  for (size_t k = 0; k < slots_.size(); ++k) {
    if (!slots_[k].current) waiting.push_back(neighbors_[k]);
  }
  return waiting;
}

}  // namespace starling::node
