// The optimum f* against which the monitor reports its relative gap: a number from the run's
// options, or ('auto') the centralized reference solve over the global problem. A solve runs on a
// thread of its own while telemetry flows in, so that the monitor reports progress from the
// start and the solve's time overlaps the run's. A solution found in the reference cache
// (node/config/reference_cache.h) is taken at once instead, and a fresh solve is stored there.
#pragma once

#include <atomic>
#include <chrono>
#include <future>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>

#include "algorithms/problems/problem.h"
#include "algorithms/problems/reference_solver.h"
#include "node/config/run_config.h"
#include "node/config/run_setup.h"

namespace starling::node {

class BackgroundReference {
 public:
  // For --reference-optimum auto, looks the solve of `global` to gradient norm `grad_tol` up in
  // the reference cache (a warning about an unusable entry goes to `out`); if it is not there,
  // starts solving on a thread that is detached and shares ownership of `global`, so that a
  // monitor stopped early never waits for a long solve. For a number, f* is that number
  // (std::invalid_argument if it is not a positive one); for none, there is no f*.
  // setup.test, if any, must outlive this object (the solution's test accuracy is cached too).
  BackgroundReference(const RunConfig& config, const RunSetup& setup,
                      std::shared_ptr<algorithms::Problem> global, double grad_tol,
                      std::ostream& out);

  // Takes the solution if the solve has finished, without waiting. Prints f* (or the solve's
  // failure) to `out` when it takes one.
  void Poll(std::ostream& out);

  // Waits for the solve until `deadline` or *stop, saying on `out` that it waits and, unless
  // stopped, that it gave up; then takes the solution as Poll does. Returns at once with no
  // solve pending.
  void Wait(std::chrono::steady_clock::time_point deadline, const std::atomic<bool>* stop,
            std::ostream& out);

  // A solve is running whose solution has not been taken.
  bool pending() const { return solve_.valid(); }
  // The solution is being computed here (no cached one): the first run with these data and
  // options pays for the solve, beside the nodes' run.
  bool solving() const { return solving_; }
  // Where a fresh solution is stored for later runs.
  const std::string& cache_dir() const { return cache_dir_; }
  const std::optional<double>& f_star() const { return f_star_; }
  // The solve's solution, once taken (none for a given number).
  const std::optional<algorithms::ReferenceSolution>& solution() const { return solution_; }

 private:
  bool Ready() const;
  void Take(std::ostream& out);

  std::future<algorithms::ReferenceSolution> solve_;
  std::string cache_dir_, cache_key_;  // empty key: nothing to store
  std::string cached_from_;            // the entry the solution came from, if any
  bool solving_ = false;
  std::chrono::steady_clock::time_point solve_start_;  // to say how long the solve took
  const algorithms::Problem* test_ = nullptr;
  std::optional<double> f_star_;
  std::optional<algorithms::ReferenceSolution> solution_;
};

}  // namespace starling::node
