// DADAO: decoupled asynchronous accelerated decentralized optimization (Nabli & Oyallon, ICML
// 2023, arXiv:2208.00779; rules as in the authors' AdelNabli/DADAO optimizers.py).
//
// Node i holds six vectors P = (X, X~, Y, Y~, Z, Z~) (X = x0, the others 0 at the start, as the
// reference) and two Poisson clocks of its own: gradient events at rate 1 and gossip initiations
// at rate r (--dadao-comm-rate), both in the node's own time tau, in units of its mean time
// between gradient events. The clocks are seeded draws (DadaoClockDraw: a counter-based hash of
// NodeSetup::seed, so a checkpoint only keeps the draw counts); the algorithm reads no clock.
//  - Between events P follows dP/dt = M P, integrated exactly: P <- exp(M dt) P (6x6, applied to
//    the six vectors; DadaoOdeMatrix, ExpDadao).
//  - Gradient event: g = grad f_i(X) - nu X - Y~; X -= gamma g; X~ -= gamma~ g;
//    Y~ += (delta + delta~) g.
//  - Gossip on edge (i, j): d = (Y_i + Z_i) - (Y_j + Z_j); Z_i -= beta d, Z~_i -= beta~ d, and
//    the opposite on j.
//
// On Starling's exchange driver (one request/reply): the initiator integrates to its gossip time
// and offers S_i = Y_i + Z_i; the responder computes d_j = (Y_j + Z_j) - S_i, applies its half
// and adds d_j to its running sum R_{j<-i} of what it has applied on that edge; the reply is that
// running sum (d doubles). The initiator applies the difference between the newest running sum
// and the sum A_{i->j} it has already mirrored: Z_i += beta (R - A), Z~_i += beta~ (R - A),
// A = R. A lost, late or duplicated reply is thus absorbed by the next reply on that edge (the
// responder's sum is cumulative; a reply older than one already absorbed is ignored), and a node
// resumed from a checkpoint has a ledger consistent with its own Z, Z~.
//
// Invariants (derived here, tested): the ODE keeps alpha~ Z_i + alpha Z~_i and eta~ X_i + eta X~_i
// on every node; a gossip changes alpha~ Z + alpha Z~ by -(alpha~ beta + alpha beta~) d_j on the
// responder and by +(same) (R - A) on the initiator, so
//   sum_i (alpha~ Z_i + alpha Z~_i) + (alpha~ beta + alpha beta~) sum_edges (R_{j<-i} - A_{i->j}) =
//   0
// whatever is lost. Fixed point: with X = X~, Y = Y~, Z = Z~, grad f_i(X_i) - nu X_i = Y~_i,
// nu X~ + Y + Z = 0 and Y_i + Z_i equal on all nodes, X is in consensus; the invariant with every
// ledger settled gives sum Z = 0, so sum_i grad f_i(x) = 0: the centralized optimum.
//
// Clocks: there is no common clock, but the gossip must find both ends at (nearly) the same time
// (the simulator's run without it, the responder left at its own last event, diverges on a9a).
// Every message carries its sender's clock: [vector | clock, kind, 0, ..., 0] (kind 0 a gossip
// or a reply, 1 a ping). Three rules make a network of daemons behave like the event order:
//  - Skew bound (--dadao-max-skew, 0.5): a node takes its next event only if it lies within
//    max_skew of the oldest clock it has heard from a neighbour; held, it integrates up to the
//    bound and pings (a clock-only request: the responder changes nothing and replies with its
//    running sum, which also lets the initiator absorb a reply it lost). A neighbour that leaves
//    3 offers in a row unanswered stops holding the node until it is heard again; a node past
//    its budget sends clock -1 and holds nobody.
//  - Catching up: a node that hears a clock ahead of its own (up to its bound) takes its own
//    gradient events up to it in order, then integrates to it (CatchUpTo). Never skipped: a
//    node that integrates its ODE over a gap without its gradient events diverges (the old
//    Lamport-style pull did that).
//  - No lost gossip: a gossip refused with BUSY, or given up by the driver for a crossed request
//    (AbortCrossedExchange), is due again at once (a timed-out one is settled, see "Loss"), and
//    gossips that fell due while the node was pulled forward stay due (up to 2 units behind), so
//    that every node makes r gossips per unit of its time. Below ~0.7 r (a third of the gossips
//    lost, e.g. to BUSY replies of crossed pings) the method diverges.
// The simulator, which has the common time, runs without the bound (AdvanceTo): the rules then
// never act, and its runs are bit for bit those of the event order.
//
// Loss: the ledger makes losses exact in the end; settling makes them nearly harmless on the
// way. Measured (tests/dadao_test, 8 nodes, least squares, per-message loss p on requests and
// replies, 10% duplicated, 10% late): a lost request drops one gossip, a lost reply leaves the
// initiator's half (beta d, beta~ d, with beta~ = 2 chi1 sqrt(L/nu) large: 65 there) for the
// next reply on that edge, deg/r units later on average. 30% of gossips dropped alone, or 15%
// of replies lost alone, converge; 50% dropped, 30% of replies lost, or p = 15% on both
// diverge (3 of 3 runs; 14%: 3 of 4; 8-12%: 10 of 10 converge).
// Settling: a gossip that times out (its request or its reply lost; the node cannot tell) makes
// the node's next offer a ping to the same neighbour (PreferredPeer; the exchange driver honours
// it while the neighbour is available), and the node takes no event until it completes
// (ShouldWait; its clock moves only if a neighbour's clock pulls it, within the skew bound). The
// ping's reply is the running sum: if it changed, the lost reply's half lands now (settled);
// if it did not, the request was lost and the gossip is due again at once (retried). A lost
// settling ping is sent again, kSettleAttempts = 3 times, then the half is left to the next
// reply on the edge, as before.
// Why this is stable where the plain ledger was not (an argument, not a proof): the settling
// ping changes nothing at the responder and its reply is absorbed as any reply, so the ledger
// identity and the fixed point are those above. Against the lossless event order, a lost
// request now only delays a gossip in wall time, not in the node's time (made at the same
// clock), and a lost reply's half lands at most about the skew bound later in the node's time
// instead of a random deg/r units later. The old perturbation remains only when the exchange
// and all settling pings fail: with per-message loss p an exchange fails with probability
// q = 1 - (1 - p)^2, so a gossip stays unsettled with probability about q^4: 1.3e-3 at p = 0.1,
// 0.04 at p = 0.25, against the q ~ 0.2-0.28 at which the plain ledger diverged. Measured: 25%
// and 30% loss on both converge to 1e-12 (the 25% run without settling diverges, tested).
// Without a time-out nothing changes: PreferredPeer stays -1, the driver draws its neighbour
// as before, and fault-free runs (the simulator's, which has no loss) are bit for bit those of
// before. A settle in flight is not checkpointed (a resumed node has no offers).
// Full precision only. --local-steps, --step, --batch do not apply (the gradient is the full
// local one; the method's constants come from L and mu).
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/pairwise/pairwise_algorithm.h"
#include "algorithms/pairwise/snapshot_pool.h"

