#include "node/daemon/pairwise_node.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>
#include <optional>

namespace starling::node {

namespace {

// The BYE of a node that leaves after the end phase (see the header): gone for good.
constexpr char kLeftBye[] = "left";

std::unique_ptr<algorithms::PairwiseAlgorithm> ResumedAlgorithm(
    NodeRuntime* rt, std::unique_ptr<algorithms::PairwiseAlgorithm> algorithm) {
  if (rt->Resume([&](const Checkpoint& c) { algorithm->LoadState(c.state); })) {
    spdlog::info("node {} resumed from {} after {} local steps", rt->id(),
                 rt->options().checkpoint_file, algorithm->counters().local_steps);
  }
  return algorithm;
}

// --merge-pace: the shortest bound of a wait for merges before a local step (the bound follows
// the exchanges' round trip above it, MergePace). A round trip of the demo's 63 KB CURVE
// exchange takes a few ms on the 2-core machine.
constexpr int64_t kPaceWaitMs = 25;
// The longest sleep of one poll in a paced wait, which otherwise lasts until a message, the
// moment the wait becomes overdue (MergePace::Overdue: the node then offers to fresh partners),
// the pace's time-out or the driver's next timer. A fixed 5 ms poll would wake each waiting node
// up to 200 times a second for nothing and send its overdue offers on the next tick, up to 5 ms
// late (2.5 ms on average after a quiet wait), while the cores idle (docs/results/demo.md). The
// cap only bounds how late the loop's other turns (telemetry, heartbeats) can be
// when a large model's wait bound is long.
constexpr int64_t kPacedPollMs = 50;

// --progress-window: -1 the automatic window, 0 none (a window no run reaches), else as given.
int64_t GateWindow(int64_t option, int64_t budget, int local_steps, const topology::Graph& graph) {
  if (option < 0) return ProgressGate::WindowFor(budget, local_steps, graph.Diameter());
  return option == 0 ? std::numeric_limits<int64_t>::max() / 8 : option;
}

ExchangeTiming TimingFor(const DaemonOptions& options) {
  ExchangeTiming timing;
  timing.reply_timeout_ms = options.exchange_timeout_ms;
  // A new life of this node numbers its exchanges above its previous life's, so that its
  // neighbours do not take its requests for duplicates (ExchangeDriver::DuplicateRequest).
  timing.sequence_offset =
      (static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count()) &
       0xffffffULL)
      << 14;
  return timing;
}

}  // namespace

PairwiseNode::PairwiseNode(NodeRuntime* runtime)
    : PairwiseNode(runtime,
                   algorithms::MakePairwiseAlgorithm(
                       PairwiseOptionsFor(runtime->config(), runtime->setup()), runtime->me())) {}

PairwiseNode::PairwiseNode(NodeRuntime* runtime,
                           std::unique_ptr<algorithms::PairwiseAlgorithm> algorithm)
    : rt_(*runtime),
      id_(runtime->id()),
      me_(runtime->me()),
      pairwise_(PairwiseOptionsFor(runtime->config(), runtime->setup())),
      algorithm_(ResumedAlgorithm(runtime, std::move(algorithm))),
      wire_(
          pairwise_, runtime->setup().dim,
          algorithms::PairwiseMessageSize(pairwise_, runtime->setup().dim) / runtime->setup().dim),
      driver_(algorithm_.get(), id_, me_.neighbors, me_.seed ^ 0x5eed5eedULL,
              TimingFor(runtime->options())),
      target_(runtime->config().iterations),
      finished_(target_ <= 0),
      watch_(runtime->options().wait_log_seconds, runtime->options().give_up_seconds),
      wave_(runtime->setup().graph, id_),
      gate_(GateWindow(runtime->options().progress_window, target_, pairwise_.local_steps,
                       runtime->setup().graph)),
      handler_([this](int32_t peer, const net::Envelope& e) {
        // The computations a message makes the algorithm do are owed (catch_up_charge.h).
        if (charge_.active()) {
          charge_.HandlerBegins(algorithm_->computations(), Clock::now());
        }
        OnMessage(peer, e);
        if (charge_.active()) charge_.HandlerEnds(algorithm_->computations(), Clock::now());
      }),
      // The ceiling of a paced wait grows with the exchange's size as its offer's time-out.
      pace_(algorithm_->merge_pace(), kPaceWaitMs,
            driver_.timing().TransferMs(static_cast<uint64_t>(algorithms::PairwiseMessageSize(
                                            pairwise_, runtime->setup().dim)) *
                                        sizeof(double))),
      charge_(runtime->options().compute_delay_ms, runtime->slow_factor()) {
  rt_.set_checkpoint_steps(algorithm_->counters().local_steps);
  // Vectors the merge refuses (NaN/Inf) are counted and logged with the transport's
  // other rejects, naming the sender.
  driver_.SetRejectSink(
      [this](int peer, const net::Reject& reject) { rt_.transport().ReportReject(peer, reject); });
  driver_.SetVectorsChecked(wire_.ChecksValues());
}

