#include "algorithms/params.h"

#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>

namespace starling::algorithms {

std::string CanonicalText(const ParamValue& value) {
  if (const auto* d = std::get_if<double>(&value)) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%a", *d);
    return buf;
  }
  if (const auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  return std::get<std::string>(value);
}

std::string DisplayText(const ParamValue& value) {
  if (const auto* d = std::get_if<double>(&value)) {
    std::ostringstream s;
    s << *d;
    return s.str();
  }
  return CanonicalText(value);
}

void FailParam(const std::string& name, const ParamValue& value, const std::string& what) {
  throw std::invalid_argument("--" + name + " " + DisplayText(value) + ": " + what);
}

const ParamValue* ParamValues::Find(const std::string& name) const {
  const auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

bool Range::Contains(double v) const {
  if (lo_bound_ == Bound::kNone && hi_bound_ == Bound::kNone) return true;
  if (std::isnan(v)) return false;
  if (lo_bound_ == Bound::kOpen && !(v > lo_)) return false;
  if (lo_bound_ == Bound::kClosed && !(v >= lo_)) return false;
  if (hi_bound_ == Bound::kOpen && !(v < hi_)) return false;
  if (hi_bound_ == Bound::kClosed && !(v <= hi_)) return false;
  return true;
}

std::string Range::Describe() const {
  auto number = [](double v) { return DisplayText(ParamValue(v)); };
  if (hi_bound_ == Bound::kNone) {
    if (lo_bound_ == Bound::kNone) return "";
    return std::string("must be ") + (lo_bound_ == Bound::kOpen ? "> " : ">= ") + number(lo_);
  }
  if (lo_bound_ == Bound::kNone) {
    return std::string("must be ") + (hi_bound_ == Bound::kOpen ? "< " : "<= ") + number(hi_);
  }
  return "must be in " + std::string(lo_bound_ == Bound::kOpen ? "(" : "[") + number(lo_) + ", " +
         number(hi_) + (hi_bound_ == Bound::kOpen ? ")" : "]");
}

const ParamValue& ParamSet::ValueOf(const ParamDecl& decl, const ParamValues& values) {
  const ParamValue* v = values.Find(decl.name);
  return v != nullptr ? *v : decl.default_value;
}

ParamValue ParamSet::TypedValueOf(const ParamDecl& decl, const ParamValues& values) {
  const ParamValue& value = ValueOf(decl, values);
  if (decl.type == ParamType::kDouble) return params_internal::AsDouble(decl.name, value);
  return value;
}

namespace params_internal {

int64_t AsInteger(const std::string& name, const ParamValue& value, int64_t lo, int64_t hi) {
  const auto* i = std::get_if<int64_t>(&value);
  if (i == nullptr) FailParam(name, value, "must be an integer");
  if (*i < lo || *i > hi) FailParam(name, value, "out of range for its type");
  return *i;
}

double AsDouble(const std::string& name, const ParamValue& value) {
  if (const auto* d = std::get_if<double>(&value)) return *d;
  if (const auto* i = std::get_if<int64_t>(&value)) return static_cast<double>(*i);
  FailParam(name, value, "must be a number");
}

const std::string& AsString(const std::string& name, const ParamValue& value) {
  const auto* s = std::get_if<std::string>(&value);
  if (s == nullptr) FailParam(name, value, "must be a string");
  return *s;
}

void CheckRange(const std::string& name, const ParamValue& value, double v, const Range& range) {
  if (!range.Contains(v)) FailParam(name, value, range.Describe());
}

}  // namespace params_internal

}  // namespace starling::algorithms
