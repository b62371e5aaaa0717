// ADFS: accelerated decentralized stochastic optimization with local proximal updates and
// randomized pairwise communications (Hendrikx, Bach, Massoulié, NeurIPS 2019,
// arXiv:1901.09865). Update rules and constants as the authors'
// HadrienHx/ADFS_NeurIPS code has them (adfs.py, logistic_regression.py, graph.py); the paper's
// body was not read. Linear models with an L2 term only (--problem logistic, least-squares).
//
// The augmented graph: node i's center carries (l2/2)||x||^2 and one virtual node per sample j,
// attached to i alone, carries the sample's loss f_ij(x) = s phi_ij(a_ij^T x). Every node and
// virtual node holds a pair (v, y) of dual variables: the center's of dimension d, a virtual
// node's one-dimensional (its vector is the scalar times a_ij). The node's model is y / l2.
//
// Time: the unit is one expected event of the whole network (the reference's global step).
// Between events every pair follows B^t, B = [[1 - rho, rho], [delta, 1 - delta]],
// delta = rho (1 - rho) / (1 + rho), t real (B^t = 1 pi + (1 - rho - delta)^t (I - 1 pi),
// pi = (delta, rho) / (rho + delta)): the reference applies B once per global step to every pair
// and catches up lazily with B^k; here the exponent is the elapsed time of the node's own clock
// (a "continuized" reading: the reference's count of global steps, replaced by its expectation).
// An event catches its pairs up to its time, then jumps (the reference's B step that is part of
// its update is the catch-up's; its jump is computed at the pre-B point, here at the caught-up
// one, an O(rho) difference):
//  - Communication on edge e = (i, j) (one request/reply): G = y_i/l2 - y_j/l2;
//    v_i -= a_e G, y_i -= b_e G on i and the opposite on j; a_e = rho / (P_e sigma_A),
//    b_e = rho^2 (1 + R_e / P_e) / (P_e sigma_A (1 + rho)), P_e the edge's rate.
//  - Computation on virtual edge (i, j) (rate P_ij): z = v_ij + a_ij (a^T y_i / (l2 q) - y_ij /
//    L_ij); v_ij' = prox of a_ij (f_ij* - |.|^2 / (2 L_ij)) at z, solved in one dimension on
//    the conjugate (LogisticDualProx, SquaredDualProx). The reference computes it by Moreau's
//    identity from the primal 1-D prox of f_ij (nu = 1 / (1/a_ij - 1/L_ij)), which needs
//    a_ij < L_ij ("Condition for using primal prox not met, see Appendix B.3"): on a9a with
//    lambda = 1e-2 its rho gives a_ij up to ~1.35 L_ij, and the dual form needs no condition. Where
//    both apply they agree (tested);
//    D = v_ij' - v_ij; v_ij += D, y_ij += c_ij D; v_i -= D a, y_i -= c_ij D a.
//    a_ij = mu_ij^2 rho / (P_ij sigma_A), c_ij = rho (1 + 1/P_ij) / (1 + rho),
//    mu_ij^2 = L_ij lambda_2 / (l2 kappa_i), q = |a|^2.
// Both jumps move dual mass between the two ends of an edge: sum over the network of
// (v_i + sum_j v_ij a_ij) and of (y_i + sum_j y_ij a_ij), every pair caught up to a common time,
// stays 0 (the invariant tested). At a fixed point the communication jumps vanish: y_i / l2 is
// the same on every node.
//
// Clocks (the reference gives every MPI rank one seed and so one global clock): each node has
// its own two Poisson clocks, seeded counter-based draws, in network time units: computations at
// rate p_comp / n (sample j with probability w_ij / W_i, w_ij = sqrt(1 + L_ij / l2), the
// reference's importance weights) and exchange initiations at rate (1 - p_comp) deg_i / (2|E|),
// each to a uniformly drawn neighbour (the driver's draw), so every edge has rate
// P_e = (1 - p_comp) / |E|, as the reference's uniform edge. Computations are spread equally over
// the nodes (the reference draws a sample of the whole data set): then P_ij = p_comp w_ij /
// (n W_i), and every constant but rho and sigma_A is the node's own. In daemons the gaps are
// regular (the mean gap, 1/rate) and only the sample is drawn: a daemon takes its events as fast
// as it computes, so exponential gaps make its clock a random walk against its event count (after
// k events +-sqrt(k) gaps), and two daemons at the same pace drift apart; with regular gaps their
// clocks differ only as their paces do. The simulator keeps exponential gaps (SetCommonTime).
// Constants (identical on every node: the graph, and a summary of every node's shard,
// PairwiseOptions::shards): kappa_i = 1 + sum_j L_ij / l2; sigma_A = lambda_2 / (2 kappa_max l2)
// (lambda_2 of the graph's unweighted Laplacian; R_e its effective resistances);
// rho_comm = min_e (1/|E|) sqrt(l2 sigma_A / (2 R_e)); rho_comp = min_i sqrt(kappa_i /
// (2 kappa_max)) / (n W_i); p_comp = max(1/2, 1 / (1 + rho_comp / rho_comm)); rho =
// min(p_comp rho_comp, (1 - p_comp) rho_comm), as the reference's.
//
// Messages (2d doubles): a request is [g_i = y_i / l2 | clock, 0, ..., 0]; the responder applies
// its half with d = g_j - g_i and adds d to its running sum R_{j<-i} for that edge; the reply is
// [R_{j<-i} | clock, 0, ...], and the initiator applies the difference from the sum A_{i->j} it
// has already mirrored (v_i += a_e (R - A), y_i += b_e (R - A), A = R), as DADAO's ledger. A
// lost, late or duplicated reply is thus absorbed by the next reply on that edge (a reply to an
// older seq than one absorbed is ignored). A half that lands later than its partner has not
// been mixed by B in between, so the sums above are kept only without delays; their
// B-invariant combination is kept whatever is lost, duplicated or late (tested):
//   sum_i M_i + sum over directed edges (pi_v a_e + pi_y b_e) (R_{j<-i} - A_{i->j}) = 0,
// M_i = pi_v (v_i + sum_j v_ij a_ij) + pi_y (y_i + sum_j y_ij a_ij), (pi_v, pi_y) = (delta, rho)
// / (rho + delta) B's left eigenvector for 1. At a fixed point v = y, so once every ledger is
// settled sum v = 0 again: the optimum (l2 n x + sum_ij grad f_ij(x) = 0). In the simulator the
// responder is first brought to the initiator's time (AdvanceTo), as DADAO's: all clocks share a
// start and a rate, so that is the global time. In daemons each node keeps to its own clock (the
// time of its own last event; regular gaps, above) and never follows another's. Following it (a
// node that hears a clock ahead moves there and drops the own events it skipped) made 5 daemons
// diverge within 8,000 steps in tests/adfs_daemon_test; without it they end at the optimum to
// 1e-15 (the invariant and the fixed point do not depend on the clocks: at the fixed point
// v = y, which B^t keeps). The clock a message carries is only checked (a non-finite or negative
// one counts in decode_failures). With exponential gaps 16 daemons on a9a diverged; with regular
// gaps they converge (docs/explanations/algorithms/asynchronous.md). A lost request changes
// nothing; a lost reply's half lands with the next reply on that edge (the ledger above). Full
// precision only.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/data/dataset.h"
#include "algorithms/pairwise/pairwise_algorithm.h"
#include "algorithms/pairwise/snapshot_pool.h"

