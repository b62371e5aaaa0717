#include "net/validation.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string>

namespace starling::net {
namespace {

bool Fail(Reject* reject, RejectReason reason, std::string detail) {
  if (reject != nullptr) {
    reject->reason = reason;
    reject->detail = std::move(detail);
  }
  return false;
}

std::string Hex(uint64_t v) {
  char buffer[24];
  std::snprintf(buffer, sizeof(buffer), "0x%016" PRIx64, v);
  return buffer;
}

}  // namespace

bool CheckAgainstRun(const Envelope& e, const RunExpectations& expected, Reject* reject) {
  const std::string what =
      std::string(MessageTypeName(e.type)) + " from " + std::to_string(e.sender);
  if (e.run_id != expected.run_id) {
    return Fail(reject, RejectReason::kWrongRun,
                what + ": run id " + Hex(e.run_id) + ", ours " + Hex(expected.run_id));
  }
  if (!std::binary_search(expected.peers.begin(), expected.peers.end(), e.sender)) {
    return Fail(reject, RejectReason::kUnknownSender, what + ": not one of our peers");
  }
  if (e.type == MessageType::kHello && e.hello.dim != expected.dim) {
    return Fail(
        reject, RejectReason::kWrongDimension,
        what + ": dim " + std::to_string(e.hello.dim) + ", ours " + std::to_string(expected.dim));
  }
  for (size_t i = 0; i < e.payloads.size(); ++i) {
    if (e.payloads[i].dim != expected.dim) {
      return Fail(reject, RejectReason::kWrongDimension,
                  what + ": payload " + std::to_string(i) + " dim " +
                      std::to_string(e.payloads[i].dim) + ", ours " + std::to_string(expected.dim));
    }
  }
  const size_t type = static_cast<size_t>(e.type);
  if (type < expected.payload_count.size()) {
    const int count = expected.payload_count[type];
    if (count != RunExpectations::kAnyCount && static_cast<size_t>(count) != e.payloads.size()) {
      return Fail(reject, RejectReason::kBadPayloadCount,
                  what + ": " + std::to_string(e.payloads.size()) + " payloads, expected " +
                      std::to_string(count));
    }
  }
  return true;
}

}  // namespace starling::net
