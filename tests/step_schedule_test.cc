// Step-size schedules (algorithms/schedule/step_schedule.h): each equals its formula, computed
// here independently, at several steps and with its warm-up; bad specs are refused with a
// message naming the option and the bad part; the methods use the scheduled step; the run id
// depends on the schedule; and real daemons still give the simulator's iterates with one.
#include "algorithms/schedule/step_schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/pairwise/pairwise_algorithm.h"
#include "algorithms/round/round_algorithm.h"
#include "node/config/run_id.h"
#include "node/config/run_options.h"
#include "tests/daemon_cluster.h"
#include "tests/fake_quadratic.h"
#include "tests/subprocess.h"
#include "tests/test_data.h"
#include "topology/generators.h"

namespace starling {
namespace {

using algorithms::ParseStepSchedule;
using algorithms::StepSchedule;

const double kPi = std::acos(-1.0);

double At(const std::string& spec, int64_t t, int64_t default_horizon = 1000) {
  return ParseStepSchedule(spec, default_horizon).Multiplier(t);
}

TEST(StepSchedule, ConstantIsOneEverywhere) {
  for (int64_t t : {0, 1, 7, 1000, 123456789}) EXPECT_EQ(At("constant", t), 1.0);
  EXPECT_TRUE(ParseStepSchedule("constant", 10).constant());
}

TEST(StepSchedule, InvSqrtFollowsItsFormula) {
  for (int64_t t : {0, 1, 3, 99, 10000}) {
    EXPECT_DOUBLE_EQ(At("inv-sqrt", t), 1.0 / std::sqrt(1.0 + t)) << t;
    EXPECT_DOUBLE_EQ(At("inv-sqrt:t0=100", t), std::sqrt(100.0 / (100.0 + t))) << t;
  }
}

TEST(StepSchedule, StepDecayFollowsItsFormula) {
  // factor 0.5 every 300 steps: 1 for t < 300, 0.5 for 300..599, 0.25 from 600.
  EXPECT_DOUBLE_EQ(At("step:every=300,factor=0.5", 0), 1.0);
  EXPECT_DOUBLE_EQ(At("step:every=300,factor=0.5", 299), 1.0);
  EXPECT_DOUBLE_EQ(At("step:every=300,factor=0.5", 300), 0.5);
  EXPECT_DOUBLE_EQ(At("step:every=300,factor=0.5", 599), 0.5);
  EXPECT_DOUBLE_EQ(At("step:every=300,factor=0.5", 600), 0.25);
  EXPECT_DOUBLE_EQ(At("step:every=300,factor=0.5", 3000), std::pow(0.5, 10));
}

TEST(StepSchedule, CosineFollowsItsFormulaAndDefaultsToTheRunsIterations) {
  // T = 1000 from the default horizon: cos from 1 at t = 0 to 0 at t = 1000, then 0.
  EXPECT_DOUBLE_EQ(At("cosine", 0), 1.0);
  EXPECT_DOUBLE_EQ(At("cosine", 250), 0.5 * (1 + std::cos(kPi / 4)));
  EXPECT_DOUBLE_EQ(At("cosine", 500), 0.5);
  EXPECT_NEAR(At("cosine", 1000), 0.0, 1e-16);
  EXPECT_NEAR(At("cosine", 5000), 0.0, 1e-16);
  // An explicit T and a floor.
  EXPECT_DOUBLE_EQ(At("cosine:T=200,min=0.1", 50), 0.1 + 0.9 * 0.5 * (1 + std::cos(kPi / 4)));
  EXPECT_DOUBLE_EQ(At("cosine:T=200,min=0.1", 200), 0.1);
  EXPECT_DOUBLE_EQ(At("cosine:T=200,min=0.1", 999), 0.1);
}

TEST(StepSchedule, WarmupRisesLinearlyThenTheScheduleStarts) {
  // Constant with 10 warm-up steps: 0.1, 0.2, ..., 1.0, then 1.
  for (int64_t t = 0; t < 10; ++t) EXPECT_DOUBLE_EQ(At("constant:warmup=10", t), (t + 1) / 10.0);
  EXPECT_EQ(At("constant:warmup=10", 10), 1.0);
  EXPECT_FALSE(ParseStepSchedule("constant:warmup=10", 10).constant());
  // Cosine over T = 110 with 10 warm-up steps: the decay spans t = 10..110.
  EXPECT_DOUBLE_EQ(At("cosine:T=110,warmup=10", 4), 0.5);
  EXPECT_DOUBLE_EQ(At("cosine:T=110,warmup=10", 10), 1.0);
  EXPECT_DOUBLE_EQ(At("cosine:T=110,warmup=10", 60), 0.5);
  EXPECT_NEAR(At("cosine:T=110,warmup=10", 110), 0.0, 1e-16);
  // Step decay and 1/sqrt count from the end of the warm-up.
  EXPECT_DOUBLE_EQ(At("step:every=5,factor=0.1,warmup=4", 3), 1.0);
  EXPECT_DOUBLE_EQ(At("step:every=5,factor=0.1,warmup=4", 8), 1.0);
  EXPECT_DOUBLE_EQ(At("step:every=5,factor=0.1,warmup=4", 9), 0.1);
  EXPECT_DOUBLE_EQ(At("inv-sqrt:t0=4,warmup=2", 0), 0.5);
  EXPECT_DOUBLE_EQ(At("inv-sqrt:t0=4,warmup=2", 14), std::sqrt(4.0 / 16.0));
}

void ExpectRefused(const std::string& spec, const std::string& part) {
  try {
    ParseStepSchedule(spec, 1000);
    ADD_FAILURE() << spec << " was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--step-schedule '" + spec + "'"), std::string::npos) << what;
    EXPECT_NE(what.find(part), std::string::npos) << spec << ": " << what;
  }
}

