// A wrapper around a Transport's sending side that injects the faults of a FaultPlan (loss,
// duplication, delay, reordering, partitions) into the messages a node sends to its neighbours.
// Each node applies the plan to its own outgoing edges, so a run in which every node is given the
// same plan sees those faults on every directed edge; a partition window cuts both directions
// because both ends apply it (the windows are in seconds since each node started).
//
// Only the algorithm's traffic passes through here (ROUND, RESEND, XCHG_REQ/REP, BUSY). The
// transport's own HELLO, HEARTBEAT and BYE messages go straight out: they are not part of the
// data path whose robustness is under test, and a lost BYE would only turn a clean finish into
// a time-out.
//
// Delayed and held messages keep their payload bytes alive, released by Flush(), which the owner
// calls every loop turn: with the sender's keepalive when it gave one (no copy, and the
// transport then sends them without a copy too), or else as deep copies (an Envelope's payloads
// are views of the caller's memory).
//
// Threading: owned by the node's poll loop, like the Transport.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "net/envelope.h"
#include "net/fault_plan.h"
#include "net/transport.h"

namespace starling::net {

class FaultyTransport {
 public:
  // `transport` is not owned and must outlive this object. Delays in `plan` are milliseconds,
  // partition windows seconds since construction.
  FaultyTransport(Transport* transport, FaultPlan plan, int32_t self_id);

  // Sends `envelope` to `peer` through the fault plan. Returns false only when the transport
  // refused an immediate send (unknown peer, full queue); a message the plan drops or delays
  // counts as sent. `keepalive` as for Transport::Send: it keeps every payload's bytes alive
  // and unchanged; a delayed, held or duplicated message holds it until it is handed over.
  bool Send(int32_t peer, const Envelope& envelope,
            const std::shared_ptr<const void>& keepalive = nullptr);
  // Hands every delayed message that is due, and every held message whose hold expired, to the
  // transport. Call each loop turn.
  void Flush();
  // Messages still delayed or held.
  size_t pending() const;

  const FaultCounters& counters() const { return injector_.counters(); }
  bool active() const { return active_; }

 private:
  // An envelope whose payload bytes stay alive, so it can wait: the sender's keepalive, or else
  // copies of the bytes.
  struct Owned {
    Envelope envelope;
    std::shared_ptr<const void> keepalive;
    std::vector<std::string> bytes;
    Clock::time_point due;
  };
  std::unique_ptr<Owned> Copy(const Envelope& envelope,
                              const std::shared_ptr<const void>& keepalive,
                              Clock::time_point due) const;
  bool SendOwned(int32_t peer, Owned* message);
  double Seconds(Clock::time_point t) const;

  Transport* transport_;
  FaultInjector injector_;
  int32_t self_id_;
  bool active_;
  Clock::time_point start_;
  std::multimap<Clock::time_point, std::pair<int32_t, std::unique_ptr<Owned>>> delayed_;
  std::map<int32_t, std::unique_ptr<Owned>> held_;  // at most one held message per edge
};

}  // namespace starling::net
