// starlingd's loop for a round-based algorithm (docs/explanations/architecture.md), over a
// RoundSynchronizer: each step's payload goes to every neighbour, and the node advances once it
// holds every neighbour's payload for that step.
//
// Waiting: a step still incomplete after resend_ms is asked for again with a RESEND (at most one
// per resend_ms; answers to a neighbour's RESENDs are rate-limited the same way). Our recent
// payloads are kept (replay_window) for a neighbour that resumes from an older checkpoint; a node
// that resumes itself asks at once for each step its neighbours are past. A silent neighbour is
// waited for (round-based methods cannot skip it) until give_up_seconds. A diffusion node
// publishes its samples for topology-inference probes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/round/round_algorithm.h"
#include "net/codec.h"
#include "net/transport.h"
#include "node/daemon/node_runtime.h"
#include "node/daemon/progress_watch.h"
#include "node/drivers/payload_history.h"
#include "node/drivers/round_synchronizer.h"
#include "node/drivers/sample_telemetry.h"

namespace starling::node {

class RoundNode : public NodeLoop {
 public:
  // Builds the algorithm (from the checkpoint if --resume). `runtime` is started and outlives
  // this object. Throws std::invalid_argument / std::runtime_error for a bad parameter or a
  // checkpoint of another run or node (the caller prints it and exits 2).
  explicit RoundNode(NodeRuntime* runtime);

  int Run() override;

 private:
  void OnMessage(int32_t peer, const net::Envelope& e);
  void OnPayload(int32_t peer, const net::Envelope& e);
  void OnResend(int32_t peer, const net::Envelope& e);
  void SendRound(int32_t peer, const algorithms::StepKey& key, const Vec& payload);
  void Broadcast();
  // Sends a RESEND for the current step to every neighbour it is still missing from.
  void AskForCurrentStep();
  // Advances as far as the payloads held allow. Returns an exit code, or -1 to go on.
  int AdvanceWhileReady();
  void Finish();
  // Resends, waiting lines and giving up while a step stays incomplete. An exit code, or -1.
  int WatchWaiting(Clock::time_point now);
  void StartSamples();
  void PublishSamples(bool force);
  void MaybeCheckpoint(bool force);
  // The checkpoint's two states: the algorithm's, and our last payloads sent (checkpoint.h).
  bool SaveCheckpoint(Checkpoint* c) const;
  // Puts the payloads a resumed checkpoint kept into history_, so that a neighbour that never
  // got the one before it can still have it. Throws std::invalid_argument if they are malformed.
  void RestoreSent();
  void Report(bool force);
  // --snapshots: the model at this iteration if one is due, or the final one.
  void Snapshot(bool final);
  int StopDiverged();
  // After the loop: the stop signal's checkpoint and the closing lines.
  void Leave();

  NodeRuntime& rt_;
  const int id_;
  const algorithms::NodeSetup& me_;
  const int64_t target_;
  // A resumed checkpoint's payloads sent, until RestoreSent (filled while sync_ is built).
  algorithms::AlgorithmState resumed_sent_;
  RoundSynchronizer sync_;
  // Our recent payloads, for a neighbour that comes back from an older checkpoint (with
  // quantized gossip: every payload sent, coded, the current and previous ones included).
  PayloadHistory history_;
  // The furthest step a neighbour has asked us for: while we are behind it (after a resume),
  // each step's missing payloads are asked for at once instead of after --resend-ms.
  algorithms::StepKey catch_up_to_;
  int64_t steps_done_ = 0;
  uint64_t replayed_payloads_ = 0;
  // Set when a neighbour asks for a step older than the payload history keeps: why the run
  // cannot continue, naming it (OnResend).
  std::string lost_neighbour_;
  uint64_t resends_sent_ = 0;
  net::Envelope out_;
  std::vector<std::string> sparse_storage_;
  std::string vq_storage_;
  std::vector<std::string> range_storage_;
  const bool sparse_;
  const int
      vq_samples_;  // > 0: the payloads are vqSGD messages (RoundAlgorithm::OutgoingVqSamples)
  // Quantized gossip (RoundAlgorithm::OutgoingGossip): R > 0 bits per code and the d-vectors per
  // payload; the wire, history_ and the checkpoint hold the coded messages, the synchronizer
  // the decoded values.
  const int gossip_bits_;
  const int gossip_segments_;
  // A diffusion node publishes its (t, y_t) samples for topology-inference probes.
  std::unique_ptr<SampleBatcher> samples_;
  bool finished_ = false;
  ProgressWatch watch_;
  Clock::time_point last_resend_{};
  Clock::time_point finished_at_{};
  Vec incoming_;
  net::Reject reject_;
  // Last RESEND answered per (peer, key), so that a flood of RESENDs cannot queue payloads.
  std::map<int32_t, std::pair<algorithms::StepKey, Clock::time_point>> last_resend_answer_;
  const net::Transport::Handler handler_;
};

}  // namespace starling::node
