// What the inference probe gives the user for each estimator, compared with the cluster file's
// graph: rows of DIR/edges.tsv (every observed pair with its score, inferred and true label), a
// line of DIR/summary.jsonl, a line on the console and, for the first estimator, DIR/inferred.dot
// (its graph, coloured by correctness). examples/plot_inference.py and the tests read these
// files, so their columns and keys are an interface.
#pragma once

#include <cstdint>
#include <fstream>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "node/probe/infer_probe.h"
#include "topology/graph.h"
#include "topology/inference.h"

namespace starling::node {

class InferenceReport {
 public:
  // Opens edges.tsv and summary.jsonl in options.out_dir and writes the header of edges.tsv.
  // `ids` are the observed nodes (ids[i] is observed index i), `truth` the cluster file's graph,
  // `samples` the aligned pairs the moments hold. Throws std::runtime_error if the files cannot
  // be opened. `options` and `out` must outlive the report.
  InferenceReport(const InferProbeOptions& options, const std::vector<int>& ids,
                  const topology::Graph& truth, int64_t samples, std::ostream& out);

  // Writes and prints one estimator's result; the first one added also goes to inferred.dot.
  void Add(const topology::InferenceResult& r);

  // Closes the files; std::runtime_error if a write failed.
  void Close();

 private:
  void WriteEdges(const char* name, const topology::InferenceResult& r);
  void WriteSummary(const char* name, const topology::InferenceResult& r,
                    const topology::Classification& c, double gap);
  void Print(const char* name, const topology::Classification& c, double gap);
  void WriteDot(const char* name, const topology::InferenceResult& r) const;

  const InferProbeOptions& options_;
  const std::vector<int> ids_;
  const std::vector<std::pair<int, int>> pairs_;  // observed indices, as topology::ObservedPairs
  std::vector<bool> truth_;                       // per pair: an edge of the cluster file's graph
  const int64_t samples_;
  std::ostream& out_;
  const std::string dir_;
  std::ofstream edges_, summary_;
  bool first_ = true;
};

}  // namespace starling::node
