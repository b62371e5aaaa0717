// DADAO (algorithms/pairwise/dadao.h) driven as starlingd drives it, in simulated wall time:
// each node runs the daemon's loop (a local step when the algorithm does not say wait, the
// exchange driver's offers, replies, BUSY, time-outs), with its own compute speed, message
// latency, stalls (a loaded machine), loss and duplication; the real ExchangeDriver.
#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "algorithms/pairwise/dadao.h"
#include "algorithms/problems/reference_solver.h"
#include "node/config/run_setup.h"
#include "node/drivers/exchange_driver.h"
#include "tests/pairwise_daemon_fixture.h"
#include "tests/test_data.h"

namespace starling {
namespace {

using algorithms::Dadao;

double Env(const char* name, double def) {
  const char* v = std::getenv(name);
  return v ? std::atof(v) : def;
}

struct WallModel {
  double compute_us = 20;    // mean time of a gradient event
  double latency_us = 150;   // mean one-way latency (exponential, plus 30 us)
  double stall_prob = 0;     // per local step: the process is descheduled
  double stall_us = 0;       // mean stall (exponential)
  std::vector<double> slow;  // per-node compute multiplier (empty: all 1)
  double loss = 0, dup = 0;
  int64_t timeout_ms = 200;
  int64_t budget = 2500;
  int64_t window = 62;   // a progress window of budget/40 per edge
  double max_skew = -1;  // -1: the algorithm's default
  uint64_t seed = 1;
};

struct Outcome {
  double worst = 0;         // max_i ||x_i - x*|| / ||x*||
  double worst_first = -1;  // the same when the first node finished
  double max_skew = 0;      // largest difference of two nodes' clocks seen
  double wall_s = 0;
  int64_t steps = 0;
  double gap = 0;  // (F(average) - F(x*)) / F(x*) of the global problem at the end
};

// The daemons' instance (dadao_daemon_test): least squares, 300 rows of 5 features, l2 = 0.1
// (L2 in the environment), 5 nodes on a ring.
node::RunConfig LeastSquares(const std::string& data, int64_t budget) {
  node::RunConfig config;
  config.algorithm = "dadao";
  config.problem = "least-squares";
  config.l2 = Env("L2", 0.1);
  config.data = data;
  config.format = "libsvm";
  config.nodes = 5;
  config.topology = "ring";
  config.iterations = budget;
  config.seed = 3;
  return config;
}

class WallSim {
 public:
  WallSim(const node::RunConfig& config, const WallModel& m) : m_(m), rng_(m.seed) {
    setup_ = node::BuildRunSetup(config);
    const auto options = node::PairwiseOptionsFor(config, setup_);
    for (int i = 0; i < config.nodes; ++i) {
      Node n;
      n.alg = algorithms::MakePairwiseAlgorithm(options, setup_.nodes[i]);
      Dadao& d = dynamic_cast<Dadao&>(*n.alg);
      if (m.max_skew >= 0) d.SetMaxSkew(m.max_skew);
      node::ExchangeTiming timing;
      timing.reply_timeout_ms = m.timeout_ms;
      timing.backoff_min_ms = static_cast<int64_t>(Env("BACKOFF_MIN", timing.backoff_min_ms));
      timing.backoff_max_ms = static_cast<int64_t>(Env("BACKOFF_MAX", timing.backoff_max_ms));
      n.driver = std::make_unique<node::ExchangeDriver>(
          n.alg.get(), i, setup_.nodes[i].neighbors, setup_.nodes[i].seed ^ 0x5eed5eedULL, timing);
      nodes_.push_back(std::move(n));
    }
  }
  WallSim(const std::string& data, const WallModel& m) : WallSim(LeastSquares(data, m.budget), m) {}
  const node::RunSetup& setup() const { return setup_; }