int PairwiseNode::Run() {
  finished_at_ = Clock::now();
  stepping_since_ = finished_at_;
  // A budget of 0, or a node resumed from a checkpoint written after its last step.
  if (finished_ || algorithm_->counters().local_steps >= target_) Finish();
  if (rt_.options().progress_window != 0 && !me_.neighbors.empty() && !finished_) {
    const int diameter = rt_.setup().graph.Diameter();
    spdlog::info(
        "node {} stays within {} local steps of each neighbour still stepping (--progress-window "
        "{}), so the network within {} x {} of its slowest node (graph diameter {})",
        id_, gate_.window(), rt_.options().progress_window < 0 ? "auto" : "as given", diameter,
        gate_.window(), diameter);
  }
  NoteUnmet();
  if (int code = WaitForANeighbour(); code >= 0) return code;
  const Clock::time_point start = Clock::now();
  stepping_since_ = start;
  if (!finished_ && gate_.AnnounceDue(algorithm_->counters().local_steps)) {
    rt_.transport().SayGoodbye(ProgressGate::Text(algorithm_->counters().local_steps));
  }
  watch_.Start(start);
  {
    const auto c = algorithm_->counters();
    pace_.Start(c.local_steps, c.exchanges_initiated + c.exchanges_served);
  }
  last_readmit_ = start;
  Snapshot(false);  // the starting point (or the resumed model)
  while (!rt_.stop_requested()) {
    if (int code = CheckBeforeStep(); code >= 0) return code;
    const bool held = !finished_ && ((algorithm_->ShouldWait() && driver_.has_partners()) ||
                                     HeldBack(Clock::now()));
    const bool paced = !finished_ && !held && Paced(Clock::now());
    const bool wait = held || paced;
    const bool idle = !finished_ && !wait && !algorithm_->StepReady();
    // A catch-up charge left over (Pay is bounded) is paid before the next step.
    if (!finished_ && !wait && !idle && !charge_.owes()) StepAndOffer();
    if (finished_) OfferInEndPhase(Clock::now());
    PollAndFollowUp(wait, idle, paced);
    if (charge_.owes()) {  // before the next step; serving meanwhile
      rt_.reporter().AddComputeSeconds(charge_.Pay(
          [this](Clock::time_point until) { rt_.ServeUntil(until, handler_); },
          [this](const ExchangeMessage& m) { Send(m); }, [this] { return rt_.stop_requested(); },
          std::chrono::milliseconds(driver_.last_reply_timeout_ms())));
    }
    ReadmitLiveNeighbours();
    rt_.EndTurn();
    const auto c = algorithm_->counters();
    rt_.reporter().SetDecodeFailures(c.decode_failures);
    Report(finished_, false);
    const Clock::time_point now = Clock::now();
    if (int code = WatchExchanges(now, wait, c); code >= 0) return code;
    if (Done(now)) break;
  }
  Leave();
  return rt_.stop_requested() ? kExitOk : Outcome();
}

void PairwiseNode::OnMessage(int32_t peer, const net::Envelope& e) {
  if (e.type != net::MessageType::kBye) {
    gone_.erase(peer);  // it is back (a new life of it)
    driver_.SetAvailable(peer, true);
  }
  switch (e.type) {
    case net::MessageType::kXchgReq:
      OnRequest(peer, e);
      break;
    case net::MessageType::kXchgRep:
      OnReply(peer, e);
      break;
    case net::MessageType::kBusy:
      driver_.OnBusy(peer, e.exchange_seq, NowMs());
      break;
    case net::MessageType::kBye:
      OnBye(peer, e.text);
      break;
    default:
      rt_.CountProtocolDrop();
      break;
  }
}

