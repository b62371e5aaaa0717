#include "algorithms/data/partition.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>

namespace starling::algorithms {

namespace {

// Draws repeated for a Dirichlet partition that leaves a node without rows, before giving up.
constexpr int kDirichletAttempts = 100;

// Uniform integer in [0, bound), by rejection on the generator's raw output. mt19937_64's output
// is fixed by the standard but std::uniform_int_distribution's algorithm (and so std::shuffle's)
// differs between standard libraries, and every process must compute the same shards.
uint64_t UniformBelow(std::mt19937_64* rng, uint64_t bound) {
  // [0, limit) holds a whole number of copies of [0, bound).
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  const uint64_t limit = max - max % bound;
  uint64_t x;
  do {
    x = (*rng)();
  } while (x >= limit);
  return x % bound;
}

// Uniform double in (0, 1): 53 random bits, offset by half a step so that log() is finite.
double UniformOpen(std::mt19937_64* rng) {
  return static_cast<double>((*rng)() >> 11) * 0x1.0p-53 + 0x1.0p-54;
}

void Shuffle(std::vector<int>* items, std::mt19937_64* rng) {
  for (size_t i = items->size(); i > 1; --i) {
    std::swap((*items)[i - 1], (*items)[UniformBelow(rng, i)]);
  }
}

void CheckArguments(const Dataset& data, int nodes, const std::string& spec) {
  if (nodes < 1) {
    throw std::invalid_argument("partition '" + spec +
                                "': the node count must be at least 1, not " +
                                std::to_string(nodes));
  }
  if (data.num_samples() < nodes) {
    throw std::runtime_error("partition '" + spec + "': " + std::to_string(data.num_samples()) +
                             " rows cannot give each of " + std::to_string(nodes) + " nodes a row");
  }
}

void CheckLabels(const Dataset& data, const std::string& spec) {
  for (int i = 0; i < data.num_samples(); ++i) {
    if (!std::isfinite(data.labels[i])) {
      throw std::runtime_error("partition '" + spec + "': " + data.source + " row " +
                               std::to_string(i) + " has a non-finite label");
    }
  }
}

// Cuts `order` into `nodes` contiguous parts whose sizes differ by at most one.
Shards CutEvenly(const std::vector<int>& order, int nodes) {
  Shards shards(nodes);
  const int64_t n = static_cast<int64_t>(order.size());
  for (int j = 0; j < nodes; ++j) {
    const auto begin = order.begin() + n * j / nodes;
    const auto end = order.begin() + n * (j + 1) / nodes;
    shards[j].assign(begin, end);
  }
  return shards;
}

// Each shard's rows in ascending order: the assignment is what matters, and ascending rows read
// the data in memory order when the shard is extracted.
void SortShards(Shards* shards) {
  for (auto& shard : *shards) std::sort(shard.begin(), shard.end());
}

std::vector<int> AllRows(const Dataset& data) {
  std::vector<int> rows(data.num_samples());
  for (int i = 0; i < data.num_samples(); ++i) rows[i] = i;
  return rows;
}

Shards Iid(const Dataset& data, int nodes, uint64_t seed, const std::string& spec) {
  CheckArguments(data, nodes, spec);
  std::mt19937_64 rng(seed);
  std::vector<int> order = AllRows(data);
  Shuffle(&order, &rng);
  Shards shards = CutEvenly(order, nodes);
  SortShards(&shards);
  return shards;
}

Shards ByLabel(const Dataset& data, int nodes, uint64_t seed, const std::string& spec) {
  CheckArguments(data, nodes, spec);
  CheckLabels(data, spec);
  std::mt19937_64 rng(seed);
  std::vector<int> order = AllRows(data);
  // Shuffle then stable sort: ties end up in a seeded random order, so the rows of a class that
  // straddles two nodes are split at random rather than by file position.
  Shuffle(&order, &rng);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return data.labels[a] < data.labels[b]; });
  Shards shards = CutEvenly(order, nodes);
  SortShards(&shards);
  return shards;
}

