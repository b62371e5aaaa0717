#include "node/daemon/pairwise_diffusion_node.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "node/config/run_setup.h"
#include "node/daemon/progress_watch.h"

namespace starling::node {

namespace {

// The BYE of a node that leaves after its passive phase: gone for good (as pairwise_node.cc).
constexpr char kLeftBye[] = "left";
// Samples per telemetry message, and the longest a sample waits to be published (as the
// synchronous diffusion's).
constexpr uint32_t kSampleBatch = 512;
constexpr int64_t kSampleAgeMs = 100;
// A node this many mean gaps behind its tick schedule restarts it from now.
constexpr int64_t kMaxLagTicks = 64;
// The tick clock's stream differs from the noise's and the coin's (pairwise_diffusion.cc), and is
// the one the simulator gives node i (node/sim/pairwise_inference_sim.cc).
constexpr uint64_t kClockSalt = 0xc2b2ae3d27d4eb4fULL;

ExchangeTiming TimingFor(const DaemonOptions& options) {
  ExchangeTiming timing;
  timing.reply_timeout_ms = options.exchange_timeout_ms;
  // As pairwise_node.cc: a new life numbers its exchanges above its previous life's.
  timing.sequence_offset =
      (static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count()) &
       0xffffffULL)
      << 14;
  return timing;
}

const algorithms::PairwiseDiffusionParams& Checked(const DaemonOptions& options,
                                                   const algorithms::PairwiseDiffusionParams& p) {
  if (options.resume || !options.checkpoint_file.empty()) {
    throw std::invalid_argument(
        "--algorithm pairwise-diffusion: --resume and --checkpoint are not supported (a "
        "restarted node would start a new sample stream; the probe needs none)");
  }
  return p;
}

}  // namespace

PairwiseDiffusionNode::PairwiseDiffusionNode(NodeRuntime* runtime)
    : rt_(*runtime),
      id_(runtime->id()),
      me_(runtime->me()),
      pairwise_(PairwiseOptionsFor(runtime->config(), runtime->setup())),
      params_(Checked(runtime->options(),
                      algorithms::PairwiseDiffusionParamTable().Read(pairwise_.params))),
      algorithm_(std::make_unique<algorithms::PairwiseDiffusion>(me_, params_)),
      wire_(pairwise_, 1),
      driver_(algorithm_.get(), id_, me_.neighbors, me_.seed ^ 0x5eed5eedULL,
              TimingFor(runtime->options())),
      clock_(std::max<int64_t>(1, std::llround(params_.tick_ms * 1e3)), params_.tick_fixed == 0,
             me_.seed ^ kClockSalt),
      samples_(kSampleBatch, kSampleAgeMs, static_cast<double>(clock_.mean_us())),
      target_(runtime->config().iterations),
      stamps_(runtime->options().fault_clock_offset_ms),
      handler_([this](int32_t peer, const net::Envelope& e) { OnMessage(peer, e); }),
      wave_(runtime->setup().graph, id_) {
  // Vectors the merge refuses (NaN/Inf) are counted and logged with the transport's rejects.
  driver_.SetRejectSink(
      [this](int peer, const net::Reject& reject) { rt_.transport().ReportReject(peer, reject); });
}

int PairwiseDiffusionNode::Run() {
  spdlog::info(
      "node {}: pairwise-diffusion, {} ticks on a {} clock of mean {} ms (decay {}, mix {}, "
      "exchange-prob {}); samples on the telemetry socket",
      id_, target_, params_.tick_fixed ? "fixed" : "Poisson", params_.tick_ms, params_.decay,
      params_.mix, params_.exchange_prob);
  if (const double offset = rt_.options().fault_clock_offset_ms; offset != 0) {
    spdlog::warn("node {}: --fault-clock-offset-ms: samples stamped {} ms {} the host's clock", id_,
                 std::abs(offset), offset > 0 ? "ahead of" : "behind");
  }
  SampleIfChanged();  // seq 0: the starting state
  if (int code = WaitForANeighbour(); code >= 0) return code;
  if (target_ <= 0) Finish();
  next_tick_ = Clock::now() + std::chrono::microseconds(clock_.NextGapUs());
  last_readmit_ = Clock::now();
  while (!rt_.stop_requested()) {
    if (int code = rt_.CheckPeers(); code >= 0) return code;
    Clock::time_point now = Clock::now();
    if (!finished_) MaybeTick(now);
    if (driver_.offer_outstanding()) {
      // Lets an offer past its deadline go (it starts none: the driver then backs off).
      if (auto m = driver_.Tick(NowMs())) Send(*m);
      MaybeEndTick();
    }
    // Until the next tick (rounded up to the millisecond), at most 10 ms; a message ends it.
    int64_t timeout_ms = 10;
    if (!finished_ && !tick_open_) {
      const auto until = std::chrono::duration_cast<std::chrono::microseconds>(next_tick_ - now);
      timeout_ms = std::clamp<int64_t>((until.count() + 999) / 1000, 0, 10);
    }
    rt_.transport().Poll(std::chrono::milliseconds(timeout_ms), handler_);
    now = Clock::now();
    ReadmitLiveNeighbours(now);
    PublishSamples(false);
    rt_.EndTurn();
    Report(false);
    if (Done(now)) break;
  }
  Leave();
  return kExitOk;
}

