// CatchUpCharge (node/daemon/catch_up_charge.h): what a handler call that took local steps owes
// (n x delay + (factor - 1) x (measured + n x delay), the expected values written out here),
// that outgoing messages wait until it is paid and then leave in order, and that it does nothing
// without --compute-delay-ms and --slow-node. Its effect on real DADAO daemons is in
// dadao_daemon_test (DadaoStraggler).
#include "node/daemon/catch_up_charge.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/pairwise/pairwise_algorithm.h"
#include "tests/always_offers.h"

namespace starling::node {
namespace {

using namespace std::chrono_literals;

ExchangeMessage Reply(int peer, uint64_t seq) {
  return {ExchangeMessage::Kind::kReply, peer, seq, nullptr};
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

TEST(CatchUpCharge, InactiveWithoutDelayOrFactor) {
  CatchUpCharge charge(0.0, 1.0);
  EXPECT_FALSE(charge.active());
  const Clock::time_point t0 = Clock::now();
  charge.HandlerBegins(5, t0);
  EXPECT_FALSE(charge.Holds(9));
  charge.HandlerEnds(9, t0 + 2ms);
  EXPECT_FALSE(charge.owes());
  int served = 0;
  EXPECT_EQ(charge.Pay([&](Clock::time_point) { ++served; }, [](const ExchangeMessage&) {},
                       [] { return false; }),
            0.0);
  EXPECT_EQ(served, 0);
}

TEST(CatchUpCharge, OwesTheStepsOfAHandlerCall) {
  CatchUpCharge charge(3.0, 4.0);
  ASSERT_TRUE(charge.active());
  const Clock::time_point t0 = Clock::now();
  // No step taken: nothing owed, nothing held.
  charge.HandlerBegins(10, t0);
  EXPECT_FALSE(charge.Holds(10));
  charge.HandlerEnds(10, t0 + 1ms);
  EXPECT_FALSE(charge.owes());
  // Two steps in a call of 1 ms: 2 x 3 + (4 - 1) x (1 + 2 x 3) = 27 ms.
  charge.HandlerBegins(10, t0);
  EXPECT_FALSE(charge.Holds(10));
  EXPECT_TRUE(charge.Holds(12));  // a reply sent after the steps, inside the call
  charge.HandlerEnds(12, t0 + 1ms);
  EXPECT_TRUE(charge.owes());
  EXPECT_NEAR(Ms(charge.owed()), 27.0, 1e-3);
  EXPECT_TRUE(charge.Holds(12));  // until paid
  EXPECT_EQ(charge.steps_charged(), 2);
  EXPECT_NEAR(charge.seconds_charged(), 0.027, 1e-6);
  // The delay alone (factor 1): n x delay.
  CatchUpCharge plain(2.5, 1.0);
  plain.HandlerBegins(0, t0);
  plain.HandlerEnds(3, t0 + 5ms);
  EXPECT_NEAR(Ms(plain.owed()), 7.5, 1e-3);
  // The factor alone (no delay): (factor - 1) x measured.
  CatchUpCharge slow(0.0, 3.0);
  slow.HandlerBegins(0, t0);
  slow.HandlerEnds(1, t0 + 2ms);
  EXPECT_NEAR(Ms(slow.owed()), 4.0, 1e-3);
}

TEST(CatchUpCharge, PaysServingThenSendsWhatWaitedInOrder) {
  CatchUpCharge charge(2.0, 1.0);
  const Clock::time_point t0 = Clock::now();
  charge.HandlerBegins(0, t0);
  charge.HandlerEnds(1, t0);  // owes 2 ms
  charge.Defer(Reply(3, 7));
  charge.Defer(Reply(1, 8));
  std::vector<double> serves;  // ms from the serve call to its `until`
  std::vector<uint64_t> sent;
  const double took = charge.Pay(
      [&](Clock::time_point until) {
        serves.push_back(Ms(until - Clock::now()));
        // The first serve's handler takes 2 more steps and answers: owed again, that reply
        // waits behind the others.
        if (serves.size() == 1) {
          const Clock::time_point t = Clock::now();
          charge.HandlerBegins(1, t);
          ASSERT_TRUE(charge.Holds(3));
          charge.Defer(Reply(2, 9));
          charge.HandlerEnds(3, t);
        }
      },
      [&](const ExchangeMessage& m) {
        EXPECT_FALSE(charge.Holds(3));  // while sending, nothing more waits
        sent.push_back(m.seq);
      },
      [] { return false; });
  ASSERT_EQ(serves.size(), 2u);
  EXPECT_NEAR(serves[0], 2.0, 0.5);
  EXPECT_NEAR(serves[1], 4.0, 0.5);
  EXPECT_EQ(sent, (std::vector<uint64_t>{7, 8, 9}));
  EXPECT_FALSE(charge.owes());
  EXPECT_GE(took, 0.0);
  EXPECT_EQ(charge.steps_charged(), 3);
  EXPECT_EQ(charge.messages_deferred(), 3);
}

TEST(CatchUpCharge, StoppedPaysNothingButSends) {
  CatchUpCharge charge(5.0, 2.0);
  const Clock::time_point t0 = Clock::now();
  charge.HandlerBegins(0, t0);
  charge.HandlerEnds(4, t0);
  charge.Defer(Reply(0, 1));
  int served = 0, sent = 0;
  charge.Pay([&](Clock::time_point) { ++served; }, [&](const ExchangeMessage&) { ++sent; },
             [] { return true; });
  EXPECT_EQ(served, 0);
  EXPECT_EQ(sent, 1);
  EXPECT_FALSE(charge.owes());
}

// One Pay serves at most max_serve (PairwiseNode passes the exchange time-out): the rest is paid
// on the next calls, and what waited leaves only once all is paid. Before the bound, a node
// pulled far forward served its whole debt in one call, its driver deadlines, peer checks and
// checkpoints waiting meanwhile.
TEST(CatchUpCharge, OnePayServesAtMostMaxServe) {
  CatchUpCharge charge(10.0, 1.0);
  const Clock::time_point t0 = Clock::now();
  charge.HandlerBegins(0, t0);
  charge.HandlerEnds(5, t0);  // owes 50 ms
  charge.Defer(Reply(2, 4));
  int serves = 0, sent = 0;
  const auto serve = [&](Clock::time_point until) {
    ++serves;
    std::this_thread::sleep_until(until);  // as the transport's serve: until `until`, or later
  };
  const auto send = [&](const ExchangeMessage&) { ++sent; };
  std::vector<double> owed_after;  // ms
  for (int call = 0; call < 10 && charge.owes(); ++call) {
    charge.Pay(
        serve, send, [] { return false; }, 10ms);
    owed_after.push_back(Ms(charge.owed()));
    EXPECT_EQ(serves, call + 1) << "one serve of at most 10 ms per call";
    EXPECT_EQ(sent, charge.owes() ? 0 : 1) << "the reply waits until all is paid";
  }
  EXPECT_EQ(owed_after, (std::vector<double>{40, 30, 20, 10, 0}));
  EXPECT_EQ(sent, 1);
}

// Always wants an exchange, to any neighbour.
using Offers = testing::AlwaysOffers;

// While the charge is owed the driver makes no offer: a request made then would wait (Holds)
// with its reply deadline already running, and could be abandoned before it was sent. Nor is a
// timed-out offer abandoned meanwhile; both happen on the first Tick after Pay.
TEST(CatchUpCharge, NoOfferWhileOwed) {
  Offers a;
  ExchangeTiming timing;
  timing.reply_timeout_ms = 10;
  timing.backoff_min_ms = 0;
  timing.backoff_max_ms = 0;
  ExchangeDriver driver(&a, 0, {1}, 1, timing);
  CatchUpCharge charge(2.0, 1.0);
  ASSERT_TRUE(charge.Tick(&driver, 0));  // nothing owed: the driver's Tick
  ASSERT_TRUE(driver.offer_outstanding());
  const Clock::time_point t0 = Clock::now();
  charge.HandlerBegins(0, t0);
  charge.HandlerEnds(1, t0);  // owes 2 ms
  EXPECT_FALSE(charge.Tick(&driver, 50));
  EXPECT_TRUE(driver.offer_outstanding()) << "past its deadline, but not abandoned while owed";
  EXPECT_EQ(driver.timeouts(), 0);
  charge.Pay([](Clock::time_point) {}, [](const ExchangeMessage&) {}, [] { return false; });
  ASSERT_FALSE(charge.owes());
  const auto offer = charge.Tick(&driver, 50);
  EXPECT_TRUE(offer);
  EXPECT_EQ(driver.timeouts(), 1);
  // Owed again: no new offer, although the algorithm wants one.
  ASSERT_TRUE(offer);
  ASSERT_TRUE(driver.OnBusy(1, offer->seq, 51));
  charge.HandlerBegins(0, t0);
  charge.HandlerEnds(1, t0);
  EXPECT_FALSE(charge.Tick(&driver, 60));
  EXPECT_FALSE(a.exchange_outstanding());
}

}  // namespace
}  // namespace starling::node
