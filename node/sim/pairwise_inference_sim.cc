#include "node/sim/pairwise_inference_sim.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <stdexcept>
#include <string>

#include "algorithms/pairwise/pairwise_algorithm.h"
#include "algorithms/pairwise/pairwise_diffusion.h"
#include "algorithms/round/round_algorithm.h"
#include "node/report/json_line.h"
#include "node/report/metrics_file.h"
#include "node/sim/round_simulator.h"
#include "topology/clock_offsets.h"
#include "topology/inference.h"
#include "topology/projection.h"
#include "topology/time_aligner.h"

namespace starling::node {

namespace po = boost::program_options;

void AddPairwiseInferenceOptions(po::options_description* options, PairwiseInferenceOptions* o) {
  // clang-format off
  options->add_options()
      ("period", po::value(&o->period)->default_value(o->period),
       "pairwise-diffusion: the probe's common sampling period, in mean local-tick intervals")
      ("clock-offset", po::value(&o->clock_offset)->default_value(o->clock_offset),
       "pairwise-diffusion: the nodes' clock offsets are uniform in +-half this (tick intervals)")
      ("correct-offsets", po::bool_switch(&o->correct_offsets),
       "pairwise-diffusion: the probe knows the clock offsets and corrects them")
      ("estimate-offsets", po::bool_switch(&o->estimate_offsets),
       "pairwise-diffusion: the probe estimates the clock offsets from its samples' arrivals "
       "(each node's largest stamp minus arrival time; starling-probe infer --clock-offsets "
       "estimate) and corrects them")
      ("offset-batches", po::value(&o->offset_batches)->default_value(o->offset_batches),
       "--estimate-offsets: samples of every observed node before the offsets are fixed (the "
       "samples wait meanwhile)")
      ("sample-loss", po::value(&o->sample_loss)->default_value(o->sample_loss),
       "pairwise-diffusion: each published sample is lost with this probability")
      ("delay", po::value(&o->delay)->default_value(o->delay),
       "pairwise-diffusion: mean exponential delivery delay of a sample (out-of-order arrival)")
      ("delay-floor", po::value(&o->delay_floor)->default_value(o->delay_floor),
       "pairwise-diffusion: node i's samples each take floor_i more than --delay's, floor_i "
       "uniform in [0, this] (its smallest one-way delay; tick intervals)")
      ("reorder-window", po::value(&o->reorder_window)->default_value(o->reorder_window),
       "pairwise-diffusion: later samples of a node before a missing one is declared lost")
      ("exchange-latency", po::value(&o->exchange_latency)->default_value(o->exchange_latency),
       "pairwise-diffusion and --infer-live with a pairwise method: mean round trip of an "
       "exchange, in mean tick intervals (each way exponential of half this; 0: instantaneous); "
       "the initiator's tick waits for the reply")
      ("infer-live", po::bool_switch(&o->live),
       "with a pairwise --algorithm (swarmsgd, ...): run it and infer the topology from the "
       "projections of the observed nodes' models (one local step per tick; --period, --burn-in "
       "in mean ticks); with a round-based one (dpsgd, dgd, ...): the same from its lockstep "
       "rounds, one round per time unit (--period, --burn-in in rounds)")
      ("projection-seed", po::value(&o->projection_seed)->default_value(o->projection_seed),
       "--infer-live: seed of the projection direction");
  // clang-format on
}

namespace {

using Clock = std::chrono::steady_clock;

// Whether --infer-live runs a round-based method (RoundSimulator) rather than a pairwise one.
bool LiveRounds(const RunConfig& config, const PairwiseInferenceOptions& o) {
  return o.live && algorithms::IsRoundAlgorithm(config.algorithm);
}

void CheckOptions(const RunConfig& config, const RunSetup& setup,
                  const InferenceSimOptions& inference, const PairwiseInferenceOptions& o) {
  if (o.live &&
      (config.algorithm == "diffusion" || (!algorithms::IsRoundAlgorithm(config.algorithm) &&
                                           !algorithms::IsPairwiseAlgorithm(config.algorithm)))) {
    // The synchronous diffusion is inferred by its own branch (starling-sim --algorithm
    // diffusion, without --infer-live); everything else is either kind of method.
    throw std::invalid_argument(
        "--infer-live --algorithm '" + config.algorithm + "': needs a pairwise method (one of " +
        algorithms::PairwiseAlgorithmNames() +
        ") or a round-based one other than diffusion (one of " + algorithms::RoundAlgorithmNames() +
        "); the synchronous diffusion is inferred without --infer-live");
  }
  const int n = static_cast<int>(setup.nodes.size());
  if (inference.observe < 2 || inference.observe > n) {
    throw std::invalid_argument("--observe " + std::to_string(inference.observe) +
                                ": must be in 2.." + std::to_string(n) +
                                " (the number of nodes to watch)");
  }
  if (inference.burn_in < 0) throw std::invalid_argument("--burn-in: must be >= 0");
  if (!(o.period > 0) || !std::isfinite(o.period)) {
    throw std::invalid_argument("--period: must be a positive number");
  }
  if (!(o.clock_offset >= 0) || !std::isfinite(o.clock_offset)) {
    throw std::invalid_argument("--clock-offset: must be >= 0");
  }
  if (!(o.sample_loss >= 0 && o.sample_loss < 1)) {
    throw std::invalid_argument("--sample-loss: must be in [0, 1)");
  }
  if (!(o.delay >= 0) || !std::isfinite(o.delay)) {
    throw std::invalid_argument("--delay: must be >= 0");
  }
  if (!(o.delay_floor >= 0) || !std::isfinite(o.delay_floor)) {
    throw std::invalid_argument("--delay-floor: must be >= 0");
  }
  if (o.estimate_offsets && o.correct_offsets) {
    throw std::invalid_argument("--estimate-offsets and --correct-offsets: give one");
  }
  if (o.offset_batches < 1) throw std::invalid_argument("--offset-batches: must be >= 1");
  if (o.reorder_window < 1) throw std::invalid_argument("--reorder-window: must be >= 1");
  if (!(o.exchange_latency >= 0) || !std::isfinite(o.exchange_latency)) {
    throw std::invalid_argument("--exchange-latency: must be >= 0");
  }
  if (o.exchange_latency > 0 && LiveRounds(config, o)) {
    throw std::invalid_argument("--exchange-latency: a round-based run has no pairwise exchanges");
  }
}

double Uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }
// Exponential of mean 1: -log of a uniform in (0, 1].
double Exponential(std::mt19937_64& rng) { return -std::log1p(-Uniform01(rng)); }

// A sample on its way to the probe.
struct InFlight {
  double arrival;
  int index;  // observed node index
  int64_t seq;
  double stamp, value;
  bool operator>(const InFlight& o) const { return arrival > o.arrival; }
};

// The whole simulated network and probe.
class Simulation {
 public:
  Simulation(const RunConfig& config, const RunSetup& setup, const InferenceSimOptions& inference,
             const PairwiseInferenceOptions& options)
      : setup_(setup),
        options_(options),
        k_(inference.observe),
        rng_(config.seed * 0x2545f4914f6cdd1dULL + 17),
        net_rng_(config.seed * 0x9e3779b97f4a7c15ULL + 29),
        latency_rng_(config.seed * 0xbf58476d1ce4e5b9ULL + 41),
        moments_(k_),
        aligner_(k_, options.period, static_cast<double>(inference.burn_in), &moments_,
                 options.reorder_window),
        // The probe's clock is the simulated time: the offsets it fixes are the leads.
        feed_(&aligner_, k_, options.estimate_offsets ? options.offset_batches : 0, -1) {
    const int n = static_cast<int>(setup.nodes.size());
    if (LiveRounds(config, options)) {
      rounds_ = std::make_unique<RoundSimulator>(setup.nodes, RoundOptionsFor(config, setup));
      for (int i = 0; i < n; ++i) {
        offsets_.push_back(options.clock_offset * (Uniform01(rng_) - 0.5));
      }
    } else {
      algorithms::PairwiseOptions po;
      if (options.live) {
        po = PairwiseOptionsFor(config, setup);
      } else {
        po.algorithm = "pairwise-diffusion";
        po.params = config.params;
      }
      for (int i = 0; i < n; ++i) {
        nodes_.push_back(algorithms::MakePairwiseAlgorithm(po, setup.nodes[i]));
        clocks_.emplace_back(setup.nodes[i].seed ^ 0xc2b2ae3d27d4eb4fULL);
        offsets_.push_back(options.clock_offset * (Uniform01(rng_) - 0.5));
        due_.push_back(Exponential(clocks_[i]));
        ticks_.push({due_.back(), i});
      }
      open_.assign(n, false);
      deferred_.assign(n, false);
    }
    if (options.live) {
      projection_ = topology::ProjectionDirection(ModelOf(0).size(), options.projection_seed);
    }
    seq_.assign(k_, 0);
    for (int k = 0; k < k_; ++k) {
      if (options.correct_offsets) aligner_.SetClockOffset(k, offsets_[k]);
    }
    // Its own stream, drawn only with a floor: runs without one are unchanged.
    std::mt19937_64 floor_rng(config.seed * 0x94d049bb133111ebULL + 53);
    floors_.assign(k_, 0.0);
    if (options.delay_floor > 0) {
      for (double& f : floors_) f = options.delay_floor * Uniform01(floor_rng);
    }
  }

