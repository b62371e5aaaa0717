// How a file's labels map to a problem's labels: the one place that decides it. The map is fitted
// on the training data as a whole (every row of the file, never a shard), so that every process
// that reads the same file computes the same map; it is then applied to the training data and,
// unchanged, to the test data.
//
//  - kBinary (logistic regression): the training labels must take exactly two distinct values,
//    whatever they are (-1/+1, 0/1, 1/2, 3.5/7): the smaller maps to -1, the larger to +1. With a
//    fixed class count of 2, the labels must be 0 or 1 as written (0 -> -1, 1 -> +1), and one of
//    them may be absent.
//  - kClasses (multinomial, mlp): the K distinct integer values, sorted, map to 0..K-1 (labels
//    1..10 become 0..9, -1/+1 become 0/1). With a fixed class count K, the labels must be
//    integers in [0, K) and keep their value (classes absent from the data are allowed).
//  - kRaw (regression): labels are used as they are.
// A label that does not fit is a std::runtime_error naming the data, the sample and the value;
// fitting refuses one distinct value only, more than two for kBinary, non-integer or too many
// (more than kMaxClasses) values for kClasses.
#pragma once

#include <string>
#include <vector>

#include "algorithms/data/dataset.h"

namespace starling::algorithms {

enum class LabelTarget { kRaw, kBinary, kClasses };

// More distinct labels than this is taken as regression data given to a classifier.
constexpr int kMaxClasses = 1 << 16;

class LabelMap {
 public:
  LabelMap() = default;

  // Fits the map on `training` (the whole file). `num_classes` 0 means "from the data"; K >= 2
  // fixes the classes to 0..K-1 as written (kBinary: only 2). `name` is how messages call the
  // training data (for example "--data train.csv"); empty: training.source. Throws
  // std::runtime_error (labels that do not fit) or std::invalid_argument (a num_classes the
  // target cannot take, such as any for kRaw or 3 for kBinary).
  static LabelMap Fit(const Dataset& training, LabelTarget target, int num_classes = 0,
                      const std::string& name = "");

  // Replaces data->labels by the problem's labels. `name` is how messages call `data` ("--test-
  // data test.csv"); empty: data->source. A value the map does not hold is a std::runtime_error
  // naming both data sets and the value, for example "--test-data t.csv: label 7 (sample 12)
  // does not occur in --data d.csv (classes 1..6)"; *data is unchanged then.
  void Apply(Dataset* data, const std::string& name = "") const;

  LabelTarget target() const { return target_; }
  // K for kClasses, 2 for kBinary, 0 for kRaw: the number of classes a model needs.
  int num_classes() const;
  // The raw value of each class in class order (kBinary: {value of -1, value of +1}); empty for
  // kRaw. With a fixed class count, 0..K-1.
  const std::vector<double>& values() const { return values_; }
  bool fixed() const { return fixed_; }

  // One line for people, e.g. "a9a: -1 -> -1, 1 -> +1 (binary: the larger value is +1)" or
  // "train.csv: 10 classes, 1..10 -> 0..9".
  std::string Describe() const;
  // Exact text of the map, for the run id (every value in full precision).
  std::string Canonical() const;

 private:
  // "classes 1..6" / "labels -1, 1": what the training data holds, for messages.
  std::string Holds() const;
  std::string FailurePrefix(const Dataset& data, const std::string& name) const;

  LabelTarget target_ = LabelTarget::kRaw;
  std::vector<double> values_;
  bool fixed_ = false;
  std::vector<int> absent_;  // fixed classes that the training data lacks
  std::string name_;         // the training data, as messages call it
};

// A number as a person writes it: "1", "-1", "3.5", "1e+20" (the shortest text that reads back
// the same double).
std::string LabelText(double value);

}  // namespace starling::algorithms
