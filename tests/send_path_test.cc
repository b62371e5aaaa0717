// The send and receive data path: deferred float checks in the codec (one pass over received
// values), zero-copy send buffers, large payloads in frames of their own (handed over by the sender
// without a copy, read in place by the receiver), and the transport counting a NaN found by the
// handler's conversion.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
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

TEST(ReadDoubles, AlignedFloat64IsReadInPlaceAfterItsCheck) {
  const std::vector<double> x = Ramp(kDim);
  const Payload p = Float64Payload(x.data(), kDim);  // a vector's storage: aligned
  std::vector<double> scratch;
  Reject reject;
  const double* values = ReadDoubles(p, kDim, &scratch, &reject);
  EXPECT_EQ(values, x.data());
  EXPECT_TRUE(scratch.empty());
  std::vector<double> bad = x;
  bad[kDim - 1] = -std::numeric_limits<double>::infinity();
  EXPECT_EQ(ReadDoubles(Float64Payload(bad.data(), kDim), kDim, &scratch, &reject), nullptr);
  EXPECT_EQ(reject.reason, RejectReason::kNonFinite);
  EXPECT_NE(reject.detail.find(std::to_string(kDim - 1)), std::string::npos) << reject.detail;
  EXPECT_EQ(ReadDoubles(p, kDim + 1, &scratch, &reject), nullptr);
  EXPECT_EQ(reject.reason, RejectReason::kWrongDimension);
  Payload wrong_length = p;
  wrong_length.bytes.remove_suffix(8);
  EXPECT_EQ(ReadDoubles(wrong_length, kDim, &scratch, &reject), nullptr);
  EXPECT_EQ(reject.reason, RejectReason::kBadLength);
}

TEST(ReadDoubles, UnalignedOrFloat32BytesAreConvertedIntoScratch) {
  const std::vector<double> x = Ramp(kDim);
  std::string shifted(8 * kDim + 1, '\0');
  std::memcpy(shifted.data() + 1, x.data(), 8 * kDim);
  Payload p = Float64Payload(x.data(), kDim);
  p.bytes = std::string_view(shifted.data() + 1, 8 * kDim);
  std::vector<double> scratch;
  Reject reject;
  const double* values = ReadDoubles(p, kDim, &scratch, &reject);
  ASSERT_NE(values, nullptr) << reject.detail;
  EXPECT_EQ(values, scratch.data());
  EXPECT_EQ(scratch, x);
  shifted[1 + 8 * 3 + 7] = static_cast<char>(0x7f);  // entry 3 becomes NaN or Inf
  shifted[1 + 8 * 3 + 6] = static_cast<char>(0xf0);
  EXPECT_EQ(ReadDoubles(p, kDim, &scratch, &reject), nullptr);
  EXPECT_EQ(reject.reason, RejectReason::kNonFinite);
  std::string storage;
  const Payload f32 = Float32Payload(x.data(), kDim, &storage);
  values = ReadDoubles(f32, kDim, &scratch, &reject);
  ASSERT_NE(values, nullptr) << reject.detail;
  for (uint32_t i = 0; i < kDim; ++i) EXPECT_EQ(values[i], static_cast<float>(x[i]));
  std::string codes(LatticeBytes(kDim, 4), '\0');
  EXPECT_EQ(ReadDoubles(LatticePayload(kDim, 1.0, 4, codes), kDim, &scratch, &reject), nullptr);
  EXPECT_EQ(reject.reason, RejectReason::kBadEncoding);
}

