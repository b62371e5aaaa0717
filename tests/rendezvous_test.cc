// The shared-directory rendezvous (node/config/rendezvous.h): publications are parsed as
// untrusted input, a deadline names the missing nodes, and nodes started together agree on one
// cluster file, checked here against what the test published.
#include "node/config/rendezvous.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "net/curve_keys.h"
#include "tests/temp_dir_test.h"
#include "topology/cluster_file.h"
#include "topology/generators.h"

namespace starling::node {
namespace {

class Rendezvous : public testing::TempDirTest {
 protected:
  // Node i's publication as a test writes it: its own port, a fresh key, the same fingerprint.
  RendezvousEntry Entry(int id) {
    RendezvousEntry e;
    e.id = id;
    e.endpoint = "tcp://10.1.2." + std::to_string(id + 1) + ":" + std::to_string(7000 + 2 * id);
    e.public_key = net::GenerateCurveKeyPair().public_key;
    e.run = "0123456789abcdef";
    e.host = "host-" + std::to_string(id);
    return e;
  }
  RendezvousRequest Request(int nodes, const RendezvousEntry& self, double timeout_s) {
    RendezvousRequest r;
    r.dir = dir_;
    r.nodes = nodes;
    r.self = self;
    r.graph = topology::MakeTopology("ring", nodes, 1);
    r.timeout_seconds = timeout_s;
    r.log_every_seconds = 1000;
    return r;
  }
};

// The message of what `f` throws ("(no error)" if nothing).
std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST_F(Rendezvous, EntryRoundTrips) {
  const RendezvousEntry e = Entry(3);
  const RendezvousEntry back = ParseEntry(FormatEntry(e), "x", 4, 3);
  EXPECT_EQ(back.id, 3);
  EXPECT_EQ(back.endpoint, e.endpoint);
  EXPECT_EQ(back.public_key, e.public_key);
  EXPECT_EQ(back.run, e.run);
  EXPECT_EQ(back.host, e.host);
  RendezvousEntry plain = e;
  plain.public_key.clear();
  plain.host.clear();
  EXPECT_NE(FormatEntry(plain).find("key none\n"), std::string::npos);
  EXPECT_EQ(ParseEntry(FormatEntry(plain), "x", 4, 3).public_key, "");
}

TEST_F(Rendezvous, MalformedPublicationsAreRefusedNamingTheFile) {
  const std::string key = net::GenerateCurveKeyPair().public_key;
  const std::string good =
      "version 1\nid 2\nendpoint tcp://h:7004\nkey " + key + "\nrun 0123456789abcdef\n";
  ASSERT_NO_THROW(ParseEntry(good, "P", 4, 2));
  struct Case {
    std::string text, expected;
  };
  const std::vector<Case> cases = {
      {good + "colour blue\n", "P:6: unknown field 'colour'"},
      {good + "id 2\n", "P:6: field 'id' repeated"},
      {good + "host a b\n", "P:6: expected 'NAME VALUE'"},
      {"version 1\nendpoint tcp://h:7004\nkey none\nrun 0123456789abcdef\n", "P: no 'id' field"},
      {"version 2\nid 2\nendpoint tcp://h:7004\nkey none\nrun 0123456789abcdef\n",
       "P: version '2'"},
      {"version 1\nid 4\nendpoint tcp://h:7004\nkey none\nrun 0123456789abcdef\n",
       "P: id '4' is not one of 0..3"},
      {"version 1\nid -1\nendpoint tcp://h:7004\nkey none\nrun 0123456789abcdef\n",
       "P: id '-1' is not one of 0..3"},
      {"version 1\nid 1\nendpoint tcp://h:7004\nkey none\nrun 0123456789abcdef\n",
       "P: says id 1 but its name is node 2's"},
      {"version 1\nid 2\nendpoint tcp://h:0\nkey none\nrun 0123456789abcdef\n",
       "P: endpoint 'tcp://h:0': port '0' is not in 1..65535"},
      {"version 1\nid 2\nendpoint http://h:80\nkey none\nrun 0123456789abcdef\n",
       "P: endpoint 'http://h:80' must look like"},
      {"version 1\nid 2\nendpoint tcp://h:7004\nkey abc\nrun 0123456789abcdef\n",
       "P: key 'abc' is neither 'none' nor a 40-character Z85 CURVE key"},
      {"version 1\nid 2\nendpoint tcp://h:7004\nkey none\nrun 0123456789ABCDEF\n",
       "P: run '0123456789ABCDEF' is not 16 hex digits"},
      {good + std::string("host a\0b\n", 9), "P: contains a NUL byte"},
      {good + "# " + std::string(5000, 'x') + "\n", "P: larger than 4096 bytes"},
  };
  for (const Case& c : cases) {
    const std::string e = ErrorOf([&] { ParseEntry(c.text, "P", 4, 2); });
    EXPECT_EQ(e.rfind(c.expected, 0), 0u) << "expected '" << c.expected << "', got '" << e << "'";
  }
}

TEST_F(Rendezvous, PublishingTwiceIsRefused) {
  PublishEntry(dir_, Entry(1));
  const std::string e = ErrorOf([&] { PublishEntry(dir_, Entry(1)); });
  EXPECT_NE(e.find(dir_ + "/node-1.publish: exists already"), std::string::npos) << e;
  // The first publication is intact, and no temporary file is left behind.
  int files = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir_)) {
    ++files;
    EXPECT_EQ(f.path().filename(), "node-1.publish");
  }
  EXPECT_EQ(files, 1);
}

