#!/usr/bin/env bash
# Starts a Starling run with Open MPI's (or another MPI's) mpirun: one starlingd per rank, which
# takes its id from the rank (starlingd --id auto) and agrees on the cluster file with the
# others through a shared run directory (starlingd --rendezvous). Starling uses mpirun only to
# place the processes and tell each its rank; its traffic goes over its own ZeroMQ + CURVE
# transport, each node with a key pair made in its own memory.
#
# Usage: examples/launch_mpi.sh -n N [--hostfile FILE] [--dir RUN_DIR] [--probe-key FILE.pub]
#            [--mpirun-arg ARG]... [--starlingd PATH] -- STARLINGD_OPTIONS...
#   -n N              number of nodes (mpirun -n N)
#   --hostfile FILE   mpirun's hostfile (one host per line, 'slots=K' for K ranks on it)
#   --dir RUN_DIR     the run's directory, on a file system every host sees, new or empty
#                     (default ./starling-run-DATE-TIME): publications, cluster.conf, per-node
#                     logs node-K.log, metrics node-K.jsonl and final models model-K.txt
#   --probe-key FILE  copy a probe's public key in as RUN_DIR/probe-monitor.pub before the
#                     nodes start, so that `starling-probe monitor --rendezvous RUN_DIR
#                     --secret-key ...` is admitted
#   --mpirun-arg ARG  pass ARG to mpirun (repeat; e.g. --oversubscribe, --allow-run-as-root)
#   --starlingd PATH  the daemon (default: starlingd beside this command, as installed, else in
#                     this checkout's build, else on PATH)
# The options after -- go to every starlingd: the run options (--algorithm, --data, ...),
# --topology, --port, --host, --rendezvous-timeout-s, --give-up-s ...
# Exit code: mpirun's (0 if every node ended with 0).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
n=""
hostfile=""
run_dir=""
probe_key=""
starlingd=""
mpirun_args=()
while (($#)); do
  case $1 in
    -n) n=$2; shift 2 ;;
    --hostfile) hostfile=$2; shift 2 ;;
    --dir) run_dir=$2; shift 2 ;;
    --probe-key) probe_key=$2; shift 2 ;;
    --mpirun-arg) mpirun_args+=("$2"); shift 2 ;;
    --starlingd) starlingd=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "launch_mpi.sh: unknown option '$1' (options for starlingd go after --)" >&2; exit 2 ;;
  esac
done
[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "launch_mpi.sh: -n N: the number of nodes is required" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "launch_mpi.sh: no mpirun (Debian: apt-get install openmpi-bin)" >&2; exit 2; }
if [[ -z $starlingd ]]; then
  starlingd=$here/starlingd
  [[ -x $starlingd ]] || starlingd=$here/../build/node/starlingd
  [[ -x $starlingd ]] || starlingd=$(command -v starlingd || true)
fi
[[ -x $starlingd ]] || { echo "launch_mpi.sh: no starlingd (build it, or give --starlingd PATH)" >&2; exit 2; }
starlingd=$(cd "$(dirname "$starlingd")" && pwd)/$(basename "$starlingd")
[[ -z $hostfile || -r $hostfile ]] || { echo "launch_mpi.sh: --hostfile $hostfile: cannot read" >&2; exit 2; }

run_dir=${run_dir:-$PWD/starling-run-$(date +%Y%m%d-%H%M%S)}
mkdir -p -m 700 "$run_dir"
run_dir=$(cd "$run_dir" && pwd)
if compgen -G "$run_dir/node-*.publish" >/dev/null; then
  echo "launch_mpi.sh: $run_dir holds an earlier run (node-*.publish): give a fresh --dir" >&2
  exit 2
fi
[[ -z $probe_key ]] || cp "$probe_key" "$run_dir/probe-monitor.pub"

echo "launch_mpi.sh: $n nodes, run directory $run_dir"
echo "launch_mpi.sh: watch it with: starling-probe monitor --rendezvous $run_dir [--secret-key PROBE.key] RUN_OPTIONS"
# Each rank's output goes to RUN_DIR/node-RANK.log; the rank is the one Open MPI, or a PMI
# launcher, puts in the environment (the same that starlingd --id auto reads).
status=0
mpirun ${hostfile:+--hostfile "$hostfile"} -n "$n" "${mpirun_args[@]}" \
  sh -c 'd=$1; shift; r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-unknown}}};
         exec "$@" >"$d/node-$r.log" 2>&1' sh "$run_dir" \
  "$starlingd" --id auto --rendezvous "$run_dir" --nodes "$n" \
  --metrics "$run_dir/node-{id}.jsonl" --final-model "$run_dir/model-{id}.txt" "$@" || status=$?
echo "launch_mpi.sh: mpirun exit $status; cluster file $( [[ -f $run_dir/cluster.conf ]] && echo "$run_dir/cluster.conf" || echo "none (the rendezvous did not complete)"), logs $run_dir/node-*.log"
if ((status != 0)); then
  for f in "$run_dir"/node-*.log; do
    [[ -f $f ]] || continue
    grep -h "error" "$f" | tail -n 1 | sed "s|^|  $(basename "$f"): |" || true
  done
fi
exit "$status"
