// The pairwise (gossip) algorithm as a pure state machine (docs/explanations/architecture.md).
//
// The node does local steps; when it wants an exchange, the driver picks a neighbour and asks the
// algorithm for a snapshot to offer; the neighbour answers with its own snapshot; each side
// merges. Everything about partners, BUSY replies, crossed requests, timeouts and back-off lives
// in the driver, not here. No clock, no socket, no thread; randomness only from NodeSetup::seed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/algorithm_state.h"
#include "algorithms/node_setup.h"
#include "algorithms/params.h"
#include "algorithms/schedule/step_schedule.h"
#include "algorithms/types.h"

namespace starling::algorithms {

// Every pairwise algorithm keeps the snapshots of at least this many abandoned offers (besides
// the outstanding one), so that late replies to them can still be merged.
inline constexpr size_t kKeptOfferSnapshots = 8;

// What ADFS's constants need of one node's shard (adfs.h, AdfsShardSummary): the sum of its
// samples' smoothness constants L_k, and the sum and the smallest of sqrt(1 + L_k / l2) over its
// samples with a non-zero feature row.
struct ShardSummary {
  double smoothness_sum = 0.0;
  double weight_sum = 0.0;
  double weight_min = 0.0;
};

struct PairwiseOptions {
  std::string algorithm = "swarmsgd";
  double step = 0.0;           // learning rate eta; 0 = 0.5 / smoothness
  double smoothness = 0.0;     // L = max_i L_i (for the default step)
  StepSchedule step_schedule;  // the step of local step t is step * Multiplier(t)
  int batch_size = 8;          // mini-batch size of a local step
  int local_steps = 1;         // H: local steps between exchanges the node initiates
  int64_t iterations = 0;      // --iterations, each node's budget of local steps; 0 = unknown
  // "none"; "lattice:BITS[:SCALE]": exchanges as dithered lattice codes of BITS bits with
  // lattice step SCALE (default 1e-4); "topk:K[:GAMMA]": the K largest
  // entries of the difference from per-edge public copies, error feedback through the copies,
  // consensus step GAMMA (sparse_swarm_sgd.h).
  std::string compression = "none";
  // The method's own parameters by command-line name (pairwise_method.h; SwarmSGD has none).
  ParamValues params;
  // Every node's neighbours (the whole graph), for methods whose defaults are graph-wide
  // constants (A2CiD2); empty where unknown (an algorithm built by hand).
  std::vector<std::vector<int>> graph;
  // Every node's shard summary, for methods whose constants need the whole data (ADFS); filled
  // by the run set-up only for them, empty otherwise.
  std::vector<ShardSummary> shards;
};

struct PairwiseCounters {
  int64_t local_steps = 0;
  int64_t exchanges_initiated = 0;  // completed as initiator
  int64_t exchanges_served = 0;     // completed as responder
  int64_t exchanges_aborted = 0;
  double gradient_passes = 0.0;  // in full local data passes
  int64_t bits_sent = 0;         // payload bits this node sent
  int64_t decode_failures = 0;   // quantized exchanges that fell back (compression only)
};

class PairwiseAlgorithm {
 public:
  virtual ~PairwiseAlgorithm() = default;

  virtual std::string name() const = 0;
  // One local step (one mini-batch gradient step).
  virtual void LocalStep() = 0;
  // False while the next local step is not there yet: a model trained outside Starling (the C
  // ABI, capi/) has its steps computed by the caller, and the node serves its neighbours
  // meanwhile instead of stepping.
  virtual bool StepReady() const { return true; }
  // True when the node has done its local steps since its last exchange and wants one. Stays true
  // while an offer is outstanding; the driver does not start a second one.
  virtual bool WantsExchange() const = 0;
  // The neighbour the node's next offer should go to (a node id in NodeSetup::neighbors), or -1
  // for any: the driver picks it if it is available, else one at random as usual. DADAO asks for
  // the neighbour of a gossip that timed out, to fetch the running sum that settles it.
  virtual int PreferredPeer() const { return -1; }