  // Runs events until the aligner holds `pairs` pairs.
  void RunUntilPairs(int64_t pairs) {
    aligner_.SetPairLimit(pairs);
    while (aligner_.pairs() < pairs) Event();
  }

  topology::Moments Moments() const { return moments_.Finish(); }
  PairwiseInferenceTally Tally() const {
    PairwiseInferenceTally t;
    t.simulated_time = now_;
    t.exchanges = exchanges_;
    t.ticks = ticks_done_;
    t.rows = aligner_.rows();
    t.dropped_rows = aligner_.dropped_rows();
    t.lost_samples = aligner_.lost_samples();
    t.late_samples = aligner_.late_samples();
    for (int k = 0; k < k_; ++k) t.true_offsets.push_back(offsets_[k] - offsets_[0]);
    if (options_.estimate_offsets && feed_.released()) {
      for (int k = 0; k < k_; ++k) {
        t.estimated_offsets.push_back(feed_.offsets()[k] - feed_.offsets()[0]);
      }
    }
    return t;
  }

 private:
  void Event() {
    if (rounds_) {
      RoundEvent();
      return;
    }
    const Tick ev = ticks_.top();
    ticks_.pop();
    now_ = ev.time;
    Deliver(now_);
    switch (ev.kind) {
      case Tick::kTick:
        if (open_[ev.node]) {
          deferred_[ev.node] = true;  // its previous tick waits for a reply: this one comes after
        } else {
          DoTick(ev.node);
        }
        break;
      case Tick::kRespond: {
        Exchange& x = in_flight_.at(ev.seq);
        x.reply = nodes_[x.responder]->Respond(x.initiator, *x.offer);
        Publish(x.responder, now_);
        ticks_.push({now_ + Leg(), x.initiator, Tick::kComplete, ev.seq});
        break;
      }
      case Tick::kComplete: {
        const int i = ev.node;
        auto x = in_flight_.find(ev.seq);
        nodes_[i]->CompleteExchange(ev.seq, *x->second.reply);
        in_flight_.erase(x);
        ++exchanges_;
        EndTick(i);
        if (deferred_[i]) {
          deferred_[i] = false;
          DoTick(i);
        }
        break;
      }
    }
  }

