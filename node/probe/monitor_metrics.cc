#include "node/probe/monitor_metrics.h"

#include <stdexcept>

#include "node/report/json_line.h"
#include "node/report/metrics_header.h"

namespace starling::node {

MonitorMetrics::MonitorMetrics(const std::string& path,
                               std::vector<std::pair<std::string, std::string>> header)
    : path_(path), header_(std::move(header)) {
  if (path_.empty()) return;
  file_.open(path_, std::ios::trunc);
  if (!file_) throw std::runtime_error(path_ + ": cannot open metrics file");
  WriteHeader();
  file_.flush();
}

void MonitorMetrics::WriteHeader() {
  file_ << MetricsHeaderLine("starling-probe monitor", header_).str() << '\n';
}

void MonitorMetrics::Append(const MonitorRecord& r, const std::optional<double>& f_star,
                            bool reference_pending) {
  records_.push_back(r);
  if (file_.is_open()) {
    Write(r, f_star, reference_pending);
    file_.flush();
  }
}

void MonitorMetrics::RewriteWithGap(const std::optional<double>& f_star) {
  if (!file_.is_open() || !written_without_gap_ || !f_star) return;
  file_.close();
  file_.open(path_, std::ios::trunc);
  WriteHeader();
  for (const MonitorRecord& r : records_) Write(r, f_star, false);
  file_.flush();
}

void MonitorMetrics::Write(const MonitorRecord& r, const std::optional<double>& f_star,
                           bool reference_pending) {
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
  file_ << line.str() << '\n';
  written_without_gap_ = written_without_gap_ || (!f_star && reference_pending);
}

}  // namespace starling::node
