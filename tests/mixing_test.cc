// Mixing matrices and spectral quantities. Reference values are closed forms computed here, or the
// OPTRA authors' own Laplacian (real data, optra-least-squares/laplacian.csv in the shared data
// folder).
#include "topology/mixing.h"

#include <gtest/gtest.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/test_data.h"
#include "topology/generators.h"
#include "topology/graph.h"
#include "topology/spectral.h"

namespace starling::topology {
namespace {

const double kPi = std::acos(-1.0);

struct NamedGraph {
  std::string name;
  Graph graph;
};

std::vector<NamedGraph> ConnectedGraphs() {
  return {{"ring12", Ring(12)},
          {"ring7", Ring(7)},
          {"torus4x5", Torus(4, 5)},
          {"grid5x4", Grid(5, 4)},
          {"er30", ErdosRenyi(30, 0.2, 3)},
          {"er20", ErdosRenyi(20, 0.3, 11)},
          {"star10", Star(10)},
          {"regular20x4", RandomRegular(20, 4, 5)},
          {"regular31x6", RandomRegular(31, 6, 2)},
          {"exp16", Exponential(16)},
          {"complete6", Complete(6)}};
}

// Checks the §1.2 requirements of a mixing matrix for `graph`.
void ExpectValidMixingMatrix(const Eigen::MatrixXd& w, const Graph& graph) {
  const int n = graph.num_nodes();
  ASSERT_EQ(w.rows(), n);
  ASSERT_EQ(w.cols(), n);
  for (int i = 0; i < n; ++i) {
    EXPECT_NEAR(w.row(i).sum(), 1.0, 1e-14) << "row " << i;
    EXPECT_NEAR(w.col(i).sum(), 1.0, 1e-14) << "column " << i;
    for (int j = 0; j < n; ++j) {
      EXPECT_EQ(w(i, j), w(j, i)) << i << "," << j;
      EXPECT_GE(w(i, j), 0.0) << i << "," << j;
      if (i == j) continue;
      if (graph.HasEdge(i, j)) {
        EXPECT_GT(w(i, j), 0.0) << i << "," << j;
      } else {
        EXPECT_EQ(w(i, j), 0.0) << i << "," << j;
      }
    }
  }
}

TEST(MetropolisHastingsTest, IsSymmetricDoublyStochasticOnTheGraph) {
  for (const auto& [name, graph] : ConnectedGraphs()) {
    SCOPED_TRACE(name);
    ExpectValidMixingMatrix(MetropolisHastings(graph), graph);
  }
}

TEST(MetropolisHastingsTest, EdgeWeightIsOneOverMaxDegreePlusOne) {
  // Star with 5 nodes: centre degree 4, leaves degree 1, so every edge weighs 1/5, the centre
  // keeps 1 - 4/5 = 1/5 and each leaf keeps 4/5.
  const Eigen::MatrixXd w = MetropolisHastings(Star(5));
  EXPECT_DOUBLE_EQ(w(0, 0), 0.2);
  for (int leaf = 1; leaf < 5; ++leaf) {
    EXPECT_DOUBLE_EQ(w(0, leaf), 0.2);
    EXPECT_DOUBLE_EQ(w(leaf, leaf), 0.8);
  }
  // A path 0-1-2 plus the pendant 3 on 2: degrees 1, 2, 2, 1.
  Graph path(4);
  path.AddEdge(0, 1);
  path.AddEdge(1, 2);
  path.AddEdge(2, 3);
  const Eigen::MatrixXd p = MetropolisHastings(path);
  EXPECT_DOUBLE_EQ(p(0, 1), 1.0 / 3);
  EXPECT_DOUBLE_EQ(p(1, 2), 1.0 / 3);
  EXPECT_DOUBLE_EQ(p(0, 0), 2.0 / 3);
  EXPECT_DOUBLE_EQ(p(1, 1), 1.0 / 3);
}

TEST(MixingRateTest, BelowOneOnConnectedGraphs) {
  for (const auto& [name, graph] : ConnectedGraphs()) {
    SCOPED_TRACE(name);
    const double alpha = MixingRate(MetropolisHastings(graph));
    EXPECT_GE(alpha, 0.0);
    EXPECT_LT(alpha, 1.0 - 1e-6);
  }
}

TEST(MixingRateTest, OneOnADisconnectedGraph) {
  // Two triangles, 0-1-2 and 3-4-5: W has the eigenvalue 1 twice, so ||W - J|| = 1.
  Graph g(6);
  for (int base : {0, 3}) {
    g.AddEdge(base, base + 1);
    g.AddEdge(base + 1, base + 2);
    g.AddEdge(base, base + 2);
  }
  ASSERT_FALSE(g.IsConnected());
  EXPECT_NEAR(MixingRate(MetropolisHastings(g)), 1.0, 1e-12);
  EXPECT_NEAR(LaplacianEigen(LaplacianOf(MetropolisHastings(g))).lambda2, 0.0, 1e-12);
}

TEST(MixingRateTest, RingClosedForm) {
  // MH on a ring (n >= 3): every degree is 2, so W has 1/3 on the diagonal and both neighbours.
  // W is circulant with eigenvalues 1/3 + (2/3) cos(2 pi k / n); alpha is the largest |.| over
  // k != 0 (k = 0 is the eigenvalue 1 that J removes).
  for (int n : {3, 4, 5, 6, 8, 11, 12, 25, 40}) {
    SCOPED_TRACE(n);
    const Eigen::MatrixXd w = MetropolisHastings(Ring(n));
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        const int d = std::abs(i - j);
        const bool near = d <= 1 || d == n - 1;
        EXPECT_NEAR(w(i, j), near ? 1.0 / 3 : 0.0, 1e-15) << i << "," << j;
      }
    }
    double expected = 0.0;
    for (int k = 1; k < n; ++k) {
      expected = std::max(expected, std::abs(1.0 / 3 + 2.0 / 3 * std::cos(2 * kPi * k / n)));
    }
    EXPECT_NEAR(MixingRate(w), expected, 1e-12);
    if (n >= 4) {  // eigenvalues lie in [-1/3, 1] and k = 1 gives one >= 1/3: it is alpha
      EXPECT_NEAR(MixingRate(w), 1.0 / 3 + 2.0 / 3 * std::cos(2 * kPi / n), 1e-12);
    }
  }
}

