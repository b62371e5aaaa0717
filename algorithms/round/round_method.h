// The registry of round-based methods: what the factory, the configuration and the drivers need
// to know about a method, declared next to its code.
//
// A method's .cc file defines `const RoundMethod& FooMethod()` (its name, how to build it, which
// run-wide constants it needs, its ParamTable), and registry.cc lists it with one line.
// MakeRoundAlgorithm, --help, the options, their validation and the run id all go through
// RoundMethods(). (The diffusion of topology inference is still named where it is treated
// apart: it reads no data, and its daemon publishes samples for the probe.)
//
// Adding a method Foo (optra.h/.cc is a complete example):
//   1. foo.h: the class (a RoundAlgorithm) and, if it has parameters of its own, a struct
//      FooParams with their defaults as member initializers and
//      `const ParamTable<FooParams>& FooParamTable();`.
//   2. foo.cc: the class; FooParamTable() with one Add("foo-bar", &FooParams::bar, "help",
//      Range::...) per parameter and a CrossCheck if values constrain each other; a factory
//      that reads FooParamTable().Read(options.params) and builds the class; and
//      `const RoundMethod& FooMethod()` naming it, its default step and the constants it needs.
//   3. registry.cc: one X(Foo) line. CMake picks up foo.cc by its folder's glob.
// Its options then appear in every binary's --help, in config files, in ValidateRunConfig and,
// for runs of Foo, in the run id.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "algorithms/node_setup.h"
#include "algorithms/params.h"
#include "algorithms/round/round_algorithm.h"

namespace starling::algorithms {

struct RoundMethod {
  // Builds the node's algorithm. The caller (MakeRoundAlgorithm) has checked the NodeSetup's
  // problem and starting point when needs_problem. Throws std::invalid_argument naming the
  // option on a bad parameter.
  using Factory = std::unique_ptr<RoundAlgorithm> (*)(const RoundOptions&, const NodeSetup&);

  // What is known to be out of range in a run's options (RoundWarnings).
  using WarningsOf = std::vector<std::string> (*)(const RoundOptions&);

  RoundMethod(const char* name, Factory make) : name(name), make(make) {}

  // Builders, so that a method's definition reads as a sentence.
  RoundMethod DefaultStep(double factor) const {
    return With(&RoundMethod::default_step_factor, factor);
  }
  RoundMethod SchedulesStep() const { return With(&RoundMethod::takes_step_schedule, true); }
  RoundMethod SamplesBlocks() const { return With(&RoundMethod::takes_block_cyclic, true); }
  RoundMethod UsesSmoothness() const { return With(&RoundMethod::needs_smoothness, true); }
  RoundMethod UsesLaplacianSpectrum() const {
    return With(&RoundMethod::needs_laplacian_spectrum, true);
  }
  RoundMethod UsesLazyFactor() const { return With(&RoundMethod::needs_lazy_factor, true); }
  RoundMethod WithoutProblem() const { return With(&RoundMethod::needs_problem, false); }
  RoundMethod Params(const ParamSet& set) const { return With(&RoundMethod::params, &set); }
  RoundMethod Warnings(WarningsOf warn) const { return With(&RoundMethod::warnings, warn); }

  const char* name;  // as --algorithm takes it
  Factory make;
  // The default step as a multiple of 1/L (ResolveStep); 0 if the method takes no --step.
  double default_step_factor = 0.0;
  // Takes --step-schedule (RoundOptions::step_schedule): the stochastic methods.
  bool takes_step_schedule = false;
  // Samples by the block-cyclic schedule of NodeSetup::block_rows (--block-cyclic); the drivers
  // refuse --block-cyclic for the other methods, which would ignore it.
  bool takes_block_cyclic = false;
  // Uses the smoothness bound L even when --step is given (the drivers then always compute it).
  bool needs_smoothness = false;
  // Needs RoundOptions::laplacian_lambda2/_max, or tracker_lazy_c.
  bool needs_laplacian_spectrum = false;
  bool needs_lazy_factor = false;
  // False for a method without an objective (the diffusion of topology inference).
  bool needs_problem = true;
  // The method's own parameters; one table may serve a family (Network-DANE/SVRG/SARAH). Null if
  // it has none.
  const ParamSet* params = nullptr;
  // Null if the method has no known-bad values to warn about.
  WarningsOf warnings = nullptr;

 private:
  template <typename T, typename V>
  RoundMethod With(T RoundMethod::*field, V value) const {
    RoundMethod m = *this;
    m.*field = value;
    return m;
  }
};

// Every round-based method, in the order --help lists them (registry.cc).
const std::vector<const RoundMethod*>& RoundMethods();
// Null if `name` is none of them.
const RoundMethod* FindRoundMethod(const std::string& name);
// The methods' parameter tables, each once (a family shares one), in registry order.
std::vector<const ParamSet*> RoundParamSets();

}  // namespace starling::algorithms