namespace starling::algorithms {

// The summary of a shard of `problem` (logistic or least squares) that the constants need.
// Throws std::invalid_argument for another problem or l2 <= 0.
ShardSummary AdfsShardSummary(const Problem& problem);

// The network-wide constants (above), identical on every node.
struct AdfsNetwork {
  int num_nodes = 0, num_edges = 0;
  double l2 = 0, lambda2 = 0, kappa_max = 0, sigma_a = 0;
  double rho_comm = 0, rho_comp = 0;  // the two bounds on rho (p_comp applied)
  double rho_primal = 0;              // where the reference's primal prox would apply (Adfs)
  double p_comp = 0, rho = 0, delta = 0;
  // Per node: computations and initiations per unit time; per node and neighbour (in adjacency
  // order): the effective resistance R_e and the rate P_e of the edge.
  std::vector<double> comp_rate, comm_rate;
  std::vector<std::vector<double>> resistance, edge_rate;
};
// Throws std::invalid_argument on a disconnected or edgeless graph, a shard count other than
// the node count, or l2 <= 0.
AdfsNetwork AdfsNetworkOf(const std::vector<std::vector<int>>& adjacency,
                          const std::vector<ShardSummary>& shards, double l2);

// The 1-D primal prox of a linear model's sample loss in margin form:
// argmin_u phi(u) + (u - u0)^2 / (2 tau), phi(u) = s log(1 + exp(-label u)) (logistic) or
// s (u - label)^2 / 2 (least squares). Newton with a bracket [u0 - tau s, u0 + tau s] for the
// logistic loss (|phi'| <= s), from `start` clipped to it; closed form for least squares.
double LogisticMarginProx(double u0, double tau, double s, double label, double start);
double SquaredMarginProx(double u0, double tau, double s, double label);
// The virtual node's dual step: argmin_beta phi*(beta) - q beta^2 / (2 L) + q (beta - z)^2 / (2 a)
// (the prox of a (f* - |.|^2 / (2 L)) at z a, in the coefficient of a = a_ij; q = |a|^2,
// L = c s q the sample's smoothness, phi* the conjugate of the margin loss above). Convex for any
// a > 0, since phi* is (q/L)-strongly convex in beta. Logistic: Newton on r = logit(-label beta /
// s) with a bracket, from *start (updated: a warm start); least squares: beta = z - a label / q.
double LogisticDualProx(double z, double a, double q, double s, double label, double* start);
double SquaredDualProx(double z, double a, double q, double label);

class Adfs : public PairwiseAlgorithm {
 public:
  Adfs(const NodeSetup& setup, const AdfsNetwork& network);

