#include "node/config/join_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>

#include "net/codec.h"
#include "net/endpoint.h"
#include "node/config/run_difference.h"

namespace starling::node {

namespace {

// A key query is a header of a few dozen bytes; its answer carries one key.
constexpr int64_t kMaxKeyQueryBytes = 256;
constexpr int kHandshakeMs = 3000;
// Addresses checked at once; a sync beyond waits for the next one (the joiner syncs again).
constexpr size_t kMaxPendingChecks = 64;

net::DecodeLimits KeyQueryLimits() {
  net::DecodeLimits limits = net::JoinLimits();
  limits.max_members = 0;
  limits.max_options = 0;
  limits.max_string_length = 64;
  limits.max_message_bytes = kMaxKeyQueryBytes;
  return limits;
}

void SetUpRouter(zmq::socket_t* router, int64_t max_message_bytes) {
  router->set(zmq::sockopt::linger, 0);
  router->set(zmq::sockopt::maxmsgsize, max_message_bytes);
  router->set(zmq::sockopt::handshake_ivl, kHandshakeMs);
  router->set(zmq::sockopt::rcvhwm, 16);
  router->set(zmq::sockopt::sndhwm, 16);
}

bool ShouldLog(uint64_t count) { return count <= 3 || count % 100 == 0; }

}  // namespace

JoinService::JoinService(JoinServiceOptions options, SharedMemberView* view)
    : options_(std::move(options)),
      view_(view),
      join_router_(context_, zmq::socket_type::router),
      key_router_(context_, zmq::socket_type::router) {
  const std::string peer_endpoint = "tcp://" + options_.host + ":" + std::to_string(options_.port);
  join_endpoint_ = net::TcpEndpointAtOffset(peer_endpoint, net::kJoinPortOffset);
  key_endpoint_ = net::TcpEndpointAtOffset(peer_endpoint, net::kKeyPortOffset);
  net::CurveOptions curve;
  curve.secret_key = options_.secret_key;
  curve.public_key = options_.public_key;
  curve.allow_list_name = "the trust file " + options_.trust->path;
  // The connection's user id is the key itself: the service needs no other name for a node.
  for (const TrustedKey& k : options_.trust->keys) curve.peer_allowed[k.key] = k.key;
  curve.allowed = curve.peer_allowed;
  guard_ = std::make_unique<net::SecurityGuard>(&context_, &curve);
  SetUpRouter(&join_router_, static_cast<int64_t>(net::JoinLimits().max_message_bytes));
  net::MakeCurveServer(&join_router_, curve, net::PortRole::kPeer);
  SetUpRouter(&key_router_, kMaxKeyQueryBytes);
  // What libzmq may hold unread from one connection before it is cut (security.h): a few whole
  // messages of the largest size.
  guard_->WatchServer(&join_router_, join_endpoint_, options_.max_connections,
                      "join port " + join_endpoint_, &ledger_,
                      4 * net::JoinLimits().max_message_bytes);
  guard_->WatchServer(&key_router_, key_endpoint_, options_.max_connections,
                      "key port " + key_endpoint_, &ledger_, 64u << 10);
  for (auto [socket, endpoint] :
       {std::pair{&join_router_, join_endpoint_}, std::pair{&key_router_, key_endpoint_}}) {
    try {
      socket->bind(endpoint);
    } catch (const zmq::error_t& e) {
      throw std::runtime_error(
          "cannot listen on " + endpoint + ": " + e.what() +
          (e.num() == EADDRINUSE
               ? " (another process uses the port: give this node another "
                 "--port; it uses PORT to PORT+3)"
               : " (is " + options_.host + " an address of this host? see --host)"));
    }
  }
  guard_->Start();
  thread_ = std::thread([this] { Loop(); });
}

JoinService::~JoinService() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  const net::RejectCounters counts = rejects();
  if (counts.total() > 0) {
    spdlog::info("join ports {} and {}: refused {} ({})", join_endpoint_, key_endpoint_,
                 counts.total(), counts.Summary());
  }
}