  // Node i's tick, due at due_[i] (now, or earlier if it waited for its previous tick's reply).
  void DoTick(int i) {
    algorithms::PairwiseAlgorithm& a = *nodes_[i];
    // The next tick is due one gap after this one's due time, as a daemon schedules it.
    due_[i] += Exponential(clocks_[i]);
    ticks_.push({std::max(due_[i], now_), i});
    // A6's order, y <- rho W(t) y + x: the exchange the node wants (its coin at the previous
    // tick) first, then the tick's decay and noise. The other order puts the initiator's fresh
    // noise into both states at the same instant, which correlates their increments positively
    // (docs/how-to/topology-inference.md).
    const std::vector<int>& neighbors = setup_.nodes[i].neighbors;
    if (a.WantsExchange() && !neighbors.empty()) {
      const int j = neighbors[rng_() % neighbors.size()];
      const uint64_t seq = next_seq_++;
      const std::shared_ptr<const Vec> offer = a.BeginExchange(j, seq);
      if (options_.exchange_latency > 0) {
        // A round trip: j merges when the offer arrives, i when the reply does; the tick's
        // decay and noise wait for the reply (as in a daemon).
        in_flight_[seq] = {i, j, offer, nullptr};
        open_[i] = true;
        ticks_.push({now_ + Leg(), j, Tick::kRespond, seq});
        return;
      }
      const std::shared_ptr<const Vec> reply = nodes_[j]->Respond(i, *offer);
      a.CompleteExchange(seq, *reply);
      ++exchanges_;
      Publish(j, now_);
    }
    EndTick(i);
  }

