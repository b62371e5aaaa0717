// Rendezvous through a shared directory: N processes started together (by mpirun, srun, ssh)
// agree on the cluster file with nothing shared but a folder that every host sees (a cluster's
// shared file system). Each node publishes DIR/node-K.publish (its endpoint, its CURVE public
// key, a fingerprint of its run options; the secret key never leaves the process), waits until
// all N have, and builds the cluster file from the publications and the graph that the run
// options ask for. Every node builds it; the first writes DIR/cluster.conf, the others check
// that theirs is the same byte for byte, so a disagreement is an error, not a split run.
//
// A publication is written to a temporary name and hard-linked to its final name, so a reader
// sees all of it or nothing, and a second process with the same id (or a folder left from an
// earlier run) fails instead of overwriting. Publications are untrusted input: each is read
// with a size bound and refused, naming its file, for an unknown or repeated field, an id other
// than its file name's or outside 0..N-1, a malformed endpoint or key, a fingerprint other than
// this node's, or an endpoint or key that another publication already has.
//
// The directory is the run's trust boundary, as a hand-written cluster file is: whoever may
// write it may publish in a node's name. The launchers make it mode 0700; a node warns where
// group or others may write it.
//
// Probes: public key files DIR/probe-NAME.pub present when the last node has published become
// 'probe' lines (put them there before starting the nodes).
#pragma once

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "topology/cluster_file.h"
#include "topology/graph.h"

namespace starling::node {

struct RendezvousEntry {
  int id = -1;
  std::string endpoint;    // tcp://HOST:PORT or ipc://PATH
  std::string public_key;  // Z85 CURVE public key; empty for a plaintext run
  std::string run;         // fingerprint of the run options: 16 lowercase hex digits
  std::string host;        // the host's name, for messages only (may be empty)
  // The run options as one word (OptionLinesText), so that a node of another run is told the
  // first option that differs and both values; may be empty (not compared then).
  std::string options;
};

// DIR/node-K.publish.
std::string EntryPath(const std::string& dir, int id);
// The text of a publication (ParseEntry reads it back).
std::string FormatEntry(const RendezvousEntry& entry);
// Parses a publication's text. Throws std::runtime_error "SOURCE: reason" for anything but the
// fields version (1), id, endpoint, key (Z85 or "none"), run, host, options, each once, with id
// equal to `expected_id` and below `nodes`.
RendezvousEntry ParseEntry(const std::string& text, const std::string& source, int nodes,
                           int expected_id);
// Publishes `entry` as EntryPath(dir, entry.id), atomically and without overwriting. Throws
// std::runtime_error naming the file if it exists already or cannot be written.
void PublishEntry(const std::string& dir, const RendezvousEntry& entry);

// Thrown when the deadline passes before every node has published; what() names the missing
// ids. starlingd exits 3 for it (gave up waiting), as for a neighbour that never answers.
class RendezvousTimeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct RendezvousRequest {
  std::string dir;
  int nodes = 0;
  RendezvousEntry self;
  topology::Graph graph;  // the run's graph on `nodes` nodes
  double timeout_seconds = 120;
  double log_every_seconds = 10;            // "waiting for ..." lines (spdlog info)
  const std::atomic<bool>* stop = nullptr;  // a signal: stop waiting (std::runtime_error)
};

// Waits until node-0..node-(N-1) are all published, reading each once, validated as above.
// Throws RendezvousTimeout at the deadline, std::runtime_error for a bad publication.
std::vector<RendezvousEntry> AwaitEntries(const RendezvousRequest& request);

// The cluster of `entries` (all N, in id order) on `graph`, with the probe keys of DIR. Throws
// std::runtime_error naming both files for a repeated endpoint or key, and for a mix of nodes
// with and without keys.
topology::Cluster ClusterFromEntries(const std::vector<RendezvousEntry>& entries,
                                     const topology::Graph& graph, const std::string& dir);

// Writes `cluster` as DIR/cluster.conf unless it exists; if it does, it must be byte for byte
// what this node would write (std::runtime_error naming the first differing line otherwise).
// Returns the path.
std::string AgreeOnClusterFile(const std::string& dir, const topology::Cluster& cluster);

// Publishes, waits, builds and agrees: returns the path of DIR/cluster.conf.
std::string JoinRendezvous(const RendezvousRequest& request);

// For a probe or a monitor: waits (with the same deadline rules) until DIR/cluster.conf exists
// and returns its path. Throws RendezvousTimeout naming the nodes that have not published yet.
std::string AwaitClusterFile(const std::string& dir, double timeout_seconds,
                             const std::atomic<bool>* stop);

}  // namespace starling::node
