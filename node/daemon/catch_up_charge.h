// The simulated compute time (--compute-delay-ms, and the --slow-node factor) of the local steps
// an algorithm takes inside a message handler: DADAO's catch-up gradient events (dadao.h
// "Catching up": a node that hears a clock ahead takes its own gradient events up to it, in
// Respond or CompleteExchange). NodeRuntime::SimulatedCompute charges only the steps the main
// loop takes (LocalStep); without this a straggler pulled forward by its neighbours computed
// most of its events for free (compute 9.6 s instead of ~38 s at k = 8,
// docs/results/stragglers.md).
//
// The charge: a handler call that took n local steps and lasted h (measured) owes
//   n x compute_delay + (factor - 1) x (h + n x compute_delay),
// the same as n steps of the main loop (SimulatedCompute: the delay, then (factor - 1) x the
// step's measured time). It is not paid inside the handler (serving there would re-enter it) but
// from the main loop after its poll (Pay), before the next local step, serving the neighbours
// meanwhile as SimulatedCompute does, a bounded time per loop turn; no local step and no new
// offer (Tick) until it is paid. Until it is paid, every outgoing exchange message waits
// (Holds, Defer), in order: the replies that carry the caught-up state leave only once its
// computation is "done", so the neighbours wait for the straggler's events as they would for a
// device computing them. A handler's own measured time is also in the main loop's step time when
// it ran during SimulatedCompute's serving, so its (factor - 1) share is counted twice there: a
// fraction of a millisecond per catch-up, far below the delay.
//
// Inactive (every call does nothing, nothing waits) without --compute-delay-ms and --slow-node:
// runs without them are unchanged. Algorithms that take no step in a handler (every pairwise
// method but DADAO) owe nothing. Single-threaded, as the node loop.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>

#include "node/daemon/daemon_clock.h"
#include "node/drivers/exchange_driver.h"

namespace starling::node {

class CatchUpCharge {
 public:
  // compute_delay_ms >= 0; slow_factor >= 1 (this node's --slow-node factor).
  CatchUpCharge(double compute_delay_ms, double slow_factor);

  bool active() const { return active_; }

  // Around one call of the message handler: the algorithm's count of local steps before and
  // after it. The steps between are owed, with the call's duration.
  void HandlerBegins(int64_t steps, Clock::time_point now);
  void HandlerEnds(int64_t steps, Clock::time_point now);

  // An outgoing exchange message must wait: time is owed, a message already waits, or the
  // handler call under way has taken steps (`steps`: the count now). The caller then Defers it.
  bool Holds(int64_t steps) const;
  void Defer(const ExchangeMessage& m) {
    deferred_.push_back(m);
    ++messages_deferred_;
  }

  bool owes() const { return owed_ > Clock::duration::zero() || !deferred_.empty(); }
  Clock::duration owed() const { return owed_; }

  // Pays what is owed: serve(until) until the debt is paid (again while the handler calls that
  // `serve` makes add to it, each bounded: dadao's skew bound), unless stopped() says so (what
  // is left is then dropped), but for at most `max_serve` in one call: the caller pays the rest
  // on its next loop turn, servicing meanwhile what a long serve would starve (the driver's
  // deadlines, peer checks, checkpoints; PairwiseNode passes the exchange time-out). Once the
  // debt is paid (or dropped), send(m) for each deferred message, in order (Holds is false
  // meanwhile); while some is left they keep waiting. Returns the seconds it took (compute time,
  // for NodeReporter::AddComputeSeconds); 0 if nothing was owed. Time a serve overran its
  // `until` is not counted as paid.
  using ServeUntil = std::function<void(Clock::time_point until)>;
  using SendMessage = std::function<void(const ExchangeMessage& m)>;
  double Pay(const ServeUntil& serve, const SendMessage& send, const std::function<bool()>& stopped,
             Clock::duration max_serve = Clock::duration::max());

  // driver->Tick(now_ms, paced), unless the charge is owed: then nothing, and no new offer is
  // made (nor a timed-out one abandoned) until it is paid. A request made while owed would be
  // deferred (Holds) with its reply deadline already running from the Tick, and the next Tick
  // could abandon it before it was even sent. The owner also takes no local step while owed.
  std::optional<ExchangeMessage> Tick(ExchangeDriver* driver, int64_t now_ms,
                                      bool paced = false) const;

  // Totals: steps charged, their charged time (seconds), messages that waited.
  int64_t steps_charged() const { return steps_charged_; }
  double seconds_charged() const { return seconds_charged_; }
  int64_t messages_deferred() const { return messages_deferred_; }

 private:
  const Clock::duration delay_;
  const double factor_;
  const bool active_;
  bool in_handler_ = false;
  int64_t steps_at_begin_ = 0;
  Clock::time_point begin_{};
  Clock::duration owed_ = Clock::duration::zero();
  std::deque<ExchangeMessage> deferred_;
  int64_t steps_charged_ = 0;
  double seconds_charged_ = 0;
  int64_t messages_deferred_ = 0;
};

}  // namespace starling::node
