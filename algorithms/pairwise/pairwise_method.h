// The registry of pairwise methods, as round_method.h is for the round-based ones: a method's .cc
// file defines `const PairwiseMethod& FooMethod()` (its name, how to build it, its ParamTable if
// it has parameters of its own) and pairwise/registry.cc lists it with one line.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "algorithms/node_setup.h"
#include "algorithms/pairwise/pairwise_algorithm.h"
#include "algorithms/params.h"

namespace starling::algorithms {

struct PairwiseMethod {
  // Builds the node's algorithm; MakePairwiseAlgorithm has checked the problem, the batch size
  // and H. Throws std::invalid_argument naming the option on a bad parameter.
  using Factory = std::unique_ptr<PairwiseAlgorithm> (*)(const PairwiseOptions&, const NodeSetup&);

  const char* name;  // as --algorithm takes it
  Factory make;
  const ParamSet* params = nullptr;  // its own parameters; null if none
  // Doubles in one exchange message for a model of dimension d, a multiple of d; null = d.
  int (*message_size)(int dim) = nullptr;
  // False for a method without an objective (the pairwise diffusion of topology inference).
  bool needs_problem = true;
  // Samples by the block-cyclic schedule of NodeSetup::block_rows (--block-cyclic); refused for
  // the other methods, which would ignore it.
  bool takes_block_cyclic = false;
  // Non-null if its constants need a summary of every node's shard (PairwiseOptions::shards;
  // ADFS): the run set-up then builds every node's problem, in daemons too, and summarizes each.
  ShardSummary (*summarize_shard)(const Problem& problem) = nullptr;
};

// Every pairwise method, in the order --help lists them (pairwise/registry.cc).
const std::vector<const PairwiseMethod*>& PairwiseMethods();
// Null if `name` is none of them.
const PairwiseMethod* FindPairwiseMethod(const std::string& name);
// Their parameter tables, each once.
std::vector<const ParamSet*> PairwiseParamSets();

}  // namespace starling::algorithms
