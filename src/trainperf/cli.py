"""Command line: ``trainperf report`` (the main job), ``trainperf batch GRID.yaml`` (papermill over a
parameter grid) and ``trainperf runs PATH`` (a quick look at MLPerf logs).

A failure prints one line (``trainperf: error: ...``) and exits 1; ``--debug`` (or TRAINPERF_DEBUG=1)
shows the traceback instead.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
import warnings


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="trainperf", description="LLM training performance report")
    p.add_argument("--debug", action="store_true", help="show the full traceback on errors")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser(
        "report", help="execute the notebooks, export figures, build the book or the preview site"
    )
    r.add_argument(
        "--out",
        default="_output",
        help="folder for executed notebooks and the preview site (default _output)",
    )
    r.add_argument("--figures", default="figures", help="figure folder (default figures)")
    r.add_argument(
        "--no-quarto",
        action="store_true",
        help="build the preview site even when quarto is on PATH",
    )
    s = sub.add_parser("runs", help="print the runs and scores of MLPerf logs under PATH")
    s.add_argument("path")
    from trainperf.batch import add_batch_arguments

    add_batch_arguments(
        sub.add_parser("batch", help="execute a notebook over a grid of parameter sets (YAML)")
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    debug = args.debug or os.environ.get("TRAINPERF_DEBUG") == "1"
    try:
        if args.command == "batch":
            from trainperf.batch import run_from_args

            return run_from_args(args)
        if args.command == "report":
            from trainperf.report import run_report

            run_report(
                out=args.out, figures=args.figures, use_quarto=False if args.no_quarto else None
            )
        elif args.command == "runs":
            import polars as pl

            from trainperf.mlperf import load_results

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = load_results(args.path, progress=sys.stderr.isatty())
            for w in res.warnings:
                print(f"warning: {w}", file=sys.stderr)
            with pl.Config(tbl_rows=200, tbl_cols=20, tbl_width_chars=200):
                print(
                    res.runs.select(
                        "round",
                        "system",
                        "benchmark",
                        "n_accelerators",
                        "status",
                        "time_to_train_min",
                    )
                )
                print(
                    res.scores.select(
                        "round",
                        "system",
                        "benchmark",
                        "n_runs",
                        "n_valid_runs",
                        "score_min",
                        "note",
                    )
                )
        return 0
    except KeyboardInterrupt:
        print("trainperf: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # one clear line by default; the traceback on request
        return print_error(exc, debug)


def print_error(exc: BaseException, debug: bool) -> int:
    """Print a command-line failure: one line by default, the traceback when ``debug``. Returns 1."""
    if debug:
        traceback.print_exception(exc)
    else:
        lines = str(exc).strip().splitlines()
        first = lines[0] if lines else type(exc).__name__
        print(
            f"trainperf: error: {type(exc).__name__}: {first} (run with --debug for the traceback)",
            file=sys.stderr,
        )
    return 1


if __name__ == "__main__":
    sys.exit(main())
