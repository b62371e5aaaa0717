#include "node/sim/churn_plan.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace po = boost::program_options;

namespace starling::node {

void AddChurnOptions(po::options_description* options, ChurnOptions* c) {
  options->add_options()(
      "churn-join-rate", po::value(&c->join_rate)->default_value(0.0),
      "pairwise methods: nodes joining per iteration (Poisson; into a slot a node left)")(
      "churn-leave-rate", po::value(&c->leave_rate)->default_value(0.0),
      "pairwise methods: graceful leaves per iteration (Poisson): the leaver hands its "
      "push-sum share of the average to a neighbour")(
      "churn-crash-rate", po::value(&c->crash_rate)->default_value(0.0),
      "pairwise methods: crashes per iteration (Poisson): the node's share of the average is "
      "lost, and the shift it causes is reported")(
      "churn-trace", po::value(&c->trace),
      "pairwise methods: churn events from FILE instead of rates, one a line: "
      "'ITERATION join|leave|crash NODE' ('#' starts a comment)")(
      "churn-seed", po::value(&c->seed)->default_value(1),
      "seed of the churn events' times and nodes (rates)");
}

const char* ChurnKindName(ChurnKind kind) {
  switch (kind) {
    case ChurnKind::kJoin:
      return "join";
    case ChurnKind::kLeave:
      return "leave";
    case ChurnKind::kCrash:
      return "crash";
  }
  return "?";
}

std::vector<ChurnEvent> ParseChurnTrace(const std::string& text, const std::string& source,
                                        int nodes) {
  std::vector<ChurnEvent> events;
  std::vector<int> line_of;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string where = source + " line " + std::to_string(number);
    line = line.substr(0, line.find('#'));
    std::istringstream fields(line);
    std::string time_text, kind_text, node_text, extra;
    if (!(fields >> time_text)) continue;  // blank or comment
    if (!(fields >> kind_text >> node_text) || (fields >> extra)) {
      throw std::invalid_argument("--churn-trace " + where +
                                  ": expected 'ITERATION join|leave|crash NODE'");
    }
    ChurnEvent e;
    size_t used = 0;
    try {
      e.time = std::stod(time_text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != time_text.size() || !std::isfinite(e.time) || e.time < 0) {
      throw std::invalid_argument("--churn-trace " + where + ": iteration '" + time_text +
                                  "' is not a number >= 0");
    }
    if (kind_text == "join") {
      e.kind = ChurnKind::kJoin;
    } else if (kind_text == "leave") {
      e.kind = ChurnKind::kLeave;
    } else if (kind_text == "crash") {
      e.kind = ChurnKind::kCrash;
    } else {
      throw std::invalid_argument("--churn-trace " + where + ": '" + kind_text +
                                  "' is not join, leave or crash");
    }
    try {
      e.node = std::stoi(node_text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != node_text.size() || e.node < 0 || e.node >= nodes) {
      throw std::invalid_argument("--churn-trace " + where + ": node '" + node_text +
                                  "' is not an id in 0.." + std::to_string(nodes - 1) +
                                  " (--nodes " + std::to_string(nodes) + ")");
    }
    events.push_back(e);
    line_of.push_back(number);
  }
  // Time order, the file's order among equal times; then replay the membership.
  std::vector<size_t> order(events.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return events[a].time < events[b].time; });
  std::vector<bool> member(nodes, true);
  int members = nodes;
  std::vector<ChurnEvent> sorted;
  for (size_t k : order) {
    const ChurnEvent& e = events[k];
    const std::string where = source + " line " + std::to_string(line_of[k]);
    if (e.kind == ChurnKind::kJoin) {
      if (member[e.node]) {
        throw std::invalid_argument("--churn-trace " + where + ": node " + std::to_string(e.node) +
                                    " joins at iteration " + std::to_string(e.time) +
                                    " but is a member then");
      }
      member[e.node] = true;
      ++members;
    } else {
      if (!member[e.node]) {
        throw std::invalid_argument("--churn-trace " + where + ": node " + std::to_string(e.node) +
                                    " " + ChurnKindName(e.kind) + "s at iteration " +
                                    std::to_string(e.time) + " but is not a member then");
      }
      if (members <= 2) {
        throw std::invalid_argument("--churn-trace " + where +
                                    ": would leave fewer than two members");
      }
      member[e.node] = false;
      --members;
    }
    sorted.push_back(e);
  }
  return sorted;
}

std::vector<ChurnEvent> BuildChurnEvents(const ChurnOptions& options, int nodes, double horizon) {
  const struct {
    const char* option;
    double rate;
    ChurnKind kind;
  } rates[] = {{"--churn-join-rate", options.join_rate, ChurnKind::kJoin},
               {"--churn-leave-rate", options.leave_rate, ChurnKind::kLeave},
               {"--churn-crash-rate", options.crash_rate, ChurnKind::kCrash}};
  bool any_rate = false;
  for (const auto& r : rates) {
    if (!(r.rate >= 0 && std::isfinite(r.rate))) {
      throw std::invalid_argument(std::string(r.option) + " " + std::to_string(r.rate) +
                                  ": must be a number >= 0");
    }
    any_rate |= r.rate > 0;
  }
  if (!options.trace.empty()) {
    if (any_rate) {
      throw std::invalid_argument(
          "--churn-trace: give the events by a trace or by rates (--churn-*-rate), not both");
    }
    std::ifstream in(options.trace);
    if (!in) {
      throw std::invalid_argument("--churn-trace " + options.trace +
                                  ": cannot read the file (check its path)");
    }
    std::ostringstream text;
    text << in.rdbuf();
    return ParseChurnTrace(text.str(), options.trace, nodes);
  }
  std::vector<ChurnEvent> events;
  std::mt19937_64 rng(options.seed);
  for (const auto& r : rates) {
    if (r.rate <= 0) continue;
    std::exponential_distribution<double> gap(r.rate);
    for (double t = gap(rng); t < horizon; t += gap(rng)) events.push_back({t, r.kind, -1});
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const ChurnEvent& a, const ChurnEvent& b) { return a.time < b.time; });
  return events;
}

}  // namespace starling::node
