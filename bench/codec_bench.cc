// starling-bench-codec: throughput of the msgpack codec on float64 payloads, relative to memcpy of
// the same bytes measured in the same process.
//
// For each dimension d, three operations are timed in interleaved batches (the machine is shared
// and noisy, so a slow spell hits all three alike) and the fastest batch of each op (the one least
// disturbed by other processes: on a loaded 2-core machine medians drifted by 2x between runs) over
// the rounds is reported:
//   encode:  net::Encode of a ROUND envelope with one float64 payload of d doubles into a reused
//            std::string;
//   decode:  net::Decode of those bytes as the transport does it (ValueChecks::kDeferFloats)
//            plus net::PayloadToDoubles into a preallocated buffer: one pass over the values;
//   decode_checked: the same with ValueChecks::kAll, which scans the values in Decode and again
//            in PayloadToDoubles (two passes, what callers other than the transport get);
//   encode_framed, decode_framed: the same as the transport does them since wire v3 for payloads
//            of net::kOutOfLineMinBytes or more (every dim here): net::EncodeFramed writes the
//            header and leaves the payload's bytes to be sent as a frame of their own (no copy);
//            net::Decode of the header with that frame plus net::ReadDoubles, which checks the
//            aligned frame for NaN/Inf in place and returns a pointer into it (no copy);
//   copy_checked: net::PayloadToDoubles of that received frame into a preallocated buffer: the
//            copy a round-based node makes of a neighbour's ROUND payload (node::CollectVectors:
//            the synchronizer keeps it until its round) with the NaN/Inf check in the same pass;
//   memcpy:  std::memcpy of the same 8d bytes between two preallocated buffers.
// One JSON line per (op, dim) goes to stdout; ratio = memcpy time / op time (1.0 means the op
// moves bytes as fast as memcpy; the target for float64 is >= 0.5).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "net/codec.h"
#include "net/envelope.h"
#include "net/payload.h"
#include "net/reject.h"

