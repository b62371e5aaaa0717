// The msgpack wire codec: Envelope <-> bytes of one ZeroMQ message (one or more frames).
//
// Wire layout (protocol version 5: version 4's with the join messages; version 4 put a new lattice
// hash in `check`, version 2 had no out-of-line payloads, version 1 no payload `check`). The
// first frame is one msgpack array; its first four fields are common, the rest depend on the
// type:
//
//   [version, type, run_id, sender, <body>...]
//     version  uint               kProtocolVersion
//     type     uint               MessageType
//     run_id   uint64             RunIdOf(canonical configuration)
//     sender   int32
//   body by type:
//     HELLO      dim uint32, degree int32, ack bool, text str
//     ROUND      iteration int64, phase int32, subround int32, payloads
//     RESEND     iteration int64, phase int32, subround int32
//     XCHG_REQ   exchange_seq uint64, payloads
//     XCHG_REP   exchange_seq uint64, payloads
//     BUSY       exchange_seq uint64
//     HEARTBEAT  (none)
//     BYE        text str
//     TELEMETRY  fields, payloads
//     KEY_QUERY  (none)
//     KEY_ANSWER text str
//     JOIN_SYNC  nodes uint32, complete bool, members, options
//     JOIN_ANSWER text str, nodes uint32, complete bool, members
//   payloads  = array of payload
//   payload   = [encoding uint, dim uint32, scale float, modulus uint32, check uint64, bytes]
//   bytes     = bin             the payload's bytes, inline
//             | uint n          out of line: the bytes are the whole of the next frame not yet
//                               claimed by an earlier payload, and that frame holds exactly n
//                               bytes (large vectors travel as frames of their own, so
//                               the sender hands its buffer to ZeroMQ without a copy and the
//                               receiver gets them in a buffer of their own, 8-byte aligned)
//   fields    = array of [name str, value float]
//   members   = array of [key str, endpoint str, host str, incarnation uint64, withdrawn bool]
//   options   = array of str
//
// A message has exactly one frame per out-of-line payload after the first, in payload order;
// a frame no payload claims, or a payload whose frame is missing, rejects the whole message.
// The transport sends payloads of at least kOutOfLineMinBytes out of line and telemetry inline
// (single-frame messages for subscribers); a decoder accepts either form anywhere.
//
// Integers may use any msgpack integer width that holds the value. A float may be float32,
// float64 or an integer (msgpack-c 4.x's pack_double writes integral doubles as integers); the
// encoder writes the smallest integer forms and every float as float64 with its exact bits (so
// -0.0 survives). Strings (text, field names) hold no ASCII control characters, since peers'
// text is logged one line per event. Maps and ext values never appear. Payload bytes follow the
// rules of Encoding (envelope.h, payload.h).
//
// Threading: all functions are thread-compatible and keep no state between calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "net/envelope.h"
#include "net/reject.h"

