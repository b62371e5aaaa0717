// The one-command launchers with the real tools: examples/launch_mpi.sh under Debian's Open MPI
// (8 daemons on this machine, --oversubscribe) and examples/launch_ssh.sh (with a stand-in for
// ssh that runs the command here: no sshd in the test machine). Each daemon takes its id from
// the launcher (--id auto under mpirun), agrees on the cluster file through the run directory
// (--rendezvous) and runs EXTRA; the final models must be the simulator's, computed here on the
// graph that the options ask for (not the generated file's). A rank that never comes up must
// make the others fail by the rendezvous deadline, naming it, with a non-zero exit.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "tests/daemon_cluster.h"
#include "tests/subprocess.h"
#include "tests/written_data.h"
#include "topology/cluster_file.h"
#include "topology/generators.h"

namespace starling {
namespace {

namespace fs = std::filesystem;

const std::string kSource = STARLING_SOURCE_DIR;
const std::string kProbe = std::string(STARLING_BINARY_DIR) + "/node/starling-probe";

bool HaveMpirun() { return std::system("command -v mpirun >/dev/null 2>&1") == 0; }

std::string WriteScript(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), 0755);
  return path;
}

// The run options every daemon of these tests gets (and the simulator, below).
std::vector<std::string> RunOptions(const std::string& data, int iterations, int port) {
  return {"--algorithm",
          "extra",
          "--problem",
          "logistic",
          "--l2",
          "1e-2",
          "--data",
          data,
          "--format",
          "libsvm",
          "--seed",
          "7",
          "--iterations",
          std::to_string(iterations),
          "--topology",
          "er:0.5",
          "--host",
          "127.0.0.1",
          "--port",
          std::to_string(port),
          "--give-up-s",
          "120",
          "--rendezvous-timeout-s",
          "120"};
}

// Runs `argv` (a launcher), with output to DIR/launcher.log; returns its exit code (-1: still
// running at the deadline, then killed).
int RunLauncher(const std::vector<std::string>& argv, const std::string& dir, int timeout_s) {
  testing::Subprocess launcher(argv, dir + "/launcher.log");
  const int code = launcher.Wait(std::chrono::seconds(timeout_s));
  if (code == -1) launcher.Kill();
  return code;
}

// The run's final models against the simulator's on the graph of --topology er:0.5 (seed 7),
// and the generated cluster file's graph against that graph.
void ExpectSimulatorModels(const std::string& run_dir, const std::string& data, int n,
                           int iterations) {
  const topology::Cluster cluster = topology::ReadClusterFile(run_dir + "/cluster.conf");
  ASSERT_EQ(cluster.nodes.size(), static_cast<size_t>(n));
  EXPECT_EQ(cluster.graph.Edges(), topology::MakeTopology("er:0.5", n, 7).Edges());
  for (int i = 0; i < n; ++i) EXPECT_FALSE(cluster.nodes[i].public_key.empty()) << "node " << i;
  const std::vector<Vec> simulated =
      testing::SimulatedA9aModels("extra", data, run_dir + "/cluster.conf", n, iterations,
                                  [](node::RunConfig* c) { c->topology = "er:0.5"; });
  double worst = 0;
  for (int i = 0; i < n; ++i) {
    const Vec model = testing::ReadModelFile(run_dir + "/model-" + std::to_string(i) + ".txt");
    ASSERT_EQ(model.size(), simulated[i].size()) << "node " << i;
    EXPECT_LE((model - simulated[i]).norm(), 1e-9 * simulated[i].norm()) << "node " << i;
    worst = std::max(worst, (model - simulated[i]).norm() / simulated[i].norm());
  }
  std::cout << n << " nodes, " << cluster.graph.num_edges() << " edges: largest relative "
            << "difference to the simulator's models " << worst << "\n";
}

std::string Logs(const std::string& run_dir, int n) {
  std::string all = testing::ReadFile(run_dir + "/../launcher.log");
  for (int i = 0; i < n; ++i) {
    all += "\n== node-" + std::to_string(i) + ".log\n" +
           testing::ReadFile(run_dir + "/node-" + std::to_string(i) + ".log");
  }
  return all;
}

