// The monitor's metrics file (--metrics): a header line (MetricsHeaderLine: the run id, the label
// map and the scaling; no "iter"), then one JSON line per evaluation of the network at the
// average model. Its keys and their order are an interface (examples/plot_run.py reads them):
// iter, objective, consensus, comm_rounds, bytes, rel_gap (once f* is known), test_accuracy (with
// test data), time, final (on the last line).
#pragma once

#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace starling::node {

// One evaluation of the network.
struct MonitorRecord {
  int64_t iter = 0, comm_rounds = 0, bytes = 0;
  double objective = 0, consensus = 0, time = 0;  // time: seconds since the monitor started
  std::optional<double> test_accuracy;
  bool final = false;
};

// Records are kept so that, when the centralized reference solve finishes after some lines were
// written without rel_gap, the file can be rewritten with rel_gap on every line.
class MonitorMetrics {
 public:
  // Truncates `path` and writes the header line made of `header` (RunHeaderFields), or writes no
  // file for an empty path. Throws std::runtime_error naming the path if it cannot be opened.
  MonitorMetrics(const std::string& path, std::vector<std::pair<std::string, std::string>> header);

  // Keeps `r` and writes its line (flushed, so that a plot can follow the run). `f_star` is the
  // optimum known now; `reference_pending` says a solve will bring one later.
  void Append(const MonitorRecord& r, const std::optional<double>& f_star, bool reference_pending);

  // Writes the file again with `f_star`'s rel_gap on every line, if some line lacks one that the
  // solve has since brought.
  void RewriteWithGap(const std::optional<double>& f_star);

 private:
  void Write(const MonitorRecord& r, const std::optional<double>& f_star, bool reference_pending);

  void WriteHeader();

  std::string path_;
  std::vector<std::pair<std::string, std::string>> header_;
  std::ofstream file_;
  std::vector<MonitorRecord> records_;
  bool written_without_gap_ = false;
};

}  // namespace starling::node
