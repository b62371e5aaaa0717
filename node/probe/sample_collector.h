// The inference probe's intake: subscribes to the telemetry of the observed nodes of a diffusion
// run, takes their (t, y_t) sample batches (node/drivers/sample_telemetry.h), aligns them by step
// (StepAligner) and accumulates the moments that topology inference needs.
//
// One SUB socket per observed node, so that a message's socket tells who sent it: a sender field
// that disagrees is rejected rather than trusted. The first run id heard is the run; telemetry
// of another run is ignored, and said so once.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <random>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "net/codec.h"
#include "node/probe/infer_probe.h"
#include "node/probe/step_aligner.h"
#include "topology/cluster_file.h"
#include "topology/inference.h"

namespace starling::node {

class SampleCollector {
 public:
  // Connects to the telemetry of cluster nodes `ids` (indices into cluster.nodes). `options`
  // (samples, burn-in, deadlines, keys, drop fraction) and `out` must outlive the collector.
  // Throws as ProbeCurveOptions does for the probe's keys, and std::runtime_error for an
  // endpoint libzmq refuses.
  SampleCollector(const topology::Cluster& cluster, const std::vector<int>& ids,
                  const InferProbeOptions& options, std::ostream& out);

  // Says what it watches, then collects until options.samples aligned pairs, every observed
  // node's final telemetry, --timeout-s or *stop (stop_reason() says which, empty for enough
  // samples), printing progress every 2 s. Returns false, after naming the node and endpoint,
  // if some observed node was not heard within --connect-timeout-s.
  bool Collect(const std::atomic<bool>* stop);

  // One line: pairs, complete and dropped steps, batches, time since Collect began; and the
  // count of rejected messages, if any.
  void PrintTally() const;

  int64_t pairs() const { return aligner_.pairs(); }
  const std::string& stop_reason() const { return stop_reason_; }
  // The moments of every aligned pair so far.
  topology::Moments FinishMoments() const { return moments_.Finish(); }

 private:
  using Clock = std::chrono::steady_clock;

  void Subscribe(const topology::Cluster& cluster);
  void Receive(int k);
  void Take(int k, const zmq::message_t& message);
  bool NameUnheardNode() const;
  bool AllFinal() const;
  void PrintProgress(double elapsed) const;

  const std::vector<int> ids_;
  const int s_;
  const InferProbeOptions& options_;
  std::ostream& out_;
  const net::DecodeLimits limits_;
  zmq::context_t context_;           // before subs_: it outlives the sockets
  std::vector<zmq::socket_t> subs_;  // subs_[k] watches node ids_[k]
  std::vector<std::string> endpoints_;
  topology::MomentAccumulator moments_;
  StepAligner aligner_;  // after moments_, which it feeds

  std::vector<bool> heard_, final_;
  std::optional<uint64_t> run_id_;
  int64_t rejected_ = 0, wrong_run_ = 0, batches_ = 0, dropped_batches_ = 0;
  // The --drop-fraction test hook, seeded as InferProbeOptions says.
  std::mt19937_64 drop_rng_{12345};
  std::uniform_real_distribution<double> unit_{0.0, 1.0};
  net::Envelope envelope_;
  net::Reject reject_;
  Clock::time_point start_;
  std::string stop_reason_;
};

}  // namespace starling::node
