// starling-bench-codec: throughput of the msgpack codec on float64 payloads, relative to memcpy of
// the same bytes measured in the same process (issue 7).
//
// For each dimension d, three operations are timed in interleaved batches (the machine is shared
// and noisy, so a slow spell hits all three alike) and the median of the per-operation times over
// the rounds is reported:
//   encode:  net::Encode of a ROUND envelope with one float64 payload of d doubles into a reused
//            std::string;
//   decode:  net::Decode of those bytes plus net::PayloadToDoubles into a preallocated buffer;
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
#include <vector>

#include "net/codec.h"
#include "net/envelope.h"
#include "net/payload.h"
#include "net/reject.h"

namespace {

using BenchClock = std::chrono::steady_clock;
namespace net = starling::net;

constexpr int kRounds = 21;
constexpr double kBatchSeconds = 0.015;  // target length of one timed batch

// Keeps the compiler from dropping work whose result is otherwise unused.
void Clobber(void* p) { asm volatile("" : : "g"(p) : "memory"); }

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
  auto decode = [&] {
    if (!net::Decode(wire.data(), wire.size(), limits, &out, &reject) || out.payloads.size() != 1 ||
        !net::PayloadToDoubles(out.payloads[0], decoded.data(), decoded.size(), &reject)) {
      Fail("decode failed: " + reject.detail);
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

  const int n_encode = Calibrate(encode);
  const int n_decode = Calibrate(decode);
  const int n_copy = Calibrate(copy);
  std::vector<double> t_encode, t_decode, t_copy;
  for (int r = 0; r < kRounds; ++r) {
    t_copy.push_back(TimeBatch(n_copy, copy));
    t_encode.push_back(TimeBatch(n_encode, encode));
    t_decode.push_back(TimeBatch(n_decode, decode));
  }
  const double copy_s = Median(t_copy);
  const struct {
    const char* op;
    double seconds;
  } results[] = {{"encode", Median(t_encode)}, {"decode", Median(t_decode)}};
  for (const auto& r : results) {
    std::printf(
        "{\"bench\":\"codec\",\"op\":\"%s\",\"dim\":%u,\"bytes\":%zu,\"seconds_per_op\":%.6e,"
        "\"memcpy_seconds_per_op\":%.6e,\"ratio\":%.3f}\n",
        r.op, dim, bytes, r.seconds, copy_s, copy_s / r.seconds);
  }
  std::fflush(stdout);
}

}  // namespace

int main() {
  for (uint32_t dim : {1000u, 10000u, 100000u, 1000000u}) BenchDim(dim);
  return 0;
}
