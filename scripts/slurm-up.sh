#!/usr/bin/env bash
# A throwaway Slurm cluster on 127.0.0.1 for jsctl's integration tests (and for trying jsctl).
#
#   bash scripts/slurm-up.sh up      install (apt) if missing, (re)start munged, slurmctld, slurmd
#   bash scripts/slurm-up.sh down    stop the daemons this script started (by pid file)
#   bash scripts/slurm-up.sh env     print the export line for this cluster
#
# Everything lives under $JSCTL_SLURM_BASE (or $SLURM_BASE; default /tmp/jsctl-slurm): config, munge key and
# socket, state, logs, pid files. /etc/slurm and /etc/munge are left alone.
# Nodes: two slurmd on this machine (jsn1, jsn2: `slurmd -N`), each with 4 fake GPUs
# (gres.conf File= lines), in partition `debug` (the default); JSCTL_SLURM_NODES=1 for one.
# Debian's Slurm 22.05 is built without --enable-multiple-slurmd, yet two slurmd with distinct
# NodeName/Port/spool/pid work for batch jobs and srun across both (see tests/integration/slurm).
set -euo pipefail

BASE=${JSCTL_SLURM_BASE:-${SLURM_BASE:-/tmp/jsctl-slurm}}
NODES=${JSCTL_SLURM_NODES:-2}
GPUS=4
CMD=${1:-up}
export SLURM_CONF=$BASE/etc/slurm.conf

log() { printf 'slurm-up: %s\n' "$*" >&2; }

stop_daemons() {  # only ours: by pid file; TERM, wait up to 10 s, then KILL
  local f pid pids=()
  shopt -s nullglob
  for f in "$BASE"/run/slurmd-*.pid "$BASE"/run/slurmctld.pid "$BASE"/run/munged.pid; do
    pid=$(cat "$f" 2>/dev/null || true)
    rm -f "$f"
    if [[ $pid =~ ^[0-9]+$ ]] && kill "$pid" 2>/dev/null; then pids+=("$pid"); fi
  done
  shopt -u nullglob
  local _ alive
  for _ in $(seq 100); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [[ $alive == 0 ]] && return 0
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
}

install_packages() {
  if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null \
     && command -v sbatch >/dev/null; then
    return 0
  fi
  log "installing slurm-wlm and munge (apt)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
}

start_munge() {
  mkdir -p "$BASE/munge"
  chmod 700 "$BASE/munge"
  dd if=/dev/urandom of="$BASE/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$BASE/munge/munge.key"
  munged --key-file="$BASE/munge/munge.key" --socket="$BASE/munge/munge.sock" \
         --pid-file="$BASE/run/munged.pid" --log-file="$BASE/log/munged.log" \
         --seed-file="$BASE/munge/munge.seed" --force
  local _
  for _ in $(seq 50); do [[ -S $BASE/munge/munge.sock ]] && break; sleep 0.1; done
  munge -S "$BASE/munge/munge.sock" -n | unmunge -S "$BASE/munge/munge.sock" >/dev/null
}

write_config() {
  local host cpus mem i names
  host=$(hostname -s)
  cpus=$(nproc)
  # each node may claim all memory: the nodes share this machine, and tests ask little
  mem=$(( $(awk '/MemTotal/{print int($2/1024)}' /proc/meminfo) - 1024 ))
  if [[ $NODES == 1 ]]; then names=jsn1; else names="jsn[1-$NODES]"; fi
  cat > "$SLURM_CONF" <<CONF
# written by jsctl scripts/slurm-up.sh; do not edit (rewritten on every 'up')
ClusterName=ci
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire: a requeued (preempted) job may start again after 10 s instead of 120 s
AuthInfo=socket=$BASE/munge/munge.sock,cred_expire=10
SlurmctldPort=${JSCTL_SLURMCTLD_PORT:-6817}
StateSaveLocation=$BASE/state
SlurmdSpoolDir=$BASE/spool/%n
SlurmctldPidFile=$BASE/run/slurmctld.pid
SlurmdPidFile=$BASE/run/slurmd-%n.pid
SlurmctldLogFile=$BASE/log/slurmctld.log
SlurmdLogFile=$BASE/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
# start jobs (and dependents of a finished job) within about a second, not 3-6 s
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0,bf_interval=1
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$BASE/log/jobcomp.txt
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
GresTypes=gpu
SlurmctldTimeout=30
SlurmdTimeout=30
MinJobAge=300
KillWait=5
DefMemPerCPU=256
CONF
  : > "$BASE/etc/gres.conf"
  echo "AutoDetect=off" >> "$BASE/etc/gres.conf"
  mkdir -p "$BASE/dev"
  for i in $(seq 1 "$NODES"); do
    echo "NodeName=jsn$i NodeHostname=$host NodeAddr=127.0.0.1 Port=$(( ${JSCTL_SLURMD_PORT:-6818} + i - 1 )) CPUs=$cpus RealMemory=$mem Gres=gpu:$GPUS State=UNKNOWN" >> "$SLURM_CONF"
    local first=$(( (i - 1) * GPUS )) last=$(( i * GPUS - 1 )) g
    for g in $(seq "$first" "$last"); do  # char devices (major 195) where allowed, else plain files
      mknod "$BASE/dev/nvidia$g" c 195 "$g" 2>/dev/null || touch "$BASE/dev/nvidia$g"
    done
    echo "NodeName=jsn$i Name=gpu File=$BASE/dev/nvidia[$first-$last]" >> "$BASE/etc/gres.conf"
    mkdir -p "$BASE/spool/jsn$i"
  done
  echo "PartitionName=debug Nodes=$names Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO" >> "$SLURM_CONF"
}

wait_idle() {
  local _ n
  for _ in $(seq 150); do
    kill -0 "$(cat "$BASE/run/slurmctld.pid" 2>/dev/null || echo 0)" 2>/dev/null \
      || { log "slurmctld died:"; tail -n 20 "$BASE/log/slurmctld.log" >&2; return 1; }
    n=$(timeout 3 sinfo -h -N -o %T 2>/dev/null | grep -cE '^(idle|mixed|allocated)' || true)
    [[ $n == "$NODES" ]] && return 0
    sleep 0.2
  done
  log "nodes did not become idle:"; sinfo -N >&2 || true; tail -n 20 "$BASE"/log/slurm*.log >&2 || true
  return 1
}

up() {
  local t0=$SECONDS i
  install_packages
  stop_daemons
  rm -rf "${BASE:?}"/{etc,run,log,state,spool,munge,dev,shared}  # ours only, never $BASE itself
  mkdir -p "$BASE"/{etc,run,log,state,spool,shared}
  start_munge
  write_config
  slurmctld -i
  for i in $(seq 1 "$NODES"); do slurmd -N "jsn$i"; done
  wait_idle
  sinfo -N -o '%N %P %T %c %m %G' >&2
  log "up in $((SECONDS - t0)) s; to use it:"
  echo "export SLURM_CONF=$SLURM_CONF"
}

case $CMD in
  up) up ;;
  down) stop_daemons; log "stopped" ;;
  env) echo "export SLURM_CONF=$SLURM_CONF" ;;
  *) echo "usage: $0 up|down|env" >&2; exit 2 ;;
esac
