#include "topology/generators.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "topology/cluster_file.h"
#include "topology/edge_list.h"

namespace starling::topology {
namespace {

std::string FormatDouble(double x) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", x);
  return text;
}

void RequireNodes(int n, const char* what) {
  if (n < 1) {
    throw std::invalid_argument(std::string(what) + " needs at least 1 node, got " +
                                std::to_string(n));
  }
}

// The standard fixes mt19937_64's output sequence but not what the std:: distributions do with
// it, so the same seed could give different graphs with another standard library. These two
// helpers use the raw 64-bit outputs directly and are the same everywhere.
double UniformUnit(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;  // 53 random bits -> [0, 1)
}

uint64_t UniformBelow(std::mt19937_64& rng, uint64_t bound) {
  // Rejects the lowest 2^64 mod bound outputs so that every residue is equally likely.
  const uint64_t reject_below = (0 - bound) % bound;
  uint64_t x = rng();
  while (x < reject_below) x = rng();
  return x % bound;
}

// One attempt of the Steger-Wormald pairing: every node starts with r stubs; repeatedly join two
// stubs chosen uniformly among the pairs that would keep the graph simple. False if it gets stuck
// (no such pair left) or, when `connected` is asked for, the result is disconnected; the caller
// then starts over.
bool TryRandomRegular(int n, int r, bool connected, std::mt19937_64& rng, Graph* result) {
  Graph graph(n);
  std::vector<int> stubs;
  stubs.reserve(static_cast<size_t>(n) * r);
  for (int u = 0; u < n; ++u) stubs.insert(stubs.end(), static_cast<size_t>(r), u);

  auto remove_stub = [&stubs](size_t index) {
    stubs[index] = stubs.back();
    stubs.pop_back();
  };
  // Rejection sampling is fast while most pairs are suitable; near the end (or for dense graphs)
  // fall back to sampling from the explicit list of suitable pairs, which has the same
  // distribution and detects the stuck state.
  constexpr int kRejectionTries = 64;
  while (!stubs.empty()) {
    bool joined = false;
    for (int t = 0; t < kRejectionTries && !joined; ++t) {
      const size_t a = UniformBelow(rng, stubs.size());
      const size_t b = UniformBelow(rng, stubs.size());
      const int u = stubs[a];
      const int v = stubs[b];
      if (u == v || graph.HasEdge(u, v)) continue;  // also covers a == b
      graph.AddEdge(u, v);
      remove_stub(std::max(a, b));
      remove_stub(std::min(a, b));
      joined = true;
    }
    if (joined) continue;

    std::map<int, int> open;  // node -> remaining stubs, ordered for determinism
    for (int u : stubs) ++open[u];
    std::vector<std::pair<int, int>> pairs;
    std::vector<uint64_t> cumulative;  // pair weight = stubs(u) * stubs(v)
    uint64_t total = 0;
    for (auto i = open.begin(); i != open.end(); ++i) {
      for (auto j = std::next(i); j != open.end(); ++j) {
        if (graph.HasEdge(i->first, j->first)) continue;
        total += static_cast<uint64_t>(i->second) * static_cast<uint64_t>(j->second);
        pairs.emplace_back(i->first, j->first);
        cumulative.push_back(total);
      }
    }
    if (total == 0) return false;
    const uint64_t pick = UniformBelow(rng, total);
    const size_t k = static_cast<size_t>(
        std::upper_bound(cumulative.begin(), cumulative.end(), pick) - cumulative.begin());
    const auto [u, v] = pairs[k];
    graph.AddEdge(u, v);
    for (int endpoint : {u, v}) {
      for (size_t s = 0; s < stubs.size(); ++s) {
        if (stubs[s] == endpoint) {
          remove_stub(s);
          break;
        }
      }
    }
  }
  if (connected && !graph.IsConnected()) return false;
  *result = std::move(graph);
  return true;
}

bool ParseInt(const std::string& text, int* value) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *value);
  return !text.empty() && ec == std::errc() && ptr == end;
}

bool ParseDouble(const std::string& text, double* value) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *value);
  return !text.empty() && ec == std::errc() && ptr == end;
}

// "RxC" with R, C >= 1.
bool ParseShape(const std::string& text, int* rows, int* cols) {
  const size_t x = text.find('x');
  if (x == std::string::npos) return false;
  return ParseInt(text.substr(0, x), rows) && ParseInt(text.substr(x + 1), cols) && *rows >= 1 &&
         *cols >= 1;
}

}  // namespace

Graph Ring(int n) {
  RequireNodes(n, "ring");
  Graph graph(n);
  // n = 2 gives the single edge {0, 1} twice (ignored); n = 1 gives no edge.
  for (int i = 0; i < n; ++i) {
    if (n > 1) graph.AddEdge(i, (i + 1) % n);
  }
  return graph;
}

