// The neighbour-local synchronizer that runs a round-based algorithm over point-to-point
// messages with no global barrier (docs/explanations/architecture.md).
//
// A node at key k has sent its key-k payload to every neighbour and advances once it holds the
// key-k payload of every neighbour. A neighbour can be at most one key ahead (it cannot pass k+1
// without our k+1 payload), so two inbox slots per neighbour suffice. A payload for a consumed
// key is a duplicate and is dropped, which makes resends idempotent. The node keeps its current
// and previous payloads so that it can answer a RESEND for either.
//
// Pure logic: no sockets, no clock. Not thread-safe; owned by one poll loop.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "algorithms/round/round_algorithm.h"

namespace starling::node {

class RoundSynchronizer {
 public:
  enum class Verdict {
    kStored,       // kept for the current or the next key
    kDuplicate,    // a key already consumed, or a slot already filled: dropped
    kTooFarAhead,  // a second, different future key: the peer broke the protocol; dropped
    kNotNeighbor,  // the sender is not one of our neighbours; dropped
  };

  // Takes ownership of the algorithm; `setup` must be the one it was built from.
  RoundSynchronizer(std::unique_ptr<algorithms::RoundAlgorithm> algorithm,
                    const algorithms::NodeSetup& setup);

  algorithms::StepKey key() const { return algorithm_->key(); }
  // The payload for key(); the driver sends it to every neighbour after construction and after
  // every Advance().
  const Vec& Outgoing() const { return algorithm_->Outgoing(); }
  // Our payload for `key` if it is the current or the previous key (to answer RESEND), else null.
  const Vec* PayloadFor(const algorithms::StepKey& key) const;

  Verdict OnPayload(int from, const algorithms::StepKey& key, Vec payload);
  // True once every neighbour's payload for key() is held.
  bool ReadyToAdvance() const;
  // Runs the algorithm's step. Payloads of the wrong size are dropped first (the neighbour is then
  // waited for again, so ReadyToAdvance() may turn false); returns false in that case without
  // advancing. Precondition: ReadyToAdvance().
  bool Advance();
  // Neighbours whose key() payload is still missing, ascending.
  std::vector<int> Waiting() const;

  const algorithms::RoundAlgorithm& algorithm() const { return *algorithm_; }

 private:
  struct Slot {
    std::optional<Vec> current;  // payload for key()
    std::optional<algorithms::StepKey> next_key;
    Vec next;  // payload for next_key
  };
  int IndexOf(int neighbor) const;

  std::unique_ptr<algorithms::RoundAlgorithm> algorithm_;
  std::vector<int> neighbors_;
  std::vector<Slot> slots_;
  std::optional<algorithms::StepKey> previous_key_;
  Vec previous_payload_;
  std::vector<const Vec*> inbox_;
};

}  // namespace starling::node
