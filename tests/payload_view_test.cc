// net::PayloadReader: the one checked, typed read of a received payload (net/payload_view.h).
#include "net/payload_view.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <variant>
#include <vector>

#include "net/payload.h"

namespace starling::net {
namespace {

constexpr uint32_t kDim = 6;

std::vector<double> Ramp() {
  std::vector<double> x(kDim);
  for (uint32_t i = 0; i < kDim; ++i) x[i] = 0.5 * i - 1.0;
  return x;
}

TEST(PayloadReader, AlignedFloat64IsViewedInPlace) {
  const std::vector<double> x = Ramp();
  PayloadReader reader;
  Reject reject;
  const auto view = reader.Read(Float64Payload(x.data(), kDim), kDim, &reject);
  ASSERT_TRUE(view) << reject.detail;
  const auto* dense = std::get_if<DenseView>(&*view);
  ASSERT_NE(dense, nullptr);
  EXPECT_EQ(dense->values, x.data());  // no copy
  EXPECT_EQ(dense->dim, kDim);
}

TEST(PayloadReader, UnalignedAndFloat32AreConverted) {
  const std::vector<double> x = Ramp();
  // The same doubles one byte off their alignment, as a small inline payload may arrive.
  std::string shifted(1 + 8 * kDim, '\0');
  std::memcpy(shifted.data() + 1, x.data(), 8 * kDim);
  Payload unaligned = Float64Payload(x.data(), kDim);
  unaligned.bytes = std::string_view(shifted).substr(1);
  PayloadReader reader;
  Reject reject;
  auto view = reader.Read(unaligned, kDim, &reject);
  ASSERT_TRUE(view) << reject.detail;
  const DenseView dense = std::get<DenseView>(*view);
  EXPECT_NE(static_cast<const void*>(dense.values), static_cast<const void*>(shifted.data() + 1));
  EXPECT_EQ(std::vector<double>(dense.values, dense.values + kDim), x);

  std::string storage;
  view = reader.Read(Float32Payload(x.data(), kDim, &storage), kDim, &reject);
  ASSERT_TRUE(view) << reject.detail;
  const DenseView converted = std::get<DenseView>(*view);
  for (uint32_t i = 0; i < kDim; ++i) EXPECT_EQ(converted.values[i], static_cast<float>(x[i]));
}

// For a consumer that checks finiteness in its merge: every check but the NaN/Inf
// scan. NaN and Inf pass (in place, unaligned or converted from float32), nothing else does.
TEST(PayloadReader, ReadDenseUncheckedKeepsEveryCheckButFiniteness) {
  std::vector<double> x = Ramp();
  x[0] = std::numeric_limits<double>::quiet_NaN();
  x[kDim - 1] = -std::numeric_limits<double>::infinity();
  PayloadReader reader;
  Reject reject;
  auto view = reader.ReadDenseUnchecked(Float64Payload(x.data(), kDim), kDim, &reject);
  ASSERT_TRUE(view) << reject.detail;
  EXPECT_EQ(view->values, x.data());  // in place
  EXPECT_EQ(view->dim, kDim);
  std::string shifted(1 + 8 * kDim, '\0');
  std::memcpy(shifted.data() + 1, x.data(), 8 * kDim);
  Payload unaligned = Float64Payload(x.data(), kDim);
  unaligned.bytes = std::string_view(shifted).substr(1);
  view = reader.ReadDenseUnchecked(unaligned, kDim, &reject);
  ASSERT_TRUE(view) << reject.detail;
  EXPECT_TRUE(std::isnan(view->values[0]));
  EXPECT_EQ(view->values[1], x[1]);
  std::string storage;
  view = reader.ReadDenseUnchecked(Float32Payload(x.data(), kDim, &storage), kDim, &reject);
  ASSERT_TRUE(view) << reject.detail;
  EXPECT_TRUE(std::isnan(view->values[0]));
  EXPECT_EQ(view->values[kDim - 1], -std::numeric_limits<double>::infinity());
  // The wrong dimension, a short byte string, another encoding: refused as by Read.
  EXPECT_FALSE(reader.ReadDenseUnchecked(Float64Payload(x.data(), kDim), kDim + 1, &reject));
  EXPECT_EQ(reject.reason, RejectReason::kWrongDimension);
  Payload shorter = Float64Payload(x.data(), kDim);
  shorter.bytes = shorter.bytes.substr(0, 8 * kDim - 1);
  EXPECT_FALSE(reader.ReadDenseUnchecked(shorter, kDim, &reject));
  EXPECT_EQ(reject.reason, RejectReason::kBadLength);
  const std::string codes(kDim, '\0');
  EXPECT_FALSE(reader.ReadDenseUnchecked(LatticePayload(kDim, 1e-3, 256, codes), kDim, &reject));
  EXPECT_EQ(reject.reason, RejectReason::kBadEncoding);
}

TEST(PayloadReader, DenseIntoCopiesToTheGivenBuffer) {
  const std::vector<double> x = Ramp();
  std::vector<double> into(kDim, 99.0);
  PayloadReader reader;
  Reject reject;
  const auto view = reader.Read(Float64Payload(x.data(), kDim), kDim, &reject, into.data());
  ASSERT_TRUE(view) << reject.detail;
  EXPECT_EQ(std::get<DenseView>(*view).values, into.data());
  EXPECT_EQ(into, x);
}

TEST(PayloadReader, RejectsWrongDimensionAndNonFiniteValues) {
  std::vector<double> x = Ramp();
  PayloadReader reader;
  Reject reject;
  EXPECT_FALSE(reader.Read(Float64Payload(x.data(), kDim), kDim + 1, &reject));
  EXPECT_EQ(reject.reason, RejectReason::kWrongDimension);
  x[3] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(reader.Read(Float64Payload(x.data(), kDim), kDim, &reject));
  EXPECT_EQ(reject.reason, RejectReason::kNonFinite);
  std::vector<double> into(kDim);
  EXPECT_FALSE(reader.Read(Float64Payload(x.data(), kDim), kDim, &reject, into.data()));
  EXPECT_EQ(reject.reason, RejectReason::kNonFinite);
  // A length that does not match dim is refused before any value is read.
  Payload short_bytes = Float64Payload(x.data(), kDim);
  short_bytes.bytes = short_bytes.bytes.substr(0, 8 * (kDim - 1));
  EXPECT_FALSE(reader.Read(short_bytes, kDim, &reject));
  EXPECT_EQ(reject.reason, RejectReason::kBadLength);
}

TEST(PayloadReader, SparseEntriesScatterIntoZeros) {
  std::string storage;
  Payload p = TopKPayload(kDim, {1, 4}, {2.5, -3.0}, &storage);
  p.check = 77;
  PayloadReader reader;
  Reject reject;
  const auto view = reader.Read(p, kDim, &reject);
  ASSERT_TRUE(view) << reject.detail;
  const SparseView sparse = std::get<SparseView>(*view);
  ASSERT_EQ(sparse.size(), 2u);
  EXPECT_EQ(sparse.index(1), 4u);
  EXPECT_EQ(sparse.value(0), 2.5);
  EXPECT_EQ(sparse.check, 77u);
  std::vector<double> out(kDim, 9.0);
  sparse.ScatterInto(out.data());
  EXPECT_EQ(out, (std::vector<double>{0, 2.5, 0, 0, -3.0, 0}));
}

TEST(PayloadReader, SparseEntriesOutOfOrderAreRefused) {
  // TopKPayload refuses to build one, so the bytes are written by hand: index 4, then 1.
  std::string bytes(2 * kTopKEntryBytes, '\0');
  const uint32_t indices[2] = {4, 1};
  const double values[2] = {1.0, 2.0};
  for (int i = 0; i < 2; ++i) {
    std::memcpy(bytes.data() + i * kTopKEntryBytes, &indices[i], 4);
    std::memcpy(bytes.data() + i * kTopKEntryBytes + 4, &values[i], 8);
  }
  Payload p;
  p.encoding = Encoding::kTopK;
  p.dim = kDim;
  p.bytes = bytes;
  PayloadReader reader;
  Reject reject;
  EXPECT_FALSE(reader.Read(p, kDim, &reject));
  EXPECT_EQ(reject.reason, RejectReason::kBadSparse);
}

TEST(PayloadReader, LatticeCodesAreHandedUpWithTheirParameters) {
  const std::string codes(LatticeBytes(kDim, 16), '\x5a');  // 4 bits a code
  PayloadReader reader;
  Reject reject;
  const auto view = reader.Read(LatticePayload(kDim, 1e-3, 16, codes, 0x1234), kDim, &reject);
  ASSERT_TRUE(view) << reject.detail;
  const LatticeView lattice = std::get<LatticeView>(*view);
  EXPECT_EQ(lattice.bits, 4);
  EXPECT_EQ(lattice.modulus, 16u);
  EXPECT_EQ(lattice.scale, 1e-3);
  EXPECT_EQ(lattice.check, 0x1234u);
  EXPECT_EQ(lattice.codes.data(), codes.data());
  // A modulus that is not a power of two is refused.
  EXPECT_FALSE(reader.Read(LatticePayload(kDim, 1e-3, 12, codes), kDim, &reject));
  EXPECT_EQ(reject.reason, RejectReason::kBadModulus);
}

TEST(PayloadReader, CrossPolytopeCodesAreHandedUpCheckedAgainstTheRun) {
  // kDim = 6: 1 + 3 bits a code, codes < 12; codes 3, 11, 0 packed by hand, least significant
  // bit first: 0011 1011 0000 -> bytes 0xb3, 0x00.
  const std::string codes("\xb3\x00", 2);
  PayloadReader reader;
  Reject reject;
  const auto view = reader.Read(CrossPolytopePayload(kDim, 0.75, 3, codes, 0x77), kDim, &reject);
  ASSERT_TRUE(view) << reject.detail;
  const CrossPolytopeView cp = std::get<CrossPolytopeView>(*view);
  EXPECT_EQ(cp.samples, 3u);
  EXPECT_EQ(cp.bits, 4);
  EXPECT_EQ(cp.norm, 0.75);
  EXPECT_EQ(cp.check, 0x77u);
  EXPECT_EQ(cp.code(0), 3u);
  EXPECT_EQ(cp.code(1), 11u);
  EXPECT_EQ(cp.code(2), 0u);
  // Another run's dimension, a code >= 2 dim (12 = 0b1100 in the second slot), a norm < 0.
  EXPECT_FALSE(reader.Read(CrossPolytopePayload(kDim, 0.75, 3, codes), kDim + 1, &reject));
  EXPECT_EQ(reject.reason, RejectReason::kWrongDimension);
  const std::string high("\xc3\x00", 2);
  EXPECT_FALSE(reader.Read(CrossPolytopePayload(kDim, 0.75, 3, high), kDim, &reject));
  EXPECT_EQ(reject.reason, RejectReason::kBadSparse);
  EXPECT_FALSE(reader.Read(CrossPolytopePayload(kDim, -0.75, 3, codes), kDim, &reject));
  EXPECT_EQ(reject.reason, RejectReason::kBadField);
  // The high nibble of the last byte is unused: it must be 0.
  const std::string dirty("\xb3\x10", 2);
  EXPECT_FALSE(reader.Read(CrossPolytopePayload(kDim, 0.75, 3, dirty), kDim, &reject));
  EXPECT_EQ(reject.reason, RejectReason::kBadField);
}

TEST(PayloadReader, RangeCodesAreHandedUpCheckedAgainstTheRun) {
  // kDim = 6 codes of 5 bits, packed by hand least significant bit first: codes 31, 0, 17, 4, 30,
  // 1 are the bit string 11111 00000 10001 00100 01111 10000 (each code's bits low to high), bit
  // `at` of the string going to bit at % 8 of byte at / 8.
  const std::vector<uint32_t> want = {31, 0, 17, 4, 30, 1};
  std::string codes(4, '\0');  // 30 bits
  {
    const char* bit_string = "111110000010001001000111110000";
    for (int at = 0; at < 30; ++at) {
      if (bit_string[at] == '1') codes[at / 8] = static_cast<char>(codes[at / 8] | (1 << (at % 8)));
    }
  }
  ASSERT_EQ(static_cast<uint8_t>(codes[0]), 0x1f);
  PayloadReader reader;
  Reject reject;
  const auto view = reader.Read(RangeCodesPayload(kDim, 2.5, 5, codes), kDim, &reject);
  ASSERT_TRUE(view) << reject.detail;
  const RangeCodesView rc = std::get<RangeCodesView>(*view);
  EXPECT_EQ(rc.dim, kDim);
  EXPECT_EQ(rc.bits, 5);
  EXPECT_EQ(rc.range, 2.5);
  for (uint32_t k = 0; k < kDim; ++k) EXPECT_EQ(rc.code(k), want[k]) << k;
  // Another run's dimension, a range < 0, a padding bit set, a length of another R.
  EXPECT_FALSE(reader.Read(RangeCodesPayload(kDim, 2.5, 5, codes), kDim - 1, &reject));
  EXPECT_EQ(reject.reason, RejectReason::kWrongDimension);
  EXPECT_FALSE(reader.Read(RangeCodesPayload(kDim, -2.5, 5, codes), kDim, &reject));
  EXPECT_EQ(reject.reason, RejectReason::kBadField);
  std::string dirty = codes;
  dirty[3] = static_cast<char>(dirty[3] | 0x40);  // bit 30
  EXPECT_FALSE(reader.Read(RangeCodesPayload(kDim, 2.5, 5, dirty), kDim, &reject));
  EXPECT_EQ(reject.reason, RejectReason::kBadField);
  EXPECT_FALSE(reader.Read(RangeCodesPayload(kDim, 2.5, 6, codes), kDim, &reject));
  EXPECT_EQ(reject.reason, RejectReason::kBadLength);
  EXPECT_FALSE(reader.Read(RangeCodesPayload(kDim, 2.5, 31, std::string(24, '\0')), kDim, &reject));
  EXPECT_EQ(reject.reason, RejectReason::kBadField);
}

}  // namespace
}  // namespace starling::net
