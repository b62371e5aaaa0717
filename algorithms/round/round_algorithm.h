// The round-based algorithm as a pure state machine (docs/explanations/architecture.md).
//
// An algorithm opens no socket, reads no clock, starts no thread and draws randomness only from
// the seed in its NodeSetup. Progress is a sequence of steps identified by StepKey. At each step
// the node offers one payload (Outgoing()) to every neighbour; once the driver holds that step's
// payload from every neighbour it calls Advance() with them, in ascending neighbour id order. The
// same class therefore runs in the daemon, in the simulator and in unit tests, bit for bit.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "algorithms/algorithm_state.h"
#include "algorithms/node_setup.h"
#include "algorithms/params.h"
#include "algorithms/problems/problem.h"
#include "algorithms/schedule/step_schedule.h"
#include "algorithms/types.h"

namespace starling::algorithms {

class QuantizedGossip;  // round/quantized_gossip.h

// Totally ordered step identifier (iteration, phase, subround), lexicographic.
struct StepKey {
  int64_t iteration = 0;
  int32_t phase = 0;
  int32_t subround = 0;

  friend bool operator<(const StepKey& a, const StepKey& b) {
    return std::tie(a.iteration, a.phase, a.subround) < std::tie(b.iteration, b.phase, b.subround);
  }
  friend bool operator==(const StepKey& a, const StepKey& b) {
    return a.iteration == b.iteration && a.phase == b.phase && a.subround == b.subround;
  }
  friend bool operator!=(const StepKey& a, const StepKey& b) { return !(a == b); }
  friend bool operator<=(const StepKey& a, const StepKey& b) { return !(b < a); }
  std::string ToString() const;
};

// What a round-based algorithm is built from. Run-wide constants (step sizes, L, the spectrum)
// must be equal on every node; drivers compute them once from the run configuration
// (node::RoundOptionsFor), and only those the method's RoundMethod asks for (round_method.h).
struct RoundOptions {
  std::string algorithm = "extra";
  double step = 0.0;        // 0 = the algorithm's default times 1/smoothness
  double smoothness = 0.0;  // L = max_i L_i over the network (used for default steps)
  // The step of iteration t is step * Multiplier(t), for the methods whose RoundMethod says
  // takes_step_schedule (the stochastic ones); the others are refused a non-constant one.
  StepSchedule step_schedule;
  int batch_size = 0;      // 0 = full local gradients; > 0: mini-batches (D-PSGD)
  int64_t iterations = 0;  // the run's outer iterations (OPTRA's default horizon); 0 = unknown
  // The extreme non-zero eigenvalues of Lap = I - W (OPTRA, APM-C).
  double laplacian_lambda2 = 0.0;
  double laplacian_lambda_max = 0.0;
  // c of the lazy tracker weights W_s = c W + (1 - c) I (Network-DANE/SVRG/SARAH, topology::Lazy).
  double tracker_lazy_c = 1.0;
  // sigma, a lower bound on the strong convexity (the L2 weight; Network-DANE's Nesterov solver).
  double strong_convexity = 0.0;
  int max_degree = 0;  // d_max of the graph (the diffusion)
  // The run's mean shard size M / N and whether every f_i is quadratic (least squares): facts
  // about the whole run that every node knows alike, for the defaults that depend on the data
  // (Network-SVRG/SARAH's K_in, Network-DANE's mu), so that every node resolves them the same.
  double mean_shard_samples = 0.0;
  bool quadratic = false;
  // The model's dimension d (the same on every node; 0 if unknown), for the defaults and
  // warnings that compare the shards' rows with the unknowns.
  int dim = 0;
  // The method's own parameters by command-line name, read by the method through its ParamTable
  // (e.g. "optra-nu"); names it does not declare are ignored, missing ones take its defaults.
  ParamValues params;
};

// Counters every algorithm keeps (docs/reference/metrics.md names them as reported).
struct AlgorithmCounters {
  // Communication rounds in the paper convention of this algorithm.
  int64_t comm_rounds = 0;
  // Payload d-vectors sent to each neighbour so far (one exchange of [x; s] counts 2).
  int64_t vectors_sent = 0;
  // Gradient work in units of full local data passes.
  double gradient_passes = 0.0;
};

class RoundAlgorithm {
 public:
  virtual ~RoundAlgorithm() = default;

