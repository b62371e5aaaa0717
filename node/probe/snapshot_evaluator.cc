#include "node/probe/snapshot_evaluator.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <limits>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "node/config/run_id.h"
#include "node/config/run_setup.h"
#include "node/report/json_line.h"
#include "node/report/model_spread.h"
#include "node/sim/sim_runner.h"
#include "topology/cluster_file.h"

namespace starling::node {

namespace {

// One point to evaluate: a snapshot of every node.
struct Aligned {
  int64_t step = 0;
  bool final = false;
  std::vector<const SnapshotRecord*> records;  // by node
  bool band = false;
};

std::vector<Aligned> Align(const std::vector<SnapshotFile>& files, int64_t* skipped) {
  const size_t n = files.size();
  std::vector<std::map<int64_t, const SnapshotRecord*>> by_step(n);
  std::vector<const SnapshotRecord*> finals(n, nullptr);
  std::set<int64_t> steps;
  for (size_t k = 0; k < n; ++k) {
    for (const SnapshotRecord& r : files[k].records) {
      if (r.final) {
        finals[k] = &r;  // the later record wins (a resumed node appends)
      } else {
        by_step[k][r.step] = &r;
        steps.insert(r.step);
      }
    }
  }
  std::vector<Aligned> points;
  *skipped = 0;
  for (int64_t step : steps) {
    Aligned a;
    a.step = step;
    for (size_t k = 0; k < n; ++k) {
      const auto it = by_step[k].find(step);
      if (it == by_step[k].end()) break;
      a.records.push_back(it->second);
    }
    if (a.records.size() == n) {
      points.push_back(std::move(a));
    } else {
      ++*skipped;
    }
  }
  if (std::all_of(finals.begin(), finals.end(), [](const SnapshotRecord* r) { return r; })) {
    Aligned a;
    a.final = true;
    a.records = finals;
    a.step = 0;
    for (const SnapshotRecord* r : finals) a.step = std::max(a.step, r->step);
    points.push_back(std::move(a));
  }
  return points;
}

void ChooseBands(int band_points, std::vector<Aligned>* points) {
  const int p = static_cast<int>(points->size());
  if (p == 0 || band_points == 0) return;
  if (band_points < 0 || band_points >= p) {
    for (Aligned& a : *points) a.band = true;
    return;
  }
  for (int j = 0; j < band_points; ++j) {
    const int at =
        band_points == 1
            ? p - 1
            : static_cast<int>(std::llround(static_cast<double>(j) * (p - 1) / (band_points - 1)));
    (*points)[at].band = true;
  }
  points->back().band = true;
}

CurvePoint EvaluatePoint(const Aligned& a, double t0, const algorithms::Problem& global,
                         const algorithms::Problem* test, const std::optional<double>& f_star) {
  CurvePoint c;
  c.step = a.step;
  c.final = a.final;
  std::vector<const Vec*> models;
  double latest = -std::numeric_limits<double>::infinity();
  for (const SnapshotRecord* r : a.records) {
    models.push_back(&r->model);
    latest = std::max(latest, r->unix_time);
    c.total_steps += static_cast<double>(r->step);
    c.comm_rounds += static_cast<double>(r->comm_rounds);
    c.bytes_sent += r->bytes_sent;
    c.bytes_received += r->bytes_received;
  }
  c.comm_rounds /= static_cast<double>(a.records.size());
  c.time = latest - t0;
  const ModelSpread spread = SpreadOf(models);
  c.objective = global.Value(spread.mean);
  c.consensus = spread.consensus;
  if (f_star) c.rel_gap = (c.objective - *f_star) / *f_star;
  if (test) c.test_accuracy = test->Accuracy(spread.mean);
  if (a.band) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const Vec* x : models) {
      const double f = global.Value(*x);
      lo = std::min(lo, f);
      hi = std::max(hi, f);
    }
    c.node_objective_min = lo;
    c.node_objective_max = hi;
  }
  return c;
}

std::string SnapshotPath(const std::string& run_dir, int k) {
  return (std::filesystem::path(run_dir) / ("snapshots-" + std::to_string(k) + ".bin")).string();
}

}  // namespace

Curves EvaluateSnapshots(const std::vector<SnapshotFile>& files, const algorithms::Problem& global,
                         const algorithms::Problem* test, const std::optional<double>& f_star,
                         const EvaluateOptions& options) {
  if (files.empty()) throw std::invalid_argument("no snapshots files to evaluate");
  Curves curves;
  curves.nodes = static_cast<int>(files.size());
  curves.spacing = files[0].header.spacing;
  double t0 = std::numeric_limits<double>::infinity();
  for (size_t k = 0; k < files.size(); ++k) {
    const SnapshotHeader& h = files[k].header;
    if (h.node != static_cast<int32_t>(k)) {
      throw std::invalid_argument("the snapshots of node " + std::to_string(h.node) +
                                  " stand where node " + std::to_string(k) + "'s belong");
    }
    if (static_cast<int>(h.dim) != global.dim()) {
      throw std::invalid_argument("node " + std::to_string(k) + "'s snapshots have dimension " +
                                  std::to_string(h.dim) + ", the run's problem " +
                                  std::to_string(global.dim()));
    }
    if (h.spacing != curves.spacing) {
      throw std::invalid_argument("node " + std::to_string(k) + " took snapshots every " +
                                  std::to_string(h.spacing) + " steps, node 0 every " +
                                  std::to_string(curves.spacing) +
                                  ": give every node the same --snapshot-every");
    }
    t0 = std::min(t0, h.start_unix_time);
  }
  std::vector<Aligned> points = Align(files, &curves.skipped_steps);
  ChooseBands(options.band_points, &points);
  curves.points.resize(points.size());
  // Problems' const methods are thread-safe (problem.h): the points are shared among threads.
  const int threads = std::max(
      1, std::min<int>(options.threads > 0 ? options.threads
                                           : static_cast<int>(std::thread::hardware_concurrency()),
                       static_cast<int>(points.size())));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (size_t i = t; i < points.size(); i += threads) {
        curves.points[i] = EvaluatePoint(points[i], t0, global, test, f_star);
      }
    });
  }
  for (std::thread& th : pool) th.join();
  return curves;
}

