// A node's join ports, for a run formed by joining a seed (starlingd --join): what lets other
// processes find the run's members through this node, from the moment it starts joining until it
// exits (so a node that learns late, or a monitor started during the run, still finds them; and
// the place where a node joining a running run would be admitted).
//
// Two ports beside the node's peer port PORT (net/endpoint.h):
//   PORT+3, plaintext: answers a kKeyQuery with this node's public key and nothing else. A
//           joiner knows a seed's address but not its key, which a CURVE client needs before it
//           connects; it checks the key against its trust file before using it, so a forged
//           answer can only name a trusted key whose owner then fails the handshake.
//   PORT+2, CURVE, the trust file as the allow-list (the only admission rule): answers a
//           kJoinSync with this node's view of the members after merging the sender's
//           (node/config/member_view.h). The sender's key is its connection's, never a field.
// A sync is refused, naming why, if its run options differ (the first differing option and both
// values), if the run's members are complete without the sender, or if this node cannot connect
// to the address the sender publishes: a new (key, endpoint) is checked by a key query to the
// key port at that address, which must answer with the sender's key, before its record is
// merged; a failure (with its cause) is told to the sender at its next sync with the advice to
// start it with --host.
//
// Every byte is untrusted: messages are size-capped (ZMQ_MAXMSGSIZE), one frame each, decoded
// within net::JoinLimits() (the key port: a few hundred bytes), checked, and counted per reason
// when refused; connections are capped, timed out and watched by a SecurityGuard (whose counts
// include keys not in the trust file). The counts are logged when the service stops.
//
// Threading: one thread of its own polls both ports; the view is shared with the node's main
// thread through SharedMemberView's mutex.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>
#include <zmq.hpp>

#include "net/envelope.h"
#include "net/receive_ledger.h"
#include "net/reject.h"
#include "net/security.h"
#include "net/tcp_probe.h"
#include "node/config/member_view.h"
#include "node/config/trust_file.h"

namespace starling::node {

struct JoinServiceOptions {
  std::string host;  // the address this node publishes; its join ports listen there
  int port = 0;      // its PORT
  std::string secret_key, public_key;
  const TrustFile* trust = nullptr;  // not owned
  std::vector<std::string> options;  // JoinOptionLines of this node
  uint64_t fingerprint = 0;          // OptionLinesFingerprint(options)
  std::chrono::milliseconds connect_back_timeout{4000};
  int max_connections = 64;  // per port
};

class JoinService {
 public:
  // Binds PORT+2 and PORT+3 at options.host and starts answering. Throws std::runtime_error
  // naming the endpoint if a port cannot be bound. `view` is not owned and outlives the service.
  JoinService(JoinServiceOptions options, SharedMemberView* view);
  // Stops the thread and logs what was refused, if anything.
  ~JoinService();
  JoinService(const JoinService&) = delete;
  JoinService& operator=(const JoinService&) = delete;

  // Messages and member records refused so far, by reason (wrong_run: other run options;
  // bad_field: a member record refused), with the guard's counts of connections refused
  // (unlisted_key: a key not in the trust file). Safe from any thread.
  net::RejectCounters rejects() const;
  const std::string& join_endpoint() const { return join_endpoint_; }
  const std::string& key_endpoint() const { return key_endpoint_; }

 private:
  // The check of a joiner's address: a key query to the key port at the address it publishes,
  // answered with its key; without an answer by the deadline, a TcpProbe finds why.
  struct Pending {
    net::MemberRecord record;  // merged once the check succeeds
    std::unique_ptr<zmq::socket_t> dealer;
    std::chrono::steady_clock::time_point deadline;
    std::unique_ptr<net::TcpProbe> probe;
  };
  void Loop();
  // Receives one message of one frame from `router` (routing id into *identity, body into
  // *body); false when none is ready. Messages of several frames are read whole and rejected.
  bool Receive(zmq::socket_t* router, zmq::message_t* identity, zmq::message_t* body);
  void AnswerKeyQuery(const zmq::message_t& identity, const zmq::message_t& body);
  void AnswerSync(const zmq::message_t& identity, const zmq::message_t& body);
  // The answer to a sync from `sender_key`: "" and the view, or a refusal.
  std::string Handle(const std::string& sender_key, const net::Envelope& sync);
  void Send(zmq::socket_t* router, const zmq::message_t& identity, const net::Envelope& answer);
  void StartCheck(const net::MemberRecord& record);
  // Advances the checks: answers read, deadlines passed, probes finished.
  void AdvanceChecks();
  void CheckDone(const Pending& check, const std::string& failure);
  // Counts a refused message or record and logs `what` (rate-limited); Log only logs (a joiner
  // refused for its address or for coming after the run started: not a message rejected).
  void Count(net::RejectReason reason, const std::string& what);
  void Log(const std::string& what);

  JoinServiceOptions options_;
  SharedMemberView* view_;
  std::string join_endpoint_, key_endpoint_;
  zmq::context_t context_{1};
  net::ReceiveLedger ledger_;
  std::unique_ptr<net::SecurityGuard> guard_;
  zmq::socket_t join_router_, key_router_;
  std::vector<Pending> pending_;  // addresses being checked (service thread only)
  // (key, endpoint, incarnation) checked: reachable, or the reason not.
  std::set<std::tuple<std::string, std::string, uint64_t>> reachable_;
  std::map<std::tuple<std::string, std::string, uint64_t>, std::string> unreachable_;
  mutable std::mutex counts_mutex_;
  net::RejectCounters counts_;
  std::map<std::string, uint64_t> logged_;  // refusals logged, by what (rate limit)
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace starling::node
