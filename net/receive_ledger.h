// Bytes the application has taken from each accepted connection, by descriptor: the receive
// side of the unfinished-message guard (security.h).
//
// libzmq 4.3 keeps the frames of a multipart message in the connection's pipe until its last
// frame arrives, out of the application's sight; no socket option bounds them. What it does
// tell is the descriptor each delivered frame came from (ZMQ_SRCFD). The transport's receive
// path adds every frame it takes from a server socket here, with a per-frame allowance for the
// framing that was on the wire (ZMTP and CURVE); the guard compares the sum with what TCP
// received on that descriptor (TCP_INFO) and cuts a connection whose difference - bytes libzmq
// read and holds - exceeds the port's budget.
//
// Descriptors are reused after a connection closes: the counts are never reset, the guard takes
// a baseline when it sees a connection accepted and uses differences only (frames of the old
// connection read after that baseline can only make the new one look smaller, never larger).
//
// Threading: Add from the socket's thread, Delivered from the guard's; a mutex guards the map.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace starling::net {

// Wire bytes a frame of n bytes costs beyond n, at most: ZMTP's flags and 8-byte size (9), and
// under CURVE the MESSAGE command's name, nonce, MAC and flags (33).
inline constexpr uint64_t kWireBytesPerFrame = 42;

class ReceiveLedger {
 public:
  struct Entry {
    uint64_t bytes = 0;  // frame bytes plus kWireBytesPerFrame per frame
    int32_t peer = -1;   // the last authenticated node seen on this descriptor, -1 if none
  };

  // Adds `bytes` (already including the framing allowance) delivered from descriptor fd.
  void Add(int fd, uint64_t bytes) {
    if (fd < 0) return;
    std::lock_guard<std::mutex> lock(mutex_);
    entries_[fd].bytes += bytes;
  }
  // Names the node whose messages arrive on fd (for the guard's log).
  void SetPeer(int fd, int32_t peer) {
    if (fd < 0) return;
    std::lock_guard<std::mutex> lock(mutex_);
    entries_[fd].peer = peer;
  }
  Entry Get(int fd) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(fd);
    return it == entries_.end() ? Entry{} : it->second;
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<int, Entry> entries_;
};

}  // namespace starling::net
