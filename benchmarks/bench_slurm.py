"""sacct --parsable2 reader against polars ``read_csv`` of the same bytes (issue 16).

Run through ``benchmarks/run_all.py --only slurm`` (or ``python benchmarks/bench_slurm.py``).

Contenders, interleaved and repeated on the same file, in this one process:

* product: :func:`trainperf.slurm.read_sacct_parsable` (all derived columns, checks, flags);
* peer / limit: ``polars.read_csv(path, separator="|", quote_char=None, infer_schema=False,
  truncate_ragged_lines=True)``: every field as text, nothing parsed or checked (the bundled dump
  has job names with ``|``, which plain ``read_csv`` refuses);
* before: the line-by-line reader this one replaced (``tests/slurm_reference.py``), for the record.

Sizes: the bundled SYNTHETIC dump (``data/slurm/synthetic/sacct_parsable2.txt``, 1.7 MB, 8,358
records) and copies of its records ten and a hundred times over (17 MB, 170 MB; issue 29: the target
holds at every size). The target is stated in CPU seconds
(issue 16: "0.75 s / 9.0 s CPU vs 8 ms / 67 ms") and, since issue 41, in wall time too (polars
reads with every core, so must the reader): CPU time of this process (all polars threads) and wall
time of the same calls, round-robin, min over the repeats, each its own row.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import polars as pl

from trainperf import slurm
from trainperf.slurm import derive, parsable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import harness  # noqa: E402
import slurm_reference  # noqa: E402

BUNDLED = harness.ROOT / "data" / "slurm" / "synthetic" / "sacct_parsable2.txt"
TARGET = 5.0


def _peer(path: Path) -> pl.DataFrame:
    return pl.read_csv(
        path, separator="|", quote_char=None, infer_schema=False, truncate_ragged_lines=True
    )


def _cpu_interleaved(fns: dict, repeat: int, warmup: int = 1) -> dict[str, float]:
    """min CPU seconds (``time.process_time``: this process, all threads) per callable, interleaved."""
    for _ in range(warmup):
        for f in fns.values():
            f()
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for k, f in fns.items():
            t0 = time.process_time()
            f()
            best[k] = min(best[k], time.process_time() - t0)
    return best


def _profile(path: Path, repeat: int = 5) -> str:
    """Where the product's CPU time goes: the reader's steps (records split from the lines, the
    per-row parse query, each group of derived columns, the final frames), as shares of the
    whole, min over ``repeat`` runs, measured by wrapping the steps with ``time.process_time``."""
    steps = {
        (parsable, "_read_well_formed"): "records of a well-formed file (CSV reader)",
        (parsable._Records, "build"): "split into records",
        (derive.Derive, "parse_rows"): "parse query (ids, times, durations, counts, and the "
        "per-value tables of State, ExitCode, Timelimit, NodeList, AllocTRES)",
        (derive.Derive, "resources"): "NodeList + AllocTRES columns",
        (derive.Derive, "state_and_exit"): "State + ExitCode columns",
        (derive.Derive, "ids"): "id columns",
        (derive.Derive, "elapsed_and_limit"): "Elapsed + Timelimit columns",
        (derive.Derive, "data_flags"): "data_flags",
        (derive, "assemble"): "jobs/steps frames",
    }
    acc: dict[str, float] = {}
    saved = {k: getattr(*k) for k in steps}

    def wrap(f, label):
        @functools.wraps(f)
        def w(*a, **k):
            t0 = time.process_time()
            try:
                return f(*a, **k)
            finally:
                acc[label] = acc.get(label, 0.0) + time.process_time() - t0

        return w

    best: dict[str, float] = {}
    total = float("inf")
    try:
        for (obj, name), label in steps.items():
            setattr(obj, name, wrap(saved[obj, name], label))
        for _ in range(repeat):
            acc.clear()
            t0 = time.process_time()
            slurm.read_sacct_parsable(path)
            run = time.process_time() - t0
            if run < total:
                total, best = run, dict(acc)
    finally:
        for (obj, name), f in saved.items():
            setattr(obj, name, f)
    best["rest"] = total - sum(best.values())
    top = sorted(best.items(), key=lambda kv: -kv[1])
    return "profile (CPU share of one read): " + ", ".join(
        f"{label} {100 * v / total:.0f} %" for label, v in top
    )


def _measure(path: Path, label: str, repeat: int, with_before: bool) -> list[harness.Row]:
    fns = {
        "product": lambda: slurm.read_sacct_parsable(path),
        "polars": lambda: _peer(path),
    }
    load0 = os.getloadavg()[0]
    t = harness.interleaved_cpu_wall(fns, repeat=repeat)  # CPU and wall of the same calls
    load1 = os.getloadavg()[0]
    before_s = None
    if with_before:  # once, for the record (it takes seconds on the large file)
        t0 = time.process_time()
        slurm_reference.read_sacct_parsable(path)
        before_s = time.process_time() - t0
    p, q = t["product"], t["polars"]
    before = (
        f"; the line-by-line reader it replaced: {before_s:.3f} s CPU, one run "
        f"({before_s / p['cpu_min']:.1f}x the product)"
        if before_s is not None
        else ""
    )
    rows = []
    for how, unit in (("cpu", "CPU"), ("wall", "wall")):
        ratio = p[f"{how}_min"] / q[f"{how}_min"]
        note = (
            f"{repeat} runs of each, round-robin, min (CPU: process_time, all threads); median "
            f"{p[f'{how}_median']:.3f} s vs {q[f'{how}_median']:.3f} s; load average {load0:.1f} "
            f"before the runs, {load1:.1f} after"
        )
        if how == "cpu":
            note += f"{before}; {_profile(path, repeat)}"
        rows.append(
            harness.Row(
                work=f"sacct parsable2 reader, {label}, {unit}",
                product=f"{p[f'{how}_min']:.3f} s {unit}",
                peer=f"polars read_csv, separator pipe, all text: {q[f'{how}_min']:.3f} s {unit}",
                ratio=ratio,
                target=f"<= {TARGET:g}x polars ({unit})",
                met=ratio <= TARGET,
                note=note,
            )
        )
    return rows


JSON = harness.ROOT / "data" / "slurm" / "synthetic" / "sacct.json"
JSON_TARGET = 1.5


def _json_peer(path: Path) -> pl.DataFrame:
    """``json.load`` of the dump and ``polars.json_normalize`` of its jobs (and their steps):
    decoding and flattening (mixed types as text: strict=False), nothing checked or derived."""
    with open(path, "rb") as fh:
        doc = json.load(fh)
    jobs = doc.get("jobs", [])
    steps = [s for j in jobs for s in j.get("steps", [])]
    pl.json_normalize(steps, infer_schema_length=None, strict=False)
    return pl.json_normalize(jobs, infer_schema_length=None, strict=False)


def _json_row(repeat: int) -> harness.Row:
    """sacct --json reader against json.load + json_normalize (issue 29)."""

    def load():
        with open(JSON, "rb") as fh:
            json.load(fh)

    cpu = _cpu_interleaved(
        {
            "product": lambda: slurm.read_sacct_json(JSON),
            "peer": lambda: _json_peer(JSON),
            "load": load,
        },
        repeat=repeat,
    )
    ratio = cpu["product"] / cpu["peer"]
    return harness.Row(
        work=f"sacct --json reader, bundled dump ({JSON.stat().st_size / 1e6:.1f} MB)",
        product=f"{cpu['product']:.3f} s CPU",
        peer=f"json.load + polars.json_normalize of jobs and steps: {cpu['peer']:.3f} s CPU",
        ratio=ratio,
        target=f"<= {JSON_TARGET:g}x json.load + json_normalize",
        met=ratio <= JSON_TARGET,
        note=f"CPU min of {repeat}, interleaved; json.load alone {cpu['load']:.3f} s CPU "
        f"(the product {cpu['product'] / cpu['load']:.1f}x)",
    )


def run(quick: bool) -> list[harness.Row]:
    warnings.simplefilter("ignore")  # the bundled dump's flagged records warn on every read
    repeat = 3 if quick else 9
    rows = _measure(BUNDLED, "bundled dump (1.7 MB)", repeat, with_before=True)
    head, body = BUNDLED.read_text(encoding="utf-8").split("\n", 1)
    with tempfile.TemporaryDirectory() as tmp:
        for copies in [2] if quick else [10, 100]:  # issue 29: every size from 1.7 MB to 170 MB
            big = Path(tmp) / f"sacct_{copies}x.txt"
            big.write_text(head + "\n" + body * copies, encoding="utf-8")
            size = big.stat().st_size / 1e6
            rows += _measure(
                big,
                f"{copies}x copy ({size:.0f} MB)",
                max(5, repeat - (2 if copies <= 10 else 4)),  # issue 41: min of >= 5
                with_before=not quick and copies <= 10,
            )
            big.unlink()
    rows.append(_json_row(repeat))
    return rows


if __name__ == "__main__":
    for r in run("--quick" in sys.argv):
        print(r)
