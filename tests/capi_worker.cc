// A tiny training program over the C ABI (capi/starling.h), for capi_test: node i minimises
// f_i(x) = (a/2) ||x - c||^2 with its own a and c by plain gradient steps of size
// lr0 / (1 + t / 50) on its own model buffer, and Starling averages the models (SwarmSGD).
// The network's optimum is sum_i a_i c_i / sum_i a_i.
//
// With LR0 = 0 the model starts at c and only averages; with LR0 < 0 it starts at c and each
// step adds |LR0| to every entry.
// With a round-based --algorithm (dgd, dpsgd, gradient-tracking) among the options, the node
// asks for gradients instead: the worker gives a (x - c) at each iterate (LR0 unused; KILL_AT
// counts gradients; KILL_AT < 0: starling_stop after -KILL_AT gradients, while the node waits
// for the next one, as Ctrl-C in a training loop would).
// Usage: capi_worker OUT A C0,C1,... LR0 DTYPE(32|64) [KILL_AT] -- STARLINGD_OPTIONS...
// Writes the final model to OUT (one value per line) and the counters to stdout; exits 0, or 1
// with the library's message on stderr. KILL_AT > 0: raise SIGKILL on itself after that many
// steps (a peer that dies without a word).
#include <signal.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "capi/starling.h"

