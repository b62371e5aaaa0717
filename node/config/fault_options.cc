#include "node/config/fault_options.h"

namespace starling::node {

namespace po = boost::program_options;

void AddFaultOptions(po::options_description* options, FaultOptions* f) {
  options->add_options()
      ("fault-loss", po::value(&f->loss)->default_value(f->loss),
       "fault injection: probability that a message on an edge is lost")
      ("fault-dup", po::value(&f->dup)->default_value(f->dup),
       "fault injection: probability that a message is delivered twice")
      ("fault-reorder", po::value(&f->reorder)->default_value(f->reorder),
       "fault injection: probability that a message is held back behind the next one")
      ("fault-delay-ms", po::value(&f->delay_ms)->default_value(f->delay_ms),
       "fault injection: fixed delay of every message (ms)")
      ("fault-jitter-ms", po::value(&f->jitter_ms)->default_value(f->jitter_ms),
       "fault injection: plus a uniform random delay in [0, this] (ms)")
      ("fault-partition", po::value(&f->partitions)->composing(),
       "fault injection: cut every edge between node sets A and B (empty B: all others) "
       "from T0 to T1 seconds, 'A|B@T0-T1', e.g. '0,1|2,3@2-6'; ';' or repeat for more")
      ("fault-link", po::value(&f->links)->composing(),
       "fault injection on one edge, overriding the above: "
       "'U-V:loss=P,dup=P,reorder=P,delay=MS,jitter=MS' (repeatable)")
      ("fault-seed", po::value(&f->seed)->default_value(f->seed),
       "seed of the fault decisions (each node draws its own stream from it)");
}

net::FaultPlan BuildFaultPlan(const FaultOptions& f) {
  net::FaultPlan plan;
  plan.defaults.loss = f.loss;
  plan.defaults.dup = f.dup;
  plan.defaults.reorder = f.reorder;
  plan.defaults.delay = f.delay_ms;
  plan.defaults.jitter = f.jitter_ms;
  net::ValidateLinkFaults(plan.defaults, "--fault-loss/--fault-dup/--fault-reorder/--fault-delay-ms");
  if (plan.defaults.loss >= 1.0) {
    throw std::invalid_argument("--fault-loss 1: every message would be lost");
  }
  for (const std::string& s : f.partitions) {
    for (auto& w : net::ParsePartitionSchedule(s, "--fault-partition")) {
      plan.partitions.push_back(std::move(w));
    }
  }
  for (const std::string& s : f.links) {
    auto [edge, faults] = net::ParseLinkFaults(s, "--fault-link");
    plan.links[edge] = faults;
  }
  plan.seed = f.seed;
  return plan;
}

}  // namespace starling::node
