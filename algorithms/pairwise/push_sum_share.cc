#include "algorithms/pairwise/push_sum_share.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace starling::algorithms {
namespace {

void CheckShare(double w, const char* what) {
  if (!(std::isfinite(w) && w > 0.0)) {
    throw std::invalid_argument(std::string("push-sum share: ") + what + " " + std::to_string(w) +
                                " is not a finite positive number");
  }
}

}  // namespace

double ShareMergeCoefficient(double mine, double theirs) {
  CheckShare(mine, "this node's share");
  CheckShare(theirs, "the partner's share");
  return theirs / (mine + theirs);
}

double MergedShare(double mine, double theirs) {
  CheckShare(mine, "this node's share");
  CheckShare(theirs, "the partner's share");
  return 0.5 * (mine + theirs);
}

void AbsorbLeaverShare(const Vec& leaver, double leaver_share, Vec* x, double* share) {
  CheckShare(leaver_share, "the leaver's share");
  CheckShare(*share, "the receiver's share");
  if (leaver.size() != x->size()) {
    throw std::invalid_argument("push-sum share: the leaver's model has " +
                                std::to_string(leaver.size()) + " values, the receiver's " +
                                std::to_string(x->size()));
  }
  const double c = leaver_share / (*share + leaver_share);
  x->noalias() += c * (leaver - *x);
  *share += leaver_share;
}

Vec WeightedAverage(const std::vector<const Vec*>& models, const std::vector<double>& shares) {
  if (models.empty() || models.size() != shares.size()) {
    throw std::invalid_argument("push-sum share: " + std::to_string(models.size()) +
                                " models and " + std::to_string(shares.size()) + " shares");
  }
  Vec sum = Vec::Zero(models[0]->size());
  double total = 0.0;
  for (size_t i = 0; i < models.size(); ++i) {
    CheckShare(shares[i], "a node's share");
    if (models[i]->size() != sum.size()) {
      throw std::invalid_argument("push-sum share: models of different sizes");
    }
    sum.noalias() += shares[i] * *models[i];
    total += shares[i];
  }
  return sum / total;
}

Vec CrashShift(const std::vector<const Vec*>& models, const std::vector<double>& shares,
               size_t lost) {
  if (lost >= models.size() || models.size() < 2) {
    throw std::invalid_argument("push-sum share: no node " + std::to_string(lost) + " among " +
                                std::to_string(models.size()) + " to lose");
  }
  std::vector<const Vec*> kept_models;
  std::vector<double> kept_shares;
  for (size_t i = 0; i < models.size(); ++i) {
    if (i == lost) continue;
    kept_models.push_back(models[i]);
    kept_shares.push_back(shares[i]);
  }
  return WeightedAverage(kept_models, kept_shares) - WeightedAverage(models, shares);
}

}  // namespace starling::algorithms
