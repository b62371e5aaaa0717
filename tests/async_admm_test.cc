// Edge-activated asynchronous ADMM (algorithms/pairwise/async_admm.h) in the
// simulators: the dual invariant v_ie + v_je = 0 and equal copies of z_e on every edge of a
// fault-free run; the fixed point equal to the centralized optimum (least squares: Eigen's own
// solve of the normal equations of data this test writes; logistic and multinomial: the
// reference solver on the whole data); a9a logistic to a relative gap of 1e-8; determinism for
// a seed; checkpoints; what holds under loss.
#include "algorithms/pairwise/async_admm.h"

#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <Eigen/QR>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "algorithms/problems/reference_solver.h"
#include "net/fault_plan.h"
#include "node/config/run_setup.h"
#include "node/sim/faulty_pairwise_simulator.h"
#include "node/sim/pairwise_simulator.h"
#include "node/sim/sim_runner.h"
#include "tests/fake_quadratic.h"
#include "tests/temp_dir_test.h"
#include "tests/test_data.h"
#include "tests/written_data.h"

namespace starling {
namespace {

using algorithms::AsyncAdmm;

// Least-squares rows this test writes and keeps: b = A w + noise, columns of different scales.
struct LeastSquaresData {
  Eigen::MatrixXd a;
  Vec b;
  std::string path;
};

LeastSquaresData WriteLeastSquares(const std::string& path, int rows, int dim, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  LeastSquaresData d{Eigen::MatrixXd(rows, dim), Vec(rows), path};
  Vec w(dim);
  for (int j = 0; j < dim; ++j) w[j] = normal(rng);
  std::ofstream out(path);
  out.precision(17);
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < dim; ++j) d.a(i, j) = normal(rng) * (0.3 + j);
    d.b[i] = d.a.row(i).dot(w) + 0.5 * normal(rng) + 3.0;
    out << d.b[i];
    for (int j = 0; j < dim; ++j) out << ' ' << j + 1 << ':' << d.a(i, j);
    out << '\n';
  }
  return d;
}

// The centralized optimum of (1/M) sum 0.5 (a^T x - b)^2 + (l2/2)||x||^2, by Eigen directly.
Vec NormalEquations(const LeastSquaresData& d, double l2) {
  const double m = static_cast<double>(d.a.rows());
  Eigen::MatrixXd h = d.a.transpose() * d.a / m;
  h.diagonal().array() += l2;
  return h.ldlt().solve(d.a.transpose() * d.b / m);
}

node::RunConfig Config(const std::string& data, const std::string& problem, int nodes,
                       const std::string& topology) {
  node::RunConfig c;
  c.algorithm = "async-admm";
  c.problem = problem;
  c.data = data;
  c.format = "libsvm";
  c.nodes = nodes;
  c.topology = topology;
  c.partition = "iid";
  c.seed = 5;
  c.l2 = 1e-3;
  return c;
}

const AsyncAdmm& Admm(const algorithms::PairwiseAlgorithm& a) {
  return dynamic_cast<const AsyncAdmm&>(a);
}

// Largest |v_ie + v_je| over all edges relative to the largest |v|, and whether every edge's
// two copies of z_e are equal bit for bit.
template <class Sim>
std::pair<double, bool> DualInvariant(const Sim& sim,
                                      const std::vector<algorithms::NodeSetup>& nodes) {
  double worst = 0.0, scale = 0.0;
  bool z_equal = true;
  for (const auto& s : nodes) {
    for (int j : s.neighbors) {
      if (j < s.id) continue;
      const AsyncAdmm& a = Admm(sim.node(s.id));
      const AsyncAdmm& b = Admm(sim.node(j));
      worst = std::max(worst, (a.edge_dual(j) + b.edge_dual(s.id)).lpNorm<Eigen::Infinity>());
      scale = std::max(scale, a.edge_dual(j).lpNorm<Eigen::Infinity>());
      z_equal = z_equal && a.edge_z(j) == b.edge_z(s.id);
    }
  }
  return {scale > 0 ? worst / scale : worst, z_equal};
}

Vec MeanModel(const node::PairwiseSimulator& sim) { return sim.Spread().mean; }

class AsyncAdmmTest : public testing::TempDirTest {
 protected:
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
};

