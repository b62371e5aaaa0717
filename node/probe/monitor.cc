#include "node/probe/monitor.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <variant>
#include <vector>
#include <zmq.hpp>

#include "algorithms/pairwise/pairwise_algorithm.h"
#include "net/codec.h"
#include "net/payload_view.h"
#include "net/poll.h"
#include "net/validation.h"
#include "node/config/curve_setup.h"
#include "node/config/run_id.h"
#include "node/config/run_header.h"
#include "node/config/run_setup.h"
#include "node/probe/background_reference.h"
#include "node/probe/monitor_metrics.h"
#include "node/probe/prometheus_exporter.h"
#include "node/probe/monitor_progress.h"
#include "node/probe/telemetry_subscriber.h"
#include "node/report/model_spread.h"
#include "topology/cluster_file.h"

namespace starling::node {

namespace {

using Clock = std::chrono::steady_clock;

// The last telemetry of one node.
struct NodeView {
  bool seen = false;
  bool final = false;
  double iteration = 0, comm_rounds = 0, bytes_sent = 0, time = 0;
  double bytes_received = 0, rejected = 0;
  Vec model;
};

// The run as the monitor sees it: every node of the cluster file, over its graph.
RunConfig MonitorConfig(const MonitorOptions& options, const topology::Cluster& cluster) {
  RunConfig config = options.run;
  config.nodes = static_cast<int>(cluster.nodes.size());
  config.topology = "file:" + options.cluster_file;
  if (config.algorithm == "diffusion") {
    throw std::invalid_argument(
        "--algorithm diffusion has no objective to monitor: use "
        "'starling-probe infer' to watch a diffusion run");
  }
  return config;
}

// The monitor needs the global (and test) problem only, not each node's.
BuildScope MonitorScope() {
  BuildScope scope;
  scope.node_problems = false;
  return scope;
}

// One run of the monitor: constructed (subscribed, reference solve started) before anything is
// printed, so that start-up errors throw from the constructor; Run() then watches until every
// node is final, the timeout or *stop.
class MonitorSession {
 public:
  MonitorSession(const MonitorOptions& options, const std::atomic<bool>* stop, std::ostream& out);
  int Run();

 private:
  enum class End { kAllFinal, kTimedOut, kStopped };

  zmq::socket_t Subscribe();
  End Watch();
  void Receive();
  void Take(const zmq::message_t& message);
  void ReportOnSchedule(Clock::time_point now);
  void Report(bool final);
  MonitorRecord Evaluate(bool final);
  void PrintProgress(const MonitorRecord& r);
  // The progress line: redrawn in place (options_.redraw) or a plain line. `last` ends it.
  void ShowProgress(Clock::time_point now, bool last);
  // Text from elsewhere (the reference solve's lines): on a line of its own, then the progress
  // line again.
  void Say(const std::string& text);
  void PollReference();
  void WaitReference();
  void PrintTimedOut();
  // Returns true if some node did far fewer local steps than asked (an "incomplete" line).
  bool PrintSummary(bool all_seen);
  bool AllSeen() const;
  // Hands the latest figures to the Prometheus exporter, if there is one.
  void Export();
  Clock::time_point Deadline() const {
    return start_ + std::chrono::seconds(options_.timeout_seconds);
  }

  const MonitorOptions& options_;
  const std::atomic<bool>* stop_;
  std::ostream& out_;
  const topology::Cluster cluster_;
  const int n_;
  const RunConfig config_;
  RunSetup setup_;
  const uint64_t run_id_;
  const uint32_t dim_;
  const net::DecodeLimits limits_;
  zmq::context_t context_;  // before sub_: it outlives the socket
  zmq::socket_t sub_;
  std::shared_ptr<algorithms::Problem> global_;
  BackgroundReference reference_;
  MonitorMetrics metrics_;
  std::unique_ptr<PrometheusExporter> exporter_;
  NetworkFigures figures_;  // the last evaluation, for the exporter