net::RejectCounters JoinService::rejects() const {
  net::RejectCounters counts;
  {
    std::lock_guard<std::mutex> lock(counts_mutex_);
    counts = counts_;
  }
  counts.Add(net::RejectReason::kUnlistedKey, guard_->unlisted_keys());
  counts.Add(net::RejectReason::kFailedHandshake, guard_->failed_handshakes());
  counts.Add(net::RejectReason::kNoHandshake, guard_->no_handshakes());
  counts.Add(net::RejectReason::kConnectionCap, guard_->over_cap());
  counts.Add(net::RejectReason::kUnfinishedMessage, guard_->unfinished_messages());
  return counts;
}

void JoinService::Count(net::RejectReason reason, const std::string& what) {
  {
    std::lock_guard<std::mutex> lock(counts_mutex_);
    counts_.Count(reason);
  }
  Log(what);
}

void JoinService::Log(const std::string& what) {
  const uint64_t n = ++logged_[what];
  if (ShouldLog(n)) spdlog::warn("join port {}: {} ({} so far)", join_endpoint_, what, n);
}

bool JoinService::Receive(zmq::socket_t* router, zmq::message_t* identity, zmq::message_t* body) {
  try {
    if (!router->recv(*identity, zmq::recv_flags::dontwait)) return false;
    if (!identity->more()) return false;
    if (!router->recv(*body, zmq::recv_flags::dontwait)) return false;
    uint64_t bytes = body->size() + net::kWireBytesPerFrame;
    const int fd = zmq_msg_get(body->handle(), ZMQ_SRCFD);
    if (!body->more()) {
      ledger_.Add(fd, bytes);
      return true;
    }
    zmq::message_t extra;
    int frames = 1;
    while (router->recv(extra, zmq::recv_flags::dontwait)) {
      bytes += extra.size() + net::kWireBytesPerFrame;
      ++frames;
      if (!extra.more()) break;
    }
    ledger_.Add(fd, bytes);
    Count(net::RejectReason::kMalformed,
          "a message of " + std::to_string(frames) + " frames (every message is one)");
    *body = zmq::message_t();
    return true;
  } catch (const zmq::error_t&) {
    return false;
  }
}

