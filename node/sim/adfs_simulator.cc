#include "node/sim/adfs_simulator.h"

#include <algorithm>

namespace starling::node {

double AdfsSimulator::LatestTime() const {
  double t = 0;
  for (const auto& a : algorithms_) t = std::max(t, a->now());
  return t;
}

void AdfsSimulator::AdvanceAllTo(double t) {
  t = std::max(t, LatestTime());
  for (auto& a : algorithms_) a->AdvanceTo(t);
}

}  // namespace starling::node
