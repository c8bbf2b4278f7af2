# Sourced by the Slurm fixture scripts (needs REPO set): a throw-away cluster of scripts/slurm_cluster.sh
# in a scratch folder $B, stopped (every daemon by its own PID) and removed on exit; its environment
# (SLURM_CONF) loaded and the working folder set to $B. KEEP_SCRATCH=1 keeps the folder and its logs.
# shellcheck shell=bash
[ "$(id -u)" = 0 ] || { echo "run as root (the daemons run as SlurmUser=root)" >&2; exit 2; }

B="$(mktemp -d /tmp/trainperf-slurm.XXXXXX)"
cleanup() {
  set +e
  "$REPO/scripts/slurm_cluster.sh" stop "$B"
  if [ "${KEEP_SCRATCH:-0}" = 1 ]; then echo "scratch kept in $B"; else rm -rf "$B"; fi
}
trap cleanup EXIT
"$REPO/scripts/slurm_cluster.sh" start "$B" >/dev/null
# shellcheck source=/dev/null
. "$B/env.sh"
cd "$B"
