#include "node/sim/churn_pairwise_simulator.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace starling::node {

namespace {

std::vector<std::vector<int>> Neighbours(const std::vector<algorithms::NodeSetup>& nodes) {
  std::vector<std::vector<int>> neighbours;
  for (const auto& setup : nodes) neighbours.push_back(setup.neighbors);
  return neighbours;
}

}  // namespace

ChurnPairwiseSimulator::ChurnPairwiseSimulator(const std::vector<algorithms::NodeSetup>& nodes,
                                               const algorithms::PairwiseOptions& options,
                                               uint64_t seed, std::vector<ChurnEvent> events,
                                               uint64_t churn_seed)
    : nodes_(nodes),
      options_(options),
      graph_(Neighbours(nodes)),
      events_(std::move(events)),
      rng_(seed),
      churn_rng_(churn_seed ^ 0x9e3779b97f4a7c15ull) {
  if (nodes.size() < 2) throw std::invalid_argument("--churn-*: needs at least two nodes");
  for (const auto& setup : nodes) {
    algorithms_.push_back(algorithms::MakePairwiseAlgorithm(options, setup));
  }
  if (!algorithms_[0]->KeepsShares()) {
    throw std::invalid_argument(
        "--churn-*: --algorithm " + options.algorithm + " with --compression " +
        options.compression +
        " keeps no push-sum shares, so a leave or join would move the average; churn runs "
        "swarmsgd with --compression none or f32");
  }
}

void ChurnPairwiseSimulator::ApplyDue() {
  const double now = static_cast<double>(total_local_steps_) / num_nodes();
  while (next_event_ < events_.size() && events_[next_event_].time <= now) {
    Apply(events_[next_event_++]);
  }
}

void ChurnPairwiseSimulator::Apply(const ChurnEvent& event) {
  int v = event.node;
  if (v < 0) {  // drawn now: a free slot to join, a member to leave
    std::vector<int> candidates;
    for (int i = 0; i < num_nodes(); ++i) {
      if (member(i) == (event.kind != ChurnKind::kJoin)) candidates.push_back(i);
    }
    if (candidates.empty() || (event.kind != ChurnKind::kJoin && num_members() <= 2)) {
      ++counters_.skipped;
      return;
    }
    v = candidates[churn_rng_() % candidates.size()];
  }
  if (event.kind == ChurnKind::kJoin) {
    Join(v);
  } else {
    Depart(v, event.kind == ChurnKind::kLeave);
  }
}

void ChurnPairwiseSimulator::Join(int v) {
  const std::vector<int> linked = graph_.Join(v);
  algorithms_[v] = algorithms::MakePairwiseAlgorithm(options_, nodes_[v]);
  int donor = -1;
  for (int u : linked) {
    if (donor < 0 || algorithms_[u]->share() > algorithms_[donor]->share()) donor = u;
  }
  if (donor >= 0) {
    const double given = algorithms_[donor]->GiveHalfShare();
    algorithms_[v]->AdoptShare(algorithms_[donor]->Model(), given);
    counters_.join_bytes +=
        static_cast<int64_t>(sizeof(double)) * algorithms_[donor]->Model().size();
  }
  ++counters_.joins;
}

void ChurnPairwiseSimulator::Depart(int v, bool graceful) {
  const Vec before = WeightedMean(/*reported=*/false);
  algorithms::PairwiseAlgorithm& leaver = *algorithms_[v];
  if (graceful) {
    int heir = -1;
    for (int u : graph_.neighbors(v)) {
      if (heir < 0 || algorithms_[u]->share() < algorithms_[heir]->share()) heir = u;
    }
    if (heir < 0) throw std::logic_error("churn: a member without neighbours leaves");
    algorithms_[heir]->AbsorbShare(leaver.Model(), leaver.share());
  }
  const algorithms::PairwiseCounters c = leaver.counters();
  departed_bits_ += c.bits_sent;
  departed_passes_ += c.gradient_passes;
  algorithms_[v].reset();
  graph_.Leave(v);
  const double change = (WeightedMean(/*reported=*/false) - before).norm() / before.norm();
  if (graceful) {
    counters_.leave_drift = std::max(counters_.leave_drift, change);
    ++counters_.leaves;
  } else {
    counters_.crash_shift += change;
    ++counters_.crashes;
  }
}

int64_t ChurnPairwiseSimulator::Activate() {
  ApplyDue();
  std::vector<int> members;
  for (int i = 0; i < num_nodes(); ++i) {
    if (member(i)) members.push_back(i);
  }
  const int i = members[rng_() % members.size()];
  algorithms::PairwiseAlgorithm& a = *algorithms_[i];
  int64_t steps = 0;
  do {
    a.LocalStep();
    ++steps;
  } while (!a.WantsExchange());
  total_local_steps_ += steps;
  const std::vector<int>& neighbours = graph_.neighbors(i);
  if (neighbours.empty()) return steps;
  const int j = neighbours[rng_() % neighbours.size()];
  algorithms::PairwiseAlgorithm& b = *algorithms_[j];
  const double share_i = a.share(), share_j = b.share();
  const uint64_t seq = next_seq_++;
  const std::shared_ptr<const Vec> offer = a.BeginExchange(j, seq);
  b.SetPartnerShare(share_i);
  const std::shared_ptr<const Vec> reply = b.Respond(i, *offer);
  a.SetPartnerShare(share_j);
  a.CompleteExchange(seq, *reply);
  ++exchanges_;
  return steps;
}

void ChurnPairwiseSimulator::RunUntilLocalSteps(int64_t local_steps_per_node) {
  const int64_t target = local_steps_per_node * num_nodes();
  while (total_local_steps_ < target) Activate();
}

int64_t ChurnPairwiseSimulator::bytes_sent() const {
  int64_t bits = departed_bits_;
  for (const auto& a : algorithms_) {
    if (a) bits += a->counters().bits_sent;
  }
  return bits / 8 + counters_.join_bytes;
}

double ChurnPairwiseSimulator::gradient_passes() const {
  double passes = departed_passes_;
  for (const auto& a : algorithms_) {
    if (a) passes += a->counters().gradient_passes;
  }
  return passes / num_nodes();
}

Vec ChurnPairwiseSimulator::WeightedMean(bool reported) const {
  Vec sum;
  double total = 0.0;
  for (const auto& a : algorithms_) {
    if (!a) continue;
    if (sum.size() == 0) sum = Vec::Zero(a->Model().size());
    sum.noalias() += a->share() * (reported ? a->ReportedModel() : a->Model());
    total += a->share();
  }
  return sum / total;
}

ModelSpread ChurnPairwiseSimulator::Spread() const {
  ModelSpread spread;
  spread.mean = WeightedMean(/*reported=*/true);
  int members = 0;
  for (const auto& a : algorithms_) {
    if (!a) continue;
    spread.consensus += (a->ReportedModel() - spread.mean).squaredNorm();
    ++members;
  }
  spread.consensus /= members;
  return spread;
}

}  // namespace starling::node
