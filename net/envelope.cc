#include "net/envelope.h"

#include <tuple>

namespace starling::net {

const char* MessageTypeName(MessageType type) {
  switch (type) {
    case MessageType::kHello:
      return "hello";
    case MessageType::kRound:
      return "round";
    case MessageType::kXchgReq:
      return "xchg_req";
    case MessageType::kXchgRep:
      return "xchg_rep";
    case MessageType::kBusy:
      return "busy";
    case MessageType::kResend:
      return "resend";
    case MessageType::kHeartbeat:
      return "heartbeat";
    case MessageType::kBye:
      return "bye";
    case MessageType::kTelemetry:
      return "telemetry";
    case MessageType::kKeyQuery:
      return "key_query";
    case MessageType::kKeyAnswer:
      return "key_answer";
    case MessageType::kJoinSync:
      return "join_sync";
    case MessageType::kJoinAnswer:
      return "join_answer";
    case MessageType::kShmOffer:
      return "shm_offer";
    case MessageType::kShmAnswer:
      return "shm_answer";
  }
  return "unknown";
}

const char* EncodingName(Encoding encoding) {
  switch (encoding) {
    case Encoding::kFloat64:
      return "float64";
    case Encoding::kFloat32:
      return "float32";
    case Encoding::kLattice:
      return "lattice";
    case Encoding::kTopK:
      return "topk";
    case Encoding::kCrossPolytope:
      return "cross-polytope";
    case Encoding::kRangeCodes:
      return "range-codes";
  }
  return "unknown";
}

bool operator==(const WireKey& a, const WireKey& b) {
  return a.iteration == b.iteration && a.phase == b.phase && a.subround == b.subround;
}
bool operator!=(const WireKey& a, const WireKey& b) { return !(a == b); }
bool operator<(const WireKey& a, const WireKey& b) {
  return std::tie(a.iteration, a.phase, a.subround) < std::tie(b.iteration, b.phase, b.subround);
}

bool operator==(const Payload& a, const Payload& b) {
  return a.encoding == b.encoding && a.dim == b.dim && a.scale == b.scale &&
         a.modulus == b.modulus && a.check == b.check && a.bytes == b.bytes;
}
bool operator!=(const Payload& a, const Payload& b) { return !(a == b); }

bool operator==(const MemberRecord& a, const MemberRecord& b) {
  return a.key == b.key && a.endpoint == b.endpoint && a.host == b.host &&
         a.incarnation == b.incarnation && a.withdrawn == b.withdrawn;
}

bool operator==(const JoinInfo& a, const JoinInfo& b) {
  return a.nodes == b.nodes && a.complete == b.complete && a.members == b.members &&
         a.options == b.options;
}

bool operator==(const Envelope& a, const Envelope& b) {
  if (a.telemetry.size() != b.telemetry.size()) return false;
  for (size_t i = 0; i < a.telemetry.size(); ++i) {
    if (a.telemetry[i].name != b.telemetry[i].name ||
        a.telemetry[i].value != b.telemetry[i].value) {
      return false;
    }
  }
  return a.type == b.type && a.run_id == b.run_id && a.sender == b.sender && a.key == b.key &&
         a.exchange_seq == b.exchange_seq && a.payloads == b.payloads &&
         a.hello.dim == b.hello.dim && a.hello.degree == b.hello.degree &&
         a.hello.ack == b.hello.ack && a.text == b.text && a.join == b.join;
}
bool operator!=(const Envelope& a, const Envelope& b) { return !(a == b); }

}  // namespace starling::net
