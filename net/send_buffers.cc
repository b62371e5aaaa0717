#include "net/send_buffers.h"

#include <utility>

#include "net/codec.h"

namespace starling::net {

// One message's storage and the pool it returns to.
struct SendBuffers::Lease {
  std::shared_ptr<SendBuffers> pool;
  std::string buffer;
};

std::shared_ptr<SendBuffers> SendBuffers::Create(size_t max_pooled) {
  return std::shared_ptr<SendBuffers>(new SendBuffers(max_pooled));
}

zmq::message_t SendBuffers::EncodeMessage(const Envelope& envelope) {
  if (EncodedSizeBound(envelope) < kZeroCopyMinBytes) {
    Encode(envelope, &small_);
    return zmq::message_t(small_.data(), small_.size());  // copies a few hundred bytes
  }
  auto lease = std::make_unique<Lease>();
  lease->buffer = Take();
  Encode(envelope, &lease->buffer);
  lease->pool = shared_from_this();
  void* data = lease->buffer.data();
  const size_t size = lease->buffer.size();
  // On success ZeroMQ owns the lease and calls Release exactly once; zmq_msg_init_data fails
  // only without memory for its small header (cppzmq throws, and the unique_ptr frees the lease).
  zmq::message_t message(data, size, &SendBuffers::Release, lease.get());
  lease.release();
  return message;
}

void SendBuffers::EncodeFrames(const Envelope& envelope,
                               const std::shared_ptr<const void>& keepalive,
                               std::vector<zmq::message_t>* frames) {
  frames->clear();
  EncodeFramed(envelope, kOutOfLineMinBytes, &small_, &out_of_line_);
  // The header holds only payloads below kOutOfLineMinBytes (at most max_payloads of them).
  frames->emplace_back(small_.data(), small_.size());
  for (const uint32_t i : out_of_line_) {
    const std::string_view bytes = envelope.payloads[i].bytes;
    if (!keepalive) {
      frames->push_back(PooledCopy(bytes));
      continue;
    }
    // ZeroMQ only reads a message it sends; it calls ReleaseKeepalive exactly once.
    auto hold = std::make_unique<std::shared_ptr<const void>>(keepalive);
    frames->emplace_back(const_cast<char*>(bytes.data()), bytes.size(),
                         &SendBuffers::ReleaseKeepalive, hold.get());
    hold.release();
  }
}

zmq::message_t SendBuffers::PooledCopy(std::string_view bytes) {
  auto lease = std::make_unique<Lease>();
  lease->buffer = Take();
  lease->buffer.assign(bytes.data(), bytes.size());
  lease->pool = shared_from_this();
  void* data = lease->buffer.data();
  zmq::message_t message(data, bytes.size(), &SendBuffers::Release, lease.get());
  lease.release();
  return message;
}

void SendBuffers::ReleaseKeepalive(void* /*data*/, void* hint) {
  delete static_cast<std::shared_ptr<const void>*>(hint);
}

void SendBuffers::Release(void* /*data*/, void* hint) {
  std::unique_ptr<Lease> lease(static_cast<Lease*>(hint));
  lease->pool->Give(std::move(lease->buffer));
}

std::string SendBuffers::Take() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (idle_.empty()) return std::string();
  std::string buffer = std::move(idle_.back());
  idle_.pop_back();
  return buffer;
}

void SendBuffers::Give(std::string buffer) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (idle_.size() >= max_pooled_) return;  // buffer is freed after the lock is released
  idle_.push_back(std::move(buffer));
}

size_t SendBuffers::pooled() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return idle_.size();
}

}  // namespace starling::net
