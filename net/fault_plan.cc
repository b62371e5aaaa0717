#include "net/fault_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace starling::net {

namespace {

bool Contains(const std::vector<int>& ids, int id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

std::vector<std::string> Split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, sep)) parts.push_back(part);
  if (!text.empty() && text.back() == sep) parts.push_back("");
  return parts;
}

std::string Trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

double ParseNumber(const std::string& text, const std::string& option, const std::string& what) {
  const std::string t = Trim(text);
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (t.empty() || *end != '\0' || !std::isfinite(v)) {
    throw std::invalid_argument(option + ": '" + text + "' is not a number (" + what + ")");
  }
  return v;
}

int ParseId(const std::string& text, const std::string& option) {
  const double v = ParseNumber(text, option, "a node id");
  if (v < 0 || v != std::floor(v) || v > 1e9) {
    throw std::invalid_argument(option + ": '" + text + "' is not a node id");
  }
  return static_cast<int>(v);
}

std::vector<int> ParseIds(const std::string& text, const std::string& option) {
  std::vector<int> ids;
  if (Trim(text).empty()) return ids;
  for (const std::string& s : Split(text, ',')) ids.push_back(ParseId(s, option));
  return ids;
}

}  // namespace

bool PartitionWindow::Cuts(int u, int v, double now) const {
  if (now < start || now >= end) return false;
  const bool u_a = Contains(side_a, u), v_a = Contains(side_a, v);
  const bool u_b = side_b.empty() ? !u_a : Contains(side_b, u);
  const bool v_b = side_b.empty() ? !v_a : Contains(side_b, v);
  return (u_a && v_b) || (u_b && v_a);
}

bool FaultPlan::any() const {
  if (defaults.any() || !partitions.empty()) return true;
  for (const auto& [edge, f] : links) {
    if (f.any()) return true;
  }
  return false;
}

const LinkFaults& FaultPlan::For(int from, int to) const {
  auto it = links.find({std::min(from, to), std::max(from, to)});
  return it == links.end() ? defaults : it->second;
}

bool FaultPlan::Partitioned(int from, int to, double now) const {
  for (const PartitionWindow& w : partitions) {
    if (w.Cuts(from, to, now)) return true;
  }
  return false;
}

std::string FaultPlan::Describe() const {
  std::ostringstream s;
  s << "loss " << defaults.loss << ", dup " << defaults.dup << ", reorder " << defaults.reorder
    << ", delay " << defaults.delay << " + U[0," << defaults.jitter << "], " << links.size()
    << " per-edge override(s), " << partitions.size() << " partition window(s), seed " << seed;
  return s.str();
}

std::vector<PartitionWindow> ParsePartitionSchedule(const std::string& spec,
                                                    const std::string& option) {
  std::vector<PartitionWindow> windows;
  for (const std::string& raw : Split(spec, ';')) {
    const std::string item = Trim(raw);
    if (item.empty()) continue;
    const auto at = item.find('@');
    const auto bar = item.find('|');
    const auto dash = at == std::string::npos ? std::string::npos : item.find('-', at);
    if (at == std::string::npos || bar == std::string::npos || bar > at ||
        dash == std::string::npos) {
      throw std::invalid_argument(option + ": '" + item +
                                  "': expected A|B@START-END, e.g. 0,1|2,3@2-6");
    }
    PartitionWindow w;
    w.side_a = ParseIds(item.substr(0, bar), option);
    w.side_b = ParseIds(item.substr(bar + 1, at - bar - 1), option);
    w.start = ParseNumber(item.substr(at + 1, dash - at - 1), option, "window start");
    w.end = ParseNumber(item.substr(dash + 1), option, "window end");
    if (w.side_a.empty()) throw std::invalid_argument(option + ": '" + item + "': empty side A");
    if (!(w.start >= 0 && w.end > w.start)) {
      throw std::invalid_argument(option + ": '" + item + "': need 0 <= START < END");
    }
    windows.push_back(std::move(w));
  }
  return windows;
}

