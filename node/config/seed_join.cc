#include "node/config/seed_join.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <thread>
#include <zmq.hpp>

#include "net/codec.h"
#include "net/curve_keys.h"
#include "net/endpoint.h"
#include "net/request_once.h"
#include "node/config/run_difference.h"
#include "topology/generators.h"

namespace starling::node {

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxSeeds = 64;
constexpr std::chrono::milliseconds kFirstBackoff{200};
constexpr std::chrono::milliseconds kMaxBackoff{5000};
constexpr size_t kListedInLog = 10;

// A process this joiner talks to: a seed from --join, or a member it has learned.
struct Target {
  std::string label;          // for messages: "seed HOST:PORT", or a member's label and endpoint
  std::string peer_endpoint;  // tcp://HOST:PORT
  std::string key;            // empty: not known yet (a seed)
  bool seed = false;
  bool self = false;  // this process itself: never contacted
  bool tried = false;
  Clock::time_point next_try{};
  std::chrono::milliseconds backoff = kFirstBackoff;
  std::string failure;  // why the last attempt failed, "" if it answered
};

std::string SecondsText(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3g", seconds);
  return text;
}

// "a, b, c (and 4 more)".
std::string ListOf(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < kListedInLog; ++i) {
    out += (i ? ", " : "") + items[i];
  }
  if (items.size() > kListedInLog) {
    out += " (and " + std::to_string(items.size() - kListedInLog) + " more)";
  }
  return out.empty() ? "none" : out;
}

class Joiner {
 public:
  Joiner(const SeedJoinRequest& request, SharedMemberView* view)
      : request_(request), view_(view), self_key_(request.self ? request.self->key : "") {
    for (const Seed& seed : request.seeds) {
      Target t;
      t.label = "seed " + seed.text;
      t.peer_endpoint = "tcp://" + seed.host + ":" + std::to_string(seed.port);
      t.seed = true;
      targets_.push_back(t);
    }
    curve_.secret_key = request.secret_key;
    curve_.public_key = request.public_key;
  }

  std::vector<net::MemberRecord> Run() {
    const Clock::time_point start = Clock::now();
    Clock::time_point last_log = start;
    while (true) {
      {
        std::lock_guard<std::mutex> lock(view_->mutex);
        admitted_ = admitted_ || view_->reached;
        if (view_->view.complete() && (admitted_ || !request_.self)) break;
      }
      if (request_.stop != nullptr && request_.stop->load()) {
        const std::string progress = Progress();
        Withdraw();
        throw JoinStopped("join: stopped by a signal while waiting for the members (" + progress +
                          ")");
      }
      const double waited = std::chrono::duration<double>(Clock::now() - start).count();
      if (waited >= request_.timeout_seconds) {
        const std::string progress = Progress();
        Withdraw();
        throw JoinTimeout("join: gave up after " + SecondsText(waited) + " s (--join-timeout-s " +
                          SecondsText(request_.timeout_seconds) + "): " + progress +
                          (admitted_ ? "" : "; no member has this node's record yet") +
                          ": did the missing nodes start, with --join naming a seed that is up, "
                          "and do their hosts reach the others (TCP PORT to PORT+3)?");
      }
      if (std::chrono::duration<double>(Clock::now() - last_log).count() >=
          request_.log_every_seconds) {
        last_log = Clock::now();
        spdlog::info("join: {}", Progress());
      }
      LearnMembers();
      Target* target = NextTarget();
      if (target == nullptr) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      Contact(target);
    }
    std::lock_guard<std::mutex> lock(view_->mutex);
    const std::vector<net::MemberRecord> members = view_->view.LiveMembers();
    if (request_.self) {
      const net::MemberRecord* mine = view_->view.Live(self_key_);
      if (mine != nullptr && mine->endpoint != request_.self->endpoint) {
        throw std::runtime_error(
            "join: the run's members list this node's key at " + mine->endpoint +
            ", but this node publishes " + request_.self->endpoint +
            ": start it with the --host and --port of that address (a node of a started run "
            "keeps its address)");
      }
    }
    return members;
  }

