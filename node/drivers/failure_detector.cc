#include "node/drivers/failure_detector.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace starling::node {

namespace {

void CheckPositive(double v, const char* name) {
  if (!(std::isfinite(v) && v > 0)) {
    throw std::invalid_argument(std::string("failure detector: ") + name + " " + std::to_string(v) +
                                " must be a positive number");
  }
}

}  // namespace

FailureDetector::FailureDetector(int self, uint64_t incarnation, const std::vector<int>& neighbours,
                                 double now, const FailureDetectorOptions& options)
    : self_(self), incarnation_(incarnation), options_(options) {
  CheckPositive(options.interval, "interval");
  CheckPositive(options.suspect_after, "suspect_after");
  CheckPositive(options.answer_window, "answer_window");
  CheckPositive(options.confirm_after, "confirm_after");
  if (options.answer_window >= options.suspect_after) {
    throw std::invalid_argument(
        "failure detector: answer_window must be below suspect_after, or a helper would call "
        "alive a node the asker rightly suspects");
  }
  for (int peer : neighbours) {
    if (peer == self) continue;
    Link& link = links_[peer];
    link.last_heard = now;  // a fresh link gets a full window before any suspicion
    link.next_heartbeat = now;
  }
}

FailureDetector::Link* FailureDetector::Find(int peer) {
  auto it = links_.find(peer);
  return it == links_.end() ? nullptr : &it->second;
}

const FailureDetector::Link* FailureDetector::Find(int peer) const {
  auto it = links_.find(peer);
  return it == links_.end() ? nullptr : &it->second;
}

bool FailureDetector::suspected(int peer) const {
  const Link* link = Find(peer);
  return link != nullptr && link->suspected;
}

bool FailureDetector::dead(int peer) const {
  const Link* link = Find(peer);
  return link != nullptr && link->dead;
}

void FailureDetector::SetCommonNeighbours(int peer, const std::vector<int>& helpers) {
  Link* link = Find(peer);
  if (link == nullptr) {
    ++ignored_;
    return;
  }
  link->helpers.clear();
  for (int h : helpers) {
    if (h != self_ && h != peer && Find(h) != nullptr) link->helpers.push_back(h);
  }
}

std::vector<FailureDetectorEvent> FailureDetector::Heard(int peer, uint64_t incarnation,
                                                         double now) {
  std::vector<FailureDetectorEvent> events;
  Link* link = Find(peer);
  if (link == nullptr) {
    ++ignored_;
    return events;
  }
  if (link->dead) {
    if (incarnation <= link->incarnation) {
      ++ignored_;  // a late message of the dead process
      return events;
    }
    link->dead = false;
    link->suspected = false;
    link->incarnation = incarnation;
    link->last_heard = now;
    events.push_back({FailureDetectorEvent::kRejoined, peer, -1, incarnation});
    return events;
  }
  if (incarnation < link->incarnation) {
    ++ignored_;  // older than what this link has seen: not evidence of the current process
    return events;
  }
  link->incarnation = incarnation;
  link->last_heard = std::max(link->last_heard, now);
  if (link->suspected) {
    link->suspected = false;
    link->asked.clear();
    ++refuted_;
    events.push_back({FailureDetectorEvent::kRefuted, peer, -1, incarnation});
  }
  return events;
}

std::vector<FailureDetectorEvent> FailureDetector::Tick(double now) {
  std::vector<FailureDetectorEvent> events;
  const double interval = options_.interval;
  for (auto& [peer, link] : links_) {
    if (link.dead) continue;
    if (now >= link.next_heartbeat) {
      events.push_back({FailureDetectorEvent::kHeartbeat, peer, -1, incarnation_});
      // The next one an interval on; a late tick does not owe the missed ones.
      link.next_heartbeat = std::max(link.next_heartbeat + interval, now);
    }
    if (!link.suspected && now - link.last_heard > options_.suspect_after * interval) {
      link.suspected = true;
      link.suspected_at = now;
      ++suspicions_;
      events.push_back({FailureDetectorEvent::kSuspect, peer, -1, link.incarnation});
      link.asked.clear();
      for (int h : link.helpers) {
        const Link* helper = Find(h);
        if (helper == nullptr || helper->dead) continue;
        link.asked.push_back(h);
        events.push_back({FailureDetectorEvent::kAskProbe, peer, h, link.incarnation});
      }
    }
    if (link.suspected &&
        (link.asked.empty() || now - link.suspected_at >= options_.confirm_after * interval)) {
      Declare(peer, link, &events);
    }
  }
  return events;
}

FailureDetector::Answer FailureDetector::AnswerProbe(int target, double now) const {
  const Link* link = Find(target);
  if (link == nullptr || link->dead) return {false, link ? link->incarnation : 0};
  return {now - link->last_heard <= options_.answer_window * options_.interval, link->incarnation};
}

std::vector<FailureDetectorEvent> FailureDetector::ProbeAnswered(int helper, int target,
                                                                 const Answer& answer, double now) {
  std::vector<FailureDetectorEvent> events;
  Link* link = Find(target);
  if (link == nullptr || !link->suspected ||
      std::find(link->asked.begin(), link->asked.end(), helper) == link->asked.end()) {
    ++ignored_;  // nobody asked this helper about this node now
    return events;
  }
  link->asked.erase(std::find(link->asked.begin(), link->asked.end(), helper));
  if (answer.alive && answer.incarnation >= link->incarnation) {
    link->suspected = false;
    link->asked.clear();
    link->incarnation = answer.incarnation;
    link->last_heard = now;  // indirect evidence: the suspect lives, this link is slow
    ++refuted_;
    events.push_back({FailureDetectorEvent::kRefuted, target, helper, answer.incarnation});
    return events;
  }
  Declare(target, *link, &events);
  return events;
}

void FailureDetector::Declare(int peer, Link& link, std::vector<FailureDetectorEvent>* events) {
  link.dead = true;
  link.suspected = false;
  link.asked.clear();
  events->push_back({FailureDetectorEvent::kDead, peer, -1, link.incarnation});
}

uint64_t FailureDetector::Refute(uint64_t incarnation) {
  if (incarnation >= incarnation_) incarnation_ = incarnation + 1;
  return incarnation_;
}

}  // namespace starling::node