namespace starling::algorithms {

// --dadao-mu and --dadao-comm-rate; kAuto = from the problem (mu = its l2) or the graph.
struct DadaoParams {
  static constexpr double kAuto = -1.0;
  double mu = kAuto;
  double comm_rate = kAuto;
  double max_skew = 0.5;
};
const ParamTable<DadaoParams>& DadaoParamTable();

using Matrix6 = Eigen::Matrix<double, 6, 6>;

// The constants of A2 from the smoothness L, the strong convexity mu and chi1 of the gossip
// Laplacian Lambda (the rates of the edges' activations: chi1 = 1/lambda_2(Lambda)).
struct DadaoConstants {
  double nu = 0, eta = 0, eta_tilde = 0, alpha = 0, alpha_tilde = 0, theta = 0;
  double gamma = 0, gamma_tilde = 0, delta = 0, delta_tilde = 0, beta = 0, beta_tilde = 0;
};
// Throws std::invalid_argument unless 0 < mu <= L and chi1 > 0.
DadaoConstants DadaoConstantsOf(double smoothness, double mu, double chi1);
// M, with P ordered (X, X~, Y, Y~, Z, Z~).
Matrix6 DadaoOdeMatrix(const DadaoConstants& c);
// exp(a) by scaling and squaring of a degree-18 Taylor polynomial (||a / 2^s||_1 <= 1/2, so the
// truncation is below 1e-22 relative before squaring).
Matrix6 ExpDadao(const Matrix6& a);

// The k-th draw of stream `stream` of a node seeded `seed`: an Exp(1) variate from a
// counter-based hash (SplitMix64), the same on every platform.
double DadaoClockDraw(uint64_t seed, uint64_t stream, uint64_t k);

// The graph-dependent defaults: r = sqrt(2 chi1(L1) chi2(L1)) for L1 the Laplacian of the
// exchange driver's edges at one initiation per node and unit time (edge (i, j) at rate
// 1/deg_i + 1/deg_j; AcidConstantsOf), which makes 2 chi1(Lambda) chi2(Lambda) = 1 for
// Lambda = r L1 (the reference's lamb_mix = sqrt(2 chi1* chi2*)); chi1(Lambda) = chi1(L1)/r.
struct DadaoGraph {
  double chi1_unit = 0, chi2_unit = 0, comm_rate = 0, chi1 = 0;
};
DadaoGraph DadaoGraphOf(const std::vector<std::vector<int>>& adjacency, double comm_rate);

class Dadao : public PairwiseAlgorithm {
 public:
  // max_skew: how far (in its own time units) the node's next event may lie beyond the oldest
  // clock it has heard from a neighbour; beyond it the node waits and pings instead of stepping
  // (0 = no bound: the simulator's common time needs none).
  Dadao(const NodeSetup& setup, const DadaoConstants& constants, double comm_rate, double max_skew);

