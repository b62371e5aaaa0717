// The time-stamped samples an asynchronous diffusion node publishes for topology-inference
// probes (the pairwise diffusion, docs/how-to/topology-inference.md): after each change of its
// state, (seq, time, y) with seq counting the node's samples from 0 and time its own clock, in
// microseconds. Batched like the synchronous diffusion's samples (sample_telemetry.h), whose kind a
// probe tells apart by the fields.
//
// Wire form: a TELEMETRY envelope with the fields kFirstSeqField = s0, kCountField = m and
// kTickUsField = the node's mean tick interval in microseconds (so that a probe can read its
// sampling period in mean ticks, as the simulator does), and two float64 payloads of m values:
// the times t_{s0}, ..., t_{s0+m-1} and the states y_{s0}, ..., y_{s0+m-1}. A subscriber may miss
// whole batches (PUB drops for slow subscribers), never parts of one.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "net/envelope.h"
#include "node/drivers/sample_telemetry.h"

namespace starling::node {

inline constexpr char kFirstSeqField[] = "sample_first_seq";
// In every node's report (node/daemon/node_reporter.h), not in sample batches: when the model the
// report carries was read, on the node's stamp clock (node/daemon/stamp_clock.h), in
// microseconds; starling-probe infer --live aligns the nodes' reports by it.
inline constexpr char kStampField[] = "stamp_us";
inline constexpr char kTickUsField[] = "sample_tick_us";
// The largest mean tick a probe accepts: an hour.
inline constexpr double kMaxTickUs = 3.6e9;

class TimedSampleBatcher {
 public:
  // A batch is due once it holds max_batch samples (at most kMaxSampleBatch) or its first
  // sample is max_age_ms old. tick_us: the node's mean tick interval (> 0).
  TimedSampleBatcher(uint32_t max_batch, int64_t max_age_ms, double tick_us);

  // Adds the next sample: seq is the count of samples added before (from 0), so a batch holds
  // consecutive seqs. `time_us` is the node's clock; `now_ms` dates the batch for Due.
  void Add(double time_us, double value, int64_t now_ms);
  bool Due(int64_t now_ms) const;
  bool empty() const { return values_.empty(); }
  int64_t next_seq() const { return next_seq_; }
  // The pending batch as an envelope whose payloads view this object's memory: publish it
  // before the next Add. Empties the batch.
  net::Envelope Take();

 private:
  uint32_t max_batch_;
  int64_t max_age_ms_;
  double tick_us_;
  int64_t next_seq_ = 0;
  int64_t first_seq_ = 0;
  int64_t first_ms_ = 0;
  std::vector<double> times_, values_, taken_times_, taken_values_;
};

// One decoded batch. ParseTimedSampleBatch returns nullopt for envelopes that are not
// time-stamped sample batches or are inconsistent (count differs from a payload, a seq that is
// negative or not an integer below 2^53, a tick that is not in (0, kMaxTickUs], a batch too
// large). Times and values are passed on as they came: the aligner refuses non-finite ones and
// times that go back (topology/time_aligner.h), and counts them.
struct TimedSampleBatch {
  int32_t sender = 0;
  int64_t first_seq = 0;
  double tick_us = 0.0;
  std::vector<double> times, values;
};
std::optional<TimedSampleBatch> ParseTimedSampleBatch(const net::Envelope& envelope);

// Which kind of samples a TELEMETRY envelope claims to carry, by its fields alone.
enum class SampleKind { kNone, kStepped, kTimed };
SampleKind SampleKindOf(const net::Envelope& envelope);
const char* SampleKindName(SampleKind kind);

}  // namespace starling::node
