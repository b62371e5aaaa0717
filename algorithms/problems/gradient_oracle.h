// Local gradients for an algorithm: full, or mini-batches drawn from a seeded generator. Keeps the
// count of gradient work in units of full local data passes.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "algorithms/problems/problem.h"
#include "algorithms/types.h"

namespace starling::algorithms {

class GradientOracle {
 public:
  // batch_size 0 means full gradients. `problem` is not owned and must outlive the oracle.
  GradientOracle(const Problem* problem, int batch_size, uint64_t seed);

  // g = grad f_i(x), or a mini-batch estimate with samples drawn uniformly with replacement.
  void Compute(const Vec& x, Vec* g);
  // The same restricted to the shard rows `rows` (block-cyclic data): a mini-batch drawn
  // uniformly with replacement from `rows` (rows[engine() % |rows|]), or with batch size 0 the
  // gradient over all of `rows`; either scaled as BatchGradient scales, so an estimate of the
  // gradient of f_i as if the whole shard looked like `rows`. Empty `rows` (the node holds no
  // row of the block): g = 0 and no draw.
  void ComputeOn(const Vec& x, const std::vector<int>& rows, Vec* g);
  double passes() const { return passes_; }
  // The random engine and the pass count, for checkpoints.
  std::string SaveEngine() const;
  void LoadEngine(const std::string& engine, double passes);

 private:
  const Problem* problem_;
  int batch_size_;
  std::mt19937_64 rng_;
  std::vector<int> batch_;
  double passes_ = 0.0;
};

}  // namespace starling::algorithms
