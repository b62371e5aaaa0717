// The simulator's churn model (node/sim/churn_plan.h, churn_pairwise_simulator.h): traces and
// rates, determinism, the weighted average kept across graceful leaves on a9a, and the accuracy
// a SwarmSGD run on a9a reaches while a quarter of its 16 nodes are replaced. Averages are summed
// here from the members' models and shares, not taken from the simulator's own counters.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "node/config/run_setup.h"
#include "node/sim/churn_pairwise_simulator.h"
#include "node/sim/churn_plan.h"
#include "node/sim/pairwise_simulator.h"
#include "node/sim/simulated_run.h"
#include "tests/daemon_cluster.h"
#include "tests/temp_dir_test.h"
#include "tests/test_data.h"

namespace starling {
namespace {

using node::ChurnEvent;
using node::ChurnKind;

TEST(ChurnTrace, ReadsEventsInTimeOrder) {
  const auto events = node::ParseChurnTrace(
      "# t kind node\n50 join 3\n10 leave 3   # graceful\n\n20 crash 1\n", "trace.txt", 4);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].kind, ChurnKind::kLeave);
  EXPECT_EQ(events[0].node, 3);
  EXPECT_EQ(events[1].kind, ChurnKind::kCrash);
  EXPECT_EQ(events[2].kind, ChurnKind::kJoin);
  EXPECT_DOUBLE_EQ(events[2].time, 50.0);
}

void ExpectRefused(const std::string& text, const std::string& fragment) {
  try {
    node::ParseChurnTrace(text, "trace.txt", 4);
    ADD_FAILURE() << "accepted: " << text;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(ChurnTrace, RefusesWhatDoesNotFitWithItsLine) {
  ExpectRefused("10 leave 1\n20 jump 1\n", "trace.txt line 2: 'jump' is not join");
  ExpectRefused("10 leave 4\n", "line 1: node '4' is not an id in 0..3 (--nodes 4)");
  ExpectRefused("x leave 1\n", "line 1: iteration 'x' is not a number");
  ExpectRefused("10 leave\n", "line 1: expected 'ITERATION join|leave|crash NODE'");
  ExpectRefused("10 join 2\n", "line 1: node 2 joins at iteration 10");
  ExpectRefused("5 leave 2\n10 crash 2\n", "line 2: node 2 crashs");
  ExpectRefused("5 leave 0\n6 leave 1\n7 leave 2\n", "line 3: would leave fewer than two");
}

TEST(ChurnRates, SeededAndRefusedWhenNegative) {
  node::ChurnOptions o;
  o.leave_rate = 0.01;
  o.join_rate = 0.02;
  o.seed = 4;
  const auto a = node::BuildChurnEvents(o, 8, 1000);
  const auto b = node::BuildChurnEvents(o, 8, 1000);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_GT(a.size(), 10u);  // about 30 expected
  for (size_t k = 0; k < a.size(); ++k) {
    EXPECT_EQ(a[k].time, b[k].time);
    EXPECT_EQ(a[k].kind, b[k].kind);
    if (k > 0) {
      EXPECT_LE(a[k - 1].time, a[k].time);
    }
  }
  o.seed = 5;
  EXPECT_NE(node::BuildChurnEvents(o, 8, 1000)[0].time, a[0].time);
  o.crash_rate = -1;
  EXPECT_THROW(node::BuildChurnEvents(o, 8, 1000), std::invalid_argument);
  o.crash_rate = 0;
  o.trace = "/nonexistent/trace";
  EXPECT_THROW(node::BuildChurnEvents(o, 8, 1000), std::invalid_argument);  // trace and rates
}

class ChurnA9a : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    const std::string a9a = testing::SharedData("a9a");
    STARLING_REQUIRE_FILE(a9a);
    const testing::A9aSplit split = testing::SplitA9a(a9a, dir_);
    config_.algorithm = "swarmsgd";
    config_.problem = "logistic";
    config_.l2 = 1e-4;
    config_.data = split.train;
    config_.test_data = split.test;
    config_.format = "libsvm";
    config_.nodes = 16;
    config_.topology = "ring";
    config_.seed = 7;
    config_.iterations = 1500;
    setup_ = std::make_unique<node::RunSetup>(node::BuildRunSetup(config_));
  }
  std::unique_ptr<node::ChurnPairwiseSimulator> Sim(std::vector<ChurnEvent> events) const {
    return std::make_unique<node::ChurnPairwiseSimulator>(
        setup_->nodes, node::PairwiseOptionsFor(config_, *setup_), config_.seed, std::move(events),
        1);
  }
  // A quarter of the 16 replaced: two leave gracefully, two crash, each slot rejoins later.
  static std::vector<ChurnEvent> QuarterReplaced() {
    return node::ParseChurnTrace(
        "200 leave 2\n300 crash 6\n400 leave 10\n500 crash 14\n"
        "350 join 2\n450 join 6\n550 join 10\n650 join 14\n",
        "quarter", 16);
  }
  node::RunConfig config_;
  std::unique_ptr<node::RunSetup> setup_;
};

