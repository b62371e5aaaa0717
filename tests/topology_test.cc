// Graphs, generators, edge-list and cluster files, topology specs. Expected counts are worked out
// by hand in the comments, never taken from the code under test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "topology/cluster_file.h"
#include "topology/edge_list.h"
#include "topology/generators.h"
#include "topology/graph.h"

namespace starling::topology {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// A fresh folder per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("starling-topology-" + std::string(info->test_suite_name()) + "-" + info->name() +
             "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  // Writes `text` to a file in the folder and returns its path.
  std::string Write(const std::string& name, const std::string& text) const {
    const std::string file = (path_ / name).string();
    std::ofstream out(file);
    out << text;
    return file;
  }
  std::string Path(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Runs `fn`, expects an exception of type E whose message contains every string in `parts`.
template <typename E>
void ExpectThrowWith(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "no exception; expected one containing '" << parts.front() << "'";
  } catch (const E& e) {
    for (const std::string& part : parts) EXPECT_THAT(e.what(), HasSubstr(part));
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

std::set<std::pair<int, int>> EdgeSet(const Graph& g) {
  const auto edges = g.Edges();
  return {edges.begin(), edges.end()};
}

void ExpectAllDegrees(const Graph& g, int degree) {
  for (int u = 0; u < g.num_nodes(); ++u) EXPECT_EQ(g.Degree(u), degree) << "node " << u;
}

// ---------------------------------------------------------------------------------------------
// Graph

TEST(GraphTest, AddEdgeKeepsAdjacencySortedAndIgnoresRepeats) {
  Graph g(5);
  g.AddEdge(3, 1);
  g.AddEdge(1, 0);
  g.AddEdge(1, 4);
  g.AddEdge(4, 1);  // repeat, reversed
  g.AddEdge(1, 3);  // repeat
  EXPECT_EQ(g.num_nodes(), 5);
  EXPECT_EQ(g.num_edges(), 3);
  EXPECT_EQ(g.Neighbors(1), (std::vector<int>{0, 3, 4}));
  EXPECT_EQ(g.Neighbors(4), (std::vector<int>{1}));
  EXPECT_TRUE(g.HasEdge(3, 1));
  EXPECT_TRUE(g.HasEdge(1, 3));
  EXPECT_FALSE(g.HasEdge(0, 3));
  EXPECT_FALSE(g.HasEdge(-1, 3));
  EXPECT_FALSE(g.HasEdge(0, 9));
  EXPECT_EQ(g.MaxDegree(), 3);
  EXPECT_EQ(g.Degree(2), 0);
  EXPECT_EQ(g.Edges(), (std::vector<std::pair<int, int>>{{0, 1}, {1, 3}, {1, 4}}));
  EXPECT_FALSE(g.IsConnected());  // node 2 is isolated
  g.AddEdge(2, 0);
  EXPECT_TRUE(g.IsConnected());
}

TEST(GraphTest, RejectsSelfLoopsAndOutOfRangeIds) {
  Graph g(3);
  EXPECT_THROW(g.AddEdge(1, 1), std::invalid_argument);
  EXPECT_THROW(g.AddEdge(0, 3), std::invalid_argument);
  EXPECT_THROW(g.AddEdge(-1, 0), std::invalid_argument);
  EXPECT_THROW(Graph(-1), std::invalid_argument);
  EXPECT_EQ(g.num_edges(), 0);
}

TEST(GraphTest, TinyGraphsAreConnected) {
  EXPECT_TRUE(Graph(0).IsConnected());
  EXPECT_TRUE(Graph(1).IsConnected());
  EXPECT_FALSE(Graph(2).IsConnected());
  EXPECT_EQ(Graph(0).MaxDegree(), 0);
}

// Hops counted by hand: a ring of 16 is 8 across, of 5 is 2; a complete graph 1; a star 2 (leaf
// to leaf through the hub); a path of 4 is 3.
TEST(GraphTest, DiameterIsTheLongestShortestPath) {
  EXPECT_EQ(Ring(16).Diameter(), 8);
  EXPECT_EQ(Ring(5).Diameter(), 2);
  EXPECT_EQ(Complete(6).Diameter(), 1);
  Graph star(5);
  for (int leaf = 1; leaf < 5; ++leaf) star.AddEdge(0, leaf);
  EXPECT_EQ(star.Diameter(), 2);
  Graph path(4);
  path.AddEdge(0, 1);
  path.AddEdge(1, 2);
  path.AddEdge(2, 3);
  EXPECT_EQ(path.Diameter(), 3);
  EXPECT_EQ(Graph(0).Diameter(), 0);
  EXPECT_EQ(Graph(1).Diameter(), 0);
  // Two components, {0, 1, 2} a path and {3, 4} an edge: the longest within one is 2.
  Graph two(5);
  two.AddEdge(0, 1);
  two.AddEdge(1, 2);
  two.AddEdge(3, 4);
  EXPECT_EQ(two.Diameter(), 2);
}

// ---------------------------------------------------------------------------------------------
// Generators

TEST(GeneratorsTest, RingSmallCases) {
  EXPECT_EQ(Ring(1).num_nodes(), 1);
  EXPECT_EQ(Ring(1).num_edges(), 0);
  const Graph two = Ring(2);
  EXPECT_EQ(two.num_edges(), 1);
  EXPECT_TRUE(two.HasEdge(0, 1));
  EXPECT_THROW(Ring(0), std::invalid_argument);
}

TEST(GeneratorsTest, RingHasNEdgesAndDegreeTwo) {
  for (int n : {3, 4, 7, 20}) {
    SCOPED_TRACE(n);
    const Graph g = Ring(n);
    EXPECT_EQ(g.num_edges(), n);
    ExpectAllDegrees(g, 2);
    for (int i = 0; i < n; ++i) EXPECT_TRUE(g.HasEdge(i, (i + 1) % n));
    EXPECT_TRUE(g.IsConnected());
  }
}

TEST(GeneratorsTest, TorusHasTwoNEdgesWhenBothSidesAtLeastThree) {
  for (auto [rows, cols] : std::vector<std::pair<int, int>>{{3, 3}, {3, 5}, {4, 4}, {6, 3}}) {
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols));
    const Graph g = Torus(rows, cols);
    EXPECT_EQ(g.num_nodes(), rows * cols);
    EXPECT_EQ(g.num_edges(), 2 * rows * cols);
    ExpectAllDegrees(g, 4);
    EXPECT_TRUE(g.IsConnected());
  }
  // Row-major numbering: in 3x5, node 0's neighbours are 1, 4 (wrap), 5 and 10 (wrap).
  EXPECT_EQ(Torus(3, 5).Neighbors(0), (std::vector<int>{1, 4, 5, 10}));
}

TEST(GeneratorsTest, TorusWithShortSidesHasNoDuplicateEdges) {
  EXPECT_EQ(Torus(1, 1).num_edges(), 0);
  EXPECT_EQ(Torus(1, 2).num_edges(), 1);
  EXPECT_EQ(Torus(1, 5).num_edges(), 5);  // a ring of 5
  EXPECT_EQ(Torus(5, 1).num_edges(), 5);
  EXPECT_EQ(Torus(2, 2).num_edges(), 4);  // a 4-cycle
  ExpectAllDegrees(Torus(2, 2), 2);
  // 2x3: each row is a triangle (3 + 3) and the two rows are joined once per column (3).
  EXPECT_EQ(Torus(2, 3).num_edges(), 9);
  ExpectAllDegrees(Torus(2, 3), 3);
  // 2x5: two 5-rings plus 5 rungs.
  EXPECT_EQ(Torus(2, 5).num_edges(), 15);
  EXPECT_THROW(Torus(0, 3), std::invalid_argument);
}

// Ring of 4 triangles, worked out by hand: cliques {0,1,2}, {3,4,5}, {6,7,8}, {9,10,11}, bridges
// 2-3, 5-6, 8-9 and 11-0. Edges: 4 x 3 inside + 4 bridges = 16. A bridge end (0, 2, 3, 5, ...)
// has its 2 clique mates and 1 bridge neighbour, degree 3; a middle node (1, 4, 7, 10) degree 2.
TEST(GeneratorsTest, RingOfCliquesSmallByHand) {
  const Graph g = RingOfCliques(4, 3);
  EXPECT_EQ(g.num_nodes(), 12);
  EXPECT_EQ(g.num_edges(), 16);
  EXPECT_TRUE(g.IsConnected());
  EXPECT_EQ(g.Neighbors(0), (std::vector<int>{1, 2, 11}));
  EXPECT_EQ(g.Neighbors(1), (std::vector<int>{0, 2}));
  EXPECT_EQ(g.Neighbors(2), (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(g.Neighbors(11), (std::vector<int>{0, 9, 10}));
  for (int u : {1, 4, 7, 10}) EXPECT_EQ(g.Degree(u), 2) << "node " << u;
  for (int u : {0, 2, 3, 5, 6, 8, 9, 11}) EXPECT_EQ(g.Degree(u), 3) << "node " << u;
  std::set<std::pair<int, int>> expected = {{0, 1}, {0, 2}, {1, 2}, {3, 4},  {3, 5},  {4, 5},
                                            {6, 7}, {6, 8}, {7, 8}, {9, 10}, {9, 11}, {10, 11},
                                            {2, 3}, {5, 6}, {8, 9}, {0, 11}};
  EXPECT_EQ(EdgeSet(g), expected);
}

// The topology-inference results' graphs: 10 cliques of 5 (N = 50) and of 10 (N = 100). Edges: 10 x
// (5*4/2) + 10 = 110 and 10 x (10*9/2) + 10 = 460. Per clique the first and last nodes carry a
// bridge: degree K, the other K - 2 nodes K - 1. Only the 10 bridges cross cliques, and removing
// the bridges that leave cliques 0 and 4 (two cuts of the ring) splits it, which a single bridge
// removal does not.
TEST(GeneratorsTest, RingOfCliquesT12Sizes) {
  for (const auto& [size, edges] : std::vector<std::pair<int, int>>{{5, 110}, {10, 460}}) {
    SCOPED_TRACE(size);
    const Graph g = RingOfCliques(10, size);
    EXPECT_EQ(g.num_nodes(), 10 * size);
    EXPECT_EQ(g.num_edges(), edges);
    EXPECT_TRUE(g.IsConnected());
    int crossing = 0;
    for (const auto& [u, v] : g.Edges()) {
      if (u / size == v / size) continue;
      ++crossing;
      // A bridge joins the last node of a clique to the first of the next (or 0 to N-1).
      const bool forward = v == u + 1 && v % size == 0;
      const bool wrap = u == 0 && v == 10 * size - 1;
      EXPECT_TRUE(forward || wrap) << u << "-" << v;
    }
    EXPECT_EQ(crossing, 10);
    for (int u = 0; u < 10 * size; ++u) {
      const bool bridge_end = u % size == 0 || u % size == size - 1;
      EXPECT_EQ(g.Degree(u), bridge_end ? size : size - 1) << "node " << u;
    }
    // Rebuild without some bridges (every edge but those) to check what holds the ring together.
    auto without = [&](const std::set<std::pair<int, int>>& cut) {
      Graph h(g.num_nodes());
      for (const auto& e : g.Edges()) {
        if (!cut.count(e)) h.AddEdge(e.first, e.second);
      }
      return h;
    };
    const std::pair<int, int> after0 = {size - 1, size};
    const std::pair<int, int> after4 = {5 * size - 1, 5 * size};
    EXPECT_TRUE(without({after0}).IsConnected());
    EXPECT_FALSE(without({after0, after4}).IsConnected());
  }
}

TEST(GeneratorsTest, RingOfCliquesEdgeCases) {
  EXPECT_EQ(RingOfCliques(1, 4).num_edges(), 6);  // K4, no bridge to itself
  ExpectAllDegrees(RingOfCliques(1, 4), 3);
  // Two triangles: 3 + 3 inside, bridges 2-3 and 5-0.
  EXPECT_EQ(EdgeSet(RingOfCliques(2, 3)),
            (std::set<std::pair<int, int>>{
                {0, 1}, {0, 2}, {1, 2}, {3, 4}, {3, 5}, {4, 5}, {2, 3}, {0, 5}}));
  EXPECT_EQ(EdgeSet(RingOfCliques(5, 1)), EdgeSet(Ring(5)));  // cliques of one node: a ring
  EXPECT_EQ(RingOfCliques(2, 1).num_edges(), 1);
  EXPECT_EQ(RingOfCliques(1, 1).num_edges(), 0);
  EXPECT_THROW(RingOfCliques(0, 3), std::invalid_argument);
  EXPECT_THROW(RingOfCliques(3, 0), std::invalid_argument);
}

TEST(GeneratorsTest, Grid) {
  // R(C-1) horizontal + C(R-1) vertical edges.
  EXPECT_EQ(Grid(5, 4).num_edges(), 5 * 3 + 4 * 4);
  EXPECT_EQ(Grid(1, 6).num_edges(), 5);
  EXPECT_EQ(Grid(1, 1).num_edges(), 0);
  EXPECT_TRUE(Grid(5, 4).IsConnected());
  const Graph g = Grid(3, 3);
  EXPECT_EQ(g.Degree(4), 4);      // centre
  EXPECT_EQ(g.Degree(0), 2);      // corner
  EXPECT_EQ(g.Degree(1), 3);      // side
  EXPECT_FALSE(g.HasEdge(2, 3));  // no wrap from the end of row 0 to the start of row 1
}

TEST(GeneratorsTest, CompleteAndStar) {
  for (int n : {1, 2, 5, 12}) {
    SCOPED_TRACE(n);
    EXPECT_EQ(Complete(n).num_edges(), n * (n - 1) / 2);
    ExpectAllDegrees(Complete(n), n - 1);
    const Graph star = Star(n);
    EXPECT_EQ(star.num_edges(), n - 1);
    EXPECT_EQ(star.Degree(0), n - 1);
    for (int v = 1; v < n; ++v) EXPECT_EQ(star.Neighbors(v), std::vector<int>{0});
  }
}

TEST(GeneratorsTest, ExponentialGraph) {
  // n = 8: offsets 1, 2, 4; node 0 meets 1, 2, 4 and 7, 6 (4 twice): degree 5, 8*5/2 = 20.
  EXPECT_EQ(Exponential(8).num_edges(), 20);
  ExpectAllDegrees(Exponential(8), 5);
  // n = 10: offsets 1, 2, 4, 8 (8 = -2): node 0 meets {1, 2, 4, 8, 9, 6}: degree 6, 30 edges.
  EXPECT_EQ(Exponential(10).num_edges(), 30);
  ExpectAllDegrees(Exponential(10), 6);
  EXPECT_EQ(Exponential(10).Neighbors(0), (std::vector<int>{1, 2, 4, 6, 8, 9}));
  // n = 16: offsets 1, 2, 4 give 16 edges each, offset 8 pairs i with i+8: 8 edges.
  EXPECT_EQ(Exponential(16).num_edges(), 56);
  EXPECT_EQ(Exponential(1).num_edges(), 0);
  EXPECT_EQ(Exponential(2).num_edges(), 1);
  EXPECT_EQ(Exponential(3).num_edges(), 3);  // offsets 1, 2 = -1: a triangle
}

TEST(GeneratorsTest, RandomRegularHasDegreeREverywhereAndIsConnected) {
  // Sparse and dense ones (2r > n-1, e.g. 64/62, 31/20, 8/6), a cycle (r = 2) and K_n (r = n-1).
  const std::vector<std::pair<int, int>> cases = {{16, 4}, {20, 3}, {10, 9},  {30, 2},  {50, 7},
                                                  {8, 6},  {2, 1},  {100, 3}, {64, 62}, {31, 20}};
  for (auto [n, r] : cases) {
    for (uint64_t seed : {1u, 2u, 3u}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " r=" + std::to_string(r) +
                   " seed=" + std::to_string(seed));
      const Graph g = RandomRegular(n, r, seed);
      EXPECT_EQ(g.num_nodes(), n);
      EXPECT_EQ(g.num_edges(), n * r / 2);
      ExpectAllDegrees(g, r);
      EXPECT_TRUE(g.IsConnected());
    }
  }
}

TEST(GeneratorsTest, RandomRegularCyclesAreUniform) {
  // Every connected 2-regular graph on 6 labelled nodes is a 6-cycle, and there are 5!/2 = 60 of
  // them. The generator treats labels symmetrically, so each should come up equally often: with
  // 6000 draws, 100 each. Chi-square with 59 degrees of freedom has mean 59 and sd 10.9; 120 is
  // more than 5 sd above the mean.
  std::map<std::set<std::pair<int, int>>, int> counts;
  constexpr int kDraws = 6000;
  for (uint64_t seed = 0; seed < kDraws; ++seed) ++counts[EdgeSet(RandomRegular(6, 2, seed))];
  EXPECT_EQ(counts.size(), 60u);
  double chi_square = 0.0;
  for (const auto& [edges, count] : counts) {
    EXPECT_EQ(edges.size(), 6u);
    chi_square += (count - 100.0) * (count - 100.0) / 100.0;
  }
  EXPECT_LT(chi_square, 120.0);
}

TEST(GeneratorsTest, RandomRegularIsSeeded) {
  EXPECT_EQ(EdgeSet(RandomRegular(16, 4, 11)), EdgeSet(RandomRegular(16, 4, 11)));
  EXPECT_NE(EdgeSet(RandomRegular(16, 4, 11)), EdgeSet(RandomRegular(16, 4, 12)));
  EXPECT_NE(EdgeSet(RandomRegular(40, 3, 0)), EdgeSet(RandomRegular(40, 3, 1)));
}

TEST(GeneratorsTest, RandomRegularRejectsImpossibleDegrees) {
  EXPECT_THROW(RandomRegular(15, 3, 1), std::invalid_argument);  // n*r odd
  EXPECT_THROW(RandomRegular(8, 8, 1), std::invalid_argument);   // r >= n
  EXPECT_THROW(RandomRegular(8, -2, 1), std::invalid_argument);
  EXPECT_THROW(RandomRegular(8, 1, 1), std::invalid_argument);  // a perfect matching
  EXPECT_THROW(RandomRegular(8, 0, 1), std::invalid_argument);
}

TEST(GeneratorsTest, ErdosRenyiIsConnectedAndSeeded) {
  for (uint64_t seed = 0; seed < 10; ++seed) {
    const Graph g = ErdosRenyi(30, 0.15, seed);
    EXPECT_EQ(g.num_nodes(), 30);
    EXPECT_TRUE(g.IsConnected()) << "seed " << seed;
  }
  EXPECT_EQ(EdgeSet(ErdosRenyi(25, 0.3, 42)), EdgeSet(ErdosRenyi(25, 0.3, 42)));
  EXPECT_NE(EdgeSet(ErdosRenyi(25, 0.3, 42)), EdgeSet(ErdosRenyi(25, 0.3, 43)));
  EXPECT_EQ(ErdosRenyi(9, 1.0, 5).num_edges(), 36);  // p = 1 is the complete graph
  EXPECT_EQ(ErdosRenyi(1, 0.5, 5).num_edges(), 0);
}

TEST(GeneratorsTest, ErdosRenyiEdgeCountMatchesP) {
  // G(200, 0.1): 19900 pairs, mean 1990 edges, standard deviation sqrt(19900*0.1*0.9) = 42.3.
  // Five standard deviations either way; a biased coin would miss this.
  for (uint64_t seed : {1u, 2u}) {
    const int edges = ErdosRenyi(200, 0.1, seed).num_edges();
    EXPECT_GT(edges, 1990 - 212) << "seed " << seed;
    EXPECT_LT(edges, 1990 + 212) << "seed " << seed;
  }
}

TEST(GeneratorsTest, ErdosRenyiRejectsBadP) {
  EXPECT_THROW(ErdosRenyi(10, 0.0, 1), std::invalid_argument);
  EXPECT_THROW(ErdosRenyi(10, -0.5, 1), std::invalid_argument);
  EXPECT_THROW(ErdosRenyi(10, 1.5, 1), std::invalid_argument);
  // Practically never connected: 1000 draws, then a clear error.
  ExpectThrowWith<std::runtime_error>([] { ErdosRenyi(60, 1e-4, 1); }, {"disconnected"});
}

// ---------------------------------------------------------------------------------------------
// Edge lists

TEST(EdgeListTest, RoundTrip) {
  TempDir dir;
  for (const Graph& g : {Torus(3, 4), Star(7), RandomRegular(12, 3, 9), Ring(2), Ring(1)}) {
    const std::string path = dir.Path("graph.txt");
    WriteEdgeList(g, path);
    const Graph back = ReadEdgeList(path);
    EXPECT_EQ(back.num_nodes(), g.num_nodes());
    EXPECT_EQ(back.Edges(), g.Edges());
  }
}

TEST(EdgeListTest, ReadsCommentsBlankLinesAndRepeats) {
  TempDir dir;
  const std::string path = dir.Write("g.txt",
                                     "# a path 0-1-2 plus the chord 0-2\n"
                                     "\n"
                                     "0 1   # first edge\n"
                                     "  1\t2\r\n"
                                     "2 1\n"
                                     "0 2\n");
  const Graph g = ReadEdgeList(path);
  EXPECT_EQ(g.num_nodes(), 3);  // max id + 1
  EXPECT_EQ(g.Edges(), (std::vector<std::pair<int, int>>{{0, 1}, {0, 2}, {1, 2}}));
}

TEST(EdgeListTest, NodesLineFixesTheCount) {
  TempDir dir;
  const Graph g = ReadEdgeList(dir.Write("g.txt", "nodes 1\n"));
  EXPECT_EQ(g.num_nodes(), 1);
  EXPECT_EQ(g.num_edges(), 0);
}

TEST(EdgeListTest, Errors) {
  TempDir dir;
  struct Case {
    std::string text;
    std::string where;   // "LINE:" expected after the path
    std::string reason;  // expected in the message
  };
  const std::vector<Case> cases = {
      {"0 1\n1 2 3\n", ":2:", "fields"},
      {"0 1\n\n1 x\n", ":3:", "'x'"},
      {"0 -1\n", ":1:", "'-1'"},
      {"0 1\n2 2\n", ":2:", "self loop"},
      {"nodes 3\n0 1\n1 3\n", ":3:", "'3'"},
      {"0 1\nnodes 2\n", ":2:", "first line"},
      {"nodes zero\n", ":1:", "node count"},
      {"nodes 0\n", ":1:", "node count"},
      {"0 1.5\n", ":1:", "'1.5'"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].text);
    const std::string path = dir.Write("bad" + std::to_string(i) + ".txt", cases[i].text);
    ExpectThrowWith<std::runtime_error>([&] { ReadEdgeList(path); },
                                        {path + cases[i].where + " ", cases[i].reason});
  }
}

TEST(EdgeListTest, DisconnectedUnreadableAndEmpty) {
  TempDir dir;
  const std::string split = dir.Write("split.txt", "0 1\n2 3\n3 4\n");
  ExpectThrowWith<std::runtime_error>([&] { ReadEdgeList(split); },
                                      {split, "disconnected", "nodes 2, 3, 4"});
  const std::string isolated = dir.Write("isolated.txt", "nodes 4\n0 1\n1 2\n");
  ExpectThrowWith<std::runtime_error>([&] { ReadEdgeList(isolated); }, {isolated, "node 3 is"});
  const std::string missing = dir.Path("does-not-exist.txt");
  ExpectThrowWith<std::runtime_error>([&] { ReadEdgeList(missing); }, {missing, "cannot read"});
  ExpectThrowWith<std::runtime_error>([&] { ReadEdgeList(dir.Path("")); }, {"directory"});
  const std::string empty = dir.Write("empty.txt", "# nothing\n\n");
  ExpectThrowWith<std::runtime_error>([&] { ReadEdgeList(empty); }, {empty});
}

// ---------------------------------------------------------------------------------------------
// Cluster files

// Valid 40-character Z85 keys, one starting with '#' and one with '#' inside.
const std::string kKeyA = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
const std::string kKeyHash = "#Ws8+NJb?}Oc0y6mY}t)ZiPbrUp3]^*zc:ydD0Rw";
const std::string kKeyInner = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID";

TEST(ClusterFileTest, RoundTrip) {
  ASSERT_EQ(kKeyA.size(), 40u);
  ASSERT_EQ(kKeyHash.size(), 40u);
  ASSERT_EQ(kKeyInner.size(), 40u);
  TempDir dir;
  Cluster cluster;
  cluster.graph = Ring(4);
  cluster.graph.AddEdge(0, 2);
  cluster.nodes = {{0, "tcp://127.0.0.2:7000", kKeyA},
                   {1, "tcp://[::1]:7001", kKeyHash},
                   {2, "ipc:///tmp/starling#2.sock", ""},
                   {3, "tcp://node3.example:65535", kKeyInner}};
  const std::string path = dir.Path("cluster.conf");
  WriteClusterFile(cluster, path);
  const Cluster back = ReadClusterFile(path);
  EXPECT_EQ(back.source, path);
  ASSERT_EQ(back.nodes.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(back.nodes[i].id, i);
    EXPECT_EQ(back.nodes[i].endpoint, cluster.nodes[i].endpoint);
    EXPECT_EQ(back.nodes[i].public_key, cluster.nodes[i].public_key);
  }
  EXPECT_EQ(back.graph.Edges(), cluster.graph.Edges());
  EXPECT_TRUE(LooksLikeClusterFile(path));
}

TEST(ClusterFileTest, ReadsHandWrittenFile) {
  TempDir dir;
  const std::string path = dir.Write("c.conf",
                                     "# three hosts on a LAN\n"
                                     "edge 0 1   # edges may come first\n"
                                     "node 2 tcp://10.0.0.3:7000  # no key\n"
                                     "node 0 tcp://10.0.0.1:7000 " +
                                         kKeyA +
                                         " # with key\n"
                                         "\n"
                                         "node 1 tcp://10.0.0.2:7000 " +
                                         kKeyHash +
                                         "\n"
                                         "edge 2 1\n"
                                         "edge 1 2\n");
  const Cluster c = ReadClusterFile(path);
  ASSERT_EQ(c.nodes.size(), 3u);
  EXPECT_EQ(c.nodes[0].endpoint, "tcp://10.0.0.1:7000");
  EXPECT_EQ(c.nodes[0].public_key, kKeyA);
  EXPECT_EQ(c.nodes[1].public_key, kKeyHash);
  EXPECT_EQ(c.nodes[2].endpoint, "tcp://10.0.0.3:7000");
  EXPECT_EQ(c.nodes[2].public_key, "");
  EXPECT_EQ(c.graph.Edges(), (std::vector<std::pair<int, int>>{{0, 1}, {1, 2}}));
}

TEST(ClusterFileTest, SingleNodeNeedsNoEdges) {
  TempDir dir;
  const Cluster c = ReadClusterFile(dir.Write("one.conf", "node 0 ipc://@starling-0\n"));
  EXPECT_EQ(c.graph.num_nodes(), 1);
}

TEST(ClusterFileTest, LineErrors) {
  TempDir dir;
  const std::string n0 = "node 0 tcp://h:1\n";
  const std::string n1 = "node 1 tcp://h:2\n";
  struct Case {
    std::string name;
    std::string text;
    std::string where;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {"unknown keyword", n0 + "nod 1 tcp://h:2\n", ":2:", "unknown keyword 'nod'"},
      {"node too few fields", n0 + "node 1\n", ":2:", "fields"},
      {"node too many fields", "node 0 tcp://h:1 " + kKeyA + " extra\n", ":1:", "fields"},
      {"edge too few fields", n0 + n1 + "edge 0\n", ":3:", "fields"},
      {"edge too many fields", n0 + n1 + "edge 0 1 2\n", ":3:", "fields"},
      {"non-integer id", "node zero tcp://h:1\n", ":1:", "'zero'"},
      {"negative id", "node -1 tcp://h:1\n", ":1:", "'-1'"},
      {"non-integer edge end", n0 + n1 + "edge 0 one\n", ":3:", "one"},
      {"duplicate id", n0 + n1 + "node 1 tcp://h:3\n", ":3:", "duplicate node id 1"},
      {"duplicate endpoint", n0 + "node 1 tcp://h:1\n", ":2:", "duplicate endpoint"},
      {"unknown node", n0 + n1 + "edge 0 1\nedge 1 5\n", ":4:", "unknown node 5"},
      {"self loop", n0 + n1 + "edge 0 1\nedge 1 1\n", ":4:", "self loop"},
      {"missing id", n0 + n1 + "node 3 tcp://h:4\n", ":3:", "missing 2"},
      {"udp endpoint", "node 0 udp://h:1\n", ":1:", "tcp://HOST:PORT"},
      {"no port", "node 0 tcp://host\n", ":1:", "tcp://HOST:PORT"},
      {"empty host", "node 0 tcp://:80\n", ":1:", "tcp://HOST:PORT"},
      {"port zero", "node 0 tcp://h:0\n", ":1:", "1..65535"},
      {"port too big", "node 0 tcp://h:65536\n", ":1:", "1..65535"},
      {"port not a number", "node 0 tcp://h:http\n", ":1:", "1..65535"},
      {"wildcard port", "node 0 tcp://h:*\n", ":1:", "1..65535"},
      {"unbracketed ipv6", "node 0 tcp://::1:80\n", ":1:", "[ADDR]"},
      {"empty ipc", "node 0 ipc://\n", ":1:", "ipc://PATH"},
      {"long ipc", "node 0 ipc:///" + std::string(120, 'a') + "\n", ":1:", "longer than"},
      {"bad key", "node 0 tcp://h:1 notakey\n", ":1:", "Z85"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name);
    const std::string path = dir.Write("bad" + std::to_string(i) + ".conf", cases[i].text);
    ExpectThrowWith<std::runtime_error>([&] { ReadClusterFile(path); },
                                        {path + cases[i].where + " ", cases[i].reason});
  }
}

TEST(ClusterFileTest, FileErrors) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 12; ++i) {
    text += "node " + std::to_string(i) + " tcp://127.0.0.1:" + std::to_string(7000 + i) + "\n";
  }
  // 0-1-2-3 connected; 4..11 isolated or in a separate component.
  text += "edge 0 1\nedge 1 2\nedge 2 3\nedge 4 5\nedge 6 7\n";
  const std::string split = dir.Write("split.conf", text);
  ExpectThrowWith<std::runtime_error>(
      [&] { ReadClusterFile(split); },
      {split + ": graph is disconnected", "nodes 4, 5, 6, 7, 8 (and 3 more)", "from node 0"});

  const std::string missing = dir.Path("absent.conf");
  ExpectThrowWith<std::runtime_error>([&] { ReadClusterFile(missing); }, {missing, "cannot read"});
  const std::string empty = dir.Write("empty.conf", "# no nodes\n");
  ExpectThrowWith<std::runtime_error>([&] { ReadClusterFile(empty); }, {empty, "no 'node'"});
}

