// Fault injection: the fault plan's parsing and statistics, and the simulators over a
// faulty network. Round-based algorithms on the neighbour-local synchronizer with RESEND must
// give exactly the lockstep iterates under loss, duplication, reordering, delay and partitions;
// SwarmSGD must still converge, and conserve the sum of models unless replies are lost.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "net/fault_plan.h"
#include "node/config/fault_options.h"
#include "node/config/run_setup.h"
#include "node/drivers/exchange_driver.h"
#include "node/sim/faulty_pairwise_simulator.h"
#include "node/sim/faulty_round_simulator.h"
#include "node/sim/pairwise_simulator.h"
#include "node/sim/round_simulator.h"
#include "tests/test_data.h"

namespace starling {
namespace {

TEST(FaultPlan, ParsesPartitionSchedules) {
  const auto w = net::ParsePartitionSchedule("0,1|2,3@2-6; 4|@1.5-2", "--fault-partition");
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].side_a, (std::vector<int>{0, 1}));
  EXPECT_EQ(w[0].side_b, (std::vector<int>{2, 3}));
  EXPECT_DOUBLE_EQ(w[0].start, 2.0);
  EXPECT_DOUBLE_EQ(w[0].end, 6.0);
  EXPECT_TRUE(w[0].Cuts(1, 3, 2.0));
  EXPECT_TRUE(w[0].Cuts(3, 0, 5.9));
  EXPECT_FALSE(w[0].Cuts(0, 1, 3.0));  // same side
  EXPECT_FALSE(w[0].Cuts(0, 4, 3.0));  // 4 is on neither side
  EXPECT_FALSE(w[0].Cuts(1, 3, 6.0));  // healed
  EXPECT_TRUE(w[1].Cuts(4, 9, 1.7));   // empty B: everybody else
  EXPECT_FALSE(w[1].Cuts(4, 9, 2.5));
  for (const char* bad : {"0,1@2-6", "0|1@6-2", "0|1@x-2", "|1@0-1", "0|1"}) {
    EXPECT_THROW(net::ParsePartitionSchedule(bad, "--fault-partition"), std::invalid_argument)
        << bad;
  }
}

TEST(FaultPlan, ParsesPerEdgeOverrides) {
  const auto [edge, f] = net::ParseLinkFaults("3-1:loss=0.5,delay=20,dup=0.1", "--fault-link");
  EXPECT_EQ(edge, std::make_pair(1, 3));
  EXPECT_DOUBLE_EQ(f.loss, 0.5);
  EXPECT_DOUBLE_EQ(f.delay, 20);
  EXPECT_DOUBLE_EQ(f.dup, 0.1);
  for (const char* bad : {"1-1:loss=0.1", "1-2:loss=1.5", "1-2:speed=3", "1:loss=0.1",
                          "1-2:delay=-1"}) {
    EXPECT_THROW(net::ParseLinkFaults(bad, "--fault-link"), std::invalid_argument) << bad;
  }
  node::FaultOptions o;
  o.loss = 0.1;
  o.links = {"0-1:loss=0.9"};
  const net::FaultPlan plan = node::BuildFaultPlan(o);
  EXPECT_DOUBLE_EQ(plan.For(1, 0).loss, 0.9);
  EXPECT_DOUBLE_EQ(plan.For(1, 2).loss, 0.1);
  o.loss = 1.0;
  EXPECT_THROW(node::BuildFaultPlan(o), std::invalid_argument);
}

