// starlingd's loop for a pairwise algorithm (docs/explanations/architecture.md), over an
// ExchangeDriver: local steps, and exchanges of snapshots with one neighbour at a time.
//
// Start-up: no local step before a neighbour has been met (both connections work), since
// daemons launched together come up seconds apart; that wait is start-up, not communication. A
// neighbour that has already done its budget counts: it is still up as a passive partner.
// Then a neighbour that stops answering is skipped (the driver's time-outs) and taken back as
// soon as it is heard from again; the node waits only where the algorithm's staleness bound
// says so, and gives up after give_up_seconds without an exchange.
//
// Middle (ProgressGate): a node more than a window of local steps ahead of a live neighbour still
// stepping waits for it, so that no tail of a few nodes' steps is left for the end. With
// SwarmSGD's --merge-pace R (MergePace) a node also waits before local step k+1 until it has
// completed R x k merges, each wait bounded by MergePace's bound (4 smoothed exchange round
// trips, at least kPaceWaitMs, at most MergePace::kMaxWaitMs plus the exchange's request and
// reply at the slowest assumed rate, as its offer's time-out). With --compute-delay-ms or
// --slow-node, outgoing exchange messages may be held back until the local steps a message
// handler took are paid for (CatchUpCharge: DADAO's catch-up events), and no offer is made and
// no local step taken meanwhile.
//
// End phase (docs/explanations/algorithms/swarmsgd.md): every node does its whole budget of
// local steps, whatever its neighbours do. A node that has done it takes no more local steps but
// stays up as a passive partner: it answers requests and offers averaging merges of its own (at
// its cadence while stepping, at least 1 ms apart) to any neighbour still up; a pairwise
// average keeps the sum of models, and the nodes still stepping keep mixing with everybody
// instead of training alone. It leaves when the whole network has done its budget (FinishWave:
// the neighbours' levels) and its neighbours know it too, or after --linger-s, and says "left".
//
// A run that did far less than asked ends with exit 5 (kExitIncomplete) and an "incomplete" line:
// fewer than 90% of the budget of local steps, or more than 10% of it taken alone (past the
// staleness bound of 2H steps since the last merge, because no neighbour was left to merge
// with). A node stopped by a signal was stopped by the user: exit 0, as before.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/pairwise/pairwise_algorithm.h"
#include "net/codec.h"
#include "net/transport.h"
#include "node/daemon/catch_up_charge.h"
#include "node/daemon/finish_wave.h"
#include "node/daemon/node_runtime.h"
#include "node/daemon/progress_watch.h"
#include "node/drivers/exchange_driver.h"
#include "node/drivers/exchange_wire.h"
#include "node/drivers/merge_pace.h"
#include "node/drivers/progress_gate.h"

namespace starling::node {

class PairwiseNode : public NodeLoop {
 public:
  // Builds the algorithm (from the checkpoint if --resume). `runtime` is started and outlives
  // this object. Throws std::invalid_argument / std::runtime_error for a bad parameter or a
  // checkpoint of another run or node (the caller prints it and exits 2).
  explicit PairwiseNode(NodeRuntime* runtime);
  // With `algorithm` instead of the one the run's options name (the C ABI's, capi/); it is
  // resumed from the checkpoint like any other.
  PairwiseNode(NodeRuntime* runtime, std::unique_ptr<algorithms::PairwiseAlgorithm> algorithm);

  int Run() override;

