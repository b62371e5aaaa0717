#include "net/codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <msgpack/object.hpp>
#include <msgpack/pack.hpp>
#include <msgpack/unpack.hpp>
#include <new>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "net/payload.h"

namespace starling::net {
namespace {

// Fields after the common four, by type (index = MessageType value).
constexpr uint32_t kCommonFields = 4;
constexpr uint32_t kBodyFields[kMaxMessageType + 1] = {
    0,  // (unused)
    4,  // kHello: dim, degree, ack, text
    4,  // kRound: iteration, phase, subround, payloads
    2,  // kXchgReq: exchange_seq, payloads
    2,  // kXchgRep: exchange_seq, payloads
    1,  // kBusy: exchange_seq
    3,  // kResend: iteration, phase, subround
    0,  // kHeartbeat
    1,  // kBye: text
    2,  // kTelemetry: fields, payloads
    0,  // kKeyQuery
    1,  // kKeyAnswer: text
    4,  // kJoinSync: nodes, complete, members, options
    4,  // kJoinAnswer: text, nodes, complete, members
    0,  // 14-19: unassigned
    0, 0, 0, 0, 0,
    1,  // kShmOffer: text
    1,  // kShmAnswer: text
};
constexpr uint32_t kMaxEnvelopeFields = kCommonFields + 4;
constexpr uint32_t kPayloadFields = 6;
constexpr uint32_t kTelemetryFieldFields = 2;
constexpr uint32_t kMemberFields = 5;
// Deepest nesting the layout uses: envelope -> payloads -> payload (or fields -> field, or
// members -> member).
constexpr size_t kMaxDepth = 3;
// Generous per-item framing overheads for size bounds (msgpack headers are at most 9 bytes).
constexpr size_t kHeaderBound = 64;
constexpr size_t kPayloadFramingBound = 48;
constexpr size_t kStringFramingBound = 8;
constexpr size_t kTelemetryFieldFramingBound = 24;
constexpr size_t kMemberFramingBound = 48;

bool KnownType(uint64_t type) { return IsKnownMessageType(type); }

// Peer text ends up in one-line log records, so it may not carry line breaks, escapes or other
// ASCII control characters (bytes >= 0x80 pass: UTF-8 is fine).
bool HasControlCharacter(std::string_view text) {
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Encoding.

// msgpack's packer writes through any type with write(const char*, size_t).
class StringSink {
 public:
  explicit StringSink(std::string* out) : out_(out) {}
  void write(const char* data, size_t size) { out_->append(data, size); }

 private:
  std::string* out_;
};

// msgpack-c's pack_double writes integral doubles as msgpack integers (and so turns -0.0 into
// 0); the protocol sends every float as float64 with its exact bits.
void PackFloat64(StringSink& sink, double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, 8);
  char buffer[9];
  buffer[0] = static_cast<char>(0xcb);
  for (int i = 0; i < 8; ++i) buffer[1 + i] = static_cast<char>(bits >> (56 - 8 * i));
  sink.write(buffer, 9);
}

uint32_t FrameLength(size_t size, const char* what) {
  if (size > std::numeric_limits<uint32_t>::max()) {
    throw std::invalid_argument(std::string("Encode: ") + what + " longer than 4 GiB");
  }
  return static_cast<uint32_t>(size);
}

void PackString(msgpack::packer<StringSink>& pk, const std::string& s, const char* what) {
  if (HasControlCharacter(s)) {
    throw std::invalid_argument(std::string("Encode: control character in ") + what);
  }
  const uint32_t n = FrameLength(s.size(), what);
  pk.pack_str(n);
  pk.pack_str_body(s.data(), n);
}

// Payloads of at least out_of_line_min_bytes are written as references to frames of their own
// (their indices appended to *out_of_line); the others inline.
void PackPayloads(msgpack::packer<StringSink>& pk, StringSink& sink,
                  const std::vector<Payload>& payloads, size_t out_of_line_min_bytes,
                  std::vector<uint32_t>* out_of_line) {
  pk.pack_array(FrameLength(payloads.size(), "payload list"));
  for (size_t i = 0; i < payloads.size(); ++i) {
    const Payload& p = payloads[i];
    Reject reject;
    if (!CheckPayloadShape(p, &reject)) {
      throw std::invalid_argument("Encode: payload " + std::to_string(i) + ": " + reject.detail);
    }
    const uint32_t n = FrameLength(p.bytes.size(), "payload");
    pk.pack_array(kPayloadFields);
    pk.pack_uint8(static_cast<uint8_t>(p.encoding));
    pk.pack_uint32(p.dim);
    PackFloat64(sink, p.scale);
    pk.pack_uint32(p.modulus);
    pk.pack_uint64(p.check);
    if (out_of_line != nullptr && p.bytes.size() >= out_of_line_min_bytes) {
      pk.pack_uint32(n);  // the bytes follow as a frame of their own
      out_of_line->push_back(static_cast<uint32_t>(i));
    } else {
      pk.pack_bin(n);
      pk.pack_bin_body(p.bytes.data(), n);  // the one copy of the vector's bytes
    }
  }
}

void PackBool(msgpack::packer<StringSink>& pk, bool value) {
  if (value) {
    pk.pack_true();
  } else {
    pk.pack_false();
  }
}

// nodes, complete, members (and, with `with_options`, options) of a join message.
void PackJoin(msgpack::packer<StringSink>& pk, const JoinInfo& join, bool with_options) {
  pk.pack_uint32(join.nodes);
  PackBool(pk, join.complete);
  pk.pack_array(FrameLength(join.members.size(), "member list"));
  for (const MemberRecord& m : join.members) {
    pk.pack_array(kMemberFields);
    PackString(pk, m.key, "member key");
    PackString(pk, m.endpoint, "member endpoint");
    PackString(pk, m.host, "member host");
    pk.pack_uint64(m.incarnation);
    PackBool(pk, m.withdrawn);
  }
  if (!with_options) return;
  pk.pack_array(FrameLength(join.options.size(), "option list"));
  for (const std::string& option : join.options) PackString(pk, option, "run option");
}

void PackKey(msgpack::packer<StringSink>& pk, const WireKey& key) {
  pk.pack_int64(key.iteration);
  pk.pack_int32(key.phase);
  pk.pack_int32(key.subround);
}

// ---------------------------------------------------------------------------------------------
// Decoding.

// Zero copy for bin (payload bytes): msgpack then stores a pointer into the caller's buffer
// instead of copying into its zone. The size check keeps the limit in force even with msgpack's
// v1 API, which applies limits only on the copying path; v2/v3 check before calling us.
bool ReferenceBin(msgpack::type::object_type type, size_t size, void* user_data) {
  const size_t max_bin = *static_cast<const size_t*>(user_data);
  return type == msgpack::type::BIN && size <= max_bin;
}

const char* ObjectTypeName(const msgpack::object& o) {
  switch (o.type) {
    case msgpack::type::NIL:
      return "nil";
    case msgpack::type::BOOLEAN:
      return "bool";
    case msgpack::type::POSITIVE_INTEGER:
      return "uint";
    case msgpack::type::NEGATIVE_INTEGER:
      return "int";
    case msgpack::type::FLOAT32:
      return "float32";
    case msgpack::type::FLOAT64:
      return "float64";
    case msgpack::type::STR:
      return "str";
    case msgpack::type::BIN:
      return "bin";
    case msgpack::type::ARRAY:
      return "array";
    case msgpack::type::MAP:
      return "map";
    case msgpack::type::EXT:
      return "ext";
  }
  return "unknown";
}

// Reads typed fields out of the msgpack tree, recording the first failure in *reject_.
class FieldReader {
 public:
  FieldReader(const DecodeLimits& limits, ValueChecks checks, const std::string_view* frames,
              size_t frame_count, Reject* reject)
      : limits_(limits),
        checks_(checks),
        frames_(frames),
        frame_count_(frame_count),
        reject_(reject) {}

