// Runs an asynchronous method whose nodes keep their own seeded Poisson clocks (DADAO, ADFS) for
// N nodes in one process, in the order of the nodes' own event times: all clocks start at 0 and
// run at the same nominal rate, so the event with the smallest own time is the next one in global
// time. An exchange initiation picks a uniformly random neighbour (the simulator's seeded RNG, as
// the exchange driver), brings it to the initiator's time (AdvanceTo) and exchanges at once.
// Deterministic for a seed. The same interface as PairwiseSimulator for the run loop
// (simulated_run.cc).
//
// Derived (CRTP) supplies what differs between the methods:
//   static void PrepareForEventOrder(Algo& a);  // once per node, after it is built
//   static double ExchangeTime(const Algo& a, double next_event_time);
//       // the time the responder is brought to, given the initiator after BeginExchange and its
//       // NextEventTime() read just before it
// Algo has NextEventTime, WantsExchange, LocalStep, BeginExchange, AdvanceTo, Respond,
// CompleteExchange, counters() and Model() (a PairwiseAlgorithm with its own clocks).
//
// Not thread-safe. The NodeSetups (and their problems) must outlive it.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/pairwise/pairwise_method.h"
#include "node/report/model_spread.h"

namespace starling::node {

template <class Derived, class Algo>
class EventOrderSimulator {
 public:
  // The next event (a computation or an exchange); returns the computations it took (0 or 1).
  int64_t Activate() {
    size_t i = 0;
    for (size_t k = 1; k < algorithms_.size(); ++k) {
      if (algorithms_[k]->NextEventTime() < algorithms_[i]->NextEventTime()) i = k;
    }
    Algo& a = *algorithms_[i];
    const auto& neighbors = nodes_[i].neighbors;
    if (!a.WantsExchange() || neighbors.empty()) {
      a.LocalStep();
      ++total_local_steps_;
      return 1;
    }
    const int j = neighbors[rng_() % neighbors.size()];
    const uint64_t seq = next_seq_++;
    const double next_event_time = a.NextEventTime();
    const std::shared_ptr<const Vec> offer = a.BeginExchange(j, seq);
    algorithms_[j]->AdvanceTo(Derived::ExchangeTime(a, next_event_time));
    const std::shared_ptr<const Vec> reply = algorithms_[j]->Respond(static_cast<int>(i), *offer);
    a.CompleteExchange(seq, *reply);
    ++exchanges_;
    return 0;
  }
  // Events until the nodes have taken `steps_per_node` computations on average.
  void RunUntilLocalSteps(int64_t steps_per_node) {
    const int64_t target = steps_per_node * num_nodes();
    while (total_local_steps_ < target) Activate();
  }

  int num_nodes() const { return static_cast<int>(algorithms_.size()); }
  const Algo& node(int i) const { return *algorithms_[i]; }
  int64_t total_local_steps() const { return total_local_steps_; }
  int64_t exchanges() const { return exchanges_; }
  int64_t bytes_sent() const {
    int64_t bits = 0;
    for (const auto& a : algorithms_) bits += a->counters().bits_sent;
    return bits / 8;
  }
  int64_t messages_sent() const { return 2 * exchanges_; }
  ModelSpread Spread() const {
    std::vector<const Vec*> models;
    for (const auto& a : algorithms_) models.push_back(&a->Model());
    return SpreadOf(models);
  }

 protected:
  // options.algorithm must be `name`.
  EventOrderSimulator(const std::vector<algorithms::NodeSetup>& nodes,
                      const algorithms::PairwiseOptions& options, uint64_t seed, const char* name,
                      const char* simulator)
      : nodes_(nodes), rng_(seed) {
    if (nodes.empty()) throw std::invalid_argument("simulator needs at least one node");
    if (options.algorithm != name) {
      throw std::invalid_argument(std::string(simulator) + " runs " + name + " only");
    }
    for (const auto& setup : nodes) {
      auto a = algorithms::MakePairwiseAlgorithm(options, setup);
      algorithms_.emplace_back(static_cast<Algo*>(a.release()));
      Derived::PrepareForEventOrder(*algorithms_.back());
    }
  }

  std::vector<std::unique_ptr<Algo>> algorithms_;

 private:
  const std::vector<algorithms::NodeSetup>& nodes_;
  std::mt19937_64 rng_;
  int64_t total_local_steps_ = 0;
  int64_t exchanges_ = 0;
  uint64_t next_seq_ = 1;
};

}  // namespace starling::node
