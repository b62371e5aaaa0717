// The snapshot pool's sizing: SwarmSGD's kept offers and the replies still being
// sent come from pooled vectors, so that an exchange of a large model allocates nothing of the
// model's size once the pool holds as many vectors as are ever out at once.
#include "algorithms/pairwise/snapshot_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <vector>

#include "algorithms/pairwise/pairwise_algorithm.h"
#include "algorithms/pairwise/swarm_sgd.h"
#include "tests/fake_quadratic.h"

namespace starling {
namespace {

using algorithms::kKeptOfferSnapshots;
using algorithms::kPooledSnapshots;
using algorithms::kRepliesInFlight;
using algorithms::SnapshotPool;

// Cycles through `rounds` Takes with `out_at_once` vectors out at each (the one taken and the
// last out_at_once - 1 before it, held as kept offers and messages in flight are), each filled
// to `dim` values; returns the pool's allocations.
uint64_t AllocationsWhileHolding(SnapshotPool* pool, size_t out_at_once, int rounds, int dim) {
  std::deque<std::shared_ptr<const Vec>> out;
  for (int r = 0; r < rounds; ++r) {
    if (out.size() == out_at_once) out.pop_front();
    std::shared_ptr<Vec> v = pool->Take();
    v->setConstant(dim, r);
    out.push_back(std::move(v));
  }
  return pool->allocations();
}

TEST(SnapshotPoolSize, CoversEveryOfferKeptAndTheRepliesInFlight) {
  EXPECT_EQ(kPooledSnapshots, kKeptOfferSnapshots + 2 + kRepliesInFlight);
  SnapshotPool pool;
  // As many out at once as the default covers: each allocated once, then reused.
  EXPECT_EQ(AllocationsWhileHolding(&pool, kPooledSnapshots, 500, 16), kPooledSnapshots);
  EXPECT_EQ(pool.pooled(), kPooledSnapshots);
  // A pool of 4 allocates on most Takes under the same load.
  SnapshotPool small(4);
  EXPECT_GT(AllocationsWhileHolding(&small, kPooledSnapshots, 500, 16), 300u);
}

algorithms::NodeSetup SetupOf(int id, const algorithms::Problem* problem, int dim) {
  algorithms::NodeSetup s;
  s.id = id;
  s.neighbors = {1 - id};
  s.problem = problem;
  std::mt19937_64 rng(10 + id);
  std::uniform_real_distribution<double> u(-1, 1);
  s.x0.resize(dim);
  for (int k = 0; k < dim; ++k) s.x0[k] = u(rng);
  s.seed = 5 + id;
  return s;
}

// The most a SwarmSGD daemon has out at once: every offer times out (the outstanding one and
// kKeptOfferSnapshots abandoned ones are kept for late replies, which come for some), while the
// node serves a request per step and the transport is still sending its last kRepliesInFlight
// replies. After the pool has filled, exchanges allocate no vector at all; the merges still
// happen (the model changes, and the late replies' offers are found).
TEST(SnapshotPoolSize, SwarmSgdKeptOffersAndRepliesNeedNoFreshVectors) {
  constexpr int kDim = 256;
  testing::FakeQuadratic problem(Vec::Constant(kDim, 1.0), Vec::Constant(kDim, 0.5));
  algorithms::SwarmSgd node(SetupOf(0, &problem, kDim), algorithms::ScheduledStep{0.1, {}},
                            /*batch_size=*/1, /*local_steps=*/1);
  const Vec partner = Vec::Constant(kDim, 0.25);
  std::deque<std::shared_ptr<const Vec>> replies_in_flight;
  std::shared_ptr<const Vec> offer_in_flight;
  int late_merged = 0;
  uint64_t allocations_after_warmup = 0;
  constexpr uint64_t kCycles = 300;
  for (uint64_t seq = 1; seq <= kCycles; ++seq) {
    node.LocalStep();
    offer_in_flight = node.BeginExchange(1, seq);  // the transport holds it until sent...
    node.AbortExchange(/*may_still_reply=*/true);  // ...and it times out: kept
    if (seq % 3 == 0 && seq > kKeptOfferSnapshots) {
      // A late reply to the oldest offer still kept (the outstanding one plus 8 before it).
      size_t first_bad = 0;
      ASSERT_EQ(node.CompleteExchangeChecked(seq - kKeptOfferSnapshots, partner, &first_bad),
                algorithms::PairwiseAlgorithm::MergeResult::kMerged)
          << "seq " << seq;
      ++late_merged;
    }
    size_t first_bad = 0;
    std::shared_ptr<const Vec> reply = node.RespondChecked(1, partner, &first_bad);
    ASSERT_NE(reply, nullptr);
    replies_in_flight.push_back(reply);
    if (replies_in_flight.size() > kRepliesInFlight) replies_in_flight.pop_front();
    if (seq == 50) allocations_after_warmup = node.snapshot_pool().allocations();
  }
  EXPECT_GT(late_merged, 80);
  EXPECT_LE(allocations_after_warmup, kPooledSnapshots);
  EXPECT_EQ(node.snapshot_pool().allocations(), allocations_after_warmup)
      << "exchanges after the warm-up allocated vectors of the model's size";
  EXPECT_EQ(node.counters().exchanges_served, static_cast<int64_t>(kCycles));
}

}  // namespace
}  // namespace starling
