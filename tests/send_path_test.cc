// The data path of issue 7: deferred float checks in the codec (one pass over received values),
// zero-copy send buffers, and the transport counting a NaN found by the handler's conversion.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "net/codec.h"
#include "net/envelope.h"
#include "net/payload.h"
#include "net/reject.h"
#include "net/send_buffers.h"
#include "net/transport.h"

namespace starling::net {
namespace {

constexpr uint32_t kDim = 1000;
const double kNaN = std::numeric_limits<double>::quiet_NaN();

Envelope RoundWith(const std::vector<double>& x) {
  Envelope e;
  e.type = MessageType::kRound;
  e.run_id = 7;
  e.sender = 1;
  e.key = {3, 0, 0};
  e.payloads.push_back(Float64Payload(x.data(), static_cast<uint32_t>(x.size())));
  return e;
}

std::vector<double> Ramp(uint32_t n) {
  std::vector<double> x(n);
  for (uint32_t i = 0; i < n; ++i) x[i] = 0.25 * i - 3.0;
  return x;
}

TEST(DeferredChecks, NaNPassesDecodeButNotTheConversion) {
  std::vector<double> x = Ramp(kDim);
  x[617] = kNaN;
  const std::string bytes = Encode(RoundWith(x));
  const DecodeLimits limits = LimitsForRun(kDim, 4);
  Envelope out;
  Reject reject;
  EXPECT_FALSE(Decode(bytes.data(), bytes.size(), limits, &out, &reject, ValueChecks::kAll));
  EXPECT_EQ(reject.reason, RejectReason::kNonFinite);

  ASSERT_TRUE(
      Decode(bytes.data(), bytes.size(), limits, &out, &reject, ValueChecks::kDeferFloats));
  ASSERT_EQ(out.payloads.size(), 1u);
  std::vector<double> dst(kDim);
  EXPECT_FALSE(PayloadToDoubles(out.payloads[0], dst.data(), dst.size(), &reject));
  EXPECT_EQ(reject.reason, RejectReason::kNonFinite);
  EXPECT_NE(reject.detail.find("617"), std::string::npos) << reject.detail;
}

TEST(DeferredChecks, ShapeIsStillCheckedAndFiniteValuesRoundTrip) {
  const std::vector<double> x = Ramp(kDim);
  std::string bytes = Encode(RoundWith(x));
  const DecodeLimits limits = LimitsForRun(kDim, 4);
  Envelope out;
  Reject reject;
  ASSERT_TRUE(
      Decode(bytes.data(), bytes.size(), limits, &out, &reject, ValueChecks::kDeferFloats));
  std::vector<double> dst(kDim);
  ASSERT_TRUE(PayloadToDoubles(out.payloads[0], dst.data(), dst.size(), &reject));
  EXPECT_EQ(dst, x);
  // A payload whose dim does not match its byte length is rejected whatever the mode.
  Envelope bad = RoundWith(x);
  std::string wrong = Encode(bad);
  // dim 1000 is framed as msgpack uint16 (0xcd 0x03 0xe8) right before the scale (float64, 0xcb).
  const char dim_bytes[4] = {static_cast<char>(0xcd), static_cast<char>(kDim >> 8),
                             static_cast<char>(kDim & 0xff), static_cast<char>(0xcb)};
  const size_t at = wrong.find(std::string(dim_bytes, 4));
  ASSERT_NE(at, std::string::npos);
  wrong[at + 2] = static_cast<char>((kDim - 1) & 0xff);  // dim 999 for 8000 bytes
  EXPECT_FALSE(
      Decode(wrong.data(), wrong.size(), limits, &out, &reject, ValueChecks::kDeferFloats));
  EXPECT_EQ(reject.reason, RejectReason::kBadLength);
}

TEST(DeferredChecks, TopKValuesAreStillCheckedInDecode) {
  Envelope e;
  e.type = MessageType::kRound;
  std::string storage;
  e.payloads.push_back(TopKPayload(kDim, {2, 9}, {1.0, kNaN}, &storage));
  const std::string bytes = Encode(e);
  Envelope out;
  Reject reject;
  EXPECT_FALSE(Decode(bytes.data(), bytes.size(), LimitsForRun(kDim, 4), &out, &reject,
                      ValueChecks::kDeferFloats));
  EXPECT_EQ(reject.reason, RejectReason::kNonFinite);
}

TEST(SendBuffers, LargeMessagesCarryTheEncodedBytesAndRecycleTheirBuffer) {
  auto buffers = SendBuffers::Create(2);
  const std::vector<double> x = Ramp(kDim);  // 8 KB: above the zero-copy threshold
  const Envelope e = RoundWith(x);
  const std::string expected = Encode(e);
  const void* first_storage = nullptr;
  {
    zmq::message_t m = buffers->EncodeMessage(e);
    ASSERT_EQ(m.size(), expected.size());
    EXPECT_EQ(std::memcmp(m.data(), expected.data(), m.size()), 0);
    first_storage = m.data();
    EXPECT_EQ(buffers->pooled(), 0u);  // in use by the message
  }
  EXPECT_EQ(buffers->pooled(), 1u);  // back when the message was freed
  zmq::message_t again = buffers->EncodeMessage(e);
  EXPECT_EQ(again.data(), first_storage);  // the same storage, reused
  EXPECT_EQ(buffers->pooled(), 0u);
}

TEST(SendBuffers, SmallMessagesAreCopiedAndThePoolIsBounded) {
  auto buffers = SendBuffers::Create(1);
  Envelope beat;
  beat.type = MessageType::kHeartbeat;
  { zmq::message_t m = buffers->EncodeMessage(beat); EXPECT_EQ(m.size(), Encode(beat).size()); }
  EXPECT_EQ(buffers->pooled(), 0u);
  const std::vector<double> x = Ramp(kDim);
  {
    zmq::message_t a = buffers->EncodeMessage(RoundWith(x));
    zmq::message_t b = buffers->EncodeMessage(RoundWith(x));
  }
  EXPECT_EQ(buffers->pooled(), 1u);  // the second buffer was freed, not kept
}

TEST(SendBuffers, AMessageOutlivesItsPool) {
  const std::vector<double> x = Ramp(kDim);
  zmq::message_t m;
  {
    auto buffers = SendBuffers::Create();
    m = buffers->EncodeMessage(RoundWith(x));
  }
  EXPECT_EQ(m.size(), Encode(RoundWith(x)).size());  // still valid; freed with m (ASan would see)
}

TransportOptions OptionsFor(int32_t self, const std::string& bind, int32_t peer,
                            const std::string& peer_endpoint) {
  TransportOptions o;
  o.self_id = self;
  o.bind_endpoint = bind;
  o.peers = {{peer, peer_endpoint}};
  o.run_id = RunIdOf("send-path-test");
  o.dim = kDim;
  o.limits = LimitsForRun(kDim, 4);
  o.heartbeat_interval = std::chrono::milliseconds(50);
  return o;
}

// Two transports over IPC: a finite vector arrives intact; a NaN reaches the handler's
// conversion, fails there, and is counted as a non_finite reject once the handler reports it.
TEST(TransportDataPath, FiniteVectorsArriveAndNaNIsCountedAsAReject) {
  const std::string base = "ipc:///tmp/starling-send-path-" + std::to_string(::getpid()) + "-";
  zmq::context_t ctx0(1), ctx1(1);
  Transport t0(&ctx0, OptionsFor(0, base + "0", 1, base + "1"));
  Transport t1(&ctx1, OptionsFor(1, base + "1", 0, base + "0"));
  std::vector<double> received(kDim), scratch(kDim);
  int finite = 0;
  auto handler = [&](int32_t peer, const Envelope& e) {
    if (e.type != MessageType::kRound || e.payloads.size() != 1) return;
    Reject reject;
    if (PayloadToDoubles(e.payloads[0], scratch.data(), scratch.size(), &reject)) {
      received = scratch;
      ++finite;
    } else {
      t1.ReportReject(peer, reject);
    }
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  auto noop = [](int32_t, const Envelope&) {};
  while (!(t0.peer(1).accepted_us && t1.peer(0).accepted_us)) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "no handshake";
    t0.Poll(std::chrono::milliseconds(5), noop);
    t1.Poll(std::chrono::milliseconds(5), handler);
    t0.Tick();
    t1.Tick();
  }
  std::vector<double> x = Ramp(kDim);
  Envelope good;
  good.type = MessageType::kRound;
  good.payloads.push_back(Float64Payload(x.data(), kDim));
  ASSERT_TRUE(t0.Send(1, good));
  std::vector<double> bad_values = x;
  bad_values[5] = kNaN;
  Envelope bad;
  bad.type = MessageType::kRound;
  bad.payloads.push_back(Float64Payload(bad_values.data(), kDim));
  ASSERT_TRUE(t0.Send(1, bad));
  while (finite < 1 || t1.rejects().count(RejectReason::kNonFinite) < 1) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "messages did not arrive";
    t1.Poll(std::chrono::milliseconds(5), handler);
  }
  EXPECT_EQ(received, x);
  EXPECT_EQ(finite, 1);
  EXPECT_EQ(t1.rejects().count(RejectReason::kNonFinite), 1u);
  // A type the handler does not convert is checked by the transport itself.
  Envelope telemetry;
  telemetry.type = MessageType::kTelemetry;
  telemetry.payloads.push_back(Float64Payload(bad_values.data(), kDim));
  ASSERT_TRUE(t0.Send(1, telemetry));
  int handled = 0;
  auto count_only = [&](int32_t, const Envelope&) { ++handled; };
  while (t1.rejects().count(RejectReason::kNonFinite) < 2) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "telemetry did not arrive";
    t1.Poll(std::chrono::milliseconds(5), count_only);
  }
  EXPECT_EQ(handled, 0);
  for (const char* suffix : {"0", "1"}) std::remove(("/tmp/starling-send-path-" +
                                                     std::to_string(::getpid()) + "-" + suffix)
                                                        .c_str());
}

}  // namespace
}  // namespace starling::net