Graph Torus(int rows, int cols) {
  if (rows < 1 || cols < 1) {
    throw std::invalid_argument("torus needs rows, cols >= 1, got " + std::to_string(rows) + "x" +
                                std::to_string(cols));
  }
  Graph graph(rows * cols);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      const int u = r * cols + c;
      // A dimension of 1 wraps onto itself (no edge); of 2 it wraps onto the same neighbour
      // (AddEdge ignores the repeat).
      const int right = r * cols + (c + 1) % cols;
      const int down = ((r + 1) % rows) * cols + c;
      if (right != u) graph.AddEdge(u, right);
      if (down != u) graph.AddEdge(u, down);
    }
  }
  return graph;
}

Graph Grid(int rows, int cols) {
  if (rows < 1 || cols < 1) {
    throw std::invalid_argument("grid needs rows, cols >= 1, got " + std::to_string(rows) + "x" +
                                std::to_string(cols));
  }
  Graph graph(rows * cols);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      const int u = r * cols + c;
      if (c + 1 < cols) graph.AddEdge(u, u + 1);
      if (r + 1 < rows) graph.AddEdge(u, u + cols);
    }
  }
  return graph;
}

Graph Complete(int n) {
  RequireNodes(n, "complete graph");
  Graph graph(n);
  for (int u = 0; u < n; ++u) {
    for (int v = u + 1; v < n; ++v) graph.AddEdge(u, v);
  }
  return graph;
}

Graph Star(int n) {
  RequireNodes(n, "star");
  Graph graph(n);
  for (int v = 1; v < n; ++v) graph.AddEdge(0, v);
  return graph;
}

Graph ErdosRenyi(int n, double p, uint64_t seed) {
  RequireNodes(n, "Erdos-Renyi graph");
  if (!(p > 0.0 && p <= 1.0)) {
    throw std::invalid_argument("Erdos-Renyi edge probability must be in (0, 1], got " +
                                FormatDouble(p));
  }
  constexpr int kMaxDraws = 1000;
  for (int draw = 0; draw < kMaxDraws; ++draw) {
    std::mt19937_64 rng(seed + static_cast<uint64_t>(draw));
    Graph graph(n);
    for (int u = 0; u < n; ++u) {
      for (int v = u + 1; v < n; ++v) {
        if (UniformUnit(rng) < p) graph.AddEdge(u, v);
      }
    }
    if (graph.IsConnected()) return graph;
  }
  throw std::runtime_error("Erdos-Renyi G(" + std::to_string(n) + ", " + FormatDouble(p) +
                           ") was disconnected in " + std::to_string(kMaxDraws) +
                           " draws; use a larger p");
}

Graph RandomRegular(int n, int r, uint64_t seed) {
  RequireNodes(n, "random regular graph");
  const std::string shape = " (n = " + std::to_string(n) + ", r = " + std::to_string(r) + ")";
  if (r < 0 || r >= n) {
    throw std::invalid_argument("random regular graph needs 0 <= r < n" + shape);
  }
  if ((static_cast<int64_t>(n) * r) % 2 != 0) {
    throw std::invalid_argument("random regular graph needs n*r even" + shape);
  }
  if (n == 1) return Graph(1);
  // Degree 0 or 1 cannot connect more than two nodes: say so rather than retry 1000 times.
  if (r == 0 || (r == 1 && n > 2)) {
    throw std::invalid_argument("no connected " + std::to_string(r) + "-regular graph exists" +
                                shape);
  }
  std::mt19937_64 rng(seed);
  // The pairing nearly always gets stuck for dense graphs (r close to n). Build those as the
  // complement of a random (n-1-r)-regular graph instead: complementing is a bijection between the
  // two families, and a graph with every degree >= (n-1)/2 is always connected (two non-adjacent
  // nodes share a neighbour), so the sparse side needs no connectivity check.
  const bool dense = 2 * r > n - 1;
  const int degree = dense ? n - 1 - r : r;
  constexpr int kMaxAttempts = 1000;
  Graph graph;
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    if (!TryRandomRegular(n, degree, /*connected=*/!dense, rng, &graph)) continue;
    if (!dense) return graph;
    Graph complement(n);
    for (int u = 0; u < n; ++u) {
      for (int v = u + 1; v < n; ++v) {
        if (!graph.HasEdge(u, v)) complement.AddEdge(u, v);
      }
    }
    return complement;
  }
  throw std::runtime_error("no connected random regular graph found in " +
                           std::to_string(kMaxAttempts) + " attempts" + shape);
}

Graph Exponential(int n) {
  RequireNodes(n, "exponential graph");
  Graph graph(n);
  for (int i = 0; i < n; ++i) {
    // 2^k < n, so (i + 2^k) mod n != i; pairs met from both sides are repeats and ignored.
    for (int64_t step = 1; step < n; step *= 2) {
      graph.AddEdge(i, static_cast<int>((i + step) % n));
    }
  }
  return graph;
}

