// SwarmSGD's --tail-average (algorithms/pairwise/swarm_sgd_base.h): each node's reported model is
// the mean of its models after each of its last m local steps, checked against that mean computed
// here from the recorded models; with the nodes in lockstep the mean of the reported models is the
// time average of the network's mean over those steps, and the end phase's merges leave it as it
// is; the live models (what exchanges use) are those of a run without it; 0 changes nothing, not
// the run id either; checkpoints keep the tail for every variant.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "algorithms/algorithm_state.h"
#include "algorithms/pairwise/pairwise_algorithm.h"
#include "algorithms/pairwise/swarm_sgd.h"
#include "node/config/run_id.h"
#include "node/config/run_setup.h"
#include "node/sim/pairwise_simulator.h"
#include "tests/temp_dir_test.h"
#include "tests/written_data.h"
#include "topology/generators.h"

namespace starling {
namespace {

using Nodes = std::vector<std::unique_ptr<algorithms::PairwiseAlgorithm>>;

class SwarmTailAverage : public testing::TempDirTest {
 protected:
  node::RunConfig Config(double tail, const std::string& compression = "none") {
    node::RunConfig c;
    c.algorithm = "swarmsgd";
    c.problem = "logistic";
    c.data = testing::WriteLogisticData(dir_ + "/l.txt", 400, 6, 13);
    c.format = "libsvm";
    c.nodes = 8;
    c.topology = "ring";
    c.seed = 3;
    c.l2 = 1e-3;
    c.batch = 4;
    c.local_steps = 1;
    c.step = 0.5;
    c.step_schedule = "cosine";
    c.iterations = 40;
    c.compression = compression;
    if (tail >= 0) c.params.Set("tail-average", tail);
    return c;
  }
  // The setups stay alive with the fixture: the nodes' problems point into them.
  Nodes Make(const node::RunConfig& config) {
    setups_.push_back(std::make_unique<node::RunSetup>(node::BuildRunSetup(config)));
    const node::RunSetup& setup = *setups_.back();
    const auto options = node::PairwiseOptionsFor(config, setup);
    Nodes nodes;
    for (const auto& s : setup.nodes)
      nodes.push_back(algorithms::MakePairwiseAlgorithm(options, s));
    return nodes;
  }
  std::vector<std::unique_ptr<node::RunSetup>> setups_;
};

// One exchange, i initiating to j.
void Merge(Nodes& nodes, int i, int j, uint64_t seq) {
  const Vec offer = *nodes[i]->BeginExchange(j, seq);
  const Vec reply = *nodes[j]->Respond(i, offer);
  ASSERT_TRUE(nodes[i]->CompleteExchange(seq, reply));
}

// Lockstep: every node steps once, then the ring's even or odd edges merge (disjoint pairs), so
// the model after step k includes the merges since step k - 1.
TEST_F(SwarmTailAverage, ReportedModelIsTheMeanOfTheLastStepsAndOfTheNetworksMean) {
  const int n = 8, iterations = 40, m = 10;  // 0.25 x 40
  Nodes nodes = Make(Config(0.25));
  std::vector<Vec> direct(n, Vec::Zero(6));
  Vec network_time_average = Vec::Zero(6);
  uint64_t seq = 1;
  for (int k = 1; k <= iterations; ++k) {
    Vec network_mean = Vec::Zero(6);
    for (int i = 0; i < n; ++i) {
      nodes[i]->LocalStep();
      if (k > iterations - m) direct[i] += nodes[i]->Model() / m;
      network_mean += nodes[i]->Model() / n;
      // Before the tail, the live model is reported.
      if (k <= iterations - m) EXPECT_EQ(&nodes[i]->ReportedModel(), &nodes[i]->Model());
    }
    if (k > iterations - m) network_time_average += network_mean / m;
    for (int i = k % 2; i < n; i += 2) Merge(nodes, i, (i + 1) % n, seq++);
  }
  Vec reported_mean = Vec::Zero(6), live_sum = Vec::Zero(6);
  for (int i = 0; i < n; ++i) {
    const auto& swarm = dynamic_cast<const algorithms::SwarmSgd&>(*nodes[i]);
    EXPECT_EQ(swarm.tail_count(), m);
    EXPECT_LE((nodes[i]->ReportedModel() - direct[i]).norm(), 1e-13 * direct[i].norm()) << i;
    // Not vacuous: the mean is not the last model.
    EXPECT_GT((nodes[i]->ReportedModel() - nodes[i]->Model()).norm(), 1e-4 * direct[i].norm());
    reported_mean += nodes[i]->ReportedModel() / n;
    live_sum += nodes[i]->Model();
  }
  EXPECT_LE((reported_mean - network_time_average).norm(), 1e-13 * network_time_average.norm());

  // The end phase: pure averaging merges move the live models (keeping their sum) and leave
  // the reported means as they were at each node's last step.
  const std::vector<Vec> before = [&] {
    std::vector<Vec> r;
    for (const auto& a : nodes) r.push_back(a->ReportedModel());
    return r;
  }();
  for (auto& a : nodes) a->EndLocalSteps();
  for (int round = 0; round < 200; ++round) {
    for (int i = round % 2; i < n; i += 2) Merge(nodes, i, (i + 1) % n, seq++);
  }
  Vec live_sum_after = Vec::Zero(6);
  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(nodes[i]->ReportedModel() == before[i]) << i;
    live_sum_after += nodes[i]->Model();
  }
  EXPECT_LE((live_sum_after - live_sum).norm(), 1e-13 * live_sum.norm());
  EXPECT_LE((nodes[0]->Model() - live_sum / n).norm(), 1e-8 * live_sum.norm());
}

// The tail average changes only what is reported: the live models of a run with it are those of
// the same run without it, bit for bit; 0 (or no value) reports the live model.
TEST_F(SwarmTailAverage, LiveModelsAreUnchangedAndZeroIsOff) {
  const node::RunConfig unset = Config(-1), zero = Config(0.0), half = Config(0.5);
  const node::RunSetup setup = node::BuildRunSetup(unset);
  node::PairwiseSimulator a(setup.nodes, node::PairwiseOptionsFor(unset, setup), 11),
      b(setup.nodes, node::PairwiseOptionsFor(zero, setup), 11),
      c(setup.nodes, node::PairwiseOptionsFor(half, setup), 11);
  a.RunUntilLocalSteps(40);
  b.RunUntilLocalSteps(40);
  c.RunUntilLocalSteps(40);
  ASSERT_EQ(a.exchanges(), c.exchanges());
  bool any_differs = false;
  for (int i = 0; i < a.num_nodes(); ++i) {
    EXPECT_TRUE(a.node(i).Model() == b.node(i).Model()) << i;
    EXPECT_TRUE(a.node(i).Model() == c.node(i).Model()) << i;
    EXPECT_EQ(&a.node(i).ReportedModel(), &a.node(i).Model());
    EXPECT_EQ(&b.node(i).ReportedModel(), &b.node(i).Model());
    any_differs |= !(c.node(i).ReportedModel() == c.node(i).Model());
  }
  EXPECT_TRUE(any_differs);
  // The simulator reports the tail means.
  EXPECT_FALSE(a.Spread().mean == c.Spread().mean);
}

TEST_F(SwarmTailAverage, RunIdHoldsItOnlyWhenSet) {
  const topology::Graph ring = topology::Ring(8);
  const std::string unset = node::CanonicalRunText(Config(-1), ring);
  EXPECT_EQ(unset.find("tail-average"), std::string::npos) << unset;
  EXPECT_EQ(node::CanonicalRunText(Config(0.0), ring), unset);
  const std::string quarter = node::CanonicalRunText(Config(0.25), ring);
  EXPECT_NE(quarter.find("tail-average=0x1p-2"), std::string::npos) << quarter;
  EXPECT_NE(node::RunIdFor(Config(0.25), ring), node::RunIdFor(Config(0.5), ring));
}

TEST_F(SwarmTailAverage, OutOfRangeIsRefusedNamingTheOption) {
  for (double bad : {-0.1, 1.5}) {
    algorithms::ParamValues v;
    v.Set("tail-average", bad);
    try {
      algorithms::SwarmSgdParamTable().Validate(v, {});
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("--tail-average"), std::string::npos) << e.what();
    }
  }
}

