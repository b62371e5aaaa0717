#include "node/config/run_id.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "algorithms/data/block_cyclic.h"
#include "algorithms/schedule/step_schedule.h"
#include "net/envelope.h"
#include "node/config/method_params.h"

namespace starling::node {

namespace {

// A file by its contents, not its path (the same data may sit in different folders, under
// other names, on different hosts): "SIZE:HASH", HASH the FNV-1a 64 of its bytes. Files up to
// kWholeFileBytes are hashed whole; a larger one by kSampleBlocks blocks spread evenly over it
// (first and last included), so that the id of a multi-gigabyte data set costs a few reads, and
// two files that differ only between the blocks pass for one (their sizes, labels and feature
// scaling are in the id too).
constexpr uint64_t kWholeFileBytes = 16ull << 20;
constexpr uint64_t kSampleBlocks = 64;
constexpr uint64_t kSampleBlockBytes = 64ull << 10;

}  // namespace

std::string FileIdentity(const std::string& path) {
  if (path.empty()) return "-";
  std::ifstream in(path, std::ios::binary);
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec || !in) return "?";
  uint64_t hash = 14695981039346656037ull;
  std::vector<char> block(kSampleBlockBytes);
  auto add = [&](uint64_t offset, uint64_t length) {
    in.clear();
    in.seekg(static_cast<std::streamoff>(offset));
    while (length > 0 && in) {
      in.read(block.data(), static_cast<std::streamsize>(std::min<uint64_t>(length, block.size())));
      const std::streamsize got = in.gcount();
      if (got <= 0) break;
      for (std::streamsize i = 0; i < got; ++i) {
        hash ^= static_cast<unsigned char>(block[static_cast<size_t>(i)]);
        hash *= 1099511628211ull;
      }
      length -= static_cast<uint64_t>(got);
    }
  };
  if (size <= kWholeFileBytes) {
    add(0, size);
  } else {
    for (uint64_t k = 0; k < kSampleBlocks; ++k) {
      add((size - kSampleBlockBytes) / (kSampleBlocks - 1) * k, kSampleBlockBytes);
    }
  }
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(hash));
  return std::to_string(size) + ":" + text;
}

namespace {

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
  // Likewise only when given (the C ABI's front ends).
  if (!c.model_digest.empty()) s << "\nmodel_digest=" << c.model_digest;
  const std::string x0 = ResolvedX0(c);  // as resolved, so that ids from before auto stay
  s << "\nbatch=" << c.batch << "\nlocal_steps=" << c.local_steps << "\niterations=" << c.iterations
    << "\nproblem=" << c.problem << "\nl2=" << Exact(c.l2) << "\nhidden=" << c.hidden
    << "\ndata=" << FileIdentity(c.data) << "\nformat=" << c.format << "\nfeatures=" << c.features
    << "\ntest_data=" << FileIdentity(c.test_data) << "\npartition=" << c.partition
    << "\nx0=" << (x0 == "zeros" || x0 == "uniform" || x0 == "small" ? x0 : FileIdentity(x0))
    << "\nnodes=" << c.nodes << "\nseed=" << c.seed << "\ncompression=" << c.compression
    << "\nlabel_column=" << c.label_column << "\nnum_classes=" << c.num_classes
    << "\nscale=" << c.scale << "\nloss_scale=" << Exact(c.loss_scale)
    << "\nmixing=" << FileIdentity(c.mixing_file)
    << "\nlaplacian=" << FileIdentity(c.laplacian_file) << "\nedges=";
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
