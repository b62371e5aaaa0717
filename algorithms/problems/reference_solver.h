// Centralized reference solver: the optimum that decentralized runs are checked against comes
// from here, never from the algorithm under test.
#pragma once

#include "algorithms/problems/problem.h"

namespace starling::algorithms {

struct ReferenceSolution {
  Vec x;                   // the minimiser
  double value = 0.0;      // f(x)
  double grad_norm = 0.0;  // ||grad f(x)||_2
  int iterations = 0;
};

struct ReferenceOptions {
  // Relative to the problem's scale: the solve stops at ||grad f(x)|| <= grad_tol x
  // max(1, ||grad f(0)||), so that a problem in large units (least squares whose target is in
  // the 1e9s, ||grad f(0)|| ~ 1e12) is solved to the same relative accuracy as a unit one.
  double grad_tol = 1e-10;
  int max_iterations = 200;
};

// Minimises `problem` (strongly convex: l2 > 0, or least squares with a full-rank design):
// Newton's method with backtracking line search, the Newton system solved by conjugate gradients
// on Hessian-vector products (exact for least squares). Throws std::runtime_error if the
// tolerance (grad_tol x max(1, ||grad f(0)||)) is not reached within max_iterations.
ReferenceSolution SolveReference(const Problem& problem, const ReferenceOptions& options = {});

}  // namespace starling::algorithms
