#include "algorithms/problems/gradient_oracle.h"

#include <sstream>
#include <stdexcept>

namespace starling::algorithms {

std::string GradientOracle::SaveEngine() const {
  std::ostringstream s;
  s << rng_;
  return s.str();
}

void GradientOracle::LoadEngine(const std::string& engine, double passes) {
  std::istringstream s(engine);
  std::mt19937_64 rng;
  s >> rng;
  if (!s) throw std::invalid_argument("checkpoint: malformed random engine state");
  rng_ = rng;
  passes_ = passes;
}

GradientOracle::GradientOracle(const Problem* problem, int batch_size, uint64_t seed)
    : problem_(problem), batch_size_(batch_size), rng_(seed) {}

void GradientOracle::Compute(const Vec& x, Vec* g) {
  if (batch_size_ <= 0) {
    problem_->Gradient(x, g);
    passes_ += 1.0;
    return;
  }
  const int m = problem_->num_samples();
  batch_.resize(batch_size_);
  // Drawn by hand rather than with uniform_int_distribution, whose output is library-specific:
  // a daemon and a simulator built by different compilers must still draw the same batches.
  for (int& b : batch_) b = static_cast<int>(rng_() % static_cast<uint64_t>(m));
  problem_->BatchGradient(x, batch_, g);
  passes_ += static_cast<double>(batch_size_) / m;
}

void GradientOracle::ComputeOn(const Vec& x, const std::vector<int>& rows, Vec* g) {
  if (rows.empty()) {
    g->setZero(problem_->dim());
    return;
  }
  const int m = problem_->num_samples();
  if (batch_size_ <= 0) {
    problem_->BatchGradient(x, rows, g);
    passes_ += static_cast<double>(rows.size()) / m;
    return;
  }
  batch_.resize(batch_size_);
  const uint64_t size = rows.size();
  for (int& b : batch_) b = rows[rng_() % size];  // by hand, as in Compute
  problem_->BatchGradient(x, batch_, g);
  passes_ += static_cast<double>(batch_size_) / m;
}

}  // namespace starling::algorithms