TEST(Launchers, MpirunEightNodesEqualTheSimulator) {
  if (!HaveMpirun()) GTEST_SKIP() << "no mpirun (apt-get install openmpi-bin)";
  const std::string dir = testing::FreshTempDir("launch-mpi");
  const std::string data = testing::WriteLogisticData(dir + "/data.svm", 800, 12, 5);
  const std::string run_dir = dir + "/run";
  const int n = 8, iterations = 120;
  // A probe key put in the run directory by the launcher; the monitor, started first, finds the
  // run from the same directory.
  const net::CurveKeyPair probe = net::WriteCurveKeyFiles(dir + "/probe");
  std::vector<std::string> argv = {"/bin/bash",
                                   kSource + "/examples/launch_mpi.sh",
                                   "-n",
                                   std::to_string(n),
                                   "--dir",
                                   run_dir,
                                   "--probe-key",
                                   dir + "/probe.pub",
                                   "--mpirun-arg",
                                   "--oversubscribe",
                                   "--mpirun-arg",
                                   "--allow-run-as-root",
                                   "--starlingd",
                                   testing::kDaemonBinary,
                                   "--"};
  const std::vector<std::string> options = RunOptions(data, iterations, testing::PortBase());
  argv.insert(argv.end(), options.begin(), options.end());
  fs::create_directories(run_dir);
  std::vector<std::string> monitor = {
      kProbe,        "monitor", "--rendezvous",  run_dir, "--secret-key", dir + "/probe.key",
      "--timeout-s", "300",     "--interval-ms", "1000",  "--metrics",    dir + "/monitor.jsonl"};
  for (size_t k = 0; k < 16; ++k) monitor.push_back(options[k]);  // run options and --topology
  testing::Subprocess watcher(monitor, dir + "/monitor.log");
  const int code = RunLauncher(argv, dir, 400);
  ASSERT_EQ(code, 0) << Logs(run_dir, n);
  ExpectSimulatorModels(run_dir, data, n, iterations);
  const std::string log0 = testing::ReadFile(run_dir + "/node-0.log");
  EXPECT_NE(log0.find("--id auto: OMPI_COMM_WORLD_RANK=0, OMPI_COMM_WORLD_SIZE=8"),
            std::string::npos)
      << log0;
  EXPECT_EQ(watcher.Wait(std::chrono::seconds(120)), 0) << testing::ReadFile(dir + "/monitor.log");
  fs::remove_all(dir);
}

// Rank 2 starts but its starlingd never does (a host that does not come up): the others give up
// at the 6 s rendezvous deadline naming node 2, exit 3, and mpirun ends non-zero.
TEST(Launchers, MpirunRankThatNeverComesUpIsNamedByTheDeadline) {
  if (!HaveMpirun()) GTEST_SKIP() << "no mpirun (apt-get install openmpi-bin)";
  const std::string dir = testing::FreshTempDir("launch-mpi-missing");
  const std::string data = testing::WriteLogisticData(dir + "/data.svm", 200, 6, 5);
  const std::string run_dir = dir + "/run";
  const int n = 4;
  const std::string wrapper = WriteScript(
      dir + "/starlingd-but-rank-2",
      "#!/bin/sh\nif [ \"$OMPI_COMM_WORLD_RANK\" = 2 ]; then exec sleep 120; fi\nexec " +
          testing::kDaemonBinary + " \"$@\"\n");
  std::vector<std::string> argv = {"/bin/bash",
                                   kSource + "/examples/launch_mpi.sh",
                                   "-n",
                                   std::to_string(n),
                                   "--dir",
                                   run_dir,
                                   "--mpirun-arg",
                                   "--oversubscribe",
                                   "--mpirun-arg",
                                   "--allow-run-as-root",
                                   "--starlingd",
                                   wrapper,
                                   "--"};
  std::vector<std::string> options = RunOptions(data, 20, testing::PortBase());
  options.back() = "6";  // --rendezvous-timeout-s
  argv.insert(argv.end(), options.begin(), options.end());
  const auto start = std::chrono::steady_clock::now();
  const int code = RunLauncher(argv, dir, 240);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(code, 3) << "mpirun passes on the first failing rank's exit code (3: gave up "
                        "waiting); "
                     << Logs(run_dir, n);
  EXPECT_NE(code, -1) << "the launcher hung; " << Logs(run_dir, n);
  int named = 0;
  for (int i : {0, 1, 3}) {
    const std::string log = testing::ReadFile(run_dir + "/node-" + std::to_string(i) + ".log");
    if (log.find("missing node 2 (no " + run_dir + "/node-2.publish)") != std::string::npos) {
      ++named;
    }
  }
  // mpirun ends the job at the first rank that fails, so the others may be killed before
  // their own deadline message; at least one must have written it.
  EXPECT_GE(named, 1) << Logs(run_dir, n);
  EXPECT_FALSE(fs::exists(run_dir + "/cluster.conf"));
  std::cout << "rendezvous deadline 6 s: mpirun exit " << code << " after " << seconds << " s, "
            << named << " of 3 nodes logged the missing node\n";
  fs::remove_all(dir);
}

