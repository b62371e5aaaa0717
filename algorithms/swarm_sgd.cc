#include "algorithms/swarm_sgd.h"

namespace starling::algorithms {

SwarmSgd::SwarmSgd(const NodeSetup& setup, double step, int batch_size, int local_steps)
    : SwarmSgdBase(setup, step, batch_size, local_steps) {}

const Vec& SwarmSgd::BeginExchange(int /*peer*/, uint64_t seq) {
  KeepOffer({seq, x_});
  counters_.bits_sent += 64 * x_.size();
  return FindOffer(seq)->snapshot;
}

bool SwarmSgd::CompleteExchange(uint64_t seq, const Vec& their_snapshot) {
  const SwarmSgdOffer* offer = FindOffer(seq);
  if (offer == nullptr) return false;
  // X_i <- (S_i + S_j)/2 + (X_i - S_i) = X_i + (S_j - S_i)/2.
  x_.noalias() += 0.5 * (their_snapshot - offer->snapshot);
  FinishOffer(seq, /*merged=*/true);
  return true;
}

const Vec& SwarmSgd::Respond(int /*peer*/, const Vec& their_snapshot) {
  reply_snapshot_ = x_;
  // X_j <- (S_i + S_j)/2, computed as X_j + (S_i - S_j)/2: the exact negative of the
  // initiator's change, so the sum of models is conserved.
  x_.noalias() += 0.5 * (their_snapshot - reply_snapshot_);
  NoteServed();
  counters_.bits_sent += 64 * reply_snapshot_.size();
  return reply_snapshot_;
}

bool SwarmSgd::SaveState(AlgorithmState* s) const {
  SaveCommon("swarmsgd", s);
  return true;
}

void SwarmSgd::LoadState(const AlgorithmState& s) { LoadCommon("swarmsgd", s, 0, 0); }

}  // namespace starling::algorithms
