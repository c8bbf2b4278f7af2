"""Run every benchmark (``benchmarks/bench_*.py``) and write the Markdown table.

Usage::

    .venv/bin/python benchmarks/run_all.py            # full sizes; writes benchmarks/RESULTS.md
    .venv/bin/python benchmarks/run_all.py --quick    # small sizes, a smoke run
    .venv/bin/python benchmarks/run_all.py --only slurm mlperf   # replaces those sections only
    .venv/bin/python benchmarks/run_all.py --readme               # then the README table from RESULTS.md

Each module's ``run(quick)`` returns :class:`harness.Row` objects; the table lists the product's figure,
its peer or limit on the same bytes, the ratio and whether the target is met. Each module's rows become
its section of RESULTS.md (``results_md.py``), headed by the command that reproduces them, the machine,
the date and the load average over the run (the machine may be shared: ratios come from interleaved
runs in one process, and CPU seconds where the load matters). The exit status is 1 when a target of
this run is not met.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shlex
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import harness  # noqa: E402
import results_md  # noqa: E402

# environment variables that change what a module measures: named in the command that reproduces it
_ENV = (
    "TRAINPERF_BENCH_256X",
    "TRAINPERF_BENCH_256X_HOSTS",
    "TRAINPERF_BENCH_SIZES",
    "TRAINPERF_BENCH_JOBS",
    "TRAINPERF_BENCH_NO_CLONE",
    "TRAINPERF_MLPERF_CHECKOUTS",
)


def _checkouts_text(value: str) -> str:
    """TRAINPERF_MLPERF_CHECKOUTS as the reader supplies it: the checkouts' names, not this
    machine's paths (``<checkouts of training_results_v3.1..v5.1, colon-separated>``)."""
    names = sorted(
        {Path(p).name for p in value.split(os.pathsep) if p},
        key=lambda n: tuple(int(x) for x in n.rsplit("v", 1)[-1].split(".") if x.isdigit()),
    )
    if not names:
        return "<checkouts of training_results_vX.Y, colon-separated>"
    last = names[-1].rsplit("_", 1)[-1]
    span = names[0] if len(names) == 1 else f"{names[0]}..{last}"
    return f"<checkouts of {span}, colon-separated>"


def _command(name: str, quick: bool) -> str:
    # quoted as a shell reads it ("TRAINPERF_BENCH_SIZES='1 64'"), so the line runs as printed;
    # the checkouts' paths are this machine's: named by what they hold instead
    env = " ".join(
        f"{k}={_checkouts_text(os.environ[k])}"
        if k == "TRAINPERF_MLPERF_CHECKOUTS"
        else f"{k}={shlex.quote(os.environ[k])}"
        for k in _ENV
        if os.environ.get(k)
    )
    return f"{env + ' ' if env else ''}.venv/bin/python benchmarks/run_all.py --only {name}" + (
        " --quick" if quick else ""
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--only", nargs="*", default=None, help="names of bench_*.py modules to run")
    ap.add_argument(
        "--out",
        default=None,
        help="Markdown file whose sections to replace (default benchmarks/RESULTS.md; with --quick "
        "none: a smoke run prints only)",
    )
    ap.add_argument(
        "--readme", action="store_true", help="rewrite README.md's Performance table from the file"
    )
    args = ap.parse_args(argv)
    names = sorted(p.stem.removeprefix("bench_") for p in HERE.glob("bench_*.py"))
    if args.only:
        unknown = sorted(set(args.only) - set(names))
        if unknown:
            print(
                f"run_all: no benchmark {', '.join(unknown)}; have {', '.join(names)}",
                file=sys.stderr,
            )
            return 2
        names = [n for n in names if n in args.only]
    rows: list[harness.Row] = []
    new: dict[str, str] = {}
    out = Path(args.out) if args.out else None if args.quick else results_md.RESULTS
    for name in names if args.only is not None or not args.readme else []:
        t0 = time.perf_counter()
        load0 = os.getloadavg()[0]
        print(f"[{name}] running ...", file=sys.stderr, flush=True)
        got = importlib.import_module(f"bench_{name}").run(args.quick)
        load1 = os.getloadavg()
        took = time.perf_counter() - t0
        print(f"[{name}] done in {took:.0f} s", file=sys.stderr, flush=True)
        rows.extend(got)
        measured = (
            f"Measured on {harness.machine()}, {time.strftime('%Y-%m-%d %H:%M %Z')}, in {took:.0f} s; "
            f"load average {load0:.1f} at the start, {load1[0]:.1f} at the end "
            f"({load1[1]:.1f} over 5 min; {os.cpu_count()} CPUs)"
            f"{'; --quick sizes' if args.quick else ''}."
        )
        new[name] = results_md.section(
            name, _command(name, args.quick), measured, harness.markdown(got)
        )
        print(new[name])
    if new and out is not None:
        results_md.write(new, out)
    if args.readme:
        out = out or results_md.RESULTS
        changed = results_md.update_readme(out)
        print(f"README.md Performance table {'rewritten' if changed else 'unchanged'} from {out}")
    return 0 if all(r.met for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
