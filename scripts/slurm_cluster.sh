#!/usr/bin/env bash
# Start or stop a throw-away one-node Slurm cluster with accounting, on loopback, in one folder.
#
#   scripts/slurm_cluster.sh start DIR   start munged, mariadbd, slurmdbd, slurmctld and slurmd as root
#                                        (no systemd) with everything under DIR, on free loopback ports;
#                                        returns 0 once `sinfo` shows the node idle. Writes
#                                        DIR/env.sh (`. DIR/env.sh` exports SLURM_CONF, all that sbatch,
#                                        squeue, sacct, sacctmgr and scancel need) and DIR/pids (one
#                                        "PID NAME" line per daemon, in start order). On failure it
#                                        prints the ends of the logs, stops what it started, exits 1.
#   scripts/slurm_cluster.sh stop DIR [--remove]
#                                        cancel jobs still queued, then stop the daemons listed in
#                                        DIR/pids in reverse order, each by its PID (SIGTERM, then
#                                        SIGKILL after 10 s); deletes DIR/pids, and DIR too with --remove.
#
# The cluster: ClusterName=trainperf, node `localhost` (2 CPUs, 4000 MB, 8 fake gpu:h100 devices),
# default partition `gpu` (OverSubscribe=FORCE:4, MaxTime=UNLIMITED), accounting through slurmdbd and
# MariaDB (sacct works). Logs in DIR/log. Keep DIR short: it holds Unix sockets (108-byte path limit).
# Recipe: Slurm's docs (https://slurm.schedmd.com/quickstart_admin.html, slurm.conf.html, gres.conf.html),
# tried by hand on Debian 12 (slurm-wlm 22.05.8); every step is in this script. Exit status 2: packages missing or not
# root. Needs (Debian 12): apt-get install -y slurm-wlm slurmdbd mariadb-server munge
set -euo pipefail

usage() { echo "usage: $0 start DIR | stop DIR [--remove]" >&2; exit 64; }
[ $# -ge 2 ] || usage
CMD=$1
B=$2

NEEDED=(munged mungekey mariadb-install-db mariadbd mariadb slurmdbd slurmctld slurmd sacctmgr sinfo
  scontrol squeue scancel sacct sbatch python3)

wait_for() {  # wait_for <seconds> <description> <command...>
  local t=$1 what=$2; shift 2
  for _ in $(seq 1 $((t * 5))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  echo "timed out waiting for $what" >&2; return 1
}

# running <pid>: the process exists and is not a zombie (our daemons' parent, PID 1, may reap late)
running() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [ "${stat%% *}" != Z ]
}

# kill_pid <pid> <name>: only when /proc/<pid>/comm is still <name> (no stranger that reused the PID)
kill_pid() {
  local pid=$1 name=$2
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ] || return 0
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 50); do running "$pid" || return 0; sleep 0.2; done
  echo "$name ($pid) still running after 10 s: SIGKILL" >&2
  kill -9 "$pid" 2>/dev/null || true
}

stop_cluster() {  # stop_cluster <dir>
  local b=$1 lines=() i pid name
  [ -f "$b/pids" ] || { echo "no $b/pids: nothing to stop" >&2; return 0; }
  mapfile -t lines <"$b/pids"
  # jobs still in the queue: cancel them while slurmctld and slurmd run, so no slurmstepd is orphaned
  if [ -f "$b/etc/slurm.conf" ] && grep -q ' slurmd$' "$b/pids"; then
    export SLURM_CONF="$b/etc/slurm.conf"
    if [ -n "$(timeout 10 squeue -h -o %i 2>/dev/null)" ]; then
      timeout 10 scancel --user=root 2>/dev/null || true
      wait_for 20 "empty queue" bash -c '[ -z "$(timeout 5 squeue -h -o %i)" ]' || true
    fi
  fi
  for ((i = ${#lines[@]} - 1; i >= 0; i--)); do
    read -r pid name <<<"${lines[i]}"
    [ -n "${pid:-}" ] && kill_pid "$pid" "$name"
  done
  rm -f "$b/pids"
}

case "$CMD" in
stop)
  stop_cluster "$B"
  if [ "${3:-}" = --remove ]; then rm -rf "$B"; fi
  exit 0
  ;;
start) ;;
*) usage ;;
esac

# ------------------------------------------------------------------------------------------- start
for bin in "${NEEDED[@]}"; do
  command -v "$bin" >/dev/null || { echo "missing $bin: apt-get install -y slurm-wlm slurmdbd mariadb-server munge" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "run as root (the daemons run as SlurmUser=root)" >&2; exit 2; }
if [ -s "$B/pids" ]; then echo "$B/pids exists: stop that cluster first ($0 stop $B)" >&2; exit 1; fi

mkdir -p "$B"
B="$(cd "$B" && pwd)"
mkdir -p "$B"/{munge,db,etc,log,state,spool/localhost,gpu,run}
chmod 711 "$B" "$B/munge"
: >"$B/pids"

