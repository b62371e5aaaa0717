#include "net/shm_channel.h"

#include <cstring>

namespace starling::net {
namespace {

uint32_t ReadU32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

ShmRing::Status ShmSender::Send(const Envelope& envelope,
                                std::chrono::steady_clock::time_point deadline) {
  EncodeFramed(envelope, kOutOfLineMinBytes, &buffer_, &out_of_line_);
  const uint32_t count = static_cast<uint32_t>(1 + out_of_line_.size());
  table_.resize(4 * (1 + count));
  std::memcpy(&table_[0], &count, 4);
  const uint32_t first = static_cast<uint32_t>(buffer_.size());
  std::memcpy(&table_[4], &first, 4);
  parts_.clear();
  parts_.push_back(table_);
  parts_.push_back(buffer_);
  for (size_t i = 0; i < out_of_line_.size(); ++i) {
    const std::string_view bytes = envelope.payloads[out_of_line_[i]].bytes;
    const uint32_t size = static_cast<uint32_t>(bytes.size());
    std::memcpy(&table_[4 * (2 + i)], &size, 4);
    parts_.push_back(bytes);
  }
  last_bytes_ = 0;
  for (const std::string_view& part : parts_) last_bytes_ += part.size();
  return ring_->WriteParts(parts_.data(), parts_.size(), deadline);
}

ShmRing::Status ShmReceiver::Receive(Envelope* out, Reject* reject,
                                     std::chrono::steady_clock::time_point deadline) {
  Reject local;
  Reject* why = reject != nullptr ? reject : &local;
  const ShmRing::Status status = ring_->Read(&buffer_, why, deadline);
  if (status == ShmRing::Status::kReject) {
    rejects_.Count(why->reason);
    return status;
  }
  if (status != ShmRing::Status::kOk) return status;
  auto refuse = [&](RejectReason reason, std::string detail) {
    why->reason = reason;
    why->detail = std::move(detail);
    rejects_.Count(reason);
    return ShmRing::Status::kReject;
  };
  // The part table: every count and length is the peer's claim, checked against the message.
  const uint64_t size = buffer_.size();
  if (size < 8)
    return refuse(RejectReason::kTruncated,
                  "shared-memory message of " + std::to_string(size) + " bytes");
  const uint32_t count = ReadU32(buffer_.data());
  if (count == 0 || count > 1 + uint64_t{limits_.max_payloads}) {
    return refuse(RejectReason::kOversized, "shared-memory message of " + std::to_string(count) +
                                                " parts, at most " +
                                                std::to_string(1 + limits_.max_payloads));
  }
  uint64_t at = 4 + 4 * uint64_t{count};
  if (at > size) {
    return refuse(RejectReason::kTruncated, "shared-memory part table of " + std::to_string(count) +
                                                " parts in " + std::to_string(size) + " bytes");
  }
  frames_.clear();
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t length = ReadU32(buffer_.data() + 4 + 4 * i);
    if (length > size - at) {
      return refuse(RejectReason::kTruncated, "shared-memory part " + std::to_string(i) + " of " +
                                                  std::to_string(length) + " bytes, " +
                                                  std::to_string(size - at) + " left");
    }
    frames_.emplace_back(buffer_.data() + at, length);
    at += length;
  }
  if (at != size) {
    return refuse(RejectReason::kTrailingBytes,
                  std::to_string(size - at) + " bytes after the shared-memory message's parts");
  }
  if (!Decode(frames_[0].data(), frames_[0].size(), frames_.data() + 1, frames_.size() - 1, limits_,
              out, why, ValueChecks::kAll)) {
    rejects_.Count(why->reason);
    return ShmRing::Status::kReject;
  }
  return ShmRing::Status::kOk;
}

}  // namespace starling::net
