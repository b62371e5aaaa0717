// starling-bench-shards: writes the row indices of every node's shard, as starlingd cuts them, for
// programs outside Starling that must train on exactly the same shards (bench/vs_torch.py gives
// them to PyTorch). It makes the same two calls as the daemons' set-up (node/config/run_setup.cc):
// the file's labels (algorithms::ReadDatasetLabels), then algorithms::Partition with the run's
// --partition, node count and --seed. Re-implementing the rule elsewhere would not do: the
// Dirichlet split draws with std::gamma_distribution, whose algorithm is the C++ library's own.
//
//   starling-bench-shards --data TRAIN --nodes N --partition SPEC [--seed 1] [--format idx]
//                         --out FILE
// FILE: one line per node, node 0 first: its row indices (0-based, ascending, rows of the file as
// read), separated by single spaces. Exit 0, or 1 with a message (2 for bad usage).
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>

#include "algorithms/data/partition.h"
#include "algorithms/data/readers.h"

namespace {

int Usage() {
  std::fprintf(stderr,
               "usage: starling-bench-shards --data TRAIN --nodes N --partition SPEC [--seed 1]\n"
               "         [--format idx] --out FILE\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data, partition, format = "idx", out;
  int nodes = 0;
  unsigned long long seed = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return Usage();
    const std::string value = argv[++i];
    if (arg == "--data") {
      data = value;
    } else if (arg == "--nodes") {
      nodes = std::atoi(value.c_str());
    } else if (arg == "--partition") {
      partition = value;
    } else if (arg == "--seed") {
      seed = std::strtoull(value.c_str(), nullptr, 10);
    } else if (arg == "--format") {
      format = value;
    } else if (arg == "--out") {
      out = value;
    } else {
      return Usage();
    }
  }
  if (data.empty() || partition.empty() || out.empty() || nodes < 1) return Usage();
  try {
    starling::algorithms::CsvColumns csv;
    csv.node = starling::algorithms::NodeColumnOf(partition);
    const starling::algorithms::Dataset table =
        starling::algorithms::ReadDatasetLabels(data, format, /*declared_features=*/0, csv);
    const starling::algorithms::Shards shards =
        starling::algorithms::Partition(table, partition, nodes, seed);
    std::ofstream file(out);
    for (const auto& rows : shards) {
      for (size_t k = 0; k < rows.size(); ++k) file << (k ? " " : "") << rows[k];
      file << '\n';
    }
    file.close();
    if (!file) {
      std::fprintf(stderr, "starling-bench-shards: cannot write %s\n", out.c_str());
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "starling-bench-shards: %s\n", e.what());
    return 1;
  }
  return 0;
}