TEST(StepSchedule, BadSpecsAreRefusedNamingTheOptionAndThePart) {
  ExpectRefused("cosin", "unknown kind 'cosin'");
  ExpectRefused("", "unknown kind ''");
  ExpectRefused("step", "every=N and factor=F");
  ExpectRefused("step:every=10", "every=N and factor=F");
  ExpectRefused("step:every=0,factor=0.5", "every=0 must be >= 1");
  ExpectRefused("step:every=10,factor=2", "factor=2 must be in (0, 1]");
  ExpectRefused("step:every=ten,factor=0.5", "every='ten' is not a whole number");
  ExpectRefused("cosine:T=100,warmup=100", "must exceed warmup=100");
  ExpectRefused("cosine:min=1.5", "min=1.5 must be in [0, 1]");
  ExpectRefused("cosine:T=100,T=200", "T given twice");
  ExpectRefused("inv-sqrt:t0=0.5", "t0=0.5 must be >= 1");
  ExpectRefused("inv-sqrt:every=3", "'every' is not a parameter of inv-sqrt");
  ExpectRefused("constant:warmup=-1", "warmup=-1 must be >= 0");
  ExpectRefused("constant:warmup", "'warmup' is not KEY=VALUE");
  ExpectRefused("cosine:", "'' is not KEY=VALUE");
  ExpectRefused("cosine:T=nan", "T='nan' is not a whole number");
  ExpectRefused("cosine:min=nan", "min='nan' is not a finite number");
}

// f(x) = 1/2 d x^2 - b x with exact gradients for every mini-batch: the iterates of one node
// without neighbours are x <- x - eta m(t) (d x - b), computed here.
class ExactQuadratic : public testing::FakeQuadratic {
 public:
  ExactQuadratic() : FakeQuadratic(Vec::Constant(1, 2.0), Vec::Constant(1, 1.0)) {}
  void BatchGradient(const Vec& x, const std::vector<int>&, Vec* g) const override {
    Gradient(x, g);
  }
};

double ExpectedIterate(double eta, const std::string& spec, int steps) {
  double x = 3.0;
  for (int t = 0; t < steps; ++t) {
    // cosine:T=20,warmup=4, written out: linear warm-up, then the cosine over 16 steps.
    const double m = t < 4 ? (t + 1) / 4.0 : 0.5 * (1 + std::cos(kPi * std::min(t - 4, 16) / 16));
    x -= eta * m * (2.0 * x - 1.0);
  }
  EXPECT_EQ(spec, "cosine:T=20,warmup=4");
  return x;
}

algorithms::NodeSetup LoneNode(const algorithms::Problem* problem) {
  algorithms::NodeSetup setup;
  setup.problem = problem;
  setup.x0 = Vec::Constant(1, 3.0);
  setup.seed = 5;
  return setup;
}

TEST(StepSchedule, SwarmSgdStepsWithTheScheduledStep) {
  const ExactQuadratic problem;
  algorithms::PairwiseOptions options;
  options.step = 0.3;
  options.batch_size = 1;
  options.local_steps = 1000;
  options.step_schedule = ParseStepSchedule("cosine:T=20,warmup=4", 1000);
  for (const std::string compression : {"none", "lattice:8", "topk:1"}) {
    options.compression = compression;
    auto algorithm = algorithms::MakePairwiseAlgorithm(options, LoneNode(&problem));
    for (int t = 0; t < 25; ++t) algorithm->LocalStep();
    EXPECT_NEAR(algorithm->Model()[0], ExpectedIterate(0.3, "cosine:T=20,warmup=4", 25), 1e-15)
        << compression;
  }
}

TEST(StepSchedule, DpsgdAndChocoSgdStepWithTheScheduledStep) {
  const ExactQuadratic problem;
  algorithms::RoundOptions options;
  options.step = 0.3;
  options.batch_size = 1;
  options.step_schedule = ParseStepSchedule("cosine:T=20,warmup=4", 1000);
  for (const std::string algorithm : {"dpsgd", "choco-sgd"}) {
    options.algorithm = algorithm;
    auto node = algorithms::MakeRoundAlgorithm(options, LoneNode(&problem));
    // CHOCO-SGD takes its gradient step of iteration k+1 when iteration k ends (and the first
    // one at construction): after 24 Advance calls it has taken 25.
    const int steps = algorithm == "dpsgd" ? 25 : 24;
    for (int t = 0; t < steps; ++t) node->Advance({});
    const double expected = ExpectedIterate(0.3, "cosine:T=20,warmup=4", 25);
    // CHOCO-SGD with no neighbour: x only takes gradient steps (the consensus term is 0).
    EXPECT_NEAR(node->Model()[0], expected, 1e-15) << algorithm;
  }
}

