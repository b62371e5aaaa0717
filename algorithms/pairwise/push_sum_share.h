// Push-sum shares: the rule that keeps the network's average when nodes come and go
// (docs/explanations/membership.md, "Nodes that come and go").
//
// Every node holds its model x_i and a share w_i > 0, 1 at the start. The network's average is
// the weighted one, x-bar = sum_i w_i x_i / sum_i w_i, which is the plain mean while every share
// is 1. Three operations keep both sums, sum_i w_i and sum_i w_i x_i, to rounding, and so the
// average:
//  - a merge of two nodes moves each to the shares' weighted mean of the two snapshots and gives
//    each the mean of the two shares: x_i += c_i (s_j - s_i) with c_i = w_j / (w_i + w_j), and
//    w_i, w_j <- (w_i + w_j) / 2. With equal shares c = 1/2 exactly, the plain pairwise merge;
//    unequal shares even out over later merges, so a node's gradient steps weigh as much as any
//    other's again;
//  - a leaving node's (w_l, x_l) is absorbed by a neighbour k: x_k += c (x_l - x_k) with
//    c = w_l / (w_k + w_l), w_k += w_l (the leaver's share of the average moves, none is lost);
//  - a joining node takes a donor's model and half its share: the donor keeps w/2 and the joiner
//    gets w/2 with the same model.
// A node that crashes takes its w_l x_l with it: the average moves by
// w_l (x_l - x-bar) / (sum w - w_l), which CrashShift reports.
//
// Pure functions over Eigen vectors; no state. Each throws std::invalid_argument for a share that
// is not finite and positive, or for vectors of different sizes.
#pragma once

#include <vector>

#include "algorithms/types.h"

namespace starling::algorithms {

// c_i = theirs / (mine + theirs): the fraction of the difference (s_j - s_i) node i moves by.
double ShareMergeCoefficient(double mine, double theirs);
// (mine + theirs) / 2: both nodes' share after a merge.
double MergedShare(double mine, double theirs);
// Node k absorbs a leaver: *x += c (leaver - *x), c = leaver_share / (*share + leaver_share);
// *share += leaver_share.
void AbsorbLeaverShare(const Vec& leaver, double leaver_share, Vec* x, double* share);
// sum_i shares[i] * models[i] / sum_i shares[i]; models non-empty, one share per model.
Vec WeightedAverage(const std::vector<const Vec*>& models, const std::vector<double>& shares);
// The average's shift when node `lost` of `models` leaves without handing its share on:
// the weighted average of the others minus that of all.
Vec CrashShift(const std::vector<const Vec*>& models, const std::vector<double>& shares,
               size_t lost);

}  // namespace starling::algorithms
