#include "node/probe/sample_collector.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <iomanip>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <variant>

#include "net/payload_view.h"
#include "node/config/curve_setup.h"
#include "node/drivers/sample_telemetry.h"
#include "node/probe/telemetry_subscriber.h"
#include "topology/projection.h"

namespace starling::node {

namespace {

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Seconds with one decimal, without touching the output stream's precision (the accuracy lines
// that follow on the same stream printed 0.933 as 0.9 while it stayed at 1).
std::string Tenths(double seconds) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(1) << seconds;
  return text.str();
}

}  // namespace

SampleCollector::SampleCollector(const topology::Cluster& cluster, const std::vector<int>& ids,
                                 const InferProbeOptions& options, std::ostream& out)
    : ids_(ids),
      s_(static_cast<int>(ids.size())),
      options_(options),
      out_(out),
      // --live reads whole models: up to 2^20 coordinates.
      limits_(net::LimitsForRun(options.live ? (1u << 20) : kMaxSampleBatch, 2)),
      context_(1),
      moments_(s_),
      aligner_(s_, options.burn_in, &moments_),
      heard_(s_, false),
      final_(s_, false) {
  live_seq_.assign(s_, 0);
  offset_choice_ = ParseClockOffsets(options.clock_offsets, ids_);
  // Read together, as a daemon reads its stamps' clock (pairwise_diffusion_node.h).
  wall_at_start_us_ = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  steady_at_start_ = Clock::now();
  Subscribe(cluster);
}

double SampleCollector::ProbeClockUs() const {
  return static_cast<double>(
      wall_at_start_us_ +
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - steady_at_start_)
          .count());
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
  while (pairs() < options_.samples) {
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
      ReleaseHeldSamples();
      if (time_aligner_) time_aligner_->Flush();  // every gap is final now
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
  ReleaseHeldSamples();
  return true;
}

void SampleCollector::ReleaseHeldSamples() {
  if (!feed_ || feed_->released()) return;
  out_ << "infer: the stream ended before every observed node sent "
       << options_.clock_offset_batches << " batches; estimating the clock offsets from what came"
       << std::endl;
  feed_->Release();
  PrintOffsetsUsed();
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
  const SampleKind kind = SampleKindOf(envelope_);
  if (options_.live) {
    if (kind != SampleKind::kNone) {
      throw std::runtime_error("--live: node " + std::to_string(ids_[k]) + " publishes " +
                               SampleKindName(kind) +
                               ", not an optimization's reports: leave --live out");
    }
    if (envelope_.payloads.size() == 1) TakeModel(k);
    if (TelemetryValue(envelope_, "final", 0.0) != 0.0) final_[k] = true;
    return;
  }
  if (kind == SampleKind::kNone) {
    // The node's report: its last samples were published before the final one.
    if (TelemetryValue(envelope_, "final", 0.0) != 0.0) final_[k] = true;
    return;
  }
  CheckKind(k, kind);
  // Drawn for parsed batches only, as before time-stamped batches existed.
  const auto drop = [&] {
    return options_.drop_fraction > 0 && unit_(drop_rng_) < options_.drop_fraction;
  };
  if (kind == SampleKind::kStepped) {
    const std::optional<SampleBatch> batch = ParseSampleBatch(envelope_);
    if (!batch) {
      ++rejected_;
      return;
    }
    ++batches_;
    if (drop()) {
      ++dropped_batches_;
      return;
    }
    aligner_.Add(k, batch->first_step, batch->values);
    return;
  }
  const std::optional<TimedSampleBatch> batch = ParseTimedSampleBatch(envelope_);
  if (!batch) {
    ++rejected_;
    return;
  }
  ++batches_;
  if (drop()) {
    ++dropped_batches_;
    return;
  }
  TakeTimed(k, *batch);
}

