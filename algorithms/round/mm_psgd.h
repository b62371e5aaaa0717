// MM-PSGD, multi-model parallel SGD on block-cyclic data (Ding et al., arXiv:2002.07454), here
// on D-PSGD's gossip instead of a parameter server.
//
// The paper, [RECALLED, UNVERIFIED]: the workers train one model through every block ("block-mixed
// training", plain parallel SGD), and the method's output is one predictor per block, each the
// average of historical global models produced while training on that block; data of block b is
// then predicted with predictor b. Plain parallel SGD instead ends with the one final model,
// biased towards the last block trained on.
//
// What is implemented [DERIVED]: the iterates are exactly D-PSGD's on the block-cyclic schedule
// (Dgd, algorithms/round/dgd.h), and node i keeps for each block b
//   P_i,b = the mean of x_i^{t+1} over the steps t < T (all cycles so far) with
//           block(t) = b and (t mod S) >= S - W,
// x_i^{t+1} being the model that step t produced, W = --mm-window (0 = W = S: every step of the
// block; 1 = only the model at the block's end). P_i,b = x0 while block b has had no such step.
// Since every node averages over the same steps, the network mean of the P_i,b is the same
// average of the network-average models x_bar^{t+1}: the paper's "averaged historical global
// models" with x_bar in place of the server's model.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/data/block_cyclic.h"
#include "algorithms/round/dgd.h"
#include "algorithms/round/round_algorithm.h"

namespace starling::algorithms {

struct MmPsgdParams {
  int64_t window = 0;  // W, the last W steps of each block enter the predictor (--mm-window)
};
const ParamTable<MmPsgdParams>& MmPsgdParamTable();

// True if step t of `spec` enters its block's predictor with window W (0 = every step).
bool InPredictorWindow(const BlockCyclicSpec& spec, int64_t window, int64_t t);

class MmPsgd : public RoundAlgorithm {
 public:
  // `setup` must be block-cyclic (std::invalid_argument naming --block-cyclic otherwise), and
  // window <= S (std::invalid_argument naming --mm-window).
  MmPsgd(const NodeSetup& setup, ScheduledStep step, int batch_size, const MmPsgdParams& p);

  std::string name() const override { return "mm-psgd"; }
  StepKey key() const override { return inner_.key(); }
  const Vec& Outgoing() const override { return inner_.Outgoing(); }
  void Advance(const std::vector<const Vec*>& inbox) override;
  int64_t iteration() const override { return inner_.iteration(); }
  const Vec& Model() const override { return inner_.Model(); }
  const std::vector<Vec>* BlockPredictors() const override { return &predictors_; }
  AlgorithmCounters counters() const override { return inner_.counters(); }
  bool SaveState(AlgorithmState* state) const override;
  void LoadState(const AlgorithmState& state) override;

 private:
  BlockCyclicSpec blocks_;
  int64_t window_;
  Dgd inner_;
  std::vector<Vec> predictors_;
  std::vector<int64_t> counts_;  // steps averaged into each predictor
};

}  // namespace starling::algorithms
