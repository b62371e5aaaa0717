// The inference probe's intake: subscribes to the telemetry of the observed nodes of a diffusion
// run, takes their sample batches and accumulates the moments that topology inference needs:
// stepped (t, y_t) batches of the synchronous diffusion (node/drivers/sample_telemetry.h),
// aligned by step (StepAligner), or time-stamped (seq, time, y) batches of the pairwise diffusion
// (node/drivers/timed_sample_telemetry.h), aligned by topology::TimeAligner on a grid of period
// options.period mean ticks that starts options.burn_in mean ticks after the first sample heard,
// on the clock of the node that sent it; the other nodes' clock offsets from it are 0, known, or
// estimated (options.clock_offsets; topology/clock_offsets.h, from each batch's last stamp and
// its arrival on the probe's clock, the wall clock read once plus the steady clock since, as the
// daemons stamp), and the estimate is printed in any case. The first sample batch fixes the
// kind; a batch of the other kind, or a time-stamped batch whose mean tick differs from the
// first one's, throws std::runtime_error naming both nodes (the probe exits 2). A batch that
// does not parse is counted as rejected. With options.live the samples are the nodes' models from
// their reports instead (InferProbeOptions::live): one time-stamped sample per report, on the
// node's clock (the report's kStampField, with the clock offsets as above; a report without one
// throws, naming the node) or, with live_stamps "arrival", on the probe's clock as it is taken;
// aligned by TimeAligner in milliseconds; a sample batch is then refused as a kind mix.
//
// One SUB socket per observed node, so that a message's socket tells who sent it: a sender field
// that disagrees is rejected rather than trusted. The first run id heard is the run; telemetry
// of another run is ignored, and said so once.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "net/codec.h"
#include "node/drivers/timed_sample_telemetry.h"
#include "node/probe/infer_probe.h"
#include "node/probe/step_aligner.h"
#include "topology/clock_offsets.h"
#include "topology/cluster_file.h"
#include "topology/inference.h"
#include "topology/time_aligner.h"

namespace starling::node {

class SampleCollector {
 public:
  // Connects to the telemetry of cluster nodes `ids` (indices into cluster.nodes). `options`
  // (samples, burn-in, deadlines, keys, drop fraction) and `out` must outlive the collector.
  // Throws as ProbeCurveOptions does for the probe's keys, and std::runtime_error for an
  // endpoint libzmq refuses.
  SampleCollector(const topology::Cluster& cluster, const std::vector<int>& ids,
                  const InferProbeOptions& options, std::ostream& out);

  // Says what it watches, then collects until options.samples aligned pairs, every observed
  // node's final telemetry, --timeout-s or *stop (stop_reason() says which, empty for enough
  // samples), printing progress every 2 s. Returns false, after naming the node and endpoint,
  // if some observed node was not heard within --connect-timeout-s.
  bool Collect(const std::atomic<bool>* stop);

  // One line: pairs, complete and dropped steps, batches, time since Collect began; and the
  // count of rejected messages, if any.
  void PrintTally() const;

  int64_t pairs() const { return moments_.pairs(); }
  const std::string& stop_reason() const { return stop_reason_; }
  // The moments of every aligned pair so far.
  topology::Moments FinishMoments() const { return moments_.Finish(); }

 private:
  using Clock = std::chrono::steady_clock;

  void Subscribe(const topology::Cluster& cluster);
  void Receive(int k);
  void Take(int k, const zmq::message_t& message);
  // The first batch fixes the kind; throws for another (see the header).
  void CheckKind(int k, SampleKind kind);
  void TakeTimed(int k, const TimedSampleBatch& batch);
  // Estimating, and the stream ended before the warm-up did: the offsets from what came.
  void ReleaseHeldSamples();
  // --period, or its default: 1 ms with --live, kDefaultPeriod mean ticks otherwise.
  double Period() const;
  // The first time-stamped batch, from node k: the aligner, its offsets, the feed.
  void StartTimed(int k, const TimedSampleBatch& batch);
  // The probe's clock in microseconds: the wall clock read at start plus the steady clock since.
  double ProbeClockUs() const;
  // The offsets given to the aligner, once fixed (one line); and at the end, the estimate.
  void PrintOffsetsUsed();
  void PrintOffsetEstimate() const;
  int64_t DroppedRows() const;
  // --live: a node's report (telemetry with its model): one sample, the model's projection.
  void TakeModel(int k);
  bool NameUnheardNode() const;
  bool AllFinal() const;
  void PrintProgress(double elapsed) const;

  const std::vector<int> ids_;
  const int s_;
  const InferProbeOptions& options_;
  std::ostream& out_;
  const net::DecodeLimits limits_;
  zmq::context_t context_;           // before subs_: it outlives the sockets
  std::vector<zmq::socket_t> subs_;  // subs_[k] watches node ids_[k]
  std::vector<std::string> endpoints_;
  topology::MomentAccumulator moments_;
  StepAligner aligner_;  // after moments_, which it feeds
  // Time-stamped samples: built at the first batch (its tick and first time fix the grid).
  std::unique_ptr<topology::TimeAligner> time_aligner_;
  std::optional<SampleKind> kind_;
  int kind_node_ = -1;      // the node whose batch fixed the kind
  double tick_us_ = 0.0;    // time-stamped: the nodes' mean tick
  double origin_us_ = 0.0;  // time-stamped: the first sample's time, the grid's time 0
  int origin_index_ = -1;   // time-stamped: the node whose clock the grid is on
  ClockOffsetChoice offset_choice_;
  std::unique_ptr<topology::OffsetEstimatingFeed> feed_;  // with time_aligner_
  bool offsets_printed_ = false;
  std::vector<double> ticks_buffer_;  // a batch's times in mean ticks since origin_us_
  int64_t wall_at_start_us_ = 0;
  Clock::time_point steady_at_start_{};
  // --live: the projection direction (drawn at the first model), the model read into memory,
  // each node's count of samples, and the first arrival (the grid's time 0).
  Eigen::VectorXd projection_, model_;
  std::vector<int64_t> live_seq_;
  Clock::time_point live_origin_{};

  std::vector<bool> heard_, final_;
  std::optional<uint64_t> run_id_;
  int64_t rejected_ = 0, wrong_run_ = 0, batches_ = 0, dropped_batches_ = 0;
  // The --drop-fraction test hook, seeded as InferProbeOptions says.
  std::mt19937_64 drop_rng_{12345};
  std::uniform_real_distribution<double> unit_{0.0, 1.0};
  net::Envelope envelope_;
  net::Reject reject_;
  Clock::time_point start_;
  std::string stop_reason_;
};

}  // namespace starling::node
