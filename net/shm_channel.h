// Envelopes over a shared-memory ring (shm_ring.h): the wire's codec, bounds and counted rejects
// on a path without sockets.
//
// A message in the ring is the wire's message in the ring's bytes: a part table (u32 count k,
// then k u32 lengths) and the k parts end to end, where part 0 is the first frame the codec
// writes (EncodeFramed) and parts 1..k-1 are its out-of-line payloads' bytes, each copied once
// from the sender's vector into the ring. A receiver checks the table against the message (k at
// most 1 + max_payloads, the lengths adding up exactly) and decodes with the same Decode, the
// same DecodeLimits and the same value checks as a message from ZeroMQ, counting a refused
// message under the same RejectReason. The ring's frame bound is the run's PeerMessageBound
// plus the table (ShmMessageBound).
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "net/codec.h"
#include "net/envelope.h"
#include "net/reject.h"
#include "net/shm_ring.h"

namespace starling::net {

// The largest ring frame a channel under `limits` writes.
inline uint64_t ShmMessageBound(const DecodeLimits& limits) {
  return PeerMessageBound(limits) + 4 * (2 + uint64_t{limits.max_payloads});
}

class ShmSender {
 public:
  explicit ShmSender(ShmRing* ring) : ring_(ring) {}
  // Encodes and appends envelope, waiting for room until the deadline. Throws as Encode does for
  // a local bug (an envelope that cannot be encoded).
  ShmRing::Status Send(const Envelope& envelope, std::chrono::steady_clock::time_point deadline);
  // The ring frame's bytes of the last message Send encoded.
  size_t last_bytes() const { return last_bytes_; }

 private:
  ShmRing* ring_;
  size_t last_bytes_ = 0;
  // Reused across sends.
  std::string buffer_;
  std::string table_;
  std::vector<uint32_t> out_of_line_;
  std::vector<std::string_view> parts_;
};

class ShmReceiver {
 public:
  ShmReceiver(ShmRing* ring, const DecodeLimits& limits) : ring_(ring), limits_(limits) {}
  // Takes the next message. kOk: *out holds it, fully checked (ValueChecks::kAll); its payloads
  // view the receiver's own buffer, valid until the next call. kReject: the message was refused,
  // counted in rejects() and described in *reject (if non-null); the ring stays usable unless the
  // refusal was the ring's own framing (then later calls return kBroken).
  ShmRing::Status Receive(Envelope* out, Reject* reject,
                          std::chrono::steady_clock::time_point deadline);
  const RejectCounters& rejects() const { return rejects_; }
  // The ring frame's bytes of the last message read (accepted or refused).
  size_t last_bytes() const { return buffer_.size(); }

 private:
  ShmRing* ring_;
  DecodeLimits limits_;
  std::string buffer_;
  std::vector<std::string_view> frames_;
  RejectCounters rejects_;
};

}  // namespace starling::net
