// Spectral quantities of mixing and Laplacian matrices. Input must be square, non-empty and
// symmetric (to 1e-10 relative); otherwise std::invalid_argument. Dense eigensolver: O(n^3).
#pragma once

#include <Eigen/Core>

namespace starling::topology {

// Mixing rate alpha = ||W - 11^T/n||_2 (< 1 for a connected graph with MH weights).
double MixingRate(const Eigen::MatrixXd& w);

struct LaplacianSpectrum {
  // Second smallest eigenvalue: the smallest non-zero one for a connected graph, ~0 for a
  // disconnected one. Rounding below 0 is reported as 0.
  double lambda2 = 0.0;
  double lambda_max = 0.0;
  double eigengap_ratio() const { return lambda_max > 0 ? lambda2 / lambda_max : 0.0; }
};
// Eigenvalues of a symmetric PSD Laplacian-like matrix with kernel span(1).
LaplacianSpectrum LaplacianEigen(const Eigen::MatrixXd& laplacian);

}  // namespace starling::topology