TEST(ClusterFileTest, LooksLikeClusterFile) {
  TempDir dir;
  EXPECT_TRUE(LooksLikeClusterFile(dir.Write("a", "# header\n\nnode 0 tcp://h:1\n")));
  EXPECT_FALSE(LooksLikeClusterFile(dir.Write("b", "# header\n0 1\n")));
  EXPECT_FALSE(LooksLikeClusterFile(dir.Write("c", "nodes 3\n0 1\n")));
  EXPECT_FALSE(LooksLikeClusterFile(dir.Write("d", "")));
  EXPECT_FALSE(LooksLikeClusterFile(dir.Path("absent")));
}

TEST(ClusterFileTest, WriteRejectsInconsistentCluster) {
  TempDir dir;
  Cluster cluster;
  cluster.graph = Ring(3);
  cluster.nodes = {{0, "tcp://h:1", ""}, {1, "tcp://h:2", ""}};
  EXPECT_THROW(WriteClusterFile(cluster, dir.Path("x.conf")), std::invalid_argument);
  cluster.nodes.push_back({5, "tcp://h:3", ""});
  EXPECT_THROW(WriteClusterFile(cluster, dir.Path("x.conf")), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// Topology specs

TEST(MakeTopologyTest, BuildsEachSpec) {
  EXPECT_EQ(MakeTopology("ring", 16, 1).num_edges(), 16);
  EXPECT_EQ(MakeTopology("torus", 16, 1).num_edges(), 32);  // 4x4
  ExpectAllDegrees(MakeTopology("torus", 16, 1), 4);
  EXPECT_EQ(MakeTopology("torus", 15, 1).num_edges(), 30);  // 3x5
  EXPECT_EQ(MakeTopology("torus", 7, 1).num_edges(), 7);    // prime: 1x7, a ring
  EXPECT_EQ(EdgeSet(MakeTopology("torus:3x5", 15, 1)), EdgeSet(Torus(3, 5)));
  EXPECT_EQ(MakeTopology("grid:5x4", 20, 1).num_edges(), 31);
  EXPECT_EQ(MakeTopology("complete", 6, 1).num_edges(), 15);
  EXPECT_EQ(MakeTopology("star", 6, 1).num_edges(), 5);
  EXPECT_EQ(MakeTopology("exp", 8, 1).num_edges(), 20);
  const Graph regular = MakeTopology("regular:4", 16, 3);
  EXPECT_EQ(regular.num_edges(), 32);
  ExpectAllDegrees(regular, 4);
  EXPECT_EQ(EdgeSet(MakeTopology("er:0.3", 20, 7)), EdgeSet(MakeTopology("er:0.3", 20, 7)));
  EXPECT_EQ(EdgeSet(MakeTopology("er:0.3", 20, 7)), EdgeSet(ErdosRenyi(20, 0.3, 7)));
  EXPECT_EQ(MakeTopology("er:1", 5, 7).num_edges(), 10);
  EXPECT_EQ(MakeTopology("ring", 1, 1).num_edges(), 0);
  EXPECT_EQ(MakeTopology("ring-of-cliques:10x5", 50, 1).num_edges(), 110);
  EXPECT_EQ(EdgeSet(MakeTopology("ring-of-cliques:4x3", 12, 1)), EdgeSet(RingOfCliques(4, 3)));
}

TEST(MakeTopologyTest, ReadsFiles) {
  TempDir dir;
  const std::string edges = dir.Write("g.txt", "0 1\n1 2\n2 3\n");
  EXPECT_EQ(MakeTopology("file:" + edges, 4, 1).num_edges(), 3);
  const std::string cluster = dir.Write(
      "c.conf", "node 0 tcp://h:1\nnode 1 tcp://h:2\nnode 2 tcp://h:3\nedge 0 1\nedge 0 2\n");
  EXPECT_EQ(MakeTopology("file:" + cluster, 3, 1).Edges(),
            (std::vector<std::pair<int, int>>{{0, 1}, {0, 2}}));
  ExpectThrowWith<std::invalid_argument>(
      [&] { MakeTopology("file:" + edges, 5, 1); },
      {"--topology 'file:" + edges + "': 4 nodes but --nodes is 5"});
  const std::string missing = dir.Path("absent.txt");
  ExpectThrowWith<std::runtime_error>([&] { MakeTopology("file:" + missing, 5, 1); },
                                      {missing, "cannot read"});
  const std::string bad = dir.Write("bad.conf", "node 0 tcp://h:1\nnode 1 tcp://h:1\n");
  ExpectThrowWith<std::runtime_error>([&] { MakeTopology("file:" + bad, 2, 1); },
                                      {bad + ":2: duplicate endpoint"});
}

TEST(MakeTopologyTest, ShapeMismatchMessage) {
  try {
    MakeTopology("torus:3x5", 16, 1);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "--topology 'torus:3x5': 15 nodes but --nodes is 16");
  }
  try {
    MakeTopology("ring-of-cliques:10x5", 100, 1);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "--topology 'ring-of-cliques:10x5': 50 nodes but --nodes is 100");
  }
}