void PairwiseNode::OnBye(int32_t peer, const std::string& text) {
  if (const std::optional<int64_t> steps = ProgressGate::Parse(text)) {
    gate_.Note(peer, *steps, NowMs());  // not a goodbye: its count of local steps
    return;
  }
  if (text != kLeftBye && !wave_.ParseBye(text)) {
    rt_.NoteBye(peer, text);  // gave up, stopped, diverged, refused: the runtime's business
    driver_.SetAvailable(peer, false);
    return;
  }
  gate_.Release(peer);
  if (const std::optional<int> level = wave_.ParseBye(text)) {
    // Done with its budget, still up as a passive partner: it stays available.
    rt_.NoteBye(peer, "finished");
    if (wave_.NoteLevel(peer, *level)) SayLevel();
    return;
  }
  driver_.SetAvailable(peer, false);  // "left"
  gone_.insert(peer);
  if (wave_.NoteGone(peer)) SayLevel();
}

bool PairwiseNode::HeldBack(Clock::time_point now) {
  const int64_t steps = algorithm_->counters().local_steps;
  const auto live = [&](int j) { return !Gone(j) && rt_.HeardRecently(j, now); };
  const std::optional<int> holder = gate_.Holder(steps, NowMs(), live);
  if (holder && Seconds(now - last_hold_log_) >= rt_.options().wait_log_seconds) {
    last_hold_log_ = now;
    spdlog::info("node {} waits at {} local steps for {}, more than {} steps behind", id_, steps,
                 rt_.Describe(*holder), gate_.window());
  }
  return holder.has_value();
}

bool PairwiseNode::Paced(Clock::time_point now) {
  if (!pace_.active() || !driver_.has_partners()) return false;
  const auto c = algorithm_->counters();
  const bool held = pace_.Holds(c.local_steps, c.exchanges_initiated + c.exchanges_served, NowMs());
  if (pace_.timed_out() && Seconds(now - last_pace_log_) >= rt_.options().wait_log_seconds) {
    last_pace_log_ = now;
    spdlog::info(
        "node {} steps on at {} local steps after waiting {} ms for merges (--merge-pace {}): {} "
        "pace time-outs so far",
        id_, c.local_steps, pace_.max_wait_ms(), pace_.rate(), pace_.timeouts());
  }
  return held;
}

void PairwiseNode::SayLevel() { rt_.transport().SayGoodbye(wave_.ByeText()); }

void PairwiseNode::OnRequest(int32_t peer, const net::Envelope& e) {
  const std::optional<Eigen::Map<const Vec>> incoming = Collect(peer, e, /*request=*/true);
  if (!incoming) return;
  // A finished node serves too (the end phase, see the header): the average keeps the sum.
  if (driver_.DuplicateRequest(peer, e.exchange_seq)) {
    ++duplicate_requests_;  // served already: answering again would merge twice
  } else {
    Send(driver_.OnRequest(peer, e.exchange_seq, *incoming, NowMs()));
  }
}

void PairwiseNode::OnReply(int32_t peer, const net::Envelope& e) {
  const std::optional<Eigen::Map<const Vec>> incoming = Collect(peer, e, /*request=*/false);
  if (!incoming || !driver_.OnReply(peer, e.exchange_seq, *incoming)) return;
  if (offer_sent_ && offer_sent_->first == e.exchange_seq) {
    pace_.NoteRoundTrip(NowMs() - offer_sent_->second);
    offer_sent_.reset();
  }
}

std::optional<Eigen::Map<const Vec>> PairwiseNode::Collect(int32_t peer, const net::Envelope& e,
                                                           bool request) {
  std::optional<Eigen::Map<const Vec>> incoming = wire_.Collect(e, request, &reject_);
  if (!incoming) rt_.transport().ReportReject(peer, reject_);
  return incoming;
}

