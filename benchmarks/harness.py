"""Shared benchmark machinery: interleaved repeated timings, peak memory in a child process, the table.

Every ``benchmarks/bench_*.py`` module defines ``run(quick: bool) -> list[Row]``: it runs the product and
its peer or limit side by side, in this one process run, interleaved and repeated, and returns one
:class:`Row` per target. ``benchmarks/run_all.py`` imports them all and writes the Markdown table.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Row:
    """One benchmark target.

    Attributes:
        work: what was measured (e.g. "sacct parsable2 reader, 10x bundled dump").
        product: the product's figure, as text with its unit (e.g. "0.31 s").
        peer: the peer's or limit's figure on the same bytes, with what it is (e.g. "polars read_csv 0.07 s").
        ratio: product / peer (or the figure the target is stated in), None if not applicable.
        target: the target as text (e.g. "<= 5x polars").
        met: whether the target is met.
        note: anything a reader needs (profile, caveat).
    """

    work: str
    product: str
    peer: str
    ratio: float | None
    target: str
    met: bool
    note: str = ""


def interleaved(fns: Mapping[str, Callable[[], object]], repeat: int = 5, warmup: int = 1) -> dict:
    """Time each callable ``repeat`` times, interleaved (a, b, a, b, ...), after ``warmup`` rounds.

    Returns:
        {name: {"min_s": float, "median_s": float, "runs": [float, ...]}} (wall seconds).
    """
    for _ in range(warmup):
        for f in fns.values():
            f()
    runs: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for k, f in fns.items():
            t0 = time.perf_counter()
            f()
            runs[k].append(time.perf_counter() - t0)
    return {
        k: {"min_s": min(v), "median_s": statistics.median(v), "runs": v} for k, v in runs.items()
    }


def interleaved_cpu_wall(
    fns: Mapping[str, Callable[[], object]], repeat: int = 5, warmup: int = 1
) -> dict:
    """Time each callable ``repeat`` times, round-robin (a, b, a, b, ...), after ``warmup`` rounds,
    each call measured both ways: CPU seconds of this process (``time.process_time``, all threads)
    and wall seconds (``time.perf_counter``).

    Returns:
        {name: {"cpu_min", "cpu_median", "wall_min", "wall_median": float, "cpu", "wall": [...]}}.
    """
    for _ in range(warmup):
        for f in fns.values():
            f()
    cpu: dict[str, list[float]] = {k: [] for k in fns}
    wall: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for k, f in fns.items():
            c0, t0 = time.process_time(), time.perf_counter()
            f()
            wall[k].append(time.perf_counter() - t0)
            cpu[k].append(time.process_time() - c0)
    return {
        k: {
            "cpu_min": min(cpu[k]),
            "cpu_median": statistics.median(cpu[k]),
            "wall_min": min(wall[k]),
            "wall_median": statistics.median(wall[k]),
            "cpu": cpu[k],
            "wall": wall[k],
        }
        for k in fns
    }


def child(code: str, env: Mapping[str, str] | None = None, timeout: float = 3600) -> dict:
    """Run Python ``code`` in a fresh interpreter; it must print one JSON object as its last line.

    The returned dict gets ``peak_rss_mb`` (the child's ``ru_maxrss``, imports included) and
    ``wall_s`` (the whole child, start-up included).

    Raises:
        RuntimeError: the child failed (its stderr tail in the message).
    """
    wrapper = (
        "import json, resource, sys\n"
        + code
        + "\n_r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
        # Linux keeps ru_maxrss over fork + exec (the parent's RSS at fork): VmHWM is the child's own
        "try:\n    _r = int([l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0].split()[1]) / 1024\n"
        "except (OSError, IndexError):\n    pass\n"
        "print(json.dumps({**RESULT, 'peak_rss_mb': _r}))\n"
    )
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", wrapper],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=ROOT,
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark child failed: {proc.stderr.strip()[-2000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["wall_s"] = wall
    return out


def machine() -> str:
    """One line describing this machine (CPU model, cores, memory, Python)."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kb / 2**20:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return f"{cpu}, {os.cpu_count()} cores{mem}, Python {platform.python_version()}"


def markdown(rows: list[Row]) -> str:
    """The rows as a Markdown table."""
    head = "| work | product | peer / limit | ratio | target | met |\n|---|---|---|---|---|---|\n"
    body = "".join(
        f"| {r.work} | {r.product} | {r.peer} | {'' if r.ratio is None else f'{r.ratio:.2f}'} "
        f"| {r.target} | {'yes' if r.met else '**no**'} |\n"
        for r in rows
    )
    notes = "".join(f"\n* {r.work}: {r.note}" for r in rows if r.note)
    return head + body + notes + "\n"