void ValidateLinkFaults(const LinkFaults& f, const std::string& option) {
  auto probability = [&](double p, const char* name) {
    if (!(p >= 0.0 && p <= 1.0)) {
      throw std::invalid_argument(option + ": " + name + " " + std::to_string(p) +
                                  " is not a probability in [0, 1]");
    }
  };
  probability(f.loss, "loss");
  probability(f.dup, "dup");
  probability(f.reorder, "reorder");
  if (!(f.delay >= 0 && std::isfinite(f.delay)) || !(f.jitter >= 0 && std::isfinite(f.jitter))) {
    throw std::invalid_argument(option + ": delay and jitter must be finite and >= 0");
  }
}

std::pair<std::pair<int, int>, LinkFaults> ParseLinkFaults(const std::string& spec,
                                                           const std::string& option) {
  const auto colon = spec.find(':');
  const auto dash = spec.find('-');
  if (colon == std::string::npos || dash == std::string::npos || dash > colon) {
    throw std::invalid_argument(option + ": '" + spec +
                                "': expected U-V:loss=P,dup=P,reorder=P,delay=X,jitter=X");
  }
  const int u = ParseId(spec.substr(0, dash), option);
  const int v = ParseId(spec.substr(dash + 1, colon - dash - 1), option);
  if (u == v) throw std::invalid_argument(option + ": '" + spec + "': an edge needs two nodes");
  LinkFaults f;
  for (const std::string& raw : Split(spec.substr(colon + 1), ',')) {
    const std::string kv = Trim(raw);
    const auto eq = kv.find('=');
    if (eq == std::string::npos) {
      throw std::invalid_argument(option + ": '" + kv + "': expected KEY=VALUE");
    }
    const std::string key = kv.substr(0, eq);
    const double value = ParseNumber(kv.substr(eq + 1), option, key);
    if (key == "loss") f.loss = value;
    else if (key == "dup") f.dup = value;
    else if (key == "reorder") f.reorder = value;
    else if (key == "delay") f.delay = value;
    else if (key == "jitter") f.jitter = value;
    else throw std::invalid_argument(option + ": unknown key '" + key +
                                     "' (loss, dup, reorder, delay, jitter)");
  }
  ValidateLinkFaults(f, option);
  return {{std::min(u, v), std::max(u, v)}, f};
}

std::string FaultCounters::Summary() const {
  std::ostringstream s;
  s << messages << " messages: " << dropped << " lost, " << partitioned << " cut by partitions, "
    << duplicated << " duplicated, " << reordered << " reordered, " << delayed << " delayed";
  return s.str();
}

FaultCounters& FaultCounters::operator+=(const FaultCounters& o) {
  messages += o.messages;
  dropped += o.dropped;
  partitioned += o.partitioned;
  duplicated += o.duplicated;
  reordered += o.reordered;
  delayed += o.delayed;
  return *this;
}

FaultInjector::FaultInjector(FaultPlan plan, uint64_t stream)
    : plan_(std::move(plan)),
      // Distinct, reproducible streams per (seed, stream): splitmix-style mixing of the two.
      rng_(plan_.seed * 0x9e3779b97f4a7c15ULL ^ (stream + 0x632be59bd9b4e019ULL)) {}

FaultDecision FaultInjector::Decide(int from, int to, double now) {
  FaultDecision d;
  ++counters_.messages;
  if (plan_.Partitioned(from, to, now)) {
    d.drop = d.partitioned = true;
    ++counters_.partitioned;
    return d;
  }
  const LinkFaults& f = plan_.For(from, to);
  // Always draw the same number of values per message so that changing one probability does
  // not reshuffle the other decisions of the run.
  const double u_loss = uniform_(rng_), u_dup = uniform_(rng_), u_reorder = uniform_(rng_),
               u_jitter = uniform_(rng_);
  if (u_loss < f.loss) {
    d.drop = true;
    ++counters_.dropped;
    return d;
  }
  if (u_dup < f.dup) {
    d.copies = 2;
    ++counters_.duplicated;
  }
  if (u_reorder < f.reorder) {
    d.hold = true;
    ++counters_.reordered;
  }
  d.delay = f.delay + f.jitter * u_jitter;
  if (d.delay > 0) ++counters_.delayed;
  return d;
}

}  // namespace starling::net
