// Checkpoint files (docs/how-to/checkpoints.md): one node's algorithm state, written
// atomically so that a crash at any moment leaves either the previous checkpoint or the new one,
// never a torn file: the bytes go to PATH.tmp, which is fsync'ed, renamed over PATH, and the
// directory is fsync'ed so that the rename itself survives a power cut.
//
// Layout (little-endian, as the machines we run on): magic "STRLCKP2", the run id and node id the
// state belongs to, then two states, the algorithm's and the driver's, each as its name, its
// integers, reals (binary64, bit for bit), vectors and texts, then a 64-bit FNV-1a checksum of
// everything before it. Reading checks all of it, so a checkpoint of another run, another node
// or a damaged file is refused with a clear message instead of being resumed from.
#pragma once

#include <cstdint>
#include <string>

#include "algorithms/algorithm_state.h"

namespace starling::node {

struct Checkpoint {
  uint64_t run_id = 0;
  int32_t node_id = 0;
  algorithms::AlgorithmState state;
  // What the node's driver must keep across a restart, in the same form. The round-based node:
  // its last payloads sent (ints: iteration, phase, subround of each; vectors: the payloads), so
  // that a neighbour that never received the one before the checkpoint (it was still queued when
  // the node was killed) can still have it again; without it both would wait for ever. Empty for
  // the pairwise node.
  algorithms::AlgorithmState driver;
};

// Throws std::runtime_error naming the file if any step fails (the previous file is then intact).
void WriteCheckpoint(const std::string& path, const Checkpoint& checkpoint);

// Writes the checkpoints of one node to one path, as WriteCheckpoint does, with the descriptors
// it needs taken in advance: the folder (for the rename's fsync) and the next PATH.tmp are opened
// when the writer is built, before the network is up, so that a node whose descriptors were all
// taken by connections can still write its checkpoint. Each write renames the
// reserved PATH.tmp over PATH (that descriptor is then PATH itself, and is closed) and reserves
// a new PATH.tmp: an atomic replace needs a new file each time. If that reservation fails (no
// descriptor left), the next write tries to open PATH.tmp again and fails if it still cannot;
// the previous checkpoint is intact either way.
class CheckpointWriter {
 public:
  // Throws std::runtime_error naming the file or folder if either cannot be opened.
  explicit CheckpointWriter(const std::string& path);
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Throws std::runtime_error naming the file if any step fails.
  void Write(const Checkpoint& checkpoint);
  // A PATH.tmp is reserved for the next write.
  bool reserved() const { return tmp_fd_ >= 0; }

 private:
  // Opens a new PATH.tmp into tmp_fd_; false (errno set) if it cannot.
  bool Reserve();

  std::string path_, tmp_path_, name_, tmp_name_;
  int dir_fd_ = -1, tmp_fd_ = -1;
};

// Throws std::runtime_error naming the file if it cannot be read, is damaged, or belongs to
// another run id or node than `expected_run_id` / `expected_node`.
Checkpoint ReadCheckpoint(const std::string& path, uint64_t expected_run_id, int32_t expected_node);

}  // namespace starling::node