TEST_F(Rendezvous, TheDeadlineNamesTheMissingNodes) {
  for (int id : {0, 1, 3}) PublishEntry(dir_, Entry(id));
  const auto start = std::chrono::steady_clock::now();
  try {
    AwaitEntries(Request(5, Entry(0), 0.5));
    ADD_FAILURE() << "no timeout";
  } catch (const RendezvousTimeout& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("3 of 5 nodes published; missing nodes 2, 4"), std::string::npos) << what;
    EXPECT_NE(what.find(dir_ + "/node-2.publish"), std::string::npos) << what;
  }
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(waited, 0.5);
  EXPECT_LT(waited, 30);
}

TEST_F(Rendezvous, ABadPublicationFailsTheWaitNamingIt) {
  PublishEntry(dir_, Entry(0));
  Write("node-1.publish",
        "version 1\nid 1\nendpoint tcp://h:1\nkey nonsense\nrun 0123456789abcdef\n");
  std::string e = ErrorOf([&] { AwaitEntries(Request(3, Entry(0), 5)); });
  EXPECT_EQ(e.rfind(dir_ + "/node-1.publish: key 'nonsense'", 0), 0u) << e;

  std::filesystem::remove(dir_ + "/node-1.publish");
  Write("node-7.publish", FormatEntry(Entry(1)));
  e = ErrorOf([&] { AwaitEntries(Request(3, Entry(0), 5)); });
  EXPECT_EQ(e.rfind(dir_ + "/node-7.publish: not a node of this run (ids are 0..2", 0), 0u) << e;

  std::filesystem::remove(dir_ + "/node-7.publish");
  RendezvousEntry other = Entry(2);
  other.run = "fedcba9876543210";
  PublishEntry(dir_, other);
  e = ErrorOf([&] { AwaitEntries(Request(3, Entry(0), 5)); });
  EXPECT_EQ(e.rfind(dir_ + "/node-2.publish: run fingerprint fedcba9876543210 differs", 0), 0u)
      << e;

  // With the options in both publications, the first that differs is named with both values.
  std::filesystem::remove(dir_ + "/node-2.publish");
  other.options = "algorithm=extra;step=0.2";
  PublishEntry(dir_, other);
  RendezvousEntry self = Entry(0);
  self.options = "algorithm=extra;step=0.1";
  e = ErrorOf([&] { AwaitEntries(Request(3, self, 5)); });
  EXPECT_NE(e.find("node 2 was started with other run options: --step 0.1 here, 0.2 at node 2"),
            std::string::npos)
      << e;
}

