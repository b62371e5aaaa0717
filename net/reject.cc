#include "net/reject.h"

namespace starling::net {

const char* RejectReasonName(RejectReason reason) {
  switch (reason) {
    case RejectReason::kTruncated:
      return "truncated";
    case RejectReason::kMalformed:
      return "malformed";
    case RejectReason::kTrailingBytes:
      return "trailing_bytes";
    case RejectReason::kOversized:
      return "oversized";
    case RejectReason::kBadVersion:
      return "bad_version";
    case RejectReason::kUnknownType:
      return "unknown_type";
    case RejectReason::kBadField:
      return "bad_field";
    case RejectReason::kBadEncoding:
      return "bad_encoding";
    case RejectReason::kBadLength:
      return "bad_length";
    case RejectReason::kBadModulus:
      return "bad_modulus";
    case RejectReason::kBadSparse:
      return "bad_sparse";
    case RejectReason::kNonFinite:
      return "non_finite";
    case RejectReason::kDecoderFault:
      return "decoder_fault";
    case RejectReason::kWrongRun:
      return "wrong_run";
    case RejectReason::kWrongDimension:
      return "wrong_dimension";
    case RejectReason::kUnknownSender:
      return "unknown_sender";
    case RejectReason::kBadPayloadCount:
      return "bad_payload_count";
    case RejectReason::kUnlistedKey:
      return "unlisted_key";
    case RejectReason::kFailedHandshake:
      return "failed_handshake";
    case RejectReason::kKeyMismatch:
      return "key_mismatch";
    case RejectReason::kNotAdmitted:
      return "not_admitted";
    case RejectReason::kNoHandshake:
      return "no_handshake";
    case RejectReason::kConnectionCap:
      return "connection_cap";
    case RejectReason::kUnfinishedMessage:
      return "unfinished_message";
    case RejectReason::kCount:
      break;
  }
  return "unknown";
}

uint64_t RejectCounters::total() const {
  uint64_t sum = 0;
  for (uint64_t c : counts_) sum += c;
  return sum;
}

std::string RejectCounters::Summary() const {
  std::string out;
  for (size_t i = 0; i < kNumRejectReasons; ++i) {
    if (counts_[i] == 0) continue;
    if (!out.empty()) out += ' ';
    out += RejectReasonName(static_cast<RejectReason>(i));
    out += '=';
    out += std::to_string(counts_[i]);
  }
  return out;
}

}  // namespace starling::net