  Outcome Run(const Vec& x_star) {
    Outcome o;
    double t = 0;
    while (true) {
      int i = 0;
      for (int k = 1; k < static_cast<int>(nodes_.size()); ++k) {
        if (nodes_[k].next_turn < nodes_[i].next_turn) i = k;
      }
      t = nodes_[i].next_turn;
      Turn(i, t);
      double lo = 1e300, hi = -1e300;
      for (auto& n : nodes_) {
        const double c = dynamic_cast<Dadao&>(*n.alg).now();
        lo = std::min(lo, c), hi = std::max(hi, c);
      }
      if (hi - lo > 2 && o.max_skew <= 2 && std::getenv("DEBUG")) {
        std::printf("t=%.0f turn of %d:", t, i);
        for (auto& n : nodes_) {
          const Dadao& d = dynamic_cast<Dadao&>(*n.alg);
          std::printf(" [now %.2f next %.2f bound %.2f steps %lld]", d.now(), d.NextEventTime(),
                      d.Bound(), (long long)d.counters().local_steps);
        }
        std::printf("\n");
      }
      o.max_skew = std::max(o.max_skew, hi - lo);
      if (trace_ > 0 && t >= next_trace_) {
        next_trace_ = t + trace_;
        Vec avg = Vec::Zero(x_star.size());
        double worst = 0;
        for (auto& n : nodes_) {
          avg += n.alg->Model() / static_cast<double>(nodes_.size());
          worst = std::max(worst, (n.alg->Model() - x_star).norm() / x_star.norm());
        }
        const double f_star = setup_.global->Value(x_star);
        std::printf("  t %.2f s clocks %.1f..%.1f worst %.3g gap %.3g\n", t * 1e-6, lo, hi, worst,
                    (setup_.global->Value(avg) - f_star) / std::abs(f_star));
      }
      bool all = true, any = false;
      for (auto& n : nodes_) all = all && n.finished, any = any || n.finished;
      if (any && o.worst_first < 0) {
        o.worst_first = 0;
        for (auto& n : nodes_) {
          o.worst_first = std::max(o.worst_first, (n.alg->Model() - x_star).norm() / x_star.norm());
        }
      }
      if (all || nodes_[i].alg->Model().norm() > 1e8 || t > 600e6) break;
    }
    o.wall_s = t * 1e-6;
    if (std::getenv("STATS")) {
      for (auto& n : nodes_) {
        const Dadao& d = dynamic_cast<Dadao&>(*n.alg);
        const auto c = d.counters();
        std::printf("  r %.2f gossips %lld (%.2f per unit, %lld dropped, %d owed) ", d.comm_rate(),
                    (long long)d.gossips(), d.gossips() / d.now(), (long long)d.gossips_dropped(),
                    d.owed());
        std::printf(
            "  clock %.1f steps %lld initiated %lld (pings %lld) served %lld aborted %lld "
            "busy %lld timeouts %lld\n",
            d.now(), (long long)c.local_steps, (long long)c.exchanges_initiated,
            (long long)d.pings(), (long long)c.exchanges_served, (long long)c.exchanges_aborted,
            (long long)n.driver->busy_received(), (long long)n.driver->timeouts());
      }
    }
    Vec avg = Vec::Zero(x_star.size());
    for (auto& n : nodes_) {
      o.worst = std::max(o.worst, (n.alg->Model() - x_star).norm() / x_star.norm());
      o.steps += n.alg->counters().local_steps;
      avg += n.alg->Model() / static_cast<double>(nodes_.size());
    }
    const double f_star = setup_.global->Value(x_star);
    o.gap = (setup_.global->Value(avg) - f_star) / std::abs(f_star);
    return o;
  }

 private:
  struct Msg {
    int from;
    node::ExchangeMessage::Kind kind;
    uint64_t seq;
    Vec payload;
  };
  struct Node {
    std::unique_ptr<algorithms::PairwiseAlgorithm> alg;
    std::unique_ptr<node::ExchangeDriver> driver;
    std::multimap<double, Msg> inbox;
    double next_turn = 0, busy_until = 0, next_offer = 0, next_readmit = 0;
    bool finished = false;
  };
  double U() { return std::uniform_real_distribution<double>(0, 1)(rng_); }
  double Exp(double mean) { return -mean * std::log1p(-U()); }