 private:
  void OnMessage(int32_t peer, const net::Envelope& e);
  // A BYE: a level of the finish wave, "left" (gone for good), or another reason.
  void OnBye(int32_t peer, const std::string& text);
  void SayLevel();
  // Held by the progress gate (a live neighbour still stepping is a window behind).
  bool HeldBack(Clock::time_point now);
  // Held by --merge-pace (fewer merges than the pace asks, within the bounded wait).
  bool Paced(Clock::time_point now);
  bool Gone(int peer) const { return gone_.count(peer) != 0; }
  void OnRequest(int32_t peer, const net::Envelope& e);
  void OnReply(int32_t peer, const net::Envelope& e);
  // The message of a request or reply, or nullopt once the reject is reported. It may view the
  // received frame (plain exchanges: no copy), so it is used only while `e` is alive; the
  // algorithm keeps no reference to it.
  std::optional<Eigen::Map<const Vec>> Collect(int32_t peer, const net::Envelope& e, bool request);
  void Send(const ExchangeMessage& m);
  // The budget of local steps is done: the end phase begins.
  void Finish();
  // In the end phase: an averaging offer when one is due (none once every node has finished).
  void OfferInEndPhase(Clock::time_point now);
  // The neighbours not met yet are unavailable as partners until they are.
  void NoteUnmet();
  bool Met(int peer) const;
  void AdmitMet();
  std::string UnmetList() const;
  // Waits, before the first local step, until one neighbour is met. An exit code, or -1.
  int WaitForANeighbour();
  // One turn of the main loop, in parts. Each returning int gives an exit code, or -1.
  int CheckBeforeStep();
  // A local step, then an offer if the driver wants one; finishes at the step budget.
  void StepAndOffer();
  // Handles what has arrived (waiting until the next end-phase offer once finished, at most
  // 10 ms; 1 ms while the staleness bound
  // holds the node (`wait`), else not at all), then lets a timed-out offer go while waiting.
  // `idle`: the next step is not ready (StepReady): polls 1 ms, not counted as waiting.
  // `paced`: the wait is --merge-pace's only: polls until a message, the pace's time-out or the
  // driver's next timer (ExchangeDriver::MsUntilNextTimer), whichever comes first, 5 ms at most.
  void PollAndFollowUp(bool wait, bool idle = false, bool paced = false);
  void ReadmitLiveNeighbours();
  // Waiting lines and giving up while no exchange completes.
  int WatchExchanges(Clock::time_point now, bool wait, const algorithms::PairwiseCounters& c);
  // Finished, and every node finished (and the neighbours know it) or the linger over, and no
  // offer still open.
  bool Done(Clock::time_point now) const;
  // After the loop: the stop signal's checkpoint and the closing lines.
  void Leave();
  // kExitOk, or kExitIncomplete (logged) if the node did far less than asked (see above).
  int Outcome() const;
  void MaybeCheckpoint(bool force);
  void Report(bool final, bool force);
  // --snapshots: the model at this step if one is due, or the final one.
  void Snapshot(bool final);
  int64_t NowMs() const { return Millis(Clock::now() - rt_.start()); }

  NodeRuntime& rt_;
  const int id_;
  const algorithms::NodeSetup& me_;
  const algorithms::PairwiseOptions pairwise_;
  std::unique_ptr<algorithms::PairwiseAlgorithm> algorithm_;
  ExchangeWire wire_;
  ExchangeDriver driver_;
  const int64_t target_;
  net::Envelope out_;
  bool diverged_ = false;
  bool finished_;
  uint64_t duplicate_requests_ = 0;
  net::Reject reject_;
  Clock::time_point finished_at_{};
  std::vector<int> unmet_;
  ProgressWatch watch_;
  Clock::time_point last_readmit_{};
  int64_t last_merges_ = 0;
  FinishWave wave_;
  ProgressGate gate_;
  Clock::time_point last_hold_log_{};
  const net::Transport::Handler handler_;
  std::set<int> gone_;  // neighbours that said "left"
  Clock::time_point stepping_since_{};
  int64_t alone_steps_ = 0;  // local steps past the staleness bound, with no partner left
  int64_t offer_interval_ms_ = 10;
  MergePace pace_;
  // The sequence number and send time of the last offer, for its round trip (pace_).
  std::optional<std::pair<uint64_t, int64_t>> offer_sent_;
  Clock::time_point last_pace_log_{};
  Clock::time_point next_offer_at_{}, last_offer_at_{};
  // The compute time of local steps taken inside the handler (DADAO's catch-up events).
  CatchUpCharge charge_;
};

}  // namespace starling::node