  // [vector | the sender's clock, kind (0 gossip or reply, 1 ping), 0, ..., 0]: a multiple of
  // the run's dimension (2 dim; 3 for dim = 1).
  static int MessageSize(int dim) { return dim + std::max(dim, 2); }

  std::string name() const override { return "dadao"; }
  // The next gradient event: integrates to its time, then the gradient jump.
  void LocalStep() override;
  // True when the node's next own event is a gossip initiation, when it is held by the skew
  // bound (it then pings), or in the end phase.
  bool WantsExchange() const override {
    return ended_ || settle_edge_ >= 0 || GossipDue() || Gated();
  }
  // The neighbour of a gossip that timed out, while it is being settled ("Loss" above).
  int PreferredPeer() const override {
    return settle_edge_ >= 0 ? setup_.neighbors[static_cast<size_t>(settle_edge_)] : -1;
  }
  // The daemon steps only when the next event is a gradient one within the skew bound and no
  // gossip of this node is in flight: the initiator's half of a gossip must land at (about) the
  // time of the responder's, as in the simulator's atomic exchange.
  bool ShouldWait() const override {
    return !ended_ && (outstanding_ || settle_edge_ >= 0 || GossipDue() || Gated());
  }
  void EndLocalSteps() override {
    ended_ = true;
    settle_edge_ = -1;
  }

  std::shared_ptr<const Vec> BeginExchange(int peer, uint64_t seq) override;
  bool CompleteExchange(uint64_t seq, const Eigen::Ref<const Vec>& their_message) override;
  // A time-out (may_still_reply) settles a gossip ("Loss" above); a BUSY and a crossed offer
  // (AbortCrossedExchange: the driver gave it up to serve that neighbour's request) are refusals:
  // the gossip is due again at once, nothing to settle.
  void AbortExchange(bool may_still_reply) override;
  void AbortCrossedExchange() override;
  bool exchange_outstanding() const override { return outstanding_; }
  std::shared_ptr<const Vec> Respond(int peer, const Eigen::Ref<const Vec>& their_message) override;

  const Vec& Model() const override { return x_; }
  PairwiseCounters counters() const override { return counters_; }
  bool SaveState(AlgorithmState* state) const override;
  void LoadState(const AlgorithmState& state) override;

