#include "node/probe/sample_collector.h"

#include <algorithm>
#include <cerrno>
#include <iomanip>
#include <optional>
#include <ostream>
#include <sstream>

#include "node/config/curve_setup.h"
#include "node/drivers/sample_telemetry.h"
#include "node/probe/telemetry_subscriber.h"

namespace starling::node {

namespace {

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

SampleCollector::SampleCollector(const topology::Cluster& cluster, const std::vector<int>& ids,
                                 const InferProbeOptions& options, std::ostream& out)
    : ids_(ids),
      s_(static_cast<int>(ids.size())),
      options_(options),
      out_(out),
      limits_(net::LimitsForRun(kMaxSampleBatch, 1)),
      context_(1),
      moments_(s_),
      aligner_(s_, options.burn_in, &moments_),
      heard_(s_, false),
      final_(s_, false) {
  Subscribe(cluster);
}

void SampleCollector::Subscribe(const topology::Cluster& cluster) {
  const std::optional<net::CurveOptions> curve =
      ProbeCurveOptions(cluster, options_.secret_key_file, options_.allow_plaintext);
  subs_.reserve(s_);
  for (int id : ids_) {
    zmq::socket_t sub = MakeTelemetrySubscriber(context_, limits_.max_message_bytes);
    endpoints_.push_back(ConnectToTelemetry(&sub, id, cluster.nodes[id].endpoint, curve));
    subs_.push_back(std::move(sub));
  }
}

bool SampleCollector::Collect(const std::atomic<bool>* stop) {
  out_ << "infer: watching nodes " << options_.observe << " of " << options_.cluster_file << " ("
       << s_ << " nodes, " << s_ * (s_ - 1) / 2 << " pairs) for " << options_.samples
       << " aligned samples" << std::endl;
  start_ = Clock::now();
  Clock::time_point last_progress = start_;
  std::vector<zmq::pollitem_t> items;
  for (auto& sub : subs_) items.push_back({sub.handle(), 0, ZMQ_POLLIN, 0});
  while (aligner_.pairs() < options_.samples) {
    if (stop->load()) {
      stop_reason_ = "stopped by a signal";
      break;
    }
    try {
      zmq::poll(items.data(), items.size(), std::chrono::milliseconds(100));
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;
    }
    for (int k = 0; k < s_; ++k) Receive(k);
    const double elapsed = SecondsSince(start_);
    if (elapsed >= options_.connect_timeout_seconds && NameUnheardNode()) return false;
    if (AllFinal()) {
      stop_reason_ = "the observed nodes have finished";
      break;
    }
    if (elapsed >= options_.timeout_seconds) {
      stop_reason_ = "--timeout-s passed";
      break;
    }
    if (SecondsSince(last_progress) >= 2.0) {
      last_progress = Clock::now();
      PrintProgress(elapsed);
    }
  }
  return true;
}

// At most 256 messages from one node per turn, so that a fast publisher cannot starve the
// others' sockets.
void SampleCollector::Receive(int k) {
  zmq::message_t message;
  for (int budget = 0; budget < 256; ++budget) {
    if (!ReceiveWaiting(subs_[k], &message)) break;
    Take(k, message);
  }
}

void SampleCollector::Take(int k, const zmq::message_t& message) {
  if (!net::Decode(static_cast<const char*>(message.data()), message.size(), limits_, &envelope_,
                   &reject_) ||
      envelope_.type != net::MessageType::kTelemetry || envelope_.sender != ids_[k]) {
    ++rejected_;
    return;
  }
  if (!run_id_) run_id_ = envelope_.run_id;
  if (envelope_.run_id != *run_id_) {
    if (++wrong_run_ == 1) {
      out_ << "infer: node " << ids_[k] << " publishes another run's telemetry than the "
           << "first node heard; ignoring it (check the cluster file)" << std::endl;
    }
    return;
  }
  heard_[k] = true;
  if (auto batch = ParseSampleBatch(envelope_)) {
    ++batches_;
    if (options_.drop_fraction > 0 && unit_(drop_rng_) < options_.drop_fraction) {
      ++dropped_batches_;
      return;
    }
    aligner_.Add(k, batch->first_step, batch->values);
  } else if (TelemetryValue(envelope_, "final", 0.0) != 0.0) {
    final_[k] = true;  // the node's last samples were published before this
  }
}

// Names the first observed node not heard from, if any; true if there is one.
bool SampleCollector::NameUnheardNode() const {
  for (int k = 0; k < s_; ++k) {
    if (!heard_[k]) {
      std::ostringstream msg;
      msg << "infer: no telemetry from node " << ids_[k] << " at " << endpoints_[k] << " within "
          << options_.connect_timeout_seconds
          << " s: is it running (a diffusion run), and is that its address?";
      out_ << msg.str() << std::endl;
      return true;
    }
  }
  return false;
}

bool SampleCollector::AllFinal() const {
  return std::all_of(final_.begin(), final_.end(), [](bool f) { return f; });
}

void SampleCollector::PrintProgress(double elapsed) const {
  out_ << "infer: t=" << std::fixed << std::setprecision(1) << elapsed << "s " << std::defaultfloat
       << aligner_.pairs() << "/" << options_.samples << " sample pairs, "
       << aligner_.dropped_rows() << " incomplete steps dropped" << std::endl;
}

void SampleCollector::PrintTally() const {
  out_ << "infer: " << aligner_.pairs() << " aligned sample pairs from " << aligner_.complete_rows()
       << " complete steps (" << aligner_.dropped_rows()
       << " steps not seen from every observed node dropped; " << batches_ << " batches";
  if (dropped_batches_) out_ << ", " << dropped_batches_ << " discarded by --drop-fraction";
  out_ << ") in " << std::fixed << std::setprecision(1) << SecondsSince(start_) << " s"
       << std::defaultfloat << std::endl;
  if (rejected_)
    out_ << "infer: rejected " << rejected_ << " malformed or misattributed messages\n";
}

}  // namespace starling::node