on_failure() {
  local rc=$?
  trap - ERR
  set +e
  echo "slurm_cluster.sh: start failed (exit $rc); logs in $B/log:" >&2
  for f in "$B"/log/*; do
    [ -s "$f" ] || continue
    echo "--- $f (last 15 lines)" >&2
    tail -n 15 "$f" >&2
  done
  stop_cluster "$B"
  exit 1
}
trap on_failure ERR
set -E

# start <name> <command...>: in the background, in its own session (no terminal signals), no stdio
# inherited (a caller reading our stdout must not wait for the daemons), PID recorded
start_daemon() {
  local name=$1; shift
  setsid "$@" </dev/null >>"$B/log/$name.out" 2>&1 &
  echo "$! $name" >>"$B/pids"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
DB_PORT=$(free_port); DBD_PORT=$(free_port); CTLD_PORT=$(free_port); SLURMD_PORT=$(free_port)

# --- munge ---------------------------------------------------------------------------------------
mungekey -c -k "$B/munge/munge.key"
chmod 400 "$B/munge/munge.key"
start_daemon munged munged -F --force --key-file="$B/munge/munge.key" --socket="$B/munge/munge.socket.2" \
  --pid-file="$B/munge/munged.pid" --log-file="$B/log/munged.log" --seed-file="$B/munge/munge.seed"
wait_for 10 munged test -S "$B/munge/munge.socket.2"

# --- MariaDB -------------------------------------------------------------------------------------
mariadb-install-db --no-defaults --datadir="$B/db/data" --user=root \
  --auth-root-authentication-method=socket --skip-test-db >"$B/log/mariadb-install.log" 2>&1
start_daemon mariadbd mariadbd --no-defaults --datadir="$B/db/data" --user=root --socket="$B/db/mysql.sock" \
  --port="$DB_PORT" --bind-address=127.0.0.1 --skip-name-resolve --innodb-buffer-pool-size=256M \
  --innodb-lock-wait-timeout=900 --log-error="$B/log/mariadbd.log" --pid-file="$B/db/mariadbd.pid"
wait_for 60 mariadbd mariadb --no-defaults --socket="$B/db/mysql.sock" -uroot -e 'select 1'
mariadb --no-defaults --socket="$B/db/mysql.sock" -uroot <<SQL
CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurmpw';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
FLUSH PRIVILEGES;
SQL

# --- Slurm configuration -------------------------------------------------------------------------
for i in 0 1 2 3 4 5 6 7; do mknod "$B/gpu/nvidia$i" c 1 3; done
export SLURM_CONF="$B/etc/slurm.conf"
cat >"$SLURM_CONF" <<EOF
ClusterName=trainperf
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$B/munge/munge.socket.2
StateSaveLocation=$B/state
SlurmdSpoolDir=$B/spool/%n
SlurmctldPidFile=$B/run/slurmctld.pid
SlurmdPidFile=$B/run/slurmd.pid
SlurmctldLogFile=$B/log/slurmctld.log
SlurmdLogFile=$B/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=5
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
AccountingStoragePass=$B/munge/munge.socket.2
# typed and untyped GPU TRES are both tracked, so AllocTRES shows gres/gpu=N AND gres/gpu:h100=N
AccountingStorageTRES=gres/gpu,gres/gpu:h100
GresTypes=gpu
ReturnToService=2
MinJobAge=5
InactiveLimit=0
KillWait=5
NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=4000 Gres=gpu:h100:8 State=UNKNOWN
PartitionName=gpu Nodes=localhost Default=YES MaxTime=UNLIMITED OverSubscribe=FORCE:4 State=UP
EOF
cat >"$B/etc/gres.conf" <<EOF
AutoDetect=off
NodeName=localhost Name=gpu Type=h100 File=$B/gpu/nvidia[0-7]
EOF
cat >"$B/etc/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$B/munge/munge.socket.2
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
PidFile=$B/run/slurmdbd.pid
LogFile=$B/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=slurmpw
StorageLoc=slurm_acct_db
EOF
chmod 600 "$B/etc/slurmdbd.conf"

# --- Slurm daemons -------------------------------------------------------------------------------
start_daemon slurmdbd slurmdbd -D
wait_for 60 slurmdbd sacctmgr -n list cluster
sacctmgr -i add cluster trainperf >/dev/null
start_daemon slurmctld slurmctld -D -i
wait_for 60 slurmctld scontrol ping
start_daemon slurmd slurmd -D -N localhost
wait_for 60 "node idle" bash -c 'sinfo -h -o %t | grep -q idle'

cat >"$B/env.sh" <<EOF
# written by scripts/slurm_cluster.sh start; source it to talk to this cluster
# (cluster trainperf, default partition gpu; slurmctld 127.0.0.1:$CTLD_PORT, slurmdbd 127.0.0.1:$DBD_PORT)
export SLURM_CONF=$B/etc/slurm.conf
EOF
trap - ERR
echo "== cluster up in $B: $(sinfo -h -o '%P %t %G')"
