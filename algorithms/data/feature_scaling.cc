#include "algorithms/data/feature_scaling.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace starling::algorithms {

namespace {

// Per-feature statistics over every row, accumulated in file order (row by row), so that the
// result depends on the data only, never on threads or shards.
struct ColumnStats {
  Vec mean, var, min, max, max_abs;
};

ColumnStats StatsOf(const Dataset& data) {
  const int d = data.num_features;
  const double m = data.num_samples();
  ColumnStats s;
  s.mean = Vec::Zero(d);
  s.var = Vec::Zero(d);
  s.max_abs = Vec::Zero(d);
  if (data.is_sparse) {
    // Unstored entries are zeros: they count in the mean and the variance.
    Eigen::VectorXi stored = Eigen::VectorXi::Zero(d);
    for (Eigen::Index r = 0; r < data.sparse.outerSize(); ++r) {
      for (SparseMatrix::InnerIterator it(data.sparse, r); it; ++it) {
        s.mean[it.col()] += it.value();
        s.max_abs[it.col()] = std::max(s.max_abs[it.col()], std::abs(it.value()));
        ++stored[it.col()];
      }
    }
    s.mean /= m;
    for (Eigen::Index r = 0; r < data.sparse.outerSize(); ++r) {
      for (SparseMatrix::InnerIterator it(data.sparse, r); it; ++it) {
        const double dev = it.value() - s.mean[it.col()];
        s.var[it.col()] += dev * dev;
      }
    }
    for (int j = 0; j < d; ++j) s.var[j] = (s.var[j] + (m - stored[j]) * s.mean[j] * s.mean[j]) / m;
    return s;
  }
  s.min = Vec::Constant(d, HUGE_VAL);
  s.max = Vec::Constant(d, -HUGE_VAL);
  for (int i = 0; i < data.num_samples(); ++i) {
    for (int j = 0; j < d; ++j) {
      const double x = data.dense(i, j);
      s.mean[j] += x;
      s.min[j] = std::min(s.min[j], x);
      s.max[j] = std::max(s.max[j], x);
      s.max_abs[j] = std::max(s.max_abs[j], std::abs(x));
    }
  }
  s.mean /= m;
  for (int i = 0; i < data.num_samples(); ++i) {
    for (int j = 0; j < d; ++j) {
      const double dev = data.dense(i, j) - s.mean[j];
      s.var[j] += dev * dev;
    }
  }
  s.var /= m;
  return s;
}

// 1/spread, or 1 where the feature does not vary (nothing to scale, and no division by 0).
double InverseOr1(double spread) {
  return spread > 0 && std::isfinite(spread) ? 1.0 / spread : 1.0;
}

std::string Number(double v) {
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.17g", v);
  return buffer;
}

std::string Short(double v) {
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.3g", v);
  return buffer;
}

}  // namespace

const char* ScalingMethods() {
  return "none, standard (dense: (x - mean) / std; sparse: x / std, not centred), minmax (dense "
         "only: into [0, 1]), maxabs (x / max|x|, into [-1, 1]; keeps sparse data sparse)";
}

FeatureScaling FeatureScaling::Fit(const Dataset& training, const std::string& method) {
  FeatureScaling f;
  f.method = method;
  if (method == "none") return f;
  if (method != "standard" && method != "minmax" && method != "maxabs") {
    throw std::invalid_argument("unknown feature scaling '" + method + "' (expected " +
                                ScalingMethods() + ")");
  }
  if (method == "minmax" && training.is_sparse) {
    throw std::runtime_error(training.source +
                             ": minmax scaling would shift every feature and so make sparse "
                             "data dense; use maxabs (the same as minmax for non-negative "
                             "features) or standard (not centred on sparse data)");
  }
  if (training.num_samples() == 0) {
    throw std::runtime_error(training.source + ": no samples to fit the scaling on");
  }
  const ColumnStats s = StatsOf(training);
  const int d = training.num_features;
  f.shift = Vec::Zero(d);
  f.factor.resize(d);
  f.centred = !training.is_sparse && method != "maxabs";
  for (int j = 0; j < d; ++j) {
    if (method == "maxabs") {
      f.factor[j] = InverseOr1(s.max_abs[j]);
    } else if (method == "standard") {
      f.factor[j] = InverseOr1(std::sqrt(s.var[j]));
      if (f.centred) f.shift[j] = s.mean[j];
    } else {  // minmax, dense
      f.factor[j] = InverseOr1(s.max[j] - s.min[j]);
      f.shift[j] = s.min[j];
    }
  }
  return f;
}