// A node restored mid-tail continues as the uninterrupted one, bit for bit, in every variant (vq's
// own int stands before the tail's count).
TEST_F(SwarmTailAverage, CheckpointsKeepTheTail) {
  for (const std::string compression : {"none", "lattice:12", "topk:3", "vq:4"}) {
    SCOPED_TRACE(compression);
    const node::RunConfig config = Config(0.5, compression);
    Nodes run = Make(config), restored = Make(config);
    for (int k = 0; k < 30; ++k) run[0]->LocalStep();  // the tail starts after step 20
    algorithms::AlgorithmState state;
    ASSERT_TRUE(run[0]->SaveState(&state));
    restored[0]->LoadState(state);
    for (int k = 0; k < 10; ++k) {
      run[0]->LocalStep();
      restored[0]->LocalStep();
    }
    EXPECT_TRUE(run[0]->ReportedModel() == restored[0]->ReportedModel());
    EXPECT_TRUE(run[0]->Model() == restored[0]->Model());
    EXPECT_FALSE(run[0]->ReportedModel() == run[0]->Model());
    // Without the tail average the checkpoint has the shape it had before (8 ints, 1 vector
    // for the full-precision one), and a shape of the other setting is refused.
    Nodes off = Make(Config(0.0, compression));
    algorithms::AlgorithmState off_state;
    ASSERT_TRUE(off[0]->SaveState(&off_state));
    EXPECT_EQ(off_state.ints.size() + 1, state.ints.size());
    EXPECT_EQ(off_state.vectors.size() + 1, state.vectors.size());
    if (compression == "none") EXPECT_EQ(off_state.ints.size(), 8u);
    EXPECT_THROW(off[0]->LoadState(state), std::invalid_argument);
  }
}

}  // namespace
}  // namespace starling
