"""Benchmark: reading a large PyTorch profiler trace, against a plain ``json.load`` of the same file.

Builds a trace of ``--size-mb`` MB (default 200) in a temp folder from the bundled H200 trace
(``data/traces/h200_1gpu_1.3b_20261201T0923Z``, 43.5 MB, 8 steps): its events repeated with the
timestamps shifted by the traced span, the step numbers and correlation ids offset per copy, so the
result is a longer trace of the same run (uncompressed ``.json``, so that parsing, not gzip, is
measured). Then, each in a fresh subprocess:

* ``json.load``: ``json.load`` of the file, nothing else (the peer: what any reader built on the
  standard library starts from);
* ``trainperf``: :func:`trainperf.trace.read_trace` (the frames) and :func:`trainperf.trace.step_breakdown`
  (the time split of every step), i.e. the reader and its main analysis;
* ``hta`` (with ``--hta``, if HolisticTraceAnalysis is installed): ``TraceAnalysis`` on the file
  (its parser) and ``get_temporal_breakdown``.

Reports wall time and peak RSS (``VmHWM`` of ``/proc/self/status`` in the subprocess, interpreter
and imports included; ``ru_maxrss`` would carry the parent's size across ``exec``; a bare
interpreter and the bare imports are measured too) and the ratios to ``json.load``.
Usage::

    python benchmarks/trace_read.py               # 200 MB
    python benchmarks/trace_read.py --size-mb 50 --hta
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = (
    ROOT / "data" / "traces" / "h200_1gpu_1.3b_20261201T0923Z" / "trace" / "rank0.pt.trace.json.gz"
)


def generate(path: Path, size_mb: float) -> dict:
    """Write the repeated trace; return its size and counts."""
    with gzip.open(SOURCE, "rt") as fh:
        doc = json.load(fh)
    events = doc.pop("traceEvents")
    xs = [e for e in events if e.get("ph") == "X" and isinstance(e.get("ts"), (int, float))]
    t0 = min(e["ts"] for e in xs)
    span = max(e["ts"] + e.get("dur", 0) for e in xs) - t0 + 1000.0
    one = len(json.dumps(events))
    copies = max(1, math.ceil(size_mb * 1e6 / one))
    n_steps = sum(
        1
        for e in events
        if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep")
    )
    max_corr = max((e.get("args") or {}).get("correlation", 0) or 0 for e in events) + 1
    head = json.dumps(doc)[:-1]
    with open(path, "w") as out:
        out.write(head + ', "traceEvents": [\n')
        first = True
        for c in range(copies):
            for e in events:
                e2 = dict(e)
                if isinstance(e2.get("ts"), (int, float)) and e2.get("ph") != "M":
                    e2["ts"] = round(e2["ts"] + c * span, 3)
                if e2.get("name", "").startswith("ProfilerStep#"):
                    e2["name"] = f"ProfilerStep#{int(e2['name'].split('#')[1]) + c * n_steps}"
                a = e2.get("args")
                if isinstance(a, dict) and "correlation" in a:
                    e2["args"] = {**a, "correlation": a["correlation"] + c * max_corr}
                if e2.get("cat") in ("ac2g",) and "id" in e2:
                    e2["id"] = e2["id"] + c * max_corr
                out.write(("" if first else ",\n") + json.dumps(e2))
                first = False
        out.write("\n]}\n")
    return {
        "bytes": path.stat().st_size,
        "copies": copies,
        "events": copies * len(events),
        "steps": copies * n_steps,
    }


CODE = {
    "python": "pass",
    "imports": "import json, polars, numpy; import trainperf.trace",
    "json.load": "import json\nwith open(P) as fh: d = json.load(fh)\nn = len(d['traceEvents'])",
    "trainperf": "from trainperf import trace\nts = trace.read_trace(P)\nsb = trace.step_breakdown(ts)\nn = ts.kernels.height",
    "hta": (
        "import os, logging; os.environ['HTA_DISABLE_NS_ROUNDING'] = '1'; logging.getLogger('hta').setLevel(logging.ERROR)\n"
        "from hta.trace_analysis import TraceAnalysis\n"
        "ta = TraceAnalysis(trace_files={0: P}, trace_dir=os.path.dirname(P))\n"
        "tb = ta.get_temporal_breakdown(visualize=False)\nn = len(ta.t.get_trace(0))"
    ),
}


def measure(name: str, path: Path) -> dict:
    prog = (
        "import sys, time, json\n"
        f"P = {str(path)!r}\n"
        "t = time.perf_counter()\n"
        f"{CODE[name]}\n"
        "dt = time.perf_counter() - t\n"
        "hwm = next(int(x.split()[1]) for x in open('/proc/self/status') if x.startswith('VmHWM'))\n"
        "print(json.dumps({'s': dt, 'rss_mb': hwm / 1024}))\n"
    )
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(f"{name} failed: {p.stderr[-2000:]}")
    res = json.loads(p.stdout.strip().splitlines()[-1])
    res["wall_s"] = time.perf_counter() - t
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size-mb", type=float, default=200.0)
    ap.add_argument("--hta", action="store_true", help="also time HolisticTraceAnalysis")
    ap.add_argument("--json", default=None, help="write the results here")
    ap.add_argument("--generate", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.generate:
        print(json.dumps(generate(Path(args.generate), args.size_mb)))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rank0.pt.trace.json"
        t = time.perf_counter()
        gen = subprocess.run(  # in a child, so that this process stays small
            [sys.executable, __file__, "--generate", str(path), "--size-mb", str(args.size_mb)],
            capture_output=True,
            text=True,
            check=True,
        )
        info = json.loads(gen.stdout)
        print(
            f"trace: {info['bytes'] / 1e6:.0f} MB, {info['events']:,} events, {info['steps']} steps "
            f"({info['copies']} copies of the bundled trace; generated in {time.perf_counter() - t:.0f} s)",
            flush=True,
        )
        names = ["python", "imports", "json.load", "trainperf"] + (["hta"] if args.hta else [])
        out = {"trace": info}
        for n in names:
            out[n] = measure(n, path)
            print(f"{n:10s} {out[n]['s']:8.2f} s  peak RSS {out[n]['rss_mb']:8.0f} MB", flush=True)
        base = out["json.load"]
        base_net = base["rss_mb"] - out["python"]["rss_mb"]  # json.load needs no more than Python
        for n in names[3:]:
            net = out[n]["rss_mb"] - out["imports"]["rss_mb"]  # above its own imports
            print(
                f"{n} / json.load: time {out[n]['s'] / base['s']:.2f}x, peak RSS {out[n]['rss_mb'] / base['rss_mb']:.2f}x, "
                f"peak RSS above the imports {net:.0f} / {base_net:.0f} MB = {net / max(base_net, 1):.2f}x"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
