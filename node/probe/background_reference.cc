#include "node/probe/background_reference.h"

#include <exception>
#include <iomanip>
#include <ostream>
#include <thread>

#include "node/config/reference_cache.h"
#include "node/sim/sim_runner.h"

namespace starling::node {

BackgroundReference::BackgroundReference(const RunConfig& config, const RunSetup& setup,
                                         std::shared_ptr<algorithms::Problem> global,
                                         double grad_tol, std::ostream& out)
    : test_(setup.test.get()) {
  if (config.reference_optimum == "auto") {
    cache_dir_ = ReferenceCacheDir();
    cache_key_ = ReferenceKeyText(config, setup, *global, grad_tol);
    if (std::optional<CachedReference> hit = LoadCachedReference(cache_dir_, cache_key_, out)) {
      cached_from_ = ReferenceEntryPath(cache_dir_, cache_key_);
      std::promise<algorithms::ReferenceSolution> ready;
      ready.set_value(std::move(hit->solution));
      solve_ = ready.get_future();
      return;
    }
    algorithms::ReferenceOptions ref_options;
    ref_options.grad_tol = grad_tol;
    std::packaged_task<algorithms::ReferenceSolution()> task(
        [global, ref_options] { return algorithms::SolveReference(*global, ref_options); });
    solve_ = task.get_future();
    solving_ = true;
    solve_start_ = std::chrono::steady_clock::now();
    std::thread(std::move(task)).detach();
  } else if (!config.reference_optimum.empty()) {
    f_star_ = ResolveReferenceOptimum(config, setup, nullptr);
  }
}

bool BackgroundReference::Ready() const {
  return solve_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

void BackgroundReference::Poll(std::ostream& out) {
  if (!solve_.valid() || !Ready()) return;
  Take(out);
}

void BackgroundReference::Wait(std::chrono::steady_clock::time_point deadline,
                               const std::atomic<bool>* stop, std::ostream& out) {
  if (!solve_.valid()) return;
  if (!stop->load() && !Ready()) {
    out << "monitor: every node finished; waiting for the centralized reference solve" << std::endl;
  }
  while (!stop->load() && std::chrono::steady_clock::now() < deadline &&
         solve_.wait_for(std::chrono::milliseconds(200)) != std::future_status::ready) {
  }
  if (!Ready()) {
    if (!stop->load()) {
      out << "monitor: the reference solve did not finish within --timeout-s; reporting "
             "without it"
          << std::endl;
    }
    return;
  }
  Take(out);
}

void BackgroundReference::Take(std::ostream& out) {
  try {
    solution_ = solve_.get();
  } catch (const std::exception& e) {
    out << "monitor: the centralized reference solve failed: " << e.what() << std::endl;
    return;
  }
  f_star_ = solution_->value;
  out << "reference optimum: f* = " << std::setprecision(15) << *f_star_ << " (gradient norm "
      << std::setprecision(3) << solution_->grad_norm;
  if (!cached_from_.empty()) {
    out << ", from the reference cache: " << cached_from_ << ")" << std::endl;
    return;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - solve_start_).count();
  out << ", solved in " << std::fixed << std::setprecision(1) << seconds << std::defaultfloat
      << " s beside the run)" << std::endl;
  CachedReference entry{*solution_, std::nullopt};
  if (test_ != nullptr) entry.test_accuracy = test_->Accuracy(solution_->x);
  if (StoreCachedReference(cache_dir_, cache_key_, entry, out)) {
    out << "reference optimum stored in the reference cache: "
        << ReferenceEntryPath(cache_dir_, cache_key_) << std::endl;
  }
}

}  // namespace starling::node