TEST(MixingRateTest, CompleteGraphMixesInOneStep) {
  // MH on K_n: every weight is 1/n, so W = J and alpha = 0.
  for (int n : {2, 3, 7, 20}) {
    SCOPED_TRACE(n);
    const Eigen::MatrixXd w = MetropolisHastings(Complete(n));
    EXPECT_NEAR((w - Eigen::MatrixXd::Constant(n, n, 1.0 / n)).cwiseAbs().maxCoeff(), 0.0, 1e-15);
    EXPECT_NEAR(MixingRate(w), 0.0, 1e-12);
  }
}

TEST(MixingRateTest, CountsNegativeEigenvalues) {
  // The swap [[0, 1], [1, 0]] is symmetric and doubly stochastic; W - J has eigenvalues 0 and -1,
  // so the norm is 1 although no eigenvalue of W - J is positive.
  Eigen::MatrixXd swap(2, 2);
  swap << 0.0, 1.0, 1.0, 0.0;
  EXPECT_NEAR(MixingRate(swap), 1.0, 1e-12);
  // 0.8 I + 0.2 swap: eigenvalues of W are 1 and 0.6, so alpha = 0.6.
  const Eigen::MatrixXd mixed = 0.8 * Eigen::MatrixXd::Identity(2, 2) + 0.2 * swap;
  EXPECT_NEAR(MixingRate(mixed), 0.6, 1e-12);
}

