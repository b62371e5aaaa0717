#include "algorithms/problems/problem_factory.h"

#include <cmath>
#include <stdexcept>
#include <utility>

#include "algorithms/problems/design_matrix.h"
#include "algorithms/problems/least_squares.h"
#include "algorithms/problems/logistic_regression.h"
#include "algorithms/problems/mlp.h"
#include "algorithms/problems/multinomial_regression.h"

namespace starling::algorithms {

const char* ProblemKinds() {
  return "logistic, multinomial, least-squares, mlp (one hidden ReLU layer, non-convex)";
}

void MakeBinaryLabels(Dataset* data, int num_classes) {
  const auto fail = [data](const std::string& what) {
    throw std::runtime_error(DataName(*data) + ": " + what);
  };
  const auto label_at = [data](int i) {
    return "label " + std::to_string(data->labels[i]) + " of sample " + std::to_string(i);
  };
  if (num_classes == 1 || num_classes < 0) {
    fail("binary labels need num_classes 0 or 2 (binary data) or >= 3, got " +
         std::to_string(num_classes));
  }
  Vec mapped(data->labels.size());
  if (num_classes >= 3) {
    for (int i = 0; i < data->num_samples(); ++i) {
      const double y = data->labels[i];
      if (!(y == std::floor(y) && y >= 0.0 && y < num_classes)) {
        fail(label_at(i) + " is not a class in [0, " + std::to_string(num_classes) + ")");
      }
      // Integer division: for odd K the middle class goes to the upper half.
      mapped[i] = y < num_classes / 2 ? -1.0 : 1.0;
    }
  } else {
    int first_minus_one = -1;
    int first_zero = -1;
    for (int i = 0; i < data->num_samples(); ++i) {
      const double y = data->labels[i];
      if (y == -1.0 && first_minus_one < 0) first_minus_one = i;
      if (y == 0.0 && first_zero < 0) first_zero = i;
      if (y != -1.0 && y != 0.0 && y != 1.0) {
        fail(label_at(i) +
             " is not binary (-1/+1 or 0/1); for multi-class data pass the number of classes "
             "(>= 3) to split the classes into halves");
      }
      mapped[i] = y == 1.0 ? 1.0 : -1.0;
    }
    if (first_minus_one >= 0 && first_zero >= 0) {
      fail("labels mix the -1/+1 and 0/1 encodings (" + label_at(first_minus_one) + ", " +
           label_at(first_zero) + ")");
    }
  }
  data->labels = std::move(mapped);
}

std::unique_ptr<Problem> MakeProblem(const ProblemSpec& spec, Dataset shard, double loss_scale) {
  if (spec.kind == "logistic") {
    try {
      MakeBinaryLabels(&shard, spec.num_classes);
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(std::string("logistic problem on ") + e.what());
    }
    return std::make_unique<LogisticRegression>(std::move(shard), spec.l2, loss_scale);
  }
  if (spec.kind == "multinomial") {
    return std::make_unique<MultinomialRegression>(std::move(shard), spec.num_classes, spec.l2,
                                                   loss_scale);
  }
  if (spec.kind == "mlp") {
    return std::make_unique<Mlp>(std::move(shard), spec.num_classes, spec.hidden, spec.l2,
                                 loss_scale);
  }
  if (spec.kind == "least-squares") {
    return std::make_unique<LeastSquares>(std::move(shard), spec.l2, loss_scale);
  }
  throw std::runtime_error("unknown problem kind '" + spec.kind + "' for " + DataName(shard) +
                           " (known: " + ProblemKinds() + ")");
}

}  // namespace starling::algorithms
