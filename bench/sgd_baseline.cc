// starling-bench-sgd: the single-process reference of `bench/run.sh time-to-accuracy`:
// plain mini-batch SGD on the whole training set, one process, one thread.
//
// Builds the centralized objective the daemons' network objective equals (node/config/run_setup.h, same
// data, problem, lambda and scaling) and runs `--steps` steps of x <- x - step * g, g a mini-batch
// gradient of `--batch` samples drawn with replacement (algorithms/problems/gradient_oracle.h, as SwarmSGD's
// local steps). Prints one JSON line:
//   {"bench":"sgd","steps":T,"seconds":..,"test_accuracy":..,"seconds_to_target":..|null,
//    "load_seconds":..}
// `seconds` counts the steps only; the test accuracy is checked every T/50 steps (outside the
// timed part) to find when `--target` is first reached.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>

#include "algorithms/problems/gradient_oracle.h"
#include "node/config/run_config.h"
#include "node/config/run_setup.h"

namespace {

using BenchClock = std::chrono::steady_clock;

double Since(BenchClock::time_point t) {
  return std::chrono::duration<double>(BenchClock::now() - t).count();
}

int Usage() {
  std::fprintf(stderr,
               "usage: starling-bench-sgd --data TRAIN --test-data TEST --steps T [--batch 32]\n"
               "         [--step 0.1] [--target ACCURACY] [--problem multinomial] [--l2 1e-4]\n"
               "         [--format idx] [--seed 1]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  starling::node::RunConfig config;
  config.algorithm = "swarmsgd";
  config.problem = "multinomial";
  config.l2 = 1e-4;
  config.format = "idx";
  config.nodes = 1;
  config.topology = "complete";
  config.batch = 32;
  config.step = 0.1;
  int64_t steps = 0;
  double target = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return Usage();
    const std::string value = argv[++i];
    if (arg == "--data") {
      config.data = value;
    } else if (arg == "--test-data") {
      config.test_data = value;
    } else if (arg == "--steps") {
      steps = std::atoll(value.c_str());
    } else if (arg == "--batch") {
      config.batch = std::atoi(value.c_str());
    } else if (arg == "--step") {
      config.step = std::atof(value.c_str());
    } else if (arg == "--target") {
      target = std::atof(value.c_str());
    } else if (arg == "--problem") {
      config.problem = value;
    } else if (arg == "--l2") {
      config.l2 = std::atof(value.c_str());
    } else if (arg == "--format") {
      config.format = value;
    } else if (arg == "--seed") {
      config.seed = std::strtoull(value.c_str(), nullptr, 10);
    } else {
      return Usage();
    }
  }
  if (config.data.empty() || config.test_data.empty() || steps <= 0 || config.batch <= 0 ||
      !(config.step > 0)) {
    return Usage();
  }
  try {
    const auto load_start = BenchClock::now();
    starling::node::BuildScope scope;
    scope.node_problems = false;  // the centralized objective is all this needs
    const starling::node::RunSetup setup = starling::node::BuildRunSetup(config, scope);
    const double load_seconds = Since(load_start);
    const starling::algorithms::Problem& problem = *setup.global;
    starling::algorithms::GradientOracle oracle(&problem, config.batch, config.seed);
    starling::Vec x = starling::Vec::Zero(problem.dim()), g;
    const int64_t check_every = std::max<int64_t>(1, steps / 50);
    double seconds = 0;
    std::optional<double> to_target;
    std::optional<double> accuracy;
    for (int64_t done = 0; done < steps;) {
      const int64_t n = std::min(check_every, steps - done);
      const auto start = BenchClock::now();
      for (int64_t k = 0; k < n; ++k) {
        oracle.Compute(x, &g);
        x.noalias() -= config.step * g;
      }
      seconds += Since(start);
      done += n;
      accuracy = setup.test->Accuracy(x);
      if (target > 0 && !to_target && accuracy && *accuracy >= target) to_target = seconds;
    }
    std::printf("{\"bench\":\"sgd\",\"steps\":%lld,\"batch\":%d,\"step\":%g,\"seconds\":%.3f,"
                "\"test_accuracy\":%.4f,\"seconds_to_target\":%s,\"load_seconds\":%.2f}\n",
                static_cast<long long>(steps), config.batch, config.step, seconds,
                accuracy ? *accuracy : -1.0,
                to_target ? std::to_string(*to_target).c_str() : "null", load_seconds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "starling-bench-sgd: %s\n", e.what());
    return 1;
  }
  return 0;
}