 private:
  // "3 of 5 members: A at tcp://..., B at ...; waiting for 2 more (not heard of: C, D); seeds: ..."
  std::string Progress() {
    std::vector<std::string> have, missing, seeds;
    int live = 0;
    {
      std::lock_guard<std::mutex> lock(view_->mutex);
      std::set<std::string> live_keys;
      for (const net::MemberRecord& m : view_->view.LiveMembers()) {
        have.push_back(request_.trust->Label(m.key) + (m.key == self_key_ ? " (this node)" : "") +
                       " at " + m.endpoint);
        live_keys.insert(m.key);
      }
      live = static_cast<int>(live_keys.size());
      for (const TrustedKey& k : request_.trust->keys) {
        if (live_keys.count(k.key) == 0 && k.key != request_.public_key) {
          missing.push_back(request_.trust->Label(k.key));
        }
      }
    }
    for (const Target& t : targets_) {
      if (!t.seed || t.self) continue;
      seeds.push_back(t.label.substr(5) + (!t.tried            ? " not tried yet"
                                           : t.failure.empty() ? " answered"
                                                               : ": " + t.failure));
    }
    const std::string waiting =
        live < request_.nodes
            ? "waiting for " + std::to_string(request_.nodes - live) +
                  " more (trusted keys not heard of: " + ListOf(missing) + ")"
            : "waiting for a member to take this node's record (it checks that the address "
              "this node publishes answers)";
    return std::to_string(live) + " of " + std::to_string(request_.nodes) + " members (" +
           ListOf(have) + "); " + waiting + "; seeds: " + ListOf(seeds);
  }

  // Members of the view become targets (their keys are known: no key query).
  void LearnMembers() {
    std::vector<net::MemberRecord> members;
    {
      std::lock_guard<std::mutex> lock(view_->mutex);
      members = view_->view.LiveMembers();
    }
    for (const net::MemberRecord& m : members) {
      if (m.key == self_key_ || m.key == request_.public_key) continue;
      auto it = std::find_if(targets_.begin(), targets_.end(),
                             [&](const Target& t) { return !t.seed && t.key == m.key; });
      if (it != targets_.end()) {
        it->peer_endpoint = m.endpoint;
        continue;
      }
      Target t;
      t.label = request_.trust->Label(m.key) + " at " + m.endpoint;
      t.peer_endpoint = m.endpoint;
      t.key = m.key;
      targets_.push_back(t);
    }
  }

  // The next target due: before any answer, the seeds in their order; after, the learned
  // members in turn (the seeds when there are none).
  Target* NextTarget() {
    const Clock::time_point now = Clock::now();
    Target* best = nullptr;
    for (Target& t : targets_) {
      if (t.self || t.next_try > now) continue;
      if (answered_ && t.seed && HasMemberTargets()) continue;
      if (best == nullptr || t.next_try < best->next_try) best = &t;
      if (!answered_ && best != nullptr) break;  // seeds in order
    }
    return best;
  }

  bool HasMemberTargets() const {
    return std::any_of(targets_.begin(), targets_.end(),
                       [](const Target& t) { return !t.seed && !t.self; });
  }

  void Fail(Target* t, const std::string& why) {
    if (t->failure != why) {
      spdlog::info("join: {}: {}; trying {}", t->label, why,
                   t->seed ? "the next seed, and this one again later" : "again later");
    }
    t->failure = why;
    t->next_try = Clock::now() + t->backoff;
    t->backoff = std::min(t->backoff * 2, kMaxBackoff);
  }