// Proportions ~ Dirichlet(alpha, ..., alpha) over `nodes` entries, as normalised Gamma(alpha)
// draws. For small alpha the Gamma draws underflow to 0 (all of them, for alpha ~ 0.01), so they
// are kept as logarithms: Gamma(alpha) = Gamma(alpha + 1) * U^(1/alpha).
// std::gamma_distribution's algorithm is the standard library's own: processes built against
// different standard libraries could disagree on Dirichlet shards (not on iid or label ones).
std::vector<double> DirichletProportions(int nodes, double alpha, std::mt19937_64* rng) {
  std::vector<double> logs(nodes);
  std::gamma_distribution<double> gamma(alpha < 1 ? alpha + 1 : alpha, 1.0);
  for (int j = 0; j < nodes; ++j) {
    logs[j] = std::log(gamma(*rng));
    if (alpha < 1) logs[j] += std::log(UniformOpen(rng)) / alpha;
  }
  const double largest = *std::max_element(logs.begin(), logs.end());
  std::vector<double> proportions(nodes, 1.0 / nodes);
  if (!std::isfinite(largest)) return proportions;  // every draw was 0: no information
  double sum = 0;
  for (int j = 0; j < nodes; ++j) sum += proportions[j] = std::exp(logs[j] - largest);
  for (double& p : proportions) p /= sum;
  return proportions;
}

Shards Dirichlet(const Dataset& data, int nodes, double alpha, uint64_t seed,
                 const std::string& spec) {
  if (!(alpha > 0) || !std::isfinite(alpha)) {
    throw std::invalid_argument("partition '" + spec + "': alpha must be a positive number");
  }
  CheckArguments(data, nodes, spec);
  CheckLabels(data, spec);

  // Rows grouped by class, classes in ascending label order, rows in file order within a class.
  std::vector<int> order = AllRows(data);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return data.labels[a] < data.labels[b]; });
  std::vector<std::vector<int>> classes;
  for (size_t k = 0; k < order.size(); ++k) {
    if (k == 0 || data.labels[order[k]] != data.labels[order[k - 1]]) classes.emplace_back();
    classes.back().push_back(order[k]);
  }

  std::mt19937_64 rng(seed);
  int empty_node = -1;
  for (int attempt = 0; attempt < kDirichletAttempts; ++attempt) {
    Shards shards(nodes);
    for (std::vector<int>& rows : classes) {
      const std::vector<double> proportions = DirichletProportions(nodes, alpha, &rng);
      Shuffle(&rows, &rng);
      // Node j gets the rows between floor(count * cumulative share + offset), with one random
      // offset in (0, 1) per class: each node gets the floor or the ceiling of its expected
      // count. Plain rounding would favour the same nodes in every class (with shares near 1/N
      // and few rows per class, the odd nodes would get nothing from any class).
      const double count = static_cast<double>(rows.size());
      const double offset = UniformOpen(&rng);
      double cumulative = 0;
      size_t begin = 0;
      for (int j = 0; j < nodes; ++j) {
        cumulative += proportions[j];
        size_t end = rows.size();
        if (j + 1 < nodes) {
          end = std::min(end, static_cast<size_t>(std::floor(cumulative * count + offset)));
        }
        if (end > begin) {
          shards[j].insert(shards[j].end(), rows.begin() + begin, rows.begin() + end);
        }
        begin = std::max(begin, end);
      }
    }
    empty_node = -1;
    for (int j = 0; j < nodes && empty_node < 0; ++j) {
      if (shards[j].empty()) empty_node = j;
    }
    if (empty_node < 0) {
      SortShards(&shards);
      return shards;
    }
  }
  throw std::runtime_error("partition '" + spec + "' over " + std::to_string(nodes) +
                           " nodes left node " + std::to_string(empty_node) + " without rows in " +
                           std::to_string(kDirichletAttempts) +
                           " seeded draws; use fewer nodes or a larger alpha");
}

