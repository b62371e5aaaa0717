// starlingd's loop for the pairwise diffusion of topology inference (--algorithm
// pairwise-diffusion; algorithms/pairwise/pairwise_diffusion.h,
// docs/how-to/topology-inference.md). The simulator's model (node/sim/pairwise_inference_sim.h)
// with real clocks and messages:
//
// - Ticks: each node ticks on its own clock (TickClock: exponential gaps of mean --tick-ms, or
//   every --tick-ms with --tick-fixed 1; seeded from the node's seed), scheduled from the due
//   time of the previous tick, so a late loop turn does not slow the clock down (a node more than
//   64 mean gaps behind restarts its schedule from now and counts the ticks it skipped).
// - A6's order at a tick: the exchange the algorithm's coin asked for at the previous tick
//   first, then the decay and noise (LocalStep). In a daemon the exchange is a round trip on the
//   ExchangeDriver (partner uniform among the available neighbours), so the tick is held open
//   until the offer is resolved (reply merged, BUSY, timed out, or given up for a crossed
//   request), and LocalStep runs then. An offer that cannot start (no partner, or the driver
//   backing off after a BUSY or a time-out) does not hold the tick: the node decays alone and
//   tries again at its next tick (the coin stays set).
// - Asynchrony: while its own offer is in flight a node still serves requests (Respond). Every
//   merge is additive from the two snapshots of that exchange (y_i += mix (S_j - S_i) on one side,
//   y_j += mix (S_i - S_j) on the other), so the sum of states is conserved in any interleaving,
//   and nodes never wait on each other (a node that answered BUSY to anything but a crossed
//   request would turn every tick into a chain of waits). A crossed request (both sides offered to
//   each other) follows the driver's rule: the lower id answers BUSY, the higher one abandons its
//   own offer and serves.
// - Samples: after each change of its state (a tick, with the merge it waited for; an exchange it
//   served; a late reply merged) the node adds (seq, its clock, y) to a TimedSampleBatcher and
//   publishes due batches on its telemetry socket (timed_sample_telemetry.h). The clock is the
//   wall clock read once at start plus the steady clock since: monotone, and comparable across
//   hosts to NTP's accuracy.
// - End: after --iterations ticks the node stops ticking and stays up as a passive partner,
//   serving (and publishing the samples of) its neighbours' exchanges, until every node has done
//   its ticks (FinishWave, as pairwise_node.h) or --linger-s; then it says "left".
//
// No checkpoints (--resume and --checkpoint are refused). No local objective, no compute delay.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "algorithms/pairwise/pairwise_diffusion.h"
#include "net/codec.h"
#include "net/transport.h"
#include "node/daemon/finish_wave.h"
#include "node/daemon/node_runtime.h"
#include "node/daemon/stamp_clock.h"
#include "node/drivers/exchange_driver.h"
#include "node/drivers/exchange_wire.h"
#include "node/drivers/tick_clock.h"
#include "node/drivers/timed_sample_telemetry.h"

namespace starling::node {

class PairwiseDiffusionNode : public NodeLoop {
 public:
  // `runtime` is started and outlives this object. Throws std::invalid_argument for a bad
  // parameter, --resume or --checkpoint.
  explicit PairwiseDiffusionNode(NodeRuntime* runtime);

  int Run() override;

  // Samples this node published and ticks it skipped for running late, for its exit line.
  int64_t samples() const { return samples_.next_seq(); }

 private:
  void OnMessage(int32_t peer, const net::Envelope& e);
  void OnBye(int32_t peer, const std::string& text);
  void Send(const ExchangeMessage& m);
  // Until one neighbour is met (both connections work). An exit code, or -1.
  int WaitForANeighbour();
  // Starts a tick that is due: the exchange the coin asked for, or at once the local step.
  void MaybeTick(Clock::time_point now);
  // A tick held open by its exchange whose offer is resolved: the local step now.
  void MaybeEndTick();
  // A sample for every change of the state since the last one (one per event, not per change
  // inside it: a merge and the tick it completes are one sample, as in the simulator).
  void SampleIfChanged();
  void PublishSamples(bool force);
  void ReadmitLiveNeighbours(Clock::time_point now);
  void Finish();
  bool Done(Clock::time_point now) const;
  void Leave();
  void Report(bool force);
  int64_t NowMs() const { return Millis(Clock::now() - rt_.start()); }

  NodeRuntime& rt_;
  const int id_;
  const algorithms::NodeSetup& me_;
  const algorithms::PairwiseOptions pairwise_;
  const algorithms::PairwiseDiffusionParams params_;
  std::unique_ptr<algorithms::PairwiseDiffusion> algorithm_;
  ExchangeWire wire_;
  ExchangeDriver driver_;
  TickClock clock_;
  TimedSampleBatcher samples_;
  const int64_t target_;
  const StampClock stamps_;  // this node's clock (see the header)
  net::Envelope out_;
  net::Reject reject_;
  const net::Transport::Handler handler_;
  FinishWave wave_;
  std::set<int> gone_;  // neighbours that said "left"
  bool finished_ = false;
  bool tick_open_ = false;  // a tick waits for its exchange
  Clock::time_point next_tick_{}, finished_at_{}, last_readmit_{};
  int64_t sampled_changes_ = -1;
  int64_t ticks_ = 0, ticks_alone_ = 0, ticks_skipped_ = 0, duplicate_requests_ = 0;
};

}  // namespace starling::node