  void Send(int from, const node::ExchangeMessage& m, double t) {
    const int copies = U() < m_.dup ? 2 : 1;
    for (int c = 0; c < copies; ++c) {
      if (U() < m_.loss) continue;
      const double at = t + 30 + Exp(m_.latency_us);
      Node& d = nodes_[m.peer];
      d.inbox.emplace(at, Msg{from, m.kind, m.seq, m.payload ? *m.payload : Vec()});
      const double wake = std::max(at, d.busy_until);
      if (wake < d.next_turn) d.next_turn = wake;
    }
  }

  void Turn(int i, double t) {
    Node& n = nodes_[i];
    const int64_t ms = static_cast<int64_t>(t / 1000);
    while (!n.inbox.empty() && n.inbox.begin()->first <= t) {
      const Msg msg = n.inbox.begin()->second;
      n.inbox.erase(n.inbox.begin());
      if (msg.kind == node::ExchangeMessage::Kind::kRequest) {
        if (!n.driver->DuplicateRequest(msg.from, msg.seq)) {
          Send(i, n.driver->OnRequest(msg.from, msg.seq, msg.payload, ms), t);
        }
      } else if (msg.kind == node::ExchangeMessage::Kind::kReply) {
        n.driver->OnReply(msg.from, msg.seq, msg.payload);
      } else {
        n.driver->OnBusy(msg.from, msg.seq, ms);
      }
    }
    // The daemon re-admits live neighbours the driver excluded after time-outs (every 0.5 s).
    if (t >= n.next_readmit) {
      for (int j : setup_.nodes[i].neighbors) n.driver->SetAvailable(j, true);
      n.next_readmit = t + 500000;
    }
    const double inbox_next = n.inbox.empty() ? 1e300 : n.inbox.begin()->first;
    if (n.finished) {
      if (t >= n.next_offer) {
        if (auto m = n.driver->Tick(ms)) Send(i, *m, t);
        n.next_offer = t + 1000;
      }
      n.next_turn = std::min(n.next_offer, inbox_next);
      return;
    }
    const int64_t steps = n.alg->counters().local_steps;
    bool held = false;
    for (int j : setup_.nodes[i].neighbors) {
      const Node& nb = nodes_[j];
      if (!nb.finished && steps > nb.alg->counters().local_steps + m_.window) held = true;
    }
    const bool wait = n.alg->ShouldWait() || held;
    if (!wait) {
      n.alg->LocalStep();
      double dt = Exp(m_.compute_us) * (m_.slow.empty() ? 1.0 : m_.slow[i]);
      if (U() < m_.stall_prob) dt += Exp(m_.stall_us);
      const double after = t + dt;
      n.busy_until = after;
      if (n.alg->counters().local_steps >= m_.budget) {
        n.finished = true;
        n.alg->EndLocalSteps();
        n.next_offer = after;
      } else if (auto m = n.driver->Tick(static_cast<int64_t>(after / 1000))) {
        Send(i, *m, after);
      }
      n.next_turn = after;
      return;
    }
    if (auto m = n.driver->Tick(ms)) Send(i, *m, t);
    n.next_turn = std::min(t + 1000, std::max(inbox_next, t));
  }

  WallModel m_;
  double trace_ = Env("TRACE_US", 0), next_trace_ = 0;  // a progress line every TRACE_US
  std::mt19937_64 rng_;
  node::RunSetup setup_;
  std::vector<Node> nodes_;
};

class DadaoWall : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(std::filesystem::temp_directory_path() / "dadao_async_test");
    std::filesystem::create_directories(*dir_);
    const auto data = testing::WriteLeastSquares(*dir_ + "/ls.txt", 300, 5, 8);
    x_star_ = new Vec(testing::NormalEquations(data, Env("L2", 0.1)));
  }
  static std::string* dir_;
  static Vec* x_star_;
};
std::string* DadaoWall::dir_ = nullptr;
Vec* DadaoWall::x_star_ = nullptr;

