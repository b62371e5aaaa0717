#include "node/report/model_spread.h"

#include <stdexcept>

namespace starling::node {

ModelSpread SpreadOf(const std::vector<const Vec*>& models) {
  if (models.empty()) throw std::invalid_argument("SpreadOf: no models");
  ModelSpread s;
  s.mean = Vec::Zero(models[0]->size());
  for (const Vec* m : models) s.mean += *m;
  s.mean /= static_cast<double>(models.size());
  for (const Vec* m : models) s.consensus += (*m - s.mean).squaredNorm();
  s.consensus /= static_cast<double>(models.size());
  return s;
}

}  // namespace starling::node
