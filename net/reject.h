// Why an incoming message was dropped, and per-reason counts of drops.
//
// Every byte from the network is untrusted (docs/explanations/architecture.md): a message that
// fails decoding or the run's checks is counted under one RejectReason, logged with its sender,
// and dropped.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace starling::net {

// Values index RejectCounters; kCount must stay last.
enum class RejectReason : uint8_t {
  // Decoding (codec.h).
  kTruncated = 0,  // ends inside a msgpack value (or is empty)
  kMalformed,      // not msgpack, or uses a msgpack type the protocol never sends (ext, map)
  kTrailingBytes,  // bytes after the envelope
  kOversized,      // over a DecodeLimits bound (message size, dim, count, string, nesting)
  kBadVersion,     // protocol version other than kProtocolVersion
  kUnknownType,    // message type outside MessageType
  kBadField,       // wrong field count, wrong field type, integer out of its range
  kBadEncoding,    // unknown payload encoding
  kBadLength,      // payload byte count inconsistent with its encoding and dim
  kBadModulus,     // lattice modulus not a power of two in [2, 2^16]
  kBadSparse,      // top-k indices unsorted, repeated or >= dim
  kNonFinite,      // NaN or Inf in a payload value, a lattice scale or a telemetry value
  kDecoderFault,   // the decoder itself failed (e.g. out of memory); not the peer's fault
  // Checks against the run (validation.h).
  kWrongRun,         // run id differs from ours
  kWrongDimension,   // payload or HELLO dimension differs from the run's
  kUnknownSender,    // sender is not one of our peers
  kBadPayloadCount,  // number of payload vectors not what this message type carries in the run
  // Security (security.h): counted per connection attempt or per message.
  kUnlistedKey,        // a CURVE client key not in the cluster file (refused by the ZAP handler)
  kFailedHandshake,    // a connection failed the handshake: plaintext peer, wrong server key
  kKeyMismatch,        // a message whose connection's key belongs to another id than its sender
  kNotAdmitted,        // a listed key on a port its role does not admit (probe on the peer port)
  kNoHandshake,        // a connection that ended without a handshake: idle, closed, not ZeroMQ
  kConnectionCap,      // a connection shut down because its port held its maximum already
  kUnfinishedMessage,  // a connection cut because libzmq held more of its bytes than the budget
  kCount
};
inline constexpr size_t kNumRejectReasons = static_cast<size_t>(RejectReason::kCount);

// Stable snake_case name for logs and metrics ("truncated", "wrong_run", ...).
const char* RejectReasonName(RejectReason reason);

// A rejection: the reason and one human-readable line of detail for the log (for example
// "payload 0: 800 bytes for float64 dim 99, expected 792"). Never contains raw peer bytes.
struct Reject {
  RejectReason reason = RejectReason::kMalformed;
  std::string detail;
};

// Per-reason reject counts. Not thread-safe: owned by the one poll loop that decodes.
class RejectCounters {
 public:
  void Count(RejectReason reason) {
    const size_t i = static_cast<size_t>(reason);
    if (i < kNumRejectReasons) ++counts_[i];
  }
  // Adds n to a reason's count (for counts kept elsewhere, e.g. by another thread).
  void Add(RejectReason reason, uint64_t n) {
    const size_t i = static_cast<size_t>(reason);
    if (i < kNumRejectReasons) counts_[i] += n;
  }
  uint64_t count(RejectReason reason) const {
    const size_t i = static_cast<size_t>(reason);
    return i < kNumRejectReasons ? counts_[i] : 0;
  }
  uint64_t total() const;
  // Indexed by static_cast<size_t>(RejectReason); names from RejectReasonName.
  const std::array<uint64_t, kNumRejectReasons>& counts() const { return counts_; }
  // "bad_length=2 non_finite=1", reasons with a zero count left out; "" when nothing counted.
  std::string Summary() const;
  void Reset() { counts_.fill(0); }

 private:
  std::array<uint64_t, kNumRejectReasons> counts_{};
};

}  // namespace starling::net
