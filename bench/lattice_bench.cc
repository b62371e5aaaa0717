// starling-bench-lattice: the CPU cost of one lattice-quantized SwarmSGD message (the
// exchanges of --compression lattice), operation by operation, against memcpy of the
// same d doubles measured in the same process.
//
// A lattice exchange runs, per message: Dither (the shared pseudo-random dither from its seed) and
// Encode (lattice integers, codes, the point Q(x) and the integers' hash) on the sender, PackCodes
// into the wire bytes; UnpackCodes, Dither and Decode (which hashes again) on the receiver. Each op
// is timed in interleaved batches and the fastest batch over the rounds is kept (the machine is
// shared and noisy). One line per (op, d): microseconds per op and ratio = memcpy time / op time.
// `message` is the sum of the sender's and the receiver's ops.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "algorithms/compression/lattice_quantizer.h"

namespace {

using BenchClock = std::chrono::steady_clock;
using starling::Vec;
using starling::algorithms::LatticeQuantizer;

constexpr int kRounds = 31;
constexpr double kBatchSeconds = 0.003;

void Clobber(void* p) { asm volatile("" : : "g"(p) : "memory"); }

// Seconds per call of `op`, the fastest of kRounds batches of `reps` calls.
double TimeOp(const std::function<void()>& op, int reps) {
  double best = 1e30;
  for (int r = 0; r < kRounds; ++r) {
    const auto t0 = BenchClock::now();
    for (int i = 0; i < reps; ++i) op();
    const double s = std::chrono::duration<double>(BenchClock::now() - t0).count() / reps;
    best = std::min(best, s);
  }
  return best;
}

int RepsFor(const std::function<void()>& op) {
  const auto t0 = BenchClock::now();
  op();
  const double once = std::chrono::duration<double>(BenchClock::now() - t0).count();
  return std::max(1, static_cast<int>(kBatchSeconds / std::max(once, 1e-9)));
}

void Run(Eigen::Index d, int bits, double scale) {
  const LatticeQuantizer q(bits, scale);
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal(0.0, 0.05);
  Vec x(d), reference(d), dither, point, decoded;
  for (Eigen::Index k = 0; k < d; ++k) {
    x[k] = normal(rng);
    reference[k] = x[k] + 0.1 * scale * normal(rng);
  }
  std::vector<int64_t> ints;
  std::vector<uint32_t> codes, unpacked;
  std::string wire;
  std::vector<double> from(d, 1.0), to(d);
  LatticeQuantizer::Dither(42, d, &dither);
  q.Encode(x, dither, &ints, &codes, &point);
  LatticeQuantizer::PackCodes(codes, bits, &wire);

  struct Op {
    const char* name;
    std::function<void()> run;
  };
  const std::vector<Op> ops = {
      {"memcpy",
       [&] {
         std::memcpy(to.data(), from.data(), d * sizeof(double));
         Clobber(to.data());
       }},
      {"dither",
       [&] {
         LatticeQuantizer::Dither(42, d, &dither);
         Clobber(dither.data());
       }},
      {"encode",
       [&] {
         q.Encode(x, dither, &ints, &codes, &point);
         Clobber(point.data());
       }},
      {"hash",
       [&] {
         volatile uint32_t h = LatticeQuantizer::Hash(ints);
         (void)h;
       }},
      {"pack",
       [&] {
         LatticeQuantizer::PackCodes(codes, bits, &wire);
         Clobber(wire.data());
       }},
      {"unpack",
       [&] {
         LatticeQuantizer::UnpackCodes(wire, d, bits, &unpacked);
         Clobber(unpacked.data());
       }},
      {"decode",
       [&] {
         q.Decode(codes, reference, dither, &decoded);
         Clobber(decoded.data());
       }},
  };
  std::vector<double> seconds(ops.size(), 1e30);
  std::vector<int> reps(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) reps[i] = RepsFor(ops[i].run);
  for (int round = 0; round < 5; ++round) {  // interleave: a slow spell hits every op alike
    for (size_t i = 0; i < ops.size(); ++i) {
      seconds[i] = std::min(seconds[i], TimeOp(ops[i].run, reps[i]));
    }
  }
  double message = 0;
  for (size_t i = 1; i < ops.size(); ++i) {
    if (std::string(ops[i].name) != "hash") message += seconds[i];
    // a Decode after an Encode also checks that the bench decodes exactly
  }
  message += seconds[1];  // the receiver draws the dither too
  for (size_t i = 0; i < ops.size(); ++i) {
    std::printf("{\"op\": \"%s\", \"d\": %ld, \"bits\": %d, \"us\": %.2f, \"ratio\": %.3f}\n",
                ops[i].name, static_cast<long>(d), bits, seconds[i] * 1e6, seconds[0] / seconds[i]);
  }
  std::printf("{\"op\": \"message\", \"d\": %ld, \"bits\": %d, \"us\": %.2f, \"ratio\": %.3f}\n",
              static_cast<long>(d), bits, message * 1e6, seconds[0] / message);
  if (LatticeQuantizer::Hash(ints) != q.Decode(codes, reference, dither, &decoded)) {
    std::fprintf(stderr, "starling-bench-lattice: the decoding was not exact at d = %ld\n",
                 static_cast<long>(d));
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) {
    std::fprintf(stderr,
                 "usage: %s\n  times one lattice message (8 bits, d = 7840 and 1e5) op by op "
                 "against memcpy; takes no arguments\n",
                 argv[0]);
    return std::string(argv[1]) == "--help" ? 0 : 2;
  }
  Run(7840, 8, 1e-3);  // the demo's multinomial model
  Run(100000, 8, 1e-3);
  return 0;
}
