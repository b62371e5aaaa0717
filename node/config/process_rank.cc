#include "node/config/process_rank.h"

#include <cstring>
#include <stdexcept>

namespace starling::node {

namespace {

struct Launcher {
  const char* rank;
  const char* size;
  const char* fallback_size;
};

// Open MPI (mpirun/orterun/prterun), PMIx clients, MPICH/Intel MPI (Hydra's PMI), Slurm's srun.
constexpr Launcher kLaunchers[] = {
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", nullptr},
    {"PMIX_RANK", "PMIX_SIZE", "OMPI_COMM_WORLD_SIZE"},
    {"PMI_RANK", "PMI_SIZE", nullptr},
    {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_NPROCS"},
};

constexpr int kMaxRank = 999999;

// A whole decimal number in [0, kMaxRank]; false for anything else (sign, spaces, overflow).
bool ParseCount(const char* text, int* value) {
  const size_t length = std::strlen(text);
  if (length == 0 || length > 6) return false;
  int v = 0;
  for (size_t i = 0; i < length; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    v = v * 10 + (text[i] - '0');
  }
  *value = v;
  return v <= kMaxRank;
}

int ParseVariable(const char* name, const char* text) {
  int value = 0;
  if (!ParseCount(text, &value)) {
    throw std::invalid_argument(std::string("--id auto: ") + name + "='" + text +
                                "' is not a whole number in 0.." + std::to_string(kMaxRank));
  }
  return value;
}

}  // namespace

ProcessRank RankFromEnvironment(const std::function<const char*(const char*)>& getenv) {
  ProcessRank found;
  for (const Launcher& launcher : kLaunchers) {
    const char* rank = getenv(launcher.rank);
    if (rank == nullptr) continue;
    if (!found.rank_variable.empty()) {
      found.others += (found.others.empty() ? "" : ", ") + std::string(launcher.rank) + "=" + rank;
      continue;
    }
    found.rank = ParseVariable(launcher.rank, rank);
    found.rank_variable = launcher.rank;
    for (const char* size_name : {launcher.size, launcher.fallback_size}) {
      if (size_name == nullptr) continue;
      if (const char* size = getenv(size_name)) {
        found.size = ParseVariable(size_name, size);
        found.size_variable = size_name;
        break;
      }
    }
  }
  if (found.rank_variable.empty()) {
    std::string names;
    for (const Launcher& launcher : kLaunchers) {
      names += (names.empty() ? "" : ", ") + std::string(launcher.rank);
    }
    throw std::invalid_argument(
        "--id auto: none of " + names +
        " is set; start starlingd with mpirun, srun or another process manager, or give --id N");
  }
  if (found.size == 0) {
    throw std::invalid_argument("--id auto: " + found.size_variable + "=0 processes");
  }
  if (found.size > 0 && found.rank >= found.size) {
    throw std::invalid_argument("--id auto: " + found.rank_variable + "=" +
                                std::to_string(found.rank) + " is not below " +
                                found.size_variable + "=" + std::to_string(found.size));
  }
  return found;
}

LocalRank LocalRankFromEnvironment(const std::function<const char*(const char*)>& getenv) {
  for (const char* name :
       {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "STARLING_LOCAL_RANK"}) {
    const char* text = getenv(name);
    if (text == nullptr) continue;
    int value = 0;
    if (!ParseCount(text, &value)) {
      throw std::invalid_argument(std::string("--port: ") + name + "='" + text +
                                  "' is not a whole number in 0.." + std::to_string(kMaxRank));
    }
    return {value, name};
  }
  return {};
}

void CheckRankAgainstNodes(const ProcessRank& rank, int nodes, const std::string& what) {
  if (rank.size < 0 || rank.size == nodes) return;
  throw std::invalid_argument("--id auto: the process manager started " +
                              std::to_string(rank.size) + " processes (" + rank.size_variable +
                              "=" + std::to_string(rank.size) + ") but " + what +
                              "; start one process per node");
}

}  // namespace starling::node
