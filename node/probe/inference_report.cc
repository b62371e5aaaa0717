#include "node/probe/inference_report.h"

#include <iomanip>
#include <ostream>
#include <stdexcept>

#include "node/report/json_line.h"

namespace starling::node {

InferenceReport::InferenceReport(const InferProbeOptions& options, const std::vector<int>& ids,
                                 const topology::Graph& truth, int64_t samples, std::ostream& out)
    : options_(options),
      ids_(ids),
      pairs_(topology::ObservedPairs(static_cast<int>(ids.size()))),
      samples_(samples),
      out_(out),
      dir_(options.out_dir) {
  for (const auto& [i, j] : pairs_) truth_.push_back(truth.HasEdge(ids_[i], ids_[j]));
  edges_.open(dir_ + "/edges.tsv");
  summary_.open(dir_ + "/summary.jsonl");
  if (!edges_ || !summary_) throw std::runtime_error(dir_ + ": cannot write the results");
  edges_ << "estimator\tnode_i\tnode_j\tscore\tinferred\ttrue\n" << std::setprecision(10);
}

void InferenceReport::Add(const topology::InferenceResult& r) {
  const topology::Classification c = topology::Compare(r.split.upper, truth_);
  const double gap = topology::IdentifiabilityGap(r.scores, truth_);
  const char* name = topology::EstimatorName(r.estimator);
  WriteEdges(name, r);
  WriteSummary(name, r, c, gap);
  Print(name, c, gap);
  if (first_) WriteDot(name, r);
  first_ = false;
}

void InferenceReport::Close() {
  edges_.close();
  summary_.close();
  if (!edges_ || !summary_) throw std::runtime_error(dir_ + ": write failed");
}

void InferenceReport::WriteEdges(const char* name, const topology::InferenceResult& r) {
  for (size_t p = 0; p < pairs_.size(); ++p) {
    edges_ << name << '\t' << ids_[pairs_[p].first] << '\t' << ids_[pairs_[p].second] << '\t'
           << r.scores[p] << '\t' << r.split.upper[p] << '\t' << truth_[p] << '\n';
  }
}

void InferenceReport::WriteSummary(const char* name, const topology::InferenceResult& r,
                                   const topology::Classification& c, double gap) {
  JsonLine line;
  line.Add("estimator", std::string(name))
      .Add("clustering", options_.clustering)
      .Add("samples", samples_)
      .Add("accuracy", c.accuracy)
      .Add("sensitivity", c.sensitivity)
      .Add("specificity", c.specificity)
      .Add("gap", gap)
      .Add("threshold", r.split.threshold)
      .Add("true_edges", c.true_positives + c.false_negatives)
      .Add("inferred_edges", c.true_positives + c.false_positives)
      .Add("observe", options_.observe);
  summary_ << line.str() << '\n';
}

void InferenceReport::Print(const char* name, const topology::Classification& c, double gap) {
  out_ << name << ": accuracy " << c.accuracy << "  sensitivity " << c.sensitivity
       << "  specificity " << c.specificity << "  gap " << std::setprecision(4) << gap
       << std::setprecision(6) << "  (" << c.true_positives + c.false_positives
       << " edges inferred, " << c.true_positives + c.false_negatives << " true, " << samples_
       << " samples)" << std::endl;
}

// Green: inferred and true; red: inferred, not true; grey dashed: missed. Pairs that are neither
// are left out, so that the picture shows the graph rather than every pair.
void InferenceReport::WriteDot(const char* name, const topology::InferenceResult& r) const {
  std::ofstream dot(dir_ + "/inferred.dot");
  dot << "graph inferred {\n  // " << name << " estimator, " << samples_ << " samples, nodes "
      << options_.observe << " of " << options_.cluster_file
      << ".\n  // green: inferred and true; red: inferred, not true; grey dashed: missed.\n";
  for (int id : ids_) dot << "  " << id << ";\n";
  for (size_t p = 0; p < pairs_.size(); ++p) {
    if (!r.split.upper[p] && !truth_[p]) continue;
    const char* style = r.split.upper[p] && truth_[p] ? "color=green"
                        : r.split.upper[p]            ? "color=red"
                                                      : "color=grey, style=dashed";
    dot << "  " << ids_[pairs_[p].first] << " -- " << ids_[pairs_[p].second] << " [" << style
        << ", label=\"" << std::setprecision(3) << r.scores[p] << "\"];\n";
  }
  dot << "}\n";
  if (!dot) throw std::runtime_error(dir_ + "/inferred.dot: write failed");
}

}  // namespace starling::node
