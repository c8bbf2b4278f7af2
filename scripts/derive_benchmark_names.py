"""Derive tests/data/mlperf/benchmark_names_upstream.csv: the benchmark names of mlcommons/logging's
result summarizer (``mlperf_logging/result_summarizer/config.yaml``, ``columns: training:``), one
row per training ruleset 3.1.0-6.1.0 and benchmark id, with repository, commit, path and sha256.
The installed ``mlperf-logging`` wheel does not ship that file, so the test reads this copy.

    .venv/bin/python scripts/derive_benchmark_names.py --mirror /work/.mirror/mlcommons+logging/repo --write
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import subprocess
import sys
from pathlib import Path

import yaml

PATH = "mlperf_logging/result_summarizer/config.yaml"
OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "mlperf" / "benchmark_names_upstream.csv"
RULESETS = ("3.1.0", "4.0.0", "4.1.0", "5.0.0", "5.1.0", "6.0.0", "6.1.0")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", type=Path, default=Path("/work/.mirror/mlcommons+logging/repo"))
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    git = ["git", f"--git-dir={a.mirror}"]
    commit = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True,
                            text=True).stdout.strip()
    raw = subprocess.run([*git, "show", f"HEAD:{PATH}"], check=True, capture_output=True).stdout
    sha = hashlib.sha256(raw).hexdigest()
    cols = yaml.safe_load(raw)["columns"]["training"]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["ruleset", "benchmark", "upstream_name", "area", "dataset", "repo", "commit",
                "path", "sha256"])
    for rs in RULESETS:
        for bench, v in cols[rs].items():
            if bench != "default":
                w.writerow([rs, bench, v[-1], v[1], v[2], "mlcommons/logging", commit, PATH, sha])
    if a.write:
        OUT.write_text(buf.getvalue(), encoding="utf-8")
        print(f"wrote {OUT}")
    else:
        sys.stdout.write(buf.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