  std::vector<NodeView> views_;
  net::RejectCounters rejects_;
  net::Envelope envelope_;
  net::Reject reject_;
  Clock::time_point start_, next_report_, next_progress_;
  double last_objective_ = 0, last_accuracy_ = -1, last_consensus_ = 0;
  bool evaluated_ = false;
  ProgressMeter meter_;
  std::string progress_line_;  // the line shown last (redrawn after other text)
};

MonitorSession::MonitorSession(const MonitorOptions& options, const std::atomic<bool>* stop,
                               std::ostream& out)
    : options_(options),
      stop_(stop),
      out_(out),
      cluster_(topology::ReadClusterFile(options.cluster_file)),
      n_(static_cast<int>(cluster_.nodes.size())),
      config_(MonitorConfig(options, cluster_)),
      setup_(BuildRunSetup(config_, MonitorScope())),
      run_id_(RunIdFor(config_, setup_)),
      dim_(static_cast<uint32_t>(setup_.dim)),
      limits_(net::LimitsForRun(dim_, 4)),
      context_(1),
      sub_(Subscribe()),
      global_(std::move(setup_.global)),
      reference_(config_, setup_, global_, options.reference_tolerance, out_),
      metrics_(config_.metrics, RunHeaderFields(config_, setup_)),
      views_(n_),
      meter_(static_cast<double>(n_) *
             static_cast<double>(std::max<int64_t>(config_.iterations, 0))) {
  if (options.prometheus_port > 0) {
    PrometheusExporterOptions o;
    o.bind_address = options.prometheus_bind;
    o.port = options.prometheus_port;
    exporter_ = std::make_unique<PrometheusExporter>(o);
    Export();  // it serves from now on: the node count, not an empty network, from the start
  }
}

// One socket serves every node. Called while constructing sub_: it uses only the members
// declared before it.
zmq::socket_t MonitorSession::Subscribe() {
  const std::optional<net::CurveOptions> curve =
      ProbeCurveOptions(cluster_, options_.secret_key_file, options_.allow_plaintext);
  zmq::socket_t sub = MakeTelemetrySubscriber(context_, limits_.max_message_bytes);
  for (const auto& node : cluster_.nodes) ConnectToTelemetry(&sub, node.id, node.endpoint, curve);
  return sub;
}

int MonitorSession::Run() {
  start_ = Clock::now();
  next_report_ = start_;
  out_ << "monitor: watching " << n_ << " nodes (run id 0x" << std::hex << run_id_ << std::dec
       << ")" << std::endl;
  if (exporter_) {
    out_ << "monitor: Prometheus metrics on http://" << exporter_->endpoint() << "/metrics"
         << std::endl;
  }
  for (const DataNotice& notice : setup_.notices) {
    out_ << "monitor: " << (notice.warning ? "warning: " : "") << notice.text << std::endl;
  }
  if (reference_.solving()) {
    // Said up front: on a first run the solve takes a minute or more of the machine's CPU
    // beside the nodes, and the run's end waits for it.
    out_ << "monitor: solving the centralized reference (f* for the relative gap) beside the "
            "run; later runs with the same data and options take it from the reference cache "
         << reference_.cache_dir() << std::endl;
  }
  const End end = Watch();
  if (options_.redraw && !progress_line_.empty()) {
    out_ << "\n";  // the summary starts on a line of its own
    progress_line_.clear();
  }
  if (reference_.pending() && !stop_->load()) WaitReference();
  const bool all_seen = AllSeen();
  if (all_seen && end != End::kAllFinal) Report(false);  // stopped or timed out: a last record
  metrics_.RewriteWithGap(reference_.f_star());
  Export();
  const bool short_run = PrintSummary(all_seen);
  return end == End::kTimedOut ? 3 : short_run ? kMonitorExitIncomplete : 0;
}

MonitorSession::End MonitorSession::Watch() {
  while (!stop_->load()) {
    net::WaitReadable(sub_, std::chrono::milliseconds(100));
    Receive();
    PollReference();
    Export();
    int seen = 0, finals = 0;
    for (const NodeView& v : views_) seen += v.seen, finals += v.final;
    const Clock::time_point now = Clock::now();
    if (finals == n_) {
      ShowProgress(now, /*last=*/false);
      WaitReference();
      Report(true);
      ShowProgress(Clock::now(), /*last=*/true);
      return End::kAllFinal;
    }
    if (seen == n_ && now >= next_report_) ReportOnSchedule(now);
    if (seen > 0 && now >= next_progress_) {
      ShowProgress(now, /*last=*/false);
      next_progress_ = now + std::chrono::milliseconds(options_.interval_ms);
    }
    if (now - start_ >= std::chrono::seconds(options_.timeout_seconds)) {
      PrintTimedOut();
      return End::kTimedOut;
    }
  }
  return End::kStopped;
}

// Everything that arrived: the latest telemetry of each node wins.
void MonitorSession::Receive() {
  zmq::message_t message;
  while (ReceiveWaiting(sub_, &message)) Take(message);
}

void MonitorSession::Take(const zmq::message_t& message) {
  if (!net::Decode(static_cast<const char*>(message.data()), message.size(), limits_, &envelope_,
                   &reject_)) {
    rejects_.Count(reject_.reason);
    return;
  }
  const int id = envelope_.sender;
  if (envelope_.type != net::MessageType::kTelemetry || id < 0 || id >= n_ ||
      envelope_.payloads.size() != 1 || envelope_.payloads[0].dim != dim_) {
    rejects_.Count(net::RejectReason::kBadField);
    return;
  }
  if (envelope_.run_id != run_id_) {
    rejects_.Count(net::RejectReason::kWrongRun);
    if (rejects_.count(net::RejectReason::kWrongRun) == 1) {
      spdlog::warn(
          "node {} publishes telemetry of another run (run id {:#x}, ours {:#x}): "
          "check the monitor's run options",
          id, envelope_.run_id, run_id_);
    }
    return;
  }
  NodeView& v = views_[id];
  v.model.resize(dim_);
  const auto model =
      net::PayloadReader().Read(envelope_.payloads[0], dim_, &reject_, v.model.data());
  if (!model || !std::holds_alternative<net::DenseView>(*model)) {
    // A model is published dense; codes or sparse entries are not one.
    rejects_.Count(model ? net::RejectReason::kBadEncoding : reject_.reason);
    v.seen = false;
    return;
  }
  v.seen = true;
  v.iteration = TelemetryValue(envelope_, "iteration");
  v.comm_rounds = TelemetryValue(envelope_, "comm_rounds");
  v.bytes_sent = TelemetryValue(envelope_, "bytes_sent");
  v.bytes_received = TelemetryValue(envelope_, "bytes_received");
  v.rejected = TelemetryValue(envelope_, "rejected");
  v.final = TelemetryValue(envelope_, "final") != 0.0;
}

void MonitorSession::ReportOnSchedule(Clock::time_point now) {
  Report(false);
  // Evaluating the global objective is a full data pass: keep it under a quarter of the wall
  // time, so that the monitor does not starve the daemons it watches of CPU.
  const auto spent = Clock::now() - now;
  next_report_ = Clock::now() + std::max<Clock::duration>(
                                    std::chrono::milliseconds(options_.interval_ms), 3 * spent);
}

void MonitorSession::Report(bool final) {
  const MonitorRecord r = Evaluate(final);
  evaluated_ = true;
  PrintProgress(r);
  metrics_.Append(r, reference_.f_star(), reference_.pending());
  // The exporter serves what the metrics file got: the same doubles, the same formula for the gap.
  ++figures_.evaluations;
  figures_.objective = r.objective;
  figures_.consensus = r.consensus;
  figures_.evaluated_at = r.time;
  figures_.test_accuracy = r.test_accuracy;
  figures_.f_star = reference_.f_star();
  figures_.rel_gap.reset();
  if (figures_.f_star) figures_.rel_gap = (r.objective - *figures_.f_star) / *figures_.f_star;
  Export();
}

// The network at the average model; also keeps what the summary reports.
MonitorRecord MonitorSession::Evaluate(bool final) {
  std::vector<const Vec*> models;
  double min_iter = 1e300, comm = 0, bytes = 0;
  for (const NodeView& v : views_) {
    models.push_back(&v.model);
    min_iter = std::min(min_iter, v.iteration);
    comm += v.comm_rounds;
    bytes += v.bytes_sent;
  }
  const ModelSpread spread = SpreadOf(models);
  MonitorRecord r;
  r.iter = static_cast<int64_t>(min_iter);
  r.objective = last_objective_ = global_->Value(spread.mean);
  r.consensus = last_consensus_ = spread.consensus;
  r.comm_rounds = static_cast<int64_t>(comm / n_);
  r.bytes = static_cast<int64_t>(bytes);
  r.time = std::chrono::duration<double>(Clock::now() - start_).count();
  r.final = final;
  if (setup_.test) {
    r.test_accuracy = setup_.test->Accuracy(spread.mean);
    if (r.test_accuracy) last_accuracy_ = *r.test_accuracy;
  }
  return r;
}

void MonitorSession::ShowProgress(Clock::time_point now, bool last) {
  double done = 0;
  for (const NodeView& v : views_) {
    done += std::min(v.iteration, static_cast<double>(config_.iterations));
  }
  meter_.Add(std::chrono::duration<double>(now - start_).count(), done);
  ProgressFields f = FieldsOf(meter_);
  if (evaluated_) {
    if (last_accuracy_ >= 0) f.test_accuracy = last_accuracy_;
    const std::optional<double>& f_star = reference_.f_star();
    if (f_star) f.rel_gap = (last_objective_ - *f_star) / *f_star;
  }
  progress_line_ = ProgressLine(f);
  if (options_.redraw) {
    out_ << "\r\033[K" << progress_line_ << (last ? "\n" : "") << std::flush;
    if (last) progress_line_.clear();
  } else {
    out_ << progress_line_ << std::endl;
  }
}

void MonitorSession::Say(const std::string& text) {
  if (text.empty()) return;
  if (!options_.redraw) {
    out_ << text << std::flush;
    return;
  }
  out_ << "\r\033[K" << text;
  if (!progress_line_.empty()) out_ << progress_line_;
  out_ << std::flush;
}

void MonitorSession::PollReference() {
  std::ostringstream text;
  reference_.Poll(text);
  Say(text.str());
}

void MonitorSession::WaitReference() {
  if (!options_.redraw) {
    reference_.Wait(Deadline(), stop_, out_);
    return;
  }
  if (reference_.pending() && !stop_->load()) {
    Say("monitor: every node finished; waiting for the centralized reference solve\n");
  }
  std::ostringstream text;  // its own lines, said after the progress line has been redrawn
  reference_.Wait(Deadline(), stop_, text);
  std::string said = text.str();
  const std::string waiting =
      "monitor: every node finished; waiting for the centralized reference solve\n";
  if (said.rfind(waiting, 0) == 0) said.erase(0, waiting.size());
  Say(said);
}

void MonitorSession::PrintProgress(const MonitorRecord& r) {
  if (options_.redraw) return;  // the redrawn progress line carries the accuracy and the gap
  const std::optional<double>& f_star = reference_.f_star();
  out_ << std::fixed << std::setprecision(1) << "t=" << r.time << "s" << std::defaultfloat
       << "  iter " << r.iter << "  objective " << std::setprecision(8) << r.objective;
  if (f_star) out_ << "  rel_gap " << std::setprecision(3) << (r.objective - *f_star) / *f_star;
  if (r.test_accuracy) out_ << "  test_acc " << std::setprecision(4) << *r.test_accuracy;
  out_ << "  consensus " << std::setprecision(3) << r.consensus << std::endl;
}

void MonitorSession::PrintTimedOut() {
  std::string missing;
  for (int i = 0; i < n_; ++i) {
    if (!views_[i].final) missing += " " + std::to_string(i);
  }
  if (options_.redraw && !progress_line_.empty()) out_ << "\n";
  progress_line_.clear();
  out_ << "monitor: timed out after " << options_.timeout_seconds
       << " s; nodes not finished:" << missing << std::endl;
}

bool MonitorSession::PrintSummary(bool all_seen) {
  const std::optional<double>& f_star = reference_.f_star();
  out_ << "summary\n";
  if (!all_seen) out_ << "incomplete: telemetry was not received from every node\n";
  // A pairwise node's iteration is its count of local steps: each must do its budget
  // (the end phase, docs/explanations/algorithms/swarmsgd.md); fewer than 90% of it is far fewer.
  bool short_run = false;
  if (algorithms::IsPairwiseAlgorithm(config_.algorithm)) {
    for (int i = 0; i < n_; ++i) {
      const NodeView& v = views_[i];
      if (!v.seen || v.iteration >= 0.9 * static_cast<double>(config_.iterations)) continue;
      short_run = true;
      out_ << "incomplete: node " << i << " did " << static_cast<int64_t>(v.iteration) << " of "
           << config_.iterations << " local steps\n";
    }
  }
  if (all_seen) {
    out_ << "objective " << std::setprecision(12) << last_objective_ << "\n";
    if (f_star) {
      out_ << "f_star " << std::setprecision(15) << *f_star << "\nrel_gap " << std::setprecision(4)
           << (last_objective_ - *f_star) / *f_star << "\n";
    }
    if (last_accuracy_ >= 0) {
      out_ << "test_accuracy " << std::setprecision(4) << last_accuracy_ << "\n";
    }
    out_ << "consensus " << std::setprecision(4) << last_consensus_ << "\n";
  }
  const std::optional<algorithms::ReferenceSolution>& solution = reference_.solution();
  if (solution && setup_.test) {
    if (auto acc = setup_.test->Accuracy(solution->x)) {
      out_ << "reference_test_accuracy " << std::setprecision(4) << *acc << "\n";
    }
  }
  if (rejects_.total()) out_ << "rejected " << rejects_.Summary() << "\n";
  out_ << std::flush;
  return short_run;
}

bool MonitorSession::AllSeen() const {
  bool all_seen = true;
  for (const NodeView& v : views_) all_seen = all_seen && v.seen;
  return all_seen;
}

void MonitorSession::Export() {
  if (!exporter_) return;
  figures_.nodes.resize(n_);
  for (int i = 0; i < n_; ++i) {
    const NodeView& v = views_[i];
    figures_.nodes[i] = {v.seen,       v.final,          v.iteration, v.comm_rounds,
                         v.bytes_sent, v.bytes_received, v.rejected};
  }
  figures_.monitor_rejected = static_cast<int64_t>(rejects_.total());
  // The solve may end after the last evaluation: its gap then, as RewriteWithGap writes it.
  if (figures_.evaluations > 0 && !figures_.f_star && reference_.f_star()) {
    figures_.f_star = reference_.f_star();
    figures_.rel_gap = (figures_.objective - *figures_.f_star) / *figures_.f_star;
  }
  exporter_->Update(figures_);
}

}  // namespace

int RunMonitor(const MonitorOptions& options, const std::atomic<bool>* stop, std::ostream& out) {
  MonitorSession session(options, stop, out);
  return session.Run();
}

}  // namespace starling::node