namespace {

int Die(const char* what, starling_node* node) {
  std::fprintf(stderr, "capi_worker: %s: %s\n", what, starling_last_error());
  starling_destroy(node);
  return 1;
}

template <typename T>
int Train(starling_node* node, std::vector<T>* x, double a, const std::vector<double>& c,
          double lr0, long kill_at) {
  if (starling_set_model(node, x->data(), x->size(),
                         sizeof(T) == 4 ? STARLING_FLOAT32 : STARLING_FLOAT64) != 0) {
    return Die("set_model", node);
  }
  if (starling_start(node) != 0) return Die("start", node);
  double norm = 0;  // of the buffer after start: a resumed node's holds the checkpoint's model
  for (T v : *x) norm += static_cast<double>(v) * v;
  std::printf("start_norm %.6g\n", std::sqrt(norm));
  std::fflush(stdout);
  starling_counters counters;
  starling_get_counters(node, &counters);
  long updates = 0;  // local steps applied to the buffer (the last one, refused, included)
  for (long t = counters.local_steps;; ++t) {
    if (kill_at > 0 && t == kill_at) raise(SIGKILL);
    const double lr = lr0 / (1.0 + static_cast<double>(t) / 50.0);
    for (size_t k = 0; k < x->size(); ++k) {
      // LR0 < 0: a step adds |LR0| to every entry (the test of the hand-over's bookkeeping).
      (*x)[k] = static_cast<T>(lr0 < 0 ? (*x)[k] - lr0 : (*x)[k] - lr * a * ((*x)[k] - c[k]));
    }
    ++updates;
    int rc;
    while ((rc = starling_step(node, 200)) == STARLING_TIMEOUT) {
    }
    if (rc == STARLING_DONE) break;
    if (rc != STARLING_OK) return Die("step", node);
  }
  int exit_code = -1;
  if (starling_finish(node, -1, &exit_code) != 0) return Die("finish", node);
  starling_get_counters(node, &counters);
  std::printf(
      "local_steps %lld initiated %lld served %lld aborted %lld step_wait_s %.3f exit %d "
      "updates %ld resumed %d bits_sent %lld\n",
      static_cast<long long>(counters.local_steps),
      static_cast<long long>(counters.exchanges_initiated),
      static_cast<long long>(counters.exchanges_served),
      static_cast<long long>(counters.exchanges_aborted), counters.step_wait_seconds,
      counters.exit_code, updates, counters.resumed, static_cast<long long>(counters.bits_sent));
  starling_destroy(node);
  return 0;
}

// The round-based loop: the node asks for grad f_i at its iterates (capi/starling.h).
template <typename T>
int Rounds(starling_node* node, std::vector<T>* x, double a, const std::vector<double>& c,
           long kill_at) {
  const int dtype = sizeof(T) == 4 ? STARLING_FLOAT32 : STARLING_FLOAT64;
  if (starling_set_model(node, x->data(), x->size(), dtype) != 0) return Die("set_model", node);
  if (starling_start(node) != 0) return Die("start", node);
  std::vector<T> g(x->size());
  long gradients = 0;
  for (;;) {
    int rc;
    while ((rc = starling_iterate(node, 200)) == STARLING_TIMEOUT) {
    }
    if (rc == STARLING_DONE) break;
    if (rc != STARLING_OK) return Die("iterate", node);
    if (kill_at > 0 && gradients == kill_at) raise(SIGKILL);
    if (kill_at < 0 && gradients == -kill_at) {
      const int stopped = starling_stop(node);
      std::printf("stopped after %ld gradients: %d\n", gradients, stopped);
      starling_destroy(node);
      return stopped == STARLING_OK ? 0 : 1;
    }
    for (size_t k = 0; k < x->size(); ++k) g[k] = static_cast<T>(a * ((*x)[k] - c[k]));
    if (starling_gradient(node, g.data(), g.size()) != 0) return Die("gradient", node);
    ++gradients;
  }
  int exit_code = -1;
  if (starling_finish(node, -1, &exit_code) != 0) return Die("finish", node);
  starling_counters counters;
  starling_get_counters(node, &counters);
  std::printf("gradients %ld taken %lld finished %d exit %d\n", gradients,
              static_cast<long long>(counters.local_steps), counters.finished, counters.exit_code);
  starling_destroy(node);
  return 0;
}

bool RoundBased(const std::vector<const char*>& options) {
  for (size_t i = 0; i + 1 < options.size(); ++i) {
    if (std::strcmp(options[i], "--algorithm") != 0) continue;
    const std::string a = options[i + 1];
    return a == "dgd" || a == "dpsgd" || a == "gradient-tracking";
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  int sep = 1;
  while (sep < argc && std::strcmp(argv[sep], "--") != 0) ++sep;
  if (sep < 6 || sep == argc) {
    std::fprintf(stderr, "usage: capi_worker OUT A C0,C1,... LR0 32|64 [KILL_AT] -- OPTIONS\n");
    return 2;
  }
  const std::string out = argv[1];
  const double a = std::atof(argv[2]);
  std::vector<double> c;
  std::stringstream list(argv[3]);
  for (std::string v; std::getline(list, v, ',');) c.push_back(std::atof(v.c_str()));
  const double lr0 = std::atof(argv[4]);
  const bool f32 = std::strcmp(argv[5], "32") == 0;
  const long kill_at = sep > 6 ? std::atol(argv[6]) : 0;
  std::vector<const char*> options = {"capi_worker"};
  for (int i = sep + 1; i < argc; ++i) options.push_back(argv[i]);
  starling_node* node = nullptr;
  if (starling_create(static_cast<int>(options.size()), options.data(), &node) != 0) {
    return Die("create", node);
  }
  // LR0 0: no gradient steps, the model starts at C (the test of the sum's conservation).
  std::vector<double> model(c.size(), 0.0);
  if (lr0 <= 0) model = c;
  int rc;
  const bool round = RoundBased(options);
  if (f32) {
    std::vector<float> x(model.begin(), model.end());
    rc = round ? Rounds(node, &x, a, c, kill_at) : Train(node, &x, a, c, lr0, kill_at);
    for (size_t k = 0; k < x.size(); ++k) model[k] = x[k];
  } else {
    rc = round ? Rounds(node, &model, a, c, kill_at) : Train(node, &model, a, c, lr0, kill_at);
  }
  if (rc != 0) return rc;
  std::ofstream file(out);
  file.precision(17);
  for (double v : model) file << v << "\n";
  return file ? 0 : 1;
}