  // Bounded staleness: true once the node has done 2H local steps since its model was last
  // merged with another (as initiator or responder). The driver then stops stepping and waits
  // for an exchange to complete (serving requests meanwhile), so that slow round trips, BUSY
  // replies and back-off cannot let the local models drift apart for many more steps than the
  // H the algorithm is configured with, while up to H steps still overlap each round trip.
  virtual bool ShouldWait() const = 0;
  // Pacing of exchanges against local steps (SwarmSGD's --merge-pace R; 0 = none): the daemon
  // starts local step k+1 only once the node has completed R x k merges (started or served),
  // serving and offering meanwhile, with a bounded wait (node/drivers/merge_pace.h). Not the
  // algorithm's business otherwise: its steps and merges are the same with or without it, and
  // the simulator, whose nodes merge about 2 times per step by construction, ignores it.
  virtual double merge_pace() const { return 0.0; }
  // The node has done its budget of local steps and takes no more: from now on it wants an
  // exchange whenever none is outstanding (the daemon's end phase, node/daemon/pairwise_node.h:
  // pure averaging merges, which keep the sum of models). An algorithm that does not override
  // it only serves.
  virtual void EndLocalSteps() {}

  // Messages. BeginExchange and Respond hand out their message shared: the vector never changes
  // while anyone holds the pointer (the algorithm writes only vectors nobody else holds, see
  // snapshot_pool.h), so the daemon can send it without a copy and release it when the
  // transport has sent it. CompleteExchange and Respond read the partner's message
  // only during the call and keep no reference to it: it may be a view into a received frame.

  // Initiator: takes the snapshot S_i = X_i for exchange `seq` with neighbour `peer` (a node id
  // in NodeSetup::neighbors) and returns it as the payload to offer. The node keeps computing
  // local steps until the exchange completes or is abandoned. Algorithms that keep state per
  // edge (top-k with public copies) need the peer; the others ignore it.
  virtual std::shared_ptr<const Vec> BeginExchange(int peer, uint64_t seq) = 0;
  // Initiator: merges the responder's snapshot for exchange `seq`:
  // X_i <- X_i + (S_j - S_i)/2, i.e. (S_i + S_j)/2 plus the local progress made since the
  // snapshot. Works for the outstanding offer and for a recently abandoned one (a late reply),
  // since the merge is a plain addition: the sum of models is conserved in any interleaving.
  // Returns false (and merges nothing) if the snapshot of `seq` is no longer kept.
  virtual bool CompleteExchange(uint64_t seq, const Eigen::Ref<const Vec>& their_snapshot) = 0;
  // Initiator: the outstanding offer was refused (BUSY: the snapshot is dropped) or timed out
  // (`may_still_reply`: the snapshot is kept, among the last few, for a late reply).
  virtual void AbortExchange(bool may_still_reply) = 0;
  // Initiator: the outstanding offer met a request of the same neighbour's (crossed offers),
  // and the exchange driver, of the higher id, gave it up to serve that request (Respond
  // follows). The partner answers it BUSY as a rule, which then matches no offer, or serves it
  // if its own offer had meanwhile timed out: the snapshot is kept as after a time-out. Only
  // algorithms that must tell a refusal from a loss (DADAO) override it; by default it is a
  // time-out.
  virtual void AbortCrossedExchange() { AbortExchange(/*may_still_reply=*/true); }
  virtual bool exchange_outstanding() const = 0;

  // Responder to `peer`: takes its own snapshot S_j = X_j, merges X_j <- (S_i + S_j)/2, and
  // returns S_j to send back. Both sides thus move by opposite amounts: sum_i X_i is conserved
  // exactly (up to floating-point rounding). May be called while an offer of the node's own is
  // outstanding: that offer's merge, when its reply comes, is a separate addition.
  virtual std::shared_ptr<const Vec> Respond(int peer,
                                             const Eigen::Ref<const Vec>& their_snapshot) = 0;

  // The merges of a vector that came from the network (the error policy,
  // docs/explanations/architecture.md). The
  // daemon's exchange driver calls these; the simulators, whose vectors never leave the process,
  // call the plain ones above. The same merge, except that the check for NaN/Inf is part of it:
  // a their_snapshot with a non-finite entry is refused as a whole and changes nothing (model,
  // kept offers, counters), and *first_bad is then the index of its first non-finite entry. The
  // transport does not scan these vectors (net/payload_view.h, ReadDenseUnchecked): this is the
  // only check they get, so an override must check every entry it reads.
  // The defaults scan, then merge (pairwise_algorithm.cc). Checked in the merge's own pass by
  // SwarmSGD, SlowMo-SwarmSGD, A2CiD2, edge ADMM and the C ABI's SwarmSGD (not diffusion: 1 value).
  enum class MergeResult { kMerged, kNoSnapshot, kRefused };
  virtual MergeResult CompleteExchangeChecked(uint64_t seq,
                                              const Eigen::Ref<const Vec>& their_snapshot,
                                              size_t* first_bad);
  // Null when refused.
  virtual std::shared_ptr<const Vec> RespondChecked(int peer,
                                                    const Eigen::Ref<const Vec>& their_snapshot,
                                                    size_t* first_bad);

