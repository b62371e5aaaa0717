// Checks of a decoded envelope against the run this node belongs to.
//
// Decode (codec.h) establishes that a message is well formed; these checks establish that it is
// meant for us: same run, same dimension, from a peer we know, with the number of vectors the
// run's algorithm sends. Failures are RejectReasons like decoding failures, so one
// RejectCounters counts both.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "net/envelope.h"
#include "net/reject.h"

namespace starling::net {

struct RunExpectations {
  uint64_t run_id = 0;
  uint32_t dim = 0;  // every payload's dim and HELLO's dim must equal it
  // Ids whose messages we accept, ascending. Empty accepts nobody. The claimed sender must also
  // match the transport's authenticated identity of the connection; that check is the
  // transport's, since only it knows the connection.
  std::vector<int32_t> peers;
  // Payload vectors each type must carry, indexed by MessageType value; kAnyCount = any number
  // within DecodeLimits. Types without payloads in the layout always carry 0.
  static constexpr int kAnyCount = -1;
  std::array<int, kMaxMessageType + 1> payload_count = MakeAnyCounts();

  void ExpectPayloads(MessageType type, int count) {
    payload_count[static_cast<size_t>(type)] = count;
  }

 private:
  static constexpr std::array<int, kMaxMessageType + 1> MakeAnyCounts() {
    std::array<int, kMaxMessageType + 1> counts{};
    for (int& c : counts) c = kAnyCount;
    return counts;
  }
};

// True if envelope belongs to the run described by expected; otherwise false with *reject (if
// non-null) filled: kWrongRun, kUnknownSender, kWrongDimension or kBadPayloadCount, checked in
// that order. The detail names both values, e.g. "dim 784, ours 785". Never throws (except
// std::bad_alloc while writing the detail).
bool CheckAgainstRun(const Envelope& envelope, const RunExpectations& expected, Reject* reject);

}  // namespace starling::net
