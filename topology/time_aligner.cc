#include "topology/time_aligner.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace starling::topology {

TimeAligner::TimeAligner(int observed, double period, double start, MomentAccumulator* moments,
                         int64_t reorder_window)
    : observed_(observed),
      period_(period),
      start_(start),
      moments_(moments),
      window_(reorder_window),
      nodes_(observed > 0 ? observed : 0),
      row_(observed > 0 ? observed : 0) {
  if (moments == nullptr || observed < 1 || moments->dim() != observed) {
    throw std::invalid_argument("time aligner: moments of the wrong dimension");
  }
  if (!(period > 0) || !std::isfinite(period) || !std::isfinite(start)) {
    throw std::invalid_argument("time aligner: the sampling period must be positive and finite");
  }
  if (reorder_window < 1) throw std::invalid_argument("time aligner: reorder window must be >= 1");
}

void TimeAligner::SetClockOffset(int index, double offset) {
  if (index < 0 || index >= observed_ || !std::isfinite(offset)) {
    throw std::invalid_argument("time aligner: bad clock offset for index " +
                                std::to_string(index));
  }
  nodes_[index].offset = offset;
}

void TimeAligner::Add(int index, int64_t seq, double time, double value) {
  if (index < 0 || index >= observed_) {
    throw std::invalid_argument("time aligner: bad index " + std::to_string(index));
  }
  if (seq < 0 || !std::isfinite(time) || !std::isfinite(value)) {
    ++invalid_;
    return;
  }
  NodeTrack& node = nodes_[index];
  node.started = true;
  if ((node.cursor_set && seq < node.cursor) || node.pending.count(seq)) {
    ++late_;
    return;
  }
  node.pending.emplace(seq, std::make_pair(time - node.offset, value));
  if (seq > node.max_seq) node.max_seq = seq;
  Settle(&node, false);
  Advance();
}

void TimeAligner::Flush() {
  for (NodeTrack& node : nodes_) Settle(&node, true);
  Advance();
}

void TimeAligner::SetPairLimit(int64_t limit) {
  pair_limit_ = limit;
  Advance();
}

void TimeAligner::Settle(NodeTrack* node, bool final) {
  if (!node->cursor_set) {
    // At most 64 arrivals: a large window must not hold the whole start back.
    const int64_t wait = std::min<int64_t>(window_, 64);
    if (node->pending.empty() || (!final && static_cast<int64_t>(node->pending.size()) < wait)) {
      return;
    }
    node->cursor = node->pending.begin()->first;
    node->cursor_set = true;
  }
  while (!node->pending.empty()) {
    auto first = node->pending.begin();
    if (first->first != node->cursor) {
      // A gap at cursor: wait for it within the reorder window, then declare it lost.
      if (!final && node->max_seq - node->cursor < window_) return;
      lost_ += first->first - node->cursor;
      node->cursor = first->first;
      node->gap_pending = true;
    }
    const auto [time, value] = first->second;
    node->pending.erase(first);
    ++node->cursor;
    if (!node->points.empty() && !(time > node->points.back().time)) {
      // Going back (or standing still) in time: refused, and the node's path is unknown here.
      ++invalid_;
      node->gap_pending = true;
      continue;
    }
    node->points.push_back({time, value, node->gap_pending});
    node->gap_pending = false;
  }
}

TimeAligner::State TimeAligner::ValueAt(NodeTrack* node, double g, double* value) const {
  std::deque<Point>& p = node->points;
  if (p.empty()) return node->started ? State::kWaiting : State::kBeforeStart;
  if (g < p.front().time) return State::kBeforeStart;
  // Drop points that no later grid time needs: the grid only moves forward.
  while (p.size() >= 2 && p[1].time <= g) p.pop_front();
  if (p.size() < 2) return State::kWaiting;  // the value's end is not known yet
  if (p[1].gap_before) return State::kMissing;
  *value = p.front().value;
  return State::kKnown;
}

void TimeAligner::Advance() {
  for (;;) {
    if (pair_limit_ >= 0 && moments_->pairs() >= pair_limit_) return;
    const double g = next_grid_time();
    bool waiting = false, missing = false;
    double skip_to = -INFINITY;  // a node not started at g: skip to its first sample
    for (int k = 0; k < observed_; ++k) {
      double v = 0.0;
      switch (ValueAt(&nodes_[k], g, &v)) {
        case State::kKnown:
          row_[k] = v;
          break;
        case State::kMissing:
          missing = true;
          break;
        case State::kWaiting:
          waiting = true;
          break;
        case State::kBeforeStart:
          if (nodes_[k].points.empty()) {
            waiting = true;
          } else {
            skip_to = std::max(skip_to, nodes_[k].points.front().time);
          }
          break;
      }
    }
    if (skip_to > g) {
      next_m_ = static_cast<int64_t>(std::ceil((skip_to - start_) / period_));
      if (next_grid_time() < skip_to) ++next_m_;
      moments_->Break();
      last_row_complete_ = false;
      continue;
    }
    if (waiting) return;
    ++next_m_;
    if (missing) {
      ++dropped_rows_;
      moments_->Break();
      last_row_complete_ = false;
      continue;
    }
    moments_->Add(row_);
    ++rows_;
    last_row_complete_ = true;
  }
}

}  // namespace starling::topology