  // [vector | clock, 0, ..., 0].
  static int MessageSize(int dim) { return 2 * dim; }

  std::string name() const override { return "adfs"; }
  // The node's next computation event: catches up to its time, then the virtual-edge update.
  void LocalStep() override;
  bool WantsExchange() const override { return !ended_ && CommDue(); }
  bool ShouldWait() const override { return !ended_ && (outstanding_ || CommDue()); }
  // Past its budget the node only serves (its clock stops).
  void EndLocalSteps() override { ended_ = true; }

  std::shared_ptr<const Vec> BeginExchange(int peer, uint64_t seq) override;
  bool CompleteExchange(uint64_t seq, const Eigen::Ref<const Vec>& their_message) override;
  // A time-out may have left the responder's half alone (not loss-proof); a refusal (BUSY) and a
  // crossed offer make the exchange due again at once.
  void AbortExchange(bool may_still_reply) override;
  void AbortCrossedExchange() override;
  bool exchange_outstanding() const override { return outstanding_; }
  std::shared_ptr<const Vec> Respond(int peer, const Eigen::Ref<const Vec>& their_message) override;

  const Vec& Model() const override { return x_; }
  PairwiseCounters counters() const override { return counters_; }
  // A resumed node continues bit for bit as it would have (tested), but for offers outstanding
  // when it stopped and mass moved after its checkpoint (counted twice or lost, as ASY-SONATA's).
  bool SaveState(AlgorithmState* state) const override;
  void LoadState(const AlgorithmState& state) override;

