#include "node/daemon/pairwise_node.h"

#include <spdlog/spdlog.h>

#include <optional>

namespace starling::node {

namespace {

std::unique_ptr<algorithms::PairwiseAlgorithm> ResumedAlgorithm(
    NodeRuntime* rt, const algorithms::PairwiseOptions& pairwise) {
  auto algorithm = algorithms::MakePairwiseAlgorithm(pairwise, rt->me());
  if (rt->Resume([&](const Checkpoint& c) { algorithm->LoadState(c.state); })) {
    spdlog::info("node {} resumed from {} after {} local steps", rt->id(),
                 rt->options().checkpoint_file, algorithm->counters().local_steps);
  }
  return algorithm;
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
    : rt_(*runtime),
      id_(runtime->id()),
      me_(runtime->me()),
      pairwise_(PairwiseOptionsFor(runtime->config(), runtime->setup())),
      algorithm_(ResumedAlgorithm(runtime, pairwise_)),
      wire_(pairwise_, runtime->setup().dim),
      driver_(algorithm_.get(), id_, me_.neighbors, me_.seed ^ 0x5eed5eedULL,
              TimingFor(runtime->options())),
      target_(runtime->config().iterations),
      finished_(target_ <= 0),
      watch_(runtime->options().wait_log_seconds, runtime->options().give_up_seconds),
      handler_([this](int32_t peer, const net::Envelope& e) { OnMessage(peer, e); }) {
  rt_.set_checkpoint_steps(algorithm_->counters().local_steps);
}

int PairwiseNode::Run() {
  finished_at_ = Clock::now();
  if (finished_) rt_.transport().SayGoodbye("finished");
  NoteUnmet();
  if (int code = WaitForANeighbour(); code >= 0) return code;
  const Clock::time_point start = Clock::now();
  watch_.Start(start);
  last_readmit_ = start;
  while (!rt_.stop_requested()) {
    if (int code = CheckBeforeStep(); code >= 0) return code;
    const bool wait = algorithm_->ShouldWait() && driver_.has_partners();
    if (!finished_ && !wait) StepAndOffer();
    PollAndFollowUp(wait);
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
  return kExitOk;
}

void PairwiseNode::OnMessage(int32_t peer, const net::Envelope& e) {
  if (!rt_.HasFinished(peer)) driver_.SetAvailable(peer, true);
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
      rt_.NoteBye(peer, e.text);
      driver_.SetAvailable(peer, false);
      break;
    default:
      rt_.CountProtocolDrop();
      break;
  }
}

void PairwiseNode::OnRequest(int32_t peer, const net::Envelope& e) {
  const std::optional<Eigen::Map<const Vec>> incoming = Collect(peer, e, /*request=*/true);
  if (!incoming) return;
  // A finished node serves no more requests, so that nodes still running cannot pull the
  // finished ones toward their own shards (on non-i.i.d. data the last node running would
  // otherwise specialize everybody). It still merges replies to its own offers, which the
  // sum of models needs.
  if (driver_.DuplicateRequest(peer, e.exchange_seq)) {
    ++duplicate_requests_;  // served already: answering again would merge twice
  } else if (finished_) {
    Send({ExchangeMessage::Kind::kBusy, peer, e.exchange_seq, nullptr});
  } else {
    Send(driver_.OnRequest(peer, e.exchange_seq, *incoming, NowMs()));
  }
}

void PairwiseNode::OnReply(int32_t peer, const net::Envelope& e) {
  const std::optional<Eigen::Map<const Vec>> incoming = Collect(peer, e, /*request=*/false);
  if (incoming) driver_.OnReply(peer, e.exchange_seq, *incoming);
}

std::optional<Eigen::Map<const Vec>> PairwiseNode::Collect(int32_t peer, const net::Envelope& e,
                                                           bool request) {
  std::optional<Eigen::Map<const Vec>> incoming = wire_.Collect(e, request, &reject_);
  if (!incoming) rt_.transport().ReportReject(peer, reject_);
  return incoming;
}

void PairwiseNode::Send(const ExchangeMessage& m) {
  // The model, not the payload: a compressed message holds codes or a sparse difference.
  if (m.payload && rt_.ModelDiverged(algorithm_->Model())) {
    diverged_ = true;
    return;
  }
  out_.type = m.kind == ExchangeMessage::Kind::kRequest ? net::MessageType::kXchgReq
              : m.kind == ExchangeMessage::Kind::kReply ? net::MessageType::kXchgRep
                                                        : net::MessageType::kBusy;
  out_.exchange_seq = m.seq;
  out_.payloads.clear();
  // The keepalive is the algorithm's message itself when the payload views it (plain
  // exchanges): ZeroMQ then sends the snapshot without a copy (issue 7).
  std::shared_ptr<const void> keepalive;
  if (m.payload) keepalive = wire_.Attach(m.payload, &out_);
  rt_.Send(m.peer, out_, keepalive);
}

void PairwiseNode::Finish(const std::string& why) {
  finished_ = true;
  finished_at_ = Clock::now();
  rt_.transport().SayGoodbye("finished");
  spdlog::info("node {} finished after {} local steps: {}", id_, algorithm_->counters().local_steps,
               why);
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
void PairwiseNode::NoteUnmet() {
  for (int j : me_.neighbors) {
    if (!rt_.Met(j)) {
      unmet_.push_back(j);
      driver_.SetAvailable(j, false);
    }
  }
}

void PairwiseNode::AdmitMet() {
  for (auto it = unmet_.begin(); it != unmet_.end();) {
    if (!rt_.Met(*it)) {
      ++it;
      continue;
    }
    if (!rt_.HasFinished(*it)) driver_.SetAvailable(*it, true);
    it = unmet_.erase(it);
  }
}

std::string PairwiseNode::UnmetList() const {
  std::string list;
  for (int j : unmet_) list += (list.empty() ? "" : ", ") + rt_.Describe(j);
  return list;
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
  while (!finished_ && !rt_.stop_requested() && !unmet_.empty() &&
         unmet_.size() == me_.neighbors.size() && !rt_.AllNeighborsFinished()) {
    if (int code = rt_.CheckPeers(); code >= 0) return code;
    const Clock::time_point now = Clock::now();
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
  const Clock::time_point t0 = Clock::now();
  algorithm_->LocalStep();
  rt_.SimulatedCompute(t0, handler_);
  rt_.reporter().AddComputeSeconds(Seconds(Clock::now() - t0));
  MaybeCheckpoint(false);
  if (algorithm_->counters().local_steps >= target_) {
    Finish("its step budget is done");
  } else if (auto m = driver_.Tick(NowMs())) {
    Send(*m);
  }
}

void PairwiseNode::PollAndFollowUp(bool wait) {
  const Clock::time_point poll_start = Clock::now();
  rt_.transport().Poll(std::chrono::milliseconds(finished_ ? 20 : wait ? 1 : 0), handler_);
  if (wait && !finished_) rt_.reporter().AddWaitSeconds(Seconds(Clock::now() - poll_start));
  if (!finished_ && !driver_.has_partners() && !me_.neighbors.empty() &&
      rt_.AllNeighborsFinished()) {
    // Alone, further local steps would only drift from the network's model.
    Finish("every neighbour has finished");
  }
  if (wait && !finished_) {
    if (auto m = driver_.Tick(NowMs())) Send(*m);  // lets a timed-out offer go
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
      if (!rt_.HasFinished(j) && rt_.HeardRecently(j, last_readmit_)) {
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
  // Linger until the neighbours are done, but not past an outstanding offer's deadline: a
  // reply to it must still be merged for the sum of models to be conserved.
  const bool lingered = rt_.LingerOver(finished_at_, now);
  // The offer was made before finishing, so its deadline is at most one time-out after
  // finished_at; the driver is not ticked after finishing (it would start new exchanges), so
  // the deadline is checked here. Waiting for linger + time-out instead held a node whose
  // request or reply was lost for the whole linger period although its neighbours were done.
  const bool offer_open =
      driver_.offer_outstanding() && Millis(now - finished_at_) < rt_.options().exchange_timeout_ms;
  return finished_ && (rt_.AllNeighborsFinished() || lingered) && !offer_open;
}

void PairwiseNode::Leave() {
  if (rt_.stop_requested()) {
    const int64_t steps = algorithm_->counters().local_steps;
    rt_.StopOnSignal("after " + std::to_string(steps) + " local steps", steps,
                     [&](Checkpoint* c) { return algorithm_->SaveState(&c->state); });
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
      "sent, {} failed decodings or copy checks",
      id_, c.exchanges_initiated, c.exchanges_served, c.exchanges_aborted, driver_.timeouts(),
      driver_.late_replies_merged(), driver_.stale_dropped(), duplicate_requests_, c.bits_sent,
      c.decode_failures);
  rt_.WriteFinalModel(algorithm_->Model());
  Report(finished_, true);
}

void PairwiseNode::MaybeCheckpoint(bool force) {
  rt_.MaybeCheckpoint(
      algorithm_->counters().local_steps,
      [&](Checkpoint* c) { return algorithm_->SaveState(&c->state); }, force);
}

void PairwiseNode::Report(bool final, bool force) {
  const auto c = algorithm_->counters();
  rt_.reporter().Report(c.local_steps, algorithm_->Model(),
                        c.exchanges_initiated + c.exchanges_served, final, force);
}

}  // namespace starling::node
