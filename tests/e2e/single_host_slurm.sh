#!/usr/bin/env bash
# A one-host Slurm for tests: munged, slurmctld and slurmd started from a minimal configuration
# in WORK (nothing under /etc is read or changed), each under `timeout` so that they end by
# themselves even if the test that started them dies.
#
#   single_host_slurm.sh start WORK PORT   controller on PORT, slurmd on PORT+1; prints the
#                                          SLURM_CONF path; exits 77 with a message where Slurm
#                                          cannot start here (not root, not installed, a daemon
#                                          that fails, no idle node within 60 s)
#   single_host_slurm.sh stop WORK         ends the daemons it started (by their pid files)
set -uo pipefail

skip() { echo "SKIP: $*" >&2; exit 77; }
command=${1:?usage: single_host_slurm.sh start WORK PORT | stop WORK}
work=${2:?usage: single_host_slurm.sh start WORK PORT | stop WORK}
lifetime=${STARLING_SLURM_LIFETIME_S:-900}

if [[ $command == stop ]]; then
  for f in slurmd slurmctld munged; do
    [[ -f $work/$f.pid ]] && kill "$(cat "$work/$f.pid")" 2>/dev/null
  done
  for f in slurmd slurmctld munged; do
    [[ -f $work/$f.pid ]] || continue
    pid=$(cat "$work/$f.pid")
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
    rm -f "$work/$f.pid"
  done
  exit 0
fi

port=${3:?usage: single_host_slurm.sh start WORK PORT}
[[ $(id -u) -eq 0 ]] || skip "a test Slurm runs its daemons as root here; not root"
for tool in munged slurmctld slurmd srun sbatch sinfo; do
  command -v "$tool" >/dev/null || skip "no $tool (apt-get install slurm-wlm munge)"
done
mkdir -p "$work"/{munge,state,spool,log}
chmod 711 "$work/munge"
head -c 1024 /dev/urandom >"$work/munge/munge.key"
chmod 400 "$work/munge/munge.key"
socket=$work/munge/munge.sock
# `timeout` is the daemon's parent: its pid is the one to end (it passes the signal on).
timeout "$lifetime" munged --foreground --force --key-file="$work/munge/munge.key" \
  --socket="$socket" --pid-file="$work/munge/munged.pid" --log-file="$work/log/munged.log" \
  --seed-file="$work/munge/seed" >"$work/log/munged.out" 2>&1 &
echo $! >"$work/munged.pid"
for _ in $(seq 100); do [[ -S $socket ]] && break; sleep 0.1; done
[[ -S $socket ]] || skip "munged did not start: $(tail -n 2 "$work/log/munged.log" "$work/log/munged.out" 2>/dev/null | tr '\n' ' ')"

host=$(hostname -s)
cat >"$work/slurm.conf" <<CONF
ClusterName=starlingtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/state/slurmctld.pid
SlurmdPidFile=$work/spool/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
PlugStackConfig=$work/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
NodeName=$host NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
CONF
: >"$work/plugstack.conf"
export SLURM_CONF=$work/slurm.conf
timeout "$lifetime" slurmctld -D -i -f "$SLURM_CONF" >"$work/log/slurmctld.out" 2>&1 &
echo $! >"$work/slurmctld.pid"
timeout "$lifetime" slurmd -D -f "$SLURM_CONF" >"$work/log/slurmd.out" 2>&1 &
echo $! >"$work/slurmd.pid"
state=""
for _ in $(seq 600); do
  state=$(sinfo -h -o %t 2>/dev/null | head -n 1)
  [[ $state == idle ]] && break
  sleep 0.1
done
if [[ $state != idle ]]; then
  reason=$(tail -n 3 "$work/log/slurmctld.log" "$work/log/slurmd.log" 2>/dev/null | tr '\n' ' ')
  "$0" stop "$work"
  skip "Slurm did not come up within 60 s (node state '${state:-none}'): $reason"
fi
echo "$SLURM_CONF"
