// Runs a round-based algorithm for N nodes in one process over a simulated faulty network: each
// node runs the daemon's own RoundSynchronizer, messages (payloads and RESENDs) pass through a
// FaultInjector (loss, duplication, delay, reordering, partitions), and a node that makes no
// progress for `resend_ms` asks its missing neighbours again, as starlingd does.
//
// Simulated time is in milliseconds: a message with no injected delay arrives 1 ms after it was
// sent, and local computation takes no time. Since the synchronizer feeds the algorithm exactly
// the payloads of lockstep, the iterates must equal RoundSimulator's bit for bit under any plan
// that does not lose every message forever; tests check that.
//
// Not thread-safe. The NodeSetups (and their problems) must outlive it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "algorithms/round/round_algorithm.h"
#include "net/fault_plan.h"
#include "node/drivers/round_synchronizer.h"
#include "node/report/model_spread.h"

namespace starling::node {

struct FaultyRoundCounters {
  int64_t payloads_sent = 0, resends_sent = 0, resends_answered = 0;
  int64_t duplicates_dropped = 0;  // payloads the synchronizers dropped as already held/consumed
  int64_t delivered = 0;
  net::FaultCounters faults;
};

class FaultyRoundSimulator {
 public:
  // Every node stops advancing once it has completed `target_iterations` (as the daemon does).
  FaultyRoundSimulator(const std::vector<algorithms::NodeSetup>& nodes,
                       const algorithms::RoundOptions& options, const net::FaultPlan& plan,
                       int64_t resend_ms, int64_t target_iterations);

  // Runs simulated milliseconds until the slowest node has completed one more iteration (or all
  // are finished). Throws std::runtime_error if nothing progresses for `stall_ms`.
  void Step(int64_t stall_ms = 10'000'000);
  void RunUntilIteration(int64_t iterations);

  int num_nodes() const { return static_cast<int>(syncs_.size()); }
  const algorithms::RoundAlgorithm& node(int i) const { return syncs_[i]->algorithm(); }
  // The slowest node's completed iterations.
  int64_t iteration() const;
  int64_t now_ms() const { return now_; }
  int64_t bytes_sent() const { return bytes_sent_; }
  FaultyRoundCounters counters() const;
  ModelSpread Spread() const;

 private:
  struct Message {
    int from, to;
    bool resend;
    algorithms::StepKey key;
    Vec payload;  // empty for RESEND
  };
  void Tick();
  void Send(Message message);
  void Broadcast(int i);

  const std::vector<algorithms::NodeSetup>& nodes_;
  std::vector<std::unique_ptr<RoundSynchronizer>> syncs_;
  std::vector<net::FaultInjector> injectors_;
  int64_t resend_ms_, target_;
  int64_t now_ = 0;
  // In flight, by arrival time (FIFO among equal times).
  std::multimap<int64_t, Message> in_flight_;
  std::map<std::pair<int, int>, Message> held_;  // reordering: one held message per edge
  std::vector<int64_t> last_progress_, last_resend_;
  FaultyRoundCounters counters_;
  int64_t bytes_sent_ = 0;
};

}  // namespace starling::node
