// Edge-activated asynchronous ADMM (Wei & Ozdaglar, arXiv:1307.8254) on the
// pairwise exchange driver: min sum_i f_i(x_i) subject to x_i = z_e = x_j on every edge e = (i, j).
//
// Node i holds x_i and, per incident edge e, its copy of z_e and its dual v_{i,e} (all 0 at
// start). x_i is always the minimiser of the local problem for the node's current z, v:
//   x_i = argmin f_i(x) + sum_{e at i} <v_{i,e}, x> + (rho/2) ||x - z_e||^2
//       = argmin f_i(x) + <sum_e v_{i,e}, x> + (rho deg_i / 2) ||x - mean_e z_e||^2,
// solved exactly for least squares (Problem::SolveProximal: one Cholesky of
// s A^T A + (lambda + rho deg) I, kept) and by Newton's method with conjugate gradients on
// Hessian-vector products otherwise (logistic, multinomial; warm-started, to --admm-tol). The
// solve is redone only when z or v changed (LocalStep, BeginExchange and Respond do it).
//
// One activation of edge e = (i, j) is one request/reply. The messages are the points
//   u_q = x_q + v_{q,e}/rho        (d doubles, as a model: the daemon's dimension checks apply),
// so that both endpoints compute the same
//   z_e = (u_i + u_j)/2 = (x_i + x_j)/2 + (v_{i,e} + v_{j,e})/(2 rho)     (A1's z update)
// and each sets v_{q,e} += rho (x_q - z_e). Afterwards v_{i,e} + v_{j,e} = 0 (to rounding)
// whatever it was before: the z update holds both duals, so the dual invariant is restored by
// every completed exchange instead of merely kept.
//  - Initiator (BeginExchange): solves, offers u_i; keeps (x_i, u_i) of the offer.
//  - Responder (Respond): solves with its current z, v, replies u_j, sets z_e and v_{j,e}.
//    The solve is counted in computations(): a straggler's daemon charges it as a local step
//    (--compute-delay-ms, --slow-node), so the node is as slow at either end of an exchange.
//  - Initiator (CompleteExchange): sets z_e and v_{i,e} from the kept (x_i, u_i) and u_j.
// Faults (the driver times out offers, the network loses or delays messages):
//  - a lost request changes nothing (x_i is only recomputed);
//  - a late reply to an abandoned offer is merged from the kept (x_i, u_i): the same z_e and
//    exactly opposite dual steps as the responder's, so the invariant still holds; if another
//    exchange on the same edge completed in between, the two copies of z_e differ until the
//    edge's next exchange (z_e is overwritten by the last exchange each side applies);
//  - a lost reply (or one older than the kept offers): the responder has applied its half, the
//    initiator not: v_{i,e} + v_{j,e} = rho (x_j - z_e) != 0 and the copies of z_e differ. The
//    edge's next completed exchange repairs both (its z holds the two duals). Near the fixed
//    point x_j - z_e -> 0, so losses cost less and less: the method still converges to f*.
//  - a restored checkpoint drops the kept offers (their replies find none): a lost reply.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "algorithms/pairwise/pairwise_method.h"
#include "algorithms/pairwise/snapshot_pool.h"

namespace starling::algorithms {

struct AsyncAdmmParams {
  double rho = 1.0;       // --admm-rho
  int newton_steps = 30;  // --admm-newton-steps: at most this many per solve
  double tol = 1e-10;     // --admm-tol: ||grad of the local problem|| at which a solve stops
};
const ParamTable<AsyncAdmmParams>& AsyncAdmmParamTable();

class AsyncAdmm : public PairwiseAlgorithm {
 public:
  // Throws std::invalid_argument naming the option for a non-convex problem (mlp), whose local
  // solve Newton's method cannot do, or bad parameters. Every other problem is taken as convex.
  AsyncAdmm(const NodeSetup& setup, const AsyncAdmmParams& params, int local_steps);

