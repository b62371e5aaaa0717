// Envelopes over a shared-memory ring (shm_ring.h): the wire's codec, bounds and counted rejects
// on a path without sockets.
//
// A message in the ring is exactly the first frame the codec writes for the wire (Encode, all
// payloads inline), so a receiver decodes it with the same Decode, the same DecodeLimits and the
// same value checks as a message from ZeroMQ, and counts a refused message under the same
// RejectReason. The ring's frame bound is the run's PeerMessageBound.
#pragma once

#include <chrono>
#include <string>

#include "net/codec.h"
#include "net/envelope.h"
#include "net/reject.h"
#include "net/shm_ring.h"

namespace starling::net {

class ShmSender {
 public:
  explicit ShmSender(ShmRing* ring) : ring_(ring) {}
  // Encodes and appends envelope, waiting for room until the deadline. Throws as Encode does for
  // a local bug (an envelope that cannot be encoded).
  ShmRing::Status Send(const Envelope& envelope, std::chrono::steady_clock::time_point deadline);

 private:
  ShmRing* ring_;
  std::string buffer_;  // reused across sends
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

 private:
  ShmRing* ring_;
  DecodeLimits limits_;
  std::string buffer_;
  RejectCounters rejects_;
};

}  // namespace starling::net