  void EndTick(int i) {
    open_[i] = false;
    nodes_[i]->LocalStep();
    ++ticks_done_;
    Publish(i, now_);
  }

  // One leg of an exchange's round trip: exponential of mean exchange_latency / 2.
  double Leg() { return 0.5 * options_.exchange_latency * Exponential(latency_rng_); }

  // A round-based method in lockstep: round r (1, 2, ...) ends at time r for every node at once,
  // and each observed node publishes its model then (its clock reading r + its offset).
  void RoundEvent() {
    rounds_->Step();
    ++ticks_done_;
    now_ = static_cast<double>(ticks_done_);
    Deliver(now_);
    for (int i = 0; i < k_; ++i) Publish(i, now_);
  }

  const Vec& ModelOf(int i) const {
    return rounds_ ? rounds_->node(i).Model() : nodes_[i]->Model();
  }

  void Publish(int i, double t) {
    if (i >= k_) return;
    const int64_t seq = seq_[i]++;
    if (options_.sample_loss > 0 && Uniform01(net_rng_) < options_.sample_loss) {
      ++lost_in_flight_;
      return;
    }
    const InFlight s{
        t + floors_[i] + options_.delay * (options_.delay > 0 ? Exponential(net_rng_) : 0.0), i,
        seq, t + offsets_[i], Value(i)};
    if (options_.delay > 0 || options_.delay_floor > 0) {
      flight_.push(s);
    } else {
      Arrive(s);
    }
  }

  // The probe reads sample s (at s.arrival on its clock, the simulated time).
  void Arrive(const InFlight& s) {
    if (options_.estimate_offsets) {
      feed_.AddBatch(s.index, s.seq, &s.stamp, &s.value, 1, s.arrival);
    } else {
      aligner_.Add(s.index, s.seq, s.stamp, s.value);
    }
  }

  // The sample of node i: its scalar state, or with --infer-live its model's projection.
  double Value(int i) const { return options_.live ? projection_.dot(ModelOf(i)) : ModelOf(i)[0]; }

  void Deliver(double t) {
    while (!flight_.empty() && flight_.top().arrival <= t) {
      const InFlight s = flight_.top();
      flight_.pop();
      Arrive(s);
    }
  }

  // An event: a node's tick, or with --exchange-latency the arrival of an offer at its responder
  // (node) or of the reply at its initiator (node), for exchange seq.
  struct Tick {
    enum Kind { kTick, kRespond, kComplete };
    double time;
    int node;
    Kind kind = kTick;
    uint64_t seq = 0;
    bool operator>(const Tick& o) const { return time > o.time; }
  };
  struct Exchange {
    int initiator, responder;
    std::shared_ptr<const Vec> offer, reply;
  };