TEST(FaultInjector, DrawsTheConfiguredRatesReproducibly) {
  net::FaultPlan plan;
  plan.defaults.loss = 0.2;
  plan.defaults.dup = 0.1;
  plan.defaults.reorder = 0.3;
  plan.defaults.jitter = 10;
  plan.seed = 5;
  net::FaultInjector a(plan, 1), b(plan, 1), c(plan, 2);
  const int n = 40000;
  int lost = 0, dup = 0, held = 0, same = 0, same_other_stream = 0;
  double delay = 0;
  for (int k = 0; k < n; ++k) {
    const auto da = a.Decide(1, 2, 0.0), db = b.Decide(1, 2, 0.0), dc = c.Decide(1, 2, 0.0);
    lost += da.drop;
    if (!da.drop) {
      dup += da.copies == 2;
      held += da.hold;
      delay += da.delay;
    }
    same += da.drop == db.drop && da.delay == db.delay && da.copies == db.copies;
    same_other_stream += !da.drop && !dc.drop && da.delay == dc.delay;
  }
  const int kept = n - lost;
  EXPECT_NEAR(lost / double(n), 0.2, 0.01);
  EXPECT_NEAR(dup / double(kept), 0.1, 0.01);
  EXPECT_NEAR(held / double(kept), 0.3, 0.015);
  EXPECT_NEAR(delay / kept, 5.0, 0.15);
  EXPECT_EQ(same, n);                     // same seed and stream: the same decisions
  EXPECT_LT(same_other_stream, n / 100);  // another node draws differently
  EXPECT_EQ(a.counters().dropped, static_cast<uint64_t>(lost));
}

TEST(ExchangeDriver, DropsDuplicatedRequests) {
  // Only the bookkeeping matters here; the algorithm is not called.
  class Nothing : public algorithms::PairwiseAlgorithm {
   public:
    std::string name() const override { return "nothing"; }
    void LocalStep() override {}
    bool WantsExchange() const override { return false; }
    bool ShouldWait() const override { return false; }
    std::shared_ptr<const Vec> BeginExchange(int, uint64_t) override { return v_; }
    bool CompleteExchange(uint64_t, const Eigen::Ref<const Vec>&) override { return false; }
    void AbortExchange(bool) override {}
    bool exchange_outstanding() const override { return false; }
    std::shared_ptr<const Vec> Respond(int, const Eigen::Ref<const Vec>&) override { return v_; }
    const Vec& Model() const override { return *v_; }
    algorithms::PairwiseCounters counters() const override { return {}; }

   private:
    std::shared_ptr<const Vec> v_ = std::make_shared<const Vec>();
  } nothing;
  node::ExchangeDriver driver(&nothing, 0, {1, 2}, 1);
  EXPECT_FALSE(driver.DuplicateRequest(1, 100));
  EXPECT_FALSE(driver.DuplicateRequest(2, 100));  // same number from another peer
  EXPECT_TRUE(driver.DuplicateRequest(1, 100));
  EXPECT_FALSE(driver.DuplicateRequest(1, 101));
}

node::RunConfig A9a(const std::string& algorithm, int nodes, int64_t iterations) {
  node::RunConfig c;
  c.algorithm = algorithm;
  c.problem = "logistic";
  c.l2 = 1e-2;
  c.data = testing::SharedData("a9a");
  c.format = "libsvm";
  c.nodes = nodes;
  c.topology = "er:0.5";
  c.iterations = iterations;
  c.seed = 7;
  c.batch = 16;
  return c;
}

struct FaultCase {
  const char* name;
  net::FaultPlan plan;
};

std::vector<FaultCase> FaultCases() {
  std::vector<FaultCase> cases;
  auto add = [&](const char* name, double loss, double dup, double reorder, double delay,
                 double jitter, bool partition) {
    FaultCase c{name, {}};
    c.plan.defaults = {loss, dup, reorder, delay, jitter};
    if (partition) c.plan.partitions = net::ParsePartitionSchedule("0,1|@0.05-0.25", "test");
    c.plan.seed = 3;
    cases.push_back(c);
  };
  add("loss 20%", 0.2, 0, 0, 0, 0, false);
  add("dup 30%", 0, 0.3, 0, 0, 0, false);
  add("reorder 30%", 0, 0, 0.3, 0, 0, false);
  add("delay 3 + jitter 10 ms", 0, 0, 0, 3, 10, false);
  add("partition {0,1} | rest for 200 ms", 0, 0, 0, 0, 0, true);
  add("everything at once", 0.1, 0.1, 0.2, 1, 5, true);
  return cases;
}