TEST_F(AsyncAdmmTest, LeastSquaresFixedPointIsTheNormalEquationsSolutionAndDualsCancel) {
  const LeastSquaresData data = WriteLeastSquares(Path("ls.txt"), 400, 6, 17);
  const node::RunConfig config = Config(data.path, "least-squares", 8, "ring");
  const node::RunSetup setup = node::BuildRunSetup(config);
  const Vec x_star = NormalEquations(data, config.l2);
  node::PairwiseSimulator sim(setup.nodes, node::PairwiseOptionsFor(config, setup), 3);
  double first_error = 0;
  int k = 0;
  for (; k < 100000 && (k < 1000 || (MeanModel(sim) - x_star).norm() > 1e-11 * x_star.norm());
       ++k) {
    sim.Activate();
    if (k == 0) first_error = (MeanModel(sim) - x_star).norm();
    if (k % 500 == 499) {
      const auto [dual, z_equal] = DualInvariant(sim, setup.nodes);
      ASSERT_LE(dual, 1e-12) << "after " << k + 1 << " exchanges";
      ASSERT_TRUE(z_equal) << "after " << k + 1 << " exchanges";
    }
  }
  double worst = 0;
  for (int i = 0; i < sim.num_nodes(); ++i) {
    worst = std::max(worst, (sim.node(i).Model() - x_star).norm() / x_star.norm());
  }
  std::printf(
      "least squares, 8 nodes ring, %d exchanges: worst node ||x_i - x*||/||x*|| %.3g "
      "(start %.3g)\n",
      k, worst, first_error / x_star.norm());
  EXPECT_LE(worst, 1e-9);
}

TEST_F(AsyncAdmmTest, ConvergesForEveryRhoOnLeastSquares) {
  const LeastSquaresData data = WriteLeastSquares(Path("ls.txt"), 300, 5, 4);
  for (double rho : {0.1, 1.0, 10.0}) {
    node::RunConfig config = Config(data.path, "least-squares", 6, "ring");
    config.params.Set("admm-rho", rho);
    const node::RunSetup setup = node::BuildRunSetup(config);
    const Vec x_star = NormalEquations(data, config.l2);
    node::PairwiseSimulator sim(setup.nodes, node::PairwiseOptionsFor(config, setup), 9);
    int64_t exchanges = 0;
    double error = 1;
    while (exchanges < 400000 && error > 1e-8) {
      for (int k = 0; k < 1000; ++k) sim.Activate();
      exchanges += 1000;
      error = (MeanModel(sim) - x_star).norm() / x_star.norm();
    }
    std::printf("rho %g: ||mean x - x*||/||x*|| = %.3g after %lld exchanges\n", rho, error,
                static_cast<long long>(exchanges));
    EXPECT_LE(error, 1e-8) << "rho " << rho;
  }
}

// The OPTRA instance's shape (stragglers benchmark): l2 = 0 and fewer rows per node than
// unknowns, so every local least-squares problem is rank-deficient (the local solve stays unique:
// its matrix s A_i^T A_i + rho deg I is positive definite). Two cases, expected values by Eigen
// on the whole data, not by the code under test: (a) more rows than unknowns in all: the normal
// equations' unique solution (LDLT); (b) fewer rows than unknowns in all (as OPTRA: 200 rows, 500
// unknowns): a whole affine set of minimisers; from z = v = 0 every iterate stays in the row
// space of A, so the limit is the minimum-norm solution (CompleteOrthogonalDecomposition).
TEST_F(AsyncAdmmTest, RankDeficientLocalProblemsWithoutL2ReachTheCentralizedSolution) {
  struct Case {
    int rows, dim;
    bool underdetermined;
  };
  for (const Case& c : {Case{48, 12, false}, Case{12, 20, true}}) {
    const LeastSquaresData data = WriteLeastSquares(Path("ls.txt"), c.rows, c.dim, 23);
    node::RunConfig config = Config(data.path, "least-squares", 6, "ring");
    config.l2 = 0;
    const node::RunSetup setup = node::BuildRunSetup(config);
    for (const auto& s : setup.nodes) {
      ASSERT_LT(s.problem->num_samples(), c.dim) << "node " << s.id << ": not rank-deficient";
    }
    const Vec x_star = c.underdetermined
                           ? Vec(data.a.completeOrthogonalDecomposition().solve(data.b))
                           : NormalEquations(data, 0.0);
    ASSERT_LE((data.a.transpose() * (data.a * x_star - data.b)).norm(),
              1e-9 * (data.a.transpose() * data.b).norm());
    node::PairwiseSimulator sim(setup.nodes, node::PairwiseOptionsFor(config, setup), 3);
    int64_t exchanges = 0;
    double worst = 1;
    while (exchanges < 2000000 && worst > 1e-8) {
      for (int k = 0; k < 1000; ++k) sim.Activate();
      exchanges += 1000;
      worst = 0;
      for (int i = 0; i < sim.num_nodes(); ++i) {
        worst = std::max(worst, (sim.node(i).Model() - x_star).norm() / x_star.norm());
      }
    }
    std::printf(
        "rank-deficient local problems, %d rows, d = %d: worst ||x_i - x*||/||x*|| %.3g "
        "after %lld exchanges\n",
        c.rows, c.dim, worst, static_cast<long long>(exchanges));
    EXPECT_LE(worst, 1e-8) << c.rows << " rows, d = " << c.dim;
  }
}

