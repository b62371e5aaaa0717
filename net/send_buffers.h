// Encoded messages handed to ZeroMQ without a copy (issue 7).
//
// Sending a std::string through zmq::buffer makes ZeroMQ copy it into a message of its own: for a
// model of 1e6 doubles that is a second 8 MB copy and, because the fresh allocation is touched for
// the first time, about as many page faults. Instead, Encode writes straight into a buffer that
// becomes the message's storage; when ZeroMQ is done with the message (possibly later, on its I/O
// thread) the buffer returns to a small pool and the next send reuses it, pages already mapped.
//
// Threading: EncodeMessage is called by the owning thread; buffers come back from ZeroMQ's I/O
// thread, so the free list is locked. The pool is shared-owned by every message in flight, so a
// message may outlive the Transport that sent it (ZMQ_LINGER) without dangling.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
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

  // Encodes envelope (net::Encode, same exceptions) into a message ready to send.
  zmq::message_t EncodeMessage(const Envelope& envelope);

  // Idle buffers in the pool (for tests and benchmarks).
  size_t pooled() const;

 private:
  struct Lease;
  explicit SendBuffers(size_t max_pooled) : max_pooled_(max_pooled) {}
  static void Release(void* data, void* hint);
  std::string Take();
  void Give(std::string buffer);

  const size_t max_pooled_;
  mutable std::mutex mutex_;
  std::vector<std::string> idle_;
  std::string small_;  // owner thread only
};

}  // namespace starling::net
