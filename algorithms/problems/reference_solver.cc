#include "algorithms/problems/reference_solver.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace starling::algorithms {
namespace {

constexpr double kArmijo = 1e-4;  // sufficient-decrease constant
constexpr int kMaxHalvings = 60;  // 2^-60: the direction is useless long before
// Below this relative size, a predicted decrease of f is lost in the rounding of f itself (a
// sum of up to ~1e5 terms), so the line search judges the step by the gradient norm instead.
constexpr double kValueNoise = 1e-12;

[[noreturn]] void Fail(const Problem& problem, const std::string& what) {
  throw std::runtime_error("reference solver on " + problem.name() + " problem: " + what);
}

std::string Num(double v) {
  std::ostringstream out;
  out.precision(3);
  out << v;
  return out.str();
}

// Approximately solves H p = -g by conjugate gradients on Hessian-vector products at x, to
// ||H p + g|| <= tolerance or max_iterations. Stops early on non-positive curvature (only
// possible through rounding for the convex problems here), keeping the last descent iterate.
Vec NewtonDirection(const Problem& problem, const Vec& x, const Vec& g, double tolerance,
                    int max_iterations) {
  Vec p = Vec::Zero(g.size());
  Vec r = -g;  // residual -g - H p
  Vec z = r;   // search direction
  Vec hz;
  double rr = r.squaredNorm();
  for (int k = 0; k < max_iterations && std::sqrt(rr) > tolerance; ++k) {
    problem.HessianVector(x, z, &hz);
    const double curvature = z.dot(hz);
    if (!(curvature > 0.0)) {
      if (k == 0) p = -g;
      break;
    }
    const double alpha = rr / curvature;
    p += alpha * z;
    r -= alpha * hz;
    const double rr_next = r.squaredNorm();
    z = r + (rr_next / rr) * z;
    rr = rr_next;
  }
  return p;
}

}  // namespace

ReferenceSolution SolveReference(const Problem& problem, const ReferenceOptions& options) {
  if (!(options.grad_tol > 0.0) || options.max_iterations < 0) {
    Fail(problem, "needs grad_tol > 0 and max_iterations >= 0");
  }
  const int d = problem.dim();
  // In exact arithmetic CG ends within d steps; rounding can cost a few more.
  const int max_cg = 2 * d + 50;

  ReferenceSolution solution;
  Vec& x = solution.x;
  x = Vec::Zero(d);
  double f = problem.Value(x);
  Vec g;
  problem.Gradient(x, &g);
  double g_norm = g.norm();
  const double tolerance = options.grad_tol * std::max(1.0, g_norm);
  Vec trial, g_trial;

  for (int iteration = 0;; ++iteration) {
    if (!std::isfinite(f) || !std::isfinite(g_norm)) {
      Fail(problem, "non-finite value or gradient at iteration " + std::to_string(iteration));
    }
    if (g_norm <= tolerance) {
      solution.value = f;
      solution.grad_norm = g_norm;
      solution.iterations = iteration;
      return solution;
    }
    if (iteration == options.max_iterations) {
      Fail(problem, "||grad|| = " + Num(g_norm) + " > " + Num(tolerance) + " after " +
                        std::to_string(iteration) + " Newton iterations");
    }

    // Inexact Newton with forcing term min(0.5, sqrt(||g||)): loose solves far away, superlinear
    // convergence near the optimum. Solving further than half the target gradient is wasted.
    const double forcing = std::min(0.5, std::sqrt(g_norm));
    const double cg_tolerance = std::max(forcing * g_norm, 0.5 * tolerance);
    Vec p = NewtonDirection(problem, x, g, cg_tolerance, max_cg);
    double slope = g.dot(p);
    if (!(slope < 0.0)) {  // rounding only; fall back to steepest descent
      p = -g;
      slope = -g_norm * g_norm;
    }

    bool accepted = false;
    double step = 1.0;
    for (int halving = 0; halving <= kMaxHalvings && !accepted; ++halving, step *= 0.5) {
      trial = x + step * p;
      const double f_trial = problem.Value(trial);
      if (!std::isfinite(f_trial)) continue;
      if (-step * slope > kValueNoise * std::max(1.0, std::abs(f))) {
        accepted = f_trial <= f + kArmijo * step * slope;
        if (accepted) problem.Gradient(trial, &g_trial);
      } else {
        problem.Gradient(trial, &g_trial);
        accepted = g_trial.norm() < g_norm;
      }
      if (accepted) f = f_trial;
    }
    if (!accepted) {
      Fail(problem, "line search failed at iteration " + std::to_string(iteration) +
                        " with ||grad|| = " + Num(g_norm) +
                        " (grad_tol may be below the attainable accuracy)");
    }
    x.swap(trial);
    g.swap(g_trial);
    g_norm = g.norm();
  }
}

}  // namespace starling::algorithms