void JoinService::Send(zmq::socket_t* router, const zmq::message_t& identity,
                       const net::Envelope& answer) {
  const std::string bytes = net::Encode(answer);
  try {
    router->send(zmq::buffer(identity.data(), identity.size()),
                 zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    router->send(zmq::buffer(bytes), zmq::send_flags::dontwait);
  } catch (const zmq::error_t&) {
    // The asker is gone or its queue is full: it retries.
  }
}

void JoinService::AnswerKeyQuery(const zmq::message_t& identity, const zmq::message_t& body) {
  if (body.size() == 0) return;  // a multi-frame message, counted by Receive
  net::Envelope query;
  net::Reject reject;
  if (!net::Decode(static_cast<const char*>(body.data()), body.size(), KeyQueryLimits(), &query,
                   &reject) ||
      query.type != net::MessageType::kKeyQuery) {
    const bool decoded = reject.detail.empty();
    Count(decoded ? net::RejectReason::kUnknownType : reject.reason,
          "key port: " + (decoded ? std::string("a ") + net::MessageTypeName(query.type) +
                                        " message, not a key query"
                                  : reject.detail));
    return;
  }
  net::Envelope answer;
  answer.type = net::MessageType::kKeyAnswer;
  answer.run_id = options_.fingerprint;
  answer.sender = -1;
  answer.text = options_.public_key;
  Send(&key_router_, identity, answer);
}

void JoinService::AnswerSync(const zmq::message_t& identity, const zmq::message_t& body) {
  if (body.size() == 0) return;
  // The ZAP handler named the connection after its key (the trust file is the allow-list).
  const char* user = zmq_msg_gets(body.handle(), "User-Id");
  const std::string sender_key = user != nullptr ? user : "";
  if (options_.trust->Find(sender_key) == nullptr) {
    Count(net::RejectReason::kKeyMismatch, "a message without a trusted key");
    return;
  }
  net::Envelope sync;
  net::Reject reject;
  if (!net::Decode(static_cast<const char*>(body.data()), body.size(), net::JoinLimits(), &sync,
                   &reject)) {
    Count(reject.reason, options_.trust->Label(sender_key) + ": " + reject.detail);
    return;
  }
  if (sync.type != net::MessageType::kJoinSync) {
    Count(net::RejectReason::kUnknownType, options_.trust->Label(sender_key) + ": a " +
                                               net::MessageTypeName(sync.type) +
                                               " message, not a join sync");
    return;
  }
  net::Envelope answer;
  answer.type = net::MessageType::kJoinAnswer;
  answer.run_id = options_.fingerprint;
  answer.sender = -1;
  answer.text = Handle(sender_key, sync);
  {
    std::lock_guard<std::mutex> lock(view_->mutex);
    answer.join.nodes = static_cast<uint32_t>(view_->view.nodes());
    answer.join.complete = view_->view.complete();
    if (answer.text.empty()) {
      answer.join.members = view_->view.Records();
      view_->reached = true;
    }
  }
  Send(&join_router_, identity, answer);
}

std::string JoinService::Handle(const std::string& sender_key, const net::Envelope& sync) {
  const std::string label = options_.trust->Label(sender_key);
  const net::MemberRecord* own = nullptr;
  for (const net::MemberRecord& m : sync.join.members) {
    if (m.key == sender_key) own = &m;
  }
  const std::string who = label + (own != nullptr ? " at " + own->endpoint : std::string());
  if (sync.join.options != options_.options ||
      OptionLinesFingerprint(sync.join.options) != sync.run_id) {
    const std::string mine = FirstDifference(options_.options, sync.join.options, who);
    Count(net::RejectReason::kWrongRun,
          "refused " + who + ": other run options: " +
              (mine.empty() ? "its fingerprint does not match its options" : mine));
    const std::string theirs = FirstDifference(sync.join.options, options_.options, "the seed");
    return "other run options: " +
           (theirs.empty() ? "the fingerprint does not match the options" : theirs) +
           " (every node of a run needs the same; this is the first that differs)";
  }
  std::lock_guard<std::mutex> lock(view_->mutex);
  MemberView& view = view_->view;
  if (view.complete()) {
    if (own != nullptr && !own->withdrawn && view.Live(sender_key) == nullptr) {
      std::string names;
      for (const net::MemberRecord& m : view.LiveMembers()) {
        names += (names.empty() ? "" : ", ") + options_.trust->Label(m.key);
      }
      Log("refused " + who + ": the run has its " + std::to_string(view.nodes()) + " members");
      return "the run has its " + std::to_string(view.nodes()) + " members already (" + names +
             "): it was started with --nodes " + std::to_string(view.nodes()) +
             "; a node cannot join a run that has started";
    }
    return "";
  }
  std::vector<net::MemberRecord> others;
  for (const net::MemberRecord& m : sync.join.members) {
    if (&m != own) others.push_back(m);
  }
  if (own != nullptr && !own->withdrawn) {
    if (std::string problem = RecordProblem(*own, *options_.trust); !problem.empty()) {
      Count(net::RejectReason::kBadField, "refused " + label + ": " + problem);
      return "this node's own record: " + problem;
    }
    const auto id = std::make_tuple(own->key, own->endpoint, own->incarnation);
    if (auto it = unreachable_.find(id); it != unreachable_.end()) return it->second;
    if (reachable_.count(id) != 0) {
      others.push_back(*own);
    } else {
      StartCheck(*own);  // its record waits for the check (the sender syncs again)
    }
  } else if (own != nullptr) {
    others.push_back(*own);  // a withdrawal needs no check
  }
  for (const std::string& problem : view.Merge(others, label)) {
    Count(net::RejectReason::kBadField, "refused a member record from " + problem);
  }
  return "";
}

void JoinService::StartCheck(const net::MemberRecord& record) {
  for (const Pending& p : pending_) {
    if (p.record.key == record.key && p.record.endpoint == record.endpoint &&
        p.record.incarnation == record.incarnation) {
      return;  // being checked
    }
  }
  if (pending_.size() >= kMaxPendingChecks) return;  // the sender syncs again later
  Pending check;
  check.record = record;
  check.dealer = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::dealer);
  check.dealer->set(zmq::sockopt::linger, 0);
  check.dealer->set(zmq::sockopt::maxmsgsize, kMaxKeyQueryBytes);
  check.deadline = std::chrono::steady_clock::now() + options_.connect_back_timeout;
  net::Envelope query;
  query.type = net::MessageType::kKeyQuery;
  query.run_id = options_.fingerprint;
  query.sender = -1;
  const std::string bytes = net::Encode(query);
  try {
    check.dealer->connect(net::TcpEndpointAtOffset(record.endpoint, net::kKeyPortOffset));
    check.dealer->send(zmq::buffer(bytes), zmq::send_flags::dontwait);
  } catch (const zmq::error_t& e) {
    CheckDone(check, e.what());
    return;
  }
  pending_.push_back(std::move(check));
}

