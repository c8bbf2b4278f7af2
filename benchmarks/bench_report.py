"""The main job (`trainperf report`, what `make report` runs) against its targets (issue 16).

Two runs of the real command line in child processes, into a scratch output and figures folder
(the repository's own `_output/` and `figures/` are left alone):

* **cold**: nothing from an earlier run (empty output and figures folders; the venv present);
* **warm**: the same command again, nothing changed: every notebook is skipped
  (:mod:`trainperf.report.rerun`) and only the site is rebuilt.

The targets are absolute (seconds, on this 2-core machine): warm <= 30 s, cold <= 90 s (the issue's
cold figure includes creating the venv from a fresh clone; the venv set-up is timed separately by
`../shared/tools/fresh-clone-check` and reported in the closing note, not here).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import Row

ROOT = Path(__file__).resolve().parents[1]


def _report(out: Path, figures: Path, extra: list[str] = ()) -> tuple[float, str]:
    cmd = [
        sys.executable,
        "-m",
        "trainperf",
        "report",
        "--out",
        str(out),
        "--figures",
        str(figures),
        "--no-quarto",
        *extra,
    ]
    t0 = time.perf_counter()
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={**os.environ})
    dt = time.perf_counter() - t0
    if res.returncode:
        raise RuntimeError(f"trainperf report failed: {res.stderr.strip().splitlines()[-1:]}")
    return dt, res.stdout


def run(quick: bool = False) -> list[Row]:
    tmp = Path(tempfile.mkdtemp(prefix="bench-report-"))
    try:
        out, figures = tmp / "out", tmp / "figures"
        cold, _ = _report(out, figures)
        warm, text = _report(out, figures)
        n_skipped = text.count("ipynb unchanged")
        rows = [
            Row(
                "`trainperf report`, cold (empty output and figures; venv present)",
                f"{cold:.1f} s",
                "target 90 s",
                cold / 90.0,
                "<= 90 s",
                cold <= 90.0,
                "8 notebooks, one kernel each, the batch grid, figures in 2 languages, preview site",
            ),
            Row(
                "`trainperf report`, warm (nothing changed)",
                f"{warm:.1f} s",
                "target 30 s",
                warm / 30.0,
                "<= 30 s",
                warm <= 30.0,
                f"{n_skipped} notebooks skipped as unchanged; the batch reuses its runs; the site is rebuilt",
            ),
        ]
        return rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    import harness

    print(harness.markdown(run("--quick" in sys.argv)))