TEST_F(AsyncAdmmTest, LogisticAndMultinomialReachTheReferenceOptimum) {
  struct Case {
    std::string problem, path;
  };
  const std::vector<Case> cases = {
      {"logistic", testing::WriteLogisticData(Path("logistic.txt"), 600, 8, 21)},
      {"multinomial", testing::WriteMultinomialData(Path("multi.txt"), 600, 5, 3, 22)}};
  for (const Case& c : cases) {
    node::RunConfig config = Config(c.path, c.problem, 6, "ring");
    config.l2 = 1e-2;
    if (c.problem == "multinomial") config.num_classes = 3;
    const node::RunSetup setup = node::BuildRunSetup(config);
    const algorithms::ReferenceSolution ref = algorithms::SolveReference(*setup.global);
    node::PairwiseSimulator sim(setup.nodes, node::PairwiseOptionsFor(config, setup), 2);
    for (int k = 0; k < 8000; ++k) sim.Activate();
    const double gap = (setup.global->Value(MeanModel(sim)) - ref.value) / ref.value;
    const auto [dual, z_equal] = DualInvariant(sim, setup.nodes);
    std::printf("%s: relative gap %.3g after 8000 exchanges, dual invariant %.3g\n",
                c.problem.c_str(), gap, dual);
    EXPECT_LE(gap, 1e-10) << c.problem;
    EXPECT_LE(dual, 1e-12) << c.problem;
    EXPECT_TRUE(z_equal) << c.problem;
  }
}

// A problem that calls itself mlp (the one non-convex model): refused, naming the option.
class NamedMlp : public testing::FakeQuadratic {
 public:
  NamedMlp() : FakeQuadratic(Vec::Ones(2), Vec::Ones(2)) {}
  std::string name() const override { return "mlp"; }
};

TEST_F(AsyncAdmmTest, RefusesANonConvexProblemNamingTheOption) {
  NamedMlp mlp;
  algorithms::NodeSetup setup;
  setup.neighbors = {1};
  setup.problem = &mlp;
  setup.x0 = Vec::Zero(2);
  algorithms::PairwiseOptions options;
  options.algorithm = "async-admm";
  try {
    algorithms::MakePairwiseAlgorithm(options, setup);
    FAIL() << "mlp accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--problem mlp"), std::string::npos) << e.what();
  }
  // A convex problem of another name (the fake quadratic) is solved by Newton's method.
  testing::FakeQuadratic quadratic(Vec::Constant(2, 2.0), Vec::Ones(2));
  setup.problem = &quadratic;
  EXPECT_NO_THROW(algorithms::MakePairwiseAlgorithm(options, setup));
}

TEST_F(AsyncAdmmTest, SimulatorIsDeterministicForASeed) {
  const node::RunConfig config =
      Config(testing::WriteLogisticData(Path("l.txt"), 300, 6, 8), "logistic", 6, "er:0.5");
  const node::RunSetup setup = node::BuildRunSetup(config);
  const auto options = node::PairwiseOptionsFor(config, setup);
  node::PairwiseSimulator a(setup.nodes, options, 77), b(setup.nodes, options, 77),
      c(setup.nodes, options, 78);
  for (int k = 0; k < 300; ++k) {
    a.Activate();
    b.Activate();
    c.Activate();
  }
  bool differs = false;
  for (int i = 0; i < a.num_nodes(); ++i) {
    EXPECT_TRUE(a.node(i).Model() == b.node(i).Model()) << "node " << i;
    differs = differs || !(a.node(i).Model() == c.node(i).Model());
  }
  EXPECT_TRUE(differs) << "another seed gave the same run: the seed is not used";
}