void PairwiseNode::Send(const ExchangeMessage& m) {
  // A refused request (reported by the driver) gets no answer, as a malformed one gets none.
  if (m.kind == ExchangeMessage::Kind::kRefused) return;
  // The model, not the payload: a compressed message holds codes or a sparse difference.
  if (m.payload && rt_.ModelDiverged(algorithm_->Model())) {
    diverged_ = true;
    return;
  }
  // Steps taken in a handler and not yet charged: the message leaves once they are (Run).
  if (charge_.active() && charge_.Holds(algorithm_->computations())) {
    charge_.Defer(m);
    return;
  }
  // The keepalive is the algorithm's message itself when the payload views it (plain
  // exchanges): ZeroMQ then sends the snapshot without a copy.
  const std::shared_ptr<const void> keepalive = wire_.Fill(m, &out_);
  rt_.Send(m.peer, out_, keepalive);
  if (m.kind == ExchangeMessage::Kind::kRequest) offer_sent_.emplace(m.seq, NowMs());
}

void PairwiseNode::Finish() {
  finished_ = true;
  rt_.MarkFinished();
  finished_at_ = Clock::now();
  algorithm_->EndLocalSteps();
  // The end phase's offers come at the node's own cadence while stepping (its time per H local
  // steps, at least 1 ms): a passive node uses no more of the CPU than it did while stepping.
  const int64_t steps = algorithm_->counters().local_steps;
  if (steps > 0) {
    offer_interval_ms_ = std::clamp<int64_t>(
        Millis(finished_at_ - stepping_since_) * pairwise_.local_steps / steps, 1, 1000);
  }
  next_offer_at_ = finished_at_;
  if (wave_.SetFinished()) SayLevel();
  const auto c = algorithm_->counters();
  const int64_t merges = c.exchanges_initiated + c.exchanges_served;
  spdlog::info(
      "node {} finished after {} local steps: its step budget is done; it stays up as a passive "
      "partner (averaging offers every {} ms) until every node has done its budget, at most "
      "{} s",
      id_, steps, offer_interval_ms_, rt_.options().linger_seconds);
  // The mixing of the run so far, before the end phase's merges (docs/results/demo.md).
  spdlog::info(
      "node {} stepping: {} merges ({} started, {} served) in {} local steps, {:.3f} merges per "
      "local step; --merge-pace {}: waited before {} steps, {} ms in all, {} pace time-outs; "
      "exchange round trip {:.1f} ms (smoothed), wait bound {} ms",
      id_, merges, c.exchanges_initiated, c.exchanges_served, steps,
      steps > 0 ? static_cast<double>(merges) / static_cast<double>(steps) : 0.0, pace_.rate(),
      pace_.waits(), pace_.waited_ms(), pace_.timeouts(), pace_.smoothed_round_trip_ms(),
      pace_.max_wait_ms());
  // A metrics line at the moment of finishing: the next periodic one would come up to a
  // telemetry period later and count the lingering since as time blocked in the run
  // (bench/run.sh overhead reads the first line with all steps done).
  Report(true, true);
}

// Start-up. Daemons launched together come up seconds apart (each loads its data), so a
// neighbour is chosen as a partner only once both connections work: its HELLO reached us and
// its answer to ours came back (a DEALER retries a neighbour that was not up yet with a growing
// interval, so our offer could sit in its queue for seconds while the other neighbour was
// ready). No local step is taken before one neighbour is met (after 2H steps the node would
// wait anyway); that wait is start-up, not communication (startup_s, outside blocked_s;
// bench/run.sh overhead).
// A node resumed from a checkpoint is a new life that its neighbours met long ago: they do not
// greet it again (their HELLO went to its previous life), so the acceptance of its own HELLO and
// their messages since (heartbeats) show both directions working. Without this a resumed node
// waited for ever while its neighbours ran on.
bool PairwiseNode::Met(int peer) const {
  if (rt_.Met(peer)) return true;
  return rt_.options().resume && rt_.transport().peer(peer).accepted_us &&
         rt_.HeardRecently(peer, Clock::now());
}

void PairwiseNode::NoteUnmet() {
  for (int j : me_.neighbors) {
    if (!Met(j)) {
      unmet_.push_back(j);
      driver_.SetAvailable(j, false);
    }
  }
}

void PairwiseNode::AdmitMet() {
  for (auto it = unmet_.begin(); it != unmet_.end();) {
    if (!Met(*it)) {
      ++it;
      continue;
    }
    if (!Gone(*it)) driver_.SetAvailable(*it, true);
    // Up, and at 0 steps until it says its count: the gate holds for it from now on rather than
    // ignoring it until its first count arrives.
    gate_.Note(*it, 0, NowMs());
    it = unmet_.erase(it);
  }
}