  // The node's clock (time of its center pair) and its next own event.
  double now() const { return now_; }
  double NextEventTime() const;
  // The next own event is an exchange initiation (owed, or on the clock before the next
  // computation).
  bool CommDue() const { return owed_ > 0 || next_comm_ <= next_comp_; }
  // Catches the center pair up to time t (nothing if t <= now()).
  void AdvanceTo(double t);

  // For tests: the center pair, a virtual pair caught up to time t (without changing the
  // state), the sums (v_i + sum_j v_ij a_ij, y_i + sum_j y_ij a_ij) at time t >= now().
  const Vec& v() const { return v_; }
  const Vec& y() const { return y_; }
  void DualSumsAt(double t, Vec* v_sum, Vec* y_sum) const;
  const AdfsNetwork& network() const { return net_; }
  // Per sample: L_ij and the step a_ij.
  double sample_smoothness(int j) const { return smooth_[j]; }
  double sample_step(int j) const { return step_v_[j]; }
  int64_t exchanges_dropped() const { return dropped_comms_; }
  // The ledger (above) and the edge's steps (a_e, b_e), by neighbour id.
  const Vec& Served(int peer) const { return served_[Edge(peer)]; }
  const Vec& Mirrored(int peer) const { return mirrored_[Edge(peer)]; }
  double EdgeStepV(int peer) const { return edge_v_[Edge(peer)]; }
  double EdgeStepY(int peer) const { return edge_y_[Edge(peer)]; }
  // The simulator's event order (and tests'): Poisson clocks (exponential gaps).
  // Before any event.
  void SetCommonTime();

 private:
  struct Offer {
    uint64_t seq;
    int edge;
  };
  int Edge(int peer) const;
  void CheckMessage(const Eigen::Ref<const Vec>& message) const;
  // A received clock: checked (decode_failures); never followed.
  void Hear(const Eigen::Ref<const Vec>& message);
  // v += sign a_e d, y += sign b_e d.
  void Jump(int edge, double sign, const Vec& d);
  // [head | clock, 0, ..., 0].
  std::shared_ptr<const Vec> Message(const Vec& head);
  void ComputeEvent(double t, int j);
  double Draw(uint64_t stream, uint64_t* count) const;  // an Exp(1) variate
  double Uniform(uint64_t stream, uint64_t* count) const;
  int DrawSample();
  int m() const { return static_cast<int>(vv_.size()); }

  NodeSetup setup_;
  AdfsNetwork net_;
  const Dataset* data_ = nullptr;
  bool logistic_ = true;
  double scale_ = 0;
  int dim_;
  double power_base_ = 1, pi_v_ = 0, pi_y_ = 0;  // B^t = 1 pi + power_base^t (I - 1 pi)
  Vec v_, y_, x_, tmp_;
  double now_ = 0;
  // Per sample.
  std::vector<double> vv_, vy_, vlast_, warm_;
  std::vector<double> smooth_, sqnorm_, step_v_, step_y_, cumulative_;
  // Per edge: the steps (a_e, b_e), the running sums R_{me<-peer} (served) and A_{me->peer}
  // (mirrored), the newest seq whose reply was absorbed.
  std::vector<double> edge_v_, edge_y_;
  std::vector<Vec> served_, mirrored_;
  std::vector<uint64_t> absorbed_seq_;
  double comp_rate_ = 0, comm_rate_ = 0;
  double next_comp_ = 0, next_comm_ = 0;
  uint64_t comp_draws_ = 0, comm_draws_ = 0, sample_draws_ = 0;
  int owed_ = 0;
  int64_t dropped_comms_ = 0;
  std::deque<Offer> offers_;
  bool outstanding_ = false;
  bool ended_ = false;
  bool regular_ = true;  // regular clock gaps (daemons), else exponential (SetCommonTime)
  PairwiseCounters counters_;
  SnapshotPool messages_;
};

}  // namespace starling::algorithms