// What a user sees for the mistakes around --id auto and --rendezvous: each names its cause,
// with exit 2 for a configuration error and 3 for giving up waiting.
TEST(Launchers, IdAutoAndRendezvousMistakesNameTheirCause) {
  const std::string dir = testing::FreshTempDir("launch-errors");
  const std::string data = testing::WriteLogisticData(dir + "/data.svm", 60, 4, 3);
  const std::string cluster =
      testing::WriteLoopbackCluster(dir, topology::MakeTopology("ring", 3, 1), 7000, false);
  const std::vector<std::string> run = {"--data", data, "--format", "libsvm", "--iterations", "5"};
  int count = 0;
  // Runs starlingd with `args` and the run options; returns its exit code and output.
  auto daemon = [&](std::vector<std::string> args, std::string* output) {
    args.insert(args.begin(), testing::kDaemonBinary);
    args.insert(args.end(), run.begin(), run.end());
    const std::string log = dir + "/run-" + std::to_string(count++) + ".log";
    testing::Subprocess p(args, log);
    const int code = p.Wait(std::chrono::seconds(60));
    *output = testing::ReadFile(log);
    return code;
  };
  std::string out;
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK",
                           "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS"}) {
    unsetenv(name);
  }
  EXPECT_EQ(daemon({"--id", "auto", "--cluster", cluster, "--allow-plaintext"}, &out), 2) << out;
  EXPECT_NE(out.find("--id auto: none of OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, SLURM_PROCID"),
            std::string::npos)
      << out;

  setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "5", 1);
  EXPECT_EQ(daemon({"--id", "auto", "--cluster", cluster, "--allow-plaintext"}, &out), 2) << out;
  EXPECT_NE(out.find("(OMPI_COMM_WORLD_SIZE=5) but " + cluster + " lists 3 nodes"),
            std::string::npos)
      << out;
  EXPECT_EQ(daemon({"--id", "auto", "--rendezvous", dir + "/r1", "--nodes", "4"}, &out), 2) << out;
  EXPECT_NE(out.find("(OMPI_COMM_WORLD_SIZE=5) but --nodes is 4"), std::string::npos) << out;
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("OMPI_COMM_WORLD_SIZE");

  // Alone at a rendezvous of 3: gives up at the deadline naming the two others.
  const std::string r2 = dir + "/r2";
  const std::vector<std::string> at_r2 = {"--rendezvous",
                                          r2,
                                          "--nodes",
                                          "3",
                                          "--host",
                                          "127.0.0.1",
                                          "--port",
                                          std::to_string(testing::PortBase()),
                                          "--rendezvous-timeout-s",
                                          "1"};
  std::vector<std::string> args = {"--id", "1"};
  args.insert(args.end(), at_r2.begin(), at_r2.end());
  EXPECT_EQ(daemon(args, &out), 3) << out;
  EXPECT_NE(out.find("1 of 3 nodes published; missing nodes 0, 2 (no " + r2 + "/node-0.publish)"),
            std::string::npos)
      << out;
  // The same id again (another process, or the folder of an earlier run).
  EXPECT_EQ(daemon(args, &out), 2) << out;
  EXPECT_NE(out.find(r2 + "/node-1.publish: exists already"), std::string::npos) << out;
  // A node started with other run options is named by its file.
  args = {"--id", "2", "--l2", "0.5"};
  args.insert(args.end(), at_r2.begin(), at_r2.end());
  EXPECT_EQ(daemon(args, &out), 2) << out;
  EXPECT_NE(out.find(r2 + "/node-1.publish: run fingerprint"), std::string::npos) << out;
  // ... with the first option that differs and both values.
  EXPECT_NE(out.find("other run options: --l2 0.5 here, "), std::string::npos) << out;
  EXPECT_NE(out.find(" at node 1"), std::string::npos) << out;
  fs::remove_all(dir);
}