  // Frames that no out-of-line payload claimed (0 for a well-formed message).
  size_t unclaimed_frames() const { return frame_count_ - next_frame_; }

  bool Fail(RejectReason reason, std::string detail) {
    if (reject_ != nullptr) {
      reject_->reason = reason;
      reject_->detail = std::move(detail);
    }
    return false;
  }

  bool WrongType(const msgpack::object& o, const char* field, const char* expected) {
    return Fail(RejectReason::kBadField,
                std::string(field) + ": expected " + expected + ", got " + ObjectTypeName(o));
  }

  bool Uint(const msgpack::object& o, const char* field, uint64_t max, uint64_t* value) {
    if (o.type != msgpack::type::POSITIVE_INTEGER) {
      return WrongType(o, field, max == std::numeric_limits<uint64_t>::max() ? "uint64" : "uint");
    }
    if (o.via.u64 > max) {
      return Fail(RejectReason::kBadField, std::string(field) + ": " + std::to_string(o.via.u64) +
                                               " exceeds " + std::to_string(max));
    }
    *value = o.via.u64;
    return true;
  }

  bool Uint32(const msgpack::object& o, const char* field, uint32_t* value) {
    uint64_t v = 0;
    if (!Uint(o, field, std::numeric_limits<uint32_t>::max(), &v)) return false;
    *value = static_cast<uint32_t>(v);
    return true;
  }