std::string DirichletSpec(double alpha) {
  char text[64];
  std::snprintf(text, sizeof(text), "dirichlet:%g", alpha);
  return text;
}

}  // namespace

Shards PartitionIid(const Dataset& data, int nodes, uint64_t seed) {
  return Iid(data, nodes, seed, "iid");
}

Shards PartitionByLabel(const Dataset& data, int nodes, uint64_t seed) {
  return ByLabel(data, nodes, seed, "label");
}

Shards PartitionDirichlet(const Dataset& data, int nodes, double alpha, uint64_t seed) {
  return Dirichlet(data, nodes, alpha, seed, DirichletSpec(alpha));
}

Shards PartitionByNodeColumn(const Dataset& data, int nodes) {
  CheckArguments(data, nodes, "column");
  if (data.node_of_row.size() != static_cast<size_t>(data.num_samples())) {
    throw std::runtime_error(data.source + ": no node column was read (use CSV data)");
  }
  Shards shards(nodes);
  for (int r = 0; r < data.num_samples(); ++r) {
    const int node = data.node_of_row[r];
    if (node >= nodes) {
      throw std::runtime_error(data.source + ": data row " + std::to_string(r) +
                               " belongs to node " + std::to_string(node) + " but there are only " +
                               std::to_string(nodes) + " nodes (--nodes)");
    }
    shards[node].push_back(r);
  }
  for (int i = 0; i < nodes; ++i) {
    if (shards[i].empty()) {
      throw std::runtime_error(data.source + ": no data row belongs to node " + std::to_string(i));
    }
  }
  return shards;
}

int NodeColumnOf(const std::string& spec) {
  const std::string prefix = "column:";
  if (spec.compare(0, prefix.size(), prefix) != 0) return -1;
  const std::string number = spec.substr(prefix.size());
  char* parsed = nullptr;
  const long column = std::strtol(number.c_str(), &parsed, 10);
  if (number.empty() || parsed != number.c_str() + number.size() || column < 0 ||
      column > 1000000) {
    throw std::invalid_argument("partition spec '" + spec +
                                "': K must be a 0-based CSV column number, e.g. column:0");
  }
  return static_cast<int>(column);
}

Shards Partition(const Dataset& data, const std::string& spec, int nodes, uint64_t seed) {
  if (NodeColumnOf(spec) >= 0) return PartitionByNodeColumn(data, nodes);
  if (spec == "iid") return Iid(data, nodes, seed, spec);
  if (spec == "label") return ByLabel(data, nodes, seed, spec);
  const std::string prefix = "dirichlet:";
  if (spec.compare(0, prefix.size(), prefix) == 0) {
    const std::string number = spec.substr(prefix.size());
    char* parsed = nullptr;
    const double alpha = std::strtod(number.c_str(), &parsed);
    if (number.empty() || parsed != number.c_str() + number.size() || !(alpha > 0) ||
        !std::isfinite(alpha)) {
      throw std::invalid_argument("partition spec '" + spec +
                                  "': ALPHA must be a positive number, e.g. dirichlet:0.5");
    }
    return Dirichlet(data, nodes, alpha, seed, spec);
  }
  throw std::invalid_argument("unknown partition spec '" + spec +
                              "' (expected iid, label, dirichlet:ALPHA or column:K)");
}

const char* PartitionSpecs() {
  return "iid              seeded shuffle cut into near-equal shards\n"
         "label            rows sorted by label (ties shuffled), cut into near-equal contiguous\n"
         "                 shards: each node sees one or two classes when nodes >= classes\n"
         "dirichlet:ALPHA  for each class, node shares ~ Dirichlet(ALPHA): 0.1 is very skewed,\n"
         "                 100 is close to i.i.d.; shard sizes vary\n"
         "column:K         pre-partitioned CSV: column K (0-based) holds each row's node id\n";
}

}  // namespace starling::algorithms
