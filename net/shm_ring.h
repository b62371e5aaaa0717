// A bounded single-producer/single-consumer ring of messages in shared memory.
//
// One process writes, one process reads. The memory is shared with the peer process, so every
// byte of it is untrusted by each side: the reader keeps its own read position and checks the
// writer's position and every frame length against the ring's bounds before copying; the writer
// checks the reader's position the same way. A violation marks the ring broken (the peer wrote
// outside the protocol); a broken ring never crashes and never recovers: its owner falls back to
// another path or drops the link.
//
// Layout (little-endian, in the segment; kShmRingHeaderBytes then `capacity` data bytes):
//   0   magic u64 (kShmRingMagic), 8 capacity u32, 12 max_frame u32      written by the creator
//   64  write position u64 (bytes ever written)                           the writer's line
//   128 read position u64 (bytes ever read)                               the reader's line
//   192 reader sleeping u32, 196 reader wake sequence u32 (futex word),
//   200 reader polling u32 (the reader waits elsewhere, e.g. in zmq_poll on a FIFO: SetPolling)
//   256 writer sleeping u32, 260 writer wake sequence u32 (futex word)
// A frame is a u32 length n, then n bytes, padded to a multiple of 8; frames wrap around the end
// of the data area. Positions only grow, so write - read is the number of bytes in the ring.
//
// Wake-ups: a reader with nothing to read first spins for up to 20 us, yielding its core at each
// turn (a peer answering within microseconds then costs no system call on either side), then
// sets its sleeping word, checks once more, and waits on the futex (a non-private one: the word
// is shared between processes); the writer makes the futex call only when that word is set. A
// reader that keeps up therefore costs the writer no system call, and the same holds for a
// writer waiting for room.
//
// Threading: one ShmRing object serves one role: Write is called by one thread of the writing
// process on its object, Read by one thread of the reading process on its own object.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "net/reject.h"

namespace starling::net {

inline constexpr uint64_t kShmRingMagic = 0x31676e69726d6873ULL;  // "shmring1"
inline constexpr size_t kShmRingHeaderBytes = 320;

// Bytes a segment needs for a ring of `capacity` data bytes.
constexpr size_t ShmRingBytes(uint32_t capacity) { return kShmRingHeaderBytes + capacity; }

class ShmRing {
 public:
  enum class Status {
    kOk,
    kEmpty,     // Read: nothing arrived before the deadline
    kFull,      // Write: no room before the deadline (the reader is slow or gone)
    kTooLarge,  // Write: the message exceeds max_frame (a local bug: size the ring to the run)
    kReject,    // Read: the frame was refused; *reject says why (counted by the caller)
    kBroken,    // the peer wrote positions outside the protocol; the ring is unusable
  };

  // Formats memory (ShmRingBytes(capacity) bytes, zeroed, 8-byte aligned) as an empty ring.
  // capacity is a power of two >= 64; max_frame + 8 <= capacity.
  static void Format(void* memory, uint32_t capacity, uint32_t max_frame);

  // Attaches to memory of `bytes` bytes that the peer formatted. Succeeds only when the header's
  // magic, capacity and max_frame are exactly those this side expects (so a peer cannot make
  // this side read past its mapping); otherwise ok() is false and error() says which field.
  ShmRing(void* memory, size_t bytes, uint32_t capacity, uint32_t max_frame);

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  uint32_t max_frame() const { return max_frame_; }

  // Appends one message, waiting for room until the deadline.
  Status Write(const char* data, size_t size, std::chrono::steady_clock::time_point deadline);
  // Appends one message made of `count` parts laid end to end (each copied once, straight into
  // the ring), waiting for room until the deadline.
  Status WriteParts(const std::string_view* parts, size_t count,
                    std::chrono::steady_clock::time_point deadline);
  // Copies the next message into *out (so that the peer cannot change it while it is decoded),
  // waiting for one until the deadline. kReject with *reject filled when the frame's length is
  // out of bounds (kOversized) or longer than what the ring holds (kTruncated); either breaks the
  // ring, since the next frame's start is then unknown.
  Status Read(std::string* out, Reject* reject, std::chrono::steady_clock::time_point deadline);

  // Reader: true if a frame (or a position outside the protocol, which Read then reports) is
  // waiting. No system call.
  bool Pending() const;
  // Reader that waits for input outside this class (a descriptor the writer's side signals):
  // SetPolling(true) before the wait, then check Pending() once more, so that a frame published
  // in between is not missed; SetPolling(false) after it. Writer: TakePolling() after a Write is
  // true once per such wait (it clears the word): then, and only then, signal the reader.
  void SetPolling(bool polling);
  bool TakePolling();

  // kBroken's cause, naming the position or length the peer wrote; "" while the ring is usable.
  const std::string& broken_reason() const { return broken_reason_; }

  // Futex system calls this side made to wake its peer (for tests and statistics).
  uint64_t wakes_sent() const { return wakes_sent_; }

 private:
  std::atomic<uint64_t>* write_pos() const;
  std::atomic<uint64_t>* read_pos() const;
  std::atomic<uint32_t>* word(size_t offset) const;
  void CopyOut(uint64_t pos, char* dst, size_t n) const;
  void CopyIn(uint64_t pos, const char* src, size_t n);
  void Wake(size_t sleeping_offset, size_t seq_offset);
  // Waits until ready() or the deadline; false at the deadline.
  template <typename Ready>
  bool WaitFor(size_t sleeping_offset, size_t seq_offset, Ready ready,
               std::chrono::steady_clock::time_point deadline);

  char* base_ = nullptr;
  char* data_ = nullptr;
  uint32_t capacity_ = 0;
  uint32_t max_frame_ = 0;
  // This side's own position, never read back from the segment: the peer cannot move it.
  uint64_t own_pos_ = 0;
  bool broken_ = false;
  std::string broken_reason_;
  uint64_t wakes_sent_ = 0;
  std::string error_;
};

const char* ShmRingStatusName(ShmRing::Status status);

}  // namespace starling::net