  const RunSetup& setup_;
  const PairwiseInferenceOptions& options_;
  const int k_;
  std::mt19937_64 rng_;      // partners and offsets
  std::mt19937_64 net_rng_;  // losses and delays: the diffusion itself does not depend on them
  std::vector<std::unique_ptr<algorithms::PairwiseAlgorithm>> nodes_;
  std::unique_ptr<RoundSimulator> rounds_;  // --infer-live with a round-based method instead
  std::vector<std::mt19937_64> clocks_;     // per node: its tick gaps
  std::vector<double> offsets_;
  std::priority_queue<Tick, std::vector<Tick>, std::greater<Tick>> ticks_;
  std::priority_queue<InFlight, std::vector<InFlight>, std::greater<InFlight>> flight_;
  std::vector<int64_t> seq_;
  std::vector<double> due_;            // per node: when its current tick was due
  std::vector<bool> open_, deferred_;  // per node: a tick waiting for its reply; a tick after it
  std::map<uint64_t, Exchange> in_flight_;
  std::mt19937_64 latency_rng_;
  Eigen::VectorXd projection_;  // --infer-live
  topology::MomentAccumulator moments_;
  topology::TimeAligner aligner_;
  topology::OffsetEstimatingFeed feed_;  // --estimate-offsets (otherwise only estimates)
  std::vector<double> floors_;           // per observed node: its smallest delivery delay
  double now_ = 0.0;
  uint64_t next_seq_ = 1;
  int64_t exchanges_ = 0, ticks_done_ = 0, lost_in_flight_ = 0;
};

InferenceRecord Evaluate(int64_t samples, topology::Estimator e, const topology::Moments& m,
                         topology::Clustering clustering, const std::vector<bool>& truth) {
  const topology::InferenceResult result = topology::Infer(e, m, clustering);
  InferenceRecord r;
  r.samples = samples;
  r.estimator = e;
  r.classification = topology::Compare(result.split.upper, truth);
  r.gap = topology::IdentifiabilityGap(result.scores, truth);
  r.true_edges = std::count(truth.begin(), truth.end(), true);
  r.inferred_edges = std::count(result.split.upper.begin(), result.split.upper.end(), true);
  return r;
}

// The spread of the true offsets and, estimated, the estimate's error: e_k = estimated - true
// (both relative to node 0); its spread max e - min e is the worst misalignment of two nodes
// after correction. In mean ticks and periods; with few nodes, each node's pair.
void PrintOffsets(const PairwiseInferenceTally& t, double period) {
  const auto spread = [](const std::vector<double>& v) {
    return v.empty()
               ? 0.0
               : *std::max_element(v.begin(), v.end()) - *std::min_element(v.begin(), v.end());
  };
  std::cout << std::setprecision(6) << "offset_spread " << spread(t.true_offsets) << " ticks ("
            << spread(t.true_offsets) / period << " periods)\n";
  if (t.estimated_offsets.empty()) return;
  std::vector<double> error;
  for (size_t k = 0; k < t.true_offsets.size(); ++k) {
    error.push_back(t.estimated_offsets[k] - t.true_offsets[k]);
  }
  std::cout << "offset_error_spread " << spread(error) << " ticks (" << spread(error) / period
            << " periods)\n";
  if (t.true_offsets.size() <= 10) {
    std::cout << "offsets_vs_node0 (true / estimated, ticks):";
    for (size_t k = 0; k < t.true_offsets.size(); ++k) {
      std::cout << " " << k << ": " << t.true_offsets[k] << " / " << t.estimated_offsets[k];
    }
    std::cout << "\n";
  }
}

}  // namespace

