// Round-based methods over the C ABI (capi/starling.h, "Round-based methods"): the gradients
// of the caller's objective, handed to the daemon's own round-based algorithm (DGD/D-PSGD,
// gradient tracking: algorithms/round/) through a Problem whose Gradient asks the caller.
//
// The node's thread runs the algorithm as starlingd does (RoundNode, RoundSynchronizer). Where
// the algorithm computes grad f_i(x), ExternalProblem::Gradient publishes x as the iterate and
// blocks until the training thread has given the gradient at it (GradientHandover::Give), just
// as the built-in problem's gradient occupies the node's thread while it is computed. The
// training thread reads the iterate into its buffer (WaitIterate) and gives the gradient from
// its own buffer; neither buffer is kept: both are copied under the mutex, inside the call.
//
// Thread safety: every method may be called from any thread; one mutex guards the state. The
// node's thread calls Request/SetFinal/End, the training thread WaitIterate/Give/Interrupt.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/problems/gradient_interrupted.h"
#include "algorithms/problems/problem.h"
#include "algorithms/types.h"

namespace starling::capi {

class GradientHandover {
 public:
  enum class Wait {
    kIterate,   // the node asks for the gradient at the iterate now in the buffer
    kDone,      // the run's iterations are done: the buffer holds the final model
    kEnded,     // the node's loop ended without a final model (stopped, or an error)
    kTimedOut,  // nothing changed
  };

  // Node's thread: publishes x and waits for the caller's gradient into *g. Throws
  // algorithms::GradientInterrupted once Interrupt() has been called.
  void Request(const Vec& x, Vec* g);
  // Node's thread: the run's final model (RoundNode::Finish); WaitIterate returns kDone after it.
  void SetFinal(const Vec& x);
  // Node's thread: the loop has ended (WaitIterate returns kEnded unless a request or the final
  // model is waiting).
  void End();

  // Training thread: waits at most `timeout` (forever if negative) for the node's next request
  // or the end. kIterate: the iterate is written into `buffer` (n values of type T).
  template <typename T>
  Wait WaitIterate(T* buffer, size_t n, std::chrono::milliseconds timeout, double* waited_seconds);
  // Training thread: the gradient at the iterate WaitIterate last wrote; copied at once. False
  // (nothing taken) if the node is not waiting for one, or the gradient is not finite
  // (*why says which).
  template <typename T>
  bool Give(const T* gradient, size_t n, std::string* why);
  // Training thread: the node's final model into `buffer`, if the run ended with one.
  template <typename T>
  bool TakeFinal(T* buffer, size_t n);
  // Training thread (starling_stop): a waiting or later Request throws GradientInterrupted.
  void Interrupt();
  // A request is waiting for the caller (starling_start returns once the node is built, or once
  // its algorithm's constructor asks for the gradient at the starting point: gradient tracking).
  bool Requested() const;
  // Gradients the node has taken.
  int64_t taken() const;
  bool has_final() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  Vec x_, g_, final_;
  bool requested_ = false;  // the node waits in Request for the gradient at x_
  bool seen_ = false;       // the caller has x_ (WaitIterate returned it)
  bool given_ = false;      // g_ holds the caller's gradient at x_
  bool interrupted_ = false, has_final_ = false, ended_ = false;
  int64_t taken_ = 0;
};

// The caller's objective as the node's problem: Gradient and BatchGradient (the caller draws
// its own mini-batch: the samples the algorithm's oracle drew are ignored) ask the caller
// through the hand-over; everything else (values, Hessians, smoothness) is unknown and throws
// std::logic_error, so a method that would need it is refused before it runs
// (IsExternalRoundMethod).
class ExternalProblem : public algorithms::Problem {
 public:
  // `handover` is not owned and outlives this object.
  ExternalProblem(int dim, GradientHandover* handover) : dim_(dim), handover_(handover) {}

  std::string name() const override { return "external"; }
  int dim() const override { return dim_; }
  // One "sample": GradientOracle's mini-batch draws then cost nothing and mean nothing.
  int num_samples() const override { return 1; }
  double l2() const override { return 0.0; }
  double loss_scale() const override { return 1.0; }
  double Value(const Vec& x) const override;
  void Gradient(const Vec& x, Vec* grad) const override { handover_->Request(x, grad); }
  void BatchGradient(const Vec& x, const std::vector<int>& /*samples*/, Vec* grad) const override {
    handover_->Request(x, grad);
  }
  void HessianVector(const Vec& x, const Vec& v, Vec* out) const override;
  double SmoothnessBound() const override;
  std::optional<double> Accuracy(const Vec&) const override { return std::nullopt; }

 private:
  int dim_;
  GradientHandover* handover_;
};

// The round-based methods that need nothing but gradients at their iterates, the ones the C ABI
// runs: dgd, dpsgd, gradient-tracking.
bool IsExternalRoundMethod(const std::string& algorithm);
const char* ExternalRoundMethods();

template <typename T>
GradientHandover::Wait GradientHandover::WaitIterate(T* buffer, size_t n,
                                                     std::chrono::milliseconds timeout,
                                                     double* waited_seconds) {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto t0 = std::chrono::steady_clock::now();
  // A request not yet answered (a new one, or the one returned before: idempotent), or the end.
  const auto ready = [&] { return (requested_ && !given_) || has_final_ || ended_; };
  bool ok = true;
  if (timeout.count() < 0) {
    changed_.wait(lock, ready);
  } else {
    ok = changed_.wait_for(lock, timeout, ready);
  }
  *waited_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!ok) return Wait::kTimedOut;
  if (requested_ && !given_) {
    for (size_t i = 0; i < n; ++i) buffer[i] = static_cast<T>(x_[i]);
    seen_ = true;
    return Wait::kIterate;
  }
  if (has_final_) {
    for (size_t i = 0; i < n; ++i) buffer[i] = static_cast<T>(final_[i]);
    return Wait::kDone;
  }
  return Wait::kEnded;
}

template <typename T>
bool GradientHandover::Give(const T* gradient, size_t n, std::string* why) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!requested_ || !seen_ || given_) {
    *why = "the node is not waiting for a gradient (call starling_iterate first)";
    return false;
  }
  if (static_cast<size_t>(x_.size()) != n) {
    *why =
        "the gradient has " + std::to_string(n) + " values, the model " + std::to_string(x_.size());
    return false;
  }
  g_.resize(static_cast<Eigen::Index>(n));
  for (size_t i = 0; i < n; ++i) g_[i] = static_cast<double>(gradient[i]);
  if (!g_.allFinite()) {
    *why = "the gradient holds NaN or Inf";
    return false;
  }
  given_ = true;
  changed_.notify_all();
  return true;
}

template <typename T>
bool GradientHandover::TakeFinal(T* buffer, size_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!has_final_) return false;
  for (size_t i = 0; i < n; ++i) buffer[i] = static_cast<T>(final_[i]);
  return true;
}

}  // namespace starling::capi
