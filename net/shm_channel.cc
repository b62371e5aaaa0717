#include "net/shm_channel.h"

namespace starling::net {

ShmRing::Status ShmSender::Send(const Envelope& envelope,
                                std::chrono::steady_clock::time_point deadline) {
  Encode(envelope, &buffer_);
  return ring_->Write(buffer_.data(), buffer_.size(), deadline);
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
  if (!Decode(buffer_.data(), buffer_.size(), limits_, out, why, ValueChecks::kAll)) {
    rejects_.Count(why->reason);
    return ShmRing::Status::kReject;
  }
  return ShmRing::Status::kOk;
}

}  // namespace starling::net
