#include "algorithms/round/diffusion.h"

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>

#include "algorithms/round/neighbor_mix.h"
#include "algorithms/round/round_method.h"

namespace starling::algorithms {
namespace {

// sum_{j in {i} U N(i)} a_ij y_j in ascending node id order (the node itself at its place), the
// one piece of arithmetic both drivers share. neighbor_value(k) is y of neighbors[k].
template <class NeighborValue>
double LaplacianMix(int id, const std::vector<int>& neighbors, double self_weight,
                    double self_value, double edge_weight, NeighborValue neighbor_value) {
  double sum = 0.0;
  bool self_added = false;
  for (size_t k = 0; k < neighbors.size(); ++k) {
    if (!self_added && id < neighbors[k]) {
      sum += self_weight * self_value;
      self_added = true;
    }
    sum += edge_weight * neighbor_value(k);
  }
  if (!self_added) sum += self_weight * self_value;
  return sum;
}

// The diffusion has no objective and takes no step.
std::unique_ptr<RoundAlgorithm> MakeDiffusion(const RoundOptions& options, const NodeSetup& setup) {
  DiffusionParams params = DiffusionParamTable().Read(options.params);
  params.max_degree = options.max_degree;
  return std::make_unique<Diffusion>(setup, params);
}

}  // namespace

const ParamTable<DiffusionParams>& DiffusionParamTable() {
  static const auto* const table = new ParamTable<DiffusionParams>(
      ParamTable<DiffusionParams>("diffusion (topology inference)")
          .Add("rho", &DiffusionParams::rho,
               "diffusion: rho in (0, 1), the spectral radius of A = rho (I - (c/d_max)(D - Adj))",
               Range::Open(0, 1))
          .Add("c", &DiffusionParams::c, "diffusion: c in (0, 1) of the Laplacian combination rule",
               Range::Open(0, 1)));
  return *table;
}

const RoundMethod& DiffusionMethod() {
  static const RoundMethod method =
      RoundMethod("diffusion", MakeDiffusion).WithoutProblem().Params(DiffusionParamTable());
  return method;
}

void DiffusionParams::Validate() const {
  if (!(rho > 0 && rho < 1)) {
    throw std::invalid_argument("--rho " + std::to_string(rho) + ": must be in (0, 1)");
  }
  if (!(c > 0 && c < 1)) {
    throw std::invalid_argument("--c " + std::to_string(c) + ": must be in (0, 1)");
  }
  if (!(sigma > 0) || !std::isfinite(sigma)) {
    throw std::invalid_argument("diffusion noise sigma must be positive");
  }
  if (max_degree < 1) {
    throw std::invalid_argument("diffusion needs a graph with at least one edge (d_max >= 1)");
  }
}

double GaussianStream::Uniform() {
  // 53 random bits, shifted into (0, 1] so that the logarithm below is finite.
  return (static_cast<double>(rng_() >> 11) + 1.0) * 0x1.0p-53;
}

double GaussianStream::Next() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  const double radius = std::sqrt(-2.0 * std::log(Uniform()));
  const double angle = kTwoPi * Uniform();
  spare_ = radius * std::sin(angle);
  has_spare_ = true;
  return radius * std::cos(angle);
}

std::string GaussianStream::Save() const {
  std::ostringstream out;
  out << rng_ << ' ' << (has_spare_ ? 1 : 0) << ' ' << std::hexfloat << spare_;
  return out.str();
}

void GaussianStream::Load(const std::string& text) {
  std::istringstream in(text);
  std::mt19937_64 rng;
  int has_spare = 0;
  std::string spare;
  in >> rng >> has_spare >> spare;
  if (!in || (has_spare != 0 && has_spare != 1)) {
    throw std::invalid_argument("checkpoint: bad noise generator state");
  }
  rng_ = rng;
  has_spare_ = has_spare == 1;
  spare_ = std::strtod(spare.c_str(), nullptr);
}

Diffusion::Diffusion(const NodeSetup& setup, const DiffusionParams& params)
    : setup_(setup),
      params_(params),
      self_weight_(0.0),
      edge_weight_(0.0),
      noise_(setup.seed),
      y_(Vec::Zero(1)) {
  params_.Validate();
  const int degree = static_cast<int>(setup.neighbors.size());
  if (degree > params_.max_degree) {
    throw std::invalid_argument("node " + std::to_string(setup.id) + " has degree " +
                                std::to_string(degree) + " above d_max " +
                                std::to_string(params_.max_degree));
  }
  self_weight_ = params_.SelfWeight(degree);
  edge_weight_ = params_.EdgeWeight();
}

void Diffusion::Advance(const std::vector<const Vec*>& inbox) {
  CheckInbox(setup_, inbox, 1);
  const double mixed = LaplacianMix(setup_.id, setup_.neighbors, self_weight_, y_[0], edge_weight_,
                                    [&](size_t k) { return (*inbox[k])[0]; });
  y_[0] = mixed + params_.sigma * noise_.Next();
  ++iteration_;
}

bool Diffusion::SaveState(AlgorithmState* s) const {
  *s = AlgorithmState();
  s->algorithm = name();
  s->ints = {iteration_};
  s->vectors = {y_};
  s->texts = {noise_.Save()};
  return true;
}

void Diffusion::LoadState(const AlgorithmState& s) {
  CheckStateShape(s, name(), 1, 0, 1, 1);
  if (s.vectors[0].size() != 1) throw std::invalid_argument("checkpoint: wrong dimension");
  noise_.Load(s.texts[0]);
  iteration_ = s.ints[0];
  y_ = s.vectors[0];
}

DiffusionNetwork::DiffusionNetwork(const std::vector<NodeSetup>& nodes,
                                   const DiffusionParams& params)
    : nodes_(nodes), params_(params) {
  params_.Validate();
  const int n = static_cast<int>(nodes.size());
  for (int i = 0; i < n; ++i) {
    if (nodes[i].id != i) throw std::invalid_argument("diffusion network: node ids must be 0..N-1");
    const int degree = static_cast<int>(nodes[i].neighbors.size());
    if (degree > params_.max_degree) {
      throw std::invalid_argument("node " + std::to_string(i) + " has degree above d_max");
    }
    for (int j : nodes[i].neighbors) {
      if (j < 0 || j >= n) throw std::invalid_argument("diffusion network: neighbour out of range");
    }
    self_weight_.push_back(params_.SelfWeight(degree));
    noise_.emplace_back(nodes[i].seed);
  }
  y_ = Vec::Zero(n);
  next_ = Vec::Zero(n);
}

void DiffusionNetwork::Step() {
  const double edge_weight = params_.EdgeWeight();
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const std::vector<int>& nbrs = nodes_[i].neighbors;
    const double mixed = LaplacianMix(static_cast<int>(i), nbrs, self_weight_[i], y_[i],
                                      edge_weight, [&](size_t k) { return y_[nbrs[k]]; });
    next_[i] = mixed + params_.sigma * noise_[i].Next();
  }
  y_.swap(next_);
  ++step_;
}

}  // namespace starling::algorithms
