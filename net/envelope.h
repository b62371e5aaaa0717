// The wire message model: one Envelope per ZeroMQ message (of one or more frames, codec.h).
//
// net/ carries envelopes and opaque vectors; it knows nothing of algorithms, so these types are
// its own (WireKey mirrors the round synchronizer's step key without depending on it). The byte
// layout of each type is documented in codec.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace starling::net {

// Bumped on any change of the wire layout. A peer speaking another version is rejected with
// RejectReason::kBadVersion before the rest of its message is interpreted.
// 2: payloads carry `check`; 3: payload bytes may travel out of line, in frames of their own;
// 4: a lattice payload's `check` holds the lattice integers' four-lane word hash
// (algorithms/compression/lattice_quantizer.cc), no longer their byte-wise FNV-1a: a version-3
// peer would pass HELLO and then fail every quantized merge's decoding check; 5: the seed-join
// messages (types 10-13, below).
inline constexpr uint32_t kProtocolVersion = 5;

// Values are part of the wire format: never renumber, only append.
enum class MessageType : uint8_t {
  kHello = 1,      // handshake and its answer (HelloInfo::ack)
  kRound = 2,      // a round-based algorithm's payload for one step
  kXchgReq = 3,    // pairwise exchange: offer of a snapshot
  kXchgRep = 4,    // pairwise exchange: the partner's snapshot in reply
  kBusy = 5,       // pairwise exchange: partner cannot serve this request now
  kResend = 6,     // ask a neighbour to send a step's payload again
  kHeartbeat = 7,  // liveness only
  kBye = 8,        // orderly leave, with a reason
  kTelemetry = 9,  // named metrics (and optionally the model) for probes
  // 10-19: membership. A run formed by joining a seed (starlingd --join) exchanges these on the
  // join ports of its nodes (net/endpoint.h), never on the peer port.
  kKeyQuery = 10,    // plaintext: which public key does the join port serve?
  kKeyAnswer = 11,   // plaintext: that key (text)
  kJoinSync = 12,    // CURVE: the sender's view of the members and its run options (join)
  kJoinAnswer = 13,  // CURVE: the receiver's view after merging, or its refusal (text)
  // 14-19: reserved for membership. 20-29: shared memory between co-located neighbours
  // (net/shm_link.h), on the peer port, under CURVE only.
  kShmOffer = 20,   // the lower id offers a ring pair (text: ShmOffer's line)
  kShmAnswer = 21,  // the other side's answer (text: empty = accepted, otherwise why not)
};
inline constexpr uint8_t kMinMessageType = 1;
inline constexpr uint8_t kMaxMessageType = 21;
// True for the values MessageType names (1-13 and 20-21; the values in between are unassigned).
constexpr bool IsKnownMessageType(uint64_t type) {
  return (type >= kMinMessageType && type <= 13) || type == 20 || type == 21;
}
// How many values MessageType names.
inline constexpr size_t kMessageTypeCount = 15;

// Stable lower-case name ("hello", "round", ...); "unknown" for values outside the enum.
const char* MessageTypeName(MessageType type);

// A step of a round-based algorithm: (iteration, phase, subround), ordered lexicographically.
struct WireKey {
  int64_t iteration = 0;
  int32_t phase = 0;
  int32_t subround = 0;
};
bool operator==(const WireKey& a, const WireKey& b);
bool operator!=(const WireKey& a, const WireKey& b);
bool operator<(const WireKey& a, const WireKey& b);

// How a payload vector's bytes represent its dim logical entries. Values are part of the wire
// format. Byte rules (checked by the decoder; see payload.h):
//   kFloat64: 8*dim bytes, IEEE-754 binary64, little-endian, all finite.
//   kFloat32: 4*dim bytes, IEEE-754 binary32, little-endian, all finite.
//   kLattice: dim codes of log2(modulus) bits each, bit-packed into ceil(dim*bits/8) bytes;
//             modulus is a power of two in [2, 2^16] and scale is finite and >= 0. The bit order
//             and the meaning of a code belong to the compressor in algorithms/.
//   kTopK:    k <= dim entries of 12 bytes each: uint32 index then binary64 value, both
//             little-endian, indices strictly increasing and < dim, values finite.
//   kCrossPolytope: vqSGD's cross-polytope message (algorithms/compression/
//             cross_polytope_quantizer.h): scale = the norm (finite, >= 0), modulus = S, the
//             number of codes, in [1, max(dim, 64)] (so that the payload is never larger than a
//             top-k one of dim entries); S codes of 1 + ceil(log2 dim) bits, code = 2k for
//             +e_k and 2k + 1 for -e_k, so every code < 2 dim; packed least significant bit
//             first into ceil(S * bits / 8) bytes whose unused high bits are 0; dim >= 1.
//   kRangeCodes: the quantized gossip's message (algorithms/round/quantized_gossip.h): scale =
//             the range r (finite, >= 0), modulus = R, the bits per code, in [1, 30]; dim codes
//             of R bits (each < 2^R: the cell of the uniform quantizer on [-r, r]), packed least
//             significant bit first into ceil(dim * R / 8) bytes whose unused high bits are 0;
//             dim in [1, 2^30]; check 0.
// scale and modulus are 0 for every encoding but kLattice, kCrossPolytope and kRangeCodes; check
// is 0 for float64, float32 and kRangeCodes.
enum class Encoding : uint8_t {
  kFloat64 = 0,
  kFloat32 = 1,
  kLattice = 2,
  kTopK = 3,
  kCrossPolytope = 4,
  kRangeCodes = 5,
};
inline constexpr uint8_t kMaxEncoding = 5;

