#include "node/daemon/catch_up_charge.h"

#include <algorithm>
#include <utility>

namespace starling::node {

CatchUpCharge::CatchUpCharge(double compute_delay_ms, double slow_factor)
    : delay_(std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double, std::milli>(compute_delay_ms))),
      factor_(slow_factor),
      active_(compute_delay_ms > 0 || slow_factor > 1.0) {}

void CatchUpCharge::HandlerBegins(int64_t steps, Clock::time_point now) {
  if (!active_) return;
  in_handler_ = true;
  steps_at_begin_ = steps;
  begin_ = now;
}

void CatchUpCharge::HandlerEnds(int64_t steps, Clock::time_point now) {
  if (!active_ || !in_handler_) return;
  in_handler_ = false;
  const int64_t n = steps - steps_at_begin_;
  if (n <= 0) return;
  // n steps of the main loop: the delay, then (factor - 1) x (measured time + delay).
  const Clock::duration delays = n * delay_;
  const Clock::duration owed = delays + std::chrono::duration_cast<Clock::duration>(
                                            (factor_ - 1.0) * ((now - begin_) + delays));
  owed_ += owed;
  steps_charged_ += n;
  seconds_charged_ += Seconds(owed);
}

bool CatchUpCharge::Holds(int64_t steps) const {
  if (!active_) return false;
  return owes() || (in_handler_ && steps > steps_at_begin_);
}

double CatchUpCharge::Pay(const ServeUntil& serve, const SendMessage& send,
                          const std::function<bool()>& stopped, Clock::duration max_serve) {
  if (!owes()) return 0.0;
  const Clock::time_point t0 = Clock::now();
  for (Clock::time_point now = t0; owed_ > Clock::duration::zero() && !stopped();
       now = Clock::now()) {
    const Clock::duration left = max_serve - (now - t0);  // no overflow at duration::max()
    if (left <= Clock::duration::zero()) break;           // the rest on the next call
    const Clock::duration span = std::min(owed_, left);
    owed_ -= span;
    serve(now + span);  // its handler calls may owe more
  }
  if (stopped()) owed_ = Clock::duration::zero();  // stopped: what is left is not paid
  if (owed_ > Clock::duration::zero()) return Seconds(Clock::now() - t0);  // messages still wait
  std::deque<ExchangeMessage> out;
  out.swap(deferred_);
  for (const ExchangeMessage& m : out) send(m);
  return Seconds(Clock::now() - t0);
}

std::optional<ExchangeMessage> CatchUpCharge::Tick(ExchangeDriver* driver, int64_t now_ms,
                                                   bool paced) const {
  if (owes()) return std::nullopt;
  return driver->Tick(now_ms, paced);
}

}  // namespace starling::node