// sum w x / sum w over the members, summed here.
Vec MembersAverage(const node::ChurnPairwiseSimulator& sim) {
  Vec sum = Vec::Zero(sim.node(0).Model().size());
  double total = 0.0;
  for (int i = 0; i < sim.num_nodes(); ++i) {
    if (!sim.member(i)) continue;
    sum += sim.node(i).share() * sim.node(i).Model();
    total += sim.node(i).share();
  }
  return sum / total;
}

TEST_F(ChurnA9a, SameSeedSameRunBitForBit) {
  auto a = Sim(QuarterReplaced());
  auto b = Sim(QuarterReplaced());
  a->RunUntilLocalSteps(800);
  b->RunUntilLocalSteps(800);
  EXPECT_EQ(a->counters().joins, 4);
  EXPECT_EQ(a->counters().leaves, 2);
  EXPECT_EQ(a->counters().crashes, 2);
  for (int i = 0; i < 16; ++i) {
    ASSERT_TRUE(a->member(i) && b->member(i));
    EXPECT_TRUE(a->node(i).Model() == b->node(i).Model()) << "node " << i;
    EXPECT_EQ(a->node(i).share(), b->node(i).share()) << "node " << i;
  }
  // Rates too: the events are drawn from the churn seed.
  node::ChurnOptions rates;
  rates.leave_rate = rates.join_rate = rates.crash_rate = 0.005;
  auto c = Sim(node::BuildChurnEvents(rates, 16, 800));
  auto d = Sim(node::BuildChurnEvents(rates, 16, 800));
  c->RunUntilLocalSteps(800);
  d->RunUntilLocalSteps(800);
  EXPECT_GT(c->counters().joins + c->counters().leaves + c->counters().crashes, 3);
  EXPECT_EQ(c->Spread().mean, d->Spread().mean);
  EXPECT_TRUE(c->graph().Connected());
}

TEST_F(ChurnA9a, GracefulLeavesKeepTheAverageCrashesShiftIt) {
  auto sim = Sim(QuarterReplaced());
  double worst = 0.0;
  for (int t : {200, 300, 350, 400, 450, 500, 550, 650}) {
    sim->RunUntilLocalSteps(t);
    const Vec before = MembersAverage(*sim);
    const int members = sim->num_members();
    const int64_t leaves = sim->counters().leaves;
    sim->ApplyDue();
    const double change = (MembersAverage(*sim) - before).norm() / before.norm();
    if (sim->counters().leaves > leaves) {
      EXPECT_EQ(sim->num_members(), members - 1);
      EXPECT_LE(change, 1e-12) << "leave at " << t;
      worst = std::max(worst, change);
    } else if (sim->num_members() < members) {
      EXPECT_GT(change, 1e-6) << "a crash at " << t << " loses a share: the average moves";
    } else {
      EXPECT_LE(change, 1e-12) << "join at " << t;
    }
    EXPECT_TRUE(sim->graph().Connected());
  }
  EXPECT_EQ(sim->num_members(), 16);
  EXPECT_LE(sim->counters().leave_drift, 1e-12);
  EXPECT_GT(sim->counters().crash_shift, 0.0);
  EXPECT_EQ(sim->counters().join_bytes, 4 * 8 * sim->node(0).Model().size());
  std::printf("largest relative change of the average at a graceful leave: %.3g\n", worst);
}

// The run's test accuracy every 25 iterations, and the first iteration at which it reached
// `target` (nullopt if never).
struct Curve {
  double final_accuracy = 0.0;
  std::vector<std::pair<int64_t, double>> points;
  std::optional<int64_t> FirstAt(double target) const {
    for (const auto& [t, acc] : points) {
      if (acc >= target) return t;
    }
    return std::nullopt;
  }
};

TEST_F(ChurnA9a, AQuarterReplacedStillReachesTheChurnFreeAccuracy) {
  auto run = [&](std::vector<ChurnEvent> events) {
    Curve curve;
    auto sim = Sim(std::move(events));
    for (int64_t t = 25; t <= config_.iterations; t += 25) {
      sim->RunUntilLocalSteps(t);
      curve.points.emplace_back(t, *setup_->test->Accuracy(sim->Spread().mean));
    }
    curve.final_accuracy = curve.points.back().second;
    return curve;
  };
  const Curve fixed = run({});
  const Curve churned = run(QuarterReplaced());
  const int64_t fixed_at = *fixed.FirstAt(fixed.final_accuracy);
  const std::optional<int64_t> churned_at = churned.FirstAt(fixed.final_accuracy);
  std::printf("churn-free: final accuracy %.4f, first at iteration %lld\n", fixed.final_accuracy,
              static_cast<long long>(fixed_at));
  std::printf(
      "a quarter replaced: final accuracy %.4f, churn-free's first at %s (ratio %s)\n",
      churned.final_accuracy, churned_at ? std::to_string(*churned_at).c_str() : "never",
      churned_at ? std::to_string(static_cast<double>(*churned_at) / fixed_at).c_str() : "-");
  ASSERT_TRUE(churned_at.has_value()) << "the churned run never reached " << fixed.final_accuracy;
  EXPECT_GE(churned.final_accuracy, fixed.final_accuracy - 0.005);
}

TEST_F(ChurnA9a, RefusesAMethodWithoutShares) {
  config_.compression = "lattice:8";
  try {
    Sim({});
    ADD_FAILURE() << "lattice codes accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("keeps no push-sum shares"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace starling
