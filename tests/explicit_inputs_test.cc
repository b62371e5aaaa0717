// The inputs a user with their own instance gives: pre-partitioned CSV data,
// explicit mixing / Laplacian matrices, starting-point and reference-solution files, and the
// Bregman gap built on them, checked on hand-made files and on the OPTRA authors' instance.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "algorithms/data/partition.h"
#include "algorithms/data/readers.h"
#include "node/config/run_options.h"
#include "node/config/run_setup.h"
#include "node/sim/round_simulator.h"
#include "node/sim/sim_runner.h"
#include "tests/optra_instance.h"
#include "tests/test_data.h"
#include "topology/matrix_file.h"

namespace starling {
namespace {

std::string Write(const std::string& name, const std::string& text) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("starling_explicit_" + name)).string();
  std::ofstream(path) << text;
  return path;
}

// Expects `body` to throw std::exception whose message contains every piece of `parts`.
template <typename F>
void ExpectError(F body, const std::vector<std::string>& parts) {
  try {
    body();
    ADD_FAILURE() << "no exception";
  } catch (const std::exception& e) {
    for (const std::string& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST(ExplicitInputs, CsvNodeColumnIsReadAndSplitsTheRows) {
  const std::string path = Write("nodes.csv",
                                 "# node,y,a,b\n"
                                 "1,0.5,1,2\n"
                                 "0,1.5,3,4\n"
                                 "1,2.5,5,6\n");
  const algorithms::Dataset data = algorithms::ReadCsv(path, 1, 0);
  ASSERT_EQ(data.num_samples(), 3);
  EXPECT_EQ(data.num_features, 2);
  EXPECT_EQ(data.node_of_row, (std::vector<int>{1, 0, 1}));
  EXPECT_EQ(data.labels(1), 1.5);
  EXPECT_EQ(data.dense(2, 0), 5);
  EXPECT_EQ(data.dense(2, 1), 6);
  EXPECT_EQ(algorithms::NodeColumnOf("column:0"), 0);
  EXPECT_EQ(algorithms::NodeColumnOf("iid"), -1);
  EXPECT_THROW(algorithms::NodeColumnOf("column:x"), std::invalid_argument);
  const algorithms::Shards shards = algorithms::Partition(data, "column:0", 2, 1);
  EXPECT_EQ(shards[0], (std::vector<int>{1}));
  EXPECT_EQ(shards[1], (std::vector<int>{0, 2}));
  ExpectError([&] { algorithms::Partition(data, "column:0", 3, 1); },
              {path, "no data row belongs to node 2"});
  ExpectError([&] { algorithms::Partition(data, "column:0", 1, 1); },
              {path, "belongs to node 1", "only 1 nodes"});
  const std::string bad = Write("badnode.csv", "0,1,2\n1.5,1,2\n");
  ExpectError([&] { algorithms::ReadCsv(bad, 1, 0); }, {bad + ":2:", "node id '1.5'"});
}

TEST(ExplicitInputs, MixingFilesAreValidated) {
  // A path graph 0-1-2 with MH weights, as W and as Lap = I - W.
  const std::string w = Write("w.txt", "0.5 0.5 0\n0.5, 0.25, 0.25\n0 0.25 0.75\n");
  const Eigen::MatrixXd m = topology::ReadMixingFile(w, false, 3);
  EXPECT_EQ(m(1, 2), 0.25);
  const topology::Graph g = topology::GraphOfMixing(m);
  EXPECT_EQ(g.num_edges(), 2);
  const std::string lap = Write("lap.csv", "0.5,-0.5,0\n-0.5,0.75,-0.25\n0,-0.25,0.25\n");
  EXPECT_LT((topology::ReadMixingFile(lap, true, 3) - m).norm(), 1e-15);
  ExpectError([&] { topology::ReadMixingFile(w, false, 4); }, {w, "--nodes is 4"});
  ExpectError([&] { topology::ReadMixingFile(w, true, 3); }, {w, "Laplacian", "row 0"});
  const std::string asym = Write("asym.txt", "0.5 0.5 0\n0.4 0.35 0.25\n0 0.25 0.75\n");
  ExpectError([&] { topology::ReadMixingFile(asym, false, 3); }, {asym, "not symmetric"});
  const std::string split = Write("split.txt", "1 0 0\n0 0.5 0.5\n0 0.5 0.5\n");
  ExpectError([&] { topology::ReadMixingFile(split, false, 3); }, {split, "disconnected"});
  const std::string ragged = Write("ragged.txt", "1 0\n0 1 0\n");
  ExpectError([&] { topology::ReadMatrixFile(ragged); }, {ragged + ":2:", "3 numbers"});
  const std::string nan = Write("nan.txt", "1 nan\n");
  ExpectError([&] { topology::ReadMatrixFile(nan); }, {nan + ":1:", "'nan'"});
}

Vec Vec2(double a, double b) { return (Vec(2) << a, b).finished(); }

node::RunConfig SmallConfig() {
  node::RunConfig c;
  c.algorithm = "extra";
  c.problem = "least-squares";
  c.l2 = 0.1;
  c.data = Write("small.csv", "0,1,1,0\n0,2,0,1\n1,3,1,1\n1,-1,2,0\n2,0.5,0,2\n2,1,1,-1\n");
  c.format = "csv";
  c.partition = "column:0";
  c.label_column = 1;
  c.nodes = 3;
  c.mixing_file = Write("w3.txt", "0.5 0.5 0\n0.5 0.25 0.25\n0 0.25 0.75\n");
  c.step = 0.1;
  return c;
}

// Both Bregman gaps on a 3-node, d = 2 instance against their formulas written out here, with
// f_i(x) = s sum_r (a_r.x - y_r)^2 / 2 + (l2/2)||x||^2 and a point x* that is NOT a minimiser,
// so the general gap and the authors' evaluate.m variant differ by sum_i <grad f_i(x*), x*>:
//   general:    | sum_i f_i(x_i) - f_i(x*) - <g_i, x_i - x*> |
//   evaluate.m: | sum_i f_i(x_i) - <g_i, x_i> - sum_i f_i(x*) |,   g_i = grad f_i(x*).
TEST(ExplicitInputs, BothBregmanGapsMatchTheirFormulasOnATinyInstance) {
  node::RunConfig c = SmallConfig();
  c.l2 = 0.2;
  c.loss_scale = 3.0;
  c.x_star = Write("xstar_tiny.txt", "0.3 -0.7\n");
  const node::RunSetup setup = node::BuildRunSetup(c);
  // The rows of SmallConfig's file, per node: (y, a).
  const std::vector<std::vector<std::pair<double, Vec>>> rows = {
      {{1, Vec2(1, 0)}, {2, Vec2(0, 1)}},
      {{3, Vec2(1, 1)}, {-1, Vec2(2, 0)}},
      {{0.5, Vec2(0, 2)}, {1, Vec2(1, -1)}}};
  auto f = [&](int i, const Vec& x) {
    double v = 0.1 * x.squaredNorm();
    for (const auto& [y, a] : rows[i]) v += 1.5 * (a.dot(x) - y) * (a.dot(x) - y);
    return v;
  };
  auto grad = [&](int i, const Vec& x) {
    Vec g = 0.2 * x;
    for (const auto& [y, a] : rows[i]) g += 3.0 * (a.dot(x) - y) * a;
    return g;
  };
  const Vec xs = Vec2(0.3, -0.7);
  const std::vector<Vec> models = {Vec2(1, 2), Vec2(-0.5, 0.25), Vec2(4, -3)};
  double general = 0.0, evaluate_m = 0.0, star = 0.0, linear = 0.0;
  for (int i = 0; i < 3; ++i) {
    general += f(i, models[i]) - f(i, xs) - grad(i, xs).dot(models[i] - xs);
    evaluate_m += f(i, models[i]) - grad(i, xs).dot(models[i]);
    star += f(i, xs);
    linear += grad(i, xs).dot(xs);
  }
  evaluate_m -= star;
  ASSERT_GT(std::abs(linear), 0.1);  // x* is far from a minimiser: the two gaps must differ
  const node::BregmanGap bregman(setup);
  auto model_of = [&](int i) { return &models[i]; };
  EXPECT_NEAR(bregman.At(model_of), std::abs(general), 1e-12 * std::abs(general));
  EXPECT_NEAR(bregman.EvaluateMAt(model_of), std::abs(evaluate_m), 1e-12 * std::abs(evaluate_m));
  EXPECT_GT(std::abs(bregman.At(model_of) - bregman.EvaluateMAt(model_of)), 0.05);
}

TEST(ExplicitInputs, StartingPointsComeFromAFile) {
  node::RunConfig c = SmallConfig();
  c.x0 = Write("x0_all.txt", "1 2\n3 4\n5 6\n");
  node::RunSetup s = node::BuildRunSetup(c);
  EXPECT_EQ(s.nodes[2].x0, (Vec(2) << 5, 6).finished());
  EXPECT_EQ(s.graph.num_edges(), 2);
  EXPECT_EQ(s.nodes[1].neighbor_weights, (std::vector<double>{0.5, 0.25}));
  c.x0 = Write("x0_one.txt", "7, 8\n");
  s = node::BuildRunSetup(c);
  EXPECT_EQ(s.nodes[0].x0, (Vec(2) << 7, 8).finished());
  EXPECT_EQ(s.nodes[2].x0, (Vec(2) << 7, 8).finished());
  c.x0 = Write("x0_bad.txt", "1 2 3\n");
  ExpectError([&] { node::BuildRunSetup(c); }, {"--x0", "x0_bad.txt", "1 x 3"});
}

// The MLP from zeros never learns: its hidden units stay identical (W1 = 0 gives h = relu(b1) = 0,
// so the gradients of W1 and W2 are zero). Without --x0 it starts from the small shared point, and
// --x0 zeros is refused naming both options.
TEST(ExplicitInputs, TheMlpStartsFromASmallSharedPointAndRefusesZeros) {
  node::RunConfig c;
  c.algorithm = "dpsgd";
  c.problem = "mlp";
  c.hidden = 3;
  c.l2 = 1e-3;
  c.step = 0.1;
  c.data = Write("classes.csv", "0,0,1,0\n0,1,0,1\n1,2,1,1\n1,0,2,0\n2,1,0,2\n2,2,1,-1\n");
  c.format = "csv";
  c.partition = "column:0";
  c.label_column = 1;
  c.nodes = 3;
  c.topology = "ring";
  node::ValidateRunConfig(c);
  const node::RunSetup s = node::BuildRunSetup(c);
  const Vec& x0 = s.nodes[0].x0;
  ASSERT_EQ(x0.size(), 3 * 2 + 3 + 3 * 3 + 3);  // W1, b1, W2, b2 for d = 2, H = 3, K = 3
  for (const auto& n : s.nodes) EXPECT_EQ(n.x0, x0);  // one shared starting point
  EXPECT_LE(x0.cwiseAbs().maxCoeff(), 0.05);
  EXPECT_GT(x0.cwiseAbs().minCoeff(), 0.0);
  Vec grad;
  s.global->Gradient(x0, &grad);
  EXPECT_GT(grad.head(3 * 2).norm(), 1e-6);  // W1 moves: the hidden units can learn
  c.x0 = "zeros";
  ExpectError([&] { node::ValidateRunConfig(c); }, {"--x0 zeros", "--problem mlp", "--x0 small"});
}

// The Bregman gap against the authors' formula (their evaluate.m), written out here:
// G = | sum_i ( ||A_i X_i - b_i||^2 - 2 X_i^T A_i^T (A_i x* - b_i) ) - fmin |, fmin = F(x*).
TEST(ExplicitInputs, BregmanGapMatchesTheAuthorsFormulaOnTheirInstance) {
  STARLING_REQUIRE_OPTRA_INSTANCE();
  node::RunConfig c = testing::OptraInstanceConfig("optra");
  c.iterations = 50;
  c.params.Set("horizon", int64_t{20000});
  const node::RunSetup setup = node::BuildRunSetup(c);
  ASSERT_EQ(setup.dim, 500);

  // A_i and b_i straight from the file.
  const Eigen::MatrixXd rows = topology::ReadMatrixFile(c.data);
  ASSERT_EQ(rows.rows(), 200);
  std::vector<Eigen::MatrixXd> a(20);
  std::vector<Vec> b(20);
  for (int i = 0; i < 20; ++i) {
    a[i].resize(10, 500);
    b[i].resize(10);
    for (int r = 0, k = 0; r < rows.rows(); ++r) {
      if (rows(r, 0) != i) continue;
      b[i](k) = rows(r, 1);
      a[i].row(k++) = rows.row(r).tail(500);
    }
  }
  const Vec x_star = topology::ReadMatrixFile(c.x_star).reshaped();
  double fmin = 0.0;
  for (int i = 0; i < 20; ++i) fmin += (a[i] * x_star - b[i]).squaredNorm();
  auto authors = [&](const node::RoundSimulator& sim) {
    double sum = 0.0;
    for (int i = 0; i < 20; ++i) {
      const Vec& x = sim.node(i).Model();
      sum += (a[i] * x - b[i]).squaredNorm() - 2 * x.dot(a[i].transpose() * (a[i] * x_star - b[i]));
    }
    return std::abs(sum - fmin);
  };
  const node::BregmanGap bregman(setup);
  node::RoundSimulator sim(setup.nodes, node::RoundOptionsFor(c, setup));
  for (int k : {0, 1, 10, 50}) {
    sim.RunUntilIteration(k);
    const double ours = bregman.At([&](int i) { return &sim.node(i).Model(); });
    EXPECT_NEAR(ours, authors(sim), 1e-9 * authors(sim)) << "iteration " << k;
    const double theirs = bregman.EvaluateMAt([&](int i) { return &sim.node(i).Model(); });
    EXPECT_NEAR(theirs, authors(sim), 1e-12 * authors(sim) + 1e-11) << "iteration " << k;
  }
}

}  // namespace
}  // namespace starling
