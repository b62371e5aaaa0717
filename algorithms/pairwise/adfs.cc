#include "algorithms/pairwise/adfs.h"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>

#include "algorithms/pairwise/counters_state.h"
#include "algorithms/pairwise/pairwise_method.h"
#include "algorithms/problems/least_squares.h"
#include "algorithms/problems/logistic_regression.h"

namespace starling::algorithms {
namespace {

constexpr uint64_t kCompStream = 1;
constexpr uint64_t kCommStream = 2;
constexpr uint64_t kSampleStream = 3;
constexpr double kInfinity = std::numeric_limits<double>::infinity();

uint64_t SplitMix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The shard of a linear model, its loss scale and the curvature bound of its loss (phi'' <= c s).
struct LinearShard {
  const Dataset* data = nullptr;
  bool logistic = true;
  double scale = 0;
  double curvature = 0;
};

LinearShard LinearShardOf(const Problem& problem) {
  LinearShard shard;
  if (const auto* p = dynamic_cast<const LogisticRegression*>(&problem)) {
    shard = {&p->data(), true, p->loss_scale(), 0.25};
  } else if (const auto* q = dynamic_cast<const LeastSquares*>(&problem)) {
    shard = {&q->data(), false, q->loss_scale(), 1.0};
  } else {
    throw std::invalid_argument(
        "--algorithm adfs: needs --problem logistic or least-squares, not " + problem.name());
  }
  if (!(problem.l2() > 0)) {
    throw std::invalid_argument("--algorithm adfs: needs --l2 > 0 (the centers' strong convexity)");
  }
  return shard;
}

template <typename F>
void ForRow(const Dataset& d, int j, F&& f) {
  if (d.is_sparse) {
    for (SparseMatrix::InnerIterator it(d.sparse, j); it; ++it) f(it.col(), it.value());
  } else {
    for (Eigen::Index k = 0; k < d.dense.cols(); ++k) f(k, d.dense(j, k));
  }
}

double RowDot(const Dataset& d, int j, const Vec& x) {
  double s = 0;
  ForRow(d, j, [&](Eigen::Index k, double a) { s += a * x[k]; });
  return s;
}

double RowSquaredNorm(const Dataset& d, int j) {
  double s = 0;
  ForRow(d, j, [&](Eigen::Index, double a) { s += a * a; });
  return s;
}

void RowAxpy(const Dataset& d, int j, double alpha, Vec* x) {
  ForRow(d, j, [&](Eigen::Index k, double a) { (*x)[k] += alpha * a; });
}

std::unique_ptr<PairwiseAlgorithm> MakeAdfs(const PairwiseOptions& options,
                                            const NodeSetup& setup) {
  if (options.compression != "none") {
    throw std::invalid_argument("--compression '" + options.compression +
                                "': adfs runs at full precision only (--compression none)");
  }
  if (options.graph.empty()) {
    throw std::invalid_argument(
        "--algorithm adfs: its constants come from the graph, which this run does not give");
  }
  if (options.shards.size() != options.graph.size()) {
    throw std::invalid_argument(
        "--algorithm adfs: its constants need a summary of every node's shard, which this run "
        "does not give");
  }
  return std::make_unique<Adfs>(setup,
                                AdfsNetworkOf(options.graph, options.shards, setup.problem->l2()));
}

int AdfsMessageSize(int dim) { return Adfs::MessageSize(dim); }

}  // namespace

const PairwiseMethod& AdfsMethod() {
  static const PairwiseMethod method{"adfs",
                                     MakeAdfs,
                                     /*params=*/nullptr,
                                     AdfsMessageSize,
                                     /*needs_problem=*/true,
                                     /*takes_block_cyclic=*/false,
                                     AdfsShardSummary};
  return method;
}

ShardSummary AdfsShardSummary(const Problem& problem) {
  const LinearShard shard = LinearShardOf(problem);
  const double l2 = problem.l2();
  ShardSummary s;
  s.weight_min = kInfinity;
  for (int j = 0; j < shard.data->num_samples(); ++j) {
    const double q = RowSquaredNorm(*shard.data, j);
    if (!(q > 0)) continue;
    const double smooth = shard.curvature * shard.scale * q;
    const double w = std::sqrt(1 + smooth / l2);
    s.smoothness_sum += smooth;
    s.weight_sum += w;
    s.weight_min = std::min(s.weight_min, w);
  }
  if (!(s.weight_sum > 0)) s.weight_min = 0;
  return s;
}

AdfsNetwork AdfsNetworkOf(const std::vector<std::vector<int>>& adjacency,
                          const std::vector<ShardSummary>& shards, double l2) {
  const int n = static_cast<int>(adjacency.size());
  if (n < 2) throw std::invalid_argument("adfs: needs at least 2 nodes");
  if (static_cast<int>(shards.size()) != n) {
    throw std::invalid_argument("adfs: one shard summary per node needed");
  }
  if (!(l2 > 0)) throw std::invalid_argument("adfs: needs --l2 > 0");
  AdfsNetwork net;
  net.num_nodes = n;
  net.l2 = l2;
  Eigen::MatrixXd lap = Eigen::MatrixXd::Zero(n, n);
  for (int i = 0; i < n; ++i) {
    for (int j : adjacency[i]) {
      if (j < 0 || j >= n || j == i) throw std::invalid_argument("adfs: bad neighbour id");
      lap(i, j) -= 1;
      lap(i, i) += 1;
      if (j > i) ++net.num_edges;
    }
  }
  if (net.num_edges == 0) throw std::invalid_argument("adfs: the graph has no edge");
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(lap);
  const Vec& values = eig.eigenvalues();
  net.lambda2 = values[1];
  if (!(net.lambda2 > 1e-9 * values[n - 1])) {
    throw std::invalid_argument("adfs: the graph is not connected");
  }
  // The pseudo-inverse, for the effective resistances.
  Eigen::MatrixXd pinv = Eigen::MatrixXd::Zero(n, n);
  for (int k = 1; k < n; ++k) {
    pinv += eig.eigenvectors().col(k) * eig.eigenvectors().col(k).transpose() / values[k];
  }
  std::vector<double> kappa(n);
  net.kappa_max = 0;
  for (int i = 0; i < n; ++i) {
    if (!(shards[i].weight_sum > 0)) {
      throw std::invalid_argument("adfs: node " + std::to_string(i) +
                                  " has no sample with a non-zero feature");
    }
    kappa[i] = 1 + shards[i].smoothness_sum / l2;
    net.kappa_max = std::max(net.kappa_max, kappa[i]);
  }
  net.sigma_a = net.lambda2 / (2 * net.kappa_max * l2);
  const double edges = net.num_edges;
  double comm_unit = kInfinity;  // rho_comm / (1 - p_comp)
  net.resistance.resize(n);
  for (int i = 0; i < n; ++i) {
    for (int j : adjacency[i]) {
      const double r = pinv(i, i) + pinv(j, j) - 2 * pinv(i, j);
      net.resistance[i].push_back(r);
      comm_unit = std::min(comm_unit, std::sqrt(l2 * net.sigma_a / (2 * r)) / edges);
    }
  }
  double comp_unit = kInfinity;  // rho_comp / p_comp
  for (int i = 0; i < n; ++i) {
    comp_unit =
        std::min(comp_unit, std::sqrt(kappa[i] / (2 * net.kappa_max)) / (n * shards[i].weight_sum));
  }
  net.p_comp = std::max(0.5, 1 / (1 + comp_unit / comm_unit));
  net.rho_comp = net.p_comp * comp_unit;
  net.rho_comm = (1 - net.p_comp) * comm_unit;
  // The largest rho at which a_ij < L_ij on every virtual edge (where the reference's primal
  // prox applies, see Adfs); not a bound here.
  net.rho_primal = kInfinity;
  for (int i = 0; i < n; ++i) {
    net.rho_primal =
        std::min(net.rho_primal, l2 * kappa[i] * net.p_comp * shards[i].weight_min * net.sigma_a /
                                     (net.lambda2 * n * shards[i].weight_sum));
  }
  net.rho = std::min(net.rho_comp, net.rho_comm);
  net.delta = net.rho * (1 - net.rho) / (1 + net.rho);
  net.comp_rate.assign(n, net.p_comp / n);
  net.edge_rate.resize(n);
  for (int i = 0; i < n; ++i) {
    const double deg = static_cast<double>(adjacency[i].size());
    net.comm_rate.push_back((1 - net.p_comp) * deg / (2 * edges));
    net.edge_rate[i].assign(adjacency[i].size(), (1 - net.p_comp) / edges);
  }
  return net;
}

double LogisticMarginProx(double u0, double tau, double s, double label, double start) {
  // h(u) = s log(1 + exp(-label u)) + (u - u0)^2 / (2 tau), strictly convex; h' is increasing
  // and changes sign in [lo, hi] since |phi'| <= s.
  double lo = u0 - tau * s, hi = u0 + tau * s;
  double u = std::clamp(start, lo, hi);
  for (int it = 0; it < 100; ++it) {
    const double m = label * u;
    // sigma(-m) = 1 / (1 + exp(m)), computed without overflow.
    const double sig_neg = m > 0 ? std::exp(-m) / (1 + std::exp(-m)) : 1 / (1 + std::exp(m));
    const double grad = -s * label * sig_neg + (u - u0) / tau;
    if (grad > 0) {
      hi = u;
    } else if (grad < 0) {
      lo = u;
    } else {
      return u;
    }
    const double hess = s * sig_neg * (1 - sig_neg) + 1 / tau;
    double next = u - grad / hess;
    if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);  // Newton left the bracket: bisect
    if (std::abs(next - u) <= 1e-15 * (1 + std::abs(u)) || hi - lo <= 1e-15 * (1 + std::abs(u))) {
      return next;
    }
    u = next;
  }
  return u;
}