void PairwiseDiffusionNode::MaybeTick(Clock::time_point now) {
  if (tick_open_ || now < next_tick_) return;
  const auto mean = std::chrono::microseconds(clock_.mean_us());
  if (now - next_tick_ > kMaxLagTicks * mean) {
    ticks_skipped_ += (now - next_tick_) / mean;
    next_tick_ = now;
  }
  next_tick_ += std::chrono::microseconds(clock_.NextGapUs());
  if (algorithm_->WantsExchange()) {
    if (auto m = driver_.Tick(NowMs())) {
      Send(*m);
      tick_open_ = true;  // the local step comes once the offer is resolved
      return;
    }
    ++ticks_alone_;
  }
  tick_open_ = true;
  MaybeEndTick();
}

void PairwiseDiffusionNode::MaybeEndTick() {
  if (!tick_open_ || driver_.offer_outstanding()) return;
  tick_open_ = false;
  algorithm_->LocalStep();
  ++ticks_;
  SampleIfChanged();
  if (ticks_ >= target_) Finish();
}

void PairwiseDiffusionNode::SampleIfChanged() {
  const int64_t changes = algorithm_->changes();
  if (changes == sampled_changes_) return;
  sampled_changes_ = changes;
  samples_.Add(stamps_.NowUs(), algorithm_->Model()[0], NowMs());
  if (samples_.Due(NowMs())) PublishSamples(true);
}

void PairwiseDiffusionNode::PublishSamples(bool force) {
  if (force ? !samples_.empty() : samples_.Due(NowMs())) {
    rt_.transport().Publish(samples_.Take());
  }
}