  bool Int(const msgpack::object& o, const char* field, int64_t min, int64_t max, int64_t* value) {
    int64_t v = 0;
    if (o.type == msgpack::type::POSITIVE_INTEGER) {
      if (o.via.u64 > static_cast<uint64_t>(max)) {
        return Fail(RejectReason::kBadField,
                    std::string(field) + ": " + std::to_string(o.via.u64) + " out of range");
      }
      v = static_cast<int64_t>(o.via.u64);
    } else if (o.type == msgpack::type::NEGATIVE_INTEGER) {
      v = o.via.i64;
      if (v < min) {
        return Fail(RejectReason::kBadField,
                    std::string(field) + ": " + std::to_string(v) + " out of range");
      }
    } else {
      return WrongType(o, field, "int");
    }
    *value = v;
    return true;
  }

  bool Int32(const msgpack::object& o, const char* field, int32_t* value) {
    int64_t v = 0;
    if (!Int(o, field, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(),
             &v)) {
      return false;
    }
    *value = static_cast<int32_t>(v);
    return true;
  }

  bool Int64(const msgpack::object& o, const char* field, int64_t* value) {
    return Int(o, field, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
               value);
  }

  // A finite float: msgpack float32 or float64, or an integer taken as its value, because
  // msgpack-c (4.x) packs integral doubles as integers and other senders may use it.
  bool FiniteDouble(const msgpack::object& o, const char* field, double* value) {
    double v = 0.0;
    if (o.type == msgpack::type::FLOAT64 || o.type == msgpack::type::FLOAT32) {
      v = o.via.f64;
    } else if (o.type == msgpack::type::POSITIVE_INTEGER) {
      v = static_cast<double>(o.via.u64);
    } else if (o.type == msgpack::type::NEGATIVE_INTEGER) {
      v = static_cast<double>(o.via.i64);
    } else {
      return WrongType(o, field, "float");
    }
    if (!std::isfinite(v)) {
      return Fail(RejectReason::kNonFinite, std::string(field) + " is not finite");
    }
    *value = v;
    return true;
  }

  bool Bool(const msgpack::object& o, const char* field, bool* value) {
    if (o.type != msgpack::type::BOOLEAN) return WrongType(o, field, "bool");
    *value = o.via.boolean;
    return true;
  }

  bool String(const msgpack::object& o, const char* field, std::string* value) {
    if (o.type != msgpack::type::STR) return WrongType(o, field, "str");
    // msgpack already enforced this; repeated so the bound does not depend on its API version.
    if (o.via.str.size > limits_.max_string_length) {
      return Fail(RejectReason::kOversized,
                  std::string(field) + ": string of " + std::to_string(o.via.str.size) + " bytes");
    }
    if (HasControlCharacter(std::string_view(o.via.str.ptr, o.via.str.size))) {
      return Fail(RejectReason::kBadField, std::string(field) + ": control character in text");
    }
    value->assign(o.via.str.ptr, o.via.str.size);
    return true;
  }

  bool Array(const msgpack::object& o, const char* field, uint32_t max_size,
             const msgpack::object** items, uint32_t* size) {
    if (o.type != msgpack::type::ARRAY) return WrongType(o, field, "array");
    if (o.via.array.size > max_size) {
      return Fail(RejectReason::kOversized, std::string(field) + ": " +
                                                std::to_string(o.via.array.size) +
                                                " entries, limit " + std::to_string(max_size));
    }
    *items = o.via.array.ptr;
    *size = o.via.array.size;
    return true;
  }

