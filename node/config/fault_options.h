// The --fault-* command-line options shared by starlingd and starling-sim, and the FaultPlan
// they describe (net/fault_plan.h).
//
// Units: delays in milliseconds and partition windows in seconds. starlingd reads them on the
// wall clock since the node started; starling-sim on its simulated clock (see
// node/sim/faulty_round_simulator.h and node/sim/faulty_pairwise_simulator.h for what a simulated
// millisecond is).
#pragma once

#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "net/fault_plan.h"

namespace starling::node {

struct FaultOptions {
  double loss = 0, dup = 0, reorder = 0, delay_ms = 0, jitter_ms = 0;
  std::vector<std::string> partitions;  // each "A|B@T0-T1[;...]"
  std::vector<std::string> links;       // each "U-V:loss=P,..."
  uint64_t seed = 1;
};

void AddFaultOptions(boost::program_options::options_description* options, FaultOptions* f);

// Validates and converts; throws std::invalid_argument naming the option.
net::FaultPlan BuildFaultPlan(const FaultOptions& f);

}  // namespace starling::node