Graph RingOfCliques(int cliques, int size) {
  if (cliques < 1 || size < 1) {
    throw std::invalid_argument("ring of cliques needs cliques, size >= 1, got " +
                                std::to_string(cliques) + "x" + std::to_string(size));
  }
  if (static_cast<int64_t>(cliques) * size > std::numeric_limits<int>::max()) {
    throw std::invalid_argument("ring of cliques too large: " + std::to_string(cliques) + "x" +
                                std::to_string(size));
  }
  Graph graph(cliques * size);
  for (int c = 0; c < cliques; ++c) {
    const int first = c * size;
    for (int u = first; u < first + size; ++u) {
      for (int v = u + 1; v < first + size; ++v) graph.AddEdge(u, v);
    }
    // The bridge to the next clique. One clique would bridge to itself (its last and first
    // nodes, already linked, or a self loop for size 1): skip it. Two cliques get two distinct
    // bridges unless size is 1 (then the same edge twice, which AddEdge ignores).
    const int next_first = ((c + 1) % cliques) * size;
    if (cliques > 1) graph.AddEdge(first + size - 1, next_first);
  }
  return graph;
}

Graph MakeTopology(const std::string& spec, int n, uint64_t seed) {
  const std::string prefix = "--topology '" + spec + "': ";
  if (n < 1) throw std::invalid_argument(prefix + "--nodes must be >= 1, got " + std::to_string(n));
  const size_t colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  const bool has_arg = colon != std::string::npos;
  const std::string arg = has_arg ? spec.substr(colon + 1) : "";
  auto bad = [&prefix](const std::string& reason) {
    return std::invalid_argument(prefix + reason);
  };
  auto require_no_arg = [&]() {
    if (has_arg) throw bad("'" + name + "' takes no argument");
  };

  Graph graph;
  try {
    if (name == "ring") {
      require_no_arg();
      graph = Ring(n);
    } else if (name == "torus" || name == "grid") {
      int rows = 0;
      int cols = 0;
      if (has_arg) {
        if (!ParseShape(arg, &rows, &cols)) throw bad("expected " + name + ":RxC with R, C >= 1");
        if (static_cast<int64_t>(rows) * cols != n) {
          throw std::invalid_argument(prefix + std::to_string(static_cast<int64_t>(rows) * cols) +
                                      " nodes but --nodes is " + std::to_string(n));
        }
      } else if (name == "torus") {
        // Square-ish: the largest divisor of n not above sqrt(n) (1 x n, a ring, for a prime n).
        rows = 1;
        for (int d = 1; static_cast<int64_t>(d) * d <= n; ++d) {
          if (n % d == 0) rows = d;
        }
        cols = n / rows;
      } else {
        throw bad("grid needs a shape, grid:RxC");
      }
      graph = name == "torus" ? Torus(rows, cols) : Grid(rows, cols);
    } else if (name == "ring-of-cliques") {
      int cliques = 0;
      int size = 0;
      if (!has_arg || !ParseShape(arg, &cliques, &size)) {
        throw bad("expected ring-of-cliques:CxK (C cliques of K nodes) with C, K >= 1");
      }
      if (static_cast<int64_t>(cliques) * size != n) {
        throw std::invalid_argument(prefix + std::to_string(static_cast<int64_t>(cliques) * size) +
                                    " nodes but --nodes is " + std::to_string(n));
      }
      graph = RingOfCliques(cliques, size);
    } else if (name == "complete") {
      require_no_arg();
      graph = Complete(n);
    } else if (name == "star") {
      require_no_arg();
      graph = Star(n);
    } else if (name == "er") {
      double p = 0.0;
      if (!has_arg || !ParseDouble(arg, &p) || !(p > 0.0 && p <= 1.0)) {
        throw bad("expected er:P with 0 < P <= 1");
      }
      graph = ErdosRenyi(n, p, seed);
    } else if (name == "regular") {
      int r = 0;
      if (!has_arg || !ParseInt(arg, &r)) throw bad("expected regular:R with an integer R");
      graph = RandomRegular(n, r, seed);
    } else if (name == "exp") {
      require_no_arg();
      graph = Exponential(n);
    } else if (name == "file") {
      if (!has_arg || arg.empty()) throw bad("expected file:PATH");
      // File errors are std::runtime_error "PATH:LINE: reason" and pass through unchanged.
      graph = LooksLikeClusterFile(arg) ? ReadClusterFile(arg).graph : ReadEdgeList(arg);
      if (graph.num_nodes() != n) {
        throw std::invalid_argument(prefix + std::to_string(graph.num_nodes()) +
                                    " nodes but --nodes is " + std::to_string(n));
      }
    } else {
      throw bad("unknown topology '" + name + "'; expected one of " + TopologySpecs());
    }
  } catch (const std::invalid_argument& e) {
    // Generator messages do not know the spec; ours already start with it.
    if (std::string(e.what()).rfind(prefix, 0) == 0) throw;
    throw std::invalid_argument(prefix + e.what());
  } catch (const std::runtime_error& e) {
    // File errors already name the file and line; a generator that gave up does not.
    if (name == "file") throw;
    throw std::runtime_error(prefix + e.what());
  }
  if (!graph.IsConnected()) {
    throw std::runtime_error(prefix + "the graph is disconnected");
  }
  return graph;
}

const char* TopologySpecs() {
  return "ring | torus | torus:RxC | grid:RxC | complete | star | er:P | regular:R | exp | "
         "ring-of-cliques:CxK | file:PATH";
}

}  // namespace starling::topology
