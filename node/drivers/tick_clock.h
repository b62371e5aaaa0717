// The local clock of an asynchronous node that acts on ticks of its own (the pairwise diffusion
// of topology inference): the gaps between its ticks, either exponential (a Poisson
// clock, as node/sim/pairwise_inference_sim.h simulates) or fixed.
//
// Pure: no clock is read here; the owner adds the gaps to its own time. Deterministic for the
// seed. Not thread-safe.
#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace starling::node {

class TickClock {
 public:
  // mean_us > 0: the mean gap in microseconds; `poisson` draws exponential gaps of that mean,
  // otherwise every gap is mean_us. Throws std::invalid_argument for mean_us <= 0.
  TickClock(int64_t mean_us, bool poisson, uint64_t seed);

  // The gap to the next tick, in microseconds (>= 1 for a Poisson clock: a gap that rounds to 0
  // is 1, so that ticks stay ordered in time).
  int64_t NextGapUs();
  int64_t mean_us() const { return mean_us_; }

 private:
  int64_t mean_us_;
  bool poisson_;
  std::mt19937_64 rng_;
};

}  // namespace starling::node