  virtual std::string name() const = 0;
  // The step the node is at; Outgoing() is its payload for that step.
  virtual StepKey key() const = 0;
  // The payload to send to every neighbour for key(): a concatenation of d-vectors.
  virtual const Vec& Outgoing() const = 0;
  // Bits that Outgoing() takes on the wire: 64 per double unless the algorithm compresses.
  virtual int64_t OutgoingBits() const { return 64 * static_cast<int64_t>(Outgoing().size()); }
  // True if Outgoing() is mostly zeros that the wire should not carry: the daemon then sends it as
  // top-k (index, value) pairs of its nonzero entries, 96 bits each, instead of dense doubles.
  virtual bool SparseOutgoing() const { return false; }
  // S > 0 if Outgoing() is a vqSGD cross-polytope message, [norm, S codes] (CHOCO-SGD with
  // --vq-samples, choco_sgd.h), not a d-vector: the daemon then sends it as a packed
  // cross-polytope payload of 1 + ceil(log2 d) bits a code (node/drivers/vector_wire.h) and
  // hands the receiver the same message back, which decodes it as its sender did.
  virtual int OutgoingVqSamples() const { return 0; }
  // Non-null if Outgoing() is quantized gossip (--gossip-bits R > 0, quantized_gossip.h): values
  // decoded from R-bit codes. The daemon then sends the codes (QuantizedGossip::coded(), packed
  // as range-codes payloads, node/drivers/vector_wire.h) and decodes a neighbour's with the same
  // function before the synchronizer sees them; Outgoing() stays the decoded values. Valid for
  // the algorithm's lifetime.
  virtual const QuantizedGossip* OutgoingGossip() const { return nullptr; }
  // Consumes the neighbours' key() payloads, one per neighbour in NodeSetup::neighbors order, each
  // the size of that neighbour's Outgoing() for the same key, and moves to the next key.
  virtual void Advance(const std::vector<const Vec*>& inbox) = 0;
  // Completed outer iterations.
  virtual int64_t iteration() const = 0;
  // The node's current model (x_i), used for metrics and the final result.
  virtual const Vec& Model() const = 0;
  // The method's per-block predictors on block-cyclic data (MM-PSGD: predictor b is for data of
  // block b), or null for a method whose output is the one model Model().
  virtual const std::vector<Vec>* BlockPredictors() const { return nullptr; }
  virtual AlgorithmCounters counters() const = 0;

  // Checkpoints (node/daemon/checkpoint.h). SaveState returns false if the algorithm cannot be
  // checkpointed; LoadState restores a state saved by the same algorithm built from the same
  // NodeSetup and options, and throws std::invalid_argument on any other.
  virtual bool SaveState(AlgorithmState* /*state*/) const { return false; }
  virtual void LoadState(const AlgorithmState& /*state*/) {
    throw std::invalid_argument(name() + " cannot resume from a checkpoint");
  }
};

// The methods themselves are listed in round_method.h (RoundMethods()); these are shorthands.
// Names accepted by MakeRoundAlgorithm, for --help: "dgd, dpsgd, ...".
const char* RoundAlgorithmNames();
// True if `name` is a round-based algorithm.
bool IsRoundAlgorithm(const std::string& name);
// The step size `options` resolves to (explicit, or the algorithm's default / smoothness).
double ResolveStep(const RoundOptions& options);
// The values in `options` known to be out of range for its method, each a sentence naming the
// option ("--dane-mu 0 on a non-quadratic problem: ..."); the drivers print them once at start.
// Empty when there is nothing to say (or the method is unknown).
std::vector<std::string> RoundWarnings(const RoundOptions& options);
// True if the algorithm uses the smoothness bound L even with an explicit step.
bool NeedsSmoothness(const std::string& name);

// Throws std::invalid_argument naming the option on an unknown algorithm or a bad parameter.
std::unique_ptr<RoundAlgorithm> MakeRoundAlgorithm(const RoundOptions& options,
                                                   const NodeSetup& setup);

}  // namespace starling::algorithms
