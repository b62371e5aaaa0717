#include "algorithms/data/label_map.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace starling::algorithms {

namespace {

// Values listed in full in messages and descriptions; longer lists are elided in the middle.
constexpr size_t kListed = 10;

bool IsInteger(double v) { return v == std::floor(v) && std::abs(v) < 0x1p53; }

// The distinct labels of `data`, ascending.
std::vector<double> DistinctLabels(const Dataset& data) {
  std::vector<double> values(data.labels.data(), data.labels.data() + data.labels.size());
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

// The first sample whose label is `value`.
int FirstSampleWith(const Dataset& data, double value) {
  for (int i = 0; i < data.num_samples(); ++i) {
    if (data.labels[i] == value) return i;
  }
  return -1;
}

// Consecutive integers a, a+1, ..., b (at least two values).
bool IsIntegerRange(const std::vector<double>& values) {
  if (values.size() < 2) return false;
  for (size_t k = 0; k < values.size(); ++k) {
    if (!IsInteger(values[k]) || values[k] != values[0] + static_cast<double>(k)) return false;
  }
  return true;
}

// "a..b" for a range of integers, else "v0, v1, ..." (elided after kListed values).
std::string ListValues(const std::vector<double>& values) {
  if (IsIntegerRange(values)) return LabelText(values.front()) + ".." + LabelText(values.back());
  std::string text;
  for (size_t k = 0; k < values.size(); ++k) {
    if (values.size() > kListed && k == kListed - 2) {
      text += ", ...";
      k = values.size() - 1;
    }
    text += (k == 0 ? "" : ", ") + LabelText(values[k]);
  }
  return text;
}

std::string SampleText(int i) { return "sample " + std::to_string(i); }

}  // namespace

std::string LabelText(double value) {
  char buffer[32];
  if (value == std::floor(value) && std::abs(value) < 1e15) {
    std::snprintf(buffer, sizeof buffer, "%.0f", value);
    return buffer;
  }
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  return buffer;
}

LabelMap LabelMap::Fit(const Dataset& training, LabelTarget target, int num_classes,
                       const std::string& name) {
  LabelMap map;
  map.target_ = target;
  map.name_ = name.empty() ? training.source : name;
  const auto fail = [&](const std::string& what) {
    throw std::runtime_error(map.name_ + ": " + what);
  };
  if (num_classes < 0 || num_classes == 1) {
    throw std::invalid_argument(map.name_ + ": a class count of " + std::to_string(num_classes) +
                                " (expected 0 = from the data, or at least 2)");
  }
  if (target == LabelTarget::kRaw) {
    if (num_classes != 0) {
      throw std::invalid_argument(map.name_ + ": a class count (" + std::to_string(num_classes) +
                                  ") does not apply to regression, whose labels are used as "
                                  "they are");
    }
    return map;
  }
  if (target == LabelTarget::kBinary && num_classes > 2) {
    throw std::invalid_argument(map.name_ +
                                ": logistic regression is binary, so the class "
                                "count can only be 2, not " +
                                std::to_string(num_classes) + " (multinomial regression handles " +
                                std::to_string(num_classes) + " classes)");
  }
  if (training.num_samples() == 0) fail("no samples, so no labels to map");
  for (int i = 0; i < training.num_samples(); ++i) {
    if (!std::isfinite(training.labels[i])) fail(SampleText(i) + " has a non-finite label");
  }
  const std::vector<double> distinct = DistinctLabels(training);
  const auto first = [&](double v) { return SampleText(FirstSampleWith(training, v)); };

  if (num_classes > 0) {
    // Classes 0..K-1 as written: every label must be one of them.
    for (double v : distinct) {
      if (!(IsInteger(v) && v >= 0 && v < num_classes)) {
        fail("label " + LabelText(v) + " (" + first(v) + ") is not a class in 0.." +
             std::to_string(num_classes - 1) + " (the class count is fixed at " +
             std::to_string(num_classes) + ", and labels keep their value)");
      }
    }
    map.fixed_ = true;
    for (int k = 0; k < num_classes; ++k) map.values_.push_back(k);
    for (int k = 0; k < num_classes; ++k) {
      if (!std::binary_search(distinct.begin(), distinct.end(), static_cast<double>(k))) {
        map.absent_.push_back(k);
      }
    }
    return map;
  }

  if (distinct.size() == 1) {
    fail("every label is " + LabelText(distinct[0]) + ": " +
         (target == LabelTarget::kBinary ? "logistic regression" : "a classifier") +
         " needs at least two classes in the training data");
  }
  if (target == LabelTarget::kBinary) {
    if (distinct.size() > 2) {
      fail(std::to_string(distinct.size()) + " distinct labels (" + ListValues(distinct) +
           "), but logistic regression is binary and needs exactly two; multinomial regression "
           "handles " +
           std::to_string(distinct.size()) + " classes");
    }
    map.values_ = distinct;
    return map;
  }
  for (double v : distinct) {
    if (!IsInteger(v)) {
      fail("label " + LabelText(v) + " (" + first(v) +
           ") is not an integer: class labels must be integers (real-valued targets are "
           "regression: least-squares)");
    }
  }
  if (distinct.size() > static_cast<size_t>(kMaxClasses)) {
    fail(std::to_string(distinct.size()) + " distinct labels, more than " +
         std::to_string(kMaxClasses) + " classes: is this regression data (least-squares)?");
  }
  map.values_ = distinct;
  return map;
}

std::string LabelMap::FailurePrefix(const Dataset& data, const std::string& name) const {
  return (name.empty() ? data.source : name) + ": ";
}

void LabelMap::Apply(Dataset* data, const std::string& name) const {
  if (target_ == LabelTarget::kRaw) return;
  Vec mapped(data->labels.size());
  for (int i = 0; i < data->num_samples(); ++i) {
    const double y = data->labels[i];
    const auto at = std::lower_bound(values_.begin(), values_.end(), y);
    if (at == values_.end() || *at != y) {
      throw std::runtime_error(FailurePrefix(*data, name) + "label " + LabelText(y) + " (" +
                               SampleText(i) + ") does not occur in " + name_ + " (" + Holds() +
                               ")");
    }
    const double k = static_cast<double>(at - values_.begin());
    mapped[i] = target_ == LabelTarget::kBinary ? (k == 0 ? -1.0 : 1.0) : k;
  }
  data->labels = std::move(mapped);
}

int LabelMap::num_classes() const {
  return target_ == LabelTarget::kRaw ? 0 : static_cast<int>(values_.size());
}

std::string LabelMap::Holds() const {
  if (fixed_) return "classes 0.." + std::to_string(values_.size() - 1) + ", fixed";
  return (target_ == LabelTarget::kBinary ? "labels " : "classes ") + ListValues(values_);
}

std::string LabelMap::Describe() const {
  const std::string head = name_ + ": ";
  if (target_ == LabelTarget::kRaw) return head + "raw values (regression)";
  if (target_ == LabelTarget::kBinary) {
    return head + LabelText(values_[0]) + " -> -1, " + LabelText(values_[1]) + " -> +1 (binary" +
           (fixed_ ? ", 2 classes fixed: 0 and 1 as written)" : ": the larger value is +1)");
  }
  const int k = num_classes();
  std::string text = head + std::to_string(k) + " classes";
  if (fixed_) {
    text += " 0.." + std::to_string(k - 1) + " as written (fixed)";
    if (!absent_.empty()) {
      std::vector<double> absent(absent_.begin(), absent_.end());
      text += "; absent from the training data: " + ListValues(absent);
    }
    return text;
  }
  if (IsIntegerRange(values_)) {
    return text + ", " + ListValues(values_) + " -> 0.." + std::to_string(k - 1);
  }
  for (int c = 0; c < k; ++c) {
    if (k > static_cast<int>(kListed) && c == static_cast<int>(kListed) - 2) {
      text += ", ...";
      c = k - 1;
    }
    text += (c == 0 ? ": " : ", ") + LabelText(values_[c]) + " -> " + std::to_string(c);
  }
  return text;
}

std::string LabelMap::Canonical() const {
  std::string text = target_ == LabelTarget::kRaw      ? "raw"
                     : target_ == LabelTarget::kBinary ? "binary"
                                                       : "classes";
  if (fixed_) text += ":fixed";
  char buffer[40];
  for (double v : values_) {
    std::snprintf(buffer, sizeof buffer, ",%.17g", v);
    text += buffer;
  }
  return text;
}

}  // namespace starling::algorithms
