// Method parameters, declared once next to each method's code.
//
// A method keeps its own parameters in a plain struct whose member initializers are the defaults,
// and declares each member once in a ParamTable of that struct: the name as on the command line,
// the help text and the accepted range, plus an optional cross-check of the whole struct.
// Everything else is derived from those tables: node/config makes the command-line and
// config-file options and --help from them, checks the values naming the option, and writes the
// chosen method's values into the run id; the method's factory reads its struct back with Read().
//
// No Boost here (algorithms/ depends on Eigen and the standard library only): a declaration
// describes its type with ParamType, and node/config/run_options.cc binds it to Boost.
//
// Threading: tables are built once (function-local statics) and then only read; ParamValues is a
// plain value type.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace starling::algorithms {

// A parameter's value outside its method's struct: integers of every width as int64_t.
using ParamValue = std::variant<int64_t, double, std::string>;

enum class ParamType { kInt, kInt64, kDouble, kString };

// A value as the run id's canonical text holds it: doubles exactly (%a), integers in decimal.
std::string CanonicalText(const ParamValue& value);
// A value as a user would type it, for error messages.
std::string DisplayText(const ParamValue& value);
// Throws std::invalid_argument "--NAME VALUE: WHAT", the form of every parameter error.
[[noreturn]] void FailParam(const std::string& name, const ParamValue& value,
                            const std::string& what);

// The method parameters of a run by command-line name (without "--"). A name it does not hold
// takes the default its declaration gives. Holds any name: which names exist is the tables'
// business (node/config refuses undeclared ones).
class ParamValues {
 public:
  void Set(const std::string& name, ParamValue value) { values_[name] = std::move(value); }
  // Any integer, floating-point or string-like value.
  template <typename T>
  void Set(const std::string& name, const T& value) {
    if constexpr (std::is_integral_v<T>) {
      Set(name, ParamValue(static_cast<int64_t>(value)));
    } else if constexpr (std::is_floating_point_v<T>) {
      Set(name, ParamValue(static_cast<double>(value)));
    } else {
      Set(name, ParamValue(std::string(value)));
    }
  }
  // Null if `name` is not set.
  const ParamValue* Find(const std::string& name) const;
  // The value set for `name` as T (an integer, double or std::string); throws
  // std::invalid_argument if it is not set or has another type.
  template <typename T>
  T Get(const std::string& name) const;
  const std::map<std::string, ParamValue>& values() const { return values_; }

 private:
  std::map<std::string, ParamValue> values_;
};

// The values a numeric parameter accepts. NaN is outside every range but Any().
class Range {
 public:
  static Range Any() { return Range(Bound::kNone, 0, Bound::kNone, 0); }
  static Range Positive() { return Range(Bound::kOpen, 0, Bound::kNone, 0); }       // > 0
  static Range NonNegative() { return Range(Bound::kClosed, 0, Bound::kNone, 0); }  // >= 0
  static Range AtLeast(double lo) { return Range(Bound::kClosed, lo, Bound::kNone, 0); }
  static Range Open(double lo, double hi) { return Range(Bound::kOpen, lo, Bound::kOpen, hi); }
  static Range OpenClosed(double lo, double hi) {
    return Range(Bound::kOpen, lo, Bound::kClosed, hi);
  }
  static Range ClosedOpen(double lo, double hi) {
    return Range(Bound::kClosed, lo, Bound::kOpen, hi);
  }

  bool Contains(double v) const;
  // "must be > 0", "must be in (0, 1]", ...; empty for Any().
  std::string Describe() const;

 private:
  enum class Bound { kNone, kOpen, kClosed };
  Range(Bound lo_bound, double lo, Bound hi_bound, double hi)
      : lo_bound_(lo_bound), hi_bound_(hi_bound), lo_(lo), hi_(hi) {}
  Bound lo_bound_, hi_bound_;
  double lo_, hi_;
};

struct ParamDecl {
  std::string name;  // as on the command line, without "--"
  ParamType type;
  ParamValue default_value;
  std::string help;
  Range range;
  // False for a parameter added to a method after runs of it existed: the run id holds it only
  // when it differs from its default, so that those runs keep their ids (and checkpoints).
  bool in_run_id_at_default = true;
};

// Facts about the run that a method's cross-check may need besides its own parameters.
struct ParamContext {
  int64_t iterations = 0;  // --iterations; 0 where unknown (an algorithm built by hand)
};

// A method's declarations, without their struct: what the registry and node/config see.
class ParamSet {
 public:
  explicit ParamSet(std::string title) : title_(std::move(title)) {}
  virtual ~ParamSet() = default;

  // The group's caption in --help ("OPTRA", "Network-DANE/SVRG/SARAH").
  const std::string& title() const { return title_; }
  const std::vector<ParamDecl>& decls() const { return decls_; }
  // The value `values` holds for `decl`, or its default.
  static const ParamValue& ValueOf(const ParamDecl& decl, const ParamValues& values);
  // The same, as the declared type (an integer given for a double parameter becomes a double),
  // so that the run id of a value does not depend on how a caller wrote it. Throws like
  // CheckValues for a value of an unusable type.
  static ParamValue TypedValueOf(const ParamDecl& decl, const ParamValues& values);
  // Throws std::invalid_argument naming the option ("--rho 1.5: must be in (0, 1)") if a value
  // has the wrong type or lies outside its range.
  virtual void CheckValues(const ParamValues& values) const = 0;
  // CheckValues, then the method's cross-check ("--optra-inner 3: must be even"); for the method
  // a run uses.
  virtual void Validate(const ParamValues& values, const ParamContext& context) const = 0;

