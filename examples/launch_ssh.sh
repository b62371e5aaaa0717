#!/usr/bin/env bash
# Starts a Starling run on the hosts of a hostfile over ssh: one starlingd per slot, node ids
# given in hostfile order (--id K), the cluster file agreed through a run directory that every
# host sees at the same path (starlingd --rendezvous; an NFS home, say). Needs ssh to each host
# without a password prompt and starlingd at the same path on each.
#
# Usage: examples/launch_ssh.sh --hostfile FILE [--dir RUN_DIR] [--probe-key FILE.pub]
#            [--starlingd PATH] -- STARLINGD_OPTIONS...
#   --hostfile FILE   lines 'HOST' or 'HOST slots=K' (K nodes on that host; # comments)
#   --dir RUN_DIR     the run's directory (default ./starling-run-DATE-TIME), new or empty
#   --probe-key FILE  copied in as RUN_DIR/probe-monitor.pub before the nodes start
#   --starlingd PATH  the daemon's path on the hosts (default: starlingd beside this command, as
#                     installed, else in this checkout's build, else on PATH)
# STARLING_SSH overrides the ssh command (default: ssh -o BatchMode=yes). Every node's output
# goes to RUN_DIR/node-K.log, ssh's own messages for node K to RUN_DIR/ssh-K.log. Exit code: 0 if every node ended with 0, else the first non-zero.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
hostfile=""
run_dir=""
probe_key=""
starlingd=$here/starlingd
[[ -x $starlingd ]] || starlingd=$here/../build/node/starlingd
[[ -x $starlingd ]] || starlingd=$(command -v starlingd || echo "$starlingd")
while (($#)); do
  case $1 in
    --hostfile) hostfile=$2; shift 2 ;;
    --dir) run_dir=$2; shift 2 ;;
    --probe-key) probe_key=$2; shift 2 ;;
    --starlingd) starlingd=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "launch_ssh.sh: unknown option '$1' (options for starlingd go after --)" >&2; exit 2 ;;
  esac
done
[[ -n $hostfile && -r $hostfile ]] || { echo "launch_ssh.sh: --hostfile FILE: required and readable" >&2; exit 2; }
read -r -a ssh_cmd <<<"${STARLING_SSH:-ssh -o BatchMode=yes}"

# One host per slot, in hostfile order.
hosts=()
line_number=0
while read -r line || [[ -n $line ]]; do
  line_number=$((line_number + 1))
  line=${line%%#*}
  read -r -a fields <<<"$line"
  ((${#fields[@]})) || continue
  slots=1
  for f in "${fields[@]:1}"; do
    if [[ $f =~ ^(slots|max_slots)=([1-9][0-9]*)$ ]]; then
      [[ ${BASH_REMATCH[1]} == slots ]] && slots=${BASH_REMATCH[2]}
    else
      echo "launch_ssh.sh: $hostfile:$line_number: '$f': expected slots=K" >&2; exit 2
    fi
  done
  for ((s = 0; s < slots; s++)); do hosts+=("${fields[0]}"); done
done <"$hostfile"
n=${#hosts[@]}
((n > 0)) || { echo "launch_ssh.sh: $hostfile lists no host" >&2; exit 2; }

run_dir=${run_dir:-$PWD/starling-run-$(date +%Y%m%d-%H%M%S)}
mkdir -p -m 700 "$run_dir"
run_dir=$(cd "$run_dir" && pwd)
if compgen -G "$run_dir/node-*.publish" >/dev/null; then
  echo "launch_ssh.sh: $run_dir holds an earlier run (node-*.publish): give a fresh --dir" >&2
  exit 2
fi
[[ -z $probe_key ]] || cp "$probe_key" "$run_dir/probe-monitor.pub"
starlingd=$(cd "$(dirname "$starlingd")" && pwd)/$(basename "$starlingd")

echo "launch_ssh.sh: $n nodes on $(printf '%s\n' "${hosts[@]}" | sort -u | wc -l) hosts, run directory $run_dir"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap 'cleanup; exit 130' INT TERM
declare -A on_host=()  # nodes started so far per host: the next one's local rank
for ((k = 0; k < n; k++)); do
  local_rank=${on_host[${hosts[$k]}]:-0}
  on_host[${hosts[$k]}]=$((local_rank + 1))
  # The remote shell gets one quoted command line: the same options for every node, its id,
  # and its output into the shared run directory. STARLING_LOCAL_RANK puts the L-th node of a
  # host on --port + 4L.
  cmd=$(printf '%q ' "$starlingd" --id "$k" --rendezvous "$run_dir" --nodes "$n" \
    --metrics "$run_dir/node-$k.jsonl" --final-model "$run_dir/model-$k.txt" "$@")
  "${ssh_cmd[@]}" "${hosts[$k]}" "cd $(printf '%q' "$run_dir") && STARLING_LOCAL_RANK=$local_rank exec $cmd >$(printf '%q' "$run_dir/node-$k.log") 2>&1" \
    </dev/null 2>"$run_dir/ssh-$k.log" &
  pids+=($!)
done
status=0
for ((k = 0; k < n; k++)); do
  code=0
  wait "${pids[$k]}" || code=$?
  if ((code != 0)); then
    why=$(grep -h error "$run_dir/node-$k.log" 2>/dev/null | tail -n 1 || true)
    [[ -n $why ]] || why=$(tail -n 1 "$run_dir/ssh-$k.log" 2>/dev/null || true)
    echo "launch_ssh.sh: node $k on ${hosts[$k]} exit $code: $why"
    ((status != 0)) || status=$code
  fi
done
echo "launch_ssh.sh: exit $status; cluster file $( [[ -f $run_dir/cluster.conf ]] && echo "$run_dir/cluster.conf" || echo "none (the rendezvous did not complete)"), logs $run_dir/node-*.log"
exit "$status"
