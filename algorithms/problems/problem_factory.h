// Builds a Problem by name. The one place that knows every problem kind.
#pragma once

#include <memory>
#include <string>

#include "algorithms/data/dataset.h"
#include "algorithms/problems/problem.h"

namespace starling::algorithms {

struct ProblemSpec {
  // "logistic" (binary, L2-regularized), "multinomial" (softmax, L2), "least-squares", "mlp"
  // (one hidden ReLU layer and a softmax output; needs num_classes like "multinomial").
  std::string kind = "logistic";
  double l2 = 0.0;
  // The full data's number of classes (Dataset::NumClasses() of the whole set, never of a
  // shard), so that every node builds the same model. "multinomial": K >= 2, required.
  // "logistic": 0 or 2 for binary labels, K >= 3 to split classes 0..K-1 into halves (see
  // MakeBinaryLabels). Ignored by "least-squares".
  int num_classes = 0;
  // "mlp": hidden units of its one hidden layer.
  int hidden = 64;
};

// Names accepted by ProblemSpec::kind, for --help.
const char* ProblemKinds();

// Binary logistic regression needs labels +-1. The mapping depends only on each label's value
// and on `num_classes`, never on which labels the data happens to contain, so every shard of a
// data set maps exactly as the whole set would (a shard holding only classes 0 and 1 of
// Fashion-MNIST must not be mistaken for 0/1 binary data):
//  - num_classes 0 or 2 (binary data): -1 and 0 map to -1, +1 stays +1. Any other label, or -1
//    and 0 both present (two encodings mixed), is an error.
//  - num_classes K >= 3: labels must be integers in [0, K); the lower floor(K/2) classes
//    (label < K/2) map to -1, the rest to +1 (Fashion-MNIST, K = 10: classes 0-4 vs 5-9).
//  - num_classes 1 or negative is an error.
// Throws std::runtime_error naming data->source and the offending sample; *data is unchanged then.
void MakeBinaryLabels(Dataset* data, int num_classes = 0);

// Builds the problem over `shard` with f(x) = loss_scale * sum l + (l2/2)||x||^2 (problem.h).
// "logistic" applies MakeBinaryLabels(&shard, spec.num_classes) itself, so callers pass raw
// labels. Throws std::runtime_error with a message naming the problem kind and the data on bad
// input (unknown kind, labels that do not fit the kind, non-finite values, l2 < 0,
// loss_scale <= 0, an empty shard).
std::unique_ptr<Problem> MakeProblem(const ProblemSpec& spec, Dataset shard, double loss_scale);

}  // namespace starling::algorithms