TEST_F(AsyncAdmmTest, CheckpointRoundTripContinuesBitForBit) {
  const node::RunConfig config =
      Config(testing::WriteLogisticData(Path("l.txt"), 200, 4, 3), "logistic", 2, "ring");
  const node::RunSetup setup = node::BuildRunSetup(config);
  const auto options = node::PairwiseOptionsFor(config, setup);
  auto run = [&](algorithms::PairwiseAlgorithm* a, algorithms::PairwiseAlgorithm* b, int n,
                 uint64_t seq0) {
    for (int k = 0; k < n; ++k) {
      a->LocalStep();
      auto offer = a->BeginExchange(1, seq0 + k);
      auto reply = b->Respond(0, *offer);
      ASSERT_TRUE(a->CompleteExchange(seq0 + k, *reply));
      b->LocalStep();
    }
  };
  auto a = algorithms::MakePairwiseAlgorithm(options, setup.nodes[0]);
  auto b = algorithms::MakePairwiseAlgorithm(options, setup.nodes[1]);
  run(a.get(), b.get(), 5, 1);
  algorithms::AlgorithmState sa, sb;
  ASSERT_TRUE(a->SaveState(&sa));
  ASSERT_TRUE(b->SaveState(&sb));
  auto a2 = algorithms::MakePairwiseAlgorithm(options, setup.nodes[0]);
  auto b2 = algorithms::MakePairwiseAlgorithm(options, setup.nodes[1]);
  a2->LoadState(sa);
  b2->LoadState(sb);
  run(a.get(), b.get(), 5, 100);
  run(a2.get(), b2.get(), 5, 100);
  EXPECT_TRUE(a->Model() == a2->Model());
  EXPECT_TRUE(b->Model() == b2->Model());
  EXPECT_TRUE(Admm(*a).edge_dual(1) == Admm(*a2).edge_dual(1));
  EXPECT_EQ(a->counters().exchanges_initiated, a2->counters().exchanges_initiated);
  EXPECT_EQ(a->counters().local_steps, 10);
  // A state of another method, or of a node with another degree, is refused.
  algorithms::AlgorithmState wrong = sa;
  wrong.vectors.pop_back();
  EXPECT_THROW(a2->LoadState(wrong), std::invalid_argument);
}

// A late reply (the offer timed out and was abandoned) is merged from the kept offer: the two
// sides still hold the same z_e and opposite duals.
// computations() counts what the daemon charges a straggler (catch_up_charge.h): each local step,
// and each solve Respond makes; a Respond whose z and v are unchanged since the last solve makes
// none (its x is still the minimiser).
TEST_F(AsyncAdmmTest, ComputationsCountLocalStepsAndTheSolvesRespondMakes) {
  const node::RunConfig config =
      Config(testing::WriteLogisticData(Path("l.txt"), 200, 4, 3), "logistic", 2, "ring");
  const node::RunSetup setup = node::BuildRunSetup(config);
  const auto options = node::PairwiseOptionsFor(config, setup);
  auto a = algorithms::MakePairwiseAlgorithm(options, setup.nodes[0]);
  auto b = algorithms::MakePairwiseAlgorithm(options, setup.nodes[1]);
  EXPECT_EQ(b->computations(), 0);
  b->LocalStep();  // solves (z, v start at 0)
  EXPECT_EQ(b->computations(), 1);
  b->Respond(0, *a->BeginExchange(1, 1));  // x is still the minimiser: no solve
  EXPECT_EQ(b->computations(), 1);
  EXPECT_EQ(Admm(*b).solves(), 1);
  a->AbortExchange(false);
  b->Respond(0, *a->BeginExchange(1, 2));  // the first exchange changed z, v: a solve
  EXPECT_EQ(b->computations(), 2);
  EXPECT_EQ(Admm(*b).solves(), 2);
  EXPECT_EQ(b->counters().local_steps, 1);
}