  // The live model: what exchanges send and merge.
  virtual const Vec& Model() const = 0;
  // The model the node reports (telemetry, dense curve, final model file, the simulator's
  // metrics): the live model unless the method keeps an estimate of its own (SwarmSGD's
  // --tail-average, swarm_sgd_base.h).
  virtual const Vec& ReportedModel() const { return Model(); }
  virtual PairwiseCounters counters() const = 0;
  // Local computations so far, each costing what one local step costs: the local steps, plus
  // the computations a message handler makes that are not local steps (async-admm's responder
  // solve). The daemon charges those a handler makes the node's compute delay and --slow-node
  // factor, as it charges a local step (node/daemon/catch_up_charge.h); DADAO's catch-up events
  // are local steps.
  virtual int64_t computations() const { return counters().local_steps; }

  // Churn: push-sum shares (push_sum_share.h; docs/explanations/membership.md). A method that
  // keeps them merges to the shares' weighted mean and keeps sum_i w_i and sum_i w_i x_i; one
  // that does not returns false here and throws std::logic_error from the calls below. Every
  // share starts at 1, and a merge without SetPartnerShare takes the partner's share as equal to
  // this node's: the plain merge, bit for bit.
  virtual bool KeepsShares() const { return false; }
  virtual double share() const { return 1.0; }
  // The partner's share as at its snapshot, for the next merge only (CompleteExchange or
  // Respond); that merge then leaves this node with MergedShare(share(), w).
  virtual void SetPartnerShare(double /*w*/) { RefuseShares(); }
  // A leaving neighbour's model and share, absorbed (AbsorbLeaverShare).
  virtual void AbsorbShare(const Vec& /*x*/, double /*w*/) { RefuseShares(); }
  // A joining neighbour takes half this node's share (and a copy of its model): returns the half
  // given, which this node no longer holds.
  virtual double GiveHalfShare() {
    RefuseShares();
    return 0.0;
  }
  // A node that joins a running run starts from a donor's model `x` and the share `w` the donor
  // gave (GiveHalfShare); it has made no exchange yet.
  virtual void AdoptShare(const Vec& /*x*/, double /*w*/) { RefuseShares(); }

  // Checkpoints, as for RoundAlgorithm. A restored node keeps its model and counters; offers
  // outstanding when it stopped are gone (their partners' replies will find no snapshot).
  virtual bool SaveState(AlgorithmState* /*state*/) const { return false; }
  virtual void LoadState(const AlgorithmState& /*state*/) {
    throw std::invalid_argument(name() + " cannot resume from a checkpoint");
  }

 private:
  [[noreturn]] void RefuseShares() const {
    throw std::logic_error(name() +
                           " keeps no push-sum shares: it cannot hand on or take a share "
                           "of the average when nodes leave or join");
  }
};

// The methods are listed in pairwise_method.h (PairwiseMethods()); these are shorthands.
// Names accepted by MakePairwiseAlgorithm, for --help.
const char* PairwiseAlgorithmNames();
bool IsPairwiseAlgorithm(const std::string& name);
double ResolvePairwiseStep(const PairwiseOptions& options);
// Doubles in one exchange message of options.algorithm for models of dimension `dim`: dim for
// the SwarmSGD family, a multiple of dim for methods that send more than the model (asy-sonata:
// 3 dim), sent as that many payloads of dim each. Throws std::invalid_argument on an unknown
// algorithm.
int PairwiseMessageSize(const PairwiseOptions& options, int dim);
// Throws std::invalid_argument naming the option on an unknown algorithm or a bad parameter.
std::unique_ptr<PairwiseAlgorithm> MakePairwiseAlgorithm(const PairwiseOptions& options,
                                                         const NodeSetup& setup);

}  // namespace starling::algorithms
