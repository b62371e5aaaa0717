#include "topology/spectral.h"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace starling::topology {
namespace {

// Both functions rely on a symmetric eigensolver, which reads only one triangle: a non-symmetric
// input would give a silently wrong answer, so refuse it.
void RequireSymmetric(const Eigen::MatrixXd& m, const char* what) {
  if (m.rows() != m.cols() || m.rows() == 0) {
    throw std::invalid_argument(std::string(what) + ": matrix is " + std::to_string(m.rows()) +
                                "x" + std::to_string(m.cols()) + ", not square and non-empty");
  }
  const double scale = std::max(1.0, m.cwiseAbs().maxCoeff());
  if ((m - m.transpose()).cwiseAbs().maxCoeff() > 1e-10 * scale) {
    throw std::invalid_argument(std::string(what) + ": matrix is not symmetric");
  }
}

}  // namespace

double MixingRate(const Eigen::MatrixXd& w) {
  RequireSymmetric(w, "MixingRate");
  const Eigen::Index n = w.rows();
  const Eigen::MatrixXd centred = w - Eigen::MatrixXd::Constant(n, n, 1.0 / static_cast<double>(n));
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(centred, Eigen::EigenvaluesOnly);
  if (solver.info() != Eigen::Success) throw std::runtime_error("MixingRate: eigensolver failed");
  // For a symmetric matrix the spectral norm is the largest |eigenvalue|; they come sorted.
  const Eigen::VectorXd& ev = solver.eigenvalues();
  return std::max(std::abs(ev(0)), std::abs(ev(n - 1)));
}

LaplacianSpectrum LaplacianEigen(const Eigen::MatrixXd& laplacian) {
  RequireSymmetric(laplacian, "LaplacianEigen");
  const Eigen::Index n = laplacian.rows();
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(laplacian, Eigen::EigenvaluesOnly);
  if (solver.info() != Eigen::Success) {
    throw std::runtime_error("LaplacianEigen: eigensolver failed");
  }
  const Eigen::VectorXd& ev = solver.eigenvalues();  // ascending
  LaplacianSpectrum spectrum;
  // The input is PSD; negative values are rounding around 0 and are reported as 0.
  spectrum.lambda2 = n >= 2 ? std::max(0.0, ev(1)) : 0.0;
  spectrum.lambda_max = std::max(0.0, ev(n - 1));
  return spectrum;
}

}  // namespace starling::topology
