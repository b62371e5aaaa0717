#include "node/daemon/model_snapshots.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace starling::node {

int64_t SnapshotSpacing(int64_t iterations, int64_t every, uint32_t dim, uint64_t max_bytes) {
  if (every > 0) return every;
  const int64_t budget = std::max<int64_t>(iterations, 1);
  int64_t spacing = std::max<int64_t>(1, (budget + kSnapshotsPerRun - 1) / kSnapshotsPerRun);
  // Records that fit, with the header, the step-0 snapshot and the final one.
  const uint64_t record = SnapshotRecordBytes(dim);
  const int64_t fit = static_cast<int64_t>(
      max_bytes > kSnapshotHeaderBytes ? (max_bytes - kSnapshotHeaderBytes) / record : 0);
  if (fit > 2) spacing = std::max(spacing, (budget + fit - 3) / (fit - 2));
  return spacing;
}

ModelSnapshots::ModelSnapshots(const std::string& path, bool resume, int64_t spacing,
                               uint64_t max_bytes)
    : writer_(path, resume), spacing_(std::max<int64_t>(spacing, 1)), max_bytes_(max_bytes) {}

void ModelSnapshots::Begin(const SnapshotHeader& header) {
  node_ = header.node;
  if (!writer_.WriteHeader(header)) {
    spdlog::warn("node {}: {}: cannot write the snapshots header ({}): no snapshots", node_,
                 writer_.path(), std::strerror(errno));
    failed_ = true;
  }
  // A resumed node's file keeps what its earlier lives wrote: the bound is on the whole file.
  bytes_ = writer_.existing_bytes() > 0 ? writer_.existing_bytes() : kSnapshotHeaderBytes;
}

bool ModelSnapshots::Offer(int64_t step, const Vec& model, int64_t comm_rounds, uint64_t bytes_sent,
                           uint64_t bytes_received, double elapsed, bool final) {
  if (failed_ || (!final && (full_ || step % spacing_ != 0 || step == last_step_))) return false;
  const uint64_t size = SnapshotRecordBytes(static_cast<uint32_t>(model.size()));
  // A regular snapshot leaves room for the final one.
  if (bytes_ + (final ? 1 : 2) * size > max_bytes_) {
    if (!full_) {
      spdlog::warn(
          "node {}: {}: --snapshot-max-mb reached after {} snapshots (step {}): no more "
          "snapshots but the final one",
          node_, writer_.path(), written_, step);
    }
    full_ = true;
    return false;
  }
  SnapshotRecord r;
  r.final = final;
  r.step = step;
  r.comm_rounds = comm_rounds;
  r.unix_time =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  r.elapsed = elapsed;
  r.bytes_sent = bytes_sent;
  r.bytes_received = bytes_received;
  if (!writer_.Write(r, model)) {
    spdlog::warn("node {}: {}: writing a snapshot failed at step {} ({}): no more snapshots", node_,
                 writer_.path(), step, std::strerror(errno));
    failed_ = true;
    return false;
  }
  bytes_ += size;
  last_step_ = step;
  ++written_;
  return true;
}

}  // namespace starling::node