void FeatureScaling::Apply(Dataset* data) const {
  if (!active()) return;
  if (data->num_features != factor.size()) {
    throw std::invalid_argument(data->source + ": " + std::to_string(data->num_features) +
                                " features, but the scaling was fitted on " +
                                std::to_string(factor.size()));
  }
  if (data->is_sparse) {
    if (centred) {
      throw std::invalid_argument(data->source +
                                  ": a centred scaling cannot be applied to sparse data");
    }
    for (Eigen::Index r = 0; r < data->sparse.outerSize(); ++r) {
      for (SparseMatrix::InnerIterator it(data->sparse, r); it; ++it) {
        it.valueRef() *= factor[it.col()];
      }
    }
    return;
  }
  for (Eigen::Index i = 0; i < data->dense.rows(); ++i) {
    for (Eigen::Index j = 0; j < data->dense.cols(); ++j) {
      data->dense(i, j) = (data->dense(i, j) - shift[j]) * factor[j];
    }
  }
}

std::string FeatureScaling::Describe() const {
  if (!active()) return "none (raw features)";
  std::string text = method;
  if (method == "standard")
    text += centred ? " (centred)" : " (sparse data: divided by the std, not centred)";
  text += ", " + std::to_string(factor.size()) + " features";
  if (factor.size() > 0) {
    text += ", factors " + Short(factor.minCoeff()) + ".." + Short(factor.maxCoeff());
  }
  return text;
}

std::string FeatureScaling::Canonical() const {
  std::string text = method;
  if (!active()) return text;
  text += centred ? ":centred" : ":uncentred";
  for (Eigen::Index j = 0; j < factor.size(); ++j) {
    text += "," + Number(shift[j]) + "/" + Number(factor[j]);
  }
  return text;
}

void FeatureScaling::Write(const std::string& path, const std::string& comment) const {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) throw std::runtime_error(tmp + ": cannot write the feature scaling");
    out << "starling-scaling 1\n";
    out << "# x'_j = (x_j - shift_j) * factor_j for feature j (counted from 1)\n";
    if (!comment.empty()) out << "# " << comment << "\n";
    out << "method " << method << "\ncentred " << (centred ? 1 : 0) << "\nfeatures "
        << factor.size() << "\n";
    for (Eigen::Index j = 0; j < factor.size(); ++j) {
      out << j + 1 << " " << Number(shift[j]) << " " << Number(factor[j]) << "\n";
    }
    out.flush();
    if (!out) throw std::runtime_error(tmp + ": write failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    throw std::runtime_error(path + ": cannot rename the feature scaling into place");
  }
}

FeatureScaling FeatureScaling::Read(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  FeatureScaling f;
  std::string text;
  long line = 0;
  long features = -1;
  bool magic = false;
  const auto fail = [&](const std::string& what) {
    throw std::runtime_error(path + ":" + std::to_string(line) + ": " + what);
  };
  while (std::getline(in, text)) {
    ++line;
    const size_t hash = text.find('#');
    if (hash != std::string::npos) text.resize(hash);
    std::istringstream words(text);
    std::string key;
    if (!(words >> key)) continue;
    if (!magic) {
      int version = 0;
      if (key != "starling-scaling" || !(words >> version) || version != 1) {
        fail("not a starling feature scaling file (expected 'starling-scaling 1')");
      }
      magic = true;
    } else if (key == "method") {
      words >> f.method;
    } else if (key == "centred") {
      int c = 0;
      words >> c;
      f.centred = c != 0;
    } else if (key == "features") {
      if (!(words >> features) || features < 0) fail("bad feature count");
      f.shift = Vec::Zero(features);
      f.factor = Vec::Ones(features);
    } else {
      if (features < 0) fail("a feature line before 'features D'");
      char* end = nullptr;
      const long j = std::strtol(key.c_str(), &end, 10);
      double shift = 0, factor = 0;
      if (*end != '\0' || j < 1 || j > features || !(words >> shift >> factor)) {
        fail("expected 'j shift factor' with j in 1.." + std::to_string(features));
      }
      f.shift[j - 1] = shift;
      f.factor[j - 1] = factor;
    }
  }
  if (!magic) fail("empty file");
  if (f.active() && features < 0) fail("no 'features' line");
  return f;
}

}  // namespace starling::algorithms