namespace {

using BenchClock = std::chrono::steady_clock;
namespace net = starling::net;

constexpr int kRounds = 61;
constexpr double kBatchSeconds = 0.003;  // target length of one timed batch

// Keeps the compiler from dropping work whose result is otherwise unused.
void Clobber(void* p) { asm volatile("" : : "g"(p) : "memory"); }

double Fastest(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

[[noreturn]] void Fail(const std::string& message) {
  std::fprintf(stderr, "starling-bench-codec: %s\n", message.c_str());
  std::exit(1);
}

// Runs op n times and returns the mean seconds per call.
template <typename Op>
double TimeBatch(int n, Op&& op) {
  const auto start = BenchClock::now();
  for (int i = 0; i < n; ++i) op();
  const std::chrono::duration<double> elapsed = BenchClock::now() - start;
  return elapsed.count() / n;
}

// Number of calls of op that take about kBatchSeconds (at least 1).
template <typename Op>
int Calibrate(Op&& op) {
  op();  // warm caches and buffers
  int n = 1;
  for (;;) {
    const double per_op = TimeBatch(n, op);
    if (per_op * n >= kBatchSeconds / 4 || n >= (1 << 24)) {
      return std::max(1, static_cast<int>(kBatchSeconds / std::max(per_op, 1e-9)));
    }
    n *= 4;
  }
}

void BenchDim(uint32_t dim) {
  std::mt19937_64 rng(dim);
  std::normal_distribution<double> normal;
  std::vector<double> x(dim), decoded(dim), copy_dst(dim);
  for (double& v : x) v = normal(rng);

  net::Envelope envelope;
  envelope.type = net::MessageType::kRound;
  envelope.run_id = net::RunIdOf("bench-codec");
  envelope.sender = 0;
  envelope.key = {42, 1, 0};
  envelope.payloads.push_back(net::Float64Payload(x.data(), dim));

  const net::DecodeLimits limits = net::LimitsForRun(dim, 4);
  std::string encoded;
  net::Encode(envelope, &encoded);  // the reference bytes for decode
  const std::string wire = encoded;

  std::string encode_buffer;
  auto encode = [&] {
    net::Encode(envelope, &encode_buffer);
    Clobber(encode_buffer.data());
  };
  net::Envelope out;
  net::Reject reject;
  auto decode_with = [&](net::ValueChecks checks) {
    if (!net::Decode(wire.data(), wire.size(), limits, &out, &reject, checks) ||
        out.payloads.size() != 1 ||
        !net::PayloadToDoubles(out.payloads[0], decoded.data(), decoded.size(), &reject)) {
      Fail("decode failed: " + reject.detail);
    }
    Clobber(decoded.data());
  };
  auto decode = [&] { decode_with(net::ValueChecks::kDeferFloats); };
  auto decode_checked = [&] { decode_with(net::ValueChecks::kAll); };
  // The transport's path for payloads of net::kOutOfLineMinBytes or more (all dims here):
  // the payload travels as a ZeroMQ frame of its own, the first frame holds the rest.
  std::string framed_header;
  std::vector<uint32_t> out_of_line;
  net::EncodeFramed(envelope, net::kOutOfLineMinBytes, &framed_header, &out_of_line);
  if (out_of_line.size() != 1) Fail("the payload did not go out of line");
  // The received frame: its own aligned allocation, as ZeroMQ's would be.
  const std::vector<double> frame_storage = x;
  const std::string_view frame(reinterpret_cast<const char*>(frame_storage.data()),
                               sizeof(double) * frame_storage.size());
  auto encode_framed = [&] {
    net::EncodeFramed(envelope, net::kOutOfLineMinBytes, &framed_header, &out_of_line);
    Clobber(framed_header.data());
  };
  std::vector<double> scratch;
  const double* framed_values = nullptr;
  auto decode_framed = [&] {
    if (!net::Decode(framed_header.data(), framed_header.size(), &frame, 1, limits, &out,
                     &reject, net::ValueChecks::kDeferFloats) ||
        out.payloads.size() != 1 ||
        (framed_values = net::ReadDoubles(out.payloads[0], dim, &scratch, &reject)) == nullptr) {
      Fail("framed decode failed: " + reject.detail);
    }
    Clobber(const_cast<double*>(framed_values));
  };
  net::Envelope received;  // the framed envelope, decoded once: its payload views `frame`
  if (!net::Decode(framed_header.data(), framed_header.size(), &frame, 1, limits, &received,
                   &reject, net::ValueChecks::kDeferFloats) ||
      received.payloads.size() != 1) {
    Fail("framed decode failed: " + reject.detail);
  }
  auto copy_checked = [&] {
    if (!net::PayloadToDoubles(received.payloads[0], decoded.data(), decoded.size(), &reject)) {
      Fail("checked copy failed: " + reject.detail);
    }
    Clobber(decoded.data());
  };
  const size_t bytes = sizeof(double) * static_cast<size_t>(dim);
  auto copy = [&] {
    std::memcpy(copy_dst.data(), x.data(), bytes);
    Clobber(copy_dst.data());
  };

  // Correctness check before timing: the round trip gives back the same doubles.
  decode();
  if (std::memcmp(decoded.data(), x.data(), bytes) != 0) Fail("decode does not round-trip");
  decoded.assign(dim, 0.0);
  decode_checked();
  if (std::memcmp(decoded.data(), x.data(), bytes) != 0) Fail("decode does not round-trip");
  decode_framed();
  if (framed_values != frame_storage.data()) Fail("framed decode copied the frame");
  if (std::memcmp(framed_values, x.data(), bytes) != 0) Fail("framed decode does not round-trip");
  decoded.assign(dim, 0.0);
  copy_checked();
  if (std::memcmp(decoded.data(), x.data(), bytes) != 0) Fail("checked copy does not round-trip");

  const int n_encode = Calibrate(encode);
  const int n_decode = Calibrate(decode);
  const int n_checked = Calibrate(decode_checked);
  const int n_encode_framed = Calibrate(encode_framed);
  const int n_decode_framed = Calibrate(decode_framed);
  const int n_copy_checked = Calibrate(copy_checked);
  const int n_copy = Calibrate(copy);
  std::vector<double> t_encode, t_decode, t_checked, t_encode_framed, t_decode_framed,
      t_copy_checked, t_copy;
  for (int r = 0; r < kRounds; ++r) {
    t_copy.push_back(TimeBatch(n_copy, copy));
    t_encode.push_back(TimeBatch(n_encode, encode));
    t_decode.push_back(TimeBatch(n_decode, decode));
    t_checked.push_back(TimeBatch(n_checked, decode_checked));
    t_encode_framed.push_back(TimeBatch(n_encode_framed, encode_framed));
    t_decode_framed.push_back(TimeBatch(n_decode_framed, decode_framed));
    t_copy_checked.push_back(TimeBatch(n_copy_checked, copy_checked));
  }
  const double copy_s = Fastest(t_copy);
  const double copy_median = Median(t_copy);
  const struct {
    const char* op;
    double seconds;
    double median;
  } results[] = {{"encode", Fastest(t_encode), Median(t_encode)},
                 {"decode", Fastest(t_decode), Median(t_decode)},
                 {"decode_checked", Fastest(t_checked), Median(t_checked)},
                 {"encode_framed", Fastest(t_encode_framed), Median(t_encode_framed)},
                 {"decode_framed", Fastest(t_decode_framed), Median(t_decode_framed)},
                 {"copy_checked", Fastest(t_copy_checked), Median(t_copy_checked)}};
  for (const auto& r : results) {
    std::printf(
        "{\"bench\":\"codec\",\"op\":\"%s\",\"dim\":%u,\"bytes\":%zu,\"seconds_per_op\":%.6e,"
        "\"memcpy_seconds_per_op\":%.6e,\"ratio\":%.3f,\"ratio_of_medians\":%.3f}\n",
        r.op, dim, bytes, r.seconds, copy_s, copy_s / r.seconds, copy_median / r.median);
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  // Optional filter: starling-bench-codec [dim]
  if (argc > 2 || (argc == 2 && std::strtoul(argv[1], nullptr, 10) == 0)) {
    std::fprintf(stderr, "usage: starling-bench-codec [dim]   (default: 1e3, 1e4, 1e5, 1e6)\n");
    return 2;
  }
  if (argc == 2) {
    BenchDim(static_cast<uint32_t>(std::strtoul(argv[1], nullptr, 10)));
    return 0;
  }
  for (uint32_t dim : {1000u, 10000u, 100000u, 1000000u}) BenchDim(dim);
  return 0;
}
