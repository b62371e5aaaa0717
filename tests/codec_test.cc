// Tests of the wire codec (net/): round trips of every message type and encoding, and rejection
// (never a crash, never a huge allocation) of malformed, truncated, oversized and hostile input.
#include "net/codec.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <msgpack/pack.hpp>
#include <msgpack/sbuffer.hpp>
#include <msgpack/unpack.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "net/envelope.h"
#include "net/payload.h"
#include "net/reject.h"
#include "net/validation.h"

namespace starling::net {
namespace {

constexpr uint32_t kDim = 20;
constexpr uint64_t kRun = 0x0123456789abcdefULL;
constexpr int32_t kSender = 3;
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

using Packer = msgpack::packer<msgpack::sbuffer>;

// Raw msgpack built by hand, so that tests can send what Encode refuses to produce.
template <typename F>
std::string Pack(F write) {
  msgpack::sbuffer buffer;
  Packer pk(buffer);
  write(pk);
  return std::string(buffer.data(), buffer.size());
}

void PackPayload(Packer& pk, uint64_t encoding, uint64_t dim, double scale, uint64_t modulus,
                 const std::string& bytes, uint64_t check = 0) {
  pk.pack_array(6);
  pk.pack_uint64(encoding);
  pk.pack_uint64(dim);
  pk.pack_double(scale);
  pk.pack_uint64(modulus);
  pk.pack_uint64(check);
  pk.pack_bin(static_cast<uint32_t>(bytes.size()));
  pk.pack_bin_body(bytes.data(), static_cast<uint32_t>(bytes.size()));
}

// A ROUND envelope laid out as codec.h documents, with one payload written by `payload`.
template <typename F>
std::string RawRound(F payload) {
  return Pack([&](Packer& pk) {
    pk.pack_array(8);
    pk.pack_uint32(kProtocolVersion);
    pk.pack_uint8(static_cast<uint8_t>(MessageType::kRound));
    pk.pack_uint64(kRun);
    pk.pack_int32(kSender);
    pk.pack_int64(7);
    pk.pack_int32(1);
    pk.pack_int32(0);
    pk.pack_array(1);
    payload(pk);
  });
}

std::string RawRoundPayload(uint64_t encoding, uint64_t dim, double scale, uint64_t modulus,
                            const std::string& bytes, uint64_t check = 0) {
  return RawRound(
      [&](Packer& pk) { PackPayload(pk, encoding, dim, scale, modulus, bytes, check); });
}

std::string DoublesBytes(const std::vector<double>& x) {
  return std::string(reinterpret_cast<const char*>(x.data()), 8 * x.size());
}

std::vector<double> Ramp(size_t n, double offset) {
  std::vector<double> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = offset + 0.1 * static_cast<double>(i) - 1.0 / 3.0;
  return x;
}

class CodecTest : public ::testing::Test {
 protected:
  CodecTest() : limits_(LimitsForRun(kDim, 4)) {
    // Every message type is decoded here, the join messages too (a peer port refuses their
    // members and options: JoinBodiesAreBoundedByTheirOwnLimits).
    limits_.max_members = DecodeLimits().max_members;
    limits_.max_options = DecodeLimits().max_options;
    model_ = Ramp(kDim, 0.5);
    float32_source_ = Ramp(kDim, -2.0);
    lattice_codes_.assign(LatticeBytes(kDim, 16), '\0');
    for (size_t i = 0; i < lattice_codes_.size(); ++i) {
      lattice_codes_[i] = static_cast<char>(37 * i + 11);
    }
  }

  Payload Float64() const { return Float64Payload(model_.data(), kDim); }
  Payload Float32() { return Float32Payload(float32_source_.data(), kDim, &float32_storage_); }
  Payload Lattice() const {
    return LatticePayload(kDim, 0.125, 16, lattice_codes_, 0xfedcba9876543210ULL);
  }
  Payload TopK() {
    return TopKPayload(kDim, {0, 4, 5, kDim - 1}, {1.5, -2.25, 1e-300, 7.0}, &topk_storage_);
  }

  Envelope Base(MessageType type) const {
    Envelope e;
    e.type = type;
    e.run_id = kRun;
    e.sender = kSender;
    return e;
  }

  // One envelope of every type with all of its fields set to non-default values.
  std::vector<Envelope> AllTypes() {
    std::vector<Envelope> all;
    Envelope hello = Base(MessageType::kHello);
    hello.hello = HelloInfo{kDim, 5, false};
    hello.text = "optra";
    all.push_back(hello);
    hello.hello.ack = true;
    hello.text = "refused: dimension 21 differs from ours (20)";
    all.push_back(hello);

    Envelope round = Base(MessageType::kRound);
    round.key = WireKey{123456789012LL, 2, -1};
    round.payloads = {Float64(), Float32(), Lattice(), TopK()};
    all.push_back(round);

    Envelope resend = Base(MessageType::kResend);
    resend.key = WireKey{42, 1, 3};
    all.push_back(resend);

    for (MessageType t : {MessageType::kXchgReq, MessageType::kXchgRep}) {
      Envelope x = Base(t);
      x.exchange_seq = 0xfedcba9876543210ULL;
      x.payloads = {Float64()};
      all.push_back(x);
    }
    Envelope busy = Base(MessageType::kBusy);
    busy.exchange_seq = 99;
    all.push_back(busy);

    all.push_back(Base(MessageType::kHeartbeat));

    Envelope bye = Base(MessageType::kBye);
    bye.text = "SIGTERM";
    all.push_back(bye);

    Envelope telemetry = Base(MessageType::kTelemetry);
    telemetry.telemetry = {
        {"step", 1000.0}, {"loss", 0.1879462378}, {"consensus", 1e-9}, {"zero", -0.0}};
    telemetry.payloads = {Float64()};
    all.push_back(telemetry);

    all.push_back(Base(MessageType::kKeyQuery));
    Envelope key = Base(MessageType::kKeyAnswer);
    key.text = "rq:rM>}U?@Lns47E1%kR.o@n5FcmR4QQ]{]5Rn#x";
    all.push_back(key);
    Envelope sync = Base(MessageType::kJoinSync);
    sync.join.nodes = 5;
    sync.join.complete = true;
    sync.join.members = {{key.text, "tcp://10.0.0.1:7000", "host-a", 1764860000123ULL, false},
                         {"#" + key.text.substr(1), "tcp://[::1]:7004", "", 7, true}};
    sync.join.options = {"algorithm=extra", "step=0x1.999999999999ap-4", "topology=ring"};
    all.push_back(sync);
    Envelope answer = Base(MessageType::kJoinAnswer);
    answer.text = "other run options: --step 0.1 here, 0.2 at the seed";
    answer.join.nodes = 3;
    answer.join.members = {sync.join.members[1]};
    all.push_back(answer);
    Envelope offer = Base(MessageType::kShmOffer);
    offer.text = "shm1;host=0123abcd;uid=1000;name=seg-0-1-4242-1;capacity=1048576;max_frame=9000";
    all.push_back(offer);
    Envelope accepted = Base(MessageType::kShmAnswer);
    all.push_back(accepted);
    Envelope declined = Base(MessageType::kShmAnswer);
    declined.text = "another host (host id 0123abcd there, 4567ef01 here)";
    all.push_back(declined);
    return all;
  }

  bool DecodeOk(const std::string& bytes, Envelope* out) {
    Reject reject;
    const bool ok = Decode(bytes.data(), bytes.size(), limits_, out, &reject);
    EXPECT_TRUE(ok) << RejectReasonName(reject.reason) << ": " << reject.detail;
    return ok;
  }

  // Decodes bytes expecting a reject for `reason`; counts it. Returns the reject.
  Reject ExpectReject(const std::string& bytes, RejectReason reason) {
    return ExpectRejectWith(bytes, limits_, reason);
  }

  Reject ExpectRejectWith(const std::string& bytes, const DecodeLimits& limits,
                          RejectReason reason) {
    Envelope out;
    Reject reject;
    const bool ok = Decode(bytes.data(), bytes.size(), limits, &out, &reject);
    EXPECT_FALSE(ok) << "expected " << RejectReasonName(reason);
    if (!ok) {
      EXPECT_EQ(reject.reason, reason)
          << "got " << RejectReasonName(reject.reason) << ": " << reject.detail;
      EXPECT_FALSE(reject.detail.empty());
      counters_.Count(reject.reason);
    }
    return reject;
  }