TEST(SendBuffers, FramesHandOverKeptPayloadsWithoutACopy) {
  auto buffers = SendBuffers::Create();
  auto snapshot = std::make_shared<const std::vector<double>>(Ramp(kDim));
  std::vector<double> small(kOutOfLineMinBytes / 8 - 1, 1.5);
  Envelope e = RoundWith(*snapshot);
  e.payloads.push_back(Float64Payload(small.data(), static_cast<uint32_t>(small.size())));
  std::vector<zmq::message_t> frames;
  buffers->EncodeFrames(e, snapshot, &frames);
  ASSERT_EQ(frames.size(), 2u);  // the small payload stays inline
  EXPECT_EQ(frames[1].data(), static_cast<const void*>(snapshot->data()));
  EXPECT_EQ(frames[1].size(), 8 * size_t{kDim});
  EXPECT_EQ(snapshot.use_count(), 2);  // the frame holds it
  // The frames decode to the envelope.
  const std::string_view payload_frame(static_cast<const char*>(frames[1].data()),
                                       frames[1].size());
  Envelope out;
  Reject reject;
  ASSERT_TRUE(Decode(static_cast<const char*>(frames[0].data()), frames[0].size(), &payload_frame,
                     1, LimitsForRun(kDim, 4), &out, &reject))
      << reject.detail;
  EXPECT_EQ(out, e);
  frames.clear();
  EXPECT_EQ(snapshot.use_count(), 1);  // released with the frame
  // Without a keepalive the bytes are copied, so the caller may change them right away.
  std::vector<double> x = Ramp(kDim);
  buffers->EncodeFrames(RoundWith(x), nullptr, &frames);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_NE(frames[1].data(), static_cast<const void*>(x.data()));
  const std::vector<double> sent = x;
  x.assign(kDim, 0.0);
  EXPECT_EQ(std::memcmp(frames[1].data(), sent.data(), 8 * size_t{kDim}), 0);
}

TransportOptions OptionsFor(int32_t self, const std::string& bind, int32_t peer,
                            const std::string& peer_endpoint, uint32_t dim = kDim) {
  TransportOptions o;
  o.self_id = self;
  o.bind_endpoint = bind;
  o.peers = {{peer, peer_endpoint}};
  o.run_id = RunIdOf("send-path-test");
  o.dim = dim;
  o.limits = LimitsForRun(dim, 4);
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

// A large vector goes out of line without a copy (the sender's snapshot is the frame) and is
// read in place on arrival; one with a NaN fails the in-place check and is counted.
TEST(TransportDataPath, LargeVectorsTravelOutOfLineAndAreReadInPlace) {
  constexpr uint32_t kLarge = 100000;  // 800 KB: ZeroMQ receives it into a buffer of its own
  const std::string base = "ipc:///tmp/starling-send-path-large-" + std::to_string(::getpid()) + "-";
  zmq::context_t ctx0(1), ctx1(1);
  Transport t0(&ctx0, OptionsFor(0, base + "0", 1, base + "1", kLarge));
  Transport t1(&ctx1, OptionsFor(1, base + "1", 0, base + "0", kLarge));
  std::vector<double> received, scratch;
  int in_place = 0, read = 0;
  auto handler = [&](int32_t peer, const Envelope& e) {
    if (e.type != MessageType::kXchgReq || e.payloads.size() != 1) return;
    Reject reject;
    const double* values = ReadDoubles(e.payloads[0], kLarge, &scratch, &reject);
    if (values == nullptr) {
      t1.ReportReject(peer, reject);
      return;
    }
    ++read;
    in_place += values != scratch.data();
    received.assign(values, values + kLarge);
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
  auto snapshot = std::make_shared<const std::vector<double>>(Ramp(kLarge));
  auto nan_snapshot = std::make_shared<std::vector<double>>(Ramp(kLarge));
  (*nan_snapshot)[kLarge / 2] = kNaN;
  Envelope offer;
  offer.type = MessageType::kXchgReq;
  offer.exchange_seq = 1;
  offer.payloads = {Float64Payload(snapshot->data(), kLarge)};
  ASSERT_TRUE(t0.Send(1, offer, snapshot));
  offer.exchange_seq = 2;
  offer.payloads = {Float64Payload(nan_snapshot->data(), kLarge)};
  ASSERT_TRUE(t0.Send(1, offer, nan_snapshot));
  while (read < 1 || t1.rejects().count(RejectReason::kNonFinite) < 1) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "exchange offers did not arrive";
    t1.Poll(std::chrono::milliseconds(5), handler);
  }
  EXPECT_EQ(received, *snapshot);
  EXPECT_EQ(read, 1);
  EXPECT_EQ(t1.rejects().count(RejectReason::kNonFinite), 1u);
  // On glibc ZeroMQ mallocs a frame this large on its own, 8-byte aligned; elsewhere the
  // conversion into scratch is the (correct) fallback.
#ifdef __GLIBC__
  EXPECT_EQ(in_place, 1);
#endif
  // The bytes counted include the payload frames.
  EXPECT_GE(t1.bytes_received(), 2 * 8 * uint64_t{kLarge});
  for (const char* suffix : {"0", "1"}) {
    std::remove(("/tmp/starling-send-path-large-" + std::to_string(::getpid()) + "-" + suffix)
                    .c_str());
  }
}

}  // namespace
}  // namespace starling::net
