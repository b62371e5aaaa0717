#include "node/daemon/node_reporter.h"

#include <time.h>

#include <stdexcept>

#include "net/payload.h"
#include "node/report/json_line.h"
#include "node/report/metrics_header.h"

namespace starling::node {

namespace {

double ProcessCpuSeconds() {
  timespec t{};
  if (::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) != 0) return 0.0;
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace

NodeReporter::NodeReporter(const DaemonOptions& options, const RunConfig& config,
                           const algorithms::Problem* problem,
                           const std::vector<std::pair<std::string, std::string>>& header)
    : options_(options),
      compressed_(config.compression != "none"),
      problem_(problem),
      stamps_(options.fault_clock_offset_ms) {
  if (!config.metrics.empty()) {
    metrics_.open(config.metrics, std::ios::trunc);
    if (!metrics_) throw std::runtime_error(config.metrics + ": cannot open metrics file");
    metrics_ << MetricsHeaderLine("starlingd", header).str() << '\n' << std::flush;
  }
}

void NodeReporter::Report(int64_t iteration, const Vec& model, int64_t comm_rounds, bool final,
                          bool force) {
  const Clock::time_point now = Clock::now();
  if (!force && Millis(now - last_report_) < options_.telemetry_ms) return;
  last_report_ = now;
  const double elapsed = Seconds(now - start_);
  const double local_objective = LocalObjective(now, iteration, model, comm_rounds, final);
  PublishTelemetry(iteration, elapsed, local_objective, model, comm_rounds, final);
  if (metrics_.is_open()) WriteMetricsLine(iteration, elapsed, local_objective, comm_rounds, final);
}

double NodeReporter::LocalObjective(Clock::time_point now, int64_t iteration, const Vec& model,
                                    int64_t comm_rounds, bool final) {
  // The local objective is a full pass over the shard: refreshed at most every
  // local_objective_seconds (and at the end), and kept out of the compute and blocked times.
  // A final line is refreshed only if the model changed since: a finished node reports final
  // lines every telemetry period while it lingers, and a pass each time took the cores from the
  // nodes still running (bench/run.sh overhead: their waits clustered when others finished).
  const std::pair<int64_t, int64_t> state{iteration, comm_rounds};
  if ((final && state != objective_of_) || !last_objective_at_ ||
      Seconds(now - *last_objective_at_) >= options_.local_objective_seconds) {
    objective_of_ = state;
    // The diffusion of topology inference has no objective.
    local_objective_ = problem_ ? problem_->Value(model) : 0.0;
    last_objective_at_ = Clock::now();
    report_seconds_ += Seconds(*last_objective_at_ - now);
  }
  return local_objective_;
}

void NodeReporter::PublishTelemetry(int64_t iteration, double elapsed, double local_objective,
                                    const Vec& model, int64_t comm_rounds, bool final) {
  if (&model != &last_.model) {
    last_.iteration = iteration;
    last_.elapsed = elapsed;
    last_.local_objective = local_objective;
    last_.model = model;
    last_.comm_rounds = comm_rounds;
    last_.final = final;
  }
  last_.subscriptions = transport_->TelemetrySubscriptions();
  net::Envelope e;
  e.type = net::MessageType::kTelemetry;
  e.telemetry = {{"iteration", static_cast<double>(iteration)},
                 {"time", elapsed},
                 {kStampField, stamps_.NowUs()},
                 {"local_objective", local_objective},
                 {"comm_rounds", static_cast<double>(comm_rounds)},
                 {"bytes_sent", static_cast<double>(transport_->bytes_sent())},
                 {"bytes_received", static_cast<double>(transport_->bytes_received())},
                 {"rejected", static_cast<double>(transport_->rejects().total())},
                 {"compute_s", compute_seconds_},
                 {"final", final ? 1.0 : 0.0}};
  e.payloads = {net::Float64Payload(model.data(), static_cast<uint32_t>(model.size()))};
  transport_->Publish(e);
}

void NodeReporter::RepublishLast() {
  PublishTelemetry(last_.iteration, last_.elapsed, last_.local_objective, last_.model,
                   last_.comm_rounds, last_.final);
}

void NodeReporter::WriteMetricsLine(int64_t iteration, double elapsed, double local_objective,
                                    int64_t comm_rounds, bool final) {
  JsonLine line;
  line.Add("node", options_.id)
      .Add("iter", iteration)
      .Add("time", elapsed)
      // Wall clock, so that lines of different nodes can be put on one time axis (their
      // `time` counts from each process's own start).
      .Add("unix_time",
           std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
               .count())
      .Add("local_objective", local_objective)
      .Add("comm_rounds", comm_rounds)
      .Add("bytes_sent", static_cast<int64_t>(transport_->bytes_sent()))
      .Add("bytes_received", static_cast<int64_t>(transport_->bytes_received()))
      .Add("rejected", static_cast<int64_t>(transport_->rejects().total()))
      .Add("compute_s", compute_seconds_)
      // Up to now, not `elapsed`: report_seconds_ already holds this line's objective pass.
      .Add("blocked_s",
           Seconds(Clock::now() - start_) - compute_seconds_ - report_seconds_ - startup_seconds_)
      .Add("startup_s", startup_seconds_)
      .Add("wait_s", wait_seconds_)
      // All threads' CPU time (ZeroMQ's I/O thread and CURVE included): how much of the
      // machine the node takes, e.g. when many nodes share few cores.
      .Add("cpu_s", ProcessCpuSeconds());
  // Shared memory (net/transport.h): the messages it carried, and the neighbours it linked.
  int64_t shm_sent = 0, shm_received = 0;
  std::string shm_peers;
  for (const auto& [id, peer] : transport_->peers()) {
    shm_sent += static_cast<int64_t>(peer.shm_messages_sent);
    shm_received += static_cast<int64_t>(peer.shm_messages_received);
    if (peer.shm_links > 0) shm_peers += (shm_peers.empty() ? "" : " ") + std::to_string(id);
  }
  line.Add("shm_sent", shm_sent).Add("shm_received", shm_received).Add("shm_peers", shm_peers);
  if (compressed_) line.Add("decode_failures", decode_failures_);
  if (!options_.checkpoint_file.empty()) {
    line.Add("checkpoints", checkpoints_written_).Add("checkpoint_failures", checkpoint_failures_);
  }
  line.Add("final", final ? 1 : 0);
  metrics_ << line.str() << '\n' << std::flush;
}

}  // namespace starling::node