void PairwiseDiffusionNode::OnMessage(int32_t peer, const net::Envelope& e) {
  if (e.type != net::MessageType::kBye) {
    gone_.erase(peer);  // it is back (a new life of it)
    if (rt_.Met(peer)) driver_.SetAvailable(peer, true);
  }
  switch (e.type) {
    case net::MessageType::kXchgReq: {
      const std::optional<Eigen::Map<const Vec>> incoming = wire_.Collect(e, true, &reject_);
      if (!incoming) {
        rt_.transport().ReportReject(peer, reject_);
      } else if (driver_.DuplicateRequest(peer, e.exchange_seq)) {
        ++duplicate_requests_;  // served already: answering again would merge twice
      } else {
        Send(driver_.OnRequest(peer, e.exchange_seq, *incoming, NowMs()));
      }
      break;
    }
    case net::MessageType::kXchgRep: {
      const std::optional<Eigen::Map<const Vec>> incoming = wire_.Collect(e, false, &reject_);
      if (!incoming) {
        rt_.transport().ReportReject(peer, reject_);
      } else {
        driver_.OnReply(peer, e.exchange_seq, *incoming);
      }
      break;
    }
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
  MaybeEndTick();  // a reply, a BUSY or a crossed request may have resolved our offer
  SampleIfChanged();
}

void PairwiseDiffusionNode::OnBye(int32_t peer, const std::string& text) {
  if (const std::optional<int> level = wave_.ParseBye(text)) {
    rt_.NoteBye(peer, "finished");  // done with its ticks, still up as a passive partner
    if (wave_.NoteLevel(peer, *level)) rt_.transport().SayGoodbye(wave_.ByeText());
    return;
  }
  driver_.SetAvailable(peer, false);
  if (text != kLeftBye) {
    rt_.NoteBye(peer, text);  // gave up, stopped, diverged, refused: the runtime's business
    return;
  }
  gone_.insert(peer);
  if (wave_.NoteGone(peer)) rt_.transport().SayGoodbye(wave_.ByeText());
}

void PairwiseDiffusionNode::Send(const ExchangeMessage& m) {
  // A request whose vector the merge refused (NaN/Inf, reported by the driver) gets no answer.
  if (m.kind == ExchangeMessage::Kind::kRefused) return;
  // The keepalive is the algorithm's message itself when the payload views it (plain
  // exchanges): ZeroMQ then sends the snapshot without a copy.
  const std::shared_ptr<const void> keepalive = wire_.Fill(m, &out_);
  rt_.Send(m.peer, out_, keepalive);
}

// As PairwiseNode::WaitForANeighbour: daemons launched together come up seconds apart, and a
// neighbour becomes a partner only once both connections work. Ticks start after the first.
int PairwiseDiffusionNode::WaitForANeighbour() {
  for (int j : me_.neighbors) driver_.SetAvailable(j, false);
  const Clock::time_point t0 = Clock::now();
  ProgressWatch watch(rt_.options().wait_log_seconds, rt_.options().give_up_seconds);
  watch.Start(t0);
  while (!rt_.stop_requested() && !me_.neighbors.empty()) {
    bool met = false;
    for (int j : me_.neighbors) {
      if (rt_.Met(j)) {
        driver_.SetAvailable(j, true);
        met = true;
      }
    }
    if (met) break;
    if (int code = rt_.CheckPeers(); code >= 0) return code;
    const Clock::time_point now = Clock::now();
    if (watch.GiveUpDue(now)) {
      spdlog::error("giving up after {} s: no neighbour came up", rt_.options().give_up_seconds);
      return rt_.GiveUp("gave up waiting for a neighbour");
    }
    if (watch.WaitLogDue(now)) {
      spdlog::warn("waiting {:.0f} s for a neighbour to come up", Seconds(now - t0));
    }
    rt_.transport().Poll(std::chrono::milliseconds(5), handler_);
    PublishSamples(false);
    rt_.EndTurn();
    Report(false);
  }
  rt_.reporter().SetStartupSeconds(Seconds(Clock::now() - t0));
  return -1;
}

// A neighbour is a partner once met and while alive (any message within two heartbeats); one
// that said "left" is not.
void PairwiseDiffusionNode::ReadmitLiveNeighbours(Clock::time_point now) {
  if (Millis(now - last_readmit_) < 500) return;
  last_readmit_ = now;
  for (int j : me_.neighbors) {
    if (gone_.count(j) == 0 && rt_.Met(j) && rt_.HeardRecently(j, now)) {
      driver_.SetAvailable(j, true);
    }
  }
}

void PairwiseDiffusionNode::Finish() {
  finished_ = true;
  finished_at_ = Clock::now();
  rt_.MarkFinished();
  PublishSamples(true);
  if (wave_.SetFinished()) rt_.transport().SayGoodbye(wave_.ByeText());
  spdlog::info(
      "node {} finished its {} ticks ({} without an exchange, {} skipped running late); it "
      "serves its neighbours until every node has finished, at most {} s",
      id_, ticks_, ticks_alone_, ticks_skipped_, rt_.options().linger_seconds);
  Report(true);
}

bool PairwiseDiffusionNode::Done(Clock::time_point now) const {
  if (!finished_) return false;
  const bool quiet = wave_.AllFinished() && wave_.NeighboursAllFinished();
  const bool offer_open =
      driver_.offer_outstanding() && Millis(now - finished_at_) < driver_.last_reply_timeout_ms();
  return (quiet || rt_.LingerOver(finished_at_, now) || me_.neighbors.empty()) && !offer_open;
}

void PairwiseDiffusionNode::Leave() {
  PublishSamples(true);
  if (rt_.stop_requested()) {
    spdlog::info("node {} stopping on signal after {} of {} ticks", id_, ticks_, target_);
    rt_.transport().SayGoodbye("stopped by signal");
  } else {
    rt_.transport().SayGoodbye(kLeftBye);
  }
  const auto c = algorithm_->counters();
  spdlog::info(
      "node {}: {} ticks ({} without an exchange, {} skipped running late), {} exchanges "
      "started, {} served, {} aborted, {} timeouts, {} late replies merged, {} duplicate "
      "requests dropped; {} samples published",
      id_, ticks_, ticks_alone_, ticks_skipped_, c.exchanges_initiated, c.exchanges_served,
      c.exchanges_aborted, driver_.timeouts(), driver_.late_replies_merged(), duplicate_requests_,
      samples_.next_seq());
  rt_.WriteFinalModel(algorithm_->Model());
  Report(true);
}

void PairwiseDiffusionNode::Report(bool force) {
  const auto c = algorithm_->counters();
  rt_.reporter().Report(ticks_, algorithm_->Model(), c.exchanges_initiated + c.exchanges_served,
                        finished_, force);
}

}  // namespace starling::node
