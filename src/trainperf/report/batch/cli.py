"""The command line of ``trainperf batch``."""

from __future__ import annotations

import argparse
import os
import sys

import polars as pl

from trainperf.errors import print_error
from trainperf.report.batch.grid import EXECUTOR_KINDS, STATUSES, load_grid
from trainperf.report.batch.runner import run_batch

# --------------------------------------------------------------------------------------------------
# command line


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def add_batch_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``batch`` arguments (GRID, --workers, --force, --executor, --no-progress, --debug)."""
    parser.add_argument("grid", help="grid YAML file (paths in it are relative to its folder)")
    parser.add_argument(
        "--workers",
        type=_positive_int,
        default=None,
        help="parallel runs (default: the grid's, else 4)",
    )
    parser.add_argument("--force", action="store_true", help="run again runs already done")
    parser.add_argument(
        "--executor",
        choices=EXECUTOR_KINDS,
        default=None,
        help="override the grid's executor (local worker processes, or Slurm jobs via submitit)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    # SUPPRESS: when absent, a top-level --debug (trainperf --debug batch ...) is not overwritten
    parser.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show the full traceback on errors",
    )
    return parser


def run_from_args(args: argparse.Namespace, log=print) -> int:
    """Run the batch the parsed ``args`` describe; return the exit status (0: no run failed, 1).

    Raises:
        GridError, FileNotFoundError: as :func:`load_grid` / :func:`run_batch`.
    """
    grid = load_grid(args.grid)
    progress = not getattr(args, "no_progress", False) and sys.stderr.isatty()
    frame = run_batch(
        grid,
        workers=args.workers,
        force=args.force,
        progress=progress,
        executor=getattr(args, "executor", None),
    )
    counts = {s: int((frame["status"] == s).sum()) for s in STATUSES}
    for rec in frame.filter(pl.col("status") == "failed").iter_rows(named=True):
        log(f"failed: {rec['run']}: {rec['error']}")
    log(
        f"batch {grid.name}: {counts['success']} succeeded, {counts['skipped']} skipped (done before), "
        f"{counts['failed']} failed; summary {grid.output / 'summary.parquet'}"
    )
    return 1 if counts["failed"] else 0


def main(argv: list[str] | None = None) -> int:
    """``trainperf batch GRID.yaml [--workers N] [--force] [--debug]`` as a standalone command.

    Returns 0 when every run succeeded or was skipped, 1 when a run failed or the grid is invalid
    (one line ``trainperf: error: ...``; ``--debug`` or TRAINPERF_DEBUG=1 prints the traceback), 130 on
    Ctrl-C.
    """
    parser = argparse.ArgumentParser(
        prog="trainperf batch", description="execute a notebook over a grid of parameter sets"
    )
    args = add_batch_arguments(parser).parse_args(argv)
    debug = getattr(args, "debug", False) or os.environ.get("TRAINPERF_DEBUG") == "1"
    try:
        return run_from_args(args)
    except KeyboardInterrupt:
        print("trainperf: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        return print_error(exc, debug)
