#include "algorithms/round/neighbor_mix.h"

#include <stdexcept>
#include <string>

namespace starling::algorithms {

void MixSegment(const NodeSetup& setup, const Vec& self, const std::vector<const Vec*>& inbox,
                Eigen::Index offset, Eigen::Index len, Vec* out) {
  out->setZero(len);
  bool self_added = false;
  for (size_t k = 0; k < setup.neighbors.size(); ++k) {
    if (!self_added && setup.id < setup.neighbors[k]) {
      out->noalias() += setup.self_weight * self.segment(offset, len);
      self_added = true;
    }
    out->noalias() += setup.neighbor_weights[k] * inbox[k]->segment(offset, len);
  }
  if (!self_added) out->noalias() += setup.self_weight * self.segment(offset, len);
}

void CheckInbox(const NodeSetup& setup, const std::vector<const Vec*>& inbox,
                Eigen::Index expected_size) {
  if (inbox.size() != setup.neighbors.size()) {
    throw std::logic_error("node " + std::to_string(setup.id) + ": inbox has " +
                           std::to_string(inbox.size()) + " payloads for " +
                           std::to_string(setup.neighbors.size()) + " neighbours");
  }
  for (size_t k = 0; k < inbox.size(); ++k) {
    if (inbox[k] == nullptr || inbox[k]->size() != expected_size) {
      throw std::logic_error("node " + std::to_string(setup.id) + ": payload from neighbour " +
                             std::to_string(setup.neighbors[k]) + " has the wrong size");
    }
  }
}

}  // namespace starling::algorithms
