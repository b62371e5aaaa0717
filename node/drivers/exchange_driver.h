// Drives a pairwise algorithm (SwarmSGD) over messages: partner choice, BUSY replies, crossed
// requests (the lower id initiates), timeouts and back-off (docs/explanations/exchange.md).
// Pure logic: time comes in as an argument and messages go out through the returned
// actions, so the daemon and tests drive it the same way.
//
// Conservation: an exchange that timed out (or that a crossed request made us give up) keeps its
// snapshot among the last kKeptOfferSnapshots, so a late reply is still merged and no mass is
// lost when the partner did answer.
//
// Not thread-safe; owned by one poll loop.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "algorithms/pairwise/pairwise_algorithm.h"
#include "net/reject.h"

namespace starling::node {

struct ExchangeTiming {
  int64_t reply_timeout_ms = 2000;  // an offer unanswered this long is abandoned, plus:
  // the time its request and its reply (each the size of the offered vector) take to cross at
  // this rate, the slowest assumed of a live daemon on a loaded machine (ReplyTimeoutMs): a fixed
  // 2 s was below one round trip of 80 MB messages (d = 1e7: 1.7 s between 2 daemons at load 5,
  // 7.5-14 s between 4 at load 12-23, 2 cores), and each abandoned offer was sent and served all
  // the same, so offers piled up in the queues (docs/results/large-models.md). Adds 2 ms for 8
  // KB, 1.9 s at d = 1e6, 19 s at d = 1e7.
  uint64_t slowest_bytes_per_second = 8ull << 20;
  // Two messages of `message_bytes` (an offer's request and reply) at slowest_bytes_per_second,
  // in whole ms rounded down (0 for small models). MergePace's ceiling follows it too.
  int64_t TransferMs(uint64_t message_bytes) const {
    const uint64_t rate = slowest_bytes_per_second > 0 ? slowest_bytes_per_second : 1;
    return static_cast<int64_t>(2 * message_bytes * 1000 / rate);
  }
  // reply_timeout_ms plus TransferMs (small models keep reply_timeout_ms).
  int64_t ReplyTimeoutMs(uint64_t message_bytes) const {
    return reply_timeout_ms + TransferMs(message_bytes);
  }
  // After this many time-outs in a row a neighbour is excluded from partner choice until the
  // driver's owner re-admits it (SetAvailable), e.g. when a message from it arrives.
  int timeouts_to_exclude = 3;
  int64_t backoff_min_ms = 1;  // random back-off after BUSY or a timeout
  int64_t backoff_max_ms = 20;
  // Added to this node's sequence numbers. A restarted node passes a value that grows with the
  // wall clock, so that its new requests never look like duplicates of its previous life's.
  uint64_t sequence_offset = 0;
};

// What the driver wants sent. `payload` is null for BUSY and kRefused; kRefused sends nothing:
// the request's vector was refused by the merge (NaN/Inf, see OnRequest). `payload` is the
// algorithm's own message, shared (pairwise_algorithm.h): it never changes while held, so the
// daemon hands it to the transport as the keepalive of a send without a copy.
struct ExchangeMessage {
  enum class Kind { kRequest, kReply, kBusy, kRefused } kind;
  int peer;
  uint64_t seq;
  std::shared_ptr<const Vec> payload;
};

class ExchangeDriver {
 public:
  // `algorithm` is not owned. `neighbors` ascending. `seed` drives partner choice and back-off.
  ExchangeDriver(algorithms::PairwiseAlgorithm* algorithm, int self_id, std::vector<int> neighbors,
                 uint64_t seed, ExchangeTiming timing = {});

  // Where the vectors the algorithm's merges refuse are reported (the error policy,
  // docs/explanations/architecture.md): the sender and a kNonFinite reject naming the message and
  // the first bad entry, e.g. for Transport::ReportReject, which counts and logs it with the
  // transport's other rejects. Without a sink they are only counted (merge_rejects()).
  using RejectSink = std::function<void(int peer, const net::Reject& reject)>;
  void SetRejectSink(RejectSink sink) { reject_sink_ = std::move(sink); }
  // The vectors given to OnRequest and OnReply were already refused when non-finite, in the copy
  // that read them (ExchangeWire::ChecksValues): the plain merges then, not the checked ones,
  // whose default would scan every vector a second time. Default false: the checked merges.
  void SetVectorsChecked(bool checked) { vectors_checked_ = checked; }

