#include "algorithms/schedule/step_schedule.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <vector>

namespace starling::algorithms {
namespace {

constexpr double kPi = 3.14159265358979323846;

[[noreturn]] void Fail(const std::string& spec, const std::string& why) {
  throw std::invalid_argument("--step-schedule '" + spec + "': " + why + " (expected " +
                              StepScheduleSyntax() + ")");
}

std::string Exact(double v) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

double ParseReal(const std::string& spec, const std::string& key, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno != 0 || !std::isfinite(v)) {
    Fail(spec, key + "='" + text + "' is not a finite number");
  }
  return v;
}

int64_t ParseCount(const std::string& spec, const std::string& key, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || end != text.c_str() + text.size() || errno != 0) {
    Fail(spec, key + "='" + text + "' is not a whole number");
  }
  return v;
}

// KEY=VALUE pairs after the kind; each key at most once.
std::map<std::string, std::string> ParsePairs(const std::string& spec, const std::string& args) {
  std::map<std::string, std::string> pairs;
  size_t begin = 0;
  while (begin <= args.size()) {
    size_t comma = args.find(',', begin);
    if (comma == std::string::npos) comma = args.size();
    const std::string item = args.substr(begin, comma - begin);
    const size_t eq = item.find('=');
    if (item.empty() || eq == std::string::npos || eq == 0) {
      Fail(spec, "'" + item + "' is not KEY=VALUE");
    }
    const std::string key = item.substr(0, eq);
    if (!pairs.emplace(key, item.substr(eq + 1)).second) Fail(spec, key + " given twice");
    begin = comma + 1;
  }
  return pairs;
}

// The schedule without its warm-up, at s = t - W >= 0.
double BaseMultiplier(const StepSchedule& c, int64_t s) {
  switch (c.kind) {
    case ScheduleKind::kConstant:
      return 1.0;
    case ScheduleKind::kInvSqrt:
      return std::sqrt(c.t0 / (c.t0 + static_cast<double>(s)));
    case ScheduleKind::kStepDecay:
      return std::pow(c.factor, static_cast<double>(s / c.every));
    case ScheduleKind::kCosine: {
      const int64_t span = c.horizon - c.warmup;
      const double done = static_cast<double>(std::min(s, span)) / static_cast<double>(span);
      return c.min + (1.0 - c.min) * 0.5 * (1.0 + std::cos(kPi * done));
    }
  }
  return 1.0;
}

}  // namespace

const char* StepScheduleSyntax() {
  return "constant, inv-sqrt[:t0=T0], step:every=N,factor=F or cosine[:T=N][,min=M], each "
         "optionally with warmup=W, e.g. cosine:T=4000,warmup=200";
}

double StepSchedule::Multiplier(int64_t t) const {
  if (t < warmup) {
    // Linear warm-up towards the schedule's first value.
    return static_cast<double>(t + 1) / static_cast<double>(warmup) * BaseMultiplier(*this, 0);
  }
  return BaseMultiplier(*this, t - warmup);
}

std::string StepSchedule::Canonical() const {
  std::string text;
  switch (kind) {
    case ScheduleKind::kConstant:
      text = "constant:";
      break;
    case ScheduleKind::kInvSqrt:
      text = "inv-sqrt:t0=" + Exact(t0) + ",";
      break;
    case ScheduleKind::kStepDecay:
      text = "step:every=" + std::to_string(every) + ",factor=" + Exact(factor) + ",";
      break;
    case ScheduleKind::kCosine:
      text = "cosine:T=" + std::to_string(horizon) + ",min=" + Exact(min) + ",";
      break;
  }
  return text + "warmup=" + std::to_string(warmup);
}

StepSchedule ParseStepSchedule(const std::string& spec, int64_t default_horizon) {
  const size_t colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  std::map<std::string, std::string> pairs;
  if (colon != std::string::npos) pairs = ParsePairs(spec, spec.substr(colon + 1));

  StepSchedule s;
  auto take = [&](const std::string& key) -> const std::string* {
    auto it = pairs.find(key);
    return it == pairs.end() ? nullptr : &it->second;
  };
  if (const std::string* w = take("warmup")) {
    s.warmup = ParseCount(spec, "warmup", *w);
    if (s.warmup < 0) Fail(spec, "warmup=" + *w + " must be >= 0");
  }
  std::vector<std::string> keys = {"warmup"};
  if (kind == "constant") {
    s.kind = ScheduleKind::kConstant;
  } else if (kind == "inv-sqrt") {
    s.kind = ScheduleKind::kInvSqrt;
    keys.push_back("t0");
    if (const std::string* v = take("t0")) {
      s.t0 = ParseReal(spec, "t0", *v);
      if (!(s.t0 >= 1)) Fail(spec, "t0=" + *v + " must be >= 1");
    }
  } else if (kind == "step") {
    s.kind = ScheduleKind::kStepDecay;
    keys.insert(keys.end(), {"every", "factor"});
    const std::string* every = take("every");
    const std::string* factor = take("factor");
    if (every == nullptr || factor == nullptr) Fail(spec, "step needs every=N and factor=F");
    s.every = ParseCount(spec, "every", *every);
    if (s.every < 1) Fail(spec, "every=" + *every + " must be >= 1");
    s.factor = ParseReal(spec, "factor", *factor);
    if (!(s.factor > 0 && s.factor <= 1)) Fail(spec, "factor=" + *factor + " must be in (0, 1]");
  } else if (kind == "cosine") {
    s.kind = ScheduleKind::kCosine;
    keys.insert(keys.end(), {"T", "min"});
    s.horizon = default_horizon;
    if (const std::string* v = take("T")) s.horizon = ParseCount(spec, "T", *v);
    if (const std::string* v = take("min")) {
      s.min = ParseReal(spec, "min", *v);
      if (!(s.min >= 0 && s.min <= 1)) Fail(spec, "min=" + *v + " must be in [0, 1]");
    }
    if (s.horizon <= s.warmup) {
      Fail(spec, "cosine's T=" + std::to_string(s.horizon) + " must exceed warmup=" +
                     std::to_string(s.warmup) + (take("T") ? "" : " (T defaults to --iterations)"));
    }
  } else {
    Fail(spec, "unknown kind '" + kind + "'");
  }
  for (const auto& [key, value] : pairs) {
    bool known = false;
    for (const std::string& k : keys) known |= k == key;
    if (!known) Fail(spec, "'" + key + "' is not a parameter of " + kind);
  }
  return s;
}

}  // namespace starling::algorithms
