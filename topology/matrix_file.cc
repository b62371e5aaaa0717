#include "topology/matrix_file.h"

#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "topology/text_file.h"

namespace starling::topology {

Eigen::MatrixXd ReadMatrixFile(const std::string& path) {
  std::vector<std::vector<double>> rows;
  for (internal::TextLine& line : internal::ReadTextLines(path)) {
    if (line.fields.front().front() == '#') continue;
    std::vector<double> row;
    for (const std::string& field : line.fields) {
      // Fields were split at blanks; commas separate further (a trailing comma is allowed).
      size_t begin = 0;
      while (begin < field.size()) {
        size_t end = field.find(',', begin);
        if (end == std::string::npos) end = field.size();
        if (end > begin) {
          const std::string token = field.substr(begin, end - begin);
          char* parsed = nullptr;
          const double value = std::strtod(token.c_str(), &parsed);
          if (parsed != token.c_str() + token.size() || !std::isfinite(value)) {
            internal::FailAt(path, line.number, "'" + token + "' is not a finite number");
          }
          row.push_back(value);
        }
        begin = end + 1;
      }
    }
    if (row.empty()) continue;
    if (!rows.empty() && row.size() != rows.front().size()) {
      internal::FailAt(path, line.number,
                       std::to_string(row.size()) + " numbers, but the first row has " +
                           std::to_string(rows.front().size()));
    }
    rows.push_back(std::move(row));
  }
  if (rows.empty()) throw std::runtime_error(path + ": no numbers");
  Eigen::MatrixXd m(rows.size(), rows.front().size());
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t j = 0; j < rows[i].size(); ++j) m(i, j) = rows[i][j];
  }
  return m;
}

Graph GraphOfMixing(const Eigen::MatrixXd& w) {
  Graph graph(static_cast<int>(w.rows()));
  for (int i = 0; i < w.rows(); ++i) {
    for (int j = i + 1; j < w.cols(); ++j) {
      if (w(i, j) != 0.0) graph.AddEdge(i, j);
    }
  }
  return graph;
}

Eigen::MatrixXd ReadMixingFile(const std::string& path, bool laplacian, int nodes) {
  const Eigen::MatrixXd m = ReadMatrixFile(path);
  const std::string what = laplacian ? "Laplacian" : "mixing matrix";
  auto fail = [&](const std::string& reason) {
    throw std::runtime_error(path + ": " + what + " " + reason);
  };
  if (m.rows() != m.cols()) {
    fail("is " + std::to_string(m.rows()) + " x " + std::to_string(m.cols()) + ", not square");
  }
  if (m.rows() != nodes) {
    fail("is " + std::to_string(m.rows()) + " x " + std::to_string(m.rows()) + " but --nodes is " +
         std::to_string(nodes));
  }
  const Eigen::MatrixXd w =
      laplacian ? Eigen::MatrixXd(Eigen::MatrixXd::Identity(nodes, nodes) - m) : m;
  const double scale = std::max(1.0, w.cwiseAbs().maxCoeff());
  for (int i = 0; i < nodes; ++i) {
    for (int j = i + 1; j < nodes; ++j) {
      if (std::abs(w(i, j) - w(j, i)) > 1e-12 * scale) {
        fail("is not symmetric: entries (" + std::to_string(i) + "," + std::to_string(j) +
             ") and (" + std::to_string(j) + "," + std::to_string(i) + ") differ");
      }
    }
    const double sum = w.row(i).sum();
    if (std::abs(sum - 1.0) > 1e-9 * scale) {
      fail(laplacian ? "row " + std::to_string(i) + " sums to " + std::to_string(1.0 - sum) +
                           ", not 0"
                     : "row " + std::to_string(i) + " sums to " + std::to_string(sum) + ", not 1");
    }
  }
  const Graph graph = GraphOfMixing(w);
  if (!graph.IsConnected()) fail("has a disconnected graph: " + internal::DescribeUnreachable(graph));
  return w;
}

}  // namespace starling::topology
