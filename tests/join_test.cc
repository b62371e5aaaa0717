// Joining a run by a seed (node/config/seed_join.h and what it is made of): the --join list, the
// trust file, the validation of member records from other processes, the merge of views, the
// cluster every node builds from the sorted member list, the run options' first difference; then
// the join ports and the joiners on real loopback sockets in this process: three nodes that find
// each other through a seed list whose first seed is down, and the refusals (other options, a key
// not trusted, an address that does not answer), each named and counted.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "net/curve_keys.h"
#include "net/endpoint.h"
#include "net/tcp_probe.h"
#include "node/config/join_service.h"
#include "node/config/member_view.h"
#include "node/config/run_difference.h"
#include "node/config/seed_join.h"
#include "node/config/trust_file.h"
#include "tests/daemon_cluster.h"
#include "tests/subprocess.h"
#include "tests/temp_dir_test.h"
#include "topology/cluster_file.h"
#include "topology/generators.h"

namespace starling::net {
// For gtest's messages.
void PrintTo(const MemberRecord& m, std::ostream* out) {
  *out << m.key.substr(0, 8) << "@" << m.endpoint << "#" << m.incarnation
       << (m.withdrawn ? " withdrawn" : "");
}
}  // namespace starling::net

namespace starling::node {
namespace {

using net::MemberRecord;

// A key of the Z85 alphabet that begins with '#', as some keys do.
const std::string kHashKey = "#bcdefghij0123456789ABCDEFGHIJ.-:+=^!/*?";

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// ---------------------------------------------------------------------------------------------
// --join's list.

TEST(Seeds, HostAndPortPairsWithTheNodesPortForABareHost) {
  const std::vector<Seed> seeds = ParseSeeds("10.0.0.1:7100,host-b,[fe80::1]:7004,[::1]", 7000);
  ASSERT_EQ(seeds.size(), 4u);
  EXPECT_EQ(seeds[0].host, "10.0.0.1");
  EXPECT_EQ(seeds[0].port, 7100);
  EXPECT_EQ(seeds[1].host, "host-b");
  EXPECT_EQ(seeds[1].port, 7000);
  EXPECT_EQ(seeds[2].host, "[fe80::1]");
  EXPECT_EQ(seeds[2].port, 7004);
  EXPECT_EQ(seeds[3].text, "[::1]:7000");
}

TEST(Seeds, MistakesNameTheEntryAndWhy) {
  auto error = [](const std::string& list) {
    try {
      ParseSeeds(list, 7000);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_TRUE(Contains(error("a:7000,,b"), "'': an empty entry")) << error("a:7000,,b");
  EXPECT_TRUE(Contains(error("a:70x0"), "port '70x0' is not a number"));
  EXPECT_TRUE(Contains(error("a:65533"), "port 65533 is not in 1..65532")) << error("a:65533");
  EXPECT_TRUE(Contains(error("a:0"), "port 0 is not in"));
  EXPECT_TRUE(Contains(error("fe80::1:7000"), "write an IPv6 address as [ADDRESS]"));
  EXPECT_TRUE(Contains(error("a b:7000"), "a space, '/' or control character"));
  EXPECT_TRUE(Contains(error(":7000"), "no host"));
  EXPECT_TRUE(Contains(error("[::1"), "without its ']'"));
  EXPECT_TRUE(Contains(error("a:"), "port '' is not a number"));
  EXPECT_TRUE(Contains(error("a:7000,b"), "(accepted)"));
}

// ---------------------------------------------------------------------------------------------
// The trust file and key files.

class TrustFileTest : public testing::TempDirTest {};

TEST_F(TrustFileTest, KeysWithOrWithoutCommentLinesAndNames) {
  const net::CurveKeyPair a = net::GenerateCurveKeyPair(), b = net::GenerateCurveKeyPair();
  // A .pub file of an older --keygen (a comment line first), a key with a name, a key that
  // begins with '#', a comment after a key, blank lines and CRLF.
  const std::string path =
      Write("trust", "# Starling CURVE public key (Z85): list it in the cluster file.\n" +
                         a.public_key + "\n\n" + b.public_key + "   rack 2, node 7\r\n" + kHashKey +
                         " # the monitor\n   \n");
  const TrustFile trust = ReadTrustFile(path);
  ASSERT_EQ(trust.keys.size(), 3u);
  EXPECT_EQ(trust.keys[0].key, a.public_key);
  EXPECT_EQ(trust.keys[0].name, "");
  EXPECT_EQ(trust.keys[0].line, 2);
  EXPECT_EQ(trust.keys[1].name, "rack 2, node 7");
  EXPECT_EQ(trust.keys[2].key, kHashKey);
  EXPECT_EQ(trust.keys[2].name, "the monitor");
  EXPECT_EQ(trust.Label(b.public_key), "rack 2, node 7 (key " + b.public_key.substr(0, 8) + "...)");
  EXPECT_EQ(trust.Label(a.public_key), "key " + a.public_key.substr(0, 8) + "...");
  EXPECT_EQ(trust.Find(net::GenerateCurveKeyPair().public_key), nullptr);
}

TEST_F(TrustFileTest, MistakesNameTheLine) {
  const std::string key = net::GenerateCurveKeyPair().public_key;
  auto error = [&](const std::string& text) {
    try {
      ReadTrustFile(Write("trust", text));
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_TRUE(Contains(error(key + "\nnot-a-key\n"), dir_ + "/trust:2: 'not-a-key' is not a key"));
  EXPECT_TRUE(Contains(error(key + "\n#\n" + key + " again\n"),
                       ":3: key " + key.substr(0, 8) + "... listed twice (first on line 1)"));
  EXPECT_TRUE(Contains(error("# only comments\n\n"), "lists no key"));
  EXPECT_TRUE(Contains(error(key.substr(1) + "\n"), ":1: '" + key.substr(1)));
  EXPECT_TRUE(Contains(error(std::string(kMaxTrustFileBytes + 1, '#')), "larger than"));
  try {
    ReadTrustFile(dir_ + "/absent");
    ADD_FAILURE() << "an absent file was read";
  } catch (const std::runtime_error& e) {
    EXPECT_TRUE(Contains(e.what(), dir_ + "/absent: cannot read a trust file")) << e.what();
  }
}

TEST_F(TrustFileTest, KeygenPublicFileIsTheKeyAloneAndReadEitherWay) {
  const net::CurveKeyPair pair = net::WriteCurveKeyFiles(dir_ + "/node");
  // $(cat node.pub) is the key: one line, nothing else.
  EXPECT_EQ(testing::ReadFile(dir_ + "/node.pub"), pair.public_key + "\n");
  EXPECT_EQ(net::ReadCurveKeyFile(dir_ + "/node.pub", false), pair.public_key);
  // A key file with comment lines around the key reads the same.
  Write("old.pub", "# Starling CURVE public key (Z85): list it in the cluster file.\n" +
                       pair.public_key + "\n# another comment\n");
  EXPECT_EQ(net::ReadCurveKeyFile(dir_ + "/old.pub", false), pair.public_key);
  // A cluster file line made with $(cat node.pub).
  Write("cluster.conf", "node 0 tcp://127.0.0.1:7000 " + testing::ReadFile(dir_ + "/node.pub") +
                            "node 1 tcp://127.0.0.1:7004 " + pair.public_key + "\nedge 0 1\n");
  EXPECT_EQ(topology::ReadClusterFile(dir_ + "/cluster.conf").nodes[0].public_key, pair.public_key);
}

// ---------------------------------------------------------------------------------------------
// Member records and views.

struct Keys {
  std::vector<net::CurveKeyPair> pairs;
  TrustFile trust;
};

// `n` fresh key pairs, all in the trust file (named node-a, node-b, ...).
Keys MakeKeys(int n) {
  Keys k;
  k.trust.path = "trust";
  for (int i = 0; i < n; ++i) {
    k.pairs.push_back(net::GenerateCurveKeyPair());
    k.trust.keys.push_back(
        {k.pairs.back().public_key, std::string("node-") + char('a' + i), i + 1});
  }
  return k;
}

MemberRecord Record(const std::string& key, int port, uint64_t incarnation = 1,
                    bool withdrawn = false) {
  return {key, "tcp://127.0.0.1:" + std::to_string(port), "host", incarnation, withdrawn};
}

TEST(MemberRecords, UntrustedFieldsAreRefusedNamingThem) {
  const Keys k = MakeKeys(1);
  const std::string key = k.pairs[0].public_key;
  EXPECT_EQ(RecordProblem(Record(key, 7000), k.trust), "");
  const std::string stranger = net::GenerateCurveKeyPair().public_key;
  EXPECT_TRUE(Contains(RecordProblem(Record(stranger, 7000), k.trust), "is not in trust"));
  EXPECT_TRUE(Contains(RecordProblem({"short", "tcp://a:1", "", 1, false}, k.trust),
                       "not a 40-character Z85"));
  EXPECT_TRUE(Contains(RecordProblem({key, "ipc:///tmp/x", "", 1, false}, k.trust),
                       "is not tcp://HOST:PORT"));
  EXPECT_TRUE(Contains(RecordProblem({key, "tcp://a", "", 1, false}, k.trust), "no port"));
  EXPECT_TRUE(Contains(RecordProblem({key, "tcp://a:65533", "", 1, false}, k.trust),
                       "no room for the join ports"));
  EXPECT_TRUE(Contains(RecordProblem({key, "tcp://a:7000", "bad\x01host", 1, false}, k.trust),
                       "host name"));
  EXPECT_TRUE(Contains(
      RecordProblem({key, "tcp://a:7000", std::string(256, 'h'), 1, false}, k.trust), "host name"));
}

TEST(MemberViews, MergeOrderDoesNotMatterAndTheRulesHold) {
  const Keys k = MakeKeys(4);
  std::vector<MemberRecord> told = {
      Record(k.pairs[0].public_key, 7000),          Record(k.pairs[1].public_key, 7004),
      Record(k.pairs[1].public_key, 7008, 2),        // restarted elsewhere: replaces 7004
      Record(k.pairs[2].public_key, 7012, 5),        // withdrawn at the same incarnation
      Record(k.pairs[2].public_key, 7012, 5, true),  //   wins over the live record
      Record(k.pairs[3].public_key, 7016, 9, true), Record(k.pairs[3].public_key, 7016, 3)};
  std::vector<std::vector<MemberRecord>> results;
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    std::shuffle(told.begin(), told.end(), rng);
    MemberView view(5, &k.trust);  // never complete here: a complete view takes no more
    // Told in two halves by two processes.
    const std::vector<MemberRecord> first(told.begin(), told.begin() + 3);
    const std::vector<MemberRecord> second(told.begin() + 3, told.end());
    EXPECT_TRUE(view.Merge(first, "a").empty());
    EXPECT_TRUE(view.Merge(second, "b").empty());
    results.push_back(view.Records());
  }
  for (const auto& r : results) EXPECT_EQ(r, results.front());
  MemberView view(5, &k.trust);
  view.Merge(told, "a");
  ASSERT_EQ(view.LiveMembers().size(), 2u);
  EXPECT_EQ(view.Live(k.pairs[1].public_key)->endpoint, "tcp://127.0.0.1:7008");
  EXPECT_EQ(view.Live(k.pairs[2].public_key), nullptr);
  EXPECT_EQ(view.Live(k.pairs[3].public_key), nullptr);
  EXPECT_FALSE(view.complete());
}

TEST(MemberViews, RefusedRecordsAreNamedAndTheOthersMerged) {
  const Keys k = MakeKeys(3);
  MemberView view(3, &k.trust);
  EXPECT_EQ(view.SetSelf(Record(k.pairs[0].public_key, 7000)), "");
  const std::vector<std::string> problems =
      view.Merge({Record(net::GenerateCurveKeyPair().public_key, 7004),  // not trusted
                  Record(k.pairs[1].public_key, 7000),                   // this node's endpoint
                  Record(k.pairs[2].public_key, 7008)},
                 "seed X");
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_TRUE(Contains(problems[0], "seed X: member 0: key ")) << problems[0];
  EXPECT_TRUE(Contains(problems[1],
                       "seed X: member 1: endpoint tcp://127.0.0.1:7000 is already "
                       "node-a"))
      << problems[1];
  EXPECT_EQ(view.live_count(), 2);
}

TEST(MemberViews, CompleteIsFinalAndAdoptedWhole) {
  const Keys k = MakeKeys(4);
  MemberView view(3, &k.trust);
  view.SetSelf(Record(k.pairs[0].public_key, 7000));
  view.Merge({Record(k.pairs[1].public_key, 7004), Record(k.pairs[2].public_key, 7008)}, "s");
  ASSERT_TRUE(view.complete());
  // A fourth node changes nothing any more.
  view.Merge({Record(k.pairs[3].public_key, 7012)}, "s");
  EXPECT_EQ(view.live_count(), 3);

  // A node that learns late takes a complete view whole...
  MemberView late(3, &k.trust);
  late.SetSelf(Record(k.pairs[2].public_key, 7008));
  EXPECT_EQ(late.AdoptComplete(view.Records(), "s", k.pairs[2].public_key), "");
  EXPECT_EQ(late.Records(), view.Records());
  // ... but not one without it, nor one that is not complete.
  MemberView outside(3, &k.trust);
  const std::string without = outside.AdoptComplete(view.Records(), "s", k.pairs[3].public_key);
  EXPECT_TRUE(Contains(without, "the run started with its 3 members without this node")) << without;
  EXPECT_FALSE(outside.complete());
  const std::vector<MemberRecord> all = view.Records();
  const std::vector<MemberRecord> two(all.begin(), all.begin() + 2);
  EXPECT_TRUE(Contains(outside.AdoptComplete(two, "s", ""), "2 live members, not 3"));
  // Several records at once: the view is complete at the last member it needs, and takes no more.
  MemberView many(2, &k.trust);
  many.Merge({Record(k.pairs[1].public_key, 7004), Record(k.pairs[2].public_key, 7008),
              Record(k.pairs[3].public_key, 7012)},
             "s");
  EXPECT_TRUE(many.complete());
  EXPECT_EQ(many.live_count(), 2);
}

// Every node builds the same cluster whatever order it learned the members in: ids by sorted
// key, edges of --topology, the other trusted keys as probes.
TEST(MemberViews, EveryNodeBuildsTheSameClusterFromTheSortedMembers) {
  const Keys k = MakeKeys(6);
  std::vector<MemberRecord> members;
  for (int i = 0; i < 5; ++i) members.push_back(Record(k.pairs[i].public_key, 7000 + 4 * i));
  std::vector<std::string> texts;
  std::mt19937 rng(3);
  const std::string dir = testing::FreshTempDir("join-cluster");
  for (int trial = 0; trial < 5; ++trial) {
    std::shuffle(members.begin(), members.end(), rng);
    MemberView view(5, &k.trust);
    view.Merge(members, "s");
    ASSERT_TRUE(view.complete());
    RunConfig config;
    config.topology = "er:0.5";
    config.seed = 11;
    const topology::Cluster cluster = JoinedCluster(view.LiveMembers(), config, k.trust);
    topology::WriteClusterFile(cluster, dir + "/c.conf");
    texts.push_back(testing::ReadFile(dir + "/c.conf"));
    // Node i is the i-th key in byte order.
    std::vector<std::string> keys;
    for (int i = 0; i < 5; ++i) keys.push_back(k.pairs[i].public_key);
    std::sort(keys.begin(), keys.end());
    for (int i = 0; i < 5; ++i) EXPECT_EQ(cluster.nodes[i].public_key, keys[i]);
    EXPECT_EQ(cluster.graph.Edges(), topology::MakeTopology("er:0.5", 5, 11).Edges());
    EXPECT_EQ(cluster.probe_keys, std::vector<std::string>{k.pairs[5].public_key});
  }
  for (const std::string& t : texts) EXPECT_EQ(t, texts.front());
  std::filesystem::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------
// Run options.

TEST(RunDifference, TheFirstDifferingOptionWithBothValuesAsTyped) {
  RunConfig a;
  a.algorithm = "extra";
  a.step = 0.1;
  RunConfig b = a;
  EXPECT_EQ(FirstDifference(JoinOptionLines(a, 5), JoinOptionLines(b, 5), "X"), "");
  b.step = 0.05;
  b.local_steps = 4;  // differs too, but after --step
  EXPECT_EQ(FirstDifference(JoinOptionLines(a, 5), JoinOptionLines(b, 5), "node-b"),
            "--step 0.1 here, 0.05 at node-b");
  EXPECT_EQ(FirstDifference(JoinOptionLines(b, 5), JoinOptionLines(a, 5), "the seed"),
            "--step 0.05 here, 0.1 at the seed");
  b = a;
  b.local_steps = 4;
  EXPECT_EQ(FirstDifference(JoinOptionLines(a, 5), JoinOptionLines(b, 5), "Y"),
            "--local-steps 1 here, 4 at Y");
  // Budgets derived from uneven shards (one row more here): named, not an anonymous run id.
  b = a;
  a.iterations = 7500;
  b.iterations = 7501;
  EXPECT_EQ(FirstDifference(JoinOptionLines(a, 5), JoinOptionLines(b, 5), "Y"),
            "--iterations 7500 here, 7501 at Y");
  a.iterations = b.iterations = RunConfig().iterations;
  EXPECT_EQ(FirstDifference(JoinOptionLines(a, 5), JoinOptionLines(a, 6), "Y"),
            "--nodes 5 here, 6 at Y");
  b = a;
  b.topology = "complete";
  EXPECT_EQ(FirstDifference(JoinOptionLines(a, 5), JoinOptionLines(b, 5), "Y"),
            "--topology ring here, complete at Y");
  // A step left at its default (0 in the options) is shown as the default, not as a step of 0.
  b = a;
  b.step = 0.0;
  EXPECT_EQ(FirstDifference(JoinOptionLines(a, 5), JoinOptionLines(b, 5), "node 0"),
            "--step 0.1 here, default at node 0");
  EXPECT_EQ(FirstDifference(JoinOptionLines(b, 5), JoinOptionLines(a, 5), "node 2"),
            "--step default here, 0.1 at node 2");
  b = a;
  b.batch = 32;
  EXPECT_EQ(FirstDifference(JoinOptionLines(a, 5), JoinOptionLines(b, 5), "Y"),
            "--batch 0 (full gradients) here, 32 at Y");
  EXPECT_EQ(FirstDifference({"a=1", "b=2"}, {"a=1"}, "Y"), "--b 2 here, (not set) at Y");
  EXPECT_EQ(FirstDifference({"a=1"}, {"a=1", "c=3"}, "Y"), "--c (not set) here, 3 at Y");
  EXPECT_NE(OptionLinesFingerprint(JoinOptionLines(a, 5)),
            OptionLinesFingerprint(JoinOptionLines(b, 5)));
}

// The options as a HELLO carries them, and the refusal each side reads.
TEST(RunDifference, TheHelloTextNamesTheDifferenceToBothSides) {
  const std::vector<std::string> a = {"algorithm=extra", "step=0x1.999999999999ap-4", "batch=1"};
  std::vector<std::string> b = a;
  b[1] = "step=0x1.999999999999ap-3";  // 0.2
  const std::string text = OptionLinesText(b, 1024);
  EXPECT_EQ(text, "algorithm=extra;step=0x1.999999999999ap-3;batch=1");
  bool truncated = true;
  EXPECT_EQ(ParseOptionLinesText(text, &truncated), b);
  EXPECT_FALSE(truncated);
  const RunDifference d = ExplainRunDifference(a, text, "node 0", "node 2");
  EXPECT_EQ(d.here, "other run options: --step 0.1 here, 0.2 at node 2");
  EXPECT_EQ(d.there, "other run options: --step 0.2 here, 0.1 at node 0");
  EXPECT_EQ(AsSeenByOthers(d.here, "node 0"),
            "other run options: --step 0.1 at node 0, 0.2 at "
            "node 2");
  // Too long: lines left off from the end, marked; only what both said is compared.
  const std::string cut = OptionLinesText(b, 45);
  EXPECT_EQ(cut, "algorithm=extra;step=0x1.999999999999ap-3;...");
  EXPECT_EQ(ParseOptionLinesText(cut, &truncated).size(), 2u);
  EXPECT_TRUE(truncated);
  EXPECT_EQ(ExplainRunDifference(a, cut, "node 0", "node 2").here,
            "other run options: --step 0.1 here, 0.2 at node 2");
  // A peer that sends only its method's name, or garbage: the run ids are all there is.
  EXPECT_TRUE(ParseOptionLinesText("extra", &truncated).empty());
  EXPECT_TRUE(ParseOptionLinesText("a=1;;b=2", &truncated).empty());
  EXPECT_EQ(ExplainRunDifference(a, "extra", "node 0", "node 2").here,
            "other run options (node 2 does not say which)");
  // The same options: something else differs.
  EXPECT_NE(ExplainRunDifference(a, OptionLinesText(a, 1024), "node 0", "node 2")
                .here.find("the same run options, but"),
            std::string::npos);
}

TEST(RunDifference, TheSameDataAtAnotherPathIsTheSameRun) {
  // A file is known by its contents: the same bytes under another name and folder are the same
  // run; other bytes under the same name and size are not.
  const std::string dir = testing::FreshTempDir("join-data");
  std::filesystem::create_directories(dir + "/a");
  std::filesystem::create_directories(dir + "/b");
  std::ofstream(dir + "/a/train.svm") << "+1 1:0.5\n";
  std::ofstream(dir + "/b/train.svm") << "-1 1:0.5\n";
  std::ofstream(dir + "/b/other.svm") << "+1 1:0.5\n";
  RunConfig a;
  a.data = dir + "/a/train.svm";
  RunConfig b = a;
  b.data = dir + "/b/other.svm";
  EXPECT_EQ(FirstDifference(JoinOptionLines(a, 3), JoinOptionLines(b, 3), "Y"), "");
  b.data = dir + "/b/train.svm";
  const std::string d = FirstDifference(JoinOptionLines(a, 3), JoinOptionLines(b, 3), "Y");
  EXPECT_EQ(d.rfind("--data a file of 9 bytes (content ", 0), 0u) << d;
  EXPECT_NE(d.find(" here, a file of 9 bytes (content "), std::string::npos) << d;
  EXPECT_EQ(d.substr(d.size() - 5), " at Y") << d;
  std::filesystem::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------
// Real sockets, in this process: join ports and joiners.

TEST(TcpProbe, NamesARefusedConnectionAndSeesAListener) {
  // A port of this process's range that nothing listens on.
  const int port = testing::PortBase() + 39;
  net::TcpProbe refused("tcp://127.0.0.1:" + std::to_string(port), std::chrono::seconds(5));
  refused.Wait();
  EXPECT_FALSE(refused.connected());
  EXPECT_EQ(refused.failure(), "connection refused");
  zmq::context_t context(1);
  zmq::socket_t listener(context, zmq::socket_type::router);
  listener.set(zmq::sockopt::linger, 0);
  listener.bind("tcp://127.0.0.1:" + std::to_string(port));
  net::TcpProbe up("tcp://127.0.0.1:" + std::to_string(port), std::chrono::seconds(5));
  up.Wait();
  EXPECT_TRUE(up.connected()) << up.failure();
  net::TcpProbe named("tcp://no-such-host.invalid:7000", std::chrono::seconds(5),
                      /*numeric_only=*/true);
  EXPECT_TRUE(named.done());
  EXPECT_EQ(named.failure(), "host name not resolved here");
}

// One process that joins: its view, join ports and request.
struct Joiner {
  Joiner(const Keys& keys, int index, int port, int nodes, const RunConfig& config,
         const std::string& seeds)
      : view(nodes, &keys.trust) {
    net::MemberRecord self{keys.pairs[index].public_key, "tcp://127.0.0.1:" + std::to_string(port),
                           "host", 1, false};
    view.view.SetSelf(self);
    JoinKeys join_keys{keys.trust, keys.pairs[index].secret_key, keys.pairs[index].public_key};
    this->keys = std::make_unique<JoinKeys>(join_keys);
    request = MakeSeedJoinRequest(seeds, port, *this->keys, config, nodes);
    request.self = self;
    request.timeout_seconds = 60;
    request.log_every_seconds = 2;
    request.request_timeout = std::chrono::milliseconds(2000);
    JoinServiceOptions options;
    options.host = "127.0.0.1";
    options.port = port;
    options.secret_key = join_keys.secret_key;
    options.public_key = join_keys.public_key;
    options.trust = &this->keys->trust;
    options.options = request.options;
    options.fingerprint = request.fingerprint;
    options.connect_back_timeout = std::chrono::milliseconds(2000);
    service = std::make_unique<JoinService>(options, &view);
  }
  std::future<std::vector<MemberRecord>> Start() {
    return std::async(std::launch::async, [this] { return JoinBySeeds(request, &view); });
  }
  std::unique_ptr<JoinKeys> keys;
  SharedMemberView view;
  SeedJoinRequest request;
  std::unique_ptr<JoinService> service;
};

std::string ErrorOf(std::future<std::vector<MemberRecord>>* f) {
  try {
    f->get();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(joined)";
}

TEST(JoinBySeeds, ThreeNodesFindEachOtherThroughASeedListWhoseFirstSeedIsDown) {
  const Keys k = MakeKeys(3);
  const int base = testing::PortBase();
  RunConfig config;
  config.algorithm = "extra";
  const std::string down = "127.0.0.1:" + std::to_string(base + 36);  // nothing listens there
  const std::string seeds = down + ",127.0.0.1:" + std::to_string(base);
  std::vector<std::unique_ptr<Joiner>> joiners;
  for (int i = 0; i < 3; ++i) {
    joiners.push_back(std::make_unique<Joiner>(k, i, base + 4 * i, 3, config, seeds));
  }
  std::vector<std::future<std::vector<MemberRecord>>> joined;
  for (auto& j : joiners) joined.push_back(j->Start());
  std::vector<std::vector<MemberRecord>> lists;
  for (auto& f : joined) {
    ASSERT_EQ(f.wait_for(std::chrono::seconds(60)), std::future_status::ready);
    lists.push_back(f.get());
  }
  ASSERT_EQ(lists[0].size(), 3u);
  for (const auto& list : lists) EXPECT_EQ(list, lists[0]);
  for (size_t i = 1; i < lists[0].size(); ++i) EXPECT_LT(lists[0][i - 1].key, lists[0][i].key);
  for (auto& j : joiners)
    EXPECT_EQ(j->service->rejects().total(), 0u) << j->service->rejects().Summary();
}

TEST(JoinBySeeds, RefusalsNameTheirCauseAndAreCounted) {
  const Keys k = MakeKeys(3);
  const int base = testing::PortBase() + 12;
  RunConfig config;
  config.algorithm = "extra";
  config.step = 0.1;
  Joiner seed(k, 0, base, 3, config, "127.0.0.1:" + std::to_string(base));
  const std::string seeds = "127.0.0.1:" + std::to_string(base);

  // Other run options: refused naming the first option that differs, both values.
  RunConfig other = config;
  other.step = 0.2;
  Joiner differs(k, 1, base + 4, 3, other, seeds);
  auto refused = differs.Start();
  const std::string options_error = ErrorOf(&refused);
  EXPECT_TRUE(Contains(options_error,
                       "refused this node: other run options: --step 0.2 here, "
                       "0.1 at the seed"))
      << options_error;
  EXPECT_EQ(seed.service->rejects().count(net::RejectReason::kWrongRun), 1u);

  // A key the seed's trust file lacks (this joiner's own file has it): refused by the CURVE
  // allow-list, counted there.
  Keys stale = k;
  const net::CurveKeyPair stranger = net::GenerateCurveKeyPair();
  stale.pairs[2] = stranger;
  stale.trust.keys.push_back({stranger.public_key, "stranger", 9});
  Joiner untrusted(stale, 2, base + 8, 3, config, seeds);
  auto no_key = untrusted.Start();
  const std::string key_error = ErrorOf(&no_key);
  EXPECT_TRUE(Contains(key_error, "refused this node's key " + stranger.public_key +
                                      ": it is not in that host's trust file"))
      << key_error;
  const auto counted = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (seed.service->rejects().count(net::RejectReason::kUnlistedKey) == 0 &&
         std::chrono::steady_clock::now() < counted) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(seed.service->rejects().count(net::RejectReason::kUnlistedKey), 1u)
      << seed.service->rejects().Summary();
}

TEST(JoinBySeeds, AnAddressThatDoesNotAnswerIsRefusedWithTheAdviceToGiveHost) {
  const Keys k = MakeKeys(2);
  const int base = testing::PortBase() + 24;
  RunConfig config;
  Joiner seed(k, 0, base, 2, config, "127.0.0.1:" + std::to_string(base));
  Joiner joiner(k, 1, base + 4, 2, config, "127.0.0.1:" + std::to_string(base));
  // This joiner says it is at a port where nothing listens (as a host whose --host auto chose an
  // address the others cannot reach).
  net::MemberRecord wrong = *joiner.request.self;
  wrong.endpoint = "tcp://127.0.0.1:" + std::to_string(testing::PortBase() + 32);
  wrong.incarnation = 2;  // replaces the record made at its real address
  joiner.request.self = wrong;
  joiner.view.view.SetSelf(wrong);
  auto refused = joiner.Start();
  const std::string error = ErrorOf(&refused);
  EXPECT_TRUE(Contains(
      error, "the address this node publishes, " + wrong.endpoint + ", does not answer the seed"))
      << error;
  EXPECT_TRUE(Contains(error, "connection refused")) << error;
  EXPECT_TRUE(Contains(error, "start it with --host ADDRESS")) << error;
  EXPECT_FALSE(seed.view.view.complete());
}

}  // namespace
}  // namespace starling::node
