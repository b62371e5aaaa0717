// A fake pairwise algorithm for driver-level tests: it always wants an exchange, asks for
// `preferred` as its partner (-1: any neighbour), keeps at most one offer outstanding, merges
// nothing (every reply is refused) and answers every request with its zero model.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "algorithms/pairwise/pairwise_algorithm.h"

namespace starling::testing {

class AlwaysOffers : public algorithms::PairwiseAlgorithm {
 public:
  int preferred = -1;

  std::string name() const override { return "always-offers"; }
  void LocalStep() override {}
  bool WantsExchange() const override { return true; }
  int PreferredPeer() const override { return preferred; }
  bool ShouldWait() const override { return false; }
  std::shared_ptr<const Vec> BeginExchange(int, uint64_t) override {
    outstanding_ = true;
    return std::make_shared<Vec>(model_);
  }
  bool CompleteExchange(uint64_t, const Eigen::Ref<const Vec>&) override { return false; }
  void AbortExchange(bool) override { outstanding_ = false; }
  bool exchange_outstanding() const override { return outstanding_; }
  std::shared_ptr<const Vec> Respond(int, const Eigen::Ref<const Vec>&) override {
    return std::make_shared<Vec>(model_);
  }
  const Vec& Model() const override { return model_; }
  algorithms::PairwiseCounters counters() const override { return {}; }

 private:
  Vec model_ = Vec::Zero(2);
  bool outstanding_ = false;
};

}  // namespace starling::testing
