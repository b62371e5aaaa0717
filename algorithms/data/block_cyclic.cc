#include "algorithms/data/block_cyclic.h"

#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace starling::algorithms {

namespace {

// A positive integer spelled in full (digits only), or -1.
int64_t PositiveInteger(const std::string& text) {
  if (text.empty() || text.size() > 12) return -1;
  for (char ch : text) {
    if (ch < '0' || ch > '9') return -1;
  }
  const int64_t v = std::strtoll(text.c_str(), nullptr, 10);
  return v >= 1 ? v : -1;
}

}  // namespace

const char* BlockCyclicSyntax() { return "none, or B:S (B blocks of S steps each per cycle)"; }

BlockCyclicSpec BlockCyclicOf(const NodeSetup& setup) {
  if (setup.block_rows.empty()) return {};
  return {static_cast<int>(setup.block_rows.size()), setup.block_steps};
}

BlockCyclicSpec ParseBlockCyclic(const std::string& spec) {
  if (spec == "none") return {};
  const size_t colon = spec.find(':');
  const int64_t blocks = colon == std::string::npos ? -1 : PositiveInteger(spec.substr(0, colon));
  const int64_t steps = colon == std::string::npos ? -1 : PositiveInteger(spec.substr(colon + 1));
  if (blocks < 1 || steps < 1 || blocks > (1 << 16)) {
    throw std::invalid_argument("--block-cyclic '" + spec + "': expected " + BlockCyclicSyntax() +
                                ", B in 1..65536 and S >= 1");
  }
  return {static_cast<int>(blocks), steps};
}

std::string BlockCyclicText(const BlockCyclicSpec& spec) {
  if (!spec.active()) return "none";
  return std::to_string(spec.blocks) + ":" + std::to_string(spec.steps_per_block);
}

int BlockOfStep(const BlockCyclicSpec& spec, int64_t t) {
  return static_cast<int>((t / spec.steps_per_block) % spec.blocks);
}

int64_t CycleOfStep(const BlockCyclicSpec& spec, int64_t t) {
  return t / (spec.steps_per_block * spec.blocks);
}

std::vector<int> BlocksOfLabels(const Vec& labels, bool binary, int num_classes, int blocks) {
  const int k = binary ? 2 : num_classes;
  if (k < blocks) {
    throw std::invalid_argument("--block-cyclic: " + std::to_string(blocks) +
                                " blocks but the labels have " + std::to_string(k) +
                                " classes (each block takes at least one class)");
  }
  std::vector<int> out(labels.size());
  for (Eigen::Index r = 0; r < labels.size(); ++r) {
    const double y = labels[r];
    int c = -1;
    if (binary && (y == -1.0 || y == 1.0)) c = y > 0 ? 1 : 0;
    if (!binary && y >= 0 && y < k && y == std::floor(y)) c = static_cast<int>(y);
    if (c < 0) {
      throw std::runtime_error("--block-cyclic: row " + std::to_string(r) +
                               " has a label that is not a class");
    }
    out[r] = static_cast<int>(static_cast<int64_t>(c) * blocks / k);
  }
  return out;
}

std::vector<std::vector<int>> RowsByBlock(const std::vector<int>& row_blocks, int blocks) {
  std::vector<std::vector<int>> rows(blocks);
  for (size_t k = 0; k < row_blocks.size(); ++k) {
    if (row_blocks[k] < 0 || row_blocks[k] >= blocks)
      throw std::logic_error("RowsByBlock: bad block");
    rows[row_blocks[k]].push_back(static_cast<int>(k));
  }
  return rows;
}

}  // namespace starling::algorithms
