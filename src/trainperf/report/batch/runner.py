"""The batch itself (:func:`run_batch`) and the collected results of its runs."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from tqdm.std import tqdm  # not .auto: in a kernel without ipywidgets it warns into the book

from trainperf.report.batch.execute import done_record
from trainperf.report.batch.executors import run_local, run_submitit
from trainperf.report.batch.grid import (
    EXECUTOR_KINDS,
    RESULTS_PARAMETER,
    Grid,
    GridError,
    load_grid,
    validate_grid,
)
from trainperf.report.batch.summary import key_numbers, summary_frame, write_summary

# --------------------------------------------------------------------------------------------------
# the batch


def _plan_runs(
    grid: Grid, declared: dict, has_results: bool, force: bool
) -> tuple[dict[str, dict], list[dict]]:
    """Records of the runs done in an earlier batch (reused, status ``skipped``) and the tasks of
    the others."""
    records: dict[str, dict] = {}
    tasks = []
    for run in grid.runs:
        done = None if force else done_record(grid, run, has_results)
        if done is not None:
            results = grid.runs_dir / f"{run.slug}.parquet"
            records[run.slug] = {
                **done,
                "status": "skipped",
                "notebook": str(grid.runs_dir / f"{run.slug}.ipynb"),
                "results": str(results) if has_results else None,
            }
            continue
        tasks.append(
            {
                "slug": run.slug,
                "name": run.name,
                "parameters": run.parameters,
                "notebook": str(grid.notebook),
                "runs_dir": str(grid.runs_dir),
                "base": str(grid.base),
                "declared": sorted(declared),
            }
        )
    return records, tasks


def run_batch(
    grid: Grid | str | Path,
    workers: int | None = None,
    force: bool = False,
    progress: bool = True,
    executor: str | dict | None = None,
) -> pl.DataFrame:
    """Execute every run of ``grid`` not done yet, then write and return the summary.

    The grid is checked first (:func:`validate_grid`): nothing runs if any run names a parameter the
    notebook does not declare. Runs are then executed by the grid's executor, a failing run is
    recorded and the others go on; ``<output>/summary.parquet`` and ``summary.csv`` are written
    (atomically) at the end.

    Args:
        grid: a :class:`Grid` or the path of a grid YAML file.
        workers: worker processes (local) or concurrent array tasks (Slurm); default: the grid's
            ``workers``, else min(4, CPUs).
        force: run again runs already done.
        progress: tqdm progress bar over runs (on stderr).
        executor: override the grid's executor: ``"local"``, ``"slurm"``, ``"submitit_local"``, or a
            dict like the grid's ``executor`` key.

    Returns:
        polars frame, one row per run in grid order:
        run (String, the slug), name (String), parameters (String, JSON of the parameters as written
        in the grid, keys sorted), one column per parameter named after it (``param_<name>`` if that
        clashes with a fixed column; its values' type when all share one scalar type, else JSON
        String), status (String: success, failed, or skipped = done in an earlier batch and reused),
        duration_s (Float64, seconds of notebook execution; for skipped runs, that of the earlier
        run), notebook (String, the executed notebook, ``.failed.ipynb`` for a failed cell, null if
        none), results (String, the run's results Parquet, null if none), error (String, null on
        success: ``ename: evalue`` first line of the failing cell, or the exception), and key numbers
        read from the results Parquet (null when it is missing or lacks the column): result_rows
        (Int64, rows), n_success (Int64, rows with ``status == "success"``),
        time_to_train_median_min (Float64, median of ``time_to_train_min``; for the MLPerf notebook,
        the median run of the folder, which is the MLPerf score for 3-run gpt3 folders),
        time_to_train_n (Int64, non-null ``time_to_train_min`` values).

    Raises:
        GridError: the grid is invalid (raised before anything runs), or the Slurm executor is asked
            for without submitit installed.
        FileNotFoundError: the grid file does not exist.
    """
    if not isinstance(grid, Grid):
        grid = load_grid(grid)
    validate_grid(grid)  # before the executor is looked at: a bad grid is the first complaint
    exec_spec = dict(grid.executor)
    if executor is not None:
        exec_spec = {"kind": executor} if isinstance(executor, str) else dict(executor)
        if exec_spec.get("kind") not in EXECUTOR_KINDS:
            raise GridError(
                f"executor kind {exec_spec.get('kind')!r} unknown; one of {', '.join(EXECUTOR_KINDS)}"
            )
    kind = exec_spec.get("kind", "local")
    n_workers = workers or grid.workers or min(4, os.cpu_count() or 1)
    planned = plan_batch(grid, force)

    bar = tqdm(
        total=len(grid.runs),
        initial=len(planned.records),
        desc=f"batch {grid.name}",
        unit="run",
        disable=not progress,
        file=sys.stderr,
    )

    def on_done(rec: dict) -> None:
        planned.done(rec)
        if rec["status"] == "failed" and progress:
            bar.write(f"failed: {rec['run']}: {rec['error']}", file=sys.stderr)

    tasks = planned.tasks
    try:
        if tasks:
            if kind == "local":
                run_local(tasks, min(n_workers, len(tasks)), bar, on_done)
            else:
                run_submitit(grid, tasks, exec_spec, n_workers, bar, on_done)
    except KeyboardInterrupt:
        bar.close()
        planned.summarize()  # what finished is recorded; a second run resumes from the markers
        raise
    finally:
        bar.close()
    return planned.summarize()


@dataclass
class PlannedBatch:
    """A batch ready to run (:func:`plan_batch`): what :func:`run_batch` does, in parts, for a
    caller that executes the runs itself (the main job runs them beside its notebooks).

    Attributes:
        grid: the grid.
        records: run slug -> done-marker dict of the runs finished so far (reused ones first).
        tasks: the runs to execute, each the argument of :func:`execute_run` (plain data).
    """

    grid: Grid
    records: dict[str, dict]
    tasks: list[dict]

    def done(self, rec: dict) -> None:
        """Record a finished run (what :func:`execute_run` returned)."""
        self.records[rec["run"]] = rec

    def summarize(self) -> pl.DataFrame:
        """Write ``<output>/summary.parquet`` and ``summary.csv`` (atomically) and return the
        summary frame (columns as :func:`run_batch` returns); a run not recorded yet is
        ``interrupted``."""
        rows = []
        for run in self.grid.runs:
            rec = self.records.get(run.slug)
            if rec is None:  # interrupted before this run finished
                rec = {
                    "run": run.slug,
                    "name": run.name,
                    "status": "interrupted",
                    "error": "batch interrupted before this run finished",
                }
            rows.append({**rec, **key_numbers(rec.get("results")), "parameters": run.parameters})
        frame = summary_frame(rows)
        write_summary(self.grid, frame)
        return frame


def plan_batch(grid: Grid, force: bool = False) -> PlannedBatch:
    """Check ``grid`` (:func:`validate_grid`) and plan its runs: those done in an earlier batch
    with their outputs in place are reused (status ``skipped``), the others are the tasks.

    Raises:
        GridError: the grid is invalid.
    """
    declared = validate_grid(grid)
    grid.runs_dir.mkdir(parents=True, exist_ok=True)
    records, tasks = _plan_runs(grid, declared, RESULTS_PARAMETER in declared, force)
    return PlannedBatch(grid, records, tasks)


def collect_results(
    summary_path: str | Path, statuses: tuple[str, ...] = ("success", "skipped")
) -> pl.DataFrame:
    """Concatenate the per-run result tables a batch collected, as listed in its summary.

    Args:
        summary_path: ``<output>/summary.parquet`` written by :func:`run_batch`.
        statuses: which runs to take (skipped runs are earlier successes whose outputs were reused).

    Returns:
        The runs' Parquet tables stacked (``how="diagonal_relaxed"``: columns missing in one table are
        null there), with a leading ``run`` column (String, the run's slug).

    Raises:
        FileNotFoundError: the summary or a listed results file is missing.
        ValueError: no run with one of ``statuses`` has a results table.
    """
    summary = pl.read_parquet(summary_path)
    ok = summary.filter(pl.col("status").is_in(list(statuses)) & pl.col("results").is_not_null())
    if ok.height == 0:
        raise ValueError(
            f"{summary_path}: no run with status {', '.join(statuses)} has a results table"
        )
    frames = [
        pl.read_parquet(p).with_columns(pl.lit(run).alias("run"))
        for run, p in ok.select("run", "results").iter_rows()
    ]
    out = pl.concat(frames, how="diagonal_relaxed")
    return out.select("run", pl.exclude("run"))
