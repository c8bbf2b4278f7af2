"""Benchmark: ``trainperf record build`` over a real MLPerf round beside its limit (issue 36).

Needs checkouts of ``github.com/mlcommons/training_results_vX.Y`` (folders named so), given as
``TRAINPERF_MLPERF_CHECKOUTS=DIR1:DIR2:...``; without them it returns no row (the bundled 54 logs
flatter any loader: their lines repeat). In one child process (``harness.child``):

* limit: one ``json.loads`` per ``:::MLLOG`` line of every log of the newest round given (read,
  split lines, find the token, decode), CPU seconds: what any reader of this format must at least do
  in Python;
* product: :func:`trainperf.record.build_record` of that round with two workers (the machine's two
  cores): CPU seconds of the process and its workers (``RUSAGE_SELF`` + ``RUSAGE_CHILDREN``, user +
  system), wall seconds, and the peak of the summed resident memory of the process and its workers
  (sampled every 50 ms from ``/proc``);
* without ``--quick``: the same round's folders in one process with its stages timed (a profile in
  the first row's note); and with every checkout given, the same build over all the rounds given,
  whose peak memory must stay that of one round (flat).

Usage: ``TRAINPERF_MLPERF_CHECKOUTS=... .venv/bin/python benchmarks/run_all.py --only record``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import harness  # noqa: E402

_CHILD = r"""
import json, os, resource, threading, time
from pathlib import Path

def tree_rss_mb():
    pids, seen, total = [os.getpid()], set(), 0
    while pids:
        pid = pids.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            for line in open(f"/proc/{pid}/status"):
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
            for t in os.listdir(f"/proc/{pid}/task"):
                pids += [int(c) for c in open(f"/proc/{pid}/task/{t}/children").read().split()]
        except (OSError, ValueError):
            pass
    return total / 1024

dirs = json.loads(os.environ["BENCH_DIRS"])
mode = os.environ["BENCH_MODE"]
if mode == "limit":
    t0 = time.process_time(); n = 0
    loads = json.loads
    for d in dirs:
        for f in sorted(Path(d).rglob("result_*.txt")):
            for line in f.read_bytes().decode("utf-8", "replace").split("\n"):
                i = line.find(":::MLLOG")
                if i >= 0:
                    try:
                        loads(line[i + 8:]); n += 1
                    except ValueError:
                        pass
    RESULT = {"cpu_s": time.process_time() - t0, "lines": n}
elif mode == "profile":
    # one process, the folders in turn, the stages' CPU seconds (wrapped calls, process_time)
    import importlib
    from trainperf.record.folders import find_result_folders
    from trainperf.record.row import folder_row
    acc = {}
    def wrap(mod, name, label):
        m = importlib.import_module(mod)
        f = getattr(m, name)
        def w(*a, **k):
            t = time.process_time()
            try:
                return f(*a, **k)
            finally:
                acc[label] = acc.get(label, 0.0) + time.process_time() - t
        setattr(m, name, w)
    for mod, name, label in [
        ("trainperf.mlperf.loader", "read_log", "parse"),
        ("trainperf.mlperf.parse", "_simple_lines", "simple_lines"),
        ("trainperf.mlperf.lines", "_flat_events", "flat"),
        ("trainperf.mlperf.lines", "_event", "decode"),
        ("trainperf.mlperf.parse", "_event", "decode"),
        ("trainperf.record.row", "load_results", "load"),
        ("trainperf.record.row", "throughput", "throughput"),
        ("trainperf.mlperf.throughput", "precision_of_runs", "precision"),
        ("trainperf.record.row", "logs_sha256", "sha256"),
    ]:
        wrap(mod, name, label)
    folders = find_result_folders(dirs)
    t0 = time.process_time()
    for f in folders:
        folder_row(f)
    acc["total"] = time.process_time() - t0
    RESULT = acc
else:
    from trainperf.record import build_record
    peak = [0.0]; stop = threading.Event()
    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], tree_rss_mb()); time.sleep(0.05)
    th = threading.Thread(target=sample, daemon=True); th.start()
    t0 = time.perf_counter()
    rec = build_record(dirs, jobs=2)
    wall = time.perf_counter() - t0
    stop.set(); th.join()
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    RESULT = {"cpu_s": s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime, "wall_s": wall,
              "peak_tree_mb": peak[0], "rows": rec.height}
