// Method parameters declared once next to each method (algorithms/params.h) and everything
// derived from those declarations: the command line, the config file, --help, validation that
// names the option, the values reaching the algorithm, and the run id.
#include <gtest/gtest.h>

#include <boost/program_options.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/params.h"
#include "algorithms/round/round_method.h"
#include "node/config/method_params.h"
#include "node/config/run_id.h"
#include "node/config/run_options.h"
#include "node/config/run_setup.h"
#include "node/sim/round_simulator.h"
#include "tests/subprocess.h"
#include "topology/generators.h"

namespace starling {
namespace {

namespace fs = std::filesystem;
namespace po = boost::program_options;
using algorithms::ParamContext;
using algorithms::ParamTable;
using algorithms::ParamValues;
using algorithms::Range;

// The message of the std::invalid_argument that `f` throws ("" if it throws none).
template <typename F>
std::string ErrorOf(F f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// ---- The declaration machinery on its own, with a struct of this test's.

struct ToyParams {
  double weight = 0.25;
  int count = 2;
  int64_t length = 0;
};

const ParamTable<ToyParams>& ToyTable() {
  static const auto* const table = new ParamTable<ToyParams>(
      ParamTable<ToyParams>("Toy")
          .Add("toy-weight", &ToyParams::weight, "a weight", Range::Open(0, 1))
          .Add("toy-count", &ToyParams::count, "a count", Range::AtLeast(1))
          .Add("toy-length", &ToyParams::length, "a length", Range::NonNegative())
          .CrossCheck([](const ToyParams& p, const ParamContext& run) {
            if (p.count % 2 != 0)
              algorithms::FailParam("toy-count", int64_t{p.count}, "must be even");
            if (p.length > run.iterations) {
              algorithms::FailParam("toy-length", p.length, "is longer than --iterations");
            }
          }));
  return *table;
}

TEST(ParamTable, DeclaresNameTypeDefaultAndHelpOnce) {
  const auto& decls = ToyTable().decls();
  ASSERT_EQ(decls.size(), 3u);
  EXPECT_EQ(decls[0].name, "toy-weight");
  EXPECT_EQ(decls[0].type, algorithms::ParamType::kDouble);
  EXPECT_EQ(std::get<double>(decls[0].default_value), 0.25);
  EXPECT_EQ(decls[0].help, "a weight");
  EXPECT_EQ(decls[1].type, algorithms::ParamType::kInt);
  EXPECT_EQ(std::get<int64_t>(decls[1].default_value), 2);
  EXPECT_EQ(decls[2].type, algorithms::ParamType::kInt64);
}

TEST(ParamTable, ReadsDefaultsAndOverrides) {
  ParamValues values;
  ToyParams p = ToyTable().Read(values);
  EXPECT_EQ(p.weight, 0.25);
  EXPECT_EQ(p.count, 2);
  values.Set("toy-weight", 0.5);
  values.Set("toy-count", 4);
  values.Set("someone-elses", 7);  // another method's: ignored here
  p = ToyTable().Read(values);
  EXPECT_EQ(p.weight, 0.5);
  EXPECT_EQ(p.count, 4);
  EXPECT_EQ(p.length, 0);
  // An integer is a fine double.
  values.Set("toy-weight", 0);
  EXPECT_EQ(ErrorOf([&] { ToyTable().Read(values); }), "--toy-weight 0: must be in (0, 1)");
}

TEST(ParamTable, RefusesNamingTheOption) {
  ParamValues values;
  values.Set("toy-weight", 1.5);
  EXPECT_EQ(ErrorOf([&] { ToyTable().Read(values); }), "--toy-weight 1.5: must be in (0, 1)");
  values = {};
  values.Set("toy-count", 0);
  EXPECT_EQ(ErrorOf([&] { ToyTable().Read(values); }), "--toy-count 0: must be >= 1");
  values.Set("toy-count", 3);
  EXPECT_EQ(ErrorOf([&] { ToyTable().Read(values); }), "--toy-count 3: must be even");
  // The cross-check sees the run's facts; CheckValues runs the ranges only.
  values = {};
  values.Set("toy-length", int64_t{5});
  EXPECT_EQ(ErrorOf([&] { ToyTable().Read(values, {4}); }),
            "--toy-length 5: is longer than --iterations");
  EXPECT_EQ(ErrorOf([&] { ToyTable().Read(values, {5}); }), "");
  values.Set("toy-count", 3);
  EXPECT_EQ(ErrorOf([&] { ToyTable().CheckValues(values); }), "");
  // Types: an integer member takes no fraction, a number takes no text.
  values = {};
  values.Set("toy-count", 2.5);
  EXPECT_EQ(ErrorOf([&] { ToyTable().Read(values); }), "--toy-count 2.5: must be an integer");
  values = {};
  values.Set("toy-weight", "half");
  EXPECT_EQ(ErrorOf([&] { ToyTable().Read(values); }), "--toy-weight half: must be a number");
  values = {};
  values.Set("toy-count", int64_t{1} << 40);
  EXPECT_NE(ErrorOf([&] { ToyTable().Read(values); }).find("--toy-count"), std::string::npos);
}

TEST(ParamTable, RangesDescribeThemselves) {
  EXPECT_TRUE(Range::Positive().Contains(1e-300));
  EXPECT_FALSE(Range::Positive().Contains(0));
  EXPECT_FALSE(Range::NonNegative().Contains(std::nan("")));
  EXPECT_TRUE(Range::Any().Contains(std::nan("")));
  EXPECT_TRUE(Range::OpenClosed(0, 1).Contains(1));
  EXPECT_FALSE(Range::Open(0, 1).Contains(1));
  EXPECT_EQ(Range::Positive().Describe(), "must be > 0");
  EXPECT_EQ(Range::NonNegative().Describe(), "must be >= 0");
  EXPECT_EQ(Range::OpenClosed(0, 1).Describe(), "must be in (0, 1]");
  EXPECT_TRUE(Range::ClosedOpen(0, 1).Contains(0));
  EXPECT_FALSE(Range::ClosedOpen(0, 1).Contains(1));
  EXPECT_EQ(Range::ClosedOpen(0, 1).Describe(), "must be in [0, 1)");
  EXPECT_EQ(Range::Any().Describe(), "");
}

// ---- The registries keep what the name comparisons they replaced said.

TEST(MethodRegistry, NamesDefaultStepsAndNeedsAreThoseOfBefore) {
  EXPECT_STREQ(algorithms::RoundAlgorithmNames(),
               "dgd, dpsgd, gradient-tracking, extra, optra, apm-c, network-dane, network-svrg, "
               "network-sarah, choco-sgd, local-sgd, mm-psgd, slowmo-dpsgd, diffusion");
  EXPECT_STREQ(algorithms::PairwiseAlgorithmNames(),
               "swarmsgd, slowmo-swarmsgd, acid, async-admm, asy-sonata, dadao, adfs, "
               "pairwise-diffusion");
  EXPECT_TRUE(algorithms::IsPairwiseAlgorithm("swarmsgd"));
  EXPECT_FALSE(algorithms::IsRoundAlgorithm("swarmsgd"));
  // Default steps over L = 2: 0.5/L, 0.1/L for SVRG/SARAH, 1/L for DANE and APM-C, and for
  // gradient tracking and CHOCO-SGD (bench/step_sweep.py's best fixed step, halved); none
  // for OPTRA and the diffusion.
  const std::pair<const char*, double> steps[] = {
      {"dgd", 0.25},      {"dpsgd", 0.25},        {"gradient-tracking", 0.5}, {"extra", 0.25},
      {"choco-sgd", 0.5}, {"network-svrg", 0.05}, {"network-sarah", 0.05},    {"network-dane", 0.5},
      {"apm-c", 0.5},     {"local-sgd", 0.25},    {"mm-psgd", 0.25},          {"slowmo-dpsgd", 0.25}};
  for (const auto& [name, step] : steps) {
    algorithms::RoundOptions o;
    o.algorithm = name;
    o.smoothness = 2.0;
    EXPECT_DOUBLE_EQ(algorithms::ResolveStep(o), step) << name;
  }
  for (const char* name : {"optra", "diffusion", "nonsense"}) {
    algorithms::RoundOptions o;
    o.algorithm = name;
    o.smoothness = 2.0;
    EXPECT_THROW(algorithms::ResolveStep(o), std::invalid_argument) << name;
  }
  std::set<std::string> needs_smoothness;
  for (const algorithms::RoundMethod* m : algorithms::RoundMethods()) {
    if (algorithms::NeedsSmoothness(m->name)) needs_smoothness.insert(m->name);
  }
  EXPECT_EQ(needs_smoothness, (std::set<std::string>{"optra", "apm-c", "network-dane"}));
}

// ---- The registered methods, through the run options.

// The method options as scripts, docs and examples/ pass them, with their defaults (an option
// lost or re-defaulted fails here).
struct Expected {
  const char* name;
  double default_value;
};
const Expected kMethodOptions[] = {
    {"optra-nu", 100},
    {"optra-inner", 4},
    {"horizon", 0},
    {"apmc-beta0", 1e4},
    {"apmc-inner-const", 0.2},
    {"dane-mu", -1},  // -1 = automatic (mu = 0 does not converge on logistic regression)
    {"mix-rounds", 1},
    {"inner-steps", 0},
    {"top-k", 0},
    {"choco-gamma", 0.5},
    {"vq-samples", 0},
    {"local-tau", 1},
    {"local-gossip", 1},
    {"local-exact", 0},
    {"local-adaptive", 0},
    {"slowmo-beta", 0},
    {"slowmo-alpha", 1},
    {"mm-window", 0},
    {"swarm-slowmo-tau", 8},
    {"swarm-slowmo-beta", 0},
    {"swarm-slowmo-alpha", 1},
    {"rho", 0.75},
    {"c", 0.9},
    {"acid-eta", -1},  // -1 = from the graph
    {"acid-beta-tilde", -1},
    {"admm-rho", 1},
    {"admm-newton-steps", 30},
    {"admm-tol", 1e-10},
    {"dadao-mu", -1},         // -1 = the problem's l2
    {"dadao-comm-rate", -1},  // -1 = from the graph
    {"dadao-max-skew", 0.5},
    {"decay", 0.75},
    {"mix", 0.5},
    {"exchange-prob", 1.0},
    {"tick-ms", 10.0},  // pairwise-diffusion in starlingd
    {"tick-fixed", 0},
    {"gossip-bits", 0},
    {"tail-average", 0},  // SwarmSGD: off
    {"merge-pace", 0},    // SwarmSGD daemons: off
};
// The string-valued ones, with their defaults.
const std::map<std::string, std::string> kStringMethodOptions = {
    {"gossip-quantizer", "differential"},
};

// Parses `args` as starling-sim would (command line, then --config), into a RunConfig.
node::RunConfig Parse(std::vector<std::string> args) {
  node::RunConfig config;
  po::options_description options("test");
  options.add_options()("config", po::value<std::string>(), "config file");
  node::AddRunOptions(&options, &config);
  args.insert(args.begin(), "test");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  node::ParseCommandLine(static_cast<int>(argv.size()), argv.data(), options);
  return config;
}

double NumberOf(const node::RunConfig& config, const std::string& name) {
  const algorithms::ParamValue* v = config.params.Find(name);
  if (v == nullptr) return std::nan("");
  if (const auto* i = std::get_if<int64_t>(v)) return static_cast<double>(*i);
  return std::get<double>(*v);
}

TEST(MethodOptions, EveryOptionKeepsItsNameAndDefault) {
  const node::RunConfig config = Parse({});
  for (const Expected& e : kMethodOptions) {
    EXPECT_EQ(NumberOf(config, e.name), e.default_value) << e.name;
  }
  for (const auto& [name, value] : kStringMethodOptions) {
    EXPECT_EQ(config.params.Get<std::string>(name), value) << name;
  }
  EXPECT_EQ(config.params.values().size(), std::size(kMethodOptions) + kStringMethodOptions.size());
}

TEST(MethodOptions, NamesAreDeclaredOnceAcrossMethods) {
  std::set<std::string> names;
  for (const algorithms::ParamSet* set : node::MethodParamSets()) {
    for (const auto& decl : set->decls()) EXPECT_TRUE(names.insert(decl.name).second) << decl.name;
  }
  // The Network-DANE family shares one table: --inner-steps is one option for three methods.
  EXPECT_EQ(node::MethodParamsOf("network-dane"), node::MethodParamsOf("network-svrg"));
  EXPECT_EQ(node::MethodParamsOf("network-dane"), node::MethodParamsOf("network-sarah"));
  // So does quantized gossip: --gossip-bits for DGD, D-PSGD, gradient tracking and EXTRA.
  EXPECT_EQ(node::MethodParamsOf("extra"), node::MethodParamsOf("dgd"));
  EXPECT_EQ(node::MethodParamsOf("extra"), node::MethodParamsOf("gradient-tracking"));
  ASSERT_NE(node::MethodParamsOf("swarmsgd"), nullptr);
  EXPECT_EQ(node::MethodParamsOf("swarmsgd")->decls().at(0).name, "tail-average");
}

// Another method's parameter set away from its default is named as ignored; the chosen
// method's own, and anyone's default, say nothing.
TEST(MethodOptions, AnotherMethodsParameterIsNamedAsIgnored) {
  auto ignored = [](std::vector<std::string> args) {
    const node::RunConfig config = Parse(args);
    return node::IgnoredMethodParams(config.algorithm, config.params);
  };
  const std::vector<std::string> optra =
      ignored({"--algorithm", "optra", "--gossip-bits", "4", "--optra-nu", "50"});
  ASSERT_EQ(optra.size(), 1u);
  EXPECT_EQ(optra[0].rfind("--gossip-bits 4: not read by --algorithm optra (a parameter of ", 0),
            0u)
      << optra[0];
  EXPECT_NE(optra[0].find("); ignored"), std::string::npos) << optra[0];
  EXPECT_TRUE(ignored({"--algorithm", "dgd", "--gossip-bits", "4"}).empty());
  EXPECT_TRUE(ignored({"--algorithm", "extra"}).empty());
  EXPECT_TRUE(ignored({"--algorithm", "no-such-method", "--top-k", "3"}).empty());
  // Two of them, whichever table each comes from (SwarmSGD's --tail-average among them).
  EXPECT_EQ(ignored({"--algorithm", "network-dane", "--tail-average", "0.25", "--top-k", "3"})
                .size(),
            2u);
}

TEST(MethodOptions, CommandLineAndConfigFileReachTheStore) {
  node::RunConfig config = Parse({"--top-k", "3", "--optra-nu", "50", "--horizon", "7"});
  EXPECT_EQ(config.params.Get<int>("top-k"), 3);
  EXPECT_EQ(config.params.Get<double>("optra-nu"), 50.0);
  EXPECT_EQ(config.params.Get<int64_t>("horizon"), 7);
  const fs::path ini = fs::temp_directory_path() / ("method-options-" + std::to_string(getpid()));
  std::ofstream(ini) << "# a run's file\nchoco-gamma = 0.3\nmix-rounds = 3\nrho = 0.5\n";
  config = Parse({"--config", ini.string(), "--mix-rounds", "2"});
  fs::remove(ini);
  EXPECT_EQ(config.params.Get<double>("choco-gamma"), 0.3);
  EXPECT_EQ(config.params.Get<double>("rho"), 0.5);
  EXPECT_EQ(config.params.Get<int>("mix-rounds"), 2);  // the command line wins
}

TEST(MethodOptions, APrefixIsAnUnknownOptionNamingTheCloseMatch) {
  // starling.Node(..., local_step=4) passes --local-step: it must not be taken as
  // --local-steps, but refused naming both.
  EXPECT_EQ(ErrorOf([] { Parse({"--local-step", "4"}); }),
            "--local-step: unknown option; did you mean --local-steps?");
  EXPECT_EQ(ErrorOf([] { Parse({"--iteration", "4"}); }),
            "--iteration: unknown option; did you mean --iterations?");
  EXPECT_EQ(ErrorOf([] { Parse({"--lcoal-steps", "4"}); }),
            "--lcoal-steps: unknown option; did you mean --local-steps?");
  EXPECT_EQ(ErrorOf([] { Parse({"--zzzzzzzzzzzzzz", "4"}); }),
            "--zzzzzzzzzzzzzz: unknown option (see --help)");
  // Whole names still parse.
  EXPECT_EQ(Parse({"--local-steps", "4"}).local_steps, 4);
}

TEST(MethodOptions, ValidationNamesTheOption) {
  auto error = [](std::vector<std::string> args) {
    args.insert(args.end(), {"--data", "unused.libsvm"});
    return ErrorOf([&] { node::ValidateRunConfig(Parse(args)); });
  };
  EXPECT_EQ(error({"--choco-gamma", "1.5"}), "--choco-gamma 1.5: must be in (0, 1]");
  EXPECT_EQ(error({"--mix-rounds", "0"}), "--mix-rounds 0: must be >= 1");
  EXPECT_EQ(error({"--apmc-beta0=-1"}), "--apmc-beta0 -1: must be > 0");
  // Another method's value out of its range is still a mistake.
  EXPECT_EQ(error({"--algorithm", "extra", "--rho", "1"}), "--rho 1: must be in (0, 1)");
  // The chosen method's cross-checks.
  EXPECT_EQ(error({"--algorithm", "optra", "--optra-inner", "3"}), "--optra-inner 3: must be even");
  EXPECT_EQ(error({"--algorithm", "optra", "--iterations", "10", "--horizon", "5"}),
            "--horizon 5: is shorter than --iterations 10");
  EXPECT_EQ(error({"--algorithm", "optra", "--iterations", "10", "--horizon", "10"}), "");
  // ...apply to that method only.
  EXPECT_EQ(error({"--algorithm", "extra", "--optra-inner", "3"}), "");
  // Boost refuses a fraction for an integer option, naming it.
  EXPECT_NE(ErrorOf([] { Parse({"--top-k", "2.5"}); }).find("top-k"), std::string::npos);
  // A name no method declares (set by hand in code).
  node::RunConfig config = Parse({"--data", "unused.libsvm"});
  config.params.Set("optra-nuu", 1.0);
  EXPECT_EQ(ErrorOf([&] { node::ValidateRunConfig(config); }),
            "--optra-nuu 1: not a parameter of any method");
}

// ---- Values reaching the algorithm, through the whole path a run takes.

class MethodRun : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = (fs::temp_directory_path() / ("method-run-" + std::to_string(getpid()) + ".libsvm"))
                .string();
    std::ofstream out(data_);
    for (int i = 0; i < 16; ++i) {
      out << (i % 2 ? "+1" : "-1") << " 1:" << 0.1 * i << " 2:" << 1.0 - 0.05 * i << " 3:1\n";
    }
  }
  void TearDown() override { fs::remove(data_); }