  void Contact(Target* t) {
    if (!t->tried) spdlog::info("join: trying {}", t->label);
    t->tried = true;
    if (t->key.empty() && !QueryKey(t)) return;
    if (t->self) return;
    net::Envelope sync = Sync();
    {
      std::lock_guard<std::mutex> lock(view_->mutex);
      sync.join.members = view_->view.Records();
      sync.join.complete = view_->view.complete();
    }
    const net::RequestOutcome outcome = Request(*t, sync, request_.request_timeout);
    using Kind = net::RequestOutcome::Kind;
    if (outcome.kind == Kind::kKeyRefused) {
      throw std::runtime_error(
          "join: " + t->label + " refused this " + (request_.self ? "node" : "monitor") +
          "'s key " + request_.public_key +
          ": it is not in that host's trust file (add this key, the line of its .pub file, to "
          "the trust file on every host)");
    }
    if (outcome.kind != Kind::kAnswered) {
      if (outcome.kind == Kind::kHandshakeFailed && t->seed) t->key.clear();  // ask again
      return Fail(t, outcome.detail);
    }
    const net::Envelope& answer = outcome.answer;
    if (!answer.text.empty()) {
      throw std::runtime_error("join: " + t->label + " refused this " +
                               (request_.self ? "node" : "monitor") + ": " + answer.text);
    }
    if (answer.join.nodes != static_cast<uint32_t>(request_.nodes)) {
      return Fail(t, "answered for a run of " + std::to_string(answer.join.nodes) + " nodes");
    }
    if (request_.self) {
      for (const net::MemberRecord& m : answer.join.members) {
        // A run that has started keeps a restarted node's earlier record (the same key and
        // address): that is its place.
        admitted_ = admitted_ ||
                    (m.key == self_key_ && !m.withdrawn && m.endpoint == request_.self->endpoint &&
                     (m.incarnation == request_.self->incarnation || answer.join.complete));
      }
    }
    {
      std::lock_guard<std::mutex> lock(view_->mutex);
      if (answer.join.complete) {
        const std::string problem =
            view_->view.AdoptComplete(answer.join.members, t->label, self_key_);
        if (!problem.empty()) {
          if (problem.rfind("the run started", 0) == 0)
            throw std::runtime_error("join: " + problem);
          spdlog::warn("join: {}", problem);
        }
      } else {
        for (const std::string& problem : view_->view.Merge(answer.join.members, t->label)) {
          spdlog::warn("join: refused a member record: {}", problem);
        }
      }
    }
    if (!t->failure.empty()) spdlog::info("join: {} answers now", t->label);
    t->failure.clear();
    t->backoff = kFirstBackoff;
    t->next_try = Clock::now() + request_.sync_every;
    answered_ = true;
    last_answered_ = t->key;
  }

  // Asks a seed's key port for its key; false (and the target's next try set) if no usable key
  // came back.
  bool QueryKey(Target* t) {
    net::Envelope query;
    query.type = net::MessageType::kKeyQuery;
    query.sender = -1;
    net::RequestOnceOptions options;
    options.endpoint = net::TcpEndpointAtOffset(t->peer_endpoint, net::kKeyPortOffset);
    options.timeout = request_.request_timeout;
    options.limits = net::JoinLimits();
    options.answer_type = net::MessageType::kKeyAnswer;
    const net::RequestOutcome outcome = net::RequestOnce(&context_, options, query);
    if (outcome.kind != net::RequestOutcome::Kind::kAnswered) {
      Fail(t, outcome.detail);
      return false;
    }
    const std::string& key = outcome.answer.text;
    if (!net::IsZ85Key(key)) {
      Fail(t, "its key port answered with something that is not a key");
      return false;
    }
    if (key == request_.public_key) {
      spdlog::info("join: {} is this node", t->label);
      t->self = true;  // this process's own address among the seeds
      return false;
    }
    if (request_.trust->Find(key) == nullptr) {
      Fail(t, "it answered with key " + key + ", which is not in " + request_.trust->path +
                  " (a node of another network, or a trust file without its key)");
      return false;
    }
    t->key = key;
    t->label += " (" + request_.trust->Label(key) + ")";
    return true;
  }

  net::RequestOutcome Request(const Target& t, const net::Envelope& sync,
                              std::chrono::milliseconds timeout) {
    net::RequestOnceOptions options;
    options.endpoint = net::TcpEndpointAtOffset(t.peer_endpoint, net::kJoinPortOffset);
    options.curve = curve_;
    options.server_key = t.key;
    options.timeout = timeout;
    options.limits = net::JoinLimits();
    options.answer_type = net::MessageType::kJoinAnswer;
    return net::RequestOnce(&context_, options, sync);
  }

  // A sync with this process's run options (the caller adds the view).
  net::Envelope Sync() const {
    net::Envelope sync;
    sync.type = net::MessageType::kJoinSync;
    sync.run_id = request_.fingerprint;
    sync.sender = -1;
    sync.join.nodes = static_cast<uint32_t>(request_.nodes);
    sync.join.options = request_.options;
    return sync;
  }

  // Tells one member, best effort, that this node stops before the run started.
  void Withdraw() {
    if (!request_.self) return;
    net::Envelope sync = Sync();
    {
      std::lock_guard<std::mutex> lock(view_->mutex);
      net::MemberRecord withdrawn = *request_.self;
      withdrawn.withdrawn = true;
      view_->view.SetSelf(withdrawn);
      sync.join.members = view_->view.Records();
    }
    for (const Target& t : targets_) {
      if (t.key.empty() || t.self || t.key != last_answered_) continue;
      Request(t, sync, std::chrono::milliseconds(1000));
      return;
    }
  }