double SquaredMarginProx(double u0, double tau, double s, double label) {
  return (u0 + tau * s * label) / (1 + tau * s);
}

double LogisticDualProx(double z, double a, double q, double s, double label, double* start) {
  // With t = -label beta / s in (0, 1) and r = logit(t), the minimiser solves
  // F(r) = s r + c sigma(r) + e = 0, c = q s^2 / a - 4 s, e = (q s / a) label z: F' =
  // s + c sigma (1 - sigma) >= q s^2 sigma (1 - sigma) / a > 0 since sigma (1 - sigma) <= 1/4, and
  // sigma in (0, 1) brackets the root in [lo, hi].
  const double c = q * s * s / a - 4 * s;
  const double e = q * s / a * label * z;
  double lo = (-e - std::max(0.0, c)) / s, hi = (-e - std::min(0.0, c)) / s;
  auto sigma = [](double r) {
    return r >= 0 ? 1 / (1 + std::exp(-r)) : std::exp(r) / (1 + std::exp(r));
  };
  double r = std::clamp(*start, lo, hi);
  for (int it = 0; it < 200; ++it) {
    const double sg = sigma(r);
    const double f = s * r + c * sg + e;
    if (f > 0) {
      hi = r;
    } else if (f < 0) {
      lo = r;
    } else {
      break;
    }
    double next = r - f / (s + c * sg * (1 - sg));
    if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
    const bool done = std::abs(next - r) <= 1e-15 * (1 + std::abs(r));
    r = next;
    if (done || hi - lo <= 1e-15 * (1 + std::abs(r))) break;
  }
  *start = r;
  return -label * s * sigma(r);
}