TEST_F(Rendezvous, RepeatedEndpointsAndKeysAreRefusedNamingBothFiles) {
  const topology::Graph ring = topology::MakeTopology("ring", 3, 1);
  std::vector<RendezvousEntry> entries = {Entry(0), Entry(1), Entry(2)};
  entries[2].endpoint = entries[0].endpoint;
  std::string e = ErrorOf([&] { ClusterFromEntries(entries, ring, dir_); });
  EXPECT_EQ(e.rfind(dir_ + "/node-2.publish: endpoint " + entries[0].endpoint + " is also " + dir_ +
                        "/node-0.publish's",
                    0),
            0u)
      << e;
  entries = {Entry(0), Entry(1), Entry(2)};
  entries[1].public_key = entries[2].public_key;
  e = ErrorOf([&] { ClusterFromEntries(entries, ring, dir_); });
  EXPECT_EQ(e.rfind(dir_ + "/node-2.publish: public key", 0), 0u) << e;
  EXPECT_NE(e.find(dir_ + "/node-1.publish's"), std::string::npos) << e;
  entries = {Entry(0), Entry(1), Entry(2)};
  entries[1].public_key.clear();
  e = ErrorOf([&] { ClusterFromEntries(entries, ring, dir_); });
  EXPECT_EQ(e.rfind(dir_ + "/node-1.publish: publishes no key but", 0), 0u) << e;
  // A probe with a node's key.
  entries = {Entry(0), Entry(1), Entry(2)};
  Write("probe-a.pub", entries[1].public_key + "\n");
  e = ErrorOf([&] { ClusterFromEntries(entries, ring, dir_); });
  EXPECT_EQ(e.rfind(dir_ + "/probe-a.pub: the public key of node 1", 0), 0u) << e;
}

// Six nodes join at once, each from its own thread as from its own process: each gets the same
// cluster file, and it lists what each published, the ring, and the probe key put there first.
TEST_F(Rendezvous, NodesStartedTogetherAgreeOnOneClusterFile) {
  const int n = 6;
  const std::string probe = net::GenerateCurveKeyPair().public_key;
  Write("probe-monitor.pub", probe + "\n");
  std::vector<RendezvousEntry> entries;
  for (int i = 0; i < n; ++i) entries.push_back(Entry(i));
  std::vector<std::string> paths(n), errors(n);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      errors[i] = ErrorOf([&] { paths[i] = JoinRendezvous(Request(n, entries[i], 60)); });
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(errors[i], "(no error)") << "node " << i;
    EXPECT_EQ(paths[i], dir_ + "/cluster.conf");
  }
  const topology::Cluster cluster = topology::ReadClusterFile(dir_ + "/cluster.conf");
  ASSERT_EQ(cluster.nodes.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(cluster.nodes[i].endpoint, entries[i].endpoint);
    EXPECT_EQ(cluster.nodes[i].public_key, entries[i].public_key);
  }
  std::vector<std::pair<int, int>> ring;
  for (int i = 0; i < n; ++i) ring.push_back({std::min(i, (i + 1) % n), std::max(i, (i + 1) % n)});
  std::sort(ring.begin(), ring.end());
  auto edges = cluster.graph.Edges();
  std::sort(edges.begin(), edges.end());
  EXPECT_EQ(edges, ring);
  EXPECT_EQ(cluster.probe_keys, std::vector<std::string>{probe});
}

TEST_F(Rendezvous, AClusterFileThatDiffersIsAnError) {
  const topology::Graph ring = topology::MakeTopology("ring", 3, 1);
  const topology::Cluster cluster = ClusterFromEntries({Entry(0), Entry(1), Entry(2)}, ring, dir_);
  topology::Cluster other = cluster;
  other.nodes[1].endpoint = "tcp://10.9.9.9:1";
  AgreeOnClusterFile(dir_, other);
  const std::string e = ErrorOf([&] { AgreeOnClusterFile(dir_, cluster); });
  EXPECT_EQ(e.rfind(dir_ + "/cluster.conf:3: 'node 1 tcp://10.9.9.9:1", 0), 0u) << e;
  EXPECT_NE(e.find("but this node built 'node 1 " + cluster.nodes[1].endpoint), std::string::npos)
      << e;
  // The same cluster again is accepted.
  EXPECT_EQ(AgreeOnClusterFile(dir_, other), dir_ + "/cluster.conf");
}

TEST_F(Rendezvous, AMonitorWaitsForTheClusterFileWithADeadline) {
  PublishEntry(dir_, Entry(1));
  std::string e = ErrorOf([&] { AwaitClusterFile(dir_, 0.3, nullptr); });
  EXPECT_NE(e.find("no " + dir_ + "/cluster.conf after 0.3 s; published so far: nodes 1"),
            std::string::npos)
      << e;
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    Write("cluster.conf", "node 0 tcp://h:1\n");
  });
  EXPECT_EQ(AwaitClusterFile(dir_, 60, nullptr), dir_ + "/cluster.conf");
  writer.join();
}

}  // namespace
}  // namespace starling::node
