// Fault injection for tests and experiments: which messages on which directed edge are
// lost, duplicated, delayed, held back behind a later one (reordered), or cut by a partition.
//
// A FaultPlan is plain configuration; a FaultInjector turns it into seeded decisions, one per
// message. The same classes drive the daemon's FaultyTransport (time in seconds since the node
// started) and the simulators (time in simulated ticks), so an experiment can be run in both.
// Pure logic: no socket, no clock, randomness only from the plan's seed.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace starling::net {

// What happens on one directed edge. Probabilities are per message and independent.
struct LinkFaults {
  double loss = 0.0;       // dropped
  double dup = 0.0;        // delivered twice
  double reorder = 0.0;    // held back and delivered after the next message on the edge
  double delay = 0.0;      // fixed delay (daemon: milliseconds; simulator: ticks)
  double jitter = 0.0;     // plus a uniform random delay in [0, jitter]
  bool any() const { return loss > 0 || dup > 0 || reorder > 0 || delay > 0 || jitter > 0; }
};

// During [start, end) every edge between `side_a` and `side_b` is cut in both directions (every
// message on it is dropped). An empty side_b means "every node not in side_a".
struct PartitionWindow {
  std::vector<int> side_a, side_b;
  double start = 0.0, end = 0.0;  // daemon: seconds since start; simulator: ticks
  bool Cuts(int u, int v, double now) const;
};

struct FaultPlan {
  LinkFaults defaults;                              // every edge
  std::map<std::pair<int, int>, LinkFaults> links;  // per undirected edge (min, max) overrides
  std::vector<PartitionWindow> partitions;
  uint64_t seed = 1;

  bool any() const;
  const LinkFaults& For(int from, int to) const;
  bool Partitioned(int from, int to, double now) const;
  // One line for logs, e.g. "loss 0.1, dup 0.05, 1 partition window, seed 7".
  std::string Describe() const;
};

// Parsers for the command-line forms; each throws std::invalid_argument naming the option.
//   partition:  "A|B@T0-T1" with A, B comma-separated node ids (B may be empty: "0,1|@2-5"),
//               several windows separated by ';'.
//   link:       "U-V:loss=P,dup=P,reorder=P,delay=X,jitter=X" (any subset of the keys).
std::vector<PartitionWindow> ParsePartitionSchedule(const std::string& spec,
                                                    const std::string& option);
std::pair<std::pair<int, int>, LinkFaults> ParseLinkFaults(const std::string& spec,
                                                           const std::string& option);
// Throws std::invalid_argument naming `option` unless every probability is in [0, 1] and every
// delay is >= 0 and finite.
void ValidateLinkFaults(const LinkFaults& faults, const std::string& option);

// What to do with one message.
struct FaultDecision {
  bool drop = false;         // lost (or cut by a partition: see partitioned)
  bool partitioned = false;  // dropped because of a partition window
  int copies = 1;            // 2 when duplicated (only if !drop)
  bool hold = false;         // reorder: deliver after the next message on this edge
  double delay = 0.0;        // in the plan's time unit
};

// Counts of what the injector did, for reports.
struct FaultCounters {
  uint64_t messages = 0, dropped = 0, partitioned = 0, duplicated = 0, reordered = 0,
           delayed = 0;
  std::string Summary() const;
  FaultCounters& operator+=(const FaultCounters& other);
};

class FaultInjector {
 public:
  // `stream` separates the random streams of injectors that share a plan (e.g. the node id), so
  // that every node of a run draws differently but reproducibly.
  FaultInjector(FaultPlan plan, uint64_t stream);

  FaultDecision Decide(int from, int to, double now);
  const FaultPlan& plan() const { return plan_; }
  const FaultCounters& counters() const { return counters_; }

 private:
  FaultPlan plan_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> uniform_{0.0, 1.0};
  FaultCounters counters_;
};

}  // namespace starling::net
