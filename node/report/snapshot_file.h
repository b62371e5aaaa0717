// The model snapshots file of one node (starlingd --snapshots FILE): the node's model at fixed
// step counts, so that dense curves of the network can be evaluated after the run
// (starling-probe evaluate). Written by the daemon (node/daemon/model_snapshots.h), read by the
// probe; the format lives here so that both sides share it.
//
// Binary, in the host's byte order (a run folder is read on the machine that wrote it; the magic
// numbers catch another byte order), all fields 8-byte aligned:
//   file header (48 bytes): "STSNAP01", uint32 version (1), int32 node id, uint32 dim,
//     uint32 reserved (0), uint64 run id, int64 spacing (snapshot every `spacing` steps),
//     double unix time at which the node's run clock started.
//   record (56 bytes + 8 dim): uint32 magic 'SNAP', uint32 flags (1 = the node's final model),
//     int64 step, int64 comm_rounds, double unix time, double seconds on the node's run clock,
//     uint64 bytes sent, uint64 bytes received so far, then dim float64 values (the model,
//     exactly as the node held it).
// A resumed node appends to its file: a step may then appear twice, and the later record wins.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "algorithms/types.h"

namespace starling::node {

struct SnapshotHeader {
  int32_t node = 0;
  uint32_t dim = 0;
  uint64_t run_id = 0;
  int64_t spacing = 0;
  double start_unix_time = 0;
};

struct SnapshotRecord {
  bool final = false;
  int64_t step = 0, comm_rounds = 0;
  double unix_time = 0, elapsed = 0;
  uint64_t bytes_sent = 0, bytes_received = 0;
  Vec model;
};

inline constexpr size_t kSnapshotHeaderBytes = 48;
inline constexpr size_t kSnapshotRecordHeaderBytes = 56;
inline size_t SnapshotRecordBytes(uint32_t dim) { return kSnapshotRecordHeaderBytes + 8 * dim; }

// Appends records to a snapshots file. Not thread-safe.
class SnapshotFileWriter {
 public:
  // Opens `path` (truncated, or for appending when `append` and the file is not empty: a resumed
  // node). Throws std::runtime_error naming the path if it cannot.
  SnapshotFileWriter(const std::string& path, bool append);
  ~SnapshotFileWriter();
  SnapshotFileWriter(const SnapshotFileWriter&) = delete;
  SnapshotFileWriter& operator=(const SnapshotFileWriter&) = delete;

  // Writes the file header, unless the file was opened for appending to an existing one.
  // Returns false (errno set) if the write failed.
  bool WriteHeader(const SnapshotHeader& header);
  // Writes one record and flushes it (a reader, or a node killed later, sees whole records).
  // `model` must have the header's dim. Returns false if the write failed.
  bool Write(const SnapshotRecord& record, const Vec& model);
  const std::string& path() const { return path_; }
  // The size of the file this writer appends to (0 for a new file).
  uint64_t existing_bytes() const { return existing_bytes_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  bool appending_ = false;
  uint64_t existing_bytes_ = 0;
};

struct SnapshotFile {
  SnapshotHeader header;
  std::vector<SnapshotRecord> records;  // in file order
  bool truncated = false;               // the last record was cut short (a killed node)
};

// Reads a whole snapshots file. Throws std::runtime_error naming the file and the byte offset for
// anything malformed (a wrong magic number, a dim above `max_dim`, a bad flag); a last record cut
// short is dropped and marked `truncated`.
SnapshotFile ReadSnapshotFile(const std::string& path, uint32_t max_dim);

}  // namespace starling::node