double SquaredDualProx(double z, double a, double q, double label) { return z - a * label / q; }

Adfs::Adfs(const NodeSetup& setup, const AdfsNetwork& network)
    : setup_(setup), net_(network), dim_(setup.problem->dim()) {
  const LinearShard shard = LinearShardOf(*setup.problem);
  data_ = shard.data;
  logistic_ = shard.logistic;
  scale_ = shard.scale;
  const int id = setup.id;
  if (id < 0 || id >= net_.num_nodes) throw std::invalid_argument("adfs: node id outside graph");
  const double l2 = net_.l2;
  if (setup.problem->l2() != l2) throw std::invalid_argument("adfs: l2 differs from the run's");
  const double rho = net_.rho;
  const double sum = rho + net_.delta;
  power_base_ = 1 - sum;
  pi_v_ = net_.delta / sum;
  pi_y_ = rho / sum;
  // The dual variables start at 0, so the model starts at 0 (the start point is not used).
  v_ = Vec::Zero(dim_);
  y_ = Vec::Zero(dim_);
  x_ = Vec::Zero(dim_);
  tmp_ = Vec::Zero(dim_);
  const int m = data_->num_samples();
  vv_.assign(m, 0.0);
  vy_.assign(m, 0.0);
  vlast_.assign(m, 0.0);
  warm_.assign(m, 0.0);
  smooth_.assign(m, 0.0);
  sqnorm_.assign(m, 0.0);
  step_v_.assign(m, 0.0);
  step_y_.assign(m, 0.0);
  cumulative_.assign(m, 0.0);
  std::vector<double> weight(m, 0.0);
  double smoothness_sum = 0, weight_sum = 0;
  for (int j = 0; j < m; ++j) {
    sqnorm_[j] = RowSquaredNorm(*data_, j);
    if (!(sqnorm_[j] > 0)) continue;  // a constant loss: never sampled
    smooth_[j] = shard.curvature * scale_ * sqnorm_[j];
    weight[j] = std::sqrt(1 + smooth_[j] / l2);
    smoothness_sum += smooth_[j];
    weight_sum += weight[j];
  }
  if (!(weight_sum > 0)) throw std::invalid_argument("adfs: a shard without a non-zero feature");
  const double kappa = 1 + smoothness_sum / l2;
  double acc = 0;
  for (int j = 0; j < m; ++j) {
    acc += weight[j];
    cumulative_[j] = acc;
    if (!(weight[j] > 0)) continue;
    const double p = net_.p_comp * weight[j] / (net_.num_nodes * weight_sum);  // P_ij
    const double mu2 = smooth_[j] * net_.lambda2 / (l2 * kappa);
    step_v_[j] = mu2 * rho / (p * net_.sigma_a);
    step_y_[j] = rho * (1 + 1 / p) / (1 + rho);
  }
  for (size_t k = 0; k < setup.neighbors.size(); ++k) {
    const double p = net_.edge_rate[id][k];
    const double r = net_.resistance[id][k];
    edge_v_.push_back(rho / (p * net_.sigma_a));
    edge_y_.push_back(rho * rho * (1 + r / p) / (p * net_.sigma_a * (1 + rho)));
  }
  served_.assign(setup.neighbors.size(), Vec::Zero(dim_));
  mirrored_.assign(setup.neighbors.size(), Vec::Zero(dim_));
  absorbed_seq_.assign(setup.neighbors.size(), 0);
  comp_rate_ = net_.comp_rate[id];
  comm_rate_ = setup.neighbors.empty() ? 0.0 : net_.comm_rate[id];
  next_comp_ = Draw(kCompStream, &comp_draws_) / comp_rate_;
  next_comm_ = comm_rate_ > 0 ? Draw(kCommStream, &comm_draws_) / comm_rate_ : kInfinity;
}