TEST(StepSchedule, DeterministicMethodsRefuseASchedule) {
  const ExactQuadratic problem;
  algorithms::RoundOptions options;
  options.algorithm = "extra";
  options.step = 0.1;
  options.step_schedule = ParseStepSchedule("inv-sqrt", 100);
  EXPECT_THROW(algorithms::MakeRoundAlgorithm(options, LoneNode(&problem)), std::invalid_argument);

  node::RunConfig config;
  config.algorithm = "extra";
  config.data = "unused.svm";
  config.step_schedule = "inv-sqrt";
  try {
    node::ValidateRunConfig(config);
    ADD_FAILURE() << "extra with a schedule was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--step-schedule inv-sqrt: --algorithm extra"),
              std::string::npos)
        << e.what();
  }
  config.step_schedule = "cosine:T=oops";
  config.algorithm = "swarmsgd";
  EXPECT_THROW(node::ValidateRunConfig(config), std::invalid_argument);
}

TEST(StepSchedule, RunIdChangesWithTheSchedule) {
  node::RunConfig config;
  config.algorithm = "swarmsgd";
  config.iterations = 4000;
  const topology::Graph ring = topology::Ring(4);
  const std::string constant = node::CanonicalRunText(config, ring);
  config.step_schedule = "constant:warmup=0";  // the same schedule, spelt out
  EXPECT_EQ(node::CanonicalRunText(config, ring), constant);
  config.step_schedule = "cosine";
  const std::string cosine = node::CanonicalRunText(config, ring);
  EXPECT_NE(cosine, constant);
  EXPECT_NE(cosine.find("step_schedule=cosine:T=4000,min=0,warmup=0"), std::string::npos) << cosine;
  config.step_schedule = "cosine:T=4000";  // cosine's default T is --iterations
  EXPECT_EQ(node::CanonicalRunText(config, ring), cosine);
  std::set<std::string> texts = {constant, cosine};
  for (const std::string other : {"cosine:warmup=1", "cosine:min=0.01", "inv-sqrt", "inv-sqrt:t0=2",
                                  "step:every=100,factor=0.5", "step:every=100,factor=0.25"}) {
    config.step_schedule = other;
    EXPECT_TRUE(texts.insert(node::CanonicalRunText(config, ring)).second) << other;
  }
  config.step_schedule = "cosine";
  EXPECT_NE(node::RunIdFor(config, ring), [&] {
    node::RunConfig c = config;
    c.step_schedule = "constant";
    return node::RunIdFor(c, ring);
  }());
}

// Real daemons with a schedule give the simulator's iterates, as without one
// (daemon_integration_test's RoundAcrossProcesses).
TEST(StepSchedule, DaemonsWithAScheduleEqualTheSimulator) {
  const std::string a9a = testing::SharedData("a9a");
  STARLING_REQUIRE_FILE(a9a);
  const std::string dir = testing::FreshTempDir("schedule");
  const int n = 4;
  const std::string cluster =
      testing::WriteLoopbackCluster(dir, topology::Ring(n), testing::PortBase(), /*keys=*/true);
  const std::string schedule = "step:every=30,factor=0.5,warmup=10";
  const std::vector<std::string> args = {
      "--algorithm", "dpsgd",  "--problem",       "logistic", "--l2",   "1e-2", "--data",  a9a,
      "--format",    "libsvm", "--iterations",    "100",      "--seed", "7",    "--batch", "16",
      "--step",      "2",      "--step-schedule", schedule};
  const std::vector<Vec> models = testing::RunLoopbackDaemons(dir, cluster, n, args, 120);
  auto with_schedule = [&](node::RunConfig* c) {
    c->batch = 16;
    c->step = 2;
    c->step_schedule = schedule;
  };
  const std::vector<Vec> simulated =
      testing::SimulatedA9aModels("dpsgd", a9a, cluster, n, 100, with_schedule);
  const std::vector<Vec> constant =
      testing::SimulatedA9aModels("dpsgd", a9a, cluster, n, 100, [](node::RunConfig* c) {
        c->batch = 16;
        c->step = 2;
      });
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(models[i].size(), simulated[i].size()) << "node " << i;
    EXPECT_LE((models[i] - simulated[i]).norm(), 1e-9 * simulated[i].norm()) << "node " << i;
    // And the schedule mattered: the constant step ends elsewhere.
    EXPECT_GT((constant[i] - simulated[i]).norm(), 1e-3 * simulated[i].norm()) << "node " << i;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace starling