// The ssh mode, with a stand-in for ssh that runs the remote command on this machine; host
// 'down' fails as ssh does for a host that does not answer (exit 255).
std::string WriteFakeSsh(const std::string& dir) {
  return WriteScript(dir + "/fake-ssh",
                     "#!/bin/sh\nhost=$1; shift\n"
                     "if [ \"$host\" = down ]; then echo \"ssh: connect to host down: No route "
                     "to host\" >&2; exit 255; fi\nexec /bin/sh -c \"$*\"\n");
}

TEST(Launchers, SshHostfileFourNodesEqualTheSimulator) {
  const std::string dir = testing::FreshTempDir("launch-ssh");
  const std::string data = testing::WriteLogisticData(dir + "/data.svm", 600, 10, 9);
  const std::string run_dir = dir + "/run";
  const int n = 4, iterations = 100;
  // Every "host" is this machine (the stand-in for ssh), so one host name: its four nodes take
  // ports 4 apart (STARLING_LOCAL_RANK), as they would on one real host.
  std::ofstream(dir + "/hosts")
      << "# one host, two lines of two slots\nalpha slots=2\nalpha slots=2\n";
  setenv("STARLING_SSH", WriteFakeSsh(dir).c_str(), 1);
  std::vector<std::string> argv = {"/bin/bash",   kSource + "/examples/launch_ssh.sh",
                                   "--hostfile",  dir + "/hosts",
                                   "--dir",       run_dir,
                                   "--starlingd", testing::kDaemonBinary,
                                   "--"};
  const std::vector<std::string> options = RunOptions(data, iterations, testing::PortBase());
  argv.insert(argv.end(), options.begin(), options.end());
  const int code = RunLauncher(argv, dir, 300);
  unsetenv("STARLING_SSH");
  ASSERT_EQ(code, 0) << Logs(run_dir, n);
  ExpectSimulatorModels(run_dir, data, n, iterations);
  fs::remove_all(dir);
}

TEST(Launchers, SshHostThatIsDownIsNamedByTheDeadline) {
  const std::string dir = testing::FreshTempDir("launch-ssh-down");
  const std::string data = testing::WriteLogisticData(dir + "/data.svm", 200, 6, 9);
  const std::string run_dir = dir + "/run";
  std::ofstream(dir + "/hosts") << "alpha slots=2\ndown\nalpha\n";
  setenv("STARLING_SSH", WriteFakeSsh(dir).c_str(), 1);
  std::vector<std::string> argv = {"/bin/bash",   kSource + "/examples/launch_ssh.sh",
                                   "--hostfile",  dir + "/hosts",
                                   "--dir",       run_dir,
                                   "--starlingd", testing::kDaemonBinary,
                                   "--"};
  std::vector<std::string> options = RunOptions(data, 20, testing::PortBase());
  options.back() = "5";  // --rendezvous-timeout-s
  argv.insert(argv.end(), options.begin(), options.end());
  const int code = RunLauncher(argv, dir, 240);
  unsetenv("STARLING_SSH");
  EXPECT_EQ(code, 3) << "the first failing node's exit code, node 0's";
  EXPECT_NE(code, -1) << "the launcher hung";
  const std::string launcher = testing::ReadFile(dir + "/launcher.log");
  EXPECT_NE(launcher.find("node 2 on down exit 255"), std::string::npos) << launcher;
  for (int i : {0, 1, 3}) {
    const std::string log = testing::ReadFile(run_dir + "/node-" + std::to_string(i) + ".log");
    EXPECT_NE(log.find("missing node 2 (no " + run_dir + "/node-2.publish)"), std::string::npos)
        << "node " << i << ":\n"
        << log;
    EXPECT_NE(launcher.find("node " + std::to_string(i) + " on alpha exit 3"), std::string::npos)
        << launcher;
  }
  fs::remove_all(dir);
}