class RoundUnderFaults : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundUnderFaults, GivesTheLockstepIteratesBitForBit) {
  STARLING_REQUIRE_FILE(testing::SharedData("a9a"));
  const int64_t iterations = 60;
  node::RunConfig config = A9a(GetParam(), 6, iterations);
  node::BuildScope scope;
  scope.global = false;
  const node::RunSetup setup = node::BuildRunSetup(config, scope);
  const auto options = node::RoundOptionsFor(config, setup);
  node::RoundSimulator ideal(setup.nodes, options);
  ideal.RunUntilIteration(iterations);
  for (const FaultCase& fc : FaultCases()) {
    node::FaultyRoundSimulator sim(setup.nodes, options, fc.plan, /*resend_ms=*/20, iterations);
    sim.RunUntilIteration(iterations);
    const node::FaultyRoundCounters c = sim.counters();
    std::printf("%s, %s: %lld simulated ms, %s; %lld payloads, %lld resends, %lld duplicates "
                "dropped\n",
                GetParam().c_str(), fc.name, static_cast<long long>(sim.now_ms()),
                c.faults.Summary().c_str(), static_cast<long long>(c.payloads_sent),
                static_cast<long long>(c.resends_sent),
                static_cast<long long>(c.duplicates_dropped));
    for (int i = 0; i < sim.num_nodes(); ++i) {
      ASSERT_EQ(sim.node(i).iteration(), iterations) << fc.name;
      EXPECT_TRUE(sim.node(i).Model() == ideal.node(i).Model()) << fc.name << ", node " << i;
    }
    if (fc.plan.defaults.loss > 0) {
      EXPECT_GT(c.resends_sent, 0) << fc.name;
    }
    if (fc.plan.defaults.dup > 0) {
      EXPECT_GT(c.duplicates_dropped, 0) << fc.name;
    }
    if (!fc.plan.partitions.empty()) {
      EXPECT_GT(c.faults.partitioned, 0u) << fc.name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, RoundUnderFaults,
                         ::testing::Values("extra", "optra", "gradient-tracking", "dpsgd"));

TEST(PairwiseUnderFaults, ConvergesAndConservesTheSumUnlessRepliesAreLost) {
  STARLING_REQUIRE_FILE(testing::SharedData("a9a"));
  node::RunConfig config = A9a("swarmsgd", 6, 1500);
  config.topology = "ring";
  config.l2 = 1e-2;
  node::BuildScope scope;
  const node::RunSetup setup = node::BuildRunSetup(config, scope);
  const auto options = node::PairwiseOptionsFor(config, setup);
  node::PairwiseSimulator ideal(setup.nodes, options, config.seed);
  ideal.RunUntilLocalSteps(config.iterations);
  const double f_ideal = setup.global->Value(ideal.Spread().mean);
  const double f_start = setup.global->Value(setup.nodes[0].x0);
  for (const FaultCase& fc : FaultCases()) {
    node::FaultyPairwiseSimulator sim(setup.nodes, options, config.seed, fc.plan);
    sim.RunUntilLocalSteps(config.iterations);
    const double f = setup.global->Value(sim.Spread().mean);
    const auto c = sim.counters();
    std::printf("swarmsgd, %s: objective %.6f (fault-free %.6f, start %.6f); %s; merged %lld at "
                "once, %lld late, %lld stale; %lld requests and %lld replies lost; drift %.3g\n",
                fc.name, f, f_ideal, f_start, c.faults.Summary().c_str(),
                static_cast<long long>(c.merged_at_once), static_cast<long long>(c.merged_late),
                static_cast<long long>(c.stale_replies_dropped),
                static_cast<long long>(c.requests_lost), static_cast<long long>(c.replies_lost),
                sim.exchange_drift());
    // Converged: within 1% of the fault-free objective (which is within a few % of f*).
    EXPECT_LT(std::abs(f - f_ideal), 0.01 * f_ideal) << fc.name;
    // A reply later than the initiator's last kKeptOfferSnapshots offers finds no snapshot: the
    // responder's half of that exchange stays, like a lost reply's. Both must be rare.
    EXPECT_LT(c.stale_replies_dropped, sim.exchanges() / 1000 + 1) << fc.name;
    if (c.replies_lost == 0 && c.stale_replies_dropped == 0) {
      double scale = 0;
      for (int i = 0; i < sim.num_nodes(); ++i) scale += sim.node(i).Model().norm();
      EXPECT_LE(sim.exchange_drift(), 1e-12 * scale * c.faults.messages) << fc.name;
    } else {
      EXPECT_GT(sim.exchange_drift(), 0.0) << fc.name;  // the documented loss of mass
    }
  }
}

}  // namespace
}  // namespace starling