void WriteCurves(const Curves& curves, const std::optional<double>& f_star,
                 const std::string& path) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) throw std::runtime_error(path + ": cannot write the curves file");
  JsonLine header;
  header.Add("curves", std::string("snapshots"))
      .Add("nodes", curves.nodes)
      .Add("spacing", curves.spacing)
      .Add("points", static_cast<int64_t>(curves.points.size()));
  if (f_star) header.Add("f_star", *f_star);
  out << header.str() << '\n';
  for (const CurvePoint& c : curves.points) {
    JsonLine line;
    line.Add("iter", c.step)
        .Add("total_steps", c.total_steps)
        .Add("time", c.time)
        .Add("bytes", static_cast<int64_t>(c.bytes_sent))
        .Add("bytes_received", static_cast<int64_t>(c.bytes_received))
        .Add("comm_rounds", c.comm_rounds)
        .Add("objective", c.objective);
    if (c.rel_gap) line.Add("rel_gap", *c.rel_gap);
    if (c.test_accuracy) line.Add("test_accuracy", *c.test_accuracy);
    line.Add("consensus", c.consensus);
    if (c.node_objective_min) {
      line.Add("node_objective_min", *c.node_objective_min)
          .Add("node_objective_max", *c.node_objective_max);
    }
    line.Add("final", c.final ? 1 : 0);
    out << line.str() << '\n';
  }
  out.flush();
  if (!out) throw std::runtime_error(path + ": writing the curves file failed");
}

int RunEvaluate(const EvaluateRunOptions& options, std::ostream& out) {
  const auto started = std::chrono::steady_clock::now();
  if (options.run_dir.empty()) throw std::invalid_argument("evaluate: RUN_DIR is required");
  const std::string cluster_file =
      options.cluster_file.empty()
          ? (std::filesystem::path(options.run_dir) / "cluster.conf").string()
          : options.cluster_file;
  const topology::Cluster cluster = topology::ReadClusterFile(cluster_file);
  RunConfig config = options.run;
  config.nodes = static_cast<int>(cluster.nodes.size());
  config.topology = "file:" + cluster_file;
  BuildScope scope;
  scope.node_problems = false;
  RunSetup setup = BuildRunSetup(config, scope);
  const uint64_t run_id = RunIdFor(config, setup);
  std::vector<SnapshotFile> files;
  for (int k = 0; k < config.nodes; ++k) {
    const std::string path = SnapshotPath(options.run_dir, k);
    if (!std::filesystem::exists(path)) {
      throw std::runtime_error(path + ": not found (start every starlingd with --snapshots)");
    }
    files.push_back(ReadSnapshotFile(path, static_cast<uint32_t>(setup.dim)));
    if (files.back().header.run_id != run_id) {
      std::ostringstream what;
      what << path << ": snapshots of another run (run id 0x" << std::hex
           << files.back().header.run_id << ", the options given here make 0x" << run_id
           << "): give evaluate the daemons' run options";
      throw std::invalid_argument(what.str());
    }
    if (files.back().truncated) {
      out << "evaluate: note: " << path << ": its last snapshot was cut short (left out)\n";
    }
  }
  // --reference-optimum: a number, none, or auto (the centralized solve, here and now).
  if (config.reference_optimum == "auto")
    out << "evaluate: solving the centralized problem for f*\n";
  const std::optional<double> f_star = ResolveReferenceOptimum(config, setup, &out);
  const Curves curves =
      EvaluateSnapshots(files, *setup.global, setup.test.get(), f_star, options.evaluate);
  const std::string path = options.out.empty()
                               ? (std::filesystem::path(options.run_dir) / "curves.jsonl").string()
                               : options.out;
  WriteCurves(curves, f_star, path);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  out << "evaluate: " << curves.nodes << " nodes, " << curves.points.size()
      << " points (snapshots every " << curves.spacing << " steps";
  if (curves.skipped_steps > 0) {
    out << "; " << curves.skipped_steps << " steps left out: some node has no snapshot there";
  }
  out << "), wrote " << path << " in " << std::fixed << std::setprecision(1) << seconds << " s"
      << std::defaultfloat << "\n";
  if (!curves.points.empty()) {
    const CurvePoint& last = curves.points.back();
    out << "evaluate: " << (last.final ? "final models" : "last snapshots") << ": objective "
        << std::setprecision(10) << last.objective;
    if (last.rel_gap) out << "  rel_gap " << std::setprecision(4) << *last.rel_gap;
    if (last.test_accuracy) out << "  test_acc " << std::setprecision(4) << *last.test_accuracy;
    out << "  consensus " << std::setprecision(4) << last.consensus << " at t=" << std::fixed
        << std::setprecision(1) << last.time << "s" << std::defaultfloat << "\n";
  }
  if (curves.points.size() < 50) {
    out << "evaluate: note: only " << curves.points.size()
        << " points (fewer than 50): a shorter --snapshot-every gives more\n";
  }
  out << std::flush;
  return 0;
}

}  // namespace starling::node