  // The node's clock: its time (of its last event), and its next own event.
  double now() const { return now_; }
  // (A refused gossip is due again at once: now().)
  double NextEventTime() const {
    return owed_gossips_ > 0 || settle_edge_ >= 0 ? now_ : std::min(next_grad_, next_gossip_);
  }
  // Integrates the ODE to time t (nothing if t <= now()). Only for a caller that knows no own
  // event of the node lies before t (the simulator's event order); else CatchUpTo.
  void AdvanceTo(double t);
  // Takes the node's gradient events up to t in order, then integrates to t (nothing if t <=
  // now() or the node has ended). Its gossip initiations due meanwhile collapse into one, due
  // at once.
  void CatchUpTo(double t);
  // The skew bound: the oldest clock heard from a neighbour plus max_skew (infinite when
  // max_skew is 0). Gated: the node's next event lies beyond it.
  double Bound() const;
  bool Gated() const;
  // A gossip is the node's next event (owed, or on its schedule within the bound).
  bool GossipDue() const;
  void SetMaxSkew(double max_skew) { max_skew_ = max_skew; }
  // Settling timed-out gossips (on by default); off only for tests that show what it prevents.
  void SetSettling(bool on) { settling_ = on; }
  int64_t pings() const { return pings_; }
  // Gossips initiated (not refused) and the gossip rate r.
  int64_t gossips() const { return gossips_; }
  // Gossips of the schedule dropped because the node was pulled more than 2 units past them.
  int64_t gossips_dropped() const { return gossips_dropped_; }
  // Gossips due again at once (refused), and the next one of the schedule.
  int owed() const { return owed_gossips_; }
  // Timed-out gossips settled by a ping to the same neighbour: their reply's half landed then
  // (settled), or their request had been lost (retried); and settles given up.
  int64_t settled() const { return settled_; }
  int64_t retried() const { return retried_; }
  int64_t settles_given_up() const { return settles_given_up_; }
  // The edge being settled (-1: none).
  int settle_edge() const { return settle_edge_; }
  double next_gossip() const { return next_gossip_; }
  double comm_rate() const { return comm_rate_; }

  // For tests: column k of (X, X~, Y, Y~, Z, Z~), the constants, the edge ledgers.
  Vec State(int k) const { return p_.col(k); }
  const DadaoConstants& constants() const { return c_; }
  const Vec& Served(int peer) const { return served_[Edge(peer)]; }
  const Vec& Mirrored(int peer) const { return mirrored_[Edge(peer)]; }

 private:
  struct Offer {
    uint64_t seq;
    int edge;
    bool settle;  // a ping sent to settle a timed-out gossip on that edge
  };
  int Edge(int peer) const;
  // AbortExchange and AbortCrossedExchange (`crossed` implies may_still_reply).
  void Abort(bool may_still_reply, bool crossed);
  void CheckMessage(const Eigen::Ref<const Vec>& message) const;
  void GradientEvent();
  // Notes the sender's clock and catches up to it if it is ahead (by at most kMaxClockJump); a
  // negative time (a sender past its budget) only lifts the skew bound on that edge; a
  // non-finite one is ignored and counted in decode_failures.
  void Hear(const Eigen::Ref<const Vec>& message, int edge);
  // A request's kind; an unknown one is counted in decode_failures and taken as a ping.
  bool IsPing(const Eigen::Ref<const Vec>& message);
  void SyncModel() { x_ = p_.col(0); }
  std::shared_ptr<const Vec> Message(const Vec& v, double kind);

  NodeSetup setup_;
  DadaoConstants c_;
  Matrix6 m_;
  double comm_rate_;
  double max_skew_;
  int dim_;
  Eigen::Matrix<double, Eigen::Dynamic, 6> p_;
  Vec x_, grad_;
  std::vector<Vec> served_, mirrored_;  // per edge: R_{me<-peer}, A_{me->peer}
  std::vector<uint64_t> absorbed_seq_;  // per edge: the newest seq whose reply was absorbed
  std::vector<double> heard_;           // per edge: the newest clock heard (infinite: holds nobody)
  std::vector<int> unanswered_;         // per edge: offers in a row aborted unanswered
  int offered_edge_ = 0;                // the edge of the outstanding offer
  bool offered_gossip_ = false;  // and whether it is a gossip (else a ping, or the end phase)
  int64_t pings_ = 0, gossips_ = 0, gossips_dropped_ = 0;
  int owed_gossips_ = 0;  // refused (BUSY) or crossed, due again at once; not in checkpoints
  // Settling a timed-out gossip: its edge (-1: none), the attempts left, and whether the
  // outstanding offer is the settling ping. Not in checkpoints (a resumed node has no offers).
  bool settling_ = true;
  int settle_edge_ = -1;
  int settle_attempts_left_ = 0;
  bool offered_settle_ = false;
  int64_t settled_ = 0, retried_ = 0, settles_given_up_ = 0;
  double now_ = 0, next_grad_ = 0, next_gossip_ = 0;
  uint64_t grad_draws_ = 0, gossip_draws_ = 0;
  std::deque<Offer> offers_;
  bool outstanding_ = false;
  bool ended_ = false;
  PairwiseCounters counters_;
  SnapshotPool messages_;
};

}  // namespace starling::algorithms
