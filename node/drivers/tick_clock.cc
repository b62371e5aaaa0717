#include "node/drivers/tick_clock.h"

#include <cmath>
#include <stdexcept>

namespace starling::node {

TickClock::TickClock(int64_t mean_us, bool poisson, uint64_t seed)
    : mean_us_(mean_us), poisson_(poisson), rng_(seed) {
  if (mean_us_ <= 0) throw std::invalid_argument("tick clock: the mean gap must be positive");
}

int64_t TickClock::NextGapUs() {
  if (!poisson_) return mean_us_;
  // 53 random bits shifted into (0, 1], so that the logarithm is finite.
  const double u = (static_cast<double>(rng_() >> 11) + 1.0) * 0x1.0p-53;
  const double gap = -std::log(u) * static_cast<double>(mean_us_);
  return gap < 1.0 ? 1 : static_cast<int64_t>(std::llround(gap));
}

}  // namespace starling::node