std::string PairwiseNode::UnmetList() const {
  std::string list;
  for (int j : unmet_) list += (list.empty() ? "" : ", ") + rt_.Describe(j);
  return list;
}

void PairwiseNode::OfferInEndPhase(Clock::time_point now) {
  if (wave_.AllFinished() || rt_.LingerOver(finished_at_, now) || now < next_offer_at_) return;
  next_offer_at_ = now + std::chrono::milliseconds(offer_interval_ms_);
  if (auto m = charge_.Tick(&driver_, NowMs())) {
    Send(*m);
    last_offer_at_ = now;
  }
}

int PairwiseNode::WaitForANeighbour() {
  // The first report's local objective is a full pass over the shard (up to a second with 16
  // daemons loading data on 2 cores). Done before the first Poll: until it acknowledges their
  // HELLOs no neighbour has met this node, so none waits on it meanwhile, while its socket is
  // already bound (a neighbour's DEALER does not back off into a longer reconnect interval).
  Report(false, true);
  const Clock::time_point t0 = Clock::now();
  const double report0 = rt_.reporter().report_seconds();
  ProgressWatch watch(rt_.options().wait_log_seconds, rt_.options().give_up_seconds);
  watch.Start(t0);  // no progress until a neighbour is met: the deadlines count from t0
  // Neighbours that have done their budget count (they are still up, as passive partners): a
  // node that comes up late does its steps and merges with them.
  // Every neighbour, within --start-wait-s: a node that starts with some of its neighbours runs
  // ahead on its own data while the others load theirs (on a busy machine, seconds), which the
  // average model does not forget in a short run. The count said meanwhile ("0 steps", every
  // second, within the gate's staleness) holds the neighbours already stepping at the gate's
  // window until this node steps too.
  const double start_wait = rt_.options().start_wait_seconds;
  Clock::time_point last_count = t0;
  bool logged_partial = false;
  while (!finished_ && !rt_.stop_requested() && !unmet_.empty() &&
         (unmet_.size() == me_.neighbors.size() || Seconds(Clock::now() - t0) < start_wait)) {
    if (int code = rt_.CheckPeers(); code >= 0) return code;
    const Clock::time_point now = Clock::now();
    if (unmet_.size() < me_.neighbors.size() && !logged_partial) {
      logged_partial = true;
      spdlog::info(
          "node {} waits up to {:g} s (--start-wait-s) for every neighbour before its first "
          "step: not up yet: {}",
          id_, start_wait, UnmetList());
    }
    if (Seconds(now - last_count) >= 1.0) {
      last_count = now;
      rt_.transport().SayGoodbye(ProgressGate::Text(algorithm_->counters().local_steps));
    }
    if (watch.GiveUpDue(now)) {
      spdlog::error("giving up after {} s: no neighbour came up ({})",
                    rt_.options().give_up_seconds, UnmetList());
      return rt_.GiveUp("gave up waiting for a neighbour");
    }
    if (watch.WaitLogDue(now)) {
      spdlog::warn("waiting {:.0f} s for a neighbour to come up: {}", Seconds(now - t0),
                   UnmetList());
    }
    rt_.transport().Poll(std::chrono::milliseconds(5), handler_);
    AdmitMet();
    rt_.EndTurn();
    Report(false, false);
  }
  if (!unmet_.empty() && unmet_.size() < me_.neighbors.size()) {
    spdlog::warn(
        "node {} starts with {} of {} neighbours after {:g} s (--start-wait-s): not up: {}", id_,
        me_.neighbors.size() - unmet_.size(), me_.neighbors.size(), start_wait, UnmetList());
  }
  rt_.reporter().SetStartupSeconds(Seconds(Clock::now() - t0) -
                                   (rt_.reporter().report_seconds() - report0));
  return -1;
}

int PairwiseNode::CheckBeforeStep() {
  if (int code = rt_.CheckPeers(); code >= 0) return code;
  if (diverged_) {
    return rt_.StopDiverged("after " + std::to_string(algorithm_->counters().local_steps) +
                            " local steps");
  }
  return -1;
}

