#!/usr/bin/env bash
# Real `sacct` and `sacctmgr show event` output for the reliability analysis (issue 28), from the
# throw-away Slurm cluster of scripts/slurm_cluster.sh on loopback.
#
# Jobs: completed, failed (exit 3), timeout (--time=1), cancelled (scancel), requeued by hand (scontrol requeue, then completed), and
# a --requeue job whose node goes DOWN while it runs (NODE_FAIL, requeued, completed after the node
# is resumed). Dumps `sacct --parsable2 --duplicates` and `--json`, and the node events of
# `sacctmgr show event`, into tests/data/slurm/real/reliability/ with a README naming the Slurm
# version, the commands and what each job ended as. Stops every process it started (by PID, through
# slurm_cluster.sh stop). About 3 minutes. No OUT_OF_MEMORY job: the loopback cluster has no cgroups
# and no memory as a consumable resource (CR_Core), so --mem is not enforced there (tried:
# JobAcctGatherParams=OverMemoryKill left an 800 MiB step under --mem=100M running to COMPLETED).
#
# Needs (Debian 12): apt-get install -y slurm-wlm slurmdbd mariadb-server munge; run as root.
# Usage: scripts/slurm_fixtures_reliability.sh [OUTPUT_DIR]   (default: tests/data/slurm/real/reliability)
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${1:-$REPO/tests/data/slurm/real/reliability}"
# shellcheck source=scripts/slurm_session.sh
. "$REPO/scripts/slurm_session.sh"  # the cluster in $B, stopped on exit; cwd $B
states_of() { sacct -n -X -P --duplicates -j "$1" -o State 2>/dev/null | tr '\n' ' '; }
wait_states() {  # wait_states <jobid> <seconds> <regex over the states of every attempt>
  for _ in $(seq 1 "$2"); do states_of "$1" | grep -Eq "$3" && return 0; sleep 1; done
  echo "job $1 did not reach $3 (now: $(states_of "$1"))" >&2; return 1
}
squeue_state() { squeue -h -j "$1" -o %T 2>/dev/null; }
wait_running() {
  for _ in $(seq 1 "$2"); do [ "$(squeue_state "$1")" = RUNNING ] && return 0; sleep 1; done
  echo "job $1 not RUNNING after $2 s (now: $(squeue_state "$1"))" >&2; return 1
}

J_OK=$(sbatch --parsable --job-name=ok --gres=gpu:h100:1 --time=5 --wrap 'sleep 2')
J_FAIL=$(sbatch --parsable --job-name=fail --gres=gpu:h100:1 --time=5 --wrap 'sleep 1; exit 3')
J_TO=$(sbatch --parsable --job-name=timeout --time=1 --wrap 'sleep 300')
J_CAN=$(sbatch --parsable --job-name=cancel --gres=gpu:h100:2 --wrap 'sleep 300')
J_REQ=$(sbatch --parsable --requeue --job-name=requeue --gres=gpu:h100:2 --time=10 --wrap 'sleep 20')
wait_running "$J_CAN" 60
wait_running "$J_REQ" 60
sleep 3
scancel "$J_CAN"
scontrol requeue "$J_REQ"
wait_states "$J_TO" 180 TIMEOUT
wait_states "$J_REQ" 240 'REQUEUED.*COMPLETED|COMPLETED.*REQUEUED'
wait_states "$J_OK" 60 COMPLETED
wait_states "$J_FAIL" 60 FAILED
# the node failure last, alone on the node (a node going DOWN ends every job on it): a --requeue
# job that is running when the node goes DOWN
J_NF=$(sbatch --parsable --requeue --job-name=nodefail-requeue --gres=gpu:h100:1 --time=10 --wrap 'sleep 15')
wait_running "$J_NF" 60
sleep 3
scontrol update NodeName=localhost State=DOWN Reason=fixture-node-failure
wait_states "$J_NF" 60 NODE_FAIL
sleep 5
# ReturnToService=2 may have returned the node already (then RESUME is refused): either way it is up
scontrol update NodeName=localhost State=RESUME 2>/dev/null || true
wait_states "$J_NF" 240 'NODE_FAIL.*COMPLETED|COMPLETED.*NODE_FAIL'
sleep 6  # let slurmctld push the last records to slurmdbd

mkdir -p "$OUT"
FIELDS=JobID,JobIDRaw,User,Partition,State,ExitCode,Submit,Start,End,Elapsed,Timelimit,NNodes,NCPUS,NodeList,AllocTRES,ReqMem,MaxRSS,JobName
CMDS=(
  "TZ=UTC sacct --parsable2 --allusers --duplicates -S 2000-01-01T00:00:00 -o $FIELDS > sacct_parsable2.txt"
  "TZ=UTC sacct --json --allusers --duplicates -S 2000-01-01T00:00:00 > sacct.json"
  "SLURM_TIME_FORMAT=%s sacctmgr --parsable2 show event All_Time Event=Node format=NodeName,TimeStart,TimeEnd,State,Reason > node_events.txt"
)
( cd "$OUT"; for c in "${CMDS[@]}"; do echo "+ $c"; bash -c "$c"; done )
VERSION="$(sacct -V)"
row() { echo "| $1 | $2 | $(sacct -n -X -P --duplicates -j "$1" -o State,ExitCode | tr '|' ' ' | tr '\n' ';' | sed 's/;$//; s/;/; /g') |"; }
{
  echo "# Real sacct and sacctmgr output for the reliability analysis (not synthetic)"
  echo
  echo "Produced by \`scripts/slurm_fixtures_reliability.sh\` on $(date -u +%Y-%m-%dT%H:%M:%SZ) with **$VERSION**"
  echo "on the one-node loopback cluster of \`scripts/slurm_cluster.sh\` (see \`../README.md\`)."
  echo
  echo "| job id | what | State and ExitCode of each attempt (sacct --duplicates) |"
  echo "|---|---|---|"
  row "$J_OK" "\`sbatch --time=5 --wrap 'sleep 2'\`"
  row "$J_FAIL" "\`--wrap 'sleep 1; exit 3'\`"
  row "$J_TO" "\`--time=1 --wrap 'sleep 300'\`"
  row "$J_CAN" "\`scancel\` while it runs"
  row "$J_REQ" "\`--requeue\`, \`scontrol requeue\` while it runs, then runs again"
  row "$J_NF" "\`--requeue\`, \`scontrol update NodeName=localhost State=DOWN\` while it runs, node resumed 5 s after NODE_FAIL"
  echo
  echo '```'
  for c in "${CMDS[@]}"; do echo "$c"; done
  echo '```'
} >"$OUT/README.md"
cat >"$OUT/jobs.json" <<JSON
{"completed": $J_OK, "failed": $J_FAIL, "timeout": $J_TO, "cancelled": $J_CAN,
 "requeued": $J_REQ, "node_fail_requeued": $J_NF, "slurm_version": "$VERSION"}
JSON
echo "== wrote $(ls "$OUT" | tr '\n' ' ') to $OUT"
