// Step-size schedules of the stochastic methods (SwarmSGD and its variants, D-PSGD, CHOCO-SGD):
// the step of gradient step t (t = 0, 1, ... counted by the node: its local steps for the
// pairwise methods, its iterations for the round-based ones) is eta * Multiplier(t), with eta
// the resolved --step. Pure: no clock, no I/O; the same spec gives the same numbers on every
// node and in every driver, so the simulator and the daemons still agree bit for bit.
//
// Syntax of --step-schedule (one for every method): KIND[:KEY=VALUE[,KEY=VALUE...]]
//   constant                        m(s) = 1
//   inv-sqrt[:t0=T0]                m(s) = sqrt(T0 / (T0 + s))            (T0 >= 1, default 1)
//   step:every=N,factor=F           m(s) = F^floor(s / N)                 (N >= 1, 0 < F <= 1)
//   cosine[:T=N][,min=M]            m(s) = M + (1 - M) (1 + cos(pi min(s, N - W) / (N - W))) / 2
//                                   (N = the run's --iterations by default, N > W; 0 <= M <= 1)
// and every kind takes warmup=W (W >= 0, default 0): a linear warm-up over the first W steps,
//   m(t) = (t + 1) / W * base(0)   for t < W,    m(t) = base(t - W)   for t >= W,
// so the decay starts when the warm-up ends, and cosine's N counts from the start of the run
// (its step reaches M eta at t = N).
#pragma once

#include <cstdint>
#include <string>

namespace starling::algorithms {

enum class ScheduleKind { kConstant, kInvSqrt, kStepDecay, kCosine };

struct StepSchedule {
  ScheduleKind kind = ScheduleKind::kConstant;
  int64_t warmup = 0;   // W
  double t0 = 1.0;      // inv-sqrt
  int64_t every = 0;    // step decay: N
  double factor = 1.0;  // step decay: F
  int64_t horizon = 0;  // cosine: N (resolved: never 0 once parsed)
  double min = 0.0;     // cosine: M, as a fraction of eta

  // The multiplier of the step of gradient step t >= 0 (a value in [0, 1]).
  double Multiplier(int64_t t) const;
  // Every parameter spelt out in a fixed order at full precision, e.g.
  // "cosine:T=4000,min=0,warmup=200": equal for equal schedules (the run id).
  std::string Canonical() const;
  bool constant() const { return kind == ScheduleKind::kConstant && warmup == 0; }
};

// A method's step: eta and its schedule. At(t) is eta exactly for a constant schedule.
struct ScheduledStep {
  double eta = 0.0;
  StepSchedule schedule;
  double At(int64_t t) const { return eta * schedule.Multiplier(t); }
};

// Parses SPEC (syntax above). `default_horizon` is cosine's N when T is not given (the run's
// iterations). Throws std::invalid_argument with a message that names --step-schedule, quotes
// SPEC and says which part is wrong and what was expected.
StepSchedule ParseStepSchedule(const std::string& spec, int64_t default_horizon);

// The syntax above in one line, for --help.
const char* StepScheduleSyntax();

}  // namespace starling::algorithms
