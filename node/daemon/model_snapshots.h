// starlingd --snapshots FILE: the node keeps its model at fixed step counts (every `spacing`
// steps: local steps for pairwise methods, iterations for round-based ones), and its final model,
// in a snapshots file (node/report/snapshot_file.h), so that the run can be drawn with dense
// curves afterwards (starling-probe evaluate). Every node of a run uses the same spacing (it
// follows from --iterations and --snapshot-every), so that snapshot k of every node is at the
// same step and the average model at step k can be formed.
//
// Cost: one buffered write of 8 d bytes per snapshot, no data pass. With the automatic spacing a
// run has about kSnapshotsPerRun snapshots per node; the file never grows past --snapshot-max-mb
// (with an explicit --snapshot-every that would, a warning, and no more snapshots but the final
// one, for which room is kept).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "algorithms/types.h"
#include "node/report/snapshot_file.h"

namespace starling::node {

// 64: plots of at least 50 points, and an evaluation after the run that stays short (each point
// is a pass over the training and test data; about 0.1 s for Fashion-MNIST's multinomial model).
inline constexpr int64_t kSnapshotsPerRun = 64;

// The spacing of a run of `iterations` steps: `every` if > 0, else about iterations /
// kSnapshotsPerRun, widened until the snapshots of the whole run (and the final one) fit in
// `max_bytes` of records of dimension `dim`.
int64_t SnapshotSpacing(int64_t iterations, int64_t every, uint32_t dim, uint64_t max_bytes);

class ModelSnapshots {
 public:
  // Opens `path` (appending if `resume`): see SnapshotFileWriter. Throws std::runtime_error.
  ModelSnapshots(const std::string& path, bool resume, int64_t spacing, uint64_t max_bytes);

  // The header, once the run's clock starts. A failed write is a warning, and no snapshots.
  void Begin(const SnapshotHeader& header);
  // Writes the model at `step` if a snapshot is due there (step a multiple of the spacing, not
  // written yet), or always when `final`. Returns true if it wrote one. The size bound is a
  // warning once (then only the final snapshot is still written, in the room kept for it); a
  // failed write a warning, and no further snapshots.
  bool Offer(int64_t step, const Vec& model, int64_t comm_rounds, uint64_t bytes_sent,
             uint64_t bytes_received, double elapsed, bool final);
  int64_t spacing() const { return spacing_; }
  int64_t written() const { return written_; }

 private:
  SnapshotFileWriter writer_;
  const int64_t spacing_;
  const uint64_t max_bytes_;
  uint64_t bytes_ = 0;
  int64_t last_step_ = -1;
  int64_t written_ = 0;
  bool full_ = false;    // the size bound: only the final snapshot may still come
  bool failed_ = false;  // a write failed: no more snapshots
  int node_ = 0;
};

}  // namespace starling::node
