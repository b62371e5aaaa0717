#include "node/drivers/sample_telemetry.h"

#include <cmath>
#include <stdexcept>
#include <variant>

#include "net/payload.h"
#include "net/payload_view.h"

namespace starling::node {

SampleBatcher::SampleBatcher(uint32_t max_batch, int64_t max_age_ms)
    : max_batch_(max_batch < 1                 ? 1
                 : max_batch > kMaxSampleBatch ? kMaxSampleBatch
                                               : max_batch),
      max_age_ms_(max_age_ms) {
  values_.reserve(max_batch_);
}

void SampleBatcher::Add(int64_t step, double value, int64_t now_ms) {
  if (values_.empty()) {
    first_step_ = step;
    first_ms_ = now_ms;
  } else if (step != first_step_ + static_cast<int64_t>(values_.size())) {
    throw std::logic_error("sample batcher: step " + std::to_string(step) +
                           " does not follow the pending batch");
  }
  values_.push_back(value);
}

bool SampleBatcher::Due(int64_t now_ms) const {
  return !values_.empty() && (values_.size() >= max_batch_ || now_ms - first_ms_ >= max_age_ms_);
}

net::Envelope SampleBatcher::Take() {
  taken_.swap(values_);
  values_.clear();
  net::Envelope e;
  e.type = net::MessageType::kTelemetry;
  e.telemetry = {{kFirstStepField, static_cast<double>(first_step_)},
                 {kCountField, static_cast<double>(taken_.size())}};
  e.payloads = {net::Float64Payload(taken_.data(), static_cast<uint32_t>(taken_.size()))};
  return e;
}

std::optional<SampleBatch> ParseSampleBatch(const net::Envelope& envelope) {
  if (envelope.type != net::MessageType::kTelemetry || envelope.payloads.size() != 1) {
    return std::nullopt;
  }
  const double* first = nullptr;
  const double* count = nullptr;
  for (const auto& f : envelope.telemetry) {
    if (f.name == kFirstStepField) first = &f.value;
    if (f.name == kCountField) count = &f.value;
  }
  if (first == nullptr || count == nullptr) return std::nullopt;
  const net::Payload& p = envelope.payloads[0];
  // Steps are integers below 2^53 (exact in a double); the count must match the payload.
  if (!(*first >= 0 && *first < 0x1.0p53) || std::floor(*first) != *first) return std::nullopt;
  if (p.dim == 0 || p.dim > kMaxSampleBatch || *count != static_cast<double>(p.dim)) {
    return std::nullopt;
  }
  SampleBatch batch;
  batch.sender = envelope.sender;
  batch.first_step = static_cast<int64_t>(*first);
  batch.values.resize(p.dim);
  net::Reject reject;
  const auto view = net::PayloadReader().Read(p, p.dim, &reject, batch.values.data());
  if (!view || !std::holds_alternative<net::DenseView>(*view)) return std::nullopt;
  return batch;
}

}  // namespace starling::node
