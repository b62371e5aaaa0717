// Quantized gossip (--gossip-bits, --gossip-quantizer; algorithms/round/quantized_gossip.h)
// across real starlingd processes: the methods are deterministic, so the daemons must end at the
// simulator's iterates bit for bit, which also shows that every node decoded the same public
// copies as the sender. The messages travel as their decoded doubles (the counted bits,
// OutgoingBits, are R d + 64 per vector; the wire is not packed).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/daemon_cluster.h"
#include "tests/test_data.h"
#include "topology/generators.h"

namespace starling {
namespace {

namespace fs = std::filesystem;

class DaemonQuantizedGossip : public ::testing::Test {
 protected:
  void SetUp() override {
    a9a_ = testing::SharedData("a9a");
    if (!fs::exists(a9a_)) GTEST_SKIP() << "no a9a at " << a9a_;
  }

  // n daemons of `algorithm` with R = `bits` and `quantizer` against the simulator.
  void ExpectDaemonsEqualTheSimulator(const std::string& name, const std::string& algorithm,
                                      const topology::Graph& graph, int port_offset, int bits,
                                      const std::string& quantizer) {
    const std::string dir = testing::FreshTempDir(name);
    const int n = graph.num_nodes(), iterations = 60;
    const std::string cluster =
        testing::WriteLoopbackCluster(dir, graph, testing::PortBase() + port_offset, true);
    const std::vector<std::string> args = {"--algorithm",
                                           algorithm,
                                           "--problem",
                                           "logistic",
                                           "--l2",
                                           "1e-2",
                                           "--data",
                                           a9a_,
                                           "--format",
                                           "libsvm",
                                           "--iterations",
                                           std::to_string(iterations),
                                           "--seed",
                                           "7",
                                           "--gossip-bits",
                                           std::to_string(bits),
                                           "--gossip-quantizer",
                                           quantizer};
    const std::vector<Vec> models = testing::RunLoopbackDaemons(dir, cluster, n, args, 180);
    const std::vector<Vec> simulated = testing::SimulatedA9aModels(
        algorithm, a9a_, cluster, n, iterations, [&](node::RunConfig* c) {
          c->params.Set("gossip-bits", bits);
          c->params.Set("gossip-quantizer", quantizer);
        });
    // The same run unquantized: the quantization must have changed the iterates (else this test
    // could not tell a daemon that ignored the option).
    const std::vector<Vec> exact =
        testing::SimulatedA9aModels(algorithm, a9a_, cluster, n, iterations);
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(models[i].size(), simulated[i].size()) << "node " << i;
      EXPECT_EQ(models[i], simulated[i]) << algorithm << " node " << i;
      EXPECT_GT((simulated[i] - exact[i]).norm(), 1e-9 * exact[i].norm()) << "node " << i;
    }
    fs::remove_all(dir);
  }

  std::string a9a_;
};

TEST_F(DaemonQuantizedGossip, DifferentialGradientTrackingEqualsTheSimulator) {
  ExpectDaemonsEqualTheSimulator("qg-gt", "gradient-tracking", topology::ErdosRenyi(5, 0.5, 3), 0,
                                 4, "differential");
}

TEST_F(DaemonQuantizedGossip, NaiveDgdEqualsTheSimulator) {
  ExpectDaemonsEqualTheSimulator("qg-dgd", "dgd", topology::Ring(4), 10, 3, "naive");
}

TEST_F(DaemonQuantizedGossip, DifferentialExtraEqualsTheSimulator) {
  ExpectDaemonsEqualTheSimulator("qg-extra", "extra", topology::Ring(4), 0, 2, "differential");
}

}  // namespace
}  // namespace starling
