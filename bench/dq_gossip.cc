// Quantized gossip: DGD, gradient tracking and EXTRA on the Network-DANE synthetic least squares
// (20 nodes, ER(0.3), Metropolis-Hastings W, x0 ~ U[0,1]) with gossip messages of R bits per
// coordinate (--gossip-bits), naive Q(z) or differential Q(z - zh) (algorithms/round/
// quantized_gossip.h), through the simulator classes starling-sim uses.
//
// The error of a run is e_t = ||X_t - X_fp||_F / ||X_0 - X_fp||_F over the N x d iterates, where
// X_fp is the fixed point of the same method unquantized, run until it stops moving (for gradient
// tracking and EXTRA every row is x*; DGD's rows carry its O(step) bias). For each method and
// R = 1..8 it prints e_T and the contraction factor (e_t / e_0)^(1/t) at the first t with
// e_t <= --target (or "-" if never reached), unquantized, differential and naive.
// Usage: starling-bench-dq-gossip --data CSV [--iterations T] [--target E] [--curves FILE]
//   CSV: bench/tools/dane_synthetic.py's output; FILE: per-iteration CSV for the plot
//   (method,quantizer,bits,iteration,total_bits,error).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "node/config/run_config.h"
#include "node/config/run_setup.h"
#include "node/sim/round_simulator.h"

using starling::Vec;
namespace node = starling::node;
namespace algorithms = starling::algorithms;

namespace {

struct Result {
  double final_error = NAN;
  double factor = NAN;  // NAN if the target was not reached
  int reached_at = -1;
  double bits_at = NAN;  // total bits sent when the target was reached
  bool diverged = false;
};

Eigen::MatrixXd Iterates(const node::RoundSimulator& sim) {
  Eigen::MatrixXd x(sim.num_nodes(), sim.node(0).Model().size());
  for (int i = 0; i < sim.num_nodes(); ++i) x.row(i) = sim.node(i).Model().transpose();
  return x;
}

algorithms::RoundOptions OptionsFor(const node::RunConfig& config, const node::RunSetup& setup,
                                    int bits, const std::string& quantizer) {
  node::RunConfig c = config;
  c.params.Set("gossip-bits", bits);
  c.params.Set("gossip-quantizer", quantizer);
  return node::RoundOptionsFor(c, setup);
}

// The unquantized method run until an iteration moves X by less than 1e-15 relative.
Eigen::MatrixXd FixedPoint(const node::RunConfig& config, const node::RunSetup& setup) {
  node::RoundSimulator sim(setup.nodes, OptionsFor(config, setup, 0, "differential"));
  Eigen::MatrixXd x = Iterates(sim);
  for (int t = 0; t < 50000; ++t) {
    sim.Step();
    Eigen::MatrixXd next = Iterates(sim);
    const double moved = (next - x).norm();
    x.swap(next);
    if (moved <= 1e-15 * x.norm()) break;
  }
  return x;
}

Result Run(const node::RunConfig& config, const node::RunSetup& setup, const Eigen::MatrixXd& fp,
           int bits, const std::string& quantizer, int iterations, double target, FILE* curves) {
  node::RoundSimulator sim(setup.nodes, OptionsFor(config, setup, bits, quantizer));
  const double e0 = (Iterates(sim) - fp).norm();
  Result r;
  const std::string q = bits == 0 ? "none" : quantizer;
  for (int t = 0; t <= iterations; ++t) {
    if (t > 0) sim.Step();
    const double e = (Iterates(sim) - fp).norm() / e0;
    if (curves != nullptr) {
      std::fprintf(curves, "%s,%s,%d,%d,%lld,%.6e\n", config.algorithm.c_str(), q.c_str(), bits, t,
                   static_cast<long long>(sim.bytes_sent()) * 8, e);
    }
    if (!std::isfinite(e) || e > 1e6) {
      r.diverged = true;
      break;
    }
    if (r.reached_at < 0 && e <= target && t > 0) {
      r.reached_at = t;
      r.factor = std::pow(e, 1.0 / t);
      r.bits_at = static_cast<double>(sim.bytes_sent()) * 8;
    }
    r.final_error = e;
  }
  return r;
}

std::string Factor(const Result& r) {
  if (r.diverged) return "diverged";
  if (r.reached_at < 0) return "-";
  char s[64];
  std::snprintf(s, sizeof s, "%.4f (t=%d)", r.factor, r.reached_at);
  return s;
}

std::string Bits(const Result& r) {
  if (r.diverged || r.reached_at < 0) return "-";
  char s[32];
  std::snprintf(s, sizeof s, "%.3g", r.bits_at / 1e6);
  return s;
}

std::string Error(const Result& r) {
  if (r.diverged) return "diverged";
  char s[32];
  std::snprintf(s, sizeof s, "%.2e", r.final_error);
  return s;
}

void Usage() {
  std::fprintf(stderr,
               "usage: starling-bench-dq-gossip --data CSV [--iterations T] [--target E] "
               "[--curves FILE]\n");
}

}  // namespace

