#include "node/daemon/round_node.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "algorithms/problems/gradient_interrupted.h"
#include "algorithms/round/quantized_gossip.h"
#include "node/drivers/vector_wire.h"

namespace starling::node {

namespace {

// Diffusion samples per telemetry message, and the longest a sample waits to be published.
constexpr uint32_t kDiffusionSampleBatch = 512;
constexpr int64_t kDiffusionSampleAgeMs = 100;

algorithms::StepKey ToStepKey(const net::WireKey& k) { return {k.iteration, k.phase, k.subround}; }
net::WireKey ToWireKey(const algorithms::StepKey& k) { return {k.iteration, k.phase, k.subround}; }

// The driver state of a round-based checkpoint (checkpoint.h): the newest payloads sent.
constexpr char kSentState[] = "round-sent";
// The payload before the checkpoint's step is the one a neighbour may still lack; the one of the
// step itself is kept too, for a checkpoint written after its broadcast (on a signal).
constexpr size_t kSentKept = 2;

std::unique_ptr<algorithms::RoundAlgorithm> ResumedAlgorithm(NodeRuntime* rt,
                                                             algorithms::AlgorithmState* sent) {
  const algorithms::RoundOptions options = RoundOptionsFor(rt->config(), rt->setup());
  auto algorithm = algorithms::MakeRoundAlgorithm(options, rt->me());
  for (const std::string& warning : algorithms::RoundWarnings(options)) {
    spdlog::warn("node {}: {}", rt->id(), warning);
  }
  if (rt->Resume([&](const Checkpoint& c) {
        algorithm->LoadState(c.state);
        *sent = c.driver;
      })) {
    spdlog::info(
        "node {} resumed from {} at step {} (iteration {}); it will replay the steps "
        "since then with its neighbours' kept payloads",
        rt->id(), rt->options().checkpoint_file, algorithm->key().ToString(),
        algorithm->iteration());
  }
  return algorithm;
}

size_t ReplayWindow(const DaemonOptions& options) {
  // At least the current and the previous step: a quantized-gossip node answers every RESEND
  // from its history (the synchronizer holds decoded values, not the coded messages).
  return static_cast<size_t>(std::max<int64_t>(
      2, options.replay_window > 0 ? options.replay_window
                                   : std::max<int64_t>(64, 2 * options.checkpoint_every + 8)));
}

int GossipBits(const algorithms::RoundAlgorithm& a) {
  return a.OutgoingGossip() != nullptr ? a.OutgoingGossip()->bits() : 0;
}
int GossipSegments(const algorithms::RoundAlgorithm& a) {
  return a.OutgoingGossip() != nullptr ? a.OutgoingGossip()->segments() : 0;
}

}  // namespace

RoundNode::RoundNode(NodeRuntime* runtime)
    : rt_(*runtime),
      id_(runtime->id()),
      me_(runtime->me()),
      target_(runtime->config().iterations),
      sync_(ResumedAlgorithm(runtime, &resumed_sent_), me_),
      history_(ReplayWindow(runtime->options())),
      catch_up_to_(sync_.key()),
      sparse_(sync_.algorithm().SparseOutgoing()),
      vq_samples_(sync_.algorithm().OutgoingVqSamples()),
      gossip_bits_(GossipBits(sync_.algorithm())),
      gossip_segments_(GossipSegments(sync_.algorithm())),
      watch_(runtime->options().wait_log_seconds, runtime->options().give_up_seconds),
      handler_([this](int32_t peer, const net::Envelope& e) { OnMessage(peer, e); }) {
  RestoreSent();
  // Every step's payload is the same number of d-vectors, one payload each (AttachVectors): a
  // ROUND with another count is a reject of its own (it used to be dropped unseen when the
  // synchronizer found its size wrong).
  const int dim = rt_.setup().dim;
  if (vq_samples_ > 0) {
    rt_.transport().ExpectPayloads(net::MessageType::kRound, 1);
  } else if (dim > 0 && sync_.Outgoing().size() % dim == 0) {
    rt_.transport().ExpectPayloads(net::MessageType::kRound,
                                   static_cast<int>(sync_.Outgoing().size() / dim));
  }
}

bool RoundNode::SaveCheckpoint(Checkpoint* c) const {
  if (!sync_.algorithm().SaveState(&c->state)) return false;
  c->driver.algorithm = kSentState;
  for (const auto& [key, payload] : history_.Newest(kSentKept)) {
    c->driver.ints.insert(c->driver.ints.end(), {key.iteration, key.phase, key.subround});
    c->driver.vectors.push_back(*payload);
  }
  return true;
}

void RoundNode::RestoreSent() {
  const algorithms::AlgorithmState& sent = resumed_sent_;
  if (sent.algorithm.empty()) return;  // not resumed, or from a checkpoint without any
  if (sent.algorithm != kSentState || sent.ints.size() != 3 * sent.vectors.size()) {
    throw std::invalid_argument(rt_.options().checkpoint_file +
                                ": the payloads it keeps are not a round-based node's");
  }
  Vec values;
  for (size_t i = 0; i < sent.vectors.size(); ++i) {
    if (gossip_bits_ > 0 &&
        !algorithms::QuantizedGossip::DecodeCoded(sent.vectors[i], rt_.setup().dim,
                                                  gossip_segments_, gossip_bits_, &values)) {
      throw std::invalid_argument(rt_.options().checkpoint_file +
                                  ": a payload it keeps is not a coded message of this run's "
                                  "--gossip-bits " +
                                  std::to_string(gossip_bits_));
    }
    const algorithms::StepKey key{sent.ints[3 * i], static_cast<int32_t>(sent.ints[3 * i + 1]),
                                  static_cast<int32_t>(sent.ints[3 * i + 2])};
    history_.Record(key, sent.vectors[i]);
  }
  resumed_sent_ = {};
}

int RoundNode::Run() {
  if (Diverged(sync_.Outgoing()) || rt_.ModelDiverged(sync_.algorithm().Model())) {
    return StopDiverged();
  }
  StartSamples();
  finished_ = sync_.algorithm().iteration() >= target_;
  const Clock::time_point start = Clock::now();
  watch_.Start(start);
  last_resend_ = start;
  Snapshot(false);  // the starting point (or the resumed model)
  if (!finished_) Broadcast();
  if (finished_) {
    finished_at_ = Clock::now();
    rt_.transport().SayGoodbye("finished");
  }
  // A metrics line at the start (after the first broadcast: the neighbours wait for it, not for
  // this line's objective pass), as pairwise runs write one, and one at finishing below.
  Report(true);
  while (!rt_.stop_requested()) {
    if (int code = rt_.CheckPeers(); code >= 0) return code;
    rt_.transport().Poll(std::chrono::milliseconds(finished_ ? 50 : 10), handler_);
    if (!lost_neighbour_.empty()) return rt_.StopFailed(lost_neighbour_);
    if (int code = AdvanceWhileReady(); code >= 0) return code;
    rt_.EndTurn();
    PublishSamples(false);
    const Clock::time_point now = Clock::now();
    if (!finished_) {
      if (int code = WatchWaiting(now); code >= 0) return code;
    }
    Report(false);
    if (finished_ && (rt_.AllNeighborsFinished() || rt_.LingerOver(finished_at_, now))) break;
  }
  Leave();
  return kExitOk;
}

void RoundNode::OnMessage(int32_t peer, const net::Envelope& e) {
  switch (e.type) {
    case net::MessageType::kRound:
      OnPayload(peer, e);
      break;
    case net::MessageType::kResend:
      OnResend(peer, e);
      break;
    case net::MessageType::kBye:
      rt_.NoteBye(peer, e.text);
      break;
    default:
      rt_.CountProtocolDrop();
      break;
  }
}

void RoundNode::OnPayload(int32_t peer, const net::Envelope& e) {
  const int dim = rt_.setup().dim;
  const bool ok = vq_samples_ > 0 ? CollectCrossPolytope(e, dim, vq_samples_, &incoming_, &reject_)
                  : gossip_bits_ > 0 ? CollectRangeCodes(e, dim, gossip_segments_, gossip_bits_,
                                                         &incoming_, &reject_)
                                     : CollectVectors(e, &incoming_, &reject_);
  if (!ok) {
    rt_.transport().ReportReject(peer, reject_);
    return;
  }
  const auto verdict = sync_.OnPayload(peer, ToStepKey(e.key), std::move(incoming_));
  if (verdict == RoundSynchronizer::Verdict::kTooFarAhead && rt_.CountProtocolDrop() <= 5) {
    spdlog::warn("{} sent step {} while this node is at {}: dropped", rt_.Describe(peer),
                 ToStepKey(e.key).ToString(), sync_.key().ToString());
  }
}

void RoundNode::OnResend(int32_t peer, const net::Envelope& e) {
  // At most one answer per (peer, key) per resend period: resends are idempotent, and a
  // flood of RESENDs must not queue a payload each.
  const algorithms::StepKey key = ToStepKey(e.key);
  if (catch_up_to_ < key) catch_up_to_ = key;
  auto& last = last_resend_answer_[peer];
  if (last.first == key && Millis(Clock::now() - last.second) < rt_.options().resend_ms) return;
  // Quantized gossip: the synchronizer holds decoded values; the coded messages are in history_.
  const Vec* p = gossip_bits_ > 0 ? nullptr : sync_.PayloadFor(key);
  if (p == nullptr && (p = history_.Find(key)) != nullptr &&
      (gossip_bits_ == 0 || sync_.PayloadFor(key) == nullptr)) {
    // A neighbour replaying the steps it lost in a restart.
    if (replayed_payloads_++ == 0) {
      spdlog::info("{} asks for step {}: replaying from this node's kept payloads",
                   rt_.Describe(peer), key.ToString());
    }
  }
  if (p != nullptr) {
    SendRound(peer, key, *p);
    last = {key, Clock::now()};
    return;
  }
  const algorithms::StepKey* oldest = history_.Oldest();
  if (oldest != nullptr && key < *oldest && lost_neighbour_.empty()) {
    // Nobody keeps that step any more (every neighbour keeps the same window), so the asker can
    // never catch up, and this node can never go past the steps it waits for: a silent deadlock
    // until --give-up-s. Said now, by name; the run stops (Run checks lost_neighbour_).
    lost_neighbour_ = rt_.Describe(peer) + " asks for step " + key.ToString() +
                      ", older than what node " + std::to_string(id_) + " keeps (steps " +
                      oldest->ToString() + " to " + sync_.key().ToString() +
                      "): it restarted without a checkpoint, or from one older than the "
                      "--replay-window; this run cannot continue";
  }
}

void RoundNode::SendRound(int32_t peer, const algorithms::StepKey& key, const Vec& payload) {
  out_.type = net::MessageType::kRound;
  out_.key = ToWireKey(key);
  if (vq_samples_ > 0) {
    AttachCrossPolytope(payload, rt_.setup().dim, vq_samples_, &vq_storage_, &out_);
  } else if (gossip_bits_ > 0) {
    AttachRangeCodes(payload, rt_.setup().dim, gossip_bits_, &range_storage_, &out_);
  } else if (sparse_) {
    AttachSparseVectors(payload, rt_.setup().dim, &sparse_storage_, &out_);
  } else {
    AttachVectors(payload, rt_.setup().dim, &out_);
  }
  rt_.Send(peer, out_);
}

void RoundNode::Broadcast() {
  const Vec& payload =
      gossip_bits_ > 0 ? sync_.algorithm().OutgoingGossip()->coded() : sync_.Outgoing();
  history_.Record(sync_.key(), payload);
  for (int j : me_.neighbors) SendRound(j, sync_.key(), payload);
}

void RoundNode::AskForCurrentStep() {
  // Idempotent: a neighbour answers with its payload for our step if it has it.
  net::Envelope resend;
  resend.type = net::MessageType::kResend;
  resend.key = ToWireKey(sync_.key());
  for (int j : sync_.Waiting()) resends_sent_ += rt_.data_path().Send(j, resend);
}

int RoundNode::AdvanceWhileReady() {
  while (!finished_ && sync_.ReadyToAdvance()) {
    const Clock::time_point t0 = Clock::now();
    try {
      if (!sync_.Advance()) break;  // a payload of the wrong size was dropped: wait again
    } catch (const algorithms::GradientInterrupted&) {
      break;  // the C ABI's caller stopped us in the step: the state is the one before it
    }
    rt_.SimulatedCompute(t0, handler_);
    rt_.reporter().AddComputeSeconds(Seconds(Clock::now() - t0));
    watch_.Progressed(Clock::now());
    if (samples_) {
      samples_->Add(sync_.algorithm().iteration(), sync_.algorithm().Model()[0],
                    Millis(watch_.last_progress() - rt_.start()));
      PublishSamples(false);
    }
    ++steps_done_;
    MaybeCheckpoint(false);
    Snapshot(false);
    // The last step's model is always checked with its objective: a run must not end with a
    // diverged model and exit 0 because the divergence fell between two objective checks.
    const bool last = sync_.algorithm().iteration() >= target_;
    if (Diverged(sync_.Outgoing()) || rt_.ModelDiverged(sync_.algorithm().Model(), last)) {
      return StopDiverged();
    }
    if (last) {
      Finish();
    } else {
      Broadcast();
      if (sync_.key() < catch_up_to_) {
        // Replaying after a resume: ask for this step's payloads now.
        AskForCurrentStep();
        last_resend_ = Clock::now();
      }
    }
  }
  return -1;
}

void RoundNode::Finish() {
  finished_ = true;
  finished_at_ = Clock::now();
  rt_.transport().SayGoodbye("finished");
  PublishSamples(true);
  spdlog::info("node {} finished {} iterations", id_, target_);
  Snapshot(true);
  rt_.WriteFinalModel(sync_.algorithm().Model());
  if (const std::vector<Vec>* predictors = sync_.algorithm().BlockPredictors()) {
    rt_.WriteBlockPredictors(*predictors);
  }
  // Not a telemetry period later: the lingering since would count as time blocked.
  Report(true);
}

int RoundNode::WatchWaiting(Clock::time_point now) {
  const int64_t resend_ms = rt_.options().resend_ms;
  if (watch_.MillisSinceProgress(now) >= resend_ms && Millis(now - last_resend_) >= resend_ms) {
    AskForCurrentStep();
    last_resend_ = now;
  }
  if (watch_.WaitLogDue(now)) {
    for (int j : sync_.Waiting()) {
      spdlog::warn("waiting for {} at step {}: no progress for {:.0f} s", rt_.Describe(j),
                   sync_.key().ToString(), watch_.SecondsSinceProgress(now));
    }
  }
  if (watch_.GiveUpDue(now)) {
    std::string who;
    for (int j : sync_.Waiting()) who += " " + rt_.Describe(j);
    spdlog::error("giving up at step {} after {} s without progress; waiting for:{}",
                  sync_.key().ToString(), rt_.options().give_up_seconds, who);
    return rt_.GiveUp("gave up waiting at step " + sync_.key().ToString());
  }
  return -1;
}

void RoundNode::StartSamples() {
  if (rt_.config().algorithm != "diffusion") return;
  samples_ = std::make_unique<SampleBatcher>(kDiffusionSampleBatch, kDiffusionSampleAgeMs);
  samples_->Add(sync_.algorithm().iteration(), sync_.algorithm().Model()[0], 0);
}

void RoundNode::PublishSamples(bool force) {
  if (samples_ &&
      (force ? !samples_->empty() : samples_->Due(Millis(Clock::now() - rt_.start())))) {
    rt_.transport().Publish(samples_->Take());
  }
}

void RoundNode::MaybeCheckpoint(bool force) {
  rt_.MaybeCheckpoint(
      steps_done_, [&](Checkpoint* c) { return SaveCheckpoint(c); }, force);
}

void RoundNode::Snapshot(bool final) {
  rt_.Snapshot(sync_.algorithm().iteration(), sync_.algorithm().Model(),
               sync_.algorithm().counters().comm_rounds, final);
}

void RoundNode::Report(bool force) {
  rt_.reporter().Report(sync_.algorithm().iteration(), sync_.algorithm().Model(),
                        sync_.algorithm().counters().comm_rounds, finished_, force);
}

int RoundNode::StopDiverged() { return rt_.StopDiverged("at step " + sync_.key().ToString()); }

void RoundNode::Leave() {
  if (rt_.stop_requested()) {
    rt_.StopOnSignal("at step " + sync_.key().ToString(), steps_done_,
                     [&](Checkpoint* c) { return SaveCheckpoint(c); });
  }
  if (replayed_payloads_ > 0) {
    spdlog::info("node {} served {} payloads from its kept history to a restarted neighbour", id_,
                 replayed_payloads_);
  }
  spdlog::info("node {} sent {} RESENDs for missing payloads", id_, resends_sent_);
  Report(true);
}

}  // namespace starling::node
