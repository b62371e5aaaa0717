// Builds a Problem by name. The one place that knows every problem kind.
#pragma once

#include <memory>
#include <string>

#include "algorithms/data/dataset.h"
#include "algorithms/data/label_map.h"
#include "algorithms/problems/problem.h"

namespace starling::algorithms {

struct ProblemSpec {
  // "logistic" (binary, L2-regularized), "multinomial" (softmax, L2), "least-squares", "mlp"
  // (one hidden ReLU layer and a softmax output; needs num_classes like "multinomial").
  std::string kind = "logistic";
  double l2 = 0.0;
  // The number of classes K of the whole training data (LabelMap::num_classes(), never of a
  // shard), so that every node builds the same model. "multinomial" and "mlp": K >= 2,
  // required. "logistic": 0 or 2. Ignored by "least-squares".
  int num_classes = 0;
  // "mlp": hidden units of its one hidden layer.
  int hidden = 64;
};

// Names accepted by ProblemSpec::kind, for --help.
const char* ProblemKinds();

// What the labels of a problem kind must become (label_map.h): +-1 for "logistic", classes
// 0..K-1 for "multinomial" and "mlp", raw values for "least-squares". Throws std::runtime_error
// for an unknown kind, naming `data_name`.
LabelTarget LabelTargetOf(const std::string& kind, const std::string& data_name);

// Builds the problem over `shard` with f(x) = loss_scale * sum l + (l2/2)||x||^2 (problem.h).
// The labels must already be the problem's (LabelMap::Apply of the whole training data's map):
// +-1 for "logistic", integers in [0, num_classes) for "multinomial" and "mlp". Throws
// std::runtime_error with a message naming the problem kind and the data on bad input (unknown
// kind, labels that do not fit the kind, non-finite values, l2 < 0, loss_scale <= 0, an empty
// shard).
std::unique_ptr<Problem> MakeProblem(const ProblemSpec& spec, Dataset shard, double loss_scale);

}  // namespace starling::algorithms