TEST_F(AsyncAdmmTest, LateReplyKeepsTheInvariantALostReplyIsRepairedByTheNextExchange) {
  const node::RunConfig config =
      Config(testing::WriteLogisticData(Path("l.txt"), 200, 4, 3), "logistic", 2, "ring");
  const node::RunSetup setup = node::BuildRunSetup(config);
  const auto options = node::PairwiseOptionsFor(config, setup);
  auto a = algorithms::MakePairwiseAlgorithm(options, setup.nodes[0]);
  auto b = algorithms::MakePairwiseAlgorithm(options, setup.nodes[1]);
  const auto sum = [&] { return (Admm(*a).edge_dual(1) + Admm(*b).edge_dual(0)).norm(); };
  const auto scale = [&] { return Admm(*a).edge_dual(1).norm(); };
  // A first exchange, so that the duals are not 0.
  Vec reply = *b->Respond(0, *a->BeginExchange(1, 1));
  ASSERT_TRUE(a->CompleteExchange(1, reply));
  // Offer 2 times out; b serves it meanwhile a serves b's own request (another exchange on the
  // same edge); then offer 2's reply arrives late.
  const Vec offer2 = *a->BeginExchange(1, 2);
  a->AbortExchange(/*may_still_reply=*/true);
  const Vec reply2 = *b->Respond(0, offer2);
  ASSERT_TRUE(a->CompleteExchange(2, reply2));
  EXPECT_LE(sum(), 1e-12 * scale());
  EXPECT_TRUE(Admm(*a).edge_z(1) == Admm(*b).edge_z(0));
  // A lost reply: b applied its half, a did not.
  const Vec offer3 = *a->BeginExchange(1, 3);
  b->Respond(0, offer3);
  a->AbortExchange(/*may_still_reply=*/true);
  const double broken = sum();
  EXPECT_GT(broken, 1e-6 * scale()) << "a lost reply must show in the invariant";
  EXPECT_FALSE(Admm(*a).edge_z(1) == Admm(*b).edge_z(0));
  // The next completed exchange on the edge holds both duals in its z: repaired.
  a->LocalStep();
  Vec reply4 = *b->Respond(0, *a->BeginExchange(1, 4));
  ASSERT_TRUE(a->CompleteExchange(4, reply4));
  std::printf("dual sum after a lost reply %.3g, after the next exchange %.3g (|v| %.3g)\n", broken,
              sum(), scale());
  EXPECT_LE(sum(), 1e-12 * scale());
  EXPECT_TRUE(Admm(*a).edge_z(1) == Admm(*b).edge_z(0));
}

TEST_F(AsyncAdmmTest, UnderLossDuplicationAndDelayStillReachesTheOptimum) {
  const LeastSquaresData data = WriteLeastSquares(Path("ls.txt"), 400, 6, 17);
  const node::RunConfig config = Config(data.path, "least-squares", 8, "ring");
  const node::RunSetup setup = node::BuildRunSetup(config);
  const Vec x_star = NormalEquations(data, config.l2);
  net::FaultPlan plan;
  plan.defaults.loss = 0.1;
  plan.defaults.dup = 0.1;
  plan.defaults.reorder = 0.1;
  plan.defaults.jitter = 3;
  plan.seed = 4;
  node::FaultyPairwiseSimulator sim(setup.nodes, node::PairwiseOptionsFor(config, setup), 3, plan);
  for (int k = 0; k < 60000; ++k) sim.Activate();
  sim.Drain();
  const auto c = sim.counters();
  const auto [dual, z_equal] = DualInvariant(sim, setup.nodes);
  double worst = 0;
  for (int i = 0; i < sim.num_nodes(); ++i) {
    worst = std::max(worst, (sim.node(i).Model() - x_star).norm() / x_star.norm());
  }
  std::printf(
      "under loss: %lld requests and %lld replies lost, %lld merged late; worst node "
      "error %.3g; dual invariant %.3g, z copies equal: %d\n",
      static_cast<long long>(c.requests_lost), static_cast<long long>(c.replies_lost),
      static_cast<long long>(c.merged_late), worst, dual, z_equal ? 1 : 0);
  ASSERT_GT(c.replies_lost, 100);
  EXPECT_LE(worst, 1e-8);
}

TEST(AsyncAdmmA9a, ReachesRelativeGap1e8OnARingOf16) {
  STARLING_REQUIRE_FILE(testing::SharedData("a9a"));
  node::RunConfig config = Config(testing::SharedData("a9a"), "logistic", 16, "ring");
  config.l2 = 1e-2;
  config.seed = 1;
  config.iterations = 20000;
  config.log_every = 50;
  const node::RunSetup setup = node::BuildRunSetup(config);
  const algorithms::ReferenceSolution ref = algorithms::SolveReference(*setup.global);
  ASSERT_LE(ref.grad_norm, 1e-10);
  char f_star[64];
  std::snprintf(f_star, sizeof f_star, "%.17g", ref.value);
  config.reference_optimum = f_star;
  node::SimOptions options;
  options.stop_at_gap = 1e-8;
  const node::SimSummary s = node::RunSimulation(config, setup, options);
  ASSERT_TRUE(s.rel_gap.has_value());
  EXPECT_LE(*s.rel_gap, 1e-8) << "after " << s.iterations << " local steps per node";
  std::printf(
      "async-admm a9a ring 16: rel_gap %.3g after %lld local steps per node, %lld "
      "exchanges per node (1e-6 at %lld)\n",
      *s.rel_gap, static_cast<long long>(s.iterations), static_cast<long long>(s.comm_rounds),
      static_cast<long long>(s.iterations_to_1e6.value_or(-1)));
}

}  // namespace
}  // namespace starling
