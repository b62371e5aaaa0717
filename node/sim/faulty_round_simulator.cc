#include "node/sim/faulty_round_simulator.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace starling::node {

namespace {

// A held message is released after the next message on its edge, or after this long.
constexpr int64_t kMaxHoldMs = 50;

}  // namespace

FaultyRoundSimulator::FaultyRoundSimulator(const std::vector<algorithms::NodeSetup>& nodes,
                                           const algorithms::RoundOptions& options,
                                           const net::FaultPlan& plan, int64_t resend_ms,
                                           int64_t target_iterations)
    : nodes_(nodes), resend_ms_(std::max<int64_t>(1, resend_ms)), target_(target_iterations) {
  if (nodes.empty()) throw std::invalid_argument("simulator needs at least one node");
  for (const auto& setup : nodes) {
    syncs_.push_back(std::make_unique<RoundSynchronizer>(
        algorithms::MakeRoundAlgorithm(options, setup), setup));
    injectors_.emplace_back(plan, static_cast<uint64_t>(setup.id));
  }
  last_progress_.assign(nodes.size(), 0);
  last_resend_.assign(nodes.size(), 0);
  for (int i = 0; i < num_nodes(); ++i) {
    if (node(i).iteration() < target_) Broadcast(i);
  }
}

int64_t FaultyRoundSimulator::iteration() const {
  int64_t slowest = node(0).iteration();
  for (int i = 1; i < num_nodes(); ++i) slowest = std::min(slowest, node(i).iteration());
  return slowest;
}

FaultyRoundCounters FaultyRoundSimulator::counters() const {
  FaultyRoundCounters c = counters_;
  for (const auto& inj : injectors_) c.faults += inj.counters();
  return c;
}

void FaultyRoundSimulator::Send(Message m) {
  const auto decision =
      injectors_[m.from].Decide(m.from, m.to, static_cast<double>(now_) / 1000.0);
  if (m.resend) {
    ++counters_.resends_sent;
  } else {
    ++counters_.payloads_sent;
    bytes_sent_ += 8 * static_cast<int64_t>(m.payload.size());
  }
  if (decision.drop) return;
  const int64_t due = now_ + 1 + static_cast<int64_t>(std::llround(decision.delay));
  const std::pair<int, int> edge{m.from, m.to};
  auto held = held_.find(edge);
  for (int copy = 0; copy < decision.copies; ++copy) {
    if (decision.hold && copy == 0) {
      if (held != held_.end()) {
        in_flight_.emplace(due, std::move(held->second));
        held_.erase(held);
      }
      held_.emplace(edge, m);  // released by the next message on the edge, or by Tick()
      continue;
    }
    in_flight_.emplace(due, m);
  }
  if (!decision.hold) {
    held = held_.find(edge);
    if (held != held_.end()) {
      in_flight_.emplace(due, std::move(held->second));  // overtaken: arrives after m
      held_.erase(held);
    }
  }
}

void FaultyRoundSimulator::Broadcast(int i) {
  for (int j : nodes_[i].neighbors) {
    Send({i, j, false, syncs_[i]->key(), syncs_[i]->Outgoing()});
  }
}

void FaultyRoundSimulator::Tick() {
  ++now_;
  // Held messages whose hold ran out (no later message overtook them).
  if (!held_.empty() && now_ % kMaxHoldMs == 0) {
    for (auto& [edge, m] : held_) in_flight_.emplace(now_, std::move(m));
    held_.clear();
  }
  while (!in_flight_.empty() && in_flight_.begin()->first <= now_) {
    auto entry = in_flight_.extract(in_flight_.begin());
    Message& m = entry.mapped();
    ++counters_.delivered;
    RoundSynchronizer& to = *syncs_[m.to];
    if (m.resend) {
      if (const Vec* p = to.PayloadFor(m.key)) {
        ++counters_.resends_answered;
        Send({m.to, m.from, false, m.key, *p});
      }
      continue;
    }
    const auto verdict = to.OnPayload(m.from, m.key, std::move(m.payload));
    if (verdict == RoundSynchronizer::Verdict::kDuplicate) ++counters_.duplicates_dropped;
    if (verdict == RoundSynchronizer::Verdict::kTooFarAhead) {
      throw std::logic_error("node " + std::to_string(m.from) + " ran too far ahead of node " +
                             std::to_string(m.to));
    }
  }
  for (int i = 0; i < num_nodes(); ++i) {
    RoundSynchronizer& s = *syncs_[i];
    if (s.algorithm().iteration() >= target_) continue;
    while (s.algorithm().iteration() < target_ && s.ReadyToAdvance()) {
      if (!s.Advance()) throw std::logic_error("a payload of the wrong size in the simulator");
      last_progress_[i] = now_;
      if (s.algorithm().iteration() < target_) Broadcast(i);
    }
    if (s.algorithm().iteration() < target_ && now_ - last_progress_[i] >= resend_ms_ &&
        now_ - last_resend_[i] >= resend_ms_) {
      for (int j : s.Waiting()) Send({i, j, true, s.key(), Vec()});
      last_resend_[i] = now_;
    }
  }
}

void FaultyRoundSimulator::Step(int64_t stall_ms) {
  const int64_t start = iteration();
  if (start >= target_) return;
  int64_t last_change = now_;
  int64_t progress_marker = -1;
  while (iteration() == start) {
    Tick();
    int64_t total = 0;
    for (int i = 0; i < num_nodes(); ++i) total += node(i).counters().vectors_sent;
    if (total != progress_marker) {
      progress_marker = total;
      last_change = now_;
    } else if (now_ - last_change > stall_ms) {
      throw std::runtime_error("simulated network made no progress for " +
                               std::to_string(stall_ms) + " ms at iteration " +
                               std::to_string(start));
    }
  }
}

void FaultyRoundSimulator::RunUntilIteration(int64_t iterations) {
  while (iteration() < std::min(iterations, target_)) Step();
}

ModelSpread FaultyRoundSimulator::Spread() const {
  std::vector<const Vec*> models;
  for (const auto& s : syncs_) models.push_back(&s->algorithm().Model());
  return SpreadOf(models);
}

}  // namespace starling::node