  bool ExactArray(const msgpack::object& o, const char* field, uint32_t n,
                  const msgpack::object** items) {
    if (o.type != msgpack::type::ARRAY) return WrongType(o, field, "array");
    if (o.via.array.size != n) {
      return Fail(RejectReason::kBadField, std::string(field) + ": " +
                                               std::to_string(o.via.array.size) +
                                               " fields, expected " + std::to_string(n));
    }
    *items = o.via.array.ptr;
    return true;
  }

  bool Payloads(const msgpack::object& o, std::vector<Payload>* payloads) {
    const msgpack::object* items = nullptr;
    uint32_t n = 0;
    if (!Array(o, "payloads", limits_.max_payloads, &items, &n)) return false;
    payloads->resize(n);
    for (uint32_t i = 0; i < n; ++i) {
      if (!OnePayload(items[i], &(*payloads)[i])) {
        if (reject_ != nullptr)
          reject_->detail = "payload " + std::to_string(i) + ": " + reject_->detail;
        return false;
      }
    }
    return true;
  }

  bool OnePayload(const msgpack::object& o, Payload* p) {
    const msgpack::object* f = nullptr;
    if (!ExactArray(o, "payload", kPayloadFields, &f)) return false;
    uint64_t encoding = 0;
    if (!Uint(f[0], "encoding", std::numeric_limits<uint64_t>::max(), &encoding)) return false;
    if (encoding > kMaxEncoding) {
      return Fail(RejectReason::kBadEncoding, "unknown encoding " + std::to_string(encoding));
    }
    p->encoding = static_cast<Encoding>(encoding);
    if (!Uint32(f[1], "dim", &p->dim)) return false;
    if (p->dim > limits_.max_dim) {
      return Fail(RejectReason::kOversized, "dim " + std::to_string(p->dim) + " exceeds limit " +
                                                std::to_string(limits_.max_dim));
    }
    if (!FiniteDouble(f[2], "scale", &p->scale)) return false;
    if (!Uint32(f[3], "modulus", &p->modulus)) return false;
    if (!Uint(f[4], "check", std::numeric_limits<uint64_t>::max(), &p->check)) return false;
    if (f[5].type == msgpack::type::BIN) {
      p->bytes = std::string_view(f[5].via.bin.ptr, f[5].via.bin.size);
    } else if (f[5].type == msgpack::type::POSITIVE_INTEGER) {
      // Out of line: the next unclaimed frame, of exactly the declared size.
      if (next_frame_ >= frame_count_) {
        return Fail(RejectReason::kTruncated,
                    "bytes: out of line in frame " + std::to_string(next_frame_ + 2) +
                        ", but the message has " + std::to_string(frame_count_ + 1) + " frames");
      }
      const std::string_view frame = frames_[next_frame_++];
      if (f[5].via.u64 != frame.size()) {
        return Fail(RejectReason::kBadLength, "bytes: declared " + std::to_string(f[5].via.u64) +
                                                  " out of line, frame holds " +
                                                  std::to_string(frame.size()));
      }
      p->bytes = frame;
    } else {
      return WrongType(f[5], "bytes", "bin or uint");
    }
    if (!CheckPayloadShape(*p, reject_)) return false;
    const bool deferred = checks_ == ValueChecks::kDeferFloats &&
                          (p->encoding == Encoding::kFloat64 || p->encoding == Encoding::kFloat32);
    return deferred || CheckPayloadValues(*p, reject_);
  }

  bool Telemetry(const msgpack::object& o, std::vector<TelemetryField>* fields) {
    const msgpack::object* items = nullptr;
    uint32_t n = 0;
    if (!Array(o, "telemetry", limits_.max_telemetry_fields, &items, &n)) return false;
    fields->resize(n);
    for (uint32_t i = 0; i < n; ++i) {
      const msgpack::object* f = nullptr;
      TelemetryField& field = (*fields)[i];
      if (!ExactArray(items[i], "telemetry field", kTelemetryFieldFields, &f) ||
          !String(f[0], "telemetry name", &field.name) ||
          !FiniteDouble(f[1], "telemetry value", &field.value)) {
        if (reject_ != nullptr) {
          reject_->detail = "telemetry field " + std::to_string(i) + ": " + reject_->detail;
        }
        return false;
      }
    }
    return true;
  }

