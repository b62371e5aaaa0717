#include "net/shm_ring.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <new>

namespace starling::net {
namespace {

constexpr size_t kMagicOffset = 0;
constexpr size_t kCapacityOffset = 8;
constexpr size_t kMaxFrameOffset = 12;
constexpr size_t kWritePosOffset = 64;
constexpr size_t kReadPosOffset = 128;
constexpr size_t kReaderSleepingOffset = 192;
constexpr size_t kReaderSeqOffset = 196;
constexpr size_t kReaderPollingOffset = 200;
constexpr size_t kWriterSleepingOffset = 256;
constexpr size_t kWriterSeqOffset = 260;

static_assert(sizeof(std::atomic<uint64_t>) == 8 && std::atomic<uint64_t>::is_always_lock_free,
              "positions must be plain lock-free words to be shared between processes");
static_assert(sizeof(std::atomic<uint32_t>) == 4 && std::atomic<uint32_t>::is_always_lock_free,
              "futex words must be plain lock-free words");

constexpr std::chrono::microseconds kSpin{20};

constexpr uint64_t Padded(uint64_t n) { return (n + 7) & ~uint64_t{7}; }

bool PowerOfTwo(uint32_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Not FUTEX_PRIVATE: the word is shared between processes.
long Futex(std::atomic<uint32_t>* word, int op, uint32_t value, const struct timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

}  // namespace

void ShmRing::Format(void* memory, uint32_t capacity, uint32_t max_frame) {
  char* base = static_cast<char*>(memory);
  std::memset(base, 0, kShmRingHeaderBytes);
  const uint64_t magic = kShmRingMagic;
  std::memcpy(base + kMagicOffset, &magic, 8);
  std::memcpy(base + kCapacityOffset, &capacity, 4);
  std::memcpy(base + kMaxFrameOffset, &max_frame, 4);
  new (base + kWritePosOffset) std::atomic<uint64_t>(0);
  new (base + kReadPosOffset) std::atomic<uint64_t>(0);
  for (size_t offset : {kReaderSleepingOffset, kReaderSeqOffset, kReaderPollingOffset,
                        kWriterSleepingOffset, kWriterSeqOffset}) {
    new (base + offset) std::atomic<uint32_t>(0);
  }
}

ShmRing::ShmRing(void* memory, size_t bytes, uint32_t capacity, uint32_t max_frame)
    : capacity_(capacity), max_frame_(max_frame) {
  if (!PowerOfTwo(capacity) || capacity < 64 || uint64_t{max_frame} + 8 > capacity) {
    error_ = "ring capacity " + std::to_string(capacity) + " with frames of up to " +
             std::to_string(max_frame) + " bytes: capacity must be a power of two >= 64 and " +
             "hold a frame of max_frame plus 8";
    return;
  }
  if (bytes < ShmRingBytes(capacity) || reinterpret_cast<uintptr_t>(memory) % 64 != 0) {
    error_ = "segment of " + std::to_string(bytes) + " bytes cannot hold a ring of " +
             std::to_string(capacity) + " bytes";
    return;
  }
  base_ = static_cast<char*>(memory);
  uint64_t magic;
  uint32_t header_capacity, header_max_frame;
  std::memcpy(&magic, base_ + kMagicOffset, 8);
  std::memcpy(&header_capacity, base_ + kCapacityOffset, 4);
  std::memcpy(&header_max_frame, base_ + kMaxFrameOffset, 4);
  if (magic != kShmRingMagic) {
    error_ = "segment does not start with the ring's magic number";
  } else if (header_capacity != capacity) {
    error_ = "ring capacity " + std::to_string(header_capacity) + ", expected " +
             std::to_string(capacity);
  } else if (header_max_frame != max_frame) {
    error_ = "ring frame bound " + std::to_string(header_max_frame) + ", expected " +
             std::to_string(max_frame);
  }
  if (!error_.empty()) {
    base_ = nullptr;
    return;
  }
  data_ = base_ + kShmRingHeaderBytes;
}

std::atomic<uint64_t>* ShmRing::write_pos() const {
  return reinterpret_cast<std::atomic<uint64_t>*>(base_ + kWritePosOffset);
}
std::atomic<uint64_t>* ShmRing::read_pos() const {
  return reinterpret_cast<std::atomic<uint64_t>*>(base_ + kReadPosOffset);
}
std::atomic<uint32_t>* ShmRing::word(size_t offset) const {
  return reinterpret_cast<std::atomic<uint32_t>*>(base_ + offset);
}

void ShmRing::CopyOut(uint64_t pos, char* dst, size_t n) const {
  const size_t start = static_cast<size_t>(pos & (capacity_ - 1));
  const size_t first = std::min(n, capacity_ - start);
  std::memcpy(dst, data_ + start, first);
  if (first < n) std::memcpy(dst + first, data_, n - first);
}

void ShmRing::CopyIn(uint64_t pos, const char* src, size_t n) {
  const size_t start = static_cast<size_t>(pos & (capacity_ - 1));
  const size_t first = std::min(n, capacity_ - start);
  std::memcpy(data_ + start, src, first);
  if (first < n) std::memcpy(data_, src + first, n - first);
}

void ShmRing::Wake(size_t sleeping_offset, size_t seq_offset) {
  // Only a sleeping peer costs a system call; the exchange makes one wake per sleep.
  if (word(sleeping_offset)->exchange(0, std::memory_order_seq_cst) == 0) return;
  word(seq_offset)->fetch_add(1, std::memory_order_seq_cst);
  Futex(word(seq_offset), FUTEX_WAKE, 1, nullptr);
  ++wakes_sent_;
}

template <typename Ready>
bool ShmRing::WaitFor(size_t sleeping_offset, size_t seq_offset, Ready ready,
                      std::chrono::steady_clock::time_point deadline) {
  // A short spin first: a peer that answers within microseconds is then met without two
  // futex calls and a scheduler round trip, which cost more than the exchange itself.
  const auto spin_end = std::min(deadline, std::chrono::steady_clock::now() + kSpin);
  do {
    if (ready()) return true;
    // Yield rather than only pause: when the peer waits for this core, spinning would hold it
    // off for the whole spin.
    sched_yield();
  } while (std::chrono::steady_clock::now() < spin_end);
  for (;;) {
    if (ready()) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    const uint32_t seq = word(seq_offset)->load(std::memory_order_seq_cst);
    word(sleeping_offset)->store(1, std::memory_order_seq_cst);
    // The peer may have published between the check above and the store: check again before
    // sleeping, so that its wake-up (which it skips when the word was not yet set) is not lost.
    if (ready()) {
      word(sleeping_offset)->store(0, std::memory_order_relaxed);
      return true;
    }
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - now);
    // At most 100 ms per sleep: a peer that died between setting and clearing the word cannot
    // keep this side from noticing its deadline.
    const int64_t ns = std::min<int64_t>(left.count(), 100'000'000);
    struct timespec timeout;
    timeout.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
    timeout.tv_nsec = static_cast<long>(ns % 1'000'000'000);
    Futex(word(seq_offset), FUTEX_WAIT, seq, &timeout);
    word(sleeping_offset)->store(0, std::memory_order_relaxed);
  }
}

ShmRing::Status ShmRing::Write(const char* data, size_t size,
                               std::chrono::steady_clock::time_point deadline) {
  const std::string_view part(data, size);
  return WriteParts(&part, 1, deadline);
}

ShmRing::Status ShmRing::WriteParts(const std::string_view* parts, size_t count,
                                    std::chrono::steady_clock::time_point deadline) {
  if (base_ == nullptr || broken_) return Status::kBroken;
  uint64_t size = 0;
  for (size_t i = 0; i < count; ++i) size += parts[i].size();
  if (size > max_frame_) return Status::kTooLarge;
  const uint64_t need = Padded(4 + size);
  bool bad = false;
  uint64_t read = 0;
  auto room = [&] {
    read = read_pos()->load(std::memory_order_acquire);
    // The reader's position is untrusted: it can never pass what was written, nor lag by more
    // than the capacity.
    if (read > own_pos_ || own_pos_ - read > capacity_) {
      bad = true;
      return true;
    }
    return capacity_ - (own_pos_ - read) >= need;
  };
  if (!WaitFor(kWriterSleepingOffset, kWriterSeqOffset, room, deadline)) return Status::kFull;
  if (bad) {
    broken_ = true;
    broken_reason_ = "the reader's position " + std::to_string(read) +
                     " is outside what was written (" + std::to_string(own_pos_) +
                     " bytes, ring of " + std::to_string(capacity_) + ")";
    return Status::kBroken;
  }
  const uint32_t length = static_cast<uint32_t>(size);
  CopyIn(own_pos_, reinterpret_cast<const char*>(&length), 4);
  uint64_t at = own_pos_ + 4;
  for (size_t i = 0; i < count; ++i) {
    CopyIn(at, parts[i].data(), parts[i].size());
    at += parts[i].size();
  }
  own_pos_ += need;
  write_pos()->store(own_pos_, std::memory_order_release);
  Wake(kReaderSleepingOffset, kReaderSeqOffset);
  return Status::kOk;
}

ShmRing::Status ShmRing::Read(std::string* out, Reject* reject,
                              std::chrono::steady_clock::time_point deadline) {
  if (base_ == nullptr || broken_) return Status::kBroken;
  uint64_t written = 0;
  bool bad = false;
  auto ready = [&] {
    written = write_pos()->load(std::memory_order_acquire);
    if (written < own_pos_ || written - own_pos_ > capacity_ || written % 8 != 0) {
      bad = true;
      return true;
    }
    return written != own_pos_;
  };
  if (!WaitFor(kReaderSleepingOffset, kReaderSeqOffset, ready, deadline)) return Status::kEmpty;
  if (bad) {
    broken_ = true;
    broken_reason_ = "the writer's position " + std::to_string(written) +
                     " is not a frame boundary within the ring's " + std::to_string(capacity_) +
                     " bytes past what was read (" + std::to_string(own_pos_) + ")";
    return Status::kBroken;
  }
  const uint64_t available = written - own_pos_;
  uint32_t length = 0;
  // A frame that cannot be read leaves the next frame's start unknown: the ring is done.
  auto refuse = [&](RejectReason reason, std::string detail) {
    broken_ = true;
    broken_reason_ = detail;
    if (reject != nullptr) {
      reject->reason = reason;
      reject->detail = std::move(detail);
    }
    return Status::kReject;
  };
  if (available < 8) {
    return refuse(RejectReason::kTruncated, "shared-memory ring holds " +
                                                std::to_string(available) +
                                                " bytes, less than a frame header");
  }
  CopyOut(own_pos_, reinterpret_cast<char*>(&length), 4);
  if (length > max_frame_) {
    return refuse(RejectReason::kOversized, "shared-memory frame of " + std::to_string(length) +
                                                " bytes, bound " + std::to_string(max_frame_));
  }
  if (Padded(4 + uint64_t{length}) > available) {
    return refuse(RejectReason::kTruncated, "shared-memory frame of " + std::to_string(length) +
                                                " bytes, ring holds " + std::to_string(available));
  }
  out->resize(length);
  CopyOut(own_pos_ + 4, &(*out)[0], length);
  own_pos_ += Padded(4 + uint64_t{length});
  read_pos()->store(own_pos_, std::memory_order_release);
  Wake(kWriterSleepingOffset, kWriterSeqOffset);
  return Status::kOk;
}

bool ShmRing::Pending() const {
  if (base_ == nullptr || broken_) return false;
  return write_pos()->load(std::memory_order_acquire) != own_pos_;
}

void ShmRing::SetPolling(bool polling) {
  if (base_ == nullptr) return;
  word(kReaderPollingOffset)->store(polling ? 1 : 0, std::memory_order_seq_cst);
}

bool ShmRing::TakePolling() {
  if (base_ == nullptr) return false;
  // The word is the peer's to set: any non-zero value reads as "waiting".
  return word(kReaderPollingOffset)->exchange(0, std::memory_order_seq_cst) != 0;
}

const char* ShmRingStatusName(ShmRing::Status status) {
  switch (status) {
    case ShmRing::Status::kOk:
      return "ok";
    case ShmRing::Status::kEmpty:
      return "empty";
    case ShmRing::Status::kFull:
      return "full";
    case ShmRing::Status::kTooLarge:
      return "too_large";
    case ShmRing::Status::kReject:
      return "reject";
    case ShmRing::Status::kBroken:
      return "broken";
  }
  return "unknown";
}

}  // namespace starling::net