TEST(MakeTopologyTest, BadSpecsNameTheSpec) {
  std::vector<std::pair<std::string, int>> cases = {
      {"foo", 8},        {"", 8},          {"Ring", 8},        {"ring:3", 8},
      {"torus:3x", 8},   {"torus:0x8", 8}, {"torus:2x4x", 8},  {"grid", 8},
      {"grid:3x3", 8},   {"er", 8},        {"er:0", 8},        {"er:1.5", 8},
      {"er:-0.2", 8},    {"er:abc", 8},    {"er:0.3x", 8},     {"er:nan", 8},
      {"regular", 8},    {"regular:x", 8}, {"regular:3", 15},  {"regular:8", 8},
      {"regular:-2", 8}, {"regular:1", 8}, {"regular:2.5", 8}, {"file:", 8},
      {"complete:4", 8}, {"star:x", 8},    {"exp:2", 8},       {"ring", 0},
  };
  // 3x3 is 9 nodes, not 8.
  for (const char* spec : {"ring-of-cliques", "ring-of-cliques:4", "ring-of-cliques:0x8",
                           "ring-of-cliques:3x3", "ring-of-cliques:2x4:1"}) {
    cases.emplace_back(spec, 8);
  }
  for (const auto& c : cases) {
    const std::string& spec = c.first;
    const int n = c.second;  // a lambda may not capture a structured binding before C++20
    SCOPED_TRACE(spec);
    ExpectThrowWith<std::invalid_argument>([&] { MakeTopology(spec, n, 1); },
                                           {"--topology '" + spec + "': "});
  }
  ExpectThrowWith<std::invalid_argument>([] { MakeTopology("foo", 8, 1); },
                                         {"unknown topology 'foo'", "regular:R"});
}

TEST(MakeTopologyTest, GeneratorFailureNamesTheSpec) {
  ExpectThrowWith<std::runtime_error>([] { MakeTopology("er:0.0001", 60, 1); },
                                      {"--topology 'er:0.0001': ", "disconnected"});
}

TEST(MakeTopologyTest, HelpListsEverySpec) {
  const std::string help = TopologySpecs();
  for (const char* name : {"ring", "torus:RxC", "grid:RxC", "complete", "star", "er:P", "regular:R",
                           "exp", "ring-of-cliques:CxK", "file:PATH"}) {
    EXPECT_THAT(help, HasSubstr(name));
  }
}

}  // namespace
}  // namespace starling::topology