  // nodes, complete and members of a join message.
  bool Join(const msgpack::object* f, JoinInfo* join) {
    const msgpack::object* items = nullptr;
    uint32_t n = 0;
    if (!Uint32(f[0], "join nodes", &join->nodes) ||
        !Bool(f[1], "join complete", &join->complete) ||
        !Array(f[2], "members", limits_.max_members, &items, &n)) {
      return false;
    }
    join->members.resize(n);
    for (uint32_t i = 0; i < n; ++i) {
      const msgpack::object* m = nullptr;
      MemberRecord& record = join->members[i];
      if (!ExactArray(items[i], "member", kMemberFields, &m) ||
          !String(m[0], "member key", &record.key) ||
          !String(m[1], "member endpoint", &record.endpoint) ||
          !String(m[2], "member host", &record.host) ||
          !Uint(m[3], "member incarnation", std::numeric_limits<uint64_t>::max(),
                &record.incarnation) ||
          !Bool(m[4], "member withdrawn", &record.withdrawn)) {
        if (reject_ != nullptr) {
          reject_->detail = "member " + std::to_string(i) + ": " + reject_->detail;
        }
        return false;
      }
    }
    return true;
  }

  bool Options(const msgpack::object& o, std::vector<std::string>* options) {
    const msgpack::object* items = nullptr;
    uint32_t n = 0;
    if (!Array(o, "options", limits_.max_options, &items, &n)) return false;
    options->resize(n);
    for (uint32_t i = 0; i < n; ++i) {
      if (!String(items[i], "run option", &(*options)[i])) return false;
    }
    return true;
  }

  bool Key(const msgpack::object* f, WireKey* key) {
    return Int64(f[0], "iteration", &key->iteration) && Int32(f[1], "phase", &key->phase) &&
           Int32(f[2], "subround", &key->subround);
  }