 protected:
  std::vector<ParamDecl> decls_;

 private:
  std::string title_;
};

namespace params_internal {

template <typename T>
constexpr ParamType TypeOf() {
  if constexpr (std::is_same_v<T, int>) {
    return ParamType::kInt;
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return ParamType::kInt64;
  } else if constexpr (std::is_same_v<T, double>) {
    return ParamType::kDouble;
  } else {
    static_assert(std::is_same_v<T, std::string>, "parameters are int, int64_t, double or string");
    return ParamType::kString;
  }
}

template <typename T>
ParamValue ToValue(const T& v) {
  if constexpr (std::is_integral_v<T>) {
    return ParamValue(static_cast<int64_t>(v));
  } else {
    return ParamValue(v);
  }
}

// `value` as a T, checked against `range`; throws via FailParam naming `name`.
int64_t AsInteger(const std::string& name, const ParamValue& value, int64_t lo, int64_t hi);
double AsDouble(const std::string& name, const ParamValue& value);
const std::string& AsString(const std::string& name, const ParamValue& value);
void CheckRange(const std::string& name, const ParamValue& value, double v, const Range& range);

template <typename T>
T As(const std::string& name, const ParamValue& value, const Range& range) {
  if constexpr (std::is_integral_v<T>) {
    const T v = static_cast<T>(
        AsInteger(name, value, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
    CheckRange(name, value, static_cast<double>(v), range);
    return v;
  } else if constexpr (std::is_same_v<T, double>) {
    const double v = AsDouble(name, value);
    CheckRange(name, value, v, range);
    return v;
  } else {
    return AsString(name, value);
  }
}

}  // namespace params_internal

template <typename T>
T ParamValues::Get(const std::string& name) const {
  const ParamValue* value = Find(name);
  if (value == nullptr) FailParam(name, ParamValue(std::string("?")), "not set");
  return params_internal::As<T>(name, *value, Range::Any());
}

// The declarations of the parameters struct P (default-constructible; its member initializers
// are the defaults). Built once by its method, e.g.
//   ParamTable<OptraParams>("OPTRA")
//       .Add("optra-nu", &OptraParams::nu, "OPTRA: nu ...", Range::Positive())
//       .CrossCheck([](const OptraParams& p, const ParamContext&) { ... FailParam(...) ... });
template <typename P>
class ParamTable : public ParamSet {
 public:
  using Check = std::function<void(const P&, const ParamContext&)>;

  explicit ParamTable(std::string title) : ParamSet(std::move(title)) {}

  template <typename T>
  ParamTable& Add(std::string name, T P::*member, std::string help, Range range = Range::Any()) {
    decls_.push_back(ParamDecl{name, params_internal::TypeOf<T>(),
                               params_internal::ToValue(P{}.*member), std::move(help), range});
    setters_.push_back([name, member, range](P* p, const ParamValue& value) {
      p->*member = params_internal::As<T>(name, value, range);
    });
    return *this;
  }

  // The parameter added last enters the run id only when it is not at its default
  // (ParamDecl::in_run_id_at_default).
  ParamTable& OnlySetInRunId() {
    decls_.back().in_run_id_at_default = false;
    return *this;
  }

  // A check of the whole struct, run after the ranges; it throws through FailParam.
  ParamTable& CrossCheck(Check check) {
    check_ = std::move(check);
    return *this;
  }

  // P with each declared member taken from `values` (or left at its default), checked as
  // Validate() does.
  P Read(const ParamValues& values, const ParamContext& context = {}) const {
    P p = ReadValues(values);
    if (check_) check_(p, context);
    return p;
  }

  void CheckValues(const ParamValues& values) const override { ReadValues(values); }
  void Validate(const ParamValues& values, const ParamContext& context) const override {
    Read(values, context);
  }

 private:
  P ReadValues(const ParamValues& values) const {
    P p{};
    for (size_t k = 0; k < decls_.size(); ++k) setters_[k](&p, ValueOf(decls_[k], values));
    return p;
  }

  std::vector<std::function<void(P*, const ParamValue&)>> setters_;
  Check check_;
};

// Registry helpers for a list of methods M (each with `const char* name` and `const ParamSet*
// params`): the one named `name` (null if none), their names as "a, b, c" for --help, and their
// parameter tables, each once (a family shares one) in list order.
template <typename M>
const M* FindMethod(const std::vector<const M*>& methods, const std::string& name) {
  for (const M* m : methods) {
    if (name == m->name) return m;
  }
  return nullptr;
}

template <typename M>
std::string NamesOf(const std::vector<const M*>& methods) {
  std::string names;
  for (const M* m : methods) names += (names.empty() ? "" : ", ") + std::string(m->name);
  return names;
}

template <typename M>
std::vector<const ParamSet*> ParamSetsOf(const std::vector<const M*>& methods) {
  std::vector<const ParamSet*> sets;
  for (const M* m : methods) {
    bool seen = m->params == nullptr;
    for (const ParamSet* set : sets) seen |= set == m->params;
    if (!seen) sets.push_back(m->params);
  }
  return sets;
}

}  // namespace starling::algorithms
