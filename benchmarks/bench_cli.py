"""A newcomer's first commands (issue 41): ``trainperf --help``, ``trainperf init`` and a config error,
each a fresh process, beside ``python -c "import polars"`` alone, in one run.

The four commands run round-robin (one of each, then again), ``repeat`` times after one warm-up round
(which also writes any bytecode still missing), and each is measured by its own CPU seconds (user +
system of the child, ``os.wait4``): on a shared machine the wall time of a process start varies with
the load, its CPU much less. The figure is the min of the repeats; the wall min and median are in the
note.

Targets: ``--help`` and ``init`` in less CPU than ``import polars`` alone; a config error (``trainperf
report --config`` a file with an unknown key: the config's schema imports polars and the MLPerf
reader, the job's imports come after it) in at most twice that.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness

# the console script pip/uv installed beside this interpreter (what a user runs)
TRAINPERF = Path(sys.executable).with_name("trainperf")


def _one(argv: list[str], cwd: str) -> tuple[float, float, int]:
    """(CPU s of the child, wall s, exit status) of one process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here; Popen must not wait again
    return usage.ru_utime + usage.ru_stime, wall, proc.returncode


def measure(repeat: int) -> dict[str, dict]:
    """{name: {cpu_min, cpu_median, wall_min, wall_median, rc}} of the four commands, round-robin."""
    with tempfile.TemporaryDirectory(prefix="bench_cli_") as tmp:
        bad = Path(tmp, "bad.yaml")
        bad.write_text("cluster:\n  name: x\nno_such_key: 1\n", encoding="utf-8")
        target = str(Path(tmp, "cluster.yaml"))
        commands = {
            "import polars": [sys.executable, "-c", "import polars"],
            "trainperf --help": [str(TRAINPERF), "--help"],
            "trainperf init": [str(TRAINPERF), "init", "--force", target],
            "config error": [str(TRAINPERF), "report", "--config", str(bad)],
        }
        expected = {
            "import polars": 0,
            "trainperf --help": 0,
            "trainperf init": 0,
            "config error": 1,
        }
        runs: dict[str, list[tuple[float, float]]] = {k: [] for k in commands}
        for i in range(repeat + 1):
            for name, argv in commands.items():
                cpu, wall, rc = _one(argv, tmp)
                if rc != expected[name]:
                    raise RuntimeError(f"{name}: exit status {rc}, expected {expected[name]}")
                if i:  # round 0 is the warm-up
                    runs[name].append((cpu, wall))
    return {
        k: {
            "cpu_min": min(c for c, _ in v),
            "cpu_median": statistics.median(c for c, _ in v),
            "wall_min": min(w for _, w in v),
            "wall_median": statistics.median(w for _, w in v),
        }
        for k, v in runs.items()
    }


def run(quick: bool) -> list[harness.Row]:
    repeat = 5 if quick else 9
    t = measure(repeat)
    pol = t["import polars"]
    limit = f'python -c "import polars" {pol["cpu_min"]:.3f} s CPU'
    rows = []
    for name, work, factor in (
        ("trainperf --help", "`trainperf --help`, a fresh process", 1.0),
        ("trainperf init", "`trainperf init FILE` (writes the template), a fresh process", 1.0),
        (
            "config error",
            "`trainperf report --config FILE` with an unknown key (one error line), a fresh process",
            2.0,
        ),
    ):
        r = t[name]
        ratio = r["cpu_min"] / pol["cpu_min"]
        rows.append(
            harness.Row(
                work=work,
                product=f"{r['cpu_min']:.3f} s CPU",
                peer=limit,
                ratio=ratio,
                target="< 1x import polars" if factor == 1.0 else f"<= {factor:g}x import polars",
                met=ratio < factor if factor == 1.0 else ratio <= factor,
                note=f"CPU (user + system of the process) min of {repeat}, the four commands "
                f"round-robin after a warm-up round; median {r['cpu_median']:.3f} s vs "
                f"{pol['cpu_median']:.3f} s; wall min {r['wall_min']:.3f} s vs "
                f"{pol['wall_min']:.3f} s, median {r['wall_median']:.3f} s vs "
                f"{pol['wall_median']:.3f} s",
            )
        )
    return rows


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        print(
            f"{row.work}: {row.product} vs {row.peer}: ratio {row.ratio:.2f} ({row.target}, "
            f"{'met' if row.met else 'NOT met'})"
        )