namespace starling::net {

// Bounds on what Decode accepts. They bound every allocation the decoder makes, so size them to
// the run (LimitsForRun) rather than leaving them generous. The transport should also set
// ZMQ_MAXMSGSIZE to max_message_bytes so that oversized messages never reach memory.
struct DecodeLimits {
  uint64_t max_message_bytes = 64u << 20;  // whole encoded message
  uint32_t max_dim = 1u << 20;             // dim of one payload vector
  uint32_t max_payloads = 4;               // payload vectors in one message
  uint32_t max_telemetry_fields = 64;      // named values in one TELEMETRY
  uint32_t max_string_length = 1024;       // bytes in any one string (text, field names)
  uint32_t max_members = 1024;             // member records in one join message
  uint32_t max_options = 256;              // run options in one join message
};

// Limits for a run whose vectors have dimension dim and whose messages carry at most
// max_payloads of them: max_dim = dim and max_message_bytes just large enough for the largest
// legal message (max_payloads top-k vectors of dim entries, the biggest encoding, plus the
// largest telemetry and text), and no join members or options (they have no business on a peer
// port). The other fields keep their defaults.
DecodeLimits LimitsForRun(uint32_t dim, uint32_t max_payloads);

// The join ports' bounds: no payloads or telemetry; at most kMaxJoinMembers members and
// kMaxJoinOptions options, strings of at most kMaxJoinString bytes, and a message no larger than
// the largest legal one (about 3.5 MB).
inline constexpr uint32_t kMaxJoinMembers = 1024;
inline constexpr uint32_t kMaxJoinOptions = 256;
inline constexpr uint32_t kMaxJoinString = 1024;
DecodeLimits JoinLimits();

// The largest message a node sends to a neighbour under `limits` (no telemetry fields: those go
// to the PUB): the header, max_payloads top-k payloads of max_dim entries and the longest text,
// at most limits.max_message_bytes.
uint64_t PeerMessageBound(const DecodeLimits& limits);

// Upper bound on the encoded size of envelope, for sizing send buffers.
size_t EncodedSizeBound(const Envelope& envelope);

// Encodes envelope into *out, replacing its contents but keeping its capacity, so a buffer
// reused across sends stops allocating. Float64 payload bytes are appended with one memcpy.
// Fields the type does not carry are ignored. Throws std::invalid_argument for a local bug: an
// unknown type, a payload failing CheckPayloadShape (payload.h), a string with a control
// character, or a string or payload longer than msgpack can frame (4 GiB). Payload values (NaN,
// top-k order) are not scanned here; call CheckPayload before sending if their producer is not
// trusted.
void Encode(const Envelope& envelope, std::string* out);
std::string Encode(const Envelope& envelope);

// Payloads at least this long go out of line when the transport sends them: below it, a frame
// of its own costs more than copying the bytes into the first frame.
inline constexpr size_t kOutOfLineMinBytes = 4096;

// As Encode, but every payload of at least out_of_line_min_bytes bytes is written as an
// out-of-line reference (its bytes are not copied). *out_of_line receives the indices of those
// payloads in order: the caller sends envelope.payloads[i].bytes of each as the frames that
// follow *out, in that order. Same exceptions as Encode.
void EncodeFramed(const Envelope& envelope, size_t out_of_line_min_bytes, std::string* out,
                  std::vector<uint32_t>* out_of_line);

// How much of CheckPayloadValues (payload.h) Decode runs.
//   kAll:          every payload's values are scanned (NaN/Inf, top-k order): the envelope is
//                  fully checked when Decode returns.
//   kDeferFloats:  float64 and float32 payloads get only their O(1) shape checks; their values are
//                  checked by PayloadToDoubles or ReadDoubles (payload.h) as they read them, so
//                  that a received vector is read once instead of twice. Use it only
//                  where every float payload is read through one of those and a failure there is
//                  counted as a reject (the transport's Poll, see transport.h). Top-k values are
//                  still checked here.
enum class ValueChecks { kAll, kDeferFloats };

// Decodes one message: its first frame of size bytes at data, and the frames after it
// (frame_count of them at frames; none for a single-frame message). Never throws. Returns true
// and fills *out, or false and fills *reject (reason and a one-line detail) with *out left in an
// unspecified state.
//
// Success means: the bytes are exactly one msgpack value laid out as above, within limits, of
// version kProtocolVersion and a known type, every field of the right type and range, every
// payload passing CheckPayload (payload.h) with dim <= limits.max_dim (under kDeferFloats only
// CheckPayloadShape for float64/float32 payloads), every telemetry value finite. Checks against
// the run (run id, dimension, sender) are in validation.h.
//
// Also: every frame after the first is claimed by exactly one out-of-line payload, in order, and
// its size is the one declared; the first frame and the others together are at most
// limits.max_message_bytes (bounding the frame count is the caller's job: Poll drops messages of
// more than 1 + limits.max_payloads frames before decoding).
//
// Zero copy: out->payloads[i].bytes point into [data, data + size) or into the frame of an
// out-of-line payload; the caller must keep those buffers alive and unchanged while it uses them
// (e.g. hold the zmq::message_t of each frame). Strings are
// copied. Work and memory are bounded by size and limits, whatever the bytes declare.
//
// Memory: the msgpack object tree lives in a per-thread arena that is reused across calls, so a
// steady stream of messages does not allocate.
bool Decode(const char* data, size_t size, const std::string_view* frames, size_t frame_count,
            const DecodeLimits& limits, Envelope* out, Reject* reject,
            ValueChecks checks = ValueChecks::kAll);
// A single-frame message: an out-of-line payload in it is rejected (its frame is missing).
inline bool Decode(const char* data, size_t size, const DecodeLimits& limits, Envelope* out,
                   Reject* reject, ValueChecks checks = ValueChecks::kAll) {
  return Decode(data, size, nullptr, 0, limits, out, reject, checks);
}

}  // namespace starling::net