// Slurm on this one host (munged, slurmctld and slurmd from a configuration in a temporary
// folder, tests/e2e/single_host_slurm.sh), then examples/starling.sbatch submitted with
// `sbatch --wait --ntasks 4`: its srun starts 4 daemons that take their ids from SLURM_PROCID and
// their number from SLURM_NTASKS. Skipped, with the reason, where Slurm cannot start.
TEST(Launchers, SlurmBatchOfFourNodesEqualsTheSimulator) {
  const std::string dir = testing::FreshTempDir("launch-slurm");
  const std::string slurm = kSource + "/tests/e2e/single_host_slurm.sh";
  // base, base+1: Slurm; base+2..base+17 and base+18..base+33: the nodes of the two runs.
  const int base = testing::PortBase();
  int started = 0;
  {
    testing::Subprocess start({"/bin/bash", slurm, "start", dir + "/slurm", std::to_string(base)},
                              dir + "/slurm-start.log");
    started = start.Wait(std::chrono::seconds(120));
  }
  // Ends the daemons on every way out of the test (they also end by themselves, under timeout).
  struct Stop {
    std::string script, work;
    void Now() {
      if (script.empty()) return;
      testing::Subprocess stop({"/bin/bash", script, "stop", work}, "/dev/null");
      stop.Wait(std::chrono::seconds(30));
      script.clear();
    }
    ~Stop() {
      try {
        Now();
      } catch (const std::exception&) {
      }
    }
  } stop{slurm, dir + "/slurm"};
  if (started == 77) GTEST_SKIP() << testing::ReadFile(dir + "/slurm-start.log");
  ASSERT_EQ(started, 0) << testing::ReadFile(dir + "/slurm-start.log");

  const std::string data = testing::WriteLogisticData(dir + "/data.svm", 600, 10, 11);
  const std::string run_dir = dir + "/run";
  const int n = 4, iterations = 100;
  setenv("SLURM_CONF", (dir + "/slurm/slurm.conf").c_str(), 1);
  setenv("STARLINGD", testing::kDaemonBinary.c_str(), 1);
  setenv("STARLING_RUN_DIR", run_dir.c_str(), 1);
  std::vector<std::string> argv = {"/usr/bin/sbatch",
                                   "--wait",
                                   "--ntasks",
                                   std::to_string(n),
                                   "--output",
                                   dir + "/batch.out",
                                   kSource + "/examples/starling.sbatch"};
  const std::vector<std::string> options = RunOptions(data, iterations, base + 2);
  argv.insert(argv.end(), options.begin(), options.end());
  const int code = RunLauncher(argv, dir, 400);
  unsetenv("SLURM_CONF");
  unsetenv("STARLINGD");
  unsetenv("STARLING_RUN_DIR");
  ASSERT_EQ(code, 0) << testing::ReadFile(dir + "/batch.out") << Logs(run_dir, n);
  ExpectSimulatorModels(run_dir, data, n, iterations);
  const std::string log3 = testing::ReadFile(run_dir + "/node-3.log");
  EXPECT_NE(log3.find("--id auto: SLURM_PROCID=3, SLURM_NTASKS=4"), std::string::npos) << log3;

  // The same run with srun itself (`srun -n 4 starlingd --id auto --rendezvous DIR ...`), as an
  // interactive allocation would start it.
  const std::string srun_dir = dir + "/srun-run";
  fs::create_directories(srun_dir);
  setenv("SLURM_CONF", (dir + "/slurm/slurm.conf").c_str(), 1);
  std::vector<std::string> srun = {"/usr/bin/srun",
                                   "-n",
                                   std::to_string(n),
                                   "--output",
                                   srun_dir + "/node-%t.log",
                                   testing::kDaemonBinary,
                                   "--id",
                                   "auto",
                                   "--rendezvous",
                                   srun_dir,
                                   "--final-model",
                                   srun_dir + "/model-{id}.txt"};
  const std::vector<std::string> srun_options = RunOptions(data, iterations, base + 18);
  srun.insert(srun.end(), srun_options.begin(), srun_options.end());
  const int srun_code = RunLauncher(srun, dir, 300);
  unsetenv("SLURM_CONF");
  ASSERT_EQ(srun_code, 0) << Logs(srun_dir, n);
  ExpectSimulatorModels(srun_dir, data, n, iterations);
  stop.Now();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace starling
