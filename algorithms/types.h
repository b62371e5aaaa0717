// Numeric types shared by the pure layers.
#pragma once

#include <Eigen/Core>
#include <Eigen/SparseCore>

namespace starling {

using Vec = Eigen::VectorXd;
// Row-major so that selecting a sample (a row) is contiguous for both dense and sparse data.
using DenseMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using SparseMatrix = Eigen::SparseMatrix<double, Eigen::RowMajor>;

}  // namespace starling