// Exploration (not a check): one configuration from the environment, printed. E.g.
// SKEW=0.5 L2=0.1 BUDGET=2000 LOSS=0.03 STALLP=0.01 STATS=1 dadao_async_test
// --gtest_filter=*Explore*
TEST_F(DadaoWall, Explore) {
  if (!std::getenv("SKEW")) GTEST_SKIP() << "set SKEW (and the others) to run it";
  WallModel m;
  m.max_skew = Env("SKEW", 0);
  m.budget = static_cast<int64_t>(Env("BUDGET", 2500));
  m.window = static_cast<int64_t>(Env("WINDOW", m.budget / 40));
  m.latency_us = Env("LAT", 150);
  m.compute_us = Env("COMP", 20);
  m.stall_prob = Env("STALLP", 0);
  m.stall_us = Env("STALL", 5000);
  m.loss = Env("LOSS", 0);
  m.dup = Env("DUP", 0);
  m.timeout_ms = static_cast<int64_t>(Env("TIMEOUT_MS", 200));
  // A9A=1: a9a logistic (lambda 1e-2) on NODES nodes on a ring (TOPOLOGY=er:0.3 for ER),
  // against the reference solver's optimum, as bench/run.sh stragglers runs it.
  node::RunConfig config = LeastSquares(*dir_ + "/ls.txt", m.budget);
  Vec x_star = *x_star_;
  if (Env("A9A", 0) > 0) {
    STARLING_REQUIRE_FILE(testing::SharedData("a9a"));
    config.problem = "logistic";
    config.data = testing::SharedData("a9a");
    config.features = 123;
    config.l2 = 1e-2;
    config.nodes = static_cast<int>(Env("NODES", 16));
    if (const char* t = std::getenv("TOPOLOGY")) config.topology = t;
    config.seed = 1;
    x_star = algorithms::SolveReference(*node::BuildRunSetup(config).global).x;
  }
  if (Env("SLOW", 0) > 0) {
    m.slow.assign(config.nodes, 1.0);
    m.slow[static_cast<size_t>(Env("SLOW_ID", 2))] = Env("SLOW", 1);
  }
  for (uint64_t seed = 1; seed <= Env("SEEDS", 2); ++seed) {
    m.seed = seed;
    WallSim sim(config, m);
    const Outcome o = sim.Run(x_star);
    std::printf(
        "skew %.2f seed %d: at first end %.3g, worst %.3g, gap %.3g, max clock skew %.1f, "
        "%.2f s, %lld steps\n",
        m.max_skew, (int)seed, o.worst_first, o.worst, o.gap, o.max_skew, o.wall_s,
        (long long)o.steps);
  }
}

// The cause of the daemons' divergence, isolated: the same loop without the skew bound (clocks
// only pulled forward by the messages, the pulled node taking its overdue gradient events)
// diverges within a few hundred steps per node; with the bound (0.5) the run converges, also
// with 3% loss, 10% duplicates, stalls of 5 ms on 1% of the steps and one node 3x slower.
TEST_F(DadaoWall, DaemonLoopConvergesOnlyWithTheSkewBound) {
  if (Env("L2", 0.1) != 0.1) GTEST_SKIP() << "the checks are for l2 = 0.1";
  WallModel m;
  m.budget = 1500;
  m.window = m.budget / 40;
  m.max_skew = 0;
  const Outcome unbounded = WallSim(*dir_ + "/ls.txt", m).Run(*x_star_);
  std::printf("no skew bound: worst %.3g after %lld steps\n", unbounded.worst,
              (long long)unbounded.steps);
  EXPECT_GT(unbounded.worst, 1e3);  // diverged (stopped at |x| > 1e8)
  EXPECT_LT(unbounded.steps, 5 * 1000);
  m.max_skew = 0.5;
  m.loss = 0.03, m.dup = 0.1;
  m.stall_prob = 0.01, m.stall_us = 5000;
  m.slow = {1, 1, 3, 1, 1};
  const Outcome bounded = WallSim(*dir_ + "/ls.txt", m).Run(*x_star_);
  std::printf("skew bound 0.5, loss, stalls, a slow node: worst %.3g after %lld steps, %.1f s\n",
              bounded.worst, (long long)bounded.steps, bounded.wall_s);
  EXPECT_GE(bounded.steps, 5 * m.budget);
  EXPECT_LT(bounded.worst, 1e-2);
}

}  // namespace
}  // namespace starling