void JoinService::CheckDone(const Pending& check, const std::string& failure) {
  const net::MemberRecord& record = check.record;
  const auto id = std::make_tuple(record.key, record.endpoint, record.incarnation);
  const std::string label = options_.trust->Label(record.key);
  if (failure.empty()) {
    reachable_.insert(id);
    std::vector<std::string> problems;
    {
      std::lock_guard<std::mutex> lock(view_->mutex);
      problems = view_->view.Merge({record}, label);
    }
    for (const std::string& problem : problems) {
      Count(net::RejectReason::kBadField, "refused a member record from " + problem);
    }
    if (problems.empty()) spdlog::info("join: {} at {} joined", label, record.endpoint);
    return;
  }
  const std::string port = net::TcpEndpointAtOffset(record.endpoint, net::kKeyPortOffset);
  Log("refused " + label + ": the address it publishes, " + record.endpoint +
      ", does not answer here (" + port + ": " + failure + ")");
  unreachable_[id] = "the address this node publishes, " + record.endpoint +
                     ", does not answer the seed " + join_endpoint_ + " (its key port " + port +
                     ": " + failure +
                     "): if this host has several interfaces, start it with --host ADDRESS, "
                     "an address of this host that the other hosts reach";
}

void JoinService::AdvanceChecks() {
  const auto now = std::chrono::steady_clock::now();
  for (auto it = pending_.begin(); it != pending_.end();) {
    Pending& check = *it;
    std::string failure;
    bool done = false;
    if (check.dealer) {
      zmq::message_t frame;
      bool got = false;
      try {
        got = check.dealer->recv(frame, zmq::recv_flags::dontwait).has_value();
      } catch (const zmq::error_t&) {
      }
      if (got) {
        net::Envelope answer;
        net::Reject reject;
        const bool ok = !frame.more() &&
                        net::Decode(static_cast<const char*>(frame.data()), frame.size(),
                                    KeyQueryLimits(), &answer, &reject) &&
                        answer.type == net::MessageType::kKeyAnswer;
        done = true;
        if (!ok || answer.text != check.record.key) {
          failure = ok ? "it answers with another key: another node listens at that address"
                       : "it answers with something that is not a key answer";
        }
      } else if (now >= check.deadline) {
        // No answer: an attempt of our own says why (it most likely fails as ZeroMQ's did).
        check.dealer.reset();
        check.probe = std::make_unique<net::TcpProbe>(
            net::TcpEndpointAtOffset(check.record.endpoint, net::kKeyPortOffset),
            std::chrono::milliseconds(3000));
      }
    } else if (check.probe->Poll()) {
      done = true;
      failure = check.probe->connected()
                    ? "it accepts connections but did not answer within " +
                          std::to_string(options_.connect_back_timeout.count() / 1000) + " s"
                    : check.probe->failure();
    }
    if (!done) {
      ++it;
      continue;
    }
    CheckDone(check, failure);
    it = pending_.erase(it);
  }
}

void JoinService::Loop() {
  zmq::message_t identity, body;
  while (!stop_.load()) {
    zmq::pollitem_t items[] = {{join_router_.handle(), 0, ZMQ_POLLIN, 0},
                               {key_router_.handle(), 0, ZMQ_POLLIN, 0}};
    try {
      zmq::poll(items, 2, std::chrono::milliseconds(pending_.empty() ? 100 : 10));
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) break;
      continue;
    }
    try {
      for (int n = 0; n < 64 && Receive(&key_router_, &identity, &body); ++n) {
        AnswerKeyQuery(identity, body);
      }
      for (int n = 0; n < 64 && Receive(&join_router_, &identity, &body); ++n) {
        AnswerSync(identity, body);
      }
      AdvanceChecks();
    } catch (const std::exception& e) {
      // Nothing a peer sends may stop the service; a local failure is logged and the loop goes on.
      spdlog::error("join port {}: {}", join_endpoint_, e.what());
    }
  }
  join_router_.close();
  key_router_.close();
}

}  // namespace starling::node
