#include "node/sim/bregman_gap.h"

#include <cmath>
#include <stdexcept>

namespace starling::node {

BregmanGap::BregmanGap(const RunSetup& setup) : setup_(setup) {
  const int n = static_cast<int>(setup.problems.size());
  grad_at_star_.resize(n);
  for (int i = 0; i < n; ++i) {
    const algorithms::Problem* p = setup.problems[i].get();
    if (p == nullptr) throw std::logic_error("BregmanGap: node problems were not built");
    value_at_star_ += p->Value(setup.x_star);
    p->Gradient(setup.x_star, &grad_at_star_[i]);
    linear_at_star_ += grad_at_star_[i].dot(setup.x_star);
  }
}

double BregmanGap::ModelPart(const std::function<const Vec*(int)>& model_of) const {
  double sum = 0.0;
  for (size_t i = 0; i < grad_at_star_.size(); ++i) {
    const Vec& x = *model_of(static_cast<int>(i));
    sum += setup_.problems[i]->Value(x) - grad_at_star_[i].dot(x);
  }
  return sum;
}

double BregmanGap::At(const std::function<const Vec*(int)>& model_of) const {
  // sum_i f_i(x_i) - f_i(x*) - <grad f_i(x*), x_i - x*>, with the constant part
  // sum_i f_i(x*) - <grad f_i(x*), x*> subtracted once at the end.
  return std::abs(ModelPart(model_of) - (value_at_star_ - linear_at_star_));
}

double BregmanGap::EvaluateMAt(const std::function<const Vec*(int)>& model_of) const {
  return std::abs(ModelPart(model_of) - value_at_star_);
}

}  // namespace starling::node