void SampleCollector::CheckKind(int k, SampleKind kind) {
  if (!kind_) {
    kind_ = kind;
    kind_node_ = ids_[k];
    if (kind == SampleKind::kStepped && options_.clock_offsets != "zero") {
      throw std::runtime_error("--clock-offsets " + options_.clock_offsets +
                               " applies to time-stamped samples, but node " +
                               std::to_string(ids_[k]) + " publishes " + SampleKindName(kind) +
                               ", aligned by step: leave --clock-offsets out");
    }
    if (kind == SampleKind::kStepped && options_.period != 0.0) {
      throw std::runtime_error("--period " + std::to_string(options_.period) +
                               " applies to time-stamped samples, but node " +
                               std::to_string(ids_[k]) + " publishes " + SampleKindName(kind) +
                               ", aligned by step: leave --period out");
    }
    return;
  }
  if (kind != *kind_) {
    throw std::runtime_error("node " + std::to_string(ids_[k]) + " publishes " +
                             SampleKindName(kind) + " but node " + std::to_string(kind_node_) +
                             " published " + SampleKindName(*kind_) +
                             ": the observed nodes must run one kind of diffusion (check "
                             "--observe and the cluster file)");
  }
}

void SampleCollector::StartTimed(int k, const TimedSampleBatch& batch) {
  const double period = Period();
  tick_us_ = batch.tick_us;
  origin_us_ = batch.times[0];
  origin_index_ = k;
  time_aligner_ = std::make_unique<topology::TimeAligner>(
      s_, period, static_cast<double>(options_.burn_in), &moments_);
  time_aligner_->SetPairLimit(options_.samples);
  const bool estimate = offset_choice_.kind == ClockOffsetChoice::kEstimate;
  feed_ = std::make_unique<topology::OffsetEstimatingFeed>(
      time_aligner_.get(), s_, estimate ? options_.clock_offset_batches : 0, k);
  if (options_.live) {
    out_ << "infer: --live: projections of the nodes' models (dimension " << projection_.size()
         << ") on one seeded direction, stamped by the nodes; aligning at period " << period
         << " ms from " << options_.burn_in << " ms after the first report, on node " << ids_[k]
         << "'s clock; clock offsets ";
  } else {
    out_ << "infer: time-stamped samples (pairwise-diffusion), mean tick " << tick_us_ / 1e3
         << " ms; aligning at period " << period << " ticks (" << period * tick_us_ / 1e3
         << " ms) from " << options_.burn_in << " ticks after the first sample, on node " << ids_[k]
         << "'s clock; clock offsets ";
  }
  if (estimate) {
    out_ << "estimated from the first " << options_.clock_offset_batches
         << " batches of every observed node (the samples wait until then)" << std::endl;
    return;
  }
  if (offset_choice_.kind == ClockOffsetChoice::kZero) {
    out_ << "taken as 0 (one clock: one host, or NTP)" << std::endl;
    return;
  }
  out_ << "known (--clock-offsets)" << std::endl;
  // Known offsets in ms from a common reference, made relative to node k's (the grid's clock).
  std::vector<double> ms(s_, 0.0);
  for (const auto& [id, value] : offset_choice_.known_ms) {
    ms[std::find(ids_.begin(), ids_.end(), id) - ids_.begin()] = value;
  }
  for (int j = 0; j < s_; ++j) time_aligner_->SetClockOffset(j, (ms[j] - ms[k]) * 1e3 / tick_us_);
  PrintOffsetsUsed();
}

