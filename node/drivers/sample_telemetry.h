// The (t, y_t) samples a diffusion node publishes for topology-inference probes
// (docs/explanations/algorithms/diffusion.md), batched so that 1e4-1e5 steps per second cost a few
// messages per second.
//
// Wire form: a TELEMETRY envelope with the fields kFirstStepField = t0 and kCountField = m, and
// one float64 payload of m values y_{t0}, ..., y_{t0+m-1} (consecutive steps). A subscriber may
// miss whole batches (PUB drops for slow subscribers), never parts of one.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "net/envelope.h"

namespace starling::node {

inline constexpr char kFirstStepField[] = "sample_first_step";
inline constexpr char kCountField[] = "sample_count";
// Largest batch a probe accepts (and a node sends).
inline constexpr uint32_t kMaxSampleBatch = 4096;

class SampleBatcher {
 public:
  // A batch is due once it holds max_batch samples or its first sample is max_age_ms old.
  SampleBatcher(uint32_t max_batch, int64_t max_age_ms);

  // Adds y at `step`, which must follow the previous one unless the batch is empty
  // (std::logic_error otherwise: take the batch first).
  void Add(int64_t step, double value, int64_t now_ms);
  bool Due(int64_t now_ms) const;
  bool empty() const { return values_.empty(); }
  // The pending batch as an envelope whose payload views this object's memory: publish it before
  // the next Add. Empties the batch.
  net::Envelope Take();

 private:
  uint32_t max_batch_;
  int64_t max_age_ms_;
  int64_t first_step_ = 0;
  int64_t first_ms_ = 0;
  std::vector<double> values_, taken_;
};

// One decoded batch. Parse returns nullopt for envelopes that are not sample batches or are
// inconsistent (count differs from the payload, negative step, batch too large).
struct SampleBatch {
  int32_t sender = 0;
  int64_t first_step = 0;
  std::vector<double> values;
};
std::optional<SampleBatch> ParseSampleBatch(const net::Envelope& envelope);

}  // namespace starling::node
