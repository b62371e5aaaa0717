// Block-cyclic data (Ding et al., "Distributed Optimization over Block-Cyclic Data",
// arXiv:2002.07454; the setting as recalled, [RECALLED, UNVERIFIED]): training data arrive in
// cycles of B blocks (times of day, say), and during block b every worker sees data of block b's
// distribution only.
//
// Here [DERIVED]: `--block-cyclic B:S` gives every row (training and test) the block of its class,
// classes 0..K-1 (the problem's labels; -1/+1 are classes 0/1) cut into B contiguous groups,
//   block(class c) = floor(c * B / K),
// so each block has a distribution of its own (its own classes). No seed: the rule reads the
// labels only, so every process computes the same blocks. A node's local step t (its outer
// iteration) lies in
//   cycle c = floor(t / (B S)),   block b = floor(t / S) mod B,
// and draws its mini-batches only from its shard's rows of block b during those S steps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/node_setup.h"
#include "algorithms/types.h"

namespace starling::algorithms {

struct BlockCyclicSpec {
  int blocks = 0;               // B; 0 = not block-cyclic
  int64_t steps_per_block = 0;  // S
  bool active() const { return blocks > 0; }
};

// The spec a node's setup carries (NodeSetup::block_rows, block_steps); inactive without blocks.
BlockCyclicSpec BlockCyclicOf(const NodeSetup& setup);

// "none" or "B:S" with B >= 1 and S >= 1 integers. Throws std::invalid_argument naming
// --block-cyclic and the spec otherwise.
BlockCyclicSpec ParseBlockCyclic(const std::string& spec);
// The canonical text of a spec ("none" or "B:S"), for the run id.
std::string BlockCyclicText(const BlockCyclicSpec& spec);
const char* BlockCyclicSyntax();

// The block and the cycle that step t (>= 0) of `spec` lies in.
int BlockOfStep(const BlockCyclicSpec& spec, int64_t t);
int64_t CycleOfStep(const BlockCyclicSpec& spec, int64_t t);

// The block of every label: `labels` are a problem's labels, classes 0..num_classes-1, or -1/+1
// when `binary` (class 0/1, num_classes 2). Throws std::invalid_argument naming --block-cyclic
// when there are fewer classes than blocks, and std::runtime_error for a label that is no class.
std::vector<int> BlocksOfLabels(const Vec& labels, bool binary, int num_classes, int blocks);

// rows_by_block[b]: the positions k in `row_blocks` (ascending) whose block is b; a partition of
// 0..row_blocks.size()-1 into `blocks` lists, some possibly empty.
std::vector<std::vector<int>> RowsByBlock(const std::vector<int>& row_blocks, int blocks);

}  // namespace starling::algorithms
