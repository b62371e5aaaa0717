// Aligns the (t, y_t) samples of several observed nodes by step for topology inference: a step
// is used only once every observed node's value for it has arrived, and consecutive complete
// steps form the sample pairs of the moments (topology::MomentAccumulator). Each node's samples
// must arrive in step order (PUB/SUB keeps a publisher's order); a step some node skipped (a
// batch lost by a slow subscriber, or published before the probe connected) is dropped as soon
// as that node has moved past it, which breaks the chain of pairs there and nowhere else.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "topology/inference.h"

namespace starling::node {

class StepAligner {
 public:
  // Steps below burn_in are ignored. `moments` (not owned) receives the complete rows, in step
  // order; its dimension must be `observed`.
  StepAligner(int observed, int64_t burn_in, topology::MomentAccumulator* moments);

  // Node `index` (0..observed-1) reported values[m] for step first_step + m. Values at steps not
  // after the node's last reported step are ignored (duplicates).
  void Add(int index, int64_t first_step, const std::vector<double>& values);

  int64_t complete_rows() const { return complete_rows_; }
  int64_t dropped_rows() const { return dropped_rows_; }
  int64_t pairs() const { return moments_->pairs(); }
  // Rows still waiting for some node.
  size_t pending_rows() const { return pending_.size(); }

 private:
  struct Row {
    std::vector<double> values;
    int count = 0;
  };
  void Settle();

  int observed_;
  int64_t burn_in_;
  topology::MomentAccumulator* moments_;
  std::vector<int64_t> last_step_;  // per node; -1 before its first sample
  std::map<int64_t, Row> pending_;
  int64_t last_emitted_ = -2;
  int64_t complete_rows_ = 0, dropped_rows_ = 0;
  Eigen::VectorXd row_;
};

}  // namespace starling::node