TEST(MixingRateTest, RejectsNonSymmetricInput) {
  Eigen::MatrixXd w(2, 2);
  w << 0.5, 0.5, 0.2, 0.8;
  EXPECT_THROW(MixingRate(w), std::invalid_argument);
  EXPECT_THROW(LaplacianEigen(w), std::invalid_argument);
  EXPECT_THROW(MixingRate(Eigen::MatrixXd(2, 3)), std::invalid_argument);
}

TEST(LazyTest, DampsWhenTheSmallestDiagonalIsBelowTenPercent) {
  // Star with 20 nodes: the centre keeps 1/20, so c = 0.9 / (1 - 1/20) = 18/19 < 1.
  const Graph star = Star(20);
  const Eigen::MatrixXd w = MetropolisHastings(star);
  const double c = 0.9 / (1.0 - 1.0 / 20);
  const Eigen::MatrixXd expected = c * w + (1 - c) * Eigen::MatrixXd::Identity(20, 20);
  const Eigen::MatrixXd lazy = Lazy(w);
  EXPECT_NEAR((lazy - expected).cwiseAbs().maxCoeff(), 0.0, 1e-15);
  ExpectValidMixingMatrix(lazy, star);
  // The choice of c makes the smallest diagonal entry exactly 1 - 0.9.
  EXPECT_NEAR(lazy.diagonal().minCoeff(), 0.1, 1e-14);
}

TEST(LazyTest, CapsCAtOne) {
  // Ring: min W_ii = 1/3 gives 0.9 / (2/3) = 1.35, capped at 1, so W is returned unchanged.
  const Eigen::MatrixXd w = MetropolisHastings(Ring(10));
  EXPECT_EQ(Lazy(w), w);
  // No edges: W = I.
  EXPECT_EQ(Lazy(Eigen::MatrixXd::Identity(4, 4)), Eigen::MatrixXd::Identity(4, 4));
}

TEST(LazyTest, IsSymmetricDoublyStochasticOnEveryGraph) {
  for (const auto& [name, graph] : ConnectedGraphs()) {
    SCOPED_TRACE(name);
    const Eigen::MatrixXd lazy = Lazy(MetropolisHastings(graph));
    ExpectValidMixingMatrix(lazy, graph);
    EXPECT_LT(MixingRate(lazy), 1.0);
  }
}

TEST(LaplacianTest, LaplacianOfIsIdentityMinusW) {
  const Eigen::MatrixXd w = MetropolisHastings(Torus(3, 4));
  const Eigen::MatrixXd l = LaplacianOf(w);
  for (int i = 0; i < 12; ++i) {
    for (int j = 0; j < 12; ++j) EXPECT_EQ(l(i, j), (i == j ? 1.0 : 0.0) - w(i, j));
  }
  EXPECT_NEAR((l * Eigen::VectorXd::Ones(12)).cwiseAbs().maxCoeff(), 0.0, 1e-15);
}

TEST(LaplacianTest, RingSpectrumMatchesClosedForm) {
  for (int n : {3, 4, 9, 16, 33}) {
    SCOPED_TRACE(n);
    // I - W for MH weights: eigenvalues (2/3)(1 - cos(2 pi k / n)).
    // The combinatorial Laplacian D - A: eigenvalues 2 - 2 cos(2 pi k / n).
    double lambda2 = 1e9;
    double lambda_max = 0.0;
    for (int k = 1; k < n; ++k) {
      const double value = 1.0 - std::cos(2 * kPi * k / n);
      lambda2 = std::min(lambda2, value);
      lambda_max = std::max(lambda_max, value);
    }
    const LaplacianSpectrum mh = LaplacianEigen(LaplacianOf(MetropolisHastings(Ring(n))));
    EXPECT_NEAR(mh.lambda2, 2.0 / 3 * lambda2, 1e-12);
    EXPECT_NEAR(mh.lambda_max, 2.0 / 3 * lambda_max, 1e-12);
    EXPECT_NEAR(mh.eigengap_ratio(), lambda2 / lambda_max, 1e-12);

    Eigen::MatrixXd combinatorial = 2.0 * Eigen::MatrixXd::Identity(n, n);
    for (int i = 0; i < n; ++i) {
      combinatorial(i, (i + 1) % n) -= 1.0;
      combinatorial((i + 1) % n, i) -= 1.0;
    }
    const LaplacianSpectrum plain = LaplacianEigen(combinatorial);
    EXPECT_NEAR(plain.lambda2, 2.0 * lambda2, 1e-12);
    EXPECT_NEAR(plain.lambda_max, 2.0 * lambda_max, 1e-12);
  }
}

