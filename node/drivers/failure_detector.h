// The per-link failure detector of a run whose members can die (docs/explanations/membership.md,
// "Failure detection"): heartbeats on every link, suspicion after missed intervals, confirmation
// through a common neighbour (an indirect probe, as in SWIM), and incarnation numbers so that a
// restarted node is not mistaken for its dead self.
//
// Pure code over a clock the caller passes (seconds, any origin, never decreasing): no socket,
// no thread. The caller sends what Tick asks for and feeds back what arrives.
//  - Every `interval` Tick asks for a heartbeat to each neighbour (the node's incarnation in it).
//  - Any message from a neighbour (Heard) counts as a heartbeat.
//  - A neighbour silent for more than `suspect_after` intervals is suspected: Tick asks each
//    common neighbour of the two (SetCommonNeighbours) to answer for it (kAskProbe).
//  - A helper answers from its own link (Answer): alive if it heard the suspect within
//    `answer_window` intervals, with the incarnation it heard. A live node heartbeats to every
//    neighbour every interval, so a helper that heard nothing for that long has the same evidence
//    as the asker; a helper that did hear it refutes the suspicion (the asker's link, or the
//    asker itself, is slow, not the suspect).
//  - A "not heard" answer from a helper confirms: the suspect is declared dead (kDead). Without
//    a common neighbour, or without any answer within `confirm_after` intervals of the suspicion,
//    the suspicion alone declares it.
//  - A dead neighbour stays dead for messages of its incarnation or older (late messages of the
//    dead process); a message with a higher incarnation is a restarted node, which comes back
//    (kRejoined). A node that learns it is suspected or declared at its own incarnation takes a
//    higher one (Refute) and sends it with its next messages.
// Inputs name peers and incarnations from the network: anything about a peer that is not a
// neighbour, or an answer nobody asked for, is ignored and counted (ignored()).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

namespace starling::node {

struct FailureDetectorOptions {
  double interval = 0.5;       // seconds between heartbeats on a link
  double suspect_after = 2.0;  // intervals of silence before a suspicion
  double answer_window = 1.5;  // a helper answers "alive" if it heard the suspect this recently
  double confirm_after = 1.0;  // intervals a suspicion waits for an answer
};

struct FailureDetectorEvent {
  enum Kind {
    kHeartbeat,  // send a heartbeat to `peer`
    kSuspect,    // `peer` is suspected (informational)
    kAskProbe,   // ask `helper` whether it hears `peer`
    kDead,       // `peer` is declared dead at `incarnation`
    kRefuted,    // the suspicion of `peer` is lifted (heard again, or a helper hears it)
    kRejoined,   // `peer` is back with the higher `incarnation`
  };
  Kind kind;
  int peer;
  int helper = -1;
  uint64_t incarnation = 0;
};

class FailureDetector {
 public:
  // Throws std::invalid_argument for an option that is not positive and finite, or
  // answer_window >= suspect_after (a helper must not call alive what the asker suspects).
  FailureDetector(int self, uint64_t incarnation, const std::vector<int>& neighbours, double now,
                  const FailureDetectorOptions& options = {});

  // The members linked to both this node and `peer`, which can answer for it.
  void SetCommonNeighbours(int peer, const std::vector<int>& helpers);
  // A message from `peer` (any: heartbeat, exchange) carrying its incarnation.
  std::vector<FailureDetectorEvent> Heard(int peer, uint64_t incarnation, double now);
  // The periodic work: heartbeats due, suspicions, confirmations by time-out.
  std::vector<FailureDetectorEvent> Tick(double now);
  // This node as a helper: whether it hears `target` (and at which incarnation) for an asker.
  struct Answer {
    bool alive;
    uint64_t incarnation;
  };
  Answer AnswerProbe(int target, double now) const;
  // A helper's answer about a suspect.
  std::vector<FailureDetectorEvent> ProbeAnswered(int helper, int target, const Answer& answer,
                                                  double now);
  // Someone suspects or declared this node at `incarnation`: take a higher one if needed.
  // Returns the node's incarnation, to send from now on.
  uint64_t Refute(uint64_t incarnation);

  uint64_t incarnation() const { return incarnation_; }
  bool suspected(int peer) const;
  bool dead(int peer) const;
  int64_t ignored() const { return ignored_; }
  int64_t suspicions() const { return suspicions_; }
  int64_t refuted() const { return refuted_; }

 private:
  struct Link {
    double last_heard = 0.0;
    double next_heartbeat = 0.0;
    uint64_t incarnation = 0;
    bool suspected = false;
    double suspected_at = 0.0;
    bool dead = false;
    std::vector<int> helpers;
    std::vector<int> asked;  // helpers asked about the current suspicion
  };
  Link* Find(int peer);
  const Link* Find(int peer) const;
  void Declare(int peer, Link& link, std::vector<FailureDetectorEvent>* events);

  int self_;
  uint64_t incarnation_;
  FailureDetectorOptions options_;
  std::map<int, Link> links_;
  int64_t ignored_ = 0, suspicions_ = 0, refuted_ = 0;
};

}  // namespace starling::node