void PairwiseNode::StepAndOffer() {
  // Called only when the staleness bound does not hold the node: if it says wait, no partner is
  // left, and the step is taken alone.
  if (algorithm_->ShouldWait()) ++alone_steps_;
  const Clock::time_point t0 = Clock::now();
  algorithm_->LocalStep();
  rt_.SimulatedCompute(t0, handler_);
  rt_.reporter().AddComputeSeconds(Seconds(Clock::now() - t0));
  MaybeCheckpoint(false);
  Snapshot(false);
  const int64_t steps = algorithm_->counters().local_steps;
  if (steps < target_ && gate_.AnnounceDue(steps)) {
    rt_.transport().SayGoodbye(ProgressGate::Text(steps));  // a count, not a goodbye
  }
  if (steps >= target_) {
    Finish();
  } else if (auto m = charge_.Tick(&driver_, NowMs())) {
    Send(*m);
  }
}

void PairwiseNode::PollAndFollowUp(bool wait, bool idle, bool paced) {
  const Clock::time_point poll_start = Clock::now();
  // A wait for merges (--merge-pace) ends with a message (the poll returns as one arrives), at
  // the pace's time-out, or when the driver has an offer to make or abandon; it turns overdue
  // (paced offers) at half its bound. The poll sleeps until the first of these, but at most
  // kPacedPollMs (see there). Polling 1 ms at a time cost the demo's daemons more CPU than the
  // merges themselves on the loaded 2-core machine.
  int64_t timeout_ms = wait || idle ? 1 : 0;
  if (paced) {
    const int64_t now_ms = NowMs();
    timeout_ms = std::min(kPacedPollMs, pace_.RemainingMs(now_ms));
    if (const std::optional<int64_t> overdue = pace_.MsUntilOverdue(now_ms)) {
      if (*overdue > 0) timeout_ms = std::min(timeout_ms, *overdue);
    }
    if (const std::optional<int64_t> timer =
            driver_.MsUntilNextTimer(now_ms, pace_.Overdue(now_ms))) {
      timeout_ms = std::min(timeout_ms, *timer);
    }
  }
  if (finished_) {  // until the next end-phase offer is due, at most 10 ms
    timeout_ms = std::clamp<int64_t>(Millis(next_offer_at_ - poll_start), 0, 10);
    if (wave_.AllFinished()) timeout_ms = 10;
  }
  rt_.transport().Poll(std::chrono::milliseconds(timeout_ms), handler_);
  if (wait) rt_.reporter().AddWaitSeconds(Seconds(Clock::now() - poll_start));
  if (wait) {  // lets a timed-out offer go; an overdue paced node offers again (MergePace)
    const int64_t now_ms = NowMs();
    if (auto m = charge_.Tick(&driver_, now_ms, paced && pace_.Overdue(now_ms))) Send(*m);
  }
}

// A neighbour excluded after repeated time-outs is taken back while it is alive: any message
// from it (heartbeats included) within the last two heartbeat periods. A SIGSTOPped or dead
// node sends none and stays out; one that returns is back within a second. With no partner
// left this is checked every turn: a node alone would otherwise race through its local
// steps, although its neighbours are only on a lossy link, not gone.
void PairwiseNode::ReadmitLiveNeighbours() {
  if (!unmet_.empty()) AdmitMet();  // a neighbour that has just come up
  if (!driver_.has_partners() || Millis(Clock::now() - last_readmit_) >= 500) {
    last_readmit_ = Clock::now();
    for (int j : me_.neighbors) {
      if (!Gone(j) && rt_.HeardRecently(j, last_readmit_)) {
        driver_.SetAvailable(j, true);
      }
    }
  }
}

int PairwiseNode::WatchExchanges(Clock::time_point now, bool wait,
                                 const algorithms::PairwiseCounters& c) {
  const int64_t merges = c.exchanges_initiated + c.exchanges_served;
  if (!wait || merges != last_merges_ || finished_) watch_.Progressed(now);
  last_merges_ = merges;
  if (watch_.WaitLogDue(now)) {
    const auto peer = driver_.pending_peer();
    spdlog::warn("waiting {:.0f} s for an exchange after {} local steps{}{}",
                 watch_.SecondsSinceProgress(now), c.local_steps,
                 peer ? ": offer outstanding to " : "", peer ? rt_.Describe(*peer) : "");
  }
  if (watch_.GiveUpDue(now)) {
    spdlog::error("giving up after {} s without an exchange ({} local steps done)",
                  rt_.options().give_up_seconds, c.local_steps);
    return rt_.GiveUp("gave up waiting for an exchange");
  }
  return -1;
}

