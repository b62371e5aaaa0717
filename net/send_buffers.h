// Encoded messages handed to ZeroMQ without a copy.
//
// Sending a std::string through zmq::buffer makes ZeroMQ copy it into a message of its own: for a
// model of 1e6 doubles that is a second 8 MB copy and, because the fresh allocation is touched for
// the first time, about as many page faults. Instead, Encode writes straight into a buffer that
// becomes the message's storage; when ZeroMQ is done with the message (possibly later, on its I/O
// thread) the buffer returns to a small pool and the next send reuses it, pages already mapped.
//
// Large payload vectors go further (EncodeFrames): they travel as frames of their own, and a
// sender that can promise not to change them (a keepalive) hands its own buffer to ZeroMQ, so
// the bytes are not copied at all in user space.
//
// Threading: EncodeMessage and EncodeFrames are called by the owning thread; buffers come back
// from ZeroMQ's I/O thread, so the free list is locked. The pool is shared-owned by every message
// in flight, so a message may outlive the Transport that sent it (ZMQ_LINGER) without dangling.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <zmq.hpp>

#include "net/envelope.h"

namespace starling::net {

class SendBuffers : public std::enable_shared_from_this<SendBuffers> {
 public:
  // Messages shorter than this are encoded into a reused local buffer and copied by ZeroMQ,
  // which is cheaper than a pooled lease for a few hundred bytes.
  static constexpr size_t kZeroCopyMinBytes = 4096;

  // Keeps at most max_pooled idle buffers (each as large as the largest message it carried).
  static std::shared_ptr<SendBuffers> Create(size_t max_pooled = 4);

  // Encodes envelope (net::Encode, same exceptions) into a single-frame message ready to send,
  // every payload inline (for subscribers: telemetry).
  zmq::message_t EncodeMessage(const Envelope& envelope);

  // Encodes envelope (net::EncodeFramed, same exceptions) into the frames of one message,
  // replacing *frames: a header, then one frame per payload of at least kOutOfLineMinBytes
  // (codec.h). With a keepalive, those payloads' bytes are handed to ZeroMQ in place, without a
  // copy: the caller promises that they stay alive and unchanged while keepalive lives, and
  // ZeroMQ drops its reference when it has sent them (possibly later, on its I/O thread).
  // Without one, each is copied once into a pooled buffer, so the caller may reuse its memory
  // as soon as this returns.
  void EncodeFrames(const Envelope& envelope, const std::shared_ptr<const void>& keepalive,
                    std::vector<zmq::message_t>* frames);

  // Idle buffers in the pool (for tests and benchmarks).
  size_t pooled() const;

 private:
  struct Lease;
  explicit SendBuffers(size_t max_pooled) : max_pooled_(max_pooled) {}
  static void Release(void* data, void* hint);
  static void ReleaseKeepalive(void* data, void* hint);
  // A message over a pooled copy of bytes.
  zmq::message_t PooledCopy(std::string_view bytes);
  std::string Take();
  void Give(std::string buffer);

  const size_t max_pooled_;
  mutable std::mutex mutex_;
  std::vector<std::string> idle_;
  std::string small_;                  // owner thread only
  std::vector<uint32_t> out_of_line_;  // owner thread only
};

}  // namespace starling::net
