// The part of a pairwise method's checkpoint (AlgorithmState) that every layout shares: six of
// its PairwiseCounters as ints, in a fixed order. Each layout puts them where it always had them,
// so checkpoints written before keep loading.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/pairwise/pairwise_algorithm.h"

namespace starling::algorithms {

// Local steps, exchanges initiated, served and aborted, bits sent, decode failures (the gradient
// passes are a real: each layout keeps them among its reals).
inline constexpr size_t kCounterInts = 6;

inline void AppendCounterInts(const PairwiseCounters& c, std::vector<int64_t>* ints) {
  ints->insert(ints->end(), {c.local_steps, c.exchanges_initiated, c.exchanges_served,
                             c.exchanges_aborted, c.bits_sent, c.decode_failures});
}

// Reads the six from ints[at, at + kCounterInts); the caller has checked the shape
// (CheckStateShape).
inline void ReadCounterInts(const std::vector<int64_t>& ints, size_t at, PairwiseCounters* c) {
  c->local_steps = ints[at];
  c->exchanges_initiated = ints[at + 1];
  c->exchanges_served = ints[at + 2];
  c->exchanges_aborted = ints[at + 3];
  c->bits_sent = ints[at + 4];
  c->decode_failures = ints[at + 5];
}

}  // namespace starling::algorithms