void SampleCollector::TakeTimed(int k, const TimedSampleBatch& batch) {
  // On the probe's clock as the batch is taken (the queue before it is part of the delay).
  const double arrival_us = ProbeClockUs();
  if (!time_aligner_) {
    StartTimed(k, batch);
  } else if (batch.tick_us != tick_us_) {
    throw std::runtime_error("node " + std::to_string(ids_[k]) + " ticks every " +
                             std::to_string(batch.tick_us / 1e3) + " ms on average but node " +
                             std::to_string(kind_node_) + " every " +
                             std::to_string(tick_us_ / 1e3) +
                             " ms: the observed nodes must run one pairwise diffusion (--tick-ms)");
  }
  // Times in mean ticks since the first sample heard: the simulator's unit. A difference of two
  // integers below 2^53 microseconds is exact.
  ticks_buffer_.resize(batch.times.size());
  for (size_t m = 0; m < batch.times.size(); ++m) {
    ticks_buffer_[m] = (batch.times[m] - origin_us_) / tick_us_;
  }
  feed_->AddBatch(k, batch.first_seq, ticks_buffer_.data(), batch.values.data(),
                  batch.values.size(), (arrival_us - origin_us_) / tick_us_);
  if (feed_->estimating() && feed_->released() && !offsets_printed_) PrintOffsetsUsed();
}

void SampleCollector::PrintOffsetsUsed() {
  offsets_printed_ = true;
  std::ostringstream line;
  line << std::fixed << std::setprecision(3);
  line << "infer: clock offsets " << (feed_ && feed_->estimating() ? "estimated" : "given")
       << " (ms, node clock minus node " << ids_[origin_index_] << "'s):";
  for (int j = 0; j < s_; ++j) {
    const double ticks =
        feed_ && feed_->estimating() ? feed_->offsets()[j] : time_aligner_->clock_offset(j);
    line << " " << ids_[j] << ": " << std::showpos << ticks * tick_us_ / 1e3 << std::noshowpos;
  }
  if (feed_ && feed_->estimating()) {
    line << " (from " << feed_->estimator().min_batches() << " batches or more per node; "
         << feed_->samples_held_at_release() << " samples waited for them)";
  }
  out_ << line.str() << std::endl;
}

void SampleCollector::PrintOffsetEstimate() const {
  if (!feed_) return;
  const topology::ClockOffsetEstimator& e = feed_->estimator();
  const double ms = tick_us_ / 1e3;
  const std::vector<double> relative = e.Relative(origin_index_);
  std::ostringstream line;
  line << std::fixed << std::setprecision(3);
  line << "infer: clock offset estimate from all " << batches_
       << " batches (ms, node clock minus node " << ids_[origin_index_]
       << "'s; the node's clock is ahead of the probe's by at least its lead):";
  double lo = 0, hi = 0, moved = 0;
  for (int j = 0; j < s_; ++j) {
    line << " " << ids_[j] << ": " << std::showpos << relative[j] * ms << " (lead "
         << e.Lead(j) * ms << ")" << std::noshowpos;
    if (std::isfinite(relative[j])) {
      lo = std::min(lo, relative[j]);
      hi = std::max(hi, relative[j]);
      const double used =
          feed_->estimating() ? feed_->offsets()[j] : time_aligner_->clock_offset(j);
      moved = std::max(moved, std::abs(relative[j] - used));
    }
  }
  const double period = Period();
  line << "\ninfer: estimated offsets span " << (hi - lo) * ms << " ms = " << std::setprecision(2)
       << (hi - lo) / period << " periods; the offsets used differ from this estimate by at most "
       << std::setprecision(3) << moved * ms << " ms";
  if (!feed_->estimating() && moved > 0.1 * period) {
    line << "\ninfer: warning: the offsets used leave the nodes misaligned by more than a tenth "
            "of a period, which costs accuracy (docs/how-to/topology-inference.md): consider "
            "--clock-offsets estimate";
  }
  out_ << line.str() << std::endl;
}