// Stable lower-case name ("float64", ...); "unknown" for values outside the enum.
const char* EncodingName(Encoding encoding);

// One vector on the wire. Never owns its bytes:
//  - when sending, `bytes` views memory of the caller (see Float64Payload and friends in
//    payload.h), which must stay alive and unchanged until Encode returns;
//  - after Decode, `bytes` views the caller's input buffer (zero copy), which must outlive every
//    use of the payload. The view may be unaligned: read it through payload.h's helpers.
struct Payload {
  Encoding encoding = Encoding::kFloat64;
  uint32_t dim = 0;      // logical length d of the vector
  double scale = 0.0;    // kLattice; kCrossPolytope: the norm; kRangeCodes: the range r
  uint32_t modulus = 0;  // kLattice; kCrossPolytope: the number of codes S; kRangeCodes: R
  // kLattice, kTopK and kCrossPolytope only: the compressor's side information, opaque here
  // (Starling's lattice exchanges put the seed of their shared dither and a hash of the lattice
  // integers in it, so that the receiver can decode and detect a failed decoding; its top-k
  // exchanges, hashes of the public copies the two sides must agree on).
  uint64_t check = 0;
  std::string_view bytes;  // raw encoded bytes, not owned
};
// Field-wise equality; bytes compare by content, scale with ==.
bool operator==(const Payload& a, const Payload& b);
bool operator!=(const Payload& a, const Payload& b);

// HELLO's own fields. A HELLO with ack == false opens a link; the answer has ack == true (its
// text may carry a refusal reason, in which case the answering side also closes the link).
struct HelloInfo {
  uint32_t dim = 0;    // the sender's model dimension
  int32_t degree = 0;  // the sender's number of neighbours
  bool ack = false;    // false: hello; true: hello-ack
};

// A member of a run formed by seed join, as one node tells another. Untrusted like every byte
// that arrives: the codec bounds the strings, the receiver validates them (key, endpoint, host).
struct MemberRecord {
  std::string key;           // its CURVE public key (Z85): who it is
  std::string endpoint;      // its peer endpoint, tcp://HOST:PORT
  std::string host;          // its host's name, for messages only
  uint64_t incarnation = 0;  // when its process started (ms since the epoch): the record of a
                             // restarted node replaces its earlier one
  bool withdrawn = false;    // it stopped before the run started
};
bool operator==(const MemberRecord& a, const MemberRecord& b);

// The body of kJoinSync and kJoinAnswer.
struct JoinInfo {
  uint32_t nodes = 0;     // the run's number of nodes (--nodes)
  bool complete = false;  // `members` holds the run's members, final: `nodes` live records
  std::vector<MemberRecord> members;
  std::vector<std::string> options;  // kJoinSync: the run options, one "name=value" each
};
bool operator==(const JoinInfo& a, const JoinInfo& b);

struct TelemetryField {
  std::string name;    // e.g. "step", "loss", "consensus"
  double value = 0.0;  // finite
};

// One message. Which fields travel depends on `type`:
//   kHello:     hello, text (algorithm name, or the refusal reason in a refusing ack)
//   kRound:     key, payloads
//   kResend:    key
//   kXchgReq:   exchange_seq, payloads
//   kXchgRep:   exchange_seq, payloads
//   kBusy:      exchange_seq
//   kHeartbeat: (header only)
//   kBye:       text (the reason)
//   kTelemetry: telemetry, payloads (optionally the model)
//   kKeyQuery:  (header only)
//   kKeyAnswer: text (a Z85 public key)
//   kJoinSync:  join
//   kJoinAnswer: text (a refusal reason; empty: accepted), join (but its options)
//   kShmOffer:  text (the offer)
//   kShmAnswer: text (empty: accepted; otherwise the refusal)
// Every type carries run_id and sender. Encode ignores fields the type does not carry; Decode
// leaves them at their defaults.
struct Envelope {
  MessageType type = MessageType::kHeartbeat;
  uint64_t run_id = 0;  // RunIdOf(canonical configuration)
  int32_t sender = 0;   // node id of the sender as it claims; the transport must check it
  WireKey key;
  uint64_t exchange_seq = 0;
  std::vector<Payload> payloads;
  HelloInfo hello;
  std::string text;
  std::vector<TelemetryField> telemetry;
  JoinInfo join;
};
// Field-wise equality of every field (including those the type does not carry).
bool operator==(const Envelope& a, const Envelope& b);
bool operator!=(const Envelope& a, const Envelope& b);

// The run id: 64-bit FNV-1a of the canonical configuration text. Nodes whose canonical texts
// differ in any byte get different ids with overwhelming probability. It guards against
// accidental mix-ups (a stale node from another run), not against an adversary: FNV is not a
// cryptographic hash; CURVE and the key allow-list keep strangers out. Producing a canonical
// text (fixed key order, fixed number formatting) is the caller's job.
constexpr uint64_t RunIdOf(std::string_view canonical_config) {
  uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a 64 offset basis
  for (char c : canonical_config) {
    hash ^= static_cast<uint8_t>(c);
    hash *= 0x100000001b3ULL;  // FNV-1a 64 prime
  }
  return hash;
}

}  // namespace starling::net