 private:
  const DecodeLimits& limits_;
  ValueChecks checks_;
  const std::string_view* frames_;
  size_t frame_count_;
  size_t next_frame_ = 0;
  Reject* reject_;
};

// Like *e = Envelope() but keeps the vectors' and string's storage for a reused envelope.
void ResetKeepingCapacity(Envelope* e) {
  e->type = MessageType::kHeartbeat;
  e->run_id = 0;
  e->sender = 0;
  e->key = WireKey();
  e->exchange_seq = 0;
  e->payloads.clear();
  e->hello = HelloInfo();
  e->text.clear();
  e->telemetry.clear();
  e->join.nodes = 0;
  e->join.complete = false;
  e->join.members.clear();
  e->join.options.clear();
}

bool DecodeFields(FieldReader& r, const msgpack::object& root, Envelope* out);

bool DecodeTree(const msgpack::object& root, const DecodeLimits& limits, ValueChecks checks,
                const std::string_view* frames, size_t frame_count, Envelope* out, Reject* reject) {
  FieldReader r(limits, checks, frames, frame_count, reject);
  if (!DecodeFields(r, root, out)) return false;
  if (r.unclaimed_frames() != 0) {
    return r.Fail(RejectReason::kMalformed, std::to_string(r.unclaimed_frames()) + " of " +
                                                std::to_string(frame_count) +
                                                " payload frames claimed by no payload");
  }
  return true;
}

bool DecodeFields(FieldReader& r, const msgpack::object& root, Envelope* out) {
  if (root.type != msgpack::type::ARRAY) return r.WrongType(root, "envelope", "array");
  const msgpack::object* f = root.via.array.ptr;
  const uint32_t n = root.via.array.size;
  // Version first: a peer of another version may lay out everything after it differently.
  if (n < 1) return r.Fail(RejectReason::kBadField, "envelope: empty array");
  uint64_t version = 0;
  if (!r.Uint(f[0], "version", std::numeric_limits<uint64_t>::max(), &version)) return false;
  if (version != kProtocolVersion) {
    return r.Fail(RejectReason::kBadVersion, "protocol version " + std::to_string(version) +
                                                 ", expected " + std::to_string(kProtocolVersion));
  }
  if (n < kCommonFields) {
    return r.Fail(RejectReason::kBadField,
                  "envelope: " + std::to_string(n) + " fields, expected at least 4");
  }
  uint64_t type = 0;
  if (!r.Uint(f[1], "type", std::numeric_limits<uint64_t>::max(), &type)) return false;
  if (!KnownType(type)) {
    return r.Fail(RejectReason::kUnknownType, "message type " + std::to_string(type));
  }
  ResetKeepingCapacity(out);
  out->type = static_cast<MessageType>(type);
  if (!r.Uint(f[2], "run_id", std::numeric_limits<uint64_t>::max(), &out->run_id) ||
      !r.Int32(f[3], "sender", &out->sender)) {
    return false;
  }
  const uint32_t expected = kCommonFields + kBodyFields[type];
  if (n != expected) {
    return r.Fail(RejectReason::kBadField, std::string(MessageTypeName(out->type)) + ": " +
                                               std::to_string(n) + " fields, expected " +
                                               std::to_string(expected));
  }
  const msgpack::object* body = f + kCommonFields;
  switch (out->type) {
    case MessageType::kHello:
      return r.Uint32(body[0], "hello dim", &out->hello.dim) &&
             r.Int32(body[1], "hello degree", &out->hello.degree) &&
             r.Bool(body[2], "hello ack", &out->hello.ack) &&
             r.String(body[3], "hello text", &out->text);
    case MessageType::kRound:
      return r.Key(body, &out->key) && r.Payloads(body[3], &out->payloads);
    case MessageType::kResend:
      return r.Key(body, &out->key);
    case MessageType::kXchgReq:
    case MessageType::kXchgRep:
      return r.Uint(body[0], "exchange_seq", std::numeric_limits<uint64_t>::max(),
                    &out->exchange_seq) &&
             r.Payloads(body[1], &out->payloads);
    case MessageType::kBusy:
      return r.Uint(body[0], "exchange_seq", std::numeric_limits<uint64_t>::max(),
                    &out->exchange_seq);
    case MessageType::kHeartbeat:
      return true;
    case MessageType::kBye:
      return r.String(body[0], "bye reason", &out->text);
    case MessageType::kTelemetry:
      return r.Telemetry(body[0], &out->telemetry) && r.Payloads(body[1], &out->payloads);
    case MessageType::kKeyQuery:
      return true;
    case MessageType::kKeyAnswer:
      return r.String(body[0], "key", &out->text);
    case MessageType::kJoinSync:
      return r.Join(body, &out->join) && r.Options(body[3], &out->join.options);
    case MessageType::kJoinAnswer:
      return r.String(body[0], "join refusal", &out->text) && r.Join(body + 1, &out->join);
    case MessageType::kShmOffer:
      return r.String(body[0], "shared-memory offer", &out->text);
    case MessageType::kShmAnswer:
      return r.String(body[0], "shared-memory answer", &out->text);
  }
  return r.Fail(RejectReason::kUnknownType, "message type " + std::to_string(type));
}

bool SetReject(Reject* reject, RejectReason reason, const char* what) {
  if (reject != nullptr) {
    reject->reason = reason;
    // Even building the detail may fail when memory is exhausted; the reason is what counts.
    try {
      reject->detail = what;
    } catch (...) {
      reject->detail.clear();
    }
  }
  return false;
}

}  // namespace

DecodeLimits LimitsForRun(uint32_t dim, uint32_t max_payloads) {
  DecodeLimits limits;
  limits.max_members = 0;  // join messages never come to the peer port
  limits.max_options = 0;
  limits.max_dim = dim;
  limits.max_payloads = max_payloads;
  const uint64_t payload_bytes = kTopKEntryBytes * uint64_t{dim} + kPayloadFramingBound;
  const uint64_t field_bytes = uint64_t{limits.max_string_length} + kTelemetryFieldFramingBound;
  limits.max_message_bytes = kHeaderBound + uint64_t{max_payloads} * payload_bytes +
                             uint64_t{limits.max_telemetry_fields} * field_bytes +
                             limits.max_string_length + kStringFramingBound;
  return limits;
}

DecodeLimits JoinLimits() {
  DecodeLimits limits;
  limits.max_dim = 0;
  limits.max_payloads = 0;
  limits.max_telemetry_fields = 0;
  limits.max_members = kMaxJoinMembers;
  limits.max_options = kMaxJoinOptions;
  limits.max_string_length = kMaxJoinString;
  limits.max_message_bytes =
      kHeaderBound + kMaxJoinString + kStringFramingBound +
      uint64_t{kMaxJoinMembers} * (3 * uint64_t{kMaxJoinString} + kMemberFramingBound) +
      uint64_t{kMaxJoinOptions} * (kMaxJoinString + kStringFramingBound);
  return limits;
}

uint64_t PeerMessageBound(const DecodeLimits& limits) {
  const uint64_t payload_bytes = kTopKEntryBytes * uint64_t{limits.max_dim} + kPayloadFramingBound;
  const uint64_t bound = kHeaderBound + uint64_t{limits.max_payloads} * payload_bytes +
                         limits.max_string_length + kStringFramingBound;
  return std::min<uint64_t>(bound, limits.max_message_bytes);
}

size_t EncodedSizeBound(const Envelope& e) {
  size_t bound = kHeaderBound + e.text.size() + kStringFramingBound;
  for (const Payload& p : e.payloads) bound += p.bytes.size() + kPayloadFramingBound;
  for (const TelemetryField& t : e.telemetry) bound += t.name.size() + kTelemetryFieldFramingBound;
  for (const MemberRecord& m : e.join.members) {
    bound += m.key.size() + m.endpoint.size() + m.host.size() + kMemberFramingBound;
  }
  for (const std::string& option : e.join.options) bound += option.size() + kStringFramingBound;
  return bound;
}

namespace {

// out_of_line == nullptr: every payload inline.
void EncodeImpl(const Envelope& e, size_t out_of_line_min_bytes, std::string* out,
                std::vector<uint32_t>* out_of_line) {
  const uint8_t type = static_cast<uint8_t>(e.type);
  if (!KnownType(type)) {
    throw std::invalid_argument("Encode: unknown message type " + std::to_string(type));
  }
  out->clear();
  // One reservation up front so that the payload copies never trigger a reallocation.
  out->reserve(EncodedSizeBound(e));
  StringSink sink(out);
  msgpack::packer<StringSink> pk(sink);
  pk.pack_array(kCommonFields + kBodyFields[type]);
  pk.pack_uint32(kProtocolVersion);
  pk.pack_uint8(type);
  pk.pack_uint64(e.run_id);
  pk.pack_int32(e.sender);
  switch (e.type) {
    case MessageType::kHello:
      pk.pack_uint32(e.hello.dim);
      pk.pack_int32(e.hello.degree);
      PackBool(pk, e.hello.ack);
      PackString(pk, e.text, "hello text");
      break;
    case MessageType::kRound:
      PackKey(pk, e.key);
      PackPayloads(pk, sink, e.payloads, out_of_line_min_bytes, out_of_line);
      break;
    case MessageType::kResend:
      PackKey(pk, e.key);
      break;
    case MessageType::kXchgReq:
    case MessageType::kXchgRep:
      pk.pack_uint64(e.exchange_seq);
      PackPayloads(pk, sink, e.payloads, out_of_line_min_bytes, out_of_line);
      break;
    case MessageType::kBusy:
      pk.pack_uint64(e.exchange_seq);
      break;
    case MessageType::kHeartbeat:
      break;
    case MessageType::kBye:
      PackString(pk, e.text, "bye reason");
      break;
    case MessageType::kTelemetry:
      pk.pack_array(FrameLength(e.telemetry.size(), "telemetry list"));
      for (const TelemetryField& t : e.telemetry) {
        pk.pack_array(kTelemetryFieldFields);
        PackString(pk, t.name, "telemetry name");
        PackFloat64(sink, t.value);
      }
      PackPayloads(pk, sink, e.payloads, out_of_line_min_bytes, out_of_line);
      break;
    case MessageType::kKeyQuery:
      break;
    case MessageType::kKeyAnswer:
      PackString(pk, e.text, "key");
      break;
    case MessageType::kJoinSync:
      PackJoin(pk, e.join, /*with_options=*/true);
      break;
    case MessageType::kJoinAnswer:
      PackString(pk, e.text, "join refusal");
      PackJoin(pk, e.join, /*with_options=*/false);
      break;
    case MessageType::kShmOffer:
      PackString(pk, e.text, "shared-memory offer");
      break;
    case MessageType::kShmAnswer:
      PackString(pk, e.text, "shared-memory answer");
      break;
  }
}

}  // namespace

void Encode(const Envelope& envelope, std::string* out) { EncodeImpl(envelope, 0, out, nullptr); }

void EncodeFramed(const Envelope& envelope, size_t out_of_line_min_bytes, std::string* out,
                  std::vector<uint32_t>* out_of_line) {
  out_of_line->clear();
  EncodeImpl(envelope, out_of_line_min_bytes, out, out_of_line);
}

std::string Encode(const Envelope& envelope) {
  std::string out;
  Encode(envelope, &out);
  return out;
}

bool Decode(const char* data, size_t size, const std::string_view* frames, size_t frame_count,
            const DecodeLimits& limits, Envelope* out, Reject* reject, ValueChecks checks) {
  try {
    if (size == 0) return SetReject(reject, RejectReason::kTruncated, "empty message");
    uint64_t total = size;
    for (size_t i = 0; i < frame_count; ++i) total += frames[i].size();
    if (total > limits.max_message_bytes) {
      return SetReject(reject, RejectReason::kOversized,
                       ("message of " + std::to_string(total) + " bytes, limit " +
                        std::to_string(limits.max_message_bytes))
                           .c_str());
    }
    // Every msgpack container and string is bounded here, before msgpack allocates for it: an
    // array header may declare 2^32 elements in five bytes.
    const size_t max_array =
        std::max({size_t{kMaxEnvelopeFields}, size_t{kPayloadFields}, size_t{limits.max_payloads},
                  size_t{limits.max_telemetry_fields}, size_t{limits.max_members},
                  size_t{limits.max_options}});
    size_t max_bin = static_cast<size_t>(
        std::min<uint64_t>({limits.max_message_bytes, kTopKEntryBytes * uint64_t{limits.max_dim},
                            std::numeric_limits<uint32_t>::max()}));
    const msgpack::unpack_limit unpack_limit(/*array=*/max_array, /*map=*/0,
                                             /*str=*/limits.max_string_length, /*bin=*/max_bin,
                                             /*ext=*/0, /*depth=*/kMaxDepth);
    // A fresh zone per message costs a malloc and a free, a large part of decoding a small
    // message. The per-thread zone keeps one chunk across calls; it holds only the object tree
    // (payload bytes are referenced, not copied), so it stays small.
    thread_local msgpack::zone zone;
    struct ClearZone {
      ~ClearZone() { zone.clear(); }
    } clear_zone_on_exit;
    msgpack::object root;
    size_t offset = 0;
    try {
      root = msgpack::unpack(zone, data, size, offset, &ReferenceBin, &max_bin, unpack_limit);
    } catch (const msgpack::insufficient_bytes&) {
      return SetReject(reject, RejectReason::kTruncated, "message ends inside a msgpack value");
    } catch (const msgpack::map_size_overflow&) {
      return SetReject(reject, RejectReason::kMalformed, "msgpack map (never sent)");
    } catch (const msgpack::ext_size_overflow&) {
      return SetReject(reject, RejectReason::kMalformed, "msgpack ext (never sent)");
    } catch (const msgpack::depth_size_overflow&) {
      return SetReject(reject, RejectReason::kOversized, "msgpack nesting too deep");
    } catch (const msgpack::array_size_overflow&) {
      return SetReject(reject, RejectReason::kOversized, "msgpack array over limit");
    } catch (const msgpack::str_size_overflow&) {
      return SetReject(reject, RejectReason::kOversized, "msgpack str over limit");
    } catch (const msgpack::bin_size_overflow&) {
      return SetReject(reject, RejectReason::kOversized, "msgpack bin over limit");
    } catch (const msgpack::size_overflow&) {
      return SetReject(reject, RejectReason::kOversized, "msgpack size over limit");
    } catch (const msgpack::unpack_error&) {
      return SetReject(reject, RejectReason::kMalformed, "not msgpack");
    }
    if (offset != size) {
      return SetReject(reject, RejectReason::kTrailingBytes,
                       (std::to_string(size - offset) + " bytes after the envelope").c_str());
    }
    return DecodeTree(root, limits, checks, frames, frame_count, out, reject);
  } catch (const std::bad_alloc&) {
    return SetReject(reject, RejectReason::kDecoderFault, "out of memory while decoding");
  } catch (...) {
    return SetReject(reject, RejectReason::kDecoderFault, "unexpected exception while decoding");
  }
}

}  // namespace starling::net