  DecodeLimits limits_;
  RejectCounters counters_;
  std::vector<double> model_;
  std::vector<double> float32_source_;
  std::string float32_storage_;
  std::string lattice_codes_;
  std::string topk_storage_;
};

// ---------------------------------------------------------------------------------------------
// Round trips.

TEST_F(CodecTest, RoundTripsEveryMessageType) {
  std::set<MessageType> seen;
  for (const Envelope& original : AllTypes()) {
    SCOPED_TRACE(MessageTypeName(original.type));
    const std::string bytes = Encode(original);
    EXPECT_LE(bytes.size(), EncodedSizeBound(original));
    Envelope decoded;
    ASSERT_TRUE(DecodeOk(bytes, &decoded));
    EXPECT_EQ(decoded, original);
    for (size_t i = 0; i < decoded.telemetry.size(); ++i) {  // == does not see the sign of 0
      EXPECT_EQ(std::signbit(decoded.telemetry[i].value),
                std::signbit(original.telemetry[i].value));
    }
    seen.insert(original.type);
  }
  EXPECT_EQ(seen.size(), kMessageTypeCount);
}

TEST_F(CodecTest, EncodeIgnoresFieldsTheTypeDoesNotCarry) {
  Envelope e = Base(MessageType::kHeartbeat);
  e.text = "not sent";
  e.payloads = {Float64()};
  e.key.iteration = 5;
  Envelope decoded;
  const std::string bytes = Encode(e);  // decoded payloads view it
  ASSERT_TRUE(DecodeOk(bytes, &decoded));
  EXPECT_EQ(decoded, Base(MessageType::kHeartbeat));
}

TEST_F(CodecTest, Float64IsBitExactAndZeroCopy) {
  std::vector<double> x = {0.0,
                           -0.0,
                           1.0 / 3.0,
                           std::numeric_limits<double>::max(),
                           -std::numeric_limits<double>::max(),
                           std::numeric_limits<double>::min(),
                           std::numeric_limits<double>::denorm_min(),
                           -std::numeric_limits<double>::denorm_min(),
                           std::nextafter(1.0, 2.0),
                           6.02214076e23};
  Envelope e = Base(MessageType::kXchgReq);
  e.payloads = {Float64Payload(x.data(), static_cast<uint32_t>(x.size()))};
  const std::string bytes = Encode(e);
  Envelope decoded;
  ASSERT_TRUE(DecodeOk(bytes, &decoded));
  ASSERT_EQ(decoded.payloads.size(), 1u);
  const std::string_view view = decoded.payloads[0].bytes;
  // The decoded bytes reference the input buffer rather than a copy.
  EXPECT_GE(view.data(), bytes.data());
  EXPECT_LE(view.data() + view.size(), bytes.data() + bytes.size());

  std::vector<double> y;
  Reject reject;
  ASSERT_TRUE(PayloadToDoubles(decoded.payloads[0], &y, &reject)) << reject.detail;
  ASSERT_EQ(y.size(), x.size());
  EXPECT_EQ(std::memcmp(x.data(), y.data(), 8 * x.size()), 0);

  std::vector<double> z(x.size());
  ASSERT_TRUE(PayloadToDoubles(decoded.payloads[0], z.data(), z.size(), &reject));
  EXPECT_EQ(std::memcmp(x.data(), z.data(), 8 * x.size()), 0);
  EXPECT_FALSE(PayloadToDoubles(decoded.payloads[0], z.data(), z.size() - 1, &reject));
  EXPECT_EQ(reject.reason, RejectReason::kWrongDimension);
}

TEST_F(CodecTest, LargeFloat64RoundTripAndReusedBuffer) {
  const std::vector<double> x = Ramp(1 << 20, 3.0);
  DecodeLimits limits = LimitsForRun(1 << 20, 1);
  Envelope e = Base(MessageType::kRound);
  e.payloads = {Float64Payload(x.data(), 1 << 20)};
  std::string buffer;
  Encode(e, &buffer);
  const char* first = buffer.data();
  e.key.iteration = 1;
  Encode(e, &buffer);  // same size: the reused buffer must not reallocate
  EXPECT_EQ(buffer.data(), first);
  Envelope decoded;
  Reject reject;
  ASSERT_TRUE(Decode(buffer.data(), buffer.size(), limits, &decoded, &reject)) << reject.detail;
  EXPECT_EQ(decoded.key.iteration, 1);
  std::vector<double> y;
  ASSERT_TRUE(PayloadToDoubles(decoded.payloads[0], &y, &reject));
  EXPECT_EQ(std::memcmp(x.data(), y.data(), 8 * x.size()), 0);
}

TEST_F(CodecTest, Float32RoundsAndSaturates) {
  const std::vector<double> x = {0.1, -1e39, 1e39, 3.0};
  std::string storage;
  Envelope e = Base(MessageType::kXchgRep);
  e.payloads = {Float32Payload(x.data(), 4, &storage)};
  Envelope decoded;
  const std::string bytes = Encode(e);  // decoded payloads view it
  ASSERT_TRUE(DecodeOk(bytes, &decoded));
  std::vector<double> y;
  Reject reject;
  ASSERT_TRUE(PayloadToDoubles(decoded.payloads[0], &y, &reject)) << reject.detail;
  EXPECT_EQ(y[0], static_cast<double>(0.1f));
  EXPECT_EQ(y[1], -static_cast<double>(std::numeric_limits<float>::max()));
  EXPECT_EQ(y[2], static_cast<double>(std::numeric_limits<float>::max()));
  EXPECT_EQ(y[3], 3.0);
}

TEST_F(CodecTest, TopKAndLatticeCarryTheirBytes) {
  Envelope e = Base(MessageType::kRound);
  e.payloads = {TopK(), Lattice()};
  e.payloads[0].check = 0x0123456789abcdefULL;  // top-k payloads may carry side information too
  Envelope decoded;
  const std::string bytes = Encode(e);  // decoded payloads view it
  ASSERT_TRUE(DecodeOk(bytes, &decoded));
  std::vector<uint32_t> indices;
  std::vector<double> values;
  Reject reject;
  ASSERT_TRUE(UnpackTopK(decoded.payloads[0], &indices, &values, &reject)) << reject.detail;
  EXPECT_EQ(indices, (std::vector<uint32_t>{0, 4, 5, kDim - 1}));
  EXPECT_EQ(values, (std::vector<double>{1.5, -2.25, 1e-300, 7.0}));
  EXPECT_EQ(decoded.payloads[0].check, 0x0123456789abcdefULL);
  EXPECT_EQ(decoded.payloads[1].bytes, lattice_codes_);
  EXPECT_EQ(decoded.payloads[1].modulus, 16u);
  EXPECT_EQ(decoded.payloads[1].check, 0xfedcba9876543210ULL);  // all 64 bits of side information
  EXPECT_EQ(decoded.payloads[1].scale, 0.125);
  // Compressed payloads are not readable as doubles without their compressor.
  EXPECT_FALSE(PayloadToDoubles(decoded.payloads[0], &values, &reject));
  EXPECT_EQ(reject.reason, RejectReason::kBadEncoding);
}

TEST_F(CodecTest, LatticeByteCountsForEveryModulus) {
  for (int bits = 1; bits <= 16; ++bits) {
    const uint32_t modulus = 1u << bits;
    EXPECT_EQ(LatticeBits(modulus), bits);
    for (uint32_t dim : {0u, 1u, 7u, 8u, 9u, 1000u}) {
      const uint64_t expected = (uint64_t{dim} * bits + 7) / 8;
      ASSERT_EQ(LatticeBytes(dim, modulus), expected);
      const std::string codes(expected, '\x5a');
      Envelope e = Base(MessageType::kRound);
      e.payloads = {LatticePayload(dim, 2.0, modulus, codes)};
      const std::string bytes = Encode(e);
      Envelope decoded;
      Reject reject;
      ASSERT_TRUE(Decode(bytes.data(), bytes.size(), LimitsForRun(1000, 1), &decoded, &reject))
          << reject.detail;
      EXPECT_EQ(decoded, e);
    }
  }
  for (uint32_t bad : {0u, 1u, 3u, 6u, 1u << 17, 0x80000000u, 0xffffffffu}) {
    EXPECT_EQ(LatticeBits(bad), 0) << bad;
  }
}

TEST_F(CodecTest, LargestLegalMessageFitsLimitsForRun) {
  // max_payloads top-k vectors with k = dim, full telemetry and the longest text.
  std::vector<uint32_t> indices(kDim);
  std::vector<double> values(kDim, -1.0);
  for (uint32_t i = 0; i < kDim; ++i) indices[i] = i;
  std::string storage;
  Envelope e = Base(MessageType::kTelemetry);
  const Payload topk = TopKPayload(kDim, indices, values, &storage);
  e.payloads.assign(limits_.max_payloads, topk);
  for (uint32_t i = 0; i < limits_.max_telemetry_fields; ++i) {
    e.telemetry.push_back({std::string(limits_.max_string_length, 'a' + i % 26), 1.0 * i});
  }
  const std::string bytes = Encode(e);
  EXPECT_LE(bytes.size(), limits_.max_message_bytes);
  Envelope decoded;
  ASSERT_TRUE(DecodeOk(bytes, &decoded));
  EXPECT_EQ(decoded, e);
}

TEST_F(CodecTest, EncodeRefusesLocalBugs) {
  Envelope e = Base(MessageType::kRound);
  Payload p = Float64();
  p.dim = kDim + 1;  // bytes no longer match dim
  e.payloads = {p};
  EXPECT_THROW(Encode(e), std::invalid_argument);
  e.payloads = {Lattice()};
  e.payloads[0].modulus = 12;
  EXPECT_THROW(Encode(e), std::invalid_argument);
  e.payloads.clear();
  e.type = static_cast<MessageType>(0);
  EXPECT_THROW(Encode(e), std::invalid_argument);
  std::string storage;
  EXPECT_THROW(TopKPayload(kDim, {3, 2}, {1.0, 1.0}, &storage), std::invalid_argument);
  EXPECT_THROW(TopKPayload(kDim, {kDim}, {1.0}, &storage), std::invalid_argument);
}

TEST_F(CodecTest, WireLayoutMatchesTheDocumentation) {
  // Fields in the order codec.h documents; a hand-packed message decodes to the same envelope.
  const std::string raw = Pack([&](Packer& pk) {
    pk.pack_array(8);
    pk.pack_uint32(5);  // protocol version
    pk.pack_uint32(1);  // HELLO
    pk.pack_uint64(kRun);
    pk.pack_int32(kSender);
    pk.pack_uint32(kDim);
    pk.pack_int32(4);
    pk.pack_true();
    pk.pack_str(3);
    pk.pack_str_body("abc", 3);
  });
  Envelope expected = Base(MessageType::kHello);
  expected.hello = HelloInfo{kDim, 4, true};
  expected.text = "abc";
  Envelope decoded;
  ASSERT_TRUE(DecodeOk(raw, &decoded));
  EXPECT_EQ(decoded, expected);
  EXPECT_EQ(Encode(expected), raw);
  // Accepts other integer widths and float32 for floats.
  const std::string wide = RawRound([&](Packer& pk) {
    pk.pack_array(6);
    pk.pack_fix_uint64(static_cast<uint64_t>(Encoding::kLattice));
    pk.pack_fix_uint32(kDim);
    pk.pack_float(0.5f);
    pk.pack_fix_uint64(16);
    pk.pack_fix_uint64(7);  // check
    pk.pack_bin(static_cast<uint32_t>(lattice_codes_.size()));
    pk.pack_bin_body(lattice_codes_.data(), static_cast<uint32_t>(lattice_codes_.size()));
  });
  ASSERT_TRUE(DecodeOk(wide, &decoded));
  EXPECT_EQ(decoded.payloads[0].scale, 0.5);
  EXPECT_EQ(decoded.payloads[0].check, 7u);
  // msgpack-c's own pack_double writes 3.0 as the integer 3; that is accepted as a float.
  const std::string integral = RawRoundPayload(2, kDim, 3.0, 16, lattice_codes_);
  ASSERT_TRUE(DecodeOk(integral, &decoded));
  EXPECT_EQ(decoded.payloads[0].scale, 3.0);
}

// ---------------------------------------------------------------------------------------------
// Rejects.

TEST_F(CodecTest, EveryPrefixOfEveryMessageIsTruncated) {
  size_t prefixes = 0;
  for (const Envelope& e : AllTypes()) {
    const std::string bytes = Encode(e);
    for (size_t n = 0; n < bytes.size(); ++n) {
      // A fresh copy of exactly n bytes, so that a read past the end is visible to ASan.
      const std::vector<char> prefix(bytes.begin(), bytes.begin() + n);
      Envelope out;
      Reject reject;
      ASSERT_FALSE(Decode(prefix.data(), n, limits_, &out, &reject)) << "prefix " << n;
      ASSERT_EQ(reject.reason, RejectReason::kTruncated) << "prefix " << n << ": " << reject.detail;
      counters_.Count(reject.reason);
      ++prefixes;
    }
  }
  EXPECT_EQ(counters_.count(RejectReason::kTruncated), prefixes);
  EXPECT_EQ(counters_.total(), prefixes);
}

TEST_F(CodecTest, TrailingGarbageIsRejected) {
  for (const Envelope& e : AllTypes()) {
    const std::string bytes = Encode(e);
    ExpectReject(bytes + '\0', RejectReason::kTrailingBytes);
    ExpectReject(bytes + "garbage", RejectReason::kTrailingBytes);
    ExpectReject(bytes + bytes, RejectReason::kTrailingBytes);
  }
  EXPECT_EQ(counters_.count(RejectReason::kTrailingBytes), 3 * AllTypes().size());
}

TEST_F(CodecTest, OversizedMessagesAreRejected) {
  // Payload dim above the limit.
  const std::vector<double> big = Ramp(kDim + 1, 0.0);
  Envelope e = Base(MessageType::kRound);
  e.payloads = {Float64Payload(big.data(), kDim + 1)};
  ExpectReject(Encode(e), RejectReason::kOversized);
  // Whole message above max_message_bytes.
  DecodeLimits small = limits_;
  small.max_message_bytes = 100;
  e.payloads = {Float64()};
  ExpectRejectWith(Encode(e), small, RejectReason::kOversized);
  // More payloads than allowed.
  e.payloads.assign(limits_.max_payloads + 1, Float64());
  ExpectReject(Encode(e), RejectReason::kOversized);
  // Too many telemetry fields, too long a name, too long a text.
  Envelope t = Base(MessageType::kTelemetry);
  t.telemetry.assign(limits_.max_telemetry_fields + 1, TelemetryField{"x", 1.0});
  ExpectReject(Encode(t), RejectReason::kOversized);
  t.telemetry = {TelemetryField{std::string(limits_.max_string_length + 1, 'n'), 1.0}};
  ExpectReject(Encode(t), RejectReason::kOversized);
  Envelope bye = Base(MessageType::kBye);
  bye.text = std::string(limits_.max_string_length + 1, 'r');
  ExpectReject(Encode(bye), RejectReason::kOversized);
  bye.text.pop_back();
  Envelope decoded;
  const std::string bytes = Encode(bye);
  EXPECT_TRUE(DecodeOk(bytes, &decoded));
  EXPECT_EQ(counters_.count(RejectReason::kOversized), 6u);
}

TEST_F(CodecTest, JoinBodiesAreBoundedByTheirOwnLimits) {
  Envelope sync = Base(MessageType::kJoinSync);
  sync.join.nodes = 2;
  sync.join.members = {{"k", "tcp://h:1", "h", 1, false}};
  // A peer port's limits refuse members and options: join messages never come there.
  ExpectRejectWith(Encode(sync), LimitsForRun(kDim, 4), RejectReason::kOversized);
  sync.join.members.clear();
  sync.join.options = {"algorithm=extra"};
  ExpectRejectWith(Encode(sync), LimitsForRun(kDim, 4), RejectReason::kOversized);
  // The join ports' limits: kMaxJoinMembers members, and strings of kMaxJoinString bytes.
  const DecodeLimits join = JoinLimits();
  sync.join.members.assign(kMaxJoinMembers, {"k", "tcp://h:1", "h", 1, false});
  Envelope decoded;
  Reject reject;
  const std::string largest = Encode(sync);
  EXPECT_TRUE(Decode(largest.data(), largest.size(), join, &decoded, &reject)) << reject.detail;
  sync.join.members.push_back(sync.join.members.back());
  ExpectRejectWith(Encode(sync), join, RejectReason::kOversized);
  sync.join.members = {{"k", "tcp://h:1", std::string(kMaxJoinString + 1, 'h'), 1, false}};
  ExpectRejectWith(Encode(sync), join, RejectReason::kOversized);
  // A member of four fields, a host with a line break.
  sync.join.members = {{"k", "tcp://h:1", "h\nnext line", 1, false}};
  EXPECT_THROW(Encode(sync), std::invalid_argument);  // never sent by us
  // [version, type, run_id, sender, nodes, complete, [[key, endpoint, host, incarnation]], []]:
  // a member of four fields.
  const std::string short_member = Pack([](Packer& pk) {
    pk.pack_array(8);
    pk.pack_uint32(kProtocolVersion);
    pk.pack_uint8(static_cast<uint8_t>(MessageType::kJoinSync));
    pk.pack_uint64(kRun);
    pk.pack_int32(kSender);
    pk.pack_uint32(2);
    pk.pack_false();
    pk.pack_array(1);
    pk.pack_array(4);
    for (const std::string field : {"k", "tcp://h:1", "h"}) {
      pk.pack_str(static_cast<uint32_t>(field.size()));
      pk.pack_str_body(field.data(), static_cast<uint32_t>(field.size()));
    }
    pk.pack_uint64(1);
    pk.pack_array(0);
  });
  ExpectRejectWith(short_member, join, RejectReason::kBadField);
  EXPECT_EQ(counters_.count(RejectReason::kOversized), 4u);
  EXPECT_EQ(counters_.count(RejectReason::kBadField), 1u);
}

TEST_F(CodecTest, WrongProtocolVersionIsRejected) {
  for (const Envelope& e : AllTypes()) {
    std::string bytes = Encode(e);
    // [0] is the fixarray header, [1] the version as a positive fixint.
    ASSERT_EQ(static_cast<uint8_t>(bytes[0]) & 0xf0, 0x90);
    ASSERT_EQ(bytes[1], static_cast<char>(kProtocolVersion));
    for (char version : {'\x00', '\x01', '\x02', '\x03', '\x04', '\x06', '\x7f'}) {
      bytes[1] = version;
      const Reject r = ExpectReject(bytes, RejectReason::kBadVersion);
      EXPECT_NE(r.detail.find("expected 5"), std::string::npos) << r.detail;
    }
  }
  // A version of another msgpack type is a bad field, not a crash.
  const std::string raw = Pack([](Packer& pk) {
    pk.pack_array(4);
    pk.pack_str(1);
    pk.pack_str_body("1", 1);
    pk.pack_uint8(7);
    pk.pack_uint64(kRun);
    pk.pack_int32(1);
  });
  ExpectReject(raw, RejectReason::kBadField);
}

TEST_F(CodecTest, UnknownTypeIsRejected) {
  std::string bytes = Encode(Base(MessageType::kHeartbeat));
  // 14 and 19: the unassigned values between the join's types and shared memory's.
  for (char type : {'\x00', '\x0e', '\x13', static_cast<char>(kMaxMessageType + 1), '\x7f'}) {
    bytes[2] = type;
    ExpectReject(bytes, RejectReason::kUnknownType);
  }
  EXPECT_EQ(counters_.count(RejectReason::kUnknownType), 5u);
}

TEST_F(CodecTest, WrongFieldTypesAndCountsAreRejected) {
  auto header = [](Packer& pk, uint32_t fields, MessageType type) {
    pk.pack_array(fields);
    pk.pack_uint32(kProtocolVersion);
    pk.pack_uint8(static_cast<uint8_t>(type));
    pk.pack_uint64(kRun);
  };
  // A string where the sender's int belongs.
  ExpectReject(Pack([&](Packer& pk) {
                 header(pk, 4, MessageType::kHeartbeat);
                 pk.pack_str(1);
                 pk.pack_str_body("3", 1);
               }),
               RejectReason::kBadField);
  // Sender beyond int32.
  ExpectReject(Pack([&](Packer& pk) {
                 header(pk, 4, MessageType::kHeartbeat);
                 pk.pack_int64(int64_t{1} << 40);
               }),
               RejectReason::kBadField);
  // Negative run id.
  ExpectReject(Pack([&](Packer& pk) {
                 pk.pack_array(4);
                 pk.pack_uint32(kProtocolVersion);
                 pk.pack_uint8(static_cast<uint8_t>(MessageType::kHeartbeat));
                 pk.pack_int64(-1);
                 pk.pack_int32(kSender);
               }),
               RejectReason::kBadField);
  // One field too many and one too few.
  ExpectReject(Pack([&](Packer& pk) {
                 header(pk, 5, MessageType::kHeartbeat);
                 pk.pack_int32(kSender);
                 pk.pack_nil();
               }),
               RejectReason::kBadField);
  ExpectReject(Pack([&](Packer& pk) { header(pk, 3, MessageType::kBusy); }),
               RejectReason::kBadField);
  // HELLO with an int for its ack flag; ROUND with a phase beyond int32.
  ExpectReject(Pack([&](Packer& pk) {
                 header(pk, 8, MessageType::kHello);
                 pk.pack_int32(kSender);
                 pk.pack_uint32(kDim);
                 pk.pack_int32(2);
                 pk.pack_uint8(1);
                 pk.pack_str(0);
               }),
               RejectReason::kBadField);
  ExpectReject(Pack([&](Packer& pk) {
                 header(pk, 8, MessageType::kRound);
                 pk.pack_int32(kSender);
                 pk.pack_int64(1);
                 pk.pack_int64(int64_t{1} << 33);
                 pk.pack_int32(0);
                 pk.pack_array(0);
               }),
               RejectReason::kBadField);
  // Payload bytes as str instead of bin; a check as str; a payload with 4 fields (or version 1's
  // 5); a telemetry value as str.
  Reject as_str = ExpectReject(RawRound([&](Packer& pk) {
                                 pk.pack_array(6);
                                 pk.pack_uint8(0);
                                 pk.pack_uint32(1);
                                 pk.pack_double(0.0);
                                 pk.pack_uint32(0);
                                 pk.pack_uint64(0);
                                 pk.pack_str(8);
                                 pk.pack_str_body("12345678", 8);
                               }),
                               RejectReason::kBadField);
  EXPECT_NE(as_str.detail.find("bytes"), std::string::npos) << as_str.detail;
  as_str = ExpectReject(RawRound([&](Packer& pk) {
                          pk.pack_array(6);
                          pk.pack_uint8(0);
                          pk.pack_uint32(0);
                          pk.pack_double(0.0);
                          pk.pack_uint32(0);
                          pk.pack_str(1);
                          pk.pack_str_body("0", 1);
                          pk.pack_bin(0);
                        }),
                        RejectReason::kBadField);
  EXPECT_NE(as_str.detail.find("check"), std::string::npos) << as_str.detail;
  ExpectReject(RawRound([&](Packer& pk) {
                 pk.pack_array(5);
                 pk.pack_uint8(0);
                 pk.pack_uint32(1);
                 pk.pack_double(0.0);
                 pk.pack_uint32(0);
                 pk.pack_bin(8);
                 pk.pack_bin_body("12345678", 8);
               }),
               RejectReason::kBadField);
  ExpectReject(RawRound([&](Packer& pk) {
                 pk.pack_array(4);
                 pk.pack_uint8(0);
                 pk.pack_uint32(0);
                 pk.pack_double(0.0);
                 pk.pack_uint32(0);
               }),
               RejectReason::kBadField);
  ExpectReject(Pack([&](Packer& pk) {
                 header(pk, 6, MessageType::kTelemetry);
                 pk.pack_int32(kSender);
                 pk.pack_array(1);
                 pk.pack_array(2);
                 pk.pack_str(4);
                 pk.pack_str_body("loss", 4);
                 pk.pack_str(1);
                 pk.pack_str_body("1", 1);
                 pk.pack_array(0);
               }),
               RejectReason::kBadField);
  // Control characters in peer text (it is logged one line per event); UTF-8 is fine.
  Envelope bye = Base(MessageType::kBye);
  bye.text = "caf\xc3\xa9 closed";
  Envelope decoded;
  const std::string utf8 = Encode(bye);
  EXPECT_TRUE(DecodeOk(utf8, &decoded));
  EXPECT_EQ(decoded.text, bye.text);
  bye.text = "two\nlines";
  EXPECT_THROW(Encode(bye), std::invalid_argument);
  for (const char* text : {"two\nlines", "esc\x1b[2J", "del\x7f"}) {
    const std::string raw = Pack([&](Packer& pk) {
      header(pk, 5, MessageType::kBye);
      pk.pack_int32(kSender);
      const uint32_t n = static_cast<uint32_t>(std::strlen(text));
      pk.pack_str(n);
      pk.pack_str_body(text, n);
    });
    ExpectReject(raw, RejectReason::kBadField);
  }
  // Scale and modulus on a float64 payload.
  ExpectReject(RawRoundPayload(0, kDim, 0.5, 0, DoublesBytes(model_)), RejectReason::kBadField);
  ExpectReject(RawRoundPayload(0, kDim, 0.0, 4, DoublesBytes(model_)), RejectReason::kBadField);
  ExpectReject(RawRoundPayload(0, kDim, 0.0, 0, DoublesBytes(model_), 1), RejectReason::kBadField);
  // The envelope itself not an array; an empty array.
  ExpectReject(Pack([](Packer& pk) { pk.pack_uint8(1); }), RejectReason::kBadField);
  ExpectReject(Pack([](Packer& pk) { pk.pack_array(0); }), RejectReason::kBadField);
  // Maps and ext values never appear in the protocol.
  ExpectReject(Pack([](Packer& pk) {
                 pk.pack_map(1);
                 pk.pack_uint8(1);
                 pk.pack_uint8(1);
               }),
               RejectReason::kMalformed);
  ExpectReject(Pack([](Packer& pk) {
                 pk.pack_array(1);
                 pk.pack_ext(1, 5);
                 pk.pack_ext_body("x", 1);
               }),
               RejectReason::kMalformed);
  // 0xc1 is never used in msgpack.
  ExpectReject(std::string("\x94\x01\xc1", 3), RejectReason::kMalformed);
}

TEST_F(CodecTest, PayloadLengthInconsistentWithDimIsRejected) {
  const std::string f64 = DoublesBytes(model_);
  ExpectReject(RawRoundPayload(0, kDim, 0, 0, f64.substr(8)), RejectReason::kBadLength);
  ExpectReject(RawRoundPayload(0, kDim, 0, 0, f64 + std::string(8, '\0')),
               RejectReason::kBadLength);
  ExpectReject(RawRoundPayload(0, kDim - 1, 0, 0, f64), RejectReason::kBadLength);
  ExpectReject(RawRoundPayload(0, kDim, 0, 0, f64.substr(1)), RejectReason::kBadLength);
  ExpectReject(RawRoundPayload(1, kDim, 0, 0, f64), RejectReason::kBadLength);  // float32
  ExpectReject(RawRoundPayload(2, kDim, 1.0, 16, lattice_codes_ + 'x'), RejectReason::kBadLength);
  ExpectReject(RawRoundPayload(2, kDim, 1.0, 16, lattice_codes_.substr(1)),
               RejectReason::kBadLength);
  ExpectReject(RawRoundPayload(3, kDim, 0, 0, std::string(13, '\0')), RejectReason::kBadLength);
  // More top-k entries than dim (index order would be fine: 0..3 with dim 3).
  std::string storage;
  const Payload four = TopKPayload(4, {0, 1, 2, 3}, {1, 2, 3, 4}, &storage);
  ExpectReject(RawRoundPayload(3, 3, 0, 0, std::string(four.bytes)), RejectReason::kBadLength);
  // Lengths are checked without trusting dim: dim near 2^32 with few bytes.
  ExpectReject(RawRoundPayload(0, 0xffffffffu, 0, 0, f64), RejectReason::kOversized);
  ExpectReject(RawRoundPayload(0, uint64_t{1} << 32, 0, 0, f64), RejectReason::kBadField);
  DecodeLimits unlimited = limits_;
  unlimited.max_dim = 0xffffffffu;
  ExpectRejectWith(RawRoundPayload(0, 0xffffffffu, 0, 0, f64), unlimited, RejectReason::kBadLength);
  ExpectRejectWith(RawRoundPayload(2, 0xffffffffu, 1.0, 1u << 16, f64), unlimited,
                   RejectReason::kBadLength);
}

TEST_F(CodecTest, UnknownEncodingIsRejected) {
  for (uint64_t encoding : {uint64_t{6}, uint64_t{255}, uint64_t{1000}, ~uint64_t{0}}) {
    ExpectReject(RawRoundPayload(encoding, kDim, 0, 0, DoublesBytes(model_)),
                 RejectReason::kBadEncoding);
  }
}

TEST_F(CodecTest, NonFiniteValuesAreRejected) {
  for (double bad : {kNaN, kInf, -kInf, -kNaN}) {
    for (size_t at : {size_t{0}, size_t{7}, size_t{kDim - 1}}) {
      std::vector<double> x = model_;
      x[at] = bad;
      Envelope e = Base(MessageType::kXchgReq);
      e.payloads = {Float64Payload(x.data(), kDim)};
      const Reject r = ExpectReject(Encode(e), RejectReason::kNonFinite);
      EXPECT_NE(r.detail.find("entry " + std::to_string(at)), std::string::npos) << r.detail;
      // The conversion helper refuses them too, whoever built the payload.
      std::vector<double> y;
      Reject reject;
      EXPECT_FALSE(PayloadToDoubles(e.payloads[0], &y, &reject));
      EXPECT_EQ(reject.reason, RejectReason::kNonFinite);
    }
    // float32 (the sender keeps NaN/Inf; only finite values saturate).
    std::vector<double> x = model_;
    x[3] = bad;
    std::string storage;
    Envelope e = Base(MessageType::kRound);
    e.payloads = {Float32Payload(x.data(), kDim, &storage)};
    ExpectReject(Encode(e), RejectReason::kNonFinite);
    // Top-k value.
    e.payloads = {TopKPayload(kDim, {1, 2}, {1.0, bad}, &storage)};
    ExpectReject(Encode(e), RejectReason::kNonFinite);
    // Lattice scale (Encode refuses it, so hand-packed).
    ExpectReject(RawRoundPayload(2, kDim, bad, 16, lattice_codes_), RejectReason::kNonFinite);
    // Telemetry value.
    Envelope t = Base(MessageType::kTelemetry);
    t.telemetry = {{"step", 1.0}, {"loss", bad}};
    ExpectReject(Encode(t), RejectReason::kNonFinite);
  }
  // Finite extremes pass.
  std::vector<double> x = model_;
  x[0] = std::numeric_limits<double>::max();
  x[1] = -std::numeric_limits<double>::denorm_min();
  Envelope e = Base(MessageType::kXchgReq);
  e.payloads = {Float64Payload(x.data(), kDim)};
  Envelope decoded;
  const std::string bytes = Encode(e);  // decoded payloads view it
  EXPECT_TRUE(DecodeOk(bytes, &decoded));
}

TEST_F(CodecTest, NonFiniteIsFoundAtEveryPositionAndBitPattern) {
  // Every vector length and position, so that vectorized loops' remainders are covered too.
  const uint64_t patterns[] = {0x7ff0000000000000ULL, 0xfff0000000000000ULL, 0x7ff0000000000001ULL,
                               0x7ff8000000000000ULL, 0xffffffffffffffffULL, 0x7ff4000000000000ULL};
  for (uint32_t dim = 1; dim <= 37; ++dim) {
    for (uint32_t at = 0; at < dim; ++at) {
      for (uint64_t bits : patterns) {
        std::vector<double> x(dim, 1.0);
        x[dim - 1] = std::numeric_limits<double>::max();  // largest exponent that is finite
        std::memcpy(&x[at], &bits, 8);
        const Payload p = Float64Payload(x.data(), dim);
        Reject reject;
        ASSERT_FALSE(CheckPayload(p, &reject)) << dim << " " << at;
        ASSERT_EQ(reject.reason, RejectReason::kNonFinite);
        std::vector<double> y(dim);
        ASSERT_FALSE(PayloadToDoubles(p, y.data(), dim, &reject));
        // float32 with the same position.
        std::vector<float> f(dim, 1.0f);
        const uint32_t bits32 = static_cast<uint32_t>(bits >> 32) | 0x7f800000u;
        std::memcpy(&f[at], &bits32, 4);
        Payload p32;
        p32.encoding = Encoding::kFloat32;
        p32.dim = dim;
        p32.bytes = std::string_view(reinterpret_cast<const char*>(f.data()), 4 * size_t{dim});
        ASSERT_FALSE(CheckPayload(p32, &reject)) << dim << " " << at;
        ASSERT_FALSE(PayloadToDoubles(p32, y.data(), dim, &reject));
      }
    }
    std::vector<double> x(dim, -std::numeric_limits<double>::max());
    Reject reject;
    EXPECT_TRUE(CheckPayload(Float64Payload(x.data(), dim), &reject)) << dim;
  }
}

TEST_F(CodecTest, BadLatticeParametersAreRejected) {
  for (uint64_t modulus : {uint64_t{0}, uint64_t{1}, uint64_t{3}, uint64_t{12}, uint64_t{1} << 17,
                           uint64_t{0x80000000u}, uint64_t{0xffffffffu}}) {
    ExpectReject(RawRoundPayload(2, kDim, 1.0, modulus, lattice_codes_), RejectReason::kBadModulus);
  }
  ExpectReject(RawRoundPayload(2, kDim, 1.0, uint64_t{1} << 32, lattice_codes_),
               RejectReason::kBadField);
  ExpectReject(RawRoundPayload(2, kDim, -1.0, 16, lattice_codes_), RejectReason::kBadField);
}

TEST_F(CodecTest, BadTopKIndicesAreRejected) {
  auto entries = [](const std::vector<uint32_t>& indices) {
    std::string bytes;
    for (uint32_t index : indices) {
      const double value = 1.0;
      bytes.append(reinterpret_cast<const char*>(&index), 4);
      bytes.append(reinterpret_cast<const char*>(&value), 8);
    }
    return bytes;
  };
  ExpectReject(RawRoundPayload(3, kDim, 0, 0, entries({3, 2})), RejectReason::kBadSparse);
  ExpectReject(RawRoundPayload(3, kDim, 0, 0, entries({2, 2})), RejectReason::kBadSparse);
  ExpectReject(RawRoundPayload(3, kDim, 0, 0, entries({1, kDim})), RejectReason::kBadSparse);
  ExpectReject(RawRoundPayload(3, kDim, 0, 0, entries({0xffffffffu})), RejectReason::kBadSparse);
  Envelope decoded;
  EXPECT_TRUE(DecodeOk(RawRoundPayload(3, kDim, 0, 0, entries({0, 1, kDim - 1})), &decoded));
  EXPECT_TRUE(DecodeOk(RawRoundPayload(3, kDim, 0, 0, ""), &decoded));  // k = 0
}

// vqSGD's cross-polytope codes (Encoding::kCrossPolytope): S codes of 1 + ceil(log2 dim) bits,
// each < 2 dim, packed least significant bit first. The packing here is written out bit by bit,
// independently of the codec and of the quantizer.
std::string PackBitsForTest(const std::vector<uint64_t>& codes, int bits) {
  std::string out((codes.size() * bits + 7) / 8, '\0');
  size_t at = 0;
  for (uint64_t code : codes) {
    for (int b = 0; b < bits; ++b, ++at) {
      if ((code >> b) & 1) out[at / 8] = static_cast<char>(out[at / 8] | (1 << (at % 8)));
    }
  }
  return out;
}

TEST_F(CodecTest, CrossPolytopeCodesRoundTripAndAreValidated) {
  // kDim = 20: 1 + 5 bits a code, codes < 40; 7 codes = 42 bits = 6 bytes.
  const int bits = 6;
  ASSERT_EQ(CrossPolytopeCodeBits(kDim), bits);
  for (auto [dim, b] : {std::pair{1u, 1},
                        {2u, 2},
                        {3u, 3},
                        {4u, 3},
                        {5u, 4},
                        {1024u, 11},
                        {1025u, 12},
                        {7850u, 14}}) {
    EXPECT_EQ(CrossPolytopeCodeBits(dim), b) << dim;
  }
  const std::vector<uint64_t> codes = {0, 39, 1, 20, 38, 7, 33};
  const std::string packed = PackBitsForTest(codes, bits);
  ASSERT_EQ(packed.size(), 6u);
  ASSERT_EQ(CrossPolytopeBytes(kDim, 7), 6u);
  Envelope e = Base(MessageType::kXchgRep);
  e.payloads = {CrossPolytopePayload(kDim, 2.5, 7, packed, 0xfedcba9876543210ULL)};
  const std::string bytes = Encode(e);
  Envelope decoded;
  ASSERT_TRUE(DecodeOk(bytes, &decoded));
  EXPECT_EQ(decoded, e);
  const Payload& p = decoded.payloads[0];
  EXPECT_EQ(p.scale, 2.5);
  EXPECT_EQ(p.modulus, 7u);
  for (size_t i = 0; i < codes.size(); ++i)
    EXPECT_EQ(CrossPolytopeCode(p.bytes, bits, i), codes[i]);
  // Not readable as doubles without the compressor.
  std::vector<double> values;
  Reject reject;
  EXPECT_FALSE(PayloadToDoubles(p, &values, &reject));
  EXPECT_EQ(reject.reason, RejectReason::kBadEncoding);

  // Hostile fields, each alone.
  ExpectReject(RawRoundPayload(4, kDim, -1.0, 7, packed), RejectReason::kBadField);  // norm < 0
  ExpectReject(RawRoundPayload(4, kDim, kNaN, 7, packed), RejectReason::kNonFinite);
  ExpectReject(RawRoundPayload(4, kDim, kInf, 7, packed), RejectReason::kNonFinite);
  ExpectReject(RawRoundPayload(4, kDim, 1.0, 0, ""), RejectReason::kBadField);   // S = 0
  ExpectReject(RawRoundPayload(4, 0, 1.0, 7, packed), RejectReason::kBadField);  // dim 0
  // S beyond max(dim, 64): 65 codes, even with the right length.
  ExpectReject(RawRoundPayload(4, kDim, 1.0, 65, std::string(CrossPolytopeBytes(kDim, 65), '\0')),
               RejectReason::kBadField);
  ExpectReject(RawRoundPayload(4, kDim, 1.0, uint64_t{1} << 32, packed), RejectReason::kBadField);
  // Lengths: one byte short, one too many, S that disagrees with the bytes.
  ExpectReject(RawRoundPayload(4, kDim, 1.0, 7, packed.substr(1)), RejectReason::kBadLength);
  ExpectReject(RawRoundPayload(4, kDim, 1.0, 7, packed + '\0'), RejectReason::kBadLength);
  ExpectReject(RawRoundPayload(4, kDim, 1.0, 9, packed), RejectReason::kBadLength);
  // A code >= 2 dim (40..63 fit 6 bits), at the first, a middle and the last position.
  for (size_t at : {size_t{0}, size_t{3}, size_t{6}}) {
    for (uint64_t bad : {uint64_t{40}, uint64_t{63}}) {
      std::vector<uint64_t> c = codes;
      c[at] = bad;
      ExpectReject(RawRoundPayload(4, kDim, 1.0, 7, PackBitsForTest(c, bits)),
                   RejectReason::kBadSparse);
    }
  }
  // The 6 unused bits of the last byte set.
  std::string dirty = packed;
  dirty.back() = static_cast<char>(dirty.back() | 0x80);
  ExpectReject(RawRoundPayload(4, kDim, 1.0, 7, dirty), RejectReason::kBadField);
  // The largest legal S never makes a payload larger than a top-k one of dim entries, the bound
  // LimitsForRun sizes messages by.
  for (uint32_t dim = 1; dim <= 4096; ++dim) {
    ASSERT_LE(CrossPolytopeBytes(dim, MaxCrossPolytopeSamples(dim)), kTopKEntryBytes * dim) << dim;
  }
  for (uint32_t dim : {1u << 20, (1u << 20) + 1, 1u << 30}) {
    ASSERT_LE(CrossPolytopeBytes(dim, MaxCrossPolytopeSamples(dim)), kTopKEntryBytes * dim) << dim;
  }
  // dim 1 (1-bit codes, only +e_0 and -e_0) and S = 64 > dim is legal.
  EXPECT_TRUE(DecodeOk(RawRoundPayload(4, 1, 0.0, 64, std::string(8, '\xa5')), &decoded));
  // Out of line, the same checks.
  std::vector<uint64_t> bad = codes;
  bad[6] = 45;
  const std::string bad_bytes = PackBitsForTest(bad, bits);
  e.payloads = {CrossPolytopePayload(kDim, 2.5, 7, bad_bytes)};
  std::string framed;
  std::vector<uint32_t> out_of_line;
  EncodeFramed(e, 0, &framed, &out_of_line);
  ASSERT_EQ(out_of_line.size(), 1u);
  const std::string_view frame = bad_bytes;
  EXPECT_FALSE(Decode(framed.data(), framed.size(), &frame, 1, limits_, &decoded, &reject,
                      ValueChecks::kDeferFloats));
  EXPECT_EQ(reject.reason, RejectReason::kBadSparse);
}

// Quantized gossip's range codes (Encoding::kRangeCodes): dim codes of R bits on the range r
// (scale), R in modulus, packed least significant bit first (PackBitsForTest, written out here).
TEST_F(CodecTest, RangeCodesRoundTripAndAreValidated) {
  // kDim = 20 codes of 3 bits = 60 bits: 8 bytes, the last 4 bits unused.
  const int bits = 3;
  std::vector<uint64_t> codes(kDim);
  for (uint32_t k = 0; k < kDim; ++k) codes[k] = (5 * k + 3) % 8;
  const std::string packed = PackBitsForTest(codes, bits);
  ASSERT_EQ(packed.size(), 8u);
  ASSERT_EQ(RangeCodesBytes(kDim, bits), 8u);
  EXPECT_EQ(RangeCodesBytes(7, 30), 27u);  // 210 bits
  EXPECT_EQ(RangeCodesBytes(1, 1), 1u);
  Envelope e = Base(MessageType::kRound);
  e.payloads = {RangeCodesPayload(kDim, 0.75, bits, packed),
                RangeCodesPayload(kDim, 0.0, bits, packed)};
  const std::string bytes = Encode(e);
  Envelope decoded;
  ASSERT_TRUE(DecodeOk(bytes, &decoded));
  EXPECT_EQ(decoded, e);
  const Payload& p = decoded.payloads[0];
  EXPECT_EQ(p.encoding, Encoding::kRangeCodes);
  EXPECT_EQ(p.scale, 0.75);
  EXPECT_EQ(p.modulus, 3u);
  for (uint32_t k = 0; k < kDim; ++k) EXPECT_EQ(CrossPolytopeCode(p.bytes, bits, k), codes[k]);
  EXPECT_STREQ(EncodingName(Encoding::kRangeCodes), "range-codes");
  // Not readable as doubles without the quantizer.
  std::vector<double> values;
  Reject reject;
  EXPECT_FALSE(PayloadToDoubles(p, &values, &reject));
  EXPECT_EQ(reject.reason, RejectReason::kBadEncoding);

  // Hostile fields, each alone.
  ExpectReject(RawRoundPayload(5, kDim, -0.5, bits, packed), RejectReason::kBadField);  // r < 0
  ExpectReject(RawRoundPayload(5, kDim, kNaN, bits, packed), RejectReason::kNonFinite);
  ExpectReject(RawRoundPayload(5, kDim, kInf, bits, packed), RejectReason::kNonFinite);
  ExpectReject(RawRoundPayload(5, kDim, -kInf, bits, packed), RejectReason::kNonFinite);
  ExpectReject(RawRoundPayload(5, kDim, 1.0, 0, ""), RejectReason::kBadField);  // R = 0
  // R = 31 and 32 with the matching length, and R beyond 32 bits.
  ExpectReject(RawRoundPayload(5, kDim, 1.0, 31, std::string((kDim * 31 + 7) / 8, '\0')),
               RejectReason::kBadField);
  ExpectReject(RawRoundPayload(5, kDim, 1.0, 32, std::string(kDim * 4, '\0')),
               RejectReason::kBadField);
  ExpectReject(RawRoundPayload(5, kDim, 1.0, uint64_t{1} << 32, packed), RejectReason::kBadField);
  ExpectReject(RawRoundPayload(5, 0, 1.0, bits, ""), RejectReason::kBadField);            // dim 0
  ExpectReject(RawRoundPayload(5, kDim, 1.0, bits, packed, 7), RejectReason::kBadField);  // check
  // Lengths: one byte short, one too many, none, an R that disagrees with the bytes.
  ExpectReject(RawRoundPayload(5, kDim, 1.0, bits, packed.substr(1)), RejectReason::kBadLength);
  ExpectReject(RawRoundPayload(5, kDim, 1.0, bits, packed + '\0'), RejectReason::kBadLength);
  ExpectReject(RawRoundPayload(5, kDim, 1.0, bits, ""), RejectReason::kBadLength);
  ExpectReject(RawRoundPayload(5, kDim, 1.0, 4, packed), RejectReason::kBadLength);
  // Each of the 4 unused bits of the last byte set.
  for (int b = 4; b < 8; ++b) {
    std::string dirty = packed;
    dirty.back() = static_cast<char>(dirty.back() | (1 << b));
    ExpectReject(RawRoundPayload(5, kDim, 1.0, bits, dirty), RejectReason::kBadField);
  }
  // The widest legal codes: R = 30, every code 2^30 - 1 (all bits set but the padding).
  const std::string widest = PackBitsForTest(std::vector<uint64_t>(kDim, (1u << 30) - 1), 30);
  // The decoded payload views the message's bytes: keep the message alive while reading it.
  const std::string widest_message = RawRoundPayload(5, kDim, 1e300, 30, widest);
  ASSERT_TRUE(DecodeOk(widest_message, &decoded));
  EXPECT_EQ(CrossPolytopeCode(decoded.payloads[0].bytes, 30, kDim - 1), (1u << 30) - 1);
  // dim 1 with 1-bit codes; a range of 0 is legal.
  EXPECT_TRUE(DecodeOk(RawRoundPayload(5, 1, 0.0, 1, std::string(1, '\x01')), &decoded));
  ExpectReject(RawRoundPayload(5, 1, 0.0, 1, std::string(1, '\x03')), RejectReason::kBadField);
  // A range-codes payload is never larger than a float64 one of the same dim (R <= 30 < 64), so
  // LimitsForRun's bound holds.
  EXPECT_LE(RangeCodesBytes(1u << 30, kMaxRangeCodeBits), 8 * (uint64_t{1} << 30));
  // Out of line, the same checks.
  std::string dirty = packed;
  dirty.back() = static_cast<char>(dirty.back() | 0x80);
  e.payloads = {RangeCodesPayload(kDim, 0.75, bits, dirty)};
  std::string framed;
  std::vector<uint32_t> out_of_line;
  EncodeFramed(e, 0, &framed, &out_of_line);
  ASSERT_EQ(out_of_line.size(), 1u);
  const std::string_view frame = dirty;
  EXPECT_FALSE(Decode(framed.data(), framed.size(), &frame, 1, limits_, &decoded, &reject,
                      ValueChecks::kDeferFloats));
  EXPECT_EQ(reject.reason, RejectReason::kBadField);
}

TEST_F(CodecTest, RandomBytesAreRejectedWithoutFaults) {
  std::mt19937_64 rng(20240611);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<size_t> length(0, 300);
  size_t accepted = 0;
  for (int i = 0; i < 4000; ++i) {
    std::vector<char> buffer(length(rng));
    for (char& c : buffer) c = static_cast<char>(byte(rng));
    // Half of them look like the start of an envelope, to get past the first checks.
    if (i % 2 == 0 && buffer.size() >= 3) {
      buffer[0] = static_cast<char>(0x94 + i % 5);
      buffer[1] = static_cast<char>(kProtocolVersion);
      buffer[2] = static_cast<char>(1 + i % kMaxMessageType);
    }
    Envelope out;
    Reject reject;
    if (Decode(buffer.data(), buffer.size(), limits_, &out, &reject)) {
      ++accepted;
      continue;
    }
    ASSERT_NE(reject.reason, RejectReason::kDecoderFault) << reject.detail;
    counters_.Count(reject.reason);
  }
  EXPECT_EQ(counters_.total() + accepted, 4000u);
  EXPECT_LT(accepted, 40u);
  // Mutations of valid messages: whatever is accepted must satisfy the decoder's guarantees.
  const std::vector<Envelope> all = AllTypes();
  for (int i = 0; i < 4000; ++i) {
    std::string bytes = Encode(all[i % all.size()]);
    const int flips = 1 + i % 4;
    for (int f = 0; f < flips; ++f) {
      bytes[std::uniform_int_distribution<size_t>(0, bytes.size() - 1)(rng)] =
          static_cast<char>(byte(rng));
    }
    const std::vector<char> copy(bytes.begin(), bytes.end());
    Envelope out;
    Reject reject;
    if (Decode(copy.data(), copy.size(), limits_, &out, &reject)) {
      for (const Payload& p : out.payloads) {
        ASSERT_TRUE(CheckPayload(p, &reject)) << reject.detail;
        ASSERT_LE(p.dim, limits_.max_dim);
      }
      for (const TelemetryField& t : out.telemetry) ASSERT_TRUE(std::isfinite(t.value));
    } else {
      ASSERT_NE(reject.reason, RejectReason::kDecoderFault) << reject.detail;
    }
  }
}

// Hand-crafted headers declaring enormous lengths, alone and inside an envelope.
std::vector<std::string> HugeDeclarations() {
  const std::vector<std::string> headers = {
      std::string("\xdd\xff\xff\xff\xff", 5),      // array32 of 2^32-1
      std::string("\xdc\xff\xff", 3),              // array16 of 65535
      std::string("\xdf\xff\xff\xff\xff", 5),      // map32
      std::string("\xde\xff\xff", 3),              // map16
      std::string("\xc6\xff\xff\xff\xff", 5),      // bin32
      std::string("\xdb\xff\xff\xff\xff", 5),      // str32
      std::string("\xc9\xff\xff\xff\xff\x01", 6),  // ext32
      std::string("\xc6\x7f\xff\xff\xff", 5),      // bin32 of 2 GiB
  };
  std::vector<std::string> inputs;
  for (const std::string& h : headers) {
    inputs.push_back(h);
    inputs.push_back(h + std::string(64, '\0'));
    // In place of a ROUND's payload list, and in place of a payload's bytes.
    inputs.push_back(std::string("\x98\x01\x02\xcf", 4) + std::string(8, '\x11') +
                     std::string("\x03\x07\x00\x00", 4) + h);
    inputs.push_back(std::string("\x98\x01\x02\x05\x03\x07\x00\x00\x91\x95\x00\x14\xcb", 13) +
                     std::string(8, '\0') + std::string("\x00", 1) + h);
  }
  inputs.push_back(std::string(100000, '\x91'));  // nesting 100000 deep
  inputs.push_back(std::string(100000, '\x9f'));  // 15-wide arrays, deep
  return inputs;
}

TEST_F(CodecTest, HugeDeclaredLengthsAreRejectedQuickly) {
  const auto start = std::chrono::steady_clock::now();
  for (const std::string& input : HugeDeclarations()) {
    Envelope out;
    Reject reject;
    ASSERT_FALSE(Decode(input.data(), input.size(), limits_, &out, &reject));
    EXPECT_TRUE(reject.reason == RejectReason::kOversized ||
                reject.reason == RejectReason::kTruncated ||
                reject.reason == RejectReason::kMalformed)
        << RejectReasonName(reject.reason) << ": " << reject.detail;
    counters_.Count(reject.reason);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 1.0);
  EXPECT_EQ(counters_.total(), HugeDeclarations().size());
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define STARLING_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define STARLING_UNDER_SANITIZER 1
#endif
#endif

// Runs the hostile inputs in a child whose address space may grow by only 64 MiB: an attempt to
// allocate what the headers declare would fail there (as std::bad_alloc -> kDecoderFault).
TEST_F(CodecTest, HugeDeclaredLengthsNeedNoMemory) {
#ifdef STARLING_UNDER_SANITIZER
  GTEST_SKIP() << "sanitizers reserve terabytes of address space; RLIMIT_AS cannot apply";
#else
  const std::vector<std::string> inputs = HugeDeclarations();
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::ifstream statm("/proc/self/statm");
    uint64_t pages = 0;
    statm >> pages;
    const uint64_t headroom = uint64_t{64} << 20;
    struct rlimit limit;
    limit.rlim_cur = limit.rlim_max = pages * sysconf(_SC_PAGESIZE) + headroom;
    if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(3);
    // Control: unbounded msgpack really does try to allocate and fails under this limit.
    bool control_failed = false;
    try {
      const std::string& huge_array = inputs[1];
      msgpack::unpack(huge_array.data(), huge_array.size());
    } catch (const std::bad_alloc&) {
      control_failed = true;
    } catch (...) {
    }
    if (!control_failed) _exit(4);
    for (const std::string& input : inputs) {
      Envelope out;
      Reject reject;
      if (Decode(input.data(), input.size(), limits_, &out, &reject)) _exit(1);
      if (reject.reason == RejectReason::kDecoderFault) _exit(2);
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "child died";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: accepted, 2: decoder fault (allocation), "
                                       "3: setrlimit failed, 4: control did not allocate";
#endif
}

TEST_F(CodecTest, NestingBeyondTheLayoutIsRejected) {
  // A payload list whose entry holds an array one level deeper than any layout uses.
  ExpectReject(RawRound([](Packer& pk) {
                 pk.pack_array(1);
                 pk.pack_array(0);
               }),
               RejectReason::kOversized);
}

// ---------------------------------------------------------------------------------------------
// Checks against the run, counters, names, run id.

TEST_F(CodecTest, ChecksAgainstTheRun) {
  RunExpectations run;
  run.run_id = kRun;
  run.dim = kDim;
  run.peers = {1, kSender, 9};
  run.ExpectPayloads(MessageType::kRound, 4);
  run.ExpectPayloads(MessageType::kXchgReq, 1);
  Reject reject;
  for (const Envelope& e : AllTypes()) {
    EXPECT_TRUE(CheckAgainstRun(e, run, &reject)) << reject.detail;
  }
  Envelope e = AllTypes()[2];  // ROUND with 4 payloads
  ASSERT_EQ(e.type, MessageType::kRound);

  Envelope wrong = e;
  wrong.run_id ^= 1;
  EXPECT_FALSE(CheckAgainstRun(wrong, run, &reject));
  EXPECT_EQ(reject.reason, RejectReason::kWrongRun);
  EXPECT_NE(reject.detail.find("0x0123456789abcdef"), std::string::npos) << reject.detail;

  wrong = e;
  wrong.sender = 4;
  EXPECT_FALSE(CheckAgainstRun(wrong, run, &reject));
  EXPECT_EQ(reject.reason, RejectReason::kUnknownSender);

  const std::vector<double> longer = Ramp(kDim + 1, 0.0);
  wrong = e;
  wrong.payloads[0] = Float64Payload(longer.data(), kDim + 1);
  EXPECT_FALSE(CheckAgainstRun(wrong, run, &reject));
  EXPECT_EQ(reject.reason, RejectReason::kWrongDimension);

  wrong = e;
  wrong.payloads.pop_back();
  EXPECT_FALSE(CheckAgainstRun(wrong, run, &reject));
  EXPECT_EQ(reject.reason, RejectReason::kBadPayloadCount);

  wrong = AllTypes()[0];
  ASSERT_EQ(wrong.type, MessageType::kHello);
  wrong.hello.dim = kDim + 1;
  EXPECT_FALSE(CheckAgainstRun(wrong, run, &reject));
  EXPECT_EQ(reject.reason, RejectReason::kWrongDimension);
  EXPECT_NE(reject.detail.find("dim 21, ours 20"), std::string::npos) << reject.detail;

  RunExpectations nobody = run;
  nobody.peers.clear();
  EXPECT_FALSE(CheckAgainstRun(e, nobody, &reject));
  EXPECT_EQ(reject.reason, RejectReason::kUnknownSender);
}

// ---------------------------------------------------------------------------------------------
// Out-of-line payloads (protocol version 3): large payload bytes in frames of their own.

// Decodes a framed message, expecting success. out's payloads view `frames`' bytes: pass a
// vector that outlives every use of them, not a temporary.
bool DecodeFramesOk(const std::string& header, const std::vector<std::string>& frames,
                    const DecodeLimits& limits, Envelope* out,
                    ValueChecks checks = ValueChecks::kAll) {
  std::vector<std::string_view> views(frames.begin(), frames.end());
  Reject reject;
  const bool ok = Decode(header.data(), header.size(), views.data(), views.size(), limits, out,
                         &reject, checks);
  EXPECT_TRUE(ok) << RejectReasonName(reject.reason) << ": " << reject.detail;
  return ok;
}

Reject DecodeFramesReject(const std::string& header, const std::vector<std::string>& frames,
                          const DecodeLimits& limits, RejectReason reason) {
  std::vector<std::string_view> views(frames.begin(), frames.end());
  Envelope out;
  Reject reject;
  const bool ok =
      Decode(header.data(), header.size(), views.data(), views.size(), limits, &out, &reject);
  EXPECT_FALSE(ok) << "expected " << RejectReasonName(reason);
  if (!ok) {
    EXPECT_EQ(reject.reason, reason)
        << "got " << RejectReasonName(reject.reason) << ": " << reject.detail;
    EXPECT_FALSE(reject.detail.empty());
  }
  return reject;
}

TEST_F(CodecTest, LargePayloadsTravelOutOfLineAndDecodeToTheSameEnvelope) {
  Envelope e = Base(MessageType::kRound);
  e.key = WireKey{9, 1, 0};
  e.payloads = {Float64(), Lattice(), Float32()};  // 160, 10 and 80 bytes
  std::string header;
  std::vector<uint32_t> out_of_line;
  EncodeFramed(e, 64, &header, &out_of_line);
  ASSERT_EQ(out_of_line, (std::vector<uint32_t>{0, 2}));
  // The header carries the small payload's bytes, not the large ones'.
  EXPECT_NE(header.find(lattice_codes_), std::string::npos);
  EXPECT_EQ(header.find(DoublesBytes(model_)), std::string::npos);
  EXPECT_LT(header.size() + 150 + 70, Encode(e).size());
  // Frames in separate buffers, as ZeroMQ delivers them; the payloads view them (zero copy).
  const std::vector<std::string> frames = {std::string(e.payloads[0].bytes),
                                           std::string(e.payloads[2].bytes)};
  Envelope decoded;
  ASSERT_TRUE(DecodeFramesOk(header, frames, limits_, &decoded));
  EXPECT_EQ(decoded, e);
  EXPECT_EQ(decoded.payloads[0].bytes.data(), frames[0].data());
  EXPECT_EQ(decoded.payloads[2].bytes.data(), frames[1].data());
  // A threshold above every payload gives exactly the single-frame encoding.
  EncodeFramed(e, 1u << 20, &header, &out_of_line);
  EXPECT_TRUE(out_of_line.empty());
  EXPECT_EQ(header, Encode(e));
}

TEST_F(CodecTest, OutOfLineFramesMustMatchTheirPayloads) {
  Envelope e = Base(MessageType::kXchgReq);
  e.exchange_seq = 5;
  e.payloads = {Float64()};
  std::string header;
  std::vector<uint32_t> out_of_line;
  EncodeFramed(e, 0, &header, &out_of_line);
  ASSERT_EQ(out_of_line.size(), 1u);
  const std::string frame = DoublesBytes(model_);
  // The frame is missing: as a single-frame message and as a message without it.
  ExpectReject(header, RejectReason::kTruncated);
  DecodeFramesReject(header, {}, limits_, RejectReason::kTruncated);
  // A frame of another size than declared.
  DecodeFramesReject(header, {frame.substr(8)}, limits_, RejectReason::kBadLength);
  DecodeFramesReject(header, {frame + std::string(8, '\0')}, limits_, RejectReason::kBadLength);
  // A frame no payload claims.
  DecodeFramesReject(header, {frame, frame}, limits_, RejectReason::kMalformed);
  Envelope beat = Base(MessageType::kHeartbeat);
  DecodeFramesReject(Encode(beat), {frame}, limits_, RejectReason::kMalformed);
  // Header and frames together over the message limit.
  DecodeLimits tight = limits_;
  tight.max_message_bytes = header.size() + frame.size() - 1;
  DecodeFramesReject(header, {frame}, tight, RejectReason::kOversized);
  tight.max_message_bytes = header.size() + frame.size();
  Envelope decoded;
  EXPECT_TRUE(DecodeFramesOk(header, {frame}, tight, &decoded));
  // A declared size that matches its frame but not the payload's dim.
  const std::string short_header = RawRound([&](Packer& pk) {
    pk.pack_array(6);
    pk.pack_uint8(static_cast<uint8_t>(Encoding::kFloat64));
    pk.pack_uint32(kDim);
    pk.pack_double(0.0);
    pk.pack_uint32(0);
    pk.pack_uint64(0);
    pk.pack_uint32(8 * (kDim - 1));
  });
  DecodeFramesReject(short_header, {frame.substr(8)}, limits_, RejectReason::kBadLength);
  // Payload bytes as neither bin nor uint.
  const std::string negative = RawRound([&](Packer& pk) {
    pk.pack_array(6);
    pk.pack_uint8(static_cast<uint8_t>(Encoding::kFloat64));
    pk.pack_uint32(kDim);
    pk.pack_double(0.0);
    pk.pack_uint32(0);
    pk.pack_uint64(0);
    pk.pack_int32(-8);
  });
  DecodeFramesReject(negative, {frame}, limits_, RejectReason::kBadField);
}

TEST_F(CodecTest, OutOfLineValuesAreCheckedUnlessDeferred) {
  Envelope e = Base(MessageType::kXchgRep);
  std::vector<double> x = model_;
  x[kDim - 1] = kInf;
  e.payloads = {Float64Payload(x.data(), kDim)};
  std::string header;
  std::vector<uint32_t> out_of_line;
  EncodeFramed(e, 0, &header, &out_of_line);
  const std::string frame = DoublesBytes(x);
  DecodeFramesReject(header, {frame}, limits_, RejectReason::kNonFinite);
  Envelope decoded;
  const std::vector<std::string> frames = {frame};  // the decoded payload views these bytes
  ASSERT_TRUE(DecodeFramesOk(header, frames, limits_, &decoded, ValueChecks::kDeferFloats));
  std::vector<double> scratch;
  Reject reject;
  EXPECT_EQ(ReadDoubles(decoded.payloads[0], kDim, &scratch, &reject), nullptr);
  EXPECT_EQ(reject.reason, RejectReason::kNonFinite);
  // Top-k values are checked in Decode whatever the mode, out of line too.
  Envelope t = Base(MessageType::kRound);
  std::string topk;
  t.payloads = {TopKPayload(kDim, {3, 4}, {1.0, kNaN}, &topk)};
  EncodeFramed(t, 0, &header, &out_of_line);
  std::vector<std::string_view> views = {topk};
  EXPECT_FALSE(Decode(header.data(), header.size(), views.data(), 1, limits_, &decoded, &reject,
                      ValueChecks::kDeferFloats));
  EXPECT_EQ(reject.reason, RejectReason::kNonFinite);
}

TEST(RejectCountersTest, CountsAndNamesEveryReason) {
  RejectCounters counters;
  EXPECT_EQ(counters.total(), 0u);
  EXPECT_EQ(counters.Summary(), "");
  std::set<std::string> names;
  for (size_t i = 0; i < kNumRejectReasons; ++i) {
    const auto reason = static_cast<RejectReason>(i);
    names.insert(RejectReasonName(reason));
    EXPECT_STRNE(RejectReasonName(reason), "unknown");
    for (size_t k = 0; k <= i; ++k) counters.Count(reason);
  }
  EXPECT_EQ(names.size(), kNumRejectReasons);
  EXPECT_EQ(counters.count(RejectReason::kTruncated), 1u);
  EXPECT_EQ(counters.count(RejectReason::kUnfinishedMessage), kNumRejectReasons);  // the last
  EXPECT_EQ(counters.total(), kNumRejectReasons * (kNumRejectReasons + 1) / 2);
  EXPECT_EQ(counters.Summary().rfind("truncated=1 malformed=2", 0), 0u) << counters.Summary();
  counters.Count(RejectReason::kCount);  // out of range: ignored
  EXPECT_EQ(counters.total(), kNumRejectReasons * (kNumRejectReasons + 1) / 2);
  counters.Reset();
  EXPECT_EQ(counters.total(), 0u);
}

TEST(EnvelopeTest, NamesAndRunId) {
  std::set<std::string> names;
  for (uint8_t t = kMinMessageType; t <= kMaxMessageType; ++t) {
    const std::string name = MessageTypeName(static_cast<MessageType>(t));
    EXPECT_EQ(name == "unknown", !IsKnownMessageType(t)) << int{t};
    if (IsKnownMessageType(t)) names.insert(name);
  }
  EXPECT_EQ(names.size(), kMessageTypeCount);
  EXPECT_EQ(names.count("unknown"), 0u);
  EXPECT_STREQ(MessageTypeName(static_cast<MessageType>(0)), "unknown");
  EXPECT_STREQ(EncodingName(Encoding::kTopK), "topk");
  // FNV-1a 64 reference values.
  static_assert(RunIdOf("") == 0xcbf29ce484222325ULL);
  EXPECT_EQ(RunIdOf("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(RunIdOf("foobar"), 0x85944171f73967e8ULL);
  EXPECT_NE(RunIdOf("dim=784\nalgo=dgd\n"), RunIdOf("dim=785\nalgo=dgd\n"));
  EXPECT_TRUE((WireKey{1, 0, 5} < WireKey{1, 1, 0}));
  EXPECT_TRUE((WireKey{0, 9, 9} < WireKey{1, 0, 0}));
}

#ifdef STARLING_SOURCE_DIR
// The layering (docs/explanations/architecture.md): net/ knows envelopes and opaque vectors only.
TEST(LayeringTest, NetIncludesNoOtherStarlingLayer) {
  int files = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(STARLING_SOURCE_DIR) + "/net")) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".h" && entry.path().extension() != ".cc") continue;
    std::ifstream in(entry.path());
    ASSERT_TRUE(in) << name;
    std::stringstream text;
    text << in.rdbuf();
    for (const char* layer : {"\"algorithms/", "\"topology/", "\"node/"}) {
      EXPECT_EQ(text.str().find(layer), std::string::npos) << name << " includes " << layer;
    }
    ++files;
  }
  EXPECT_GE(files, 10);
}
#endif

}  // namespace
}  // namespace starling::net
