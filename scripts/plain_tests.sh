#!/usr/bin/env bash
# The tests whose behaviour depends on an optional component, run as on a plain machine: no CJK
# font (an empty fontconfig), no chromium, quarto, prometheus/promtool, Slurm, munge or MariaDB
# binaries on PATH, and the Python packages torch and hta (HolisticTraceAnalysis) not importable,
# in this process and in every kernel it starts. Those tests must pass (or skip with their reason)
# there as they do with everything installed; .ci/run runs this after `make test`.
#
# Usage: scripts/plain_tests.sh [PYTEST ARGS...]
#   default: the tests marked `component` (tests/conftest.py marks them), one pytest-xdist worker
#   per CPU (PLAIN_TEST_JOBS to choose).
#   Arguments replace the selection, e.g. scripts/plain_tests.sh tests/test_rerun.py -x
# Environment: PYTHON (default .venv/bin/python), PLAIN_HIDE_MODULES (default "torch,hta").
# Exit status: pytest's; "no test selected" (pytest's 5) is 0 for a selection given as arguments
# and 1 for the default one (the `component` marks are lost: the check would prove nothing).
set -u
cd "$(dirname "$0")/.." || exit 2
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || { echo "plain tests: $PY not found (run 'make env' first)" >&2; exit 2; }
PY=$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY")
d=$(mktemp -d -t trainperf-plain.XXXXXX) || exit 2
trap 'rm -rf "$d"' EXIT

# fontconfig with no font folder at all: fc-list :lang=ja lists nothing
printf '<?xml version="1.0"?><!DOCTYPE fontconfig SYSTEM "fonts.dtd"><fontconfig><cachedir>%s/fc</cachedir></fontconfig>\n' \
  "$d" > "$d/fonts.conf"
# PATH: one folder of links to every program on PATH but the optional components' (chromium,
# quarto, Prometheus, Slurm with its daemons, munge, MariaDB)
mkdir -p "$d/bin" "$d/py"
"$PY" - "$d/bin" <<'PYEOF' || exit 2
import fnmatch, os, sys

HIDDEN = ("chromium*", "google-chrome*", "quarto", "prometheus", "promtool", "slurm*", "sbatch",
          "srun", "salloc", "sacct*", "scontrol", "sinfo", "squeue", "scancel", "munge*", "mysql*",
          "mariadb*")
for folder in os.environ["PATH"].split(os.pathsep):
    try:
        names = sorted(os.listdir(folder or "."))
    except OSError:
        continue
    for name in names:
        src, dst = os.path.join(folder, name), os.path.join(sys.argv[1], name)
        if any(fnmatch.fnmatchcase(name, p) for p in HIDDEN) or os.path.lexists(dst):
            continue
        if os.path.isfile(src) and os.access(src, os.X_OK):
            os.symlink(os.path.abspath(src), dst)
PYEOF
# Python packages: a sitecustomize (first on PYTHONPATH, so kernels and subprocesses get it too)
# whose path finder does not find them: `import torch` raises ModuleNotFoundError, find_spec gives
# None, and sys.modules never holds them (libraries such as scipy look there for torch)
cat > "$d/py/sitecustomize.py" <<PYEOF
import sys
from importlib.machinery import PathFinder

_HIDDEN = {n.strip() for n in "${PLAIN_HIDE_MODULES-torch,hta}".split(",") if n.strip()}


class _PathFinderHiding(PathFinder):
    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname.partition(".")[0] in _HIDDEN:
            return None
        return PathFinder.find_spec(fullname, path, target)


sys.meta_path[:] = [_PathFinderHiding if f is PathFinder else f for f in sys.meta_path]
PYEOF

export FONTCONFIG_FILE="$d/fonts.conf" PATH="$d/bin" PYTHONPATH="$d/py${PYTHONPATH:+:$PYTHONPATH}"
# say what is hidden, and check it is
fonts=$(fc-list :lang=ja 2>/dev/null | wc -l)
found=$(for b in chromium chromium-browser quarto prometheus promtool sbatch slurmctld munged mariadbd; do
  command -v "$b" >/dev/null 2>&1 && printf ' %s' "$b"; done)
mods=$("$PY" -c 'import importlib.util as u, sys; print(" ".join(m for m in sys.argv[1:] if u.find_spec(m)))' \
  $(echo "${PLAIN_HIDE_MODULES-torch,hta}" | tr , ' ') 2>/dev/null)
if [ "$fonts" != 0 ] || [ -n "$found" ] || [ -n "$mods" ]; then
  echo "plain tests: could not hide: ${fonts} Japanese fonts;${found:- no program}; modules: ${mods:-none}" >&2
  exit 2
fi
echo "plain tests: no CJK font, no chromium/quarto/prometheus/Slurm/munge/MariaDB on PATH, no ${PLAIN_HIDE_MODULES-torch,hta} importable"

if [ $# -eq 0 ]; then
  set -- -m component -n "${PLAIN_TEST_JOBS:-auto}" --dist loadgroup
  default=1
else
  default=0
fi
"$PY" -m pytest "$@"
rc=$?
if [ $rc -eq 5 ]; then
  if [ $default -eq 1 ]; then
    echo "plain tests: no test is marked 'component' (tests/conftest.py); nothing was checked" >&2
    exit 1
  fi
  echo "plain tests: no test selected by: $*"
  exit 0
fi
exit $rc
