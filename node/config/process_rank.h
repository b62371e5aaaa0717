// `starlingd --id auto`: a node's id from the process manager that started it (mpirun, srun,
// a PMI or PMIx launcher). Each one tells a process its rank, and most the number of processes,
// in environment variables; this reads them, so that one command line serves every rank.
#pragma once

#include <functional>
#include <string>

namespace starling::node {

// The rank found and where: `rank_variable` is the variable read (e.g. "OMPI_COMM_WORLD_RANK"),
// `size` the number of processes the same launcher announced (-1 if it announces none) and
// `size_variable` its name. `others` lists further rank variables that were set too (e.g.
// SLURM_PROCID of the batch step around an mpirun), as "NAME=VALUE", for the log.
struct ProcessRank {
  int rank = -1;
  int size = -1;
  std::string rank_variable;
  std::string size_variable;
  std::string others;
};

// Reads, in this order, OMPI_COMM_WORLD_RANK (size OMPI_COMM_WORLD_SIZE), PMIX_RANK (size
// PMIX_SIZE, else OMPI_COMM_WORLD_SIZE), PMI_RANK (PMI_SIZE), SLURM_PROCID (SLURM_NTASKS, else
// SLURM_NPROCS); the first one set wins (Open MPI first: an mpirun inside a Slurm batch job
// inherits the batch step's SLURM_PROCID=0). `getenv` returns nullptr for an unset variable
// (std::getenv in the daemon; a map in tests). Throws std::invalid_argument naming --id auto and
// the variable: none set, a value that is not a decimal integer in 0..999999, a size below 1, or
// a rank not below its size.
ProcessRank RankFromEnvironment(const std::function<const char*(const char*)>& getenv);

// A process's index among the processes its manager started on the same host, which puts
// several nodes of one host on different ports (--port PORT: node PORT + 4 x index). Read from
// OMPI_COMM_WORLD_LOCAL_RANK (Open MPI), MPI_LOCALRANKID (MPICH's Hydra), SLURM_LOCALID (srun) or
// STARLING_LOCAL_RANK (examples/launch_ssh.sh), the first one set; index 0 and no variable if
// none is. Throws std::invalid_argument naming --port and the variable for a value that is not
// a whole number.
struct LocalRank {
  int index = 0;
  std::string variable;  // empty: none set
};
LocalRank LocalRankFromEnvironment(const std::function<const char*(const char*)>& getenv);

// Throws std::invalid_argument if the launcher's size is known and differs from `nodes`, the
// number of nodes the run has (`what` says where that number comes from, e.g. "cluster.conf lists
// 5 nodes" or "--nodes 5").
void CheckRankAgainstNodes(const ProcessRank& rank, int nodes, const std::string& what);

}  // namespace starling::node