void SampleCollector::TakeModel(int k) {
  const net::Payload& p = envelope_.payloads[0];
  if (p.dim == 0 || (projection_.size() > 0 && p.dim != projection_.size())) {
    ++rejected_;  // another dimension than the first model's
    return;
  }
  model_.resize(p.dim);
  const auto view = net::PayloadReader().Read(p, p.dim, &reject_, model_.data());
  if (!view || !std::holds_alternative<net::DenseView>(*view)) {
    ++rejected_;
    return;
  }
  ++batches_;  // a report is one sample
  // The direction, drawn once from --projection-seed.
  if (projection_.size() == 0)
    projection_ = topology::ProjectionDirection(p.dim, options_.projection_seed);
  const double y = projection_.dot(model_);
  if (options_.live_stamps == "node") {
    const double stamp_us = TelemetryValue(envelope_, kStampField, -1.0);
    if (!(stamp_us >= 0 && stamp_us < 9e15)) {  // an integer below 2^53 microseconds
      throw std::runtime_error("--live: node " + std::to_string(ids_[k]) +
                               "'s reports carry no time stamp (" + kStampField +
                               "; a starlingd older than this probe): use --live-stamps arrival");
    }
    TimedSampleBatch sample;
    sample.sender = ids_[k];
    sample.first_seq = live_seq_[k]++;
    sample.tick_us = 1000.0;  // the unit of --period and --burn-in: ms
    sample.times = {stamp_us};
    sample.values = {y};
    TakeTimed(k, sample);
    return;
  }
  const Clock::time_point now = Clock::now();
  if (!time_aligner_) {
    live_origin_ = now;
    time_aligner_ = std::make_unique<topology::TimeAligner>(
        s_, Period(), static_cast<double>(options_.burn_in), &moments_);
    time_aligner_->SetPairLimit(options_.samples);
    out_ << "infer: --live: projections of the nodes' models (dimension " << p.dim
         << ") on one seeded direction, stamped on arrival; aligning at period " << Period()
         << " ms from " << options_.burn_in << " ms after the first report" << std::endl;
  }
  const double t_ms = std::chrono::duration<double, std::milli>(now - live_origin_).count();
  time_aligner_->Add(k, live_seq_[k]++, t_ms, y);
}

double SampleCollector::Period() const {
  if (options_.period != 0.0) return options_.period;
  return options_.live ? 1.0 : kDefaultPeriod;
}

int64_t SampleCollector::DroppedRows() const {
  return time_aligner_ ? time_aligner_->dropped_rows() : aligner_.dropped_rows();
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
  out_ << "infer: t=" << Tenths(elapsed) << "s " << pairs() << "/" << options_.samples
       << " sample pairs, " << DroppedRows() << (time_aligner_ ? " grid rows" : " incomplete steps")
       << " dropped" << std::endl;
}

void SampleCollector::PrintTally() const {
  if (time_aligner_) {
    const topology::TimeAligner& a = *time_aligner_;
    out_ << "infer: " << pairs() << " aligned sample pairs from " << a.rows()
         << " complete grid rows (" << a.dropped_rows()
         << " rows where some observed node's value was unknown dropped; " << a.lost_samples()
         << " samples lost, " << a.late_samples() << " late, " << a.invalid_samples()
         << " invalid; " << batches_ << " batches";
    if (dropped_batches_) out_ << ", " << dropped_batches_ << " discarded by --drop-fraction";
    out_ << ") in " << Tenths(SecondsSince(start_)) << " s" << std::endl;
    if (rejected_) {
      out_ << "infer: rejected " << rejected_ << " malformed or misattributed messages\n";
    }
    PrintOffsetEstimate();  // only for time-stamped samples (not --live-stamps arrival)
    return;
  }
  out_ << "infer: " << aligner_.pairs() << " aligned sample pairs from " << aligner_.complete_rows()
       << " complete steps (" << aligner_.dropped_rows()
       << " steps not seen from every observed node dropped; " << batches_ << " batches";
  if (dropped_batches_) out_ << ", " << dropped_batches_ << " discarded by --drop-fraction";
  out_ << ") in " << Tenths(SecondsSince(start_)) << " s" << std::endl;
  if (rejected_)
    out_ << "infer: rejected " << rejected_ << " malformed or misattributed messages\n";
}

}  // namespace starling::node