double Adfs::Uniform(uint64_t stream, uint64_t* count) const {
  const uint64_t z =
      SplitMix64(SplitMix64(setup_.seed ^ (stream * 0xd1b54a32d192ed03ULL)) + (*count)++);
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

double Adfs::Draw(uint64_t stream, uint64_t* count) const {
  if (regular_) {
    ++*count;
    return 1.0;
  }
  return -std::log1p(-Uniform(stream, count));
}

void Adfs::SetCommonTime() {
  regular_ = false;
  comp_draws_ = comm_draws_ = 0;
  next_comp_ = now_ + Draw(kCompStream, &comp_draws_) / comp_rate_;
  next_comm_ = comm_rate_ > 0 ? now_ + Draw(kCommStream, &comm_draws_) / comm_rate_ : kInfinity;
}

int Adfs::DrawSample() {
  const double u = Uniform(kSampleStream, &sample_draws_) * cumulative_.back();
  const auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), u);
  return static_cast<int>(
      std::min<std::ptrdiff_t>(it - cumulative_.begin(), static_cast<std::ptrdiff_t>(m() - 1)));
}

double Adfs::NextEventTime() const {
  if (owed_ > 0) return now_;
  return std::max(now_, std::min(next_comp_, next_comm_));
}

void Adfs::AdvanceTo(double t) {
  if (!(t > now_)) return;
  const double f = std::pow(power_base_, t - now_);
  const double a11 = f + (1 - f) * pi_v_, a12 = (1 - f) * pi_y_;
  const double a21 = (1 - f) * pi_v_, a22 = f + (1 - f) * pi_y_;
  tmp_ = a11 * v_ + a12 * y_;
  y_ = a21 * v_ + a22 * y_;
  v_.swap(tmp_);
  x_ = y_ / net_.l2;
  now_ = t;
}

