#!/usr/bin/env bash
# Produce real `sacct` fixtures for tests/test_slurm.py from a throw-away Slurm cluster on loopback.
#
# Starts munge, MariaDB, slurmdbd, slurmctld and slurmd as the current user (root) in a scratch folder,
# without systemd, through scripts/slurm_cluster.sh (the cluster's
# configuration and its sources are there), runs one job of each kind
# (completed, failed, cancelled, timed out, array, multi-step, heterogeneous, hostile job name),
# dumps `sacct` as --parsable2 (several variants) and --json into tests/data/slurm/real/, writes a
# README.md there with the Slurm version, the date and the exact commands, and stops every process it
# started (by PID). Takes about two minutes: the TIMEOUT job needs a whole-minute limit plus Slurm's
# ~30 s enforcement period.
#
# Needs (Debian 12): apt-get install -y slurm-wlm slurmdbd mariadb-server munge
# Usage: scripts/slurm_fixtures.sh [OUTPUT_DIR]   (default: tests/data/slurm/real)
#        SLURM_FIXTURES_QUICK=1 skips the TIMEOUT job and the wait for the het job (used by the live
#        test); KEEP_SCRATCH=1 keeps the scratch folder with the daemons' logs.
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${1:-$REPO/tests/data/slurm/real}"
for bin in munged mungekey mariadb-install-db mariadbd mariadb slurmdbd slurmctld slurmd sacctmgr sacct sbatch; do
  command -v "$bin" >/dev/null || { echo "missing $bin: apt-get install -y slurm-wlm slurmdbd mariadb-server munge" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "run as root (the daemons run as SlurmUser=root)" >&2; exit 2; }

