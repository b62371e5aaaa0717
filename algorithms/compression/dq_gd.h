// Gradient descent over a rate-limited worker -> server channel (differential quantization;
// Lin, Kostina, Hassibi, arXiv:2002.02508). The worker sends R bits per coordinate per step; the
// quantizer's range shrinks geometrically, r_t = r_0 gamma^t, a schedule both ends know.
//   naive:        x_{t+1} = x_t - eta Q_t(grad f(x_t))        (server iterate = x_t)
//   differential: the worker keeps the server's iterate xh_t and the last error e_{t-1} (e_{-1}=0),
//                 x_t = xh_t + eta e_{t-1},  u_t = grad f(x_t) - e_{t-1},  q_t = Q_t(u_t),
//                 e_t = q_t - u_t,  xh_{t+1} = xh_t - eta q_t.
// [DERIVED] then x_{t+1} = x_t - eta grad f(x_t) exactly: x_t is unquantized GD and
// xh_t = x_t - eta e_{t-1}, so xh_t -> x* at the rate max(sigma_GD, gamma) while no coordinate
// saturates. The update rule is RECALLED, not checked against the paper's text
// (docs/results/compression.md). A pure state machine: no clock, no I/O.
#pragma once

#include <functional>

#include "algorithms/compression/range_quantizer.h"
#include "algorithms/types.h"

namespace starling::algorithms {

using GradientFn = std::function<void(const Vec& x, Vec* grad)>;

struct QuantizedGdOptions {
  double step = 0.0;    // eta > 0
  int bits = 8;         // R bits per coordinate
  double range0 = 1.0;  // r_0 > 0
  double gamma = 1.0;   // range shrink factor in (0, 1]
  bool differential = true;
};

class QuantizedGd {
 public:
  // Throws std::invalid_argument on a bad option.
  QuantizedGd(const QuantizedGdOptions& options, const Vec& x0);

  // One step: one gradient at the worker, one R-bit message, one server update.
  void Step(const GradientFn& gradient);

  // The server's iterate (xh_t; x_t for the naive method).
  const Vec& server_iterate() const { return server_; }
  // The worker's compensated point x_t (equal to the server iterate for the naive method).
  Vec worker_point() const;
  int steps() const { return steps_; }
  // Coordinates that fell outside the range so far (0 means every message was in range).
  long saturated() const { return saturated_; }
  // Bits sent so far: bits * dim per step.
  long long bits_sent() const { return bits_sent_; }

 private:
  QuantizedGdOptions options_;
  RangeQuantizer quantizer_;
  Vec server_;
  Vec error_;  // e_{t-1} (differential only)
  Vec grad_, u_, q_;
  double range_;
  int steps_ = 0;
  long saturated_ = 0;
  long long bits_sent_ = 0;
};

}  // namespace starling::algorithms