void Adfs::ComputeEvent(double t, int j) {
  AdvanceTo(t);
  // The virtual pair, caught up to the node's time.
  const double dt = now_ - vlast_[j];
  if (dt > 0) {
    const double f = std::pow(power_base_, dt);
    const double v = vv_[j], y = vy_[j];
    vv_[j] = (f + (1 - f) * pi_v_) * v + (1 - f) * pi_y_ * y;
    vy_[j] = (1 - f) * pi_v_ * v + (f + (1 - f) * pi_y_) * y;
  }
  vlast_[j] = now_;
  const double q = sqnorm_[j], a = step_v_[j];
  const double label = data_->labels[j];
  const double proj = RowDot(*data_, j, y_) / (net_.l2 * q);
  const double z = vv_[j] + a * (proj - vy_[j] / smooth_[j]);
  double v_new;
  if (logistic_) {
    v_new = LogisticDualProx(z, a, q, scale_, label, &warm_[j]);
  } else {
    v_new = SquaredDualProx(z, a, q, label);
  }
  const double d = v_new - vv_[j];
  vv_[j] = v_new;
  vy_[j] += step_y_[j] * d;
  RowAxpy(*data_, j, -d, &v_);
  RowAxpy(*data_, j, -step_y_[j] * d, &y_);
  x_ = y_ / net_.l2;
}

void Adfs::LocalStep() {
  const double t = std::max(next_comp_, now_);
  ComputeEvent(t, DrawSample());
  next_comp_ = now_ + Draw(kCompStream, &comp_draws_) / comp_rate_;
  ++counters_.local_steps;
  counters_.gradient_passes += 1.0 / m();
}

int Adfs::Edge(int peer) const {
  const auto& nb = setup_.neighbors;
  const auto it = std::lower_bound(nb.begin(), nb.end(), peer);
  if (it == nb.end() || *it != peer) {
    throw std::invalid_argument("adfs: node " + std::to_string(peer) +
                                " is not a neighbour of node " + std::to_string(setup_.id));
  }
  return static_cast<int>(it - nb.begin());
}

void Adfs::CheckMessage(const Eigen::Ref<const Vec>& message) const {
  if (message.size() != MessageSize(dim_)) {
    throw std::invalid_argument("adfs: a message of " + std::to_string(message.size()) +
                                " values, expected " + std::to_string(MessageSize(dim_)));
  }
}

std::shared_ptr<const Vec> Adfs::Message(const Vec& head) {
  std::shared_ptr<Vec> m = messages_.Take();
  m->resize(MessageSize(dim_));
  m->head(dim_) = head;
  m->tail(m->size() - dim_).setZero();
  (*m)[dim_] = now_;
  counters_.bits_sent += 64 * m->size();
  return m;
}

