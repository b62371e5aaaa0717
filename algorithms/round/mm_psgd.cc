#include "algorithms/round/mm_psgd.h"

#include <stdexcept>
#include <string>

#include "algorithms/round/round_method.h"

namespace starling::algorithms {

namespace {

const BlockCyclicSpec& CheckedBlocks(const BlockCyclicSpec& blocks, int64_t window) {
  if (!blocks.active()) {
    throw std::invalid_argument("--algorithm mm-psgd needs block-cyclic data (--block-cyclic B:S)");
  }
  if (window > blocks.steps_per_block) {
    throw std::invalid_argument("--mm-window " + std::to_string(window) +
                                ": must be at most S = " + std::to_string(blocks.steps_per_block) +
                                ", the steps per block of --block-cyclic");
  }
  return blocks;
}

}  // namespace

bool InPredictorWindow(const BlockCyclicSpec& spec, int64_t window, int64_t t) {
  return window <= 0 || t % spec.steps_per_block >= spec.steps_per_block - window;
}

MmPsgd::MmPsgd(const NodeSetup& setup, ScheduledStep step, int batch_size, const MmPsgdParams& p)
    : blocks_(CheckedBlocks(BlockCyclicOf(setup), p.window)),
      window_(p.window),
      inner_(setup, step, batch_size),
      predictors_(blocks_.blocks, setup.x0),
      counts_(blocks_.blocks, 0) {}

void MmPsgd::Advance(const std::vector<const Vec*>& inbox) {
  const int64_t t = inner_.iteration();
  inner_.Advance(inbox);
  if (!InPredictorWindow(blocks_, window_, t)) return;
  const int b = BlockOfStep(blocks_, t);
  // The running mean: P <- P + (x - P) / count.
  ++counts_[b];
  predictors_[b] += (inner_.Model() - predictors_[b]) / static_cast<double>(counts_[b]);
}

// The inner D-PSGD's state, then the counts and the predictors.
bool MmPsgd::SaveState(AlgorithmState* s) const {
  if (!inner_.SaveState(s)) return false;
  s->algorithm = name();
  s->ints.insert(s->ints.end(), counts_.begin(), counts_.end());
  s->vectors.insert(s->vectors.end(), predictors_.begin(), predictors_.end());
  return true;
}

void MmPsgd::LoadState(const AlgorithmState& s) {
  const size_t b = predictors_.size();
  CheckStateShape(s, name(), 1 + b, 1, 1 + b, 1);
  for (size_t k = 0; k < b; ++k) {
    if (s.vectors[1 + k].size() != predictors_[k].size()) {
      throw std::invalid_argument("checkpoint: wrong dimension");
    }
  }
  AlgorithmState inner = s;
  inner.algorithm = inner_.name();
  inner.ints.resize(1);
  inner.vectors.resize(1);
  inner_.LoadState(inner);
  counts_.assign(s.ints.begin() + 1, s.ints.end());
  predictors_.assign(s.vectors.begin() + 1, s.vectors.end());
}

namespace {

std::unique_ptr<RoundAlgorithm> MakeMmPsgd(const RoundOptions& options, const NodeSetup& setup) {
  const ScheduledStep step{ResolveStep(options), options.step_schedule};
  return std::make_unique<MmPsgd>(setup, step, options.batch_size,
                                  MmPsgdParamTable().Read(options.params));
}

}  // namespace

const ParamTable<MmPsgdParams>& MmPsgdParamTable() {
  static const auto* const table = new ParamTable<MmPsgdParams>(
      ParamTable<MmPsgdParams>("MM-PSGD on block-cyclic data (arXiv:2002.07454)")
          .Add("mm-window", &MmPsgdParams::window,
               "mm-psgd: block b's predictor averages the models after the last W steps of each "
               "of block b's periods (0 = all S steps; at most S of --block-cyclic B:S)",
               Range::NonNegative()));
  return *table;
}

// D-PSGD's default step, 0.5/L.
const RoundMethod& MmPsgdMethod() {
  static const RoundMethod method = RoundMethod("mm-psgd", MakeMmPsgd)
                                        .DefaultStep(0.5)
                                        .SchedulesStep()
                                        .SamplesBlocks()
                                        .Params(MmPsgdParamTable());
  return method;
}

}  // namespace starling::algorithms