int main(int argc, char** argv) {
  node::RunConfig config;
  config.problem = "least-squares";
  config.l2 = 0;
  config.format = "csv";
  config.partition = "column:0";
  config.label_column = 1;
  config.loss_scale = 0.001;
  config.nodes = 20;
  config.x0 = "uniform";
  config.seed = 1;
  config.topology = "er:0.3";
  int iterations = 400;
  double target = 1e-8;
  std::string curves_path;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) {
      Usage();
      return 2;
    }
    const char* value = argv[++i];
    if (arg == "--data") {
      config.data = value;
    } else if (arg == "--iterations") {
      iterations = std::atoi(value);
    } else if (arg == "--target") {
      target = std::atof(value);
    } else if (arg == "--curves") {
      curves_path = value;
    } else {
      Usage();
      return 2;
    }
  }
  if (config.data.empty() || iterations < 1 || !(target > 0)) {
    Usage();
    return 2;
  }
  FILE* curves = nullptr;
  if (!curves_path.empty()) {
    curves = std::fopen(curves_path.c_str(), "w");
    if (curves == nullptr) {
      std::fprintf(stderr, "starling-bench-dq-gossip: cannot write --curves %s\n",
                   curves_path.c_str());
      return 1;
    }
    std::fprintf(curves, "method,quantizer,bits,iteration,total_bits,error\n");
  }
  try {
    for (const char* method : {"dgd", "gradient-tracking", "extra"}) {
      config.algorithm = method;
      const node::RunSetup setup = node::BuildRunSetup(config);
      const Eigen::MatrixXd fp = FixedPoint(config, setup);
      const Result exact = Run(config, setup, fp, 0, "differential", iterations, target, curves);
      const double step = algorithms::ResolveStep(OptionsFor(config, setup, 0, "naive"));
      std::printf(
          "\n%s, step %.4g (the default), T = %d; e_t = ||X_t - X_fp||_F / ||X_0 - X_fp||_F; "
          "factor = e_t^(1/t) at the first t with e_t <= %.0e; Mbit = total bits sent by then\n\n",
          method, step, iterations, target);
      std::printf(
          "| R | differential: factor | e_T | Mbit | naive: factor | e_T |\n"
          "|---|---|---|---|---|---|\n");
      std::printf("| unquantized (64) | %s | %s | %s | | |\n", Factor(exact).c_str(),
                  Error(exact).c_str(), Bits(exact).c_str());
      for (int bits = 1; bits <= 8; ++bits) {
        const Result d = Run(config, setup, fp, bits, "differential", iterations, target, curves);
        const Result n = Run(config, setup, fp, bits, "naive", iterations, target, curves);
        std::printf("| %d | %s | %s | %s | %s | %s |\n", bits, Factor(d).c_str(), Error(d).c_str(),
                    Bits(d).c_str(), Factor(n).c_str(), Error(n).c_str());
      }
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "starling-bench-dq-gossip: %s\n", e.what());
    return 1;
  }
  if (curves != nullptr) std::fclose(curves);
  return 0;
}