  // Runs `args` on 4 nodes in a ring for `iterations` and returns node 0's counters; *bits gets
  // its OutgoingBits.
  algorithms::AlgorithmCounters Run(std::vector<std::string> args, int64_t iterations,
                                    int64_t* bits = nullptr) {
    args.insert(args.end(), {"--data", data_, "--format", "libsvm", "--nodes", "4", "--topology",
                             "ring", "--iterations", std::to_string(iterations)});
    const node::RunConfig config = Parse(args);
    node::ValidateRunConfig(config);
    const node::RunSetup setup = node::BuildRunSetup(config);
    node::RoundSimulator sim(setup.nodes, node::RoundOptionsFor(config, setup));
    sim.RunUntilIteration(iterations);
    if (bits != nullptr) *bits = sim.node(0).OutgoingBits();
    return sim.node(0).counters();
  }

  std::string data_;
};

TEST_F(MethodRun, DefaultsAndGivenValuesReachTheAlgorithm) {
  // Network-DANE: n_mix exchanges per iteration, 1 by default (--mix-rounds 1).
  EXPECT_EQ(Run({"--algorithm", "network-dane"}, 5).comm_rounds, 5);
  EXPECT_EQ(Run({"--algorithm", "network-dane", "--mix-rounds", "3"}, 5).comm_rounds, 15);
  // OPTRA: 2K = 4 Chebyshev exchanges per iteration by default, after K = 2 setup exchanges.
  EXPECT_EQ(Run({"--algorithm", "optra"}, 3).vectors_sent, 2 + 3 * 4);
  EXPECT_EQ(Run({"--algorithm", "optra", "--optra-inner", "6"}, 3).vectors_sent, 3 + 3 * 6);
  // CHOCO-SGD: dense by default (3 doubles), k (index, value) pairs with --top-k.
  int64_t bits = 0;
  Run({"--algorithm", "choco-sgd", "--step", "0.1"}, 2, &bits);
  EXPECT_EQ(bits, 3 * 64);
  Run({"--algorithm", "choco-sgd", "--step", "0.1", "--top-k", "1"}, 2, &bits);
  EXPECT_EQ(bits, 96);
  // vqSGD with S = 2 on d = 3: a float64 norm and 2 codes of 1 + ceil(log2 3) = 3 bits.
  Run({"--algorithm", "choco-sgd", "--step", "0.1", "--vq-samples", "2"}, 2, &bits);
  EXPECT_EQ(bits, 64 + 2 * 3);
}

TEST_F(MethodRun, ABadValueSetByHandIsRefusedByTheFactory) {
  const node::RunConfig config = Parse({"--algorithm", "choco-sgd", "--step", "0.1", "--data",
                                        data_, "--format", "libsvm", "--nodes", "4"});
  const node::RunSetup setup = node::BuildRunSetup(config);
  algorithms::RoundOptions options = node::RoundOptionsFor(config, setup);
  options.params.Set("choco-gamma", 2.0);
  EXPECT_EQ(ErrorOf([&] { algorithms::MakeRoundAlgorithm(options, setup.nodes[0]); }),
            "--choco-gamma 2: must be in (0, 1]");
}

// ---- The run id: the common keys and the chosen method's own parameters only.

TEST(MethodRunId, AnotherMethodsParameterDoesNotChangeTheRunId) {
  const topology::Graph ring = topology::Ring(4);
  auto id = [&](std::vector<std::string> args) { return node::RunIdFor(Parse(args), ring); };
  const uint64_t extra = id({"--algorithm", "extra"});
  EXPECT_EQ(id({"--algorithm", "extra", "--top-k", "5", "--optra-nu", "3", "--rho", "0.5"}), extra);
  EXPECT_NE(id({"--algorithm", "extra", "--step", "0.5"}), extra);
  EXPECT_NE(id({"--algorithm", "extra", "--gossip-bits", "4"}), extra);
  // Added after runs of these methods existed: at their defaults they stay out of the run's
  // canonical text, so the ids (and checkpoints) of those runs are what they were.
  for (const char* method : {"dgd", "dpsgd", "gradient-tracking", "extra", "local-sgd"}) {
    const std::string text = node::CanonicalRunText(Parse({"--algorithm", method}), ring);
    EXPECT_EQ(text.find("gossip-"), std::string::npos) << method << ":\n" << text;
    EXPECT_EQ(text.find("local-exact"), std::string::npos) << method << ":\n" << text;
  }
  EXPECT_NE(node::CanonicalRunText(Parse({"--algorithm", "extra", "--gossip-bits", "2"}), ring)
                .find("gossip-bits=2"),
            std::string::npos);
  EXPECT_NE(id({"--algorithm", "extra", "--gossip-bits", "4", "--gossip-quantizer", "naive"}),
            id({"--algorithm", "extra", "--gossip-bits", "4"}));
  const uint64_t choco = id({"--algorithm", "choco-sgd"});
  EXPECT_NE(id({"--algorithm", "choco-sgd", "--top-k", "5"}), choco);
  EXPECT_NE(id({"--algorithm", "choco-sgd", "--choco-gamma", "0.25"}), choco);
  EXPECT_EQ(id({"--algorithm", "choco-sgd", "--optra-nu", "3"}), choco);
  const uint64_t optra = id({"--algorithm", "optra"});
  EXPECT_EQ(id({"--algorithm", "optra", "--gossip-bits", "4"}), optra);
  EXPECT_NE(id({"--algorithm", "optra", "--optra-nu", "50"}), optra);
  EXPECT_NE(id({"--algorithm", "optra", "--horizon", "5000"}), optra);
  // A family's shared parameter changes each of its members' runs.
  EXPECT_NE(id({"--algorithm", "network-svrg", "--inner-steps", "9"}),
            id({"--algorithm", "network-svrg"}));
  // A value as given or left at its default is the same run.
  EXPECT_EQ(id({"--algorithm", "optra", "--optra-nu", "100"}), optra);
  EXPECT_EQ(node::RunIdFor(node::RunConfig{}, ring), extra);
  // A value set by hand (a test, a front end) as an integer for a double parameter is the same
  // run as the command line's double.
  node::RunConfig by_hand;
  by_hand.algorithm = "optra";
  by_hand.params.Set("optra-nu", 50);
  EXPECT_EQ(node::RunIdFor(by_hand, ring), id({"--algorithm", "optra", "--optra-nu", "50"}));
}

TEST(MethodRunId, CanonicalTextHoldsTheChosenMethodsValuesExactly) {
  node::RunConfig config = Parse({"--algorithm", "optra", "--optra-nu", "0.1"});
  const std::string text = node::CanonicalRunText(config, topology::Ring(3));
  EXPECT_NE(text.find("\noptra-nu=0x1.999999999999ap-4\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\noptra-inner=4\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nhorizon=0\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("top-k"), std::string::npos) << text;
  EXPECT_EQ(text.find("rho"), std::string::npos) << text;
}

// ---- --help of the binaries lists every declared option, with its help text.

std::string HelpOf(const std::string& binary) {
  const std::string log =
      (fs::temp_directory_path() / ("method-help-" + std::to_string(getpid()) + ".txt")).string();
  testing::Subprocess p({binary, "--help"}, log);
  EXPECT_EQ(p.Wait(std::chrono::seconds(30)), 0) << binary;
  std::string text = testing::ReadFile(log);
  fs::remove(log);
  // Boost wraps help text; compare words with the wrapping undone.
  std::istringstream in(text);
  std::string word, words;
  while (in >> word) words += word + " ";
  return words;
}

// A bad value in a config file stops the binary with one line naming the option, exit code 2.
TEST(MethodOptions, TheBinaryRefusesABadConfigFileValueNamingTheOption) {
  const std::string base =
      (fs::temp_directory_path() / ("method-config-" + std::to_string(getpid()))).string();
  std::ofstream(base + ".ini") << "algorithm = optra\noptra-inner = 5\n";
  testing::Subprocess p({std::string(STARLING_BINARY_DIR) + "/node/starling-sim", "--config",
                         base + ".ini", "--data", base + ".libsvm", "--quiet"},
                        base + ".log");
  EXPECT_EQ(p.Wait(std::chrono::seconds(30)), 2);
  const std::string out = testing::ReadFile(base + ".log");
  fs::remove(base + ".ini");
  fs::remove(base + ".log");
  EXPECT_EQ(out, "starling-sim: error: --optra-inner 5: must be even\n");
  // A name no method declares is refused naming the file it stands in.
  std::ofstream(base + ".ini") << "algorithm = optra\noptra-nuu = 5\n";
  testing::Subprocess q({std::string(STARLING_BINARY_DIR) + "/node/starling-sim", "--config",
                         base + ".ini", "--data", base + ".libsvm", "--quiet"},
                        base + ".log");
  EXPECT_EQ(q.Wait(std::chrono::seconds(30)), 2);
  const std::string unknown = testing::ReadFile(base + ".log");
  fs::remove(base + ".ini");
  fs::remove(base + ".log");
  EXPECT_EQ(unknown, "starling-sim: error: " + base + ".ini: unrecognised option 'optra-nuu'\n");
}

TEST(MethodOptions, HelpListsEveryDeclaredOption) {
  for (const char* binary : {"/node/starling-sim", "/node/starlingd"}) {
    const std::string help = HelpOf(std::string(STARLING_BINARY_DIR) + binary);
    for (const Expected& e : kMethodOptions) {
      EXPECT_NE(help.find("--" + std::string(e.name) + " arg"), std::string::npos)
          << binary << " --" << e.name;
    }
    for (const algorithms::ParamSet* set : node::MethodParamSets()) {
      EXPECT_NE(help.find(set->title()), std::string::npos) << binary << " " << set->title();
      for (const auto& decl : set->decls()) {
        EXPECT_NE(help.find("--" + decl.name + " arg"), std::string::npos) << binary << decl.name;
        // The first words of the help text (all of it may wrap inside a word, e.g. at "(0, 1]").
        std::istringstream in(decl.help);
        std::string first, second, third;
        in >> first >> second >> third;
        EXPECT_NE(help.find(first + " " + second + " " + third), std::string::npos)
            << binary << " " << decl.help;
      }
    }
  }
}

}  // namespace
}  // namespace starling
