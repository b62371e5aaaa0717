// The churn model of starling-sim (docs/explanations/membership.md, "Nodes that come and go"):
// which nodes join, leave gracefully or crash, and when, from rates or from a trace file.
//
// Time is the run's global step count: t = (local steps of every node so far) / --nodes, the
// `iter` of the metrics; a run of --iterations T ends at t = T whoever is still in it.
// Node ids are slots 0..N-1 (N = --nodes): every slot is a member at t = 0, a leaver's slot is
// free until a node joins into it (with that slot's data shard, as a host that comes back or
// is replaced), and no more than N nodes are members at once.
//
// Rates (per unit of t, each a Poisson process): --churn-join-rate, --churn-leave-rate,
// --churn-crash-rate. An event's node is drawn when it comes due: a join takes a free slot, a
// leave or crash a member; an event with no such node, or one that would leave fewer than two
// members, is skipped and counted. A trace (--churn-trace FILE) gives the events instead, one a
// line: `T join|leave|crash NODE`, '#' starting a comment; read and replayed against the slots
// once, so a trace that names a member to join or a non-member to leave is refused with its
// line. The draws use their own generator seeded by --churn-seed, so churn never changes the
// activations' sequence by itself.
#pragma once

#include <boost/program_options.hpp>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace starling::node {

struct ChurnOptions {
  double join_rate = 0.0, leave_rate = 0.0, crash_rate = 0.0;
  std::string trace;
  uint64_t seed = 1;
  bool any() const { return join_rate > 0 || leave_rate > 0 || crash_rate > 0 || !trace.empty(); }
};

void AddChurnOptions(boost::program_options::options_description* options, ChurnOptions* c);

enum class ChurnKind { kJoin, kLeave, kCrash };
const char* ChurnKindName(ChurnKind kind);

struct ChurnEvent {
  double time = 0.0;
  ChurnKind kind = ChurnKind::kJoin;
  int node = -1;  // -1: drawn when the event comes due (rates)
};

// The events of a run of `nodes` slots up to time `horizon`, in time order (stable for equal
// times, as the trace lists them). Throws std::invalid_argument naming the option, or the trace
// file and line, for a negative rate, an unreadable or malformed trace, a node id out of range, or
// a trace event that does not fit the slots' membership at its time.
std::vector<ChurnEvent> BuildChurnEvents(const ChurnOptions& options, int nodes, double horizon);

// Parses a trace's text (`source` names it in errors); exposed for tests.
std::vector<ChurnEvent> ParseChurnTrace(const std::string& text, const std::string& source,
                                        int nodes);

}  // namespace starling::node
