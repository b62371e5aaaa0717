#include "node/drivers/timed_sample_telemetry.h"

#include <cmath>
#include <variant>

#include "net/payload.h"
#include "net/payload_view.h"

namespace starling::node {

namespace {

const double* Field(const net::Envelope& envelope, const char* name) {
  for (const auto& f : envelope.telemetry) {
    if (f.name == name) return &f.value;
  }
  return nullptr;
}

// Reads a dense float64 payload of exactly `dim` values into `out`.
bool ReadDense(const net::Payload& p, uint32_t dim, std::vector<double>* out) {
  if (p.dim != dim) return false;
  out->resize(dim);
  net::Reject reject;
  const auto view = net::PayloadReader().Read(p, dim, &reject, out->data());
  return view && std::holds_alternative<net::DenseView>(*view);
}

}  // namespace

TimedSampleBatcher::TimedSampleBatcher(uint32_t max_batch, int64_t max_age_ms, double tick_us)
    : max_batch_(max_batch < 1                 ? 1
                 : max_batch > kMaxSampleBatch ? kMaxSampleBatch
                                               : max_batch),
      max_age_ms_(max_age_ms),
      tick_us_(tick_us) {
  times_.reserve(max_batch_);
  values_.reserve(max_batch_);
}

void TimedSampleBatcher::Add(double time_us, double value, int64_t now_ms) {
  if (values_.empty()) {
    first_seq_ = next_seq_;
    first_ms_ = now_ms;
  }
  times_.push_back(time_us);
  values_.push_back(value);
  ++next_seq_;
}

bool TimedSampleBatcher::Due(int64_t now_ms) const {
  return !values_.empty() && (values_.size() >= max_batch_ || now_ms - first_ms_ >= max_age_ms_);
}

net::Envelope TimedSampleBatcher::Take() {
  taken_times_.swap(times_);
  taken_values_.swap(values_);
  times_.clear();
  values_.clear();
  const auto m = static_cast<uint32_t>(taken_values_.size());
  net::Envelope e;
  e.type = net::MessageType::kTelemetry;
  e.telemetry = {{kFirstSeqField, static_cast<double>(first_seq_)},
                 {kCountField, static_cast<double>(m)},
                 {kTickUsField, tick_us_}};
  e.payloads = {net::Float64Payload(taken_times_.data(), m),
                net::Float64Payload(taken_values_.data(), m)};
  return e;
}

std::optional<TimedSampleBatch> ParseTimedSampleBatch(const net::Envelope& envelope) {
  if (envelope.type != net::MessageType::kTelemetry || envelope.payloads.size() != 2) {
    return std::nullopt;
  }
  const double* first = Field(envelope, kFirstSeqField);
  const double* count = Field(envelope, kCountField);
  const double* tick = Field(envelope, kTickUsField);
  if (first == nullptr || count == nullptr || tick == nullptr) return std::nullopt;
  // Seqs are integers below 2^53 (exact in a double), and so is the last one of the batch.
  if (!(*first >= 0 && *first < 0x1.0p53) || std::floor(*first) != *first) return std::nullopt;
  if (!(*tick > 0 && *tick <= kMaxTickUs)) return std::nullopt;
  if (!(*count >= 1 && *count <= kMaxSampleBatch) || std::floor(*count) != *count) {
    return std::nullopt;
  }
  const auto m = static_cast<uint32_t>(*count);
  if (*first + *count >= 0x1.0p53) return std::nullopt;
  TimedSampleBatch batch;
  batch.sender = envelope.sender;
  batch.first_seq = static_cast<int64_t>(*first);
  batch.tick_us = *tick;
  if (!ReadDense(envelope.payloads[0], m, &batch.times) ||
      !ReadDense(envelope.payloads[1], m, &batch.values)) {
    return std::nullopt;
  }
  return batch;
}

SampleKind SampleKindOf(const net::Envelope& envelope) {
  if (envelope.type != net::MessageType::kTelemetry) return SampleKind::kNone;
  if (Field(envelope, kFirstSeqField) != nullptr) return SampleKind::kTimed;
  if (Field(envelope, kFirstStepField) != nullptr) return SampleKind::kStepped;
  return SampleKind::kNone;
}

const char* SampleKindName(SampleKind kind) {
  switch (kind) {
    case SampleKind::kStepped:
      return "stepped samples (starlingd --algorithm diffusion)";
    case SampleKind::kTimed:
      return "time-stamped samples (starlingd --algorithm pairwise-diffusion)";
    case SampleKind::kNone:
      break;
  }
  return "no samples";
}

}  // namespace starling::node
