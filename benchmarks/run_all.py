"""Run every benchmark (``benchmarks/bench_*.py``) and write the Markdown table.

Usage::

    .venv/bin/python benchmarks/run_all.py            # full sizes; writes benchmarks/RESULTS.md
    .venv/bin/python benchmarks/run_all.py --quick    # small sizes, a smoke run
    .venv/bin/python benchmarks/run_all.py --only sacct mlperf

Each module's ``run(quick)`` returns :class:`harness.Row` objects; the table lists the product's figure,
its peer or limit on the same bytes, the ratio and whether the target is met.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import harness  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--only", nargs="*", default=None, help="names of bench_*.py modules to run")
    ap.add_argument("--out", default=str(HERE / "RESULTS.md"), help="Markdown file to write")
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
    for name in names:
        t0 = time.perf_counter()
        print(f"[{name}] running ...", file=sys.stderr, flush=True)
        rows.extend(importlib.import_module(f"bench_{name}").run(args.quick))
        print(f"[{name}] done in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    text = (
        f"Measured on {harness.machine()}, {time.strftime('%Y-%m-%d')}"
        f"{' (--quick sizes)' if args.quick else ''}.\n\n" + harness.markdown(rows)
    )
    harness_out = Path(args.out)
    from trainperf.atomic import write_text_atomic

    write_text_atomic(text, harness_out)
    print(text)
    return 0 if all(r.met for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