  const SeedJoinRequest& request_;
  SharedMemberView* view_;
  std::string self_key_;
  net::CurveOptions curve_;
  zmq::context_t context_{1};
  std::vector<Target> targets_;
  bool answered_ = false;
  bool admitted_ = false;  // a member has this node's record
  std::string last_answered_;
};

}  // namespace

std::vector<Seed> ParseSeeds(const std::string& list, int default_port) {
  std::vector<Seed> seeds;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = list.find(',', start);
    const std::string entry =
        list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? list.size() + 1 : comma + 1;
    auto fail = [&](const std::string& why) {
      throw std::invalid_argument("--join " + list + ": '" + entry + "': " + why +
                                  " (expected HOST:PORT[,HOST:PORT...], PORT the seed's --port)");
    };
    if (entry.empty()) fail("an empty entry");
    Seed seed;
    std::string port_text;
    if (entry.front() == '[') {  // [IPv6]:PORT
      const size_t close = entry.find(']');
      if (close == std::string::npos) fail("an IPv6 address without its ']'");
      seed.host = entry.substr(0, close + 1);
      if (close + 1 < entry.size()) {
        if (entry[close + 1] != ':') fail("expected ':' after ']'");
        port_text = entry.substr(close + 2);
      }
    } else {
      const size_t colon = entry.rfind(':');
      seed.host = entry.substr(0, colon);
      if (colon != std::string::npos) port_text = entry.substr(colon + 1);
      if (seed.host.find(':') != std::string::npos) fail("write an IPv6 address as [ADDRESS]");
    }
    if (seed.host.empty() || seed.host == "[]") fail("no host");
    if (seed.host.size() > 255) fail("a host name longer than 255 bytes");
    for (unsigned char c : seed.host) {
      if (c <= ' ' || c >= 127 || c == '/') fail("a host with a space, '/' or control character");
    }
    seed.port = default_port;
    if (!port_text.empty() || (entry.back() == ':')) {
      if (port_text.empty() || port_text.size() > 5 ||
          port_text.find_first_not_of("0123456789") != std::string::npos) {
        fail("port '" + port_text + "' is not a number");
      }
      seed.port = std::stoi(port_text);
    }
    if (seed.port < 1 || seed.port > 65535 - net::kKeyPortOffset) {
      fail("port " + std::to_string(seed.port) + " is not in 1.." +
           std::to_string(65535 - net::kKeyPortOffset) + " (a node uses PORT to PORT+3)");
    }
    seed.text = seed.host + ":" + std::to_string(seed.port);
    seeds.push_back(seed);
    if (seeds.size() > kMaxSeeds) fail("more than " + std::to_string(kMaxSeeds) + " seeds");
  }
  return seeds;
}

JoinKeys ReadJoinKeys(const std::string& trust_path, const std::string& secret_key_file,
                      const std::string& who) {
  JoinKeys keys;
  keys.trust = ReadTrustFile(trust_path);
  keys.secret_key = net::ReadCurveKeyFile(secret_key_file, /*secret=*/true);
  keys.public_key = net::CurvePublicKeyOf(keys.secret_key);
  if (keys.trust.Find(keys.public_key) == nullptr) {
    throw std::invalid_argument("--secret-key " + secret_key_file + ": this " + who +
                                "'s public key " + keys.public_key + " is not in --trust " +
                                trust_path +
                                ": add it (the line of its .pub file) to the trust file on "
                                "every host");
  }
  return keys;
}

SeedJoinRequest MakeSeedJoinRequest(const std::string& seeds, int default_port,
                                    const JoinKeys& keys, const RunConfig& config, int nodes) {
  SeedJoinRequest request;
  request.seeds = ParseSeeds(seeds, default_port);
  request.trust = &keys.trust;
  request.secret_key = keys.secret_key;
  request.public_key = keys.public_key;
  request.nodes = nodes;
  request.options = JoinOptionLines(config, nodes);
  request.fingerprint = OptionLinesFingerprint(request.options);
  return request;
}

topology::Cluster JoinedCluster(const std::vector<net::MemberRecord>& members,
                                const RunConfig& config, const TrustFile& trust) {
  const int n = static_cast<int>(members.size());
  return ClusterFromMembers(members, topology::MakeTopology(config.topology, n, config.seed), trust,
                            "the run's members");
}

std::vector<net::MemberRecord> JoinBySeeds(const SeedJoinRequest& request, SharedMemberView* view) {
  Joiner joiner(request, view);
  return joiner.Run();
}

}  // namespace starling::node