void Adfs::Hear(const Eigen::Ref<const Vec>& message) {
  const double t = message[dim_];
  if (!std::isfinite(t) || t < 0) ++counters_.decode_failures;
}

void Adfs::Jump(int edge, double sign, const Vec& d) {
  v_.noalias() += sign * edge_v_[edge] * d;
  y_.noalias() += sign * edge_y_[edge] * d;
  x_ = y_ / net_.l2;
}

std::shared_ptr<const Vec> Adfs::BeginExchange(int peer, uint64_t seq) {
  if (outstanding_) throw std::logic_error("adfs: an exchange is already outstanding");
  const int edge = Edge(peer);
  if (owed_ > 0) {
    --owed_;
  } else {
    AdvanceTo(next_comm_);
    next_comm_ = now_ + Draw(kCommStream, &comm_draws_) / comm_rate_;
  }
  if (offers_.size() > kKeptOfferSnapshots) offers_.pop_front();
  offers_.push_back({seq, edge});
  outstanding_ = true;
  return Message(x_);
}

bool Adfs::CompleteExchange(uint64_t seq, const Eigen::Ref<const Vec>& their_message) {
  CheckMessage(their_message);
  auto it =
      std::find_if(offers_.begin(), offers_.end(), [seq](const Offer& o) { return o.seq == seq; });
  if (it == offers_.end()) return false;
  const Offer offer = *it;
  if (outstanding_ && std::next(it) == offers_.end()) outstanding_ = false;
  offers_.erase(it);
  const int e = offer.edge;
  Hear(their_message);
  // The responder's running sum: what it has applied on this edge and this node has not yet
  // mirrored (its halves of exchanges whose replies were lost included). A reply older than one
  // already absorbed carries an older sum: ignored.
  if (seq >= absorbed_seq_[e]) {
    absorbed_seq_[e] = seq;
    tmp_ = their_message.head(dim_) - mirrored_[e];
    mirrored_[e] = their_message.head(dim_);
    Jump(e, +1.0, tmp_);
  }
  ++counters_.exchanges_initiated;
  return true;
}

void Adfs::AbortExchange(bool may_still_reply) {
  if (!outstanding_) return;
  outstanding_ = false;
  ++counters_.exchanges_aborted;
  if (!may_still_reply) {
    offers_.pop_back();  // refused (BUSY): nothing changed hands; due again at once
    ++owed_;
  } else {
    ++dropped_comms_;  // timed out: the responder's half, if made, comes with its next reply
  }
}

void Adfs::AbortCrossedExchange() {
  // The partner answers it BUSY as a rule: due again at once; the offer is kept in case the
  // partner serves it after all.
  if (!outstanding_) return;
  outstanding_ = false;
  ++counters_.exchanges_aborted;
  ++owed_;
}

std::shared_ptr<const Vec> Adfs::Respond(int peer, const Eigen::Ref<const Vec>& their_message) {
  CheckMessage(their_message);
  const int edge = Edge(peer);
  Hear(their_message);
  tmp_ = x_ - their_message.head(dim_);  // d = g_j - g_i
  served_[edge] += tmp_;
  Jump(edge, -1.0, tmp_);
  ++counters_.exchanges_served;
  // The running sum: it lets the initiator absorb a reply it lost.
  return Message(served_[edge]);
}

