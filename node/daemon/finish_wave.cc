#include "node/daemon/finish_wave.h"

#include <algorithm>
#include <climits>
#include <deque>

namespace starling::node {

namespace {

constexpr int kGone = INT_MAX;
constexpr char kPrefix[] = "finished";

// Distances from `source` (-1 where unreachable).
std::vector<int> Distances(const topology::Graph& graph, int source) {
  std::vector<int> dist(graph.num_nodes(), -1);
  std::deque<int> queue = {source};
  dist[source] = 0;
  while (!queue.empty()) {
    const int u = queue.front();
    queue.pop_front();
    for (int v : graph.Neighbors(u)) {
      if (dist[v] < 0) {
        dist[v] = dist[u] + 1;
        queue.push_back(v);
      }
    }
  }
  return dist;
}

}  // namespace

int ComponentDiameter(const topology::Graph& graph, int self) {
  const std::vector<int> from_self = Distances(graph, self);
  int diameter = 0;
  for (int u = 0; u < graph.num_nodes(); ++u) {
    if (from_self[u] < 0) continue;
    for (int d : Distances(graph, u)) diameter = std::max(diameter, d);
  }
  return diameter;
}

FinishWave::FinishWave(const topology::Graph& graph, int self)
    : neighbors_(graph.Neighbors(self)), cap_(ComponentDiameter(graph, self) + 1) {}

bool FinishWave::SetFinished() {
  finished_ = true;
  return Update();
}

bool FinishWave::NoteLevel(int peer, int level) {
  int& heard = heard_[peer];
  if (heard != kGone) heard = std::max(heard, std::min(level, cap_));
  return Update();
}

bool FinishWave::NoteGone(int peer) {
  heard_[peer] = kGone;
  return Update();
}

bool FinishWave::NeighboursAllFinished() const {
  for (int j : neighbors_) {
    const auto it = heard_.find(j);
    if (it == heard_.end() || it->second < cap_) return false;
  }
  return true;
}

bool FinishWave::Update() {
  if (!finished_) return false;
  int lowest = kGone;
  for (int j : neighbors_) {
    const auto it = heard_.find(j);
    lowest = std::min(lowest, it == heard_.end() ? 0 : it->second);
  }
  const int level = lowest >= cap_ ? cap_ : std::min(cap_, lowest + 1);
  if (level <= level_) return false;
  level_ = level;
  return true;
}

std::string FinishWave::ByeText() const {
  return level_ <= 1 ? std::string(kPrefix) : std::string(kPrefix) + ":" + std::to_string(level_);
}

std::optional<int> FinishWave::ParseBye(const std::string& text) const {
  const std::string prefix = kPrefix;
  if (text == prefix) return 1;
  if (text.size() <= prefix.size() + 1 || text.compare(0, prefix.size(), prefix) != 0 ||
      text[prefix.size()] != ':' || text.size() > prefix.size() + 1 + 9) {
    return std::nullopt;
  }
  int level = 0;
  for (size_t k = prefix.size() + 1; k < text.size(); ++k) {
    if (text[k] < '0' || text[k] > '9') return std::nullopt;
    level = 10 * level + (text[k] - '0');
  }
  if (level < 1 || level > cap_) return std::nullopt;
  return level;
}

}  // namespace starling::node
