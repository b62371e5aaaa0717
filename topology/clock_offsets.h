// The clock offsets between the hosts of observed nodes, estimated by a probe from when their
// sample batches arrive (docs/how-to/topology-inference.md). It
// needs nothing from the nodes beyond their time-stamped batches: no exchange of clock readings.
//
// The estimator, and its error bound. Let t be the probe's clock and node k's clock read
// t + o_k (o_k constant over the run: no drift). A batch b of node k carries samples stamped on
// the node's clock; its last one was stamped at probe time s_b (stamp S_b = s_b + o_k), and the
// probe reads the batch at a_b = s_b + d_b, where d_b >= 0 is everything between: the sample's
// wait in the node's batch, the send, the network, the probe's queue. Then
//     S_b - a_b = o_k - d_b,
// so the lead of node k over the probe, L_k = max over its batches of (S_b - a_b), is
//     L_k = o_k - delta_k,  delta_k = min over its batches of d_b >= 0,
// and o_k lies in [L_k, L_k + delta_k]: L_k is a lower bound on the node's offset from the
// probe's clock. Only relative offsets matter for alignment (a common shift of every clock
// moves the grid, not the rows), and
//     (L_k - L_j) - (o_k - o_j) = delta_j - delta_k,  in [-delta_k, delta_j],
// so every relative offset is within max_k delta_k of the truth, and the aligner, which reads
// node k's stamps minus L_k, sees node k's path late by delta_k: the nodes are misaligned
// relative to each other by at most max_k delta_k - min_k delta_k, the spread of the nodes'
// smallest delivery delays. What makes delta_k small: some batch whose last sample was stamped
// just before it was sent, and which crossed the network and the probe's queue without waiting.
// If each batch of node k has d_b <= x with probability q, independently, then after W batches
// P(delta_k > x) <= (1 - q)^W. On loopback the daemons' smallest delays were about 0.1 ms and
// the relative offsets came within 0.15 ms (docs/results/topology-inference.md); across hosts
// delta_k is each host's one-way latency to the probe, whose spread (asymmetric routes, different
// distances) is what the estimate cannot see.
//
// Not covered: clocks that drift (a rate error r between two hosts moves their offset by r T
// over T; the estimate is fixed after the warm-up, and the estimate over all batches, kept up to
// date, shows how far it moved), and a host whose clock steps (the daemons' stamps are the wall
// clock read once at start plus a monotone clock since, so they do not step).
#pragma once

#include <cstdint>
#include <vector>

#include "topology/time_aligner.h"

namespace starling::topology {

class ClockOffsetEstimator {
 public:
  explicit ClockOffsetEstimator(int observed);

  // A batch of node `index` (0..observed-1) whose last sample is stamped `last_stamp` on the
  // node's clock arrived at `arrival` on the probe's clock (the same unit). Non-finite values are
  // ignored.
  void Observe(int index, double last_stamp, double arrival);

  int64_t batches(int index) const { return batches_[index]; }
  // The fewest and the most batches any node has delivered.
  int64_t min_batches() const;
  int64_t max_batches() const;
  // L_k: max over node k's batches of (last stamp - arrival): its offset from the probe's clock
  // less its smallest delivery delay (a lower bound on the offset). NaN before its first batch.
  double Lead(int index) const { return lead_[index]; }
  // L_k - L_reference for every node (NaN for a node without a batch): its offset relative to
  // node `reference`'s clock, within the bound above.
  std::vector<double> Relative(int reference) const;
  int observed() const { return static_cast<int>(lead_.size()); }

 private:
  std::vector<double> lead_;
  std::vector<int64_t> batches_;
};

// Feeds a TimeAligner whose clock offsets are estimated from the stream itself: every sample is
// held until each observed node has delivered `warmup_batches` batches, then the offsets are
// fixed at the estimate (relative to node `reference`, or to the probe's clock if reference is
// -1), given to the aligner, and the held samples replayed in their arrival order; later samples
// go straight to the aligner. No sample is lost to the warm-up (memory: the samples of the
// warm-up). The estimate keeps being updated from later batches (estimator()), for reporting
// only: offsets that changed under the aligner would break its rows. A node that stalls or dies
// during the warm-up does not hold the others back for ever: the warm-up also ends once some
// node has delivered kStalledWarmupFactor x warmup_batches batches (the laggard's offset is then
// estimated from what it sent, or 0 if nothing), so that what is held stays bounded by that many
// batches per node.
//
// With warmup_batches = 0 it passes samples through at once and leaves the aligner's offsets to
// the caller (known, or 0), still estimating (for reporting).
class OffsetEstimatingFeed {
 public:
  static constexpr int64_t kStalledWarmupFactor = 10;

  // `aligner` (not owned) has had no sample. Throws std::invalid_argument for warmup_batches < 0
  // or reference outside -1..observed-1.
  OffsetEstimatingFeed(TimeAligner* aligner, int observed, int64_t warmup_batches, int reference);

  // A batch of node `index`: samples first_seq, first_seq + 1, ... stamped times[m] on the
  // node's clock with values[m] (equal sizes, at least one), read at `arrival` on the probe's
  // clock.
  void AddBatch(int index, int64_t first_seq, const double* times, const double* values,
                size_t count, double arrival);
  // The end of the stream before the warm-up ended: fixes the offsets from what arrived (0 for a
  // node without a batch) and replays. Nothing if already released.
  void Release();

  bool estimating() const { return warmup_ > 0; }
  bool released() const { return released_; }
  int reference() const { return reference_; }
  // The offsets given to the aligner (estimating, once released).
  const std::vector<double>& offsets() const { return offsets_; }
  const ClockOffsetEstimator& estimator() const { return estimator_; }
  int64_t held_samples() const { return static_cast<int64_t>(held_.size()); }
  int64_t samples_held_at_release() const { return held_at_release_; }

 private:
  struct Held {
    int index;
    int64_t seq;
    double time, value;
  };
  TimeAligner* aligner_;
  int64_t warmup_;
  int reference_;
  ClockOffsetEstimator estimator_;
  bool released_;
  int64_t held_at_release_ = 0;
  std::vector<double> offsets_;
  std::vector<Held> held_;
};

}  // namespace starling::topology
