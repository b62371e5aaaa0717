// `starlingd --id auto`: the rank and size read from a process manager's environment
// (node/config/process_rank.h), on environments written here as maps.
#include "node/config/process_rank.h"

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>

namespace starling::node {
namespace {

ProcessRank Resolve(const std::map<std::string, std::string>& env) {
  return RankFromEnvironment([&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

std::string ErrorOf(const std::map<std::string, std::string>& env) {
  try {
    Resolve(env);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ProcessRank, OpenMpi) {
  const ProcessRank r = Resolve({{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "8"}});
  EXPECT_EQ(r.rank, 5);
  EXPECT_EQ(r.size, 8);
  EXPECT_EQ(r.rank_variable, "OMPI_COMM_WORLD_RANK");
  EXPECT_EQ(r.size_variable, "OMPI_COMM_WORLD_SIZE");
  EXPECT_EQ(r.others, "");
}

TEST(ProcessRank, SlurmWithNtasksOrNprocs) {
  ProcessRank r = Resolve({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}, {"SLURM_NPROCS", "9"}});
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.size, 4);
  EXPECT_EQ(r.size_variable, "SLURM_NTASKS");
  r = Resolve({{"SLURM_PROCID", "0"}, {"SLURM_NPROCS", "2"}});
  EXPECT_EQ(r.size, 2);
  EXPECT_EQ(r.size_variable, "SLURM_NPROCS");
}

TEST(ProcessRank, PmiAndPmix) {
  ProcessRank r = Resolve({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}});
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.rank_variable, "PMI_RANK");
  EXPECT_EQ(r.size, 2);
  // PMIx announces no size of its own in the environment: none known, -1.
  r = Resolve({{"PMIX_RANK", "7"}});
  EXPECT_EQ(r.rank, 7);
  EXPECT_EQ(r.size, -1);
  EXPECT_EQ(r.size_variable, "");
}

// An mpirun inside a Slurm batch job: the batch step's SLURM_PROCID=0 is inherited by every
// rank; Open MPI's variable wins, and the other is reported.
TEST(ProcessRank, OpenMpiWinsOverAnInheritedSlurmRank) {
  const ProcessRank r = Resolve({{"OMPI_COMM_WORLD_RANK", "6"},
                                 {"OMPI_COMM_WORLD_SIZE", "8"},
                                 {"SLURM_PROCID", "0"},
                                 {"SLURM_NTASKS", "1"}});
  EXPECT_EQ(r.rank, 6);
  EXPECT_EQ(r.size, 8);
  EXPECT_EQ(r.others, "SLURM_PROCID=0");
}

TEST(ProcessRank, NoneSetNamesEveryVariable) {
  const std::string e = ErrorOf({{"RANK", "3"}});
  EXPECT_NE(e.find("--id auto"), std::string::npos) << e;
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    EXPECT_NE(e.find(name), std::string::npos) << e;
  }
}

TEST(ProcessRank, MalformedValuesAreRefusedNamingTheVariable) {
  for (const std::string bad : {"", "-1", "+2", " 3", "3 ", "1e3", "0x10", "1234567", "abc"}) {
    const std::string e = ErrorOf({{"SLURM_PROCID", bad}});
    EXPECT_NE(e.find("SLURM_PROCID='" + bad + "'"), std::string::npos) << bad << ": " << e;
  }
  EXPECT_NE(ErrorOf({{"PMI_RANK", "0"}, {"PMI_SIZE", "two"}}).find("PMI_SIZE='two'"),
            std::string::npos);
  EXPECT_NE(ErrorOf({{"PMI_RANK", "0"}, {"PMI_SIZE", "0"}}).find("PMI_SIZE=0"), std::string::npos);
}

TEST(ProcessRank, RankNotBelowSizeIsRefused) {
  const std::string e = ErrorOf({{"OMPI_COMM_WORLD_RANK", "8"}, {"OMPI_COMM_WORLD_SIZE", "8"}});
  EXPECT_NE(e.find("OMPI_COMM_WORLD_RANK=8 is not below OMPI_COMM_WORLD_SIZE=8"), std::string::npos)
      << e;
}

TEST(ProcessRank, SizeMustMatchTheRun) {
  const ProcessRank r = Resolve({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "4"}});
  EXPECT_NO_THROW(CheckRankAgainstNodes(r, 4, "cluster.conf lists 4 nodes"));
  try {
    CheckRankAgainstNodes(r, 5, "cluster.conf lists 5 nodes");
    ADD_FAILURE() << "a size of 4 against 5 nodes was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("SLURM_NTASKS=4"), std::string::npos) << what;
    EXPECT_NE(what.find("cluster.conf lists 5 nodes"), std::string::npos) << what;
  }
  // An unknown size (PMIx alone) cannot disagree.
  EXPECT_NO_THROW(CheckRankAgainstNodes(Resolve({{"PMIX_RANK", "0"}}), 5, "x"));
}

}  // namespace
}  // namespace starling::node
