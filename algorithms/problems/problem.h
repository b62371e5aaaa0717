// A node's local objective over its data shard.
//
// Normalisation (docs/how-to/own-data.md): node i with m_i of the M samples has
//   f_i(x) = s * sum_{z in shard} l(x; z) + (lambda/2) ||x||^2,
// where s is the loss scale. With s = N/M on every node, (1/N) sum_i f_i is exactly the
// centralized objective (1/M) sum_z l(x; z) + (lambda/2)||x||^2, whatever the partition, so a
// decentralized run converges to the centralized solver's model. The centralized problem is the
// same class over all the data with s = 1/M.
//
// Threading: const methods are safe to call concurrently. Problems own their shard's data.
// Output vectors (grad, out) must not alias an input vector.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "algorithms/types.h"

namespace starling::algorithms {

class Problem {
 public:
  virtual ~Problem() = default;

  virtual std::string name() const = 0;
  // Dimension of the model vector x.
  virtual int dim() const = 0;
  // Number of samples in the shard (m_i).
  virtual int num_samples() const = 0;
  virtual double l2() const = 0;
  virtual double loss_scale() const = 0;

  // f_i(x).
  virtual double Value(const Vec& x) const = 0;
  // grad f_i(x), written into *grad (resized to dim()).
  virtual void Gradient(const Vec& x, Vec* grad) const = 0;
  // Unbiased mini-batch estimate of grad f_i(x) from the shard rows in `samples` (repetitions
  // allowed): s * (m_i / |B|) * sum_{b in B} grad l(x; z_b) + lambda x. Empty `samples` is an
  // error.
  virtual void BatchGradient(const Vec& x, const std::vector<int>& samples, Vec* grad) const = 0;
  // Hessian-vector product: (hess f_i(x)) v.
  virtual void HessianVector(const Vec& x, const Vec& v, Vec* out) const = 0;
  // Upper bound on the smoothness constant of f_i, computed deterministically from the data so
  // that every process that holds the same shard computes the same number.
  virtual double SmoothnessBound() const = 0;
  // Exact minimiser of f_i(z) - <shift, z> + (mu/2)||z - center||^2, where one exists in closed
  // form (least squares). Returns false when the problem has no exact solve.
  virtual bool SolveProximal(const Vec& shift, double mu, const Vec& center, Vec* out) const {
    (void)shift, (void)mu, (void)center, (void)out;
    return false;
  }
  // Fraction of this shard's samples that model x classifies correctly; nullopt for regression.
  virtual std::optional<double> Accuracy(const Vec& x) const = 0;
};

}  // namespace starling::algorithms