  std::string name() const override { return "async-admm"; }
  // One tick of the node's clock: the primal update (a solve if z or v changed).
  void LocalStep() override;
  bool WantsExchange() const override { return ended_ || since_exchange_ >= local_steps_; }
  bool ShouldWait() const override { return since_merge_ >= 2 * local_steps_; }
  void EndLocalSteps() override { ended_ = true; }
  std::shared_ptr<const Vec> BeginExchange(int peer, uint64_t seq) override;
  bool CompleteExchange(uint64_t seq, const Eigen::Ref<const Vec>& their_point) override;
  void AbortExchange(bool may_still_reply) override;
  bool exchange_outstanding() const override { return outstanding_; }
  std::shared_ptr<const Vec> Respond(int peer, const Eigen::Ref<const Vec>& their_point) override;
  // The same merges with the NaN/Inf check in the pass that first reads their_point (z_e's sum),
  // into a second buffer committed only when it was finite; a refused point leaves x, z, v, the
  // kept offers, the counters and the solve state as they were. A responder whose x must be
  // solved first (z or v changed since its last solve) checks the point in a scan before the
  // solve, which reads the whole shard and must not run for a refused point.
  MergeResult CompleteExchangeChecked(uint64_t seq, const Eigen::Ref<const Vec>& their_point,
                                      size_t* first_bad) override;
  std::shared_ptr<const Vec> RespondChecked(int peer, const Eigen::Ref<const Vec>& their_point,
                                            size_t* first_bad) override;
  const Vec& Model() const override { return x_; }
  PairwiseCounters counters() const override;
  // The local steps and the solves Respond made (a solve costs what a local step costs: the
  // daemon charges a straggler's responder solves as it charges its steps).
  int64_t computations() const override { return counters_.local_steps + respond_solves_; }
  bool SaveState(AlgorithmState* state) const override;
  void LoadState(const AlgorithmState& state) override;

  // For tests: the node's copy of z_e and its dual v_{i,e} for neighbour `peer`.
  const Vec& edge_z(int peer) const { return z_[EdgeOf(peer)]; }
  const Vec& edge_dual(int peer) const { return v_[EdgeOf(peer)]; }
  int64_t solves() const { return solves_; }
  int64_t respond_solves() const { return respond_solves_; }

 private:
  struct Offer {
    uint64_t seq;
    int edge;
    Vec x;                             // x_i when offered
    std::shared_ptr<const Vec> point;  // u_i, also the message offered
  };
  int EdgeOf(int peer) const;  // index into neighbors; throws for a non-neighbour
  void Solve();
  void NewtonSolve(const Vec& shift, double mu, const Vec& center);
  // z_e = (mine + theirs)/2; v_e += rho (x - z_e).
  void Apply(int edge, const Vec& x, const Vec& mine, const Eigen::Ref<const Vec>& theirs);
  // Apply with z_e's sum checked for NaN/Inf in its pass, into z_next_; changes nothing and
  // sets *first_bad if `theirs` was not finite.
  bool ApplyIfFinite(int edge, const Vec& x, const Vec& mine, const Eigen::Ref<const Vec>& theirs,
                     size_t* first_bad);
  std::shared_ptr<const Vec> PointOf(int edge);

  NodeSetup setup_;
  AsyncAdmmParams params_;
  int local_steps_;
  bool exact_;  // least squares: SolveProximal
  Vec x_;
  std::vector<Vec> z_, v_;    // per incident edge, in neighbors order
  bool dirty_ = true;         // z or v changed since x was solved
  std::deque<Offer> offers_;  // the outstanding one (back) and abandoned ones, oldest first
  bool outstanding_ = false;
  int since_exchange_ = 0, since_merge_ = 0;
  bool ended_ = false;
  PairwiseCounters counters_;
  int64_t solves_ = 0;
  int64_t respond_solves_ = 0;  // of solves_, those Respond made (not checkpointed)
  SnapshotPool points_;
  Vec shift_, center_, grad_, dir_, r_, p_, hp_, trial_;  // scratch
  Vec z_next_;  // the checked merges' second buffer for z_e
};

}  // namespace starling::algorithms
