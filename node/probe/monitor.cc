#include "node/probe/monitor.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <fstream>
#include <future>
#include <memory>
#include <thread>
#include <iomanip>
#include <map>
#include <optional>
#include <ostream>
#include <stdexcept>

#include <zmq.hpp>

#include "algorithms/problems/reference_solver.h"
#include "net/codec.h"
#include "net/endpoint.h"
#include "net/payload.h"
#include "net/poll.h"
#include "net/validation.h"
#include "node/config/curve_setup.h"
#include "node/report/json_line.h"
#include "node/report/model_spread.h"
#include "node/config/run_id.h"
#include "node/config/run_setup.h"
#include "node/sim/sim_runner.h"
#include "topology/cluster_file.h"

namespace starling::node {

namespace {

using Clock = std::chrono::steady_clock;

struct NodeView {
  bool seen = false;
  bool final = false;
  double iteration = 0, comm_rounds = 0, bytes_sent = 0, time = 0;
  Vec model;
};

double Field(const net::Envelope& e, const std::string& name, double fallback = 0.0) {
  for (const auto& f : e.telemetry) {
    if (f.name == name) return f.value;
  }
  return fallback;
}

}  // namespace

int RunMonitor(const MonitorOptions& options, const std::atomic<bool>* stop, std::ostream& out) {
  const topology::Cluster cluster = topology::ReadClusterFile(options.cluster_file);
  const int n = static_cast<int>(cluster.nodes.size());
  RunConfig config = options.run;
  config.nodes = n;
  config.topology = "file:" + options.cluster_file;
  BuildScope scope;
  scope.node_problems = false;
  if (config.algorithm == "diffusion") {
    throw std::invalid_argument("--algorithm diffusion has no objective to monitor: use "
                                "'starling-probe infer' to watch a diffusion run");
  }
  RunSetup setup = BuildRunSetup(config, scope);
  const uint64_t run_id = RunIdFor(config, setup.graph);
  const uint32_t dim = static_cast<uint32_t>(setup.dim);

  const std::optional<net::CurveOptions> curve =
      ProbeCurveOptions(cluster, options.secret_key_file, options.allow_plaintext);
  zmq::context_t context(1);
  zmq::socket_t sub(context, zmq::socket_type::sub);
  const net::DecodeLimits limits = net::LimitsForRun(dim, 4);
  sub.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(limits.max_message_bytes));
  sub.set(zmq::sockopt::subscribe, "");
  sub.set(zmq::sockopt::linger, 0);
  for (const auto& node : cluster.nodes) {
    const std::string endpoint = net::TelemetryEndpointFor(node.endpoint);
    try {
      // libzmq takes the server key at connect time, so one socket serves every node.
      if (curve) net::MakeCurveClient(&sub, *curve, curve->server_keys.at(node.id));
      sub.connect(endpoint);
    } catch (const zmq::error_t& e) {
      throw std::runtime_error("cannot connect to the telemetry of node " +
                               std::to_string(node.id) + " at " + endpoint + ": " + e.what());
    }
  }

  // The centralized reference is solved in the background while telemetry flows in. The thread
  // is detached when the monitor is stopped early, so a long solve never delays shutdown; it
  // shares ownership of the problem for that case.
  std::future<algorithms::ReferenceSolution> reference;
  std::optional<double> f_star;
  std::shared_ptr<algorithms::Problem> global(std::move(setup.global));
  if (config.reference_optimum == "auto") {
    algorithms::ReferenceOptions ref_options;
    ref_options.grad_tol = options.reference_tolerance;
    std::packaged_task<algorithms::ReferenceSolution()> task([global, ref_options] {
      return algorithms::SolveReference(*global, ref_options);
    });
    reference = task.get_future();
    std::thread(std::move(task)).detach();
  } else if (!config.reference_optimum.empty()) {
    f_star = ResolveReferenceOptimum(config, setup, nullptr);
  }
  std::optional<algorithms::ReferenceSolution> solution;

  std::ofstream metrics;
  if (!config.metrics.empty()) {
    metrics.open(config.metrics, std::ios::trunc);
    if (!metrics) throw std::runtime_error(config.metrics + ": cannot open metrics file");
  }

