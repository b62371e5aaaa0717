// --slow-node NODE:FACTOR[,NODE:FACTOR...]: stragglers (docs/results/stragglers.md). Every node of
// a run is given the same list (the launchers pass one command line to all); node NODE then takes
// FACTOR times as long for each of its local steps (pairwise) or rounds (round-based).
//
// What "FACTOR times as long" is, in each driver:
//  - starlingd (node/daemon/node_runtime.cc, SimulatedCompute): after the step's computation
//    (and --compute-delay-ms, if given), the node serves its neighbours for a further
//    (FACTOR - 1) x the time the step took, measured, before it takes the next one. Measured,
//    not fixed: "4 times slower" then means the same on a9a and on a small least-squares
//    instance, on a fast machine and a loaded one, which a fixed delay per step would not. The
//    node keeps answering exchanges and RESENDs meanwhile (a slow device, not a dead link).
//  - starling-sim, pairwise methods: each activation picks node i with probability proportional
//    to 1/FACTOR_i (independent Poisson clocks of rate 1/FACTOR), so the node does FACTOR times
//    fewer local steps per unit of simulated time than the others.
//  - starling-sim, round-based methods: refused; the lockstep simulator has no time (every node
//    waits for the slowest at every step anyway, so a straggler changes nothing it reports).
//
// The list is not part of the run id: it changes when steps happen, not what they compute.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace starling::node {

// The (NODE, FACTOR) items of the list, checked as far as possible without the node count (the
// daemon learns it from the cluster file later). Throws std::invalid_argument naming --slow-node
// and quoting the bad item: not NODE:FACTOR, NODE not an integer >= 0, FACTOR not a finite number
// >= 1, or a node given twice.
std::vector<std::pair<int, double>> ParseSlowNodes(const std::string& spec);

// One factor per node (1 = not slowed) for `nodes` nodes; also throws (naming --slow-node and
// --nodes) for a NODE not in [0, nodes).
std::vector<double> SlowFactors(const std::string& spec, int nodes);

// True if any factor is not 1.
bool AnySlow(const std::vector<double>& factors);

}  // namespace starling::node
