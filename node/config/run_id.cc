#include "node/config/run_id.h"

#include <filesystem>
#include <sstream>

#include "algorithms/data/block_cyclic.h"
#include "algorithms/schedule/step_schedule.h"
#include "net/envelope.h"
#include "node/config/method_params.h"

namespace starling::node {

namespace {

std::string FileTag(const std::string& path) {
  if (path.empty()) return "-";
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return std::filesystem::path(path).filename().string() + ":" +
         (ec ? std::string("?") : std::to_string(size));
}

std::string Exact(double v) { return algorithms::CanonicalText(algorithms::ParamValue(v)); }

}  // namespace

std::string CanonicalRunText(const RunConfig& c, const topology::Graph& graph) {
  std::ostringstream s;
  s << "algorithm=" << c.algorithm;
  // Only the chosen method's own parameters: another method's cannot change this run.
  if (const algorithms::ParamSet* params = MethodParamsOf(c.algorithm)) {
    for (const algorithms::ParamDecl& decl : params->decls()) {
      const std::string value =
          algorithms::CanonicalText(algorithms::ParamSet::TypedValueOf(decl, c.params));
      if (!decl.in_run_id_at_default && value == algorithms::CanonicalText(decl.default_value)) {
        continue;
      }
      s << "\n" << decl.name << "=" << value;
    }
  }
  s << "\nstep=" << Exact(c.step);
  // Only when not constant, so that the ids of constant-step runs (and their checkpoints) stay
  // as they were.
  const algorithms::StepSchedule schedule =
      algorithms::ParseStepSchedule(c.step_schedule, c.iterations);
  if (!schedule.constant()) s << "\nstep_schedule=" << schedule.Canonical();
  // Likewise only when block-cyclic.
  const algorithms::BlockCyclicSpec blocks = algorithms::ParseBlockCyclic(c.block_cyclic);
  if (blocks.active()) s << "\nblock_cyclic=" << algorithms::BlockCyclicText(blocks);
  const std::string x0 = ResolvedX0(c);  // as resolved, so that ids from before auto stay
  s << "\nbatch=" << c.batch << "\nlocal_steps=" << c.local_steps << "\niterations=" << c.iterations
    << "\nproblem=" << c.problem << "\nl2=" << Exact(c.l2) << "\nhidden=" << c.hidden
    << "\ndata=" << FileTag(c.data) << "\nformat=" << c.format << "\nfeatures=" << c.features
    << "\ntest_data=" << FileTag(c.test_data) << "\npartition=" << c.partition
    << "\nx0=" << (x0 == "zeros" || x0 == "uniform" || x0 == "small" ? x0 : FileTag(x0))
    << "\nnodes=" << c.nodes << "\nseed=" << c.seed << "\ncompression=" << c.compression
    << "\nlabel_column=" << c.label_column << "\nnum_classes=" << c.num_classes
    << "\nscale=" << c.scale << "\nloss_scale=" << Exact(c.loss_scale)
    << "\nmixing=" << FileTag(c.mixing_file) << "\nlaplacian=" << FileTag(c.laplacian_file)
    << "\nedges=";
  for (const auto& [u, v] : graph.Edges()) s << u << "-" << v << ",";
  return s.str();
}

uint64_t RunIdFor(const RunConfig& config, const topology::Graph& graph) {
  return net::RunIdOf(CanonicalRunText(config, graph));
}

std::string CanonicalRunText(const RunConfig& config, const RunSetup& setup) {
  return CanonicalRunText(config, setup.graph) + "\nlabel_map=" + setup.labels.Canonical() +
         "\nscaling=" + setup.scaling.Canonical();
}

uint64_t RunIdFor(const RunConfig& config, const RunSetup& setup) {
  return net::RunIdOf(CanonicalRunText(config, setup));
}

}  // namespace starling::node
