#!/usr/bin/env bash
# Real `sacct` output for the damage cases of issue 15, from a throw-away Slurm cluster on loopback.
#
# Runs two jobs on the one-node cluster of scripts/slurm_cluster.sh and dumps them as --parsable2 and
# --json into tests/data/slurm/real/damage/ (with a README naming the Slurm version and commands):
#   * a job whose node fails: `sbatch --no-requeue`, then `scontrol update NodeName=localhost
#     State=DOWN` while it runs (state NODE_FAIL);
#   * a job named with bytes that are not UTF-8 (Latin-1 `\xe9`, Shift_JIS `\x82\xa0`).
# Stops every process it started (by PID, through slurm_cluster.sh stop). About 40 s.
#
# Needs (Debian 12): apt-get install -y slurm-wlm slurmdbd mariadb-server munge; run as root.
# Usage: scripts/slurm_fixtures_damage.sh [OUTPUT_DIR]   (default: tests/data/slurm/real/damage)
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${1:-$REPO/tests/data/slurm/real/damage}"
# shellcheck source=scripts/slurm_session.sh
. "$REPO/scripts/slurm_session.sh"  # the cluster in $B, stopped on exit; cwd $B
state_of() { sacct -n -X -P -j "$1" -o State 2>/dev/null | head -n1; }
wait_state() {  # wait_state <jobid> <seconds> <regex>
  for _ in $(seq 1 "$2"); do state_of "$1" | grep -Eq "$3" && return 0; sleep 1; done
  echo "job $1 did not reach $3 (now: $(state_of "$1"))" >&2; return 1
}

J_NODEFAIL=$(sbatch --parsable --no-requeue --job-name=nodefail --gres=gpu:h100:1 --time=10 --wrap 'sleep 300')
J_BYTES=$(sbatch --parsable --job-name=$'caf\xe9-\x82\xa0' --time=5 --wrap 'sleep 1')
wait_state "$J_NODEFAIL" 60 RUNNING
sleep 2
scontrol update NodeName=localhost State=DOWN Reason=fixture-node-failure
wait_state "$J_NODEFAIL" 60 NODE_FAIL
wait_state "$J_BYTES" 60 COMPLETED
sleep 6  # let slurmctld push the last records to slurmdbd

mkdir -p "$OUT"
FIELDS=JobID,JobIDRaw,User,Partition,State,ExitCode,DerivedExitCode,Submit,Start,End,Elapsed,Timelimit,NNodes,NCPUS,NodeList,AllocTRES,JobName
CMDS=(
  "TZ=UTC sacct --parsable2 --allusers --duplicates -S 2000-01-01T00:00:00 -o $FIELDS > sacct_parsable2.txt"
  "TZ=UTC sacct --json --allusers --duplicates -S 2000-01-01T00:00:00 > sacct.json"
)
( cd "$OUT"; for c in "${CMDS[@]}"; do echo "+ $c"; bash -c "$c"; done )
VERSION="$(sacct -V)"
{
  echo "# Real sacct output of two damage cases (not synthetic)"
  echo
  echo "Produced by \`scripts/slurm_fixtures_damage.sh\` on $(date -u +%Y-%m-%dT%H:%M:%SZ) with **$VERSION**"
  echo "on the one-node loopback cluster of \`scripts/slurm_cluster.sh\` (see \`../README.md\`)."
  echo
  echo "| job id | what | seen |"
  echo "|---|---|---|"
  echo "| $J_NODEFAIL | \`sbatch --no-requeue --job-name=nodefail --gres=gpu:h100:1 --time=10 --wrap 'sleep 300'\`, then \`scontrol update NodeName=localhost State=DOWN\` while it runs | NODE_FAIL; ExitCode \`0:0\` in text and \`{\"status\": \"SUCCESS\", \"return_code\": 0}\` in JSON: Slurm records no exit status for a job whose node failed; its \`.batch\` step has an empty ExitCode (JSON status PENDING) |"
  echo "| $J_BYTES | \`sbatch --job-name=\$'caf\\xe9-\\x82\\xa0'\` (Latin-1 and Shift_JIS bytes) | $VERSION stores the name as \`caf?-??\`: the bytes are replaced by \`?\` before accounting, in both formats |"
  echo
  echo '```'
  for c in "${CMDS[@]}"; do echo "$c"; done
  echo '```'
} >"$OUT/README.md"
cat >"$OUT/jobs.json" <<EOF
{"node_fail": $J_NODEFAIL, "non_utf8_name": $J_BYTES, "slurm_version": "$VERSION"}
EOF
echo "== wrote $(ls "$OUT" | tr '\n' ' ') to $OUT"
