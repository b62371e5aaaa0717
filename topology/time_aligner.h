// Aligns asynchronous, per-node time-stamped samples onto a common sampling grid for topology
// inference from the pairwise diffusion (docs/how-to/topology-inference.md; the synchronous
// diffusion numbers its samples by a global step and needs node/probe/step_aligner.h instead).
//
// Each observed node k publishes samples (seq, time, value): seq counts the node's samples
// (consecutive integers, 0, 1, 2, ...), time is the node's own clock when its state became
// `value`, and the state holds that value until the next sample. The aligner reads every node's
// piecewise-constant path at the grid times g_m = start + m * period (reference clock) and feeds
// the complete rows (y_1(g_m), ..., y_s(g_m)) to a topology::MomentAccumulator, in grid order.
//
// - Out of order: samples may arrive in any order; they are put back in seq order. A sample whose
//   seq is below what the node has already settled (a duplicate, or later than the reorder
//   window) is ignored and counted as late.
// - Missing: a seq gap is declared lost once the node has delivered `reorder_window` later seqs
//   (or at Flush). The node's value is then unknown between the last sample before the gap and
//   the first after it: the grid rows in that interval are dropped, and no lag-1 pair is formed
//   across a dropped row (MomentAccumulator::Break).
// - Clock offsets: a node's time stamps are read as reference time + offset_k; SetClockOffset
//   gives offset_k (0 by default: nodes on one host, or hosts whose clocks NTP keeps within a
//   small fraction of the period), or topology/clock_offsets.h estimates it from the arrivals.
//   How an offset that is not corrected costs accuracy is measured in
//   docs/results/topology-inference.md.
// - A node's first seq is the smallest among its first min(reorder_window, 64) arrivals (nothing of
// it is
//   settled before): a probe may attach after seq 0.
// - A grid time before a node's first sample is skipped (the row is neither used nor counted
//   as dropped): a probe may attach to a running diffusion.
//
// A node's time stamps must increase with its seq; a sample that goes back in time is refused
// (counted as invalid) and treated as lost. Pure: no clocks, no randomness.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "topology/inference.h"

namespace starling::topology {

class TimeAligner {
 public:
  // `moments` (not owned) must have dimension `observed`. period > 0 and finite; reorder_window
  // >= 1. Throws std::invalid_argument otherwise.
  TimeAligner(int observed, double period, double start, MomentAccumulator* moments,
              int64_t reorder_window = 256);

  // Node `index`'s clock reads reference time + offset. Call before its first Add.
  void SetClockOffset(int index, double offset);
  // One sample of node `index` (0..observed-1). Non-finite times or values, and negative seqs,
  // are refused (counted as invalid).
  void Add(int index, int64_t seq, double time, double value);
  // The end of the stream: every seq gap is final. Rows that need a sample after a node's last
  // one stay unresolved (the last value's duration is unknown).
  void Flush();
  // Emits no row once the moments hold `limit` pairs (rows wait, and come when it is raised):
  // moments at an exact sample count whatever the arrival order. Negative: no limit (default).
  void SetPairLimit(int64_t limit);

  int64_t rows() const { return rows_; }                  // complete rows fed to the moments
  int64_t dropped_rows() const { return dropped_rows_; }  // rows where some node was unknown
  int64_t lost_samples() const { return lost_; }          // seqs declared lost
  int64_t late_samples() const { return late_; }          // duplicates and arrivals too late
  int64_t invalid_samples() const { return invalid_; }
  int64_t pairs() const { return moments_->pairs(); }
  double next_grid_time() const { return start_ + static_cast<double>(next_m_) * period_; }
  double clock_offset(int index) const { return nodes_[index].offset; }

 private:
  struct Point {
    double time;  // reference clock
    double value;
    bool gap_before;  // samples were lost between the previous point and this one
  };
  struct NodeTrack {
    double offset = 0.0;
    bool started = false;     // some sample arrived
    bool cursor_set = false;  // the first seq is fixed: `window` samples arrived, or Flush
    int64_t cursor = 0;       // next seq to settle
    int64_t max_seq = -1;
    bool gap_pending = false;                              // the next settled point follows a loss
    std::map<int64_t, std::pair<double, double>> pending;  // seq -> (time, value), seq >= cursor
    std::deque<Point> points;  // settled, in time order; the front is the last one before the grid
  };
  enum class State { kKnown, kMissing, kWaiting, kBeforeStart };

  void Settle(NodeTrack* node, bool final);
  State ValueAt(NodeTrack* node, double g, double* value) const;
  void Advance();

  int observed_;
  double period_, start_;
  MomentAccumulator* moments_;
  int64_t window_;
  std::vector<NodeTrack> nodes_;
  int64_t next_m_ = 0;
  bool last_row_complete_ = false;
  int64_t pair_limit_ = -1;
  int64_t rows_ = 0, dropped_rows_ = 0, lost_ = 0, late_ = 0, invalid_ = 0;
  Eigen::VectorXd row_;
};

}  // namespace starling::topology
