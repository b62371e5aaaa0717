// Which node a pairwise simulator activates next: uniformly (every node's Poisson clock at the
// same rate), or, with --slow-node, with probability proportional to 1/FACTOR_i (node i's clock
// FACTOR_i times slower: it does FACTOR_i times fewer local steps per simulated time unit).
// Uniform picks draw exactly as before (rng() % n), so runs without stragglers are unchanged bit
// for bit.
#pragma once

#include <cstddef>
#include <random>
#include <stdexcept>
#include <vector>

namespace starling::node {

class ActivationPicker {
 public:
  explicit ActivationPicker(size_t nodes) : nodes_(nodes) {}

  // factors[i] >= 1 per node (node/config/slow_nodes.h); all 1 = uniform.
  void SetSlowFactors(const std::vector<double>& factors) {
    if (factors.size() != nodes_) throw std::invalid_argument("--slow-node: one factor per node");
    weighted_ = false;
    std::vector<double> rates;
    for (double f : factors) {
      if (!(f >= 1)) throw std::invalid_argument("--slow-node: factors must be >= 1");
      weighted_ |= f != 1.0;
      rates.push_back(1.0 / f);
    }
    pick_ = std::discrete_distribution<size_t>(rates.begin(), rates.end());
  }

  size_t Pick(std::mt19937_64& rng) { return weighted_ ? pick_(rng) : rng() % nodes_; }

 private:
  size_t nodes_;
  bool weighted_ = false;
  std::discrete_distribution<size_t> pick_;
};

}  // namespace starling::node