B="$(mktemp -d /tmp/trainperf-slurm.XXXXXX)"
cleanup() {
  set +e
  "$REPO/scripts/slurm_cluster.sh" stop "$B"  # every daemon by its own PID, in reverse start order
  if [ "${KEEP_SCRATCH:-0}" = 1 ]; then echo "scratch kept in $B"; else rm -rf "$B"; fi
}
trap cleanup EXIT
wait_for() {  # wait_for <seconds> <description> <command...>
  local t=$1 what=$2; shift 2
  for _ in $(seq 1 $((t * 5))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  echo "timed out waiting for $what" >&2; return 1
}

echo "== scratch folder $B"
# munged, mariadbd, slurmdbd, slurmctld, slurmd on free loopback ports; returns once the node is idle
"$REPO/scripts/slurm_cluster.sh" start "$B" >/dev/null
# shellcheck source=/dev/null
. "$B/env.sh"  # SLURM_CONF
echo "== cluster up: $(sinfo -h -o '%P %t %G')"

# --- jobs ----------------------------------------------------------------------------------------
W="$B/work"; mkdir -p "$W"; cd "$W"
sub() { sbatch --parsable "$@" | cut -d';' -f1; }
state_of() { sacct -n -X -P -j "$1" -o State 2>/dev/null | head -n1; }
wait_state() {  # wait_state <jobid> <seconds> <regex>
  for _ in $(seq 1 "$2"); do state_of "$1" | grep -Eq "$3" && return 0; sleep 1; done
  echo "job $1 did not reach $3 (now: $(state_of "$1"))" >&2; return 1
}

if [ "${SLURM_FIXTURES_QUICK:-0}" = 1 ]; then
  J_TIMEOUT=""  # quick mode (tests/test_slurm.py): no TIMEOUT job, saves ~90 s
else
  J_TIMEOUT=$(sub --job-name=timeout --gres=gpu:h100:1 --time=1 --wrap 'sleep 300')
fi
J_OK=$(sub --job-name=ok --gres=gpu:h100:2 --time=10 --wrap 'sleep 3; echo done')
J_FAIL=$(sub --job-name=fail --gres=gpu:1 --time=10 --wrap 'sleep 1; exit 3')
J_CANCEL=$(sub --job-name=cancel --gres=gpu:h100:2 --wrap 'sleep 300')
J_ARRAY=$(sub --job-name=array --array=0-2 --gres=gpu:1 --time=5 --wrap 'sleep 2')
J_STEPS=$(sub --job-name=steps --gres=gpu:h100:1 --time=5 --wrap 'srun sleep 1; srun sleep 2; srun false; true')
J_EVIL=$(sub --job-name='pipe|name <img src=x onerror=alert(1)>' --time=5 --wrap 'sleep 1')
cat >"$W/het.sh" <<'EOF'
#!/bin/bash
#SBATCH --job-name=het --time=5 -n1 --gres=gpu:1
#SBATCH hetjob
#SBATCH -n1
srun --het-group=0,1 true
EOF
J_HET=$(sub "$W/het.sh" || echo "")
HET_NOTE=""
# quick mode: no 20 s wait to see whether the het job starts (on the one-node cluster it stays
# PENDING): it is cancelled at once, as it would be after the wait
HET_WAIT=20
[ "${SLURM_FIXTURES_QUICK:-0}" = 1 ] && HET_WAIT=0

if [ -n "$J_HET" ] && ! wait_state "$J_HET" "$HET_WAIT" 'RUNNING|COMPLETED'; then
  # the components of a heterogeneous job do not share the single node: it stays PENDING (Resources)
  scancel "$J_HET"
  HET_NOTE="stays PENDING (Resources) on the one-node cluster; cancelled by the script: CANCELLED by 0, Start None, NodeList None assigned"
fi
wait_state "$J_CANCEL" 60 RUNNING
sleep 2
scancel "$J_CANCEL"
if [ -n "$J_TIMEOUT" ]; then
  echo "== waiting for the TIMEOUT job $J_TIMEOUT (about 90 s)"
  wait_state "$J_TIMEOUT" 200 TIMEOUT
fi
wait_for 120 "empty queue" bash -c '[ -z "$(squeue -h)" ]'
sleep 6  # let slurmctld push the last records to slurmdbd

# --- dumps ---------------------------------------------------------------------------------------
mkdir -p "$OUT"
START=2000-01-01T00:00:00
FIELDS_LAST=JobID,JobIDRaw,User,Partition,State,ExitCode,Submit,Start,End,Elapsed,Timelimit,TotalCPU,NNodes,NCPUS,NodeList,AllocTRES,ReqTRES,MaxRSS,JobName
FIELDS_MIDDLE=JobID,JobIDRaw,JobName,User,Partition,State,ExitCode,Start,End,Elapsed,Timelimit,NNodes,NodeList,AllocTRES
CMDS=(
  "TZ=UTC sacct --parsable2 --allusers --duplicates -S $START -o $FIELDS_LAST > sacct_parsable2.txt"
  "TZ=UTC sacct --parsable2 --allusers --duplicates -S $START -o $FIELDS_MIDDLE > sacct_parsable2_jobname_middle.txt"
  "SLURM_TIME_FORMAT=%s sacct --parsable2 --noheader --delimiter='^|^' --allusers --duplicates -S $START -o $FIELDS_LAST > sacct_noheader_epoch_delim.txt"
  "TZ=UTC sacct --json --allusers --duplicates -S $START > sacct.json"
)
(
  cd "$OUT"
  for c in "${CMDS[@]}"; do echo "+ $c"; bash -c "$c"; done
)

VERSION="$(sacct -V)"
{
  echo "# Real sacct output (not synthetic)"
  echo
  echo "Produced by \`scripts/slurm_fixtures.sh\` on $(date -u +%Y-%m-%dT%H:%M:%SZ) with **$VERSION**"
  echo "(Debian 12 package slurm-wlm $(dpkg-query -W -f='${Version}' slurm-wlm 2>/dev/null || echo '?'),"
  echo "MariaDB $(mariadbd --version | awk '{print $3}')), a one-node cluster \`trainperf\` on loopback"
  echo "(node \`localhost\`, 2 CPUs, 8 fake \`gpu:h100\` devices, \`AccountingStorageTRES=gres/gpu,gres/gpu:h100\`)."
  echo "All jobs ran as root (uid 0), so the cancelled job shows \`CANCELLED by 0\`."
  echo
  echo "## Jobs submitted"
  echo
  echo "| job id | what | expected job state |"
  echo "|---|---|---|"
  echo "| $J_TIMEOUT | \`sbatch --job-name=timeout --gres=gpu:h100:1 --time=1 --wrap 'sleep 300'\` | TIMEOUT |"
  echo "| $J_OK | \`sbatch --job-name=ok --gres=gpu:h100:2 --time=10 --wrap 'sleep 3; echo done'\` | COMPLETED |"
  echo "| $J_FAIL | \`sbatch --job-name=fail --gres=gpu:1 --time=10 --wrap 'sleep 1; exit 3'\` | FAILED, ExitCode 3:0 |"
  echo "| $J_CANCEL | \`sbatch --job-name=cancel --gres=gpu:h100:2 --wrap 'sleep 300'\` then \`scancel\` | CANCELLED by 0 |"
  echo "| $J_ARRAY | \`sbatch --job-name=array --array=0-2 --gres=gpu:1 --time=5 --wrap 'sleep 2'\` | 3 tasks COMPLETED |"
  echo "| $J_STEPS | \`sbatch --job-name=steps --gres=gpu:h100:1 --time=5 --wrap 'srun sleep 1; srun sleep 2; srun false; true'\` | COMPLETED; steps .0 .1 COMPLETED, .2 FAILED |"
  echo "| $J_EVIL | \`sbatch --job-name='pipe\\|name <img src=x onerror=alert(1)>' --time=5 --wrap 'sleep 1'\` | COMPLETED |"
  echo "| ${J_HET:-none} | heterogeneous job (\`#SBATCH hetjob\`, two components, \`srun --het-group=0,1 true\`) | ${HET_NOTE:-COMPLETED} |"
  echo
  echo "## Commands (run in this folder)"
  echo
  echo '```'
  for c in "${CMDS[@]}"; do echo "$c"; done
  echo '```'
  echo
  echo "\`sacct_parsable2_jobname_middle.txt\` has JobName in the middle: the line of the job whose name"
  echo "contains \`|\` has one field too many and cannot be split safely (the reader must raise)."
  echo "\`sacct_noheader_epoch_delim.txt\` uses the field list of \`sacct_parsable2.txt\`, epoch-second times"
  echo "and the delimiter \`^|^\`."
  echo
  echo "## What these files show (checked by tests/test_slurm.py)"
  echo
  echo "- AllocTRES lists the same GPUs twice (\`gres/gpu:h100=2,gres/gpu=2\`): do not add them."
  echo "- \`CANCELLED by 0\` on the job line, \`CANCELLED\` with ExitCode \`0:15\` on its \`.batch\` step;"
  echo "  the TIMEOUT job's \`.batch\` step is also CANCELLED 0:15."
  echo "- Timelimit \`UNLIMITED\` for the job submitted without \`--time\` (partition MaxTime=UNLIMITED);"
  echo "  the JSON shows \`\"limit\": null\` for it."
  echo "- Array tasks: JobID \`<array>_<task>\` with their own JobIDRaw; het components \`<id>+<offset>\`."
  echo "- The never-started het components have Start \`None\`, NodeList \`None assigned\`, empty AllocTRES."
  echo "- \`sacct --json\` of $VERSION (openapi/dbv0.0.38) reports \`exit_code\` \`{\"status\": \"SUCCESS\","
  echo "  \"return_code\": 0}\` for the FAILED job (sacct -P: \`3:0\`) and the FAILED step \`.2\` (\`1:0\`);"
  echo "  step ids are bare (\`\"batch\"\`, \`0\`) with \`step.job_id\` beside them."
} >"$OUT/README.md"
cat >"$OUT/jobs.json" <<EOF
{"timeout": ${J_TIMEOUT:-null}, "ok": $J_OK, "fail": $J_FAIL, "cancel": $J_CANCEL, "array": $J_ARRAY,
 "steps": $J_STEPS, "evil": $J_EVIL, "het": ${J_HET:-null}, "slurm_version": "$VERSION"}
EOF
echo "== wrote $(ls "$OUT" | tr '\n' ' ') to $OUT"