  // Starts an exchange if the algorithm wants one and no offer is outstanding or backing off;
  // also abandons an offer past its deadline. Call between local steps. `paced`: the node waits
  // for merges before its next step (--merge-pace), so it also offers between the algorithm's
  // offers (one per H local steps), to a neighbour it has not merged with since its last local
  // step (FreshPartners): otherwise a waiting node could only wait to be chosen by its
  // neighbours, which under load starved two nodes of a 6-ring of their merges (hundreds of pace
  // time-outs in 800 steps, docs/results/demo.md); a second merge with the same partner
  // before this node moves mostly re-averages the average. When to pass it: MergePace::Overdue.
  // An exchange the algorithm wants goes to its PreferredPeer() while that neighbour is
  // available (DADAO settling a timed-out gossip), else to one drawn uniformly among the
  // available neighbours.
  std::optional<ExchangeMessage> Tick(int64_t now_ms, bool paced = false);
  // An XCHG_REQ from `peer`: returns the reply, or BUSY. BUSY only for a crossed request (our own
  // offer is outstanding to that same peer) when our id is the lower one; an offer outstanding to
  // another peer does not stop the node from serving. When our id is the higher one, our
  // offer is given up (AbortCrossedExchange, not a time-out) and the request served.
  // `their_snapshot` (here and in OnReply) is read during the call only: it may view a
  // received frame. It came from the network and may hold NaN/Inf (the transport leaves that
  // check to the merge, exchange_wire.h): the merges here are the algorithm's checked ones
  // (unless SetVectorsChecked), and a vector they refuse changes nothing, is reported to the
  // reject sink, and gets no answer (Kind::kRefused), as a malformed message gets none.
  ExchangeMessage OnRequest(int peer, uint64_t seq, const Eigen::Ref<const Vec>& their_snapshot,
                            int64_t now_ms);
  // True if the XCHG_REQ (`peer`, `seq`) was seen before (a duplicate from the network); records
  // it otherwise. The owner drops duplicates without answering: serving a request twice would
  // merge twice on this side and once on the other, breaking the conservation of the sum of
  // models, and a BUSY could overtake the first answer.
  bool DuplicateRequest(int peer, uint64_t seq);
  // An XCHG_REP from `peer`. Returns false if it matched no offer (stale or unknown: dropped) or
  // its vector was refused (reported; the outstanding offer is then given up, its snapshot
  // dropped; a late reply's snapshot stays kept as it was).
  bool OnReply(int peer, uint64_t seq, const Eigen::Ref<const Vec>& their_snapshot);
  // A BUSY from `peer`. Returns false if it matched no outstanding offer.
  bool OnBusy(int peer, uint64_t seq, int64_t now_ms);

  // Milliseconds until Tick has something to do that no message triggers: the outstanding
  // offer's deadline, or the end of a back-off when the algorithm wants an exchange or, when
  // `paced`, a paced offer to a fresh partner is due (0: Tick would act now); nullopt when only a
  // message (or a local step) can change what Tick does.
  // A loop waiting for messages may sleep this long without delaying an offer.
  std::optional<int64_t> MsUntilNextTimer(int64_t now_ms, bool paced = false) const;

  // Excludes (or re-admits) a neighbour from partner choice, e.g. while it is gone.
  void SetAvailable(int peer, bool available);

  // False when every neighbour is excluded: waiting for an exchange would then be forever.
  bool has_partners() const { return !available_.empty(); }
  bool offer_outstanding() const { return algorithm_->exchange_outstanding(); }
  // The time-out of the latest offer (ExchangeTiming::ReplyTimeoutMs of its vector's bytes), or
  // reply_timeout_ms before the first.
  int64_t last_reply_timeout_ms() const { return last_reply_timeout_ms_; }
  const ExchangeTiming& timing() const { return timing_; }
  std::optional<int> pending_peer() const;
  int64_t timeouts() const { return timeouts_; }
  int64_t busy_received() const { return busy_received_; }
  int64_t late_replies_merged() const { return late_merged_; }
  int64_t stale_dropped() const { return stale_dropped_; }
  int64_t merge_rejects() const { return merge_rejects_; }

 private:
  // Gives up the outstanding offer but keeps its snapshot for a late reply. The algorithm is
  // told why: AbortExchange(true) after a time-out, AbortCrossedExchange for a crossed request
  // (`crossed`); a BUSY or a refused reply is AbortExchange(false).
  void Abandon(bool crossed);
  void BackOff(int64_t now_ms);
  // Available neighbours not merged with since this node's last local step.
  std::vector<int> FreshPartners() const;
  void NoteMerge(int peer);
  // Counts and reports a vector of `kind` from `peer` that the merge refused.
  void ReportRefused(int peer, const char* kind, size_t first_bad);

  algorithms::PairwiseAlgorithm* algorithm_;
  int self_id_;
  std::vector<int> neighbors_;
  std::vector<int> available_;  // neighbours partners are chosen from, ascending
  std::mt19937_64 rng_;
  ExchangeTiming timing_;
  uint64_t next_seq_;
  // The outstanding offer.
  struct Offer {
    int peer;
    uint64_t seq;
    int64_t deadline_ms;
  };
  std::optional<Offer> offer_;
  // (seq, peer) of abandoned offers whose snapshots the algorithm may still keep, oldest first.
  std::deque<std::pair<uint64_t, int>> abandoned_;
  std::map<int, int> consecutive_timeouts_;  // per neighbour
  std::map<int, int64_t> merged_at_step_;    // per neighbour: local steps at the last merge
  std::deque<std::pair<int, uint64_t>> recent_requests_;  // (peer, seq), the last few, oldest first
  int64_t backoff_until_ms_ = 0;
  int64_t last_reply_timeout_ms_;
  int64_t timeouts_ = 0, busy_received_ = 0, late_merged_ = 0, stale_dropped_ = 0;
  int64_t merge_rejects_ = 0;
  RejectSink reject_sink_;
  bool vectors_checked_ = false;
};

}  // namespace starling::node