// Layout "adfs": ints = 6 counters, the three draw counts, dropped exchanges; reals =
// gradient passes, now, the next computation and exchange times; vectors = v, y, per edge served
// and mirrored, then per sample (vectors of m) v_ij, y_ij, their times and the prox warm starts.
// Not kept: the absorbed seqs and offers (they belong to one life of the driver), the clocks
// owed exchanges.
bool Adfs::SaveState(AlgorithmState* s) const {
  *s = AlgorithmState();
  s->algorithm = "adfs";
  AppendCounterInts(counters_, &s->ints);
  s->ints.insert(s->ints.end(),
                 {static_cast<int64_t>(comp_draws_), static_cast<int64_t>(comm_draws_),
                  static_cast<int64_t>(sample_draws_), dropped_comms_});
  s->reals = {counters_.gradient_passes, now_, next_comp_, next_comm_};
  s->vectors = {v_, y_};
  for (size_t e = 0; e < served_.size(); ++e) {
    s->vectors.push_back(served_[e]);
    s->vectors.push_back(mirrored_[e]);
  }
  for (const std::vector<double>* a : {&vv_, &vy_, &vlast_, &warm_}) {
    s->vectors.push_back(Eigen::Map<const Vec>(a->data(), static_cast<Eigen::Index>(a->size())));
  }
  return true;
}

void Adfs::LoadState(const AlgorithmState& s) {
  const size_t n = served_.size();
  CheckStateShape(s, "adfs", 10, 4, 2 + 2 * n + 4, 0);
  for (size_t k = 0; k < s.vectors.size(); ++k) {
    const Eigen::Index want = k < 2 + 2 * n ? dim_ : m();
    if (s.vectors[k].size() != want) throw std::invalid_argument("checkpoint: wrong dimension");
    if (!s.vectors[k].allFinite()) throw std::invalid_argument("checkpoint: non-finite adfs state");
  }
  for (int64_t v : s.ints) {
    if (v < 0) throw std::invalid_argument("checkpoint: a negative adfs counter");
  }
  for (double v : s.reals) {
    if (std::isnan(v) || v < 0) throw std::invalid_argument("checkpoint: bad adfs clock");
  }
  ReadCounterInts(s.ints, 0, &counters_);
  comp_draws_ = static_cast<uint64_t>(s.ints[6]);
  comm_draws_ = static_cast<uint64_t>(s.ints[7]);
  sample_draws_ = static_cast<uint64_t>(s.ints[8]);
  dropped_comms_ = s.ints[9];
  counters_.gradient_passes = s.reals[0];
  now_ = s.reals[1];
  next_comp_ = s.reals[2];
  next_comm_ = s.reals[3];
  v_ = s.vectors[0];
  y_ = s.vectors[1];
  for (size_t e = 0; e < n; ++e) {
    served_[e] = s.vectors[2 + 2 * e];
    mirrored_[e] = s.vectors[3 + 2 * e];
  }
  std::vector<double>* per_sample[] = {&vv_, &vy_, &vlast_, &warm_};
  for (size_t k = 0; k < 4; ++k) {
    const Vec& src = s.vectors[2 + 2 * n + k];
    per_sample[k]->assign(src.data(), src.data() + src.size());
  }
  absorbed_seq_.assign(n, 0);
  offers_.clear();
  outstanding_ = false;
  owed_ = 0;
  x_ = y_ / net_.l2;
}

void Adfs::DualSumsAt(double t, Vec* v_sum, Vec* y_sum) const {
  if (t < now_) throw std::invalid_argument("adfs: DualSumsAt before the node's time");
  auto power = [&](double dt, double v, double y, double* vo, double* yo) {
    const double f = std::pow(power_base_, dt);
    *vo = (f + (1 - f) * pi_v_) * v + (1 - f) * pi_y_ * y;
    *yo = (1 - f) * pi_v_ * v + (f + (1 - f) * pi_y_) * y;
  };
  v_sum->resize(dim_);
  y_sum->resize(dim_);
  for (int k = 0; k < dim_; ++k) power(t - now_, v_[k], y_[k], &(*v_sum)[k], &(*y_sum)[k]);
  for (int j = 0; j < m(); ++j) {
    double vo, yo;
    power(t - vlast_[j], vv_[j], vy_[j], &vo, &yo);
    RowAxpy(*data_, j, vo, v_sum);
    RowAxpy(*data_, j, yo, y_sum);
  }
}

}  // namespace starling::algorithms