bool PairwiseNode::Done(Clock::time_point now) const {
  if (!finished_) return false;
  // Stay until every node has done its budget and the neighbours know it (none of them will
  // offer again), or the linger is over; but not past an outstanding offer's deadline: a reply
  // to it must still be merged for the sum of models to be conserved. No offer is made once
  // every node has finished or the linger is over, so the deadline is checked here.
  const bool quiet = wave_.AllFinished() && wave_.NeighboursAllFinished();
  const bool lingered = rt_.LingerOver(finished_at_, now);
  const Clock::time_point offered = std::max(last_offer_at_, finished_at_);
  const bool offer_open =
      driver_.offer_outstanding() && Millis(now - offered) < driver_.last_reply_timeout_ms();
  return (quiet || lingered || me_.neighbors.empty()) && !offer_open;
}

void PairwiseNode::Leave() {
  if (rt_.stop_requested()) {
    const int64_t steps = algorithm_->counters().local_steps;
    rt_.StopOnSignal(
        "after " + std::to_string(steps) + " of " + std::to_string(target_) + " local steps", steps,
        [&](Checkpoint* c) { return algorithm_->SaveState(&c->state); });
  } else {
    if (!wave_.AllFinished()) {
      spdlog::warn("node {} leaves after its --linger-s {} s: some node has not done its budget",
                   id_, rt_.options().linger_seconds);
    }
    rt_.transport().SayGoodbye(kLeftBye);
  }
  if (driver_.offer_outstanding()) {
    spdlog::warn(
        "leaving with an exchange offer to {} unanswered: if it was served, the sum of "
        "models is off by half the difference of the two snapshots",
        rt_.Describe(*driver_.pending_peer()));
  }
  const auto c = algorithm_->counters();
  rt_.reporter().SetDecodeFailures(c.decode_failures);
  spdlog::info(
      "node {}: {} exchanges started, {} served, {} aborted, {} timeouts, {} late "
      "replies merged, {} stale replies, {} duplicate requests dropped; {} payload bits "
      "sent, {} failed decodings or copy checks; {} pace time-outs",
      id_, c.exchanges_initiated, c.exchanges_served, c.exchanges_aborted, driver_.timeouts(),
      driver_.late_replies_merged(), driver_.stale_dropped(), duplicate_requests_, c.bits_sent,
      c.decode_failures, pace_.timeouts());
  if (charge_.steps_charged() > 0) {
    spdlog::info(
        "node {}: {} local steps or solves taken in the message handler, charged {:.3f} s of "
        "compute; {} messages waited for the charge",
        id_, charge_.steps_charged(), charge_.seconds_charged(), charge_.messages_deferred());
  }
  Snapshot(true);  // the final model, after the end phase's merges
  rt_.WriteFinalModel(algorithm_->ReportedModel());
  Report(finished_, true);
}

int PairwiseNode::Outcome() const {
  const auto c = algorithm_->counters();
  const bool few_steps = c.local_steps < 0.9 * static_cast<double>(target_);
  const bool alone = alone_steps_ > 0.1 * static_cast<double>(target_);
  if (!few_steps && !alone) return kExitOk;
  spdlog::error(
      "node {}: run incomplete: {} of {} local steps, {} of them alone (no neighbour left to "
      "merge with); {} merges",
      id_, c.local_steps, target_, alone_steps_, c.exchanges_initiated + c.exchanges_served);
  return kExitIncomplete;
}

void PairwiseNode::MaybeCheckpoint(bool force) {
  rt_.MaybeCheckpoint(
      algorithm_->counters().local_steps,
      [&](Checkpoint* c) { return algorithm_->SaveState(&c->state); }, force);
}

void PairwiseNode::Snapshot(bool final) {
  const auto c = algorithm_->counters();
  rt_.Snapshot(c.local_steps, algorithm_->ReportedModel(),
               c.exchanges_initiated + c.exchanges_served, final);
}

void PairwiseNode::Report(bool final, bool force) {
  const auto c = algorithm_->counters();
  rt_.reporter().Report(c.local_steps, algorithm_->ReportedModel(),
                        c.exchanges_initiated + c.exchanges_served, final, force);
}

}  // namespace starling::node