TEST(LaplacianTest, CompleteGraphSpectrum) {
  // D - A of K_n: 0 once and n with multiplicity n - 1, so the eigengap ratio is 1.
  const int n = 9;
  const Eigen::MatrixXd l = n * Eigen::MatrixXd::Identity(n, n) - Eigen::MatrixXd::Ones(n, n);
  const LaplacianSpectrum s = LaplacianEigen(l);
  EXPECT_NEAR(s.lambda2, n, 1e-12);
  EXPECT_NEAR(s.lambda_max, n, 1e-12);
  EXPECT_NEAR(s.eigengap_ratio(), 1.0, 1e-12);
  EXPECT_EQ(LaplacianEigen(Eigen::MatrixXd::Zero(1, 1)).eigengap_ratio(), 0.0);
}

// Reads a dense CSV matrix of doubles.
Eigen::MatrixXd ReadCsvMatrix(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<double>> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<double> row;
    std::stringstream cells(line);
    std::string cell;
    while (std::getline(cells, cell, ',')) row.push_back(std::stod(cell));
    rows.push_back(row);
  }
  Eigen::MatrixXd m(rows.size(), rows.empty() ? 0 : rows[0].size());
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].size() != static_cast<size_t>(m.cols())) {
      ADD_FAILURE() << path << ": row " << i << " has " << rows[i].size() << " cells";
      return Eigen::MatrixXd();
    }
    for (size_t j = 0; j < rows[i].size(); ++j) m(i, j) = rows[i][j];
  }
  return m;
}

// The OPTRA authors' Laplacian I - W, built with MH weights on their 20-node ER graph (22 edges,
// eigengap ratio 0.0168, as the authors report it).
TEST(OptraLaplacianTest, MetropolisHastingsReproducesTheAuthorsWeights) {
  const std::string path = testing::SharedData("optra-least-squares/laplacian.csv");
  STARLING_REQUIRE_FILE(path);
  const Eigen::MatrixXd lap = ReadCsvMatrix(path);
  ASSERT_EQ(lap.rows(), 20);
  ASSERT_EQ(lap.cols(), 20);

  Graph graph(20);
  for (int i = 0; i < 20; ++i) {
    for (int j = i + 1; j < 20; ++j) {
      if (lap(i, j) != 0.0) graph.AddEdge(i, j);
    }
  }
  EXPECT_EQ(graph.num_edges(), 22);
  EXPECT_TRUE(graph.IsConnected());

  const Eigen::MatrixXd w_file = Eigen::MatrixXd::Identity(20, 20) - lap;
  const Eigen::MatrixXd w = MetropolisHastings(graph);
  EXPECT_LT((w - w_file).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_LT((LaplacianOf(w) - lap).cwiseAbs().maxCoeff(), 1e-12);

  const LaplacianSpectrum spectrum = LaplacianEigen(lap);
  EXPECT_NEAR(spectrum.eigengap_ratio(), 0.0168, 0.00005);  // 3 significant digits
  EXPECT_NEAR(LaplacianEigen(LaplacianOf(w)).eigengap_ratio(), spectrum.eigengap_ratio(), 1e-12);
  EXPECT_LT(MixingRate(w), 1.0);
}

}  // namespace
}  // namespace starling::topology
