#include "algorithms/problems/problem_factory.h"

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

LabelTarget LabelTargetOf(const std::string& kind, const std::string& data_name) {
  if (kind == "logistic") return LabelTarget::kBinary;
  if (kind == "multinomial" || kind == "mlp") return LabelTarget::kClasses;
  if (kind == "least-squares") return LabelTarget::kRaw;
  throw std::runtime_error("unknown problem kind '" + kind + "' for " + data_name +
                           " (known: " + ProblemKinds() + ")");
}

std::unique_ptr<Problem> MakeProblem(const ProblemSpec& spec, Dataset shard, double loss_scale) {
  if (spec.kind == "logistic") {
    if (spec.num_classes != 0 && spec.num_classes != 2) {
      throw std::runtime_error("logistic problem on " + DataName(shard) +
                               ": logistic regression is binary, not " +
                               std::to_string(spec.num_classes) + " classes");
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