"""


def _checkouts() -> list[Path]:
    env = os.environ.get("TRAINPERF_MLPERF_CHECKOUTS", "")
    return [Path(p) for p in env.split(os.pathsep) if p and Path(p).is_dir()]


def _round(p: Path) -> tuple:
    return tuple(int(x) for x in p.name.rsplit("v", 1)[-1].split(".") if x.isdigit())


def run(quick: bool) -> list[harness.Row]:
    roots = sorted(_checkouts(), key=_round)
    if not roots:
        print("bench_record: TRAINPERF_MLPERF_CHECKOUTS not set: no row", file=sys.stderr)
        return []
    one = [str(roots[-1])]
    env = {"BENCH_DIRS": json.dumps(one), "POLARS_MAX_THREADS": "1"}
    limit = harness.child(_CHILD, env={**env, "BENCH_MODE": "limit"})
    prod = harness.child(_CHILD, env={**env, "BENCH_MODE": "build"})
    name = roots[-1].name
    ratio = prod["cpu_s"] / limit["cpu_s"]
    rows = [
        harness.Row(
            f"record build, {name} ({prod['rows']} results, {limit['lines']:,} MLLOG lines), CPU",
            f"{prod['cpu_s']:.2f} s CPU ({prod['wall_s']:.1f} s wall, 2 workers)",
            f"json.loads per line {limit['cpu_s']:.2f} s CPU",
            ratio,
            "<= 1.5x the limit",
            ratio <= 1.5,
            f"both cores: CPU / (wall x 2) = {prod['cpu_s'] / (prod['wall_s'] * 2):.2f} on a "
            "shared machine",
        ),
        harness.Row(
            f"record build, {name}, peak memory (process and workers, summed)",
            f"{prod['peak_tree_mb']:.0f} MB",
            "",
            None,
            "< 500 MB",
            prod["peak_tree_mb"] < 500,
        ),
    ]
    if not quick:
        p = harness.child(_CHILD, env={**env, "BENCH_MODE": "profile"})
        tot = p["total"]

        def pc(x: float) -> str:
            return f"{100 * x / tot:.0f} %"

        rows[0].note += (
            f"; profile of the same build in one process ({tot:.2f} s CPU, wrapped calls timed): "
            f"parsing the logs {pc(p['parse'])} (of which the lines as mllog writes them, in "
            f"C-level passes, {pc(p['simple_lines'])}: their flat events, tracked_stats, cut by one "
            f"polars regex call a file, not decoded, {pc(p['flat'])}; decoding the events of "
            f"templates not seen before, json.loads and checks, {pc(p.get('decode', 0.0))}), "
            "the runs, checks and scores of "
            f"the loader {pc(p['load'] - p['parse'])}, throughput {pc(p['throughput'])} (of which "
            f"the precision scan of each converged log {pc(p['precision'])}), the logs' sha256 "
            f"{pc(p['sha256'])}, the rest {pc(tot - p['load'] - p['throughput'] - p['sha256'])}; "
            "the build's workers add their start (imports, tables)"
        )
    if not quick and len(roots) > 1:
        env_all = {**env, "BENCH_DIRS": json.dumps([str(r) for r in roots])}
        allr = harness.child(_CHILD, env={**env_all, "BENCH_MODE": "build"})
        flat = allr["peak_tree_mb"] / prod["peak_tree_mb"]
        rows.append(
            harness.Row(
                f"record build, {len(roots)} rounds ({allr['rows']} results), peak memory",
                f"{allr['peak_tree_mb']:.0f} MB ({allr['cpu_s']:.0f} s CPU)",
                f"one round {prod['peak_tree_mb']:.0f} MB",
                flat,
                "flat: <= 1.2x one round, < 500 MB",
                flat <= 1.2 and allr["peak_tree_mb"] < 500,
            )
        )
    return rows


if __name__ == "__main__":
    print(harness.markdown(run("--quick" in sys.argv)))