std::vector<InferenceRecord> RunPairwiseInferenceSimulation(const RunConfig& config,
                                                            const RunSetup& setup,
                                                            const InferenceSimOptions& inference,
                                                            const PairwiseInferenceOptions& options,
                                                            std::ostream* progress,
                                                            PairwiseInferenceTally* tally) {
  CheckOptions(config, setup, inference, options);
  const int k = inference.observe;
  const std::vector<topology::Estimator> estimators =
      topology::ParseEstimators(inference.estimator);
  const topology::Clustering clustering = topology::ParseClustering(inference.clustering);
  int64_t minimum = 0;
  for (auto e : estimators) minimum = std::max(minimum, topology::MinimumSamples(e, k));
  if (inference.samples < minimum) {
    throw std::invalid_argument(
        "--samples " + std::to_string(inference.samples) + ": too few for " + std::to_string(k) +
        " observed nodes (the estimators need at least " + std::to_string(minimum) + ")");
  }
  std::vector<bool> truth;
  for (const auto& [i, j] : topology::ObservedPairs(k)) truth.push_back(setup.graph.HasEdge(i, j));

  MetricsFile metrics(config.metrics);
  Simulation sim(config, setup, inference, options);
  const auto start = Clock::now();
  std::vector<InferenceRecord> records;
  for (int64_t checkpoint : LogCheckpoints(inference.samples)) {
    sim.RunUntilPairs(checkpoint);
    const topology::Moments m = sim.Moments();
    const PairwiseInferenceTally t = sim.Tally();
    for (auto e : estimators) {
      if (checkpoint < topology::MinimumSamples(e, k)) continue;
      records.push_back(Evaluate(m.pairs, e, m, clustering, truth));
      const InferenceRecord& r = records.back();
      JsonLine line;
      line.Add("samples", r.samples)
          .Add("estimator", std::string(topology::EstimatorName(e)))
          .Add("clustering", inference.clustering)
          .Add("accuracy", r.classification.accuracy)
          .Add("gap", r.gap)
          .Add("sensitivity", r.classification.sensitivity)
          .Add("specificity", r.classification.specificity)
          .Add("true_edges", r.true_edges)
          .Add("inferred_edges", r.inferred_edges)
          .Add("nodes", static_cast<int64_t>(setup.nodes.size()))
          .Add("observed", k)
          .Add("period", options.period)
          .Add("simulated_time", t.simulated_time)
          .Add("exchanges", t.exchanges)
          .Add("dropped_rows", t.dropped_rows)
          .Add("time", std::chrono::duration<double>(Clock::now() - start).count());
      metrics.Write(line);
      if (progress) {
        *progress << "samples " << r.samples << "  " << topology::EstimatorName(e) << "  accuracy "
                  << std::setprecision(4) << r.classification.accuracy << "  gap "
                  << std::setprecision(3) << r.gap << std::endl;
      }
    }
  }
  metrics.Finish();
  if (tally) *tally = sim.Tally();
  return records;
}

int RunPairwiseInferenceSimMain(const RunConfig& config, const RunSetup& setup,
                                const InferenceSimOptions& inference,
                                const PairwiseInferenceOptions& options, std::ostream* progress) {
  const auto start = Clock::now();
  CheckOptions(config, setup, inference, options);
  if (options.live) {
    std::cerr << "starling-sim: --infer-live: " << config.algorithm
              << (LiveRounds(config, options) ? " in lockstep rounds" : "") << " (projections of "
              << "the models on the direction of --projection-seed " << options.projection_seed
              << ", period " << options.period << ")";
  } else {
    const algorithms::PairwiseDiffusionParams params =
        algorithms::PairwiseDiffusionParamTable().Read(config.params);
    std::cerr << "starling-sim: pairwise-diffusion (decay " << params.decay << ", mix "
              << params.mix << ", exchange-prob " << params.exchange_prob << ", period "
              << options.period << ")";
  }
  std::cerr << " on " << config.nodes << " nodes, topology " << config.topology << " ("
            << setup.graph.num_edges() << " edges), observing nodes 0.." << inference.observe - 1
            << std::endl;
  PairwiseInferenceTally t;
  const std::vector<InferenceRecord> records =
      RunPairwiseInferenceSimulation(config, setup, inference, options, progress, &t);
  const int64_t last = records.empty() ? 0 : records.back().samples;
  std::cout << "samples " << last << "\n";
  for (const InferenceRecord& r : records) {
    if (r.samples != last) continue;
    const char* name = topology::EstimatorName(r.estimator);
    std::cout << std::setprecision(6) << name << "_accuracy " << r.classification.accuracy << "\n"
              << name << "_sensitivity " << r.classification.sensitivity << "\n"
              << name << "_specificity " << r.classification.specificity << "\n"
              << name << "_gap " << r.gap << "\n"
              << name << "_edges " << r.inferred_edges << " inferred, " << r.true_edges
              << " true\n";
  }
  std::cout << "simulated_time " << t.simulated_time << "\nticks " << t.ticks << "\nexchanges "
            << t.exchanges << "\nrows " << t.rows << "\ndropped_rows " << t.dropped_rows
            << "\nlost_samples " << t.lost_samples << "\nlate_samples " << t.late_samples << "\n";
  PrintOffsets(t, options.period);
  std::cout << "seconds " << std::fixed << std::setprecision(2)
            << std::chrono::duration<double>(Clock::now() - start).count() << std::endl;
  return 0;
}

}  // namespace starling::node