  std::vector<NodeView> views(n);
  net::RejectCounters rejects;
  const Clock::time_point start = Clock::now();
  Clock::time_point next_report = start;
  double last_objective = 0, last_accuracy = -1, last_consensus = 0;

  auto poll_reference = [&](bool wait) {
    if (!reference.valid()) return;
    if (!wait && reference.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
    if (wait) {
      if (!stop->load() && reference.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
        out << "monitor: every node finished; waiting for the centralized reference solve"
            << std::endl;
      }
      const auto deadline = start + std::chrono::seconds(options.timeout_seconds);
      while (!stop->load() && Clock::now() < deadline &&
             reference.wait_for(std::chrono::milliseconds(200)) != std::future_status::ready) {
      }
      if (reference.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
        if (!stop->load()) {
          out << "monitor: the reference solve did not finish within --timeout-s; reporting "
                 "without it"
              << std::endl;
        }
        return;
      }
    }
    try {
      solution = reference.get();
    } catch (const std::exception& e) {
      out << "monitor: the centralized reference solve failed: " << e.what() << std::endl;
      return;
    }
    f_star = solution->value;
    out << "reference optimum: f* = " << std::setprecision(15) << *f_star << " (gradient norm "
        << std::setprecision(3) << solution->grad_norm << ")" << std::endl;
  };

  // One evaluation of the network at the average model. Records are kept so that, when the
  // reference optimum arrives after some of them were written, the metrics file can be rewritten
  // with rel_gap on every line.
  struct Record {
    int64_t iter = 0, comm_rounds = 0, bytes = 0;
    double objective = 0, consensus = 0, time = 0;
    std::optional<double> test_accuracy;
    bool final = false;
  };
  std::vector<Record> records;
  bool written_without_gap = false;
  auto write_record = [&](const Record& r) {
    JsonLine line;
    line.Add("iter", r.iter)
        .Add("objective", r.objective)
        .Add("consensus", r.consensus)
        .Add("comm_rounds", r.comm_rounds)
        .Add("bytes", r.bytes);
    if (f_star) line.Add("rel_gap", (r.objective - *f_star) / *f_star);
    if (r.test_accuracy) line.Add("test_accuracy", *r.test_accuracy);
    line.Add("time", r.time);
    if (r.final) line.Add("final", 1);
    metrics << line.str() << '\n';
    written_without_gap = written_without_gap || (!f_star && reference.valid());
  };
  auto report = [&](bool final) {
    std::vector<const Vec*> models;
    double min_iter = 1e300, comm = 0, bytes = 0;
    for (const NodeView& v : views) {
      models.push_back(&v.model);
      min_iter = std::min(min_iter, v.iteration);
      comm += v.comm_rounds;
      bytes += v.bytes_sent;
    }
    const ModelSpread spread = SpreadOf(models);
    Record r;
    r.iter = static_cast<int64_t>(min_iter);
    r.objective = last_objective = global->Value(spread.mean);
    r.consensus = last_consensus = spread.consensus;
    r.comm_rounds = static_cast<int64_t>(comm / n);
    r.bytes = static_cast<int64_t>(bytes);
    r.time = std::chrono::duration<double>(Clock::now() - start).count();
    r.final = final;
    out << std::fixed << std::setprecision(1) << "t=" << r.time << "s" << std::defaultfloat
        << "  iter " << r.iter << "  objective " << std::setprecision(8) << r.objective;
    if (f_star) out << "  rel_gap " << std::setprecision(3) << (r.objective - *f_star) / *f_star;
    if (setup.test) {
      r.test_accuracy = setup.test->Accuracy(spread.mean);
      if (r.test_accuracy) {
        last_accuracy = *r.test_accuracy;
        out << "  test_acc " << std::setprecision(4) << *r.test_accuracy;
      }
    }
    out << "  consensus " << std::setprecision(3) << r.consensus << std::endl;
    records.push_back(r);
    if (metrics.is_open()) {
      write_record(r);
      metrics.flush();
    }
  };

  out << "monitor: watching " << n << " nodes (run id 0x" << std::hex << run_id << std::dec
      << ")" << std::endl;
  zmq::message_t message;
  net::Envelope envelope;
  net::Reject reject;
  int exit_code = 0;
  bool all_final = false;
  while (true) {
    if (stop->load()) break;
    net::WaitReadable(sub, std::chrono::milliseconds(100));
    while (true) {
      try {
        if (!sub.recv(message, zmq::recv_flags::dontwait)) break;
      } catch (const zmq::error_t&) {  // EINTR from a signal: the loop checks the stop flag
        break;
      }
      if (!net::Decode(static_cast<const char*>(message.data()), message.size(), limits,
                       &envelope, &reject)) {
        rejects.Count(reject.reason);
        continue;
      }
      const int id = envelope.sender;
      if (envelope.type != net::MessageType::kTelemetry || id < 0 || id >= n ||
          envelope.payloads.size() != 1 || envelope.payloads[0].dim != dim) {
        rejects.Count(net::RejectReason::kBadField);
        continue;
      }
      if (envelope.run_id != run_id) {
        rejects.Count(net::RejectReason::kWrongRun);
        if (rejects.count(net::RejectReason::kWrongRun) == 1) {
          spdlog::warn("node {} publishes telemetry of another run (run id {:#x}, ours {:#x}): "
                       "check the monitor's run options",
                       id, envelope.run_id, run_id);
        }
        continue;
      }
      NodeView& v = views[id];
      v.model.resize(dim);
      if (!net::PayloadToDoubles(envelope.payloads[0], v.model.data(), dim, &reject)) {
        rejects.Count(reject.reason);
        v.seen = false;
        continue;
      }
      v.seen = true;
      v.iteration = Field(envelope, "iteration");
      v.comm_rounds = Field(envelope, "comm_rounds");
      v.bytes_sent = Field(envelope, "bytes_sent");
      v.final = Field(envelope, "final") != 0.0;
    }
    poll_reference(false);
    int seen = 0, finals = 0;
    for (const NodeView& v : views) seen += v.seen, finals += v.final;
    const Clock::time_point now = Clock::now();
    if (finals == n) {
      poll_reference(true);
      report(true);
      all_final = true;
      break;
    }
    if (seen == n && now >= next_report) {
      report(false);
      // Evaluating the global objective is a full data pass: keep it under a quarter of the
      // wall time, so that the monitor does not starve the daemons it watches of CPU.
      const auto spent = Clock::now() - now;
      next_report = Clock::now() + std::max<Clock::duration>(
                                       std::chrono::milliseconds(options.interval_ms), 3 * spent);
    }
    if (now - start >= std::chrono::seconds(options.timeout_seconds)) {
      std::string missing;
      for (int i = 0; i < n; ++i) {
        if (!views[i].final) missing += " " + std::to_string(i);
      }
      out << "monitor: timed out after " << options.timeout_seconds
          << " s; nodes not finished:" << missing << std::endl;
      exit_code = 3;
      break;
    }
  }
  if (reference.valid() && !stop->load()) poll_reference(true);
  bool all_seen = true;
  for (const NodeView& v : views) all_seen = all_seen && v.seen;
  if (all_seen && !all_final) report(false);  // stopped or timed out: a last record
  if (metrics.is_open() && written_without_gap && f_star) {
    metrics.close();
    metrics.open(config.metrics, std::ios::trunc);
    for (const Record& r : records) write_record(r);
    metrics.flush();
  }
  out << "summary\n";
  if (!all_seen) out << "incomplete: telemetry was not received from every node\n";
  if (all_seen) {
    out << "objective " << std::setprecision(12) << last_objective << "\n";
    if (f_star) {
      out << "f_star " << std::setprecision(15) << *f_star << "\nrel_gap "
          << std::setprecision(4) << (last_objective - *f_star) / *f_star << "\n";
    }
    if (last_accuracy >= 0) {
      out << "test_accuracy " << std::setprecision(4) << last_accuracy << "\n";
    }
    out << "consensus " << std::setprecision(4) << last_consensus << "\n";
  }
  if (solution && setup.test) {
    if (auto acc = setup.test->Accuracy(solution->x)) {
      out << "reference_test_accuracy " << std::setprecision(4) << *acc << "\n";
    }
  }
  if (rejects.total()) out << "rejected " << rejects.Summary() << "\n";
  out << std::flush;
  return exit_code;
}

}  // namespace starling::node
