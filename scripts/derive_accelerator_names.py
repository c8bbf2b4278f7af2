"""Derive data/reference/mlperf_accelerator_names.csv: every ``accelerator_model_name`` string of
the MLCommons Training results v3.1-v5.1 ``<submitter>/systems/*.json`` files, with the file it
was first seen in (repository, commit, path, sha256 of the file) and the accelerator table row it
maps to (:func:`trainperf.flops.lookup_accelerator`). Nothing but the strings is bundled.

Usage (reads bare git mirrors of github.com/mlcommons/training_results_v<round>):

    .venv/bin/python scripts/derive_accelerator_names.py --mirrors /work/.mirror [--write]

Without ``--write`` it prints the table; it fails when a string maps to no row (a CPU-only
system's ``N/A`` is recorded with an empty ``accelerator``).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import subprocess
import sys
from pathlib import Path

from trainperf.flops import load_accelerators, lookup_accelerator
from trainperf.flops.accelerators import NO_ACCELERATOR, UnknownAcceleratorError

ROUNDS = ("3.1", "4.0", "4.1", "5.0", "5.1")
OUT = Path(__file__).resolve().parents[1] / "data" / "reference" / "mlperf_accelerator_names.csv"
COLUMNS = ["accelerator_model_name", "accelerator", "rounds", "n_files", "repo", "commit", "path",
           "sha256", "source"]


def _git(gitdir: Path, *args: str) -> bytes:
    return subprocess.run(["git", f"--git-dir={gitdir}", *args], check=True,
                          capture_output=True).stdout


def derive(mirrors: Path) -> list[dict]:
    table = load_accelerators()
    seen: dict[str, dict] = {}
    for rnd in ROUNDS:
        repo = f"mlcommons/training_results_v{rnd}"
        gitdir = mirrors / f"mlcommons+training_results_v{rnd}" / "repo"
        commit = _git(gitdir, "rev-parse", "HEAD").decode().strip()
        paths = _git(gitdir, "ls-tree", "-r", "--name-only", "HEAD").decode().splitlines()
        for path in sorted(p for p in paths if p.count("/") == 2 and p.split("/")[1] == "systems"
                           and p.endswith(".json")):
            raw = _git(gitdir, "show", f"HEAD:{path}")
            try:
                name = json.loads(raw).get("accelerator_model_name")
            except (ValueError, AttributeError):
                print(f"{repo}@{commit[:8]}:{path}: not a JSON object, skipped", file=sys.stderr)
                continue
            if not isinstance(name, str):
                continue
            row = seen.get(name)
            if row is None:
                try:
                    acc = lookup_accelerator(name, table)["accelerator"]
                except UnknownAcceleratorError:
                    if name.strip().lower() not in NO_ACCELERATOR:
                        raise
                    acc = ""
                seen[name] = row = {
                    "accelerator_model_name": name, "accelerator": acc, "rounds": [],
                    "n_files": 0, "repo": repo, "commit": commit, "path": path,
                    "sha256": hashlib.sha256(raw).hexdigest(),
                    "source": f"https://github.com/{repo}/blob/{commit}/{path}",
                }
            if f"v{rnd}" not in row["rounds"]:
                row["rounds"].append(f"v{rnd}")
            row["n_files"] += 1
    out = sorted(seen.values(), key=lambda r: (r["accelerator"], r["accelerator_model_name"]))
    for r in out:
        r["rounds"] = ";".join(r["rounds"])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--write", action="store_true", help=f"write {OUT}")
    args = ap.parse_args()
    rows = derive(args.mirrors)
    buf = io.StringIO()
    w = csv.DictWriter(buf, COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    if args.write:
        OUT.write_text(buf.getvalue(), encoding="utf-8")
        print(f"wrote {len(rows)} strings to {OUT}")
    else:
        sys.stdout.write(buf.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
