// A²CiD²: SwarmSGD with continuous momentum (Nabli, Belilovsky, Oyallon, NeurIPS 2023,
// arXiv:2306.08289; as in the authors' AdelNabli/ACiD acid_utils.py /
// p2p_averaging.py).
//
// Each node holds its model x and a second vector x~ (started at x0). On the node's own clock,
// in units of one local step (its count of local steps: deterministic in the simulator, and what
// the node itself measures in a daemon), the pair follows the mixing ODE
//   d/dt [x; x~] = eta [[-1, 1], [1, -1]] [x; x~],
// integrated exactly before every event: with s = eta * dt, e = exp(-2 s),
//   x <- a x + b x~,  x~ <- a x~ + b x,  b = (1 - e)/2, a = 1 - b.
// A local step is SwarmSGD's (x -= lr g) and also x~ -= lr g (the method has no other momentum).
// An exchange with snapshots S_i (ours) and S_j (the partner's), in SwarmSGD's non-blocking form:
//   x~ += beta~ (S_j - S_i),  x += (S_j - S_i)/2;
// the partner does the same with the roles swapped, so exchanges conserve sum_i x_i (and
// sum_i x~_i); the ODE conserves x + x~ on each node.
//
// With eta = 0 the ODE is the identity (it is skipped) and x evolves exactly as in SwarmSgd:
// the same operations in the same order, bit for bit.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "algorithms/pairwise/pairwise_method.h"
#include "algorithms/pairwise/snapshot_pool.h"
#include "algorithms/pairwise/swarm_sgd_base.h"

namespace starling::algorithms {

// --acid-eta and --acid-beta-tilde; kFromGraph = the paper's constants from the graph.
struct AcidParams {
  static constexpr double kFromGraph = -1.0;
  double eta = kFromGraph;
  double beta_tilde = kFromGraph;
};
const ParamTable<AcidParams>& AcidParamTable();

// The graph-wide constants of A3 for the gossip process Starling's drivers run: every node
// initiates one exchange per H local steps with a uniformly random neighbour, so edge (i, j) is
// activated at rate (1/deg_i + 1/deg_j)/H per unit time (one local step), and
//   L = sum_e rate_e (e_i - e_j)(e_i - e_j)^T,  chi1 = 1/lambda_2(L),
//   chi2 = max_e (1/2)(e_i - e_j)^T L^+ (e_i - e_j),
//   eta = 1/(2 sqrt(chi1 chi2)),  beta~ = (1/2) sqrt(chi1/chi2).
// On a d-regular graph L = (2/H)(I - W) with W_ij = 1/d: the reference's rate_com (I - W) with
// rate_com = 2/H, the exchanges per local step that a node takes part in.
struct AcidConstants {
  double chi1 = 0.0, chi2 = 0.0, eta = 0.0, beta_tilde = 0.0;
};
// `adjacency[i]`: node i's neighbours. Throws std::invalid_argument for a graph with no edge or
// a disconnected one (lambda_2 = 0), or local_steps < 1. Dense: O(n^3).
AcidConstants AcidConstantsOf(const std::vector<std::vector<int>>& adjacency, int local_steps);

struct AcidOffer {
  uint64_t seq;
  std::shared_ptr<const Vec> snapshot;  // S_i, also the message offered
};

class AcidSwarmSgd : public SwarmSgdBase<AcidOffer> {
 public:
  AcidSwarmSgd(const NodeSetup& setup, ScheduledStep step, int batch_size, int local_steps,
               double eta, double beta_tilde);

  std::string name() const override { return "acid"; }
  void LocalStep() override;
  std::shared_ptr<const Vec> BeginExchange(int peer, uint64_t seq) override;
  bool CompleteExchange(uint64_t seq, const Eigen::Ref<const Vec>& their_snapshot) override;
  std::shared_ptr<const Vec> Respond(int peer,
                                     const Eigen::Ref<const Vec>& their_snapshot) override;
  // The same merges with the NaN/Inf check in the pass that first reads their_snapshot (the
  // difference on x~), into second buffers that are committed only when it was finite: a refused
  // vector leaves x, x~, the ODE's time, the kept offers and the counters as they were.
  MergeResult CompleteExchangeChecked(uint64_t seq, const Eigen::Ref<const Vec>& their_snapshot,
                                      size_t* first_bad) override;
  std::shared_ptr<const Vec> RespondChecked(int peer, const Eigen::Ref<const Vec>& their_snapshot,
                                            size_t* first_bad) override;
  bool SaveState(AlgorithmState* state) const override;
  void LoadState(const AlgorithmState& state) override;

  const Vec& momentum() const { return x_tilde_; }  // x~, for tests
  double eta() const { return eta_; }
  double beta_tilde() const { return beta_tilde_; }

 private:
  // Integrates the ODE from the last event to time `now` (in local steps).
  void MixTo(int64_t now);
  // MixTo's result without changing the state: false if the ODE is the identity up to `now`
  // (x and x~ are then the model's), else x into *x and x~ into *x_tilde (MixTo's operations).
  bool MixedAt(int64_t now, Vec* x, Vec* x_tilde) const;
  void CheckDimension(const Eigen::Ref<const Vec>& their_snapshot) const;

  double eta_, beta_tilde_;
  Vec x_tilde_, scratch_;
  Vec merged_;            // the checked merges' second buffer for x
  int64_t mixed_at_ = 0;  // the local-step count the ODE has been integrated to
  SnapshotPool snapshots_;
};

}  // namespace starling::algorithms
