"""The record: every result of MLCommons Training results checkouts, one row per submission.

:func:`build_record` loads each result folder in a worker process (one folder at a time per worker,
so memory follows the largest folder, not the round: flat across rounds), :func:`write_record`
writes the CSV (rows sorted, so the same commits give the same bytes), :func:`read_record` reads it
(the bundled ``data/reference/mlperf_record.csv`` by default).
"""

from __future__ import annotations

import os
import signal
import sys
from multiprocessing import get_context
from pathlib import Path

import polars as pl
from tqdm.std import tqdm  # not .auto: in a kernel without ipywidgets it warns

from trainperf.atomic import write_parquet_atomic, write_text_atomic
from trainperf.record.folders import ResultFolder, find_result_folders
from trainperf.record.row import ENERGY_COLUMNS, RECORD_SCHEMA, folder_row
from trainperf.tables import default_reference_dir

__all__ = ["RECORD_KEYS", "build_record", "read_record", "record_path", "write_record"]

RECORD_KEYS = ("round", "division", "submitter", "system", "benchmark")
"""A row's identity (with ``folder``, which tells apart two folders of one key)."""

# a worker is replaced after this many folders, a bound on what a long build's workers keep (freed
# arenas). Issue 36: the workers' growth over five rounds was the result summarizer's import (pandas,
# scipy: ~190 MB) at the first power folder, now avoided (rules.summarizer_function); without it a
# worker stays under ~200 MB over all 949 folders of v3.1-v5.1 in one process. Each replacement costs
# a fresh interpreter's imports and caches. Five-round build, two workers, measured on a shared
# two-core machine: every 100 folders 79-82 s CPU, every 500 76 s, never 71 s; peak 422-438 MB in
# all three. 500 keeps the bound at about one replacement per worker per five rounds.
_TASKS_PER_WORKER = 500


def record_path() -> Path:
    """``data/reference/mlperf_record.csv`` of the checkout trainperf runs from."""
    return default_reference_dir() / "mlperf_record.csv"


def _round_key(r: str | None) -> tuple:
    try:
        return tuple(int(x) for x in (r or "v0")[1:].split("."))
    except ValueError:
        return (0,)


def _sorted(frame: pl.DataFrame) -> pl.DataFrame:
    key = frame["round"].map_elements(lambda r: list(_round_key(r)), return_dtype=pl.List(pl.Int64))
    return (
        frame.with_columns(_k=key)
        .sort(["_k", "division", "submitter", "system", "benchmark", "folder"], nulls_last=True)
        .drop("_k")
    )


def build_record(
    dirs: list[str | Path], jobs: int | None = None, progress: bool = False
) -> pl.DataFrame:
    """Read every result folder under ``dirs`` into the record.

    Args:
        dirs: checkouts of ``github.com/mlcommons/training_results_vX.Y`` (folders named so, or
            ``vX.Y``), or folders inside them (:func:`~trainperf.record.folders.find_result_folders`).
        jobs: worker processes (default: the CPUs this process may use); 1 reads in this process.
        progress: a progress bar over folders on stderr.

    Returns:
        :data:`~trainperf.record.row.RECORD_SCHEMA`, one row per result folder, sorted by round
        (numerically), division, submitter, system, benchmark.

    Raises:
        FileNotFoundError: a folder of ``dirs`` is missing or holds no result folder.
    """
    folders = find_result_folders(dirs)
    n = jobs or len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (jobs or 1)
    n = max(1, min(n, len(folders)))
    bar = None
    if progress:
        bar = tqdm(total=len(folders), desc="MLPerf result folders", unit="folder", file=sys.stderr)
    rows = []
    try:
        for row in _rows(folders, n):
            rows.append(row)
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return _sorted(pl.DataFrame(rows, schema=RECORD_SCHEMA))


def _rows(folders: list[ResultFolder], n: int):
    if n == 1:
        yield from map(folder_row, folders)
        return
    # spawn, not fork: polars' thread pool does not survive a fork. One polars thread per worker:
    # the workers are the parallelism (two cores, two workers)
    old = os.environ.get("POLARS_MAX_THREADS")
    os.environ["POLARS_MAX_THREADS"] = "1"
    try:
        # multiprocessing.Pool, not ProcessPoolExecutor: the executor's max_tasks_per_child hangs
        # on Python 3.11 once a worker is replaced (seen here: no worker left, the build waiting)
        with get_context("spawn").Pool(
            n, initializer=_ignore_sigint, maxtasksperchild=_TASKS_PER_WORKER
        ) as pool:
            yield from pool.imap(folder_row, folders, chunksize=1)
    finally:
        if old is None:
            os.environ.pop("POLARS_MAX_THREADS", None)
        else:
            os.environ["POLARS_MAX_THREADS"] = old


def _ignore_sigint() -> None:
    """Workers leave Ctrl-C to the parent, which stops the pool (one line, no worker tracebacks)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def write_record(frame: pl.DataFrame, out: str | Path) -> Path:
    """Write the record as CSV (atomically); the same frame gives the same bytes.

    Floats are written as polars writes them (shortest text that reads back the same float), rows
    in :func:`build_record`'s order, null as an empty field. ``.parquet`` writes Parquet instead.
    """
    out = Path(out)
    frame = _sorted(frame.select(list(RECORD_SCHEMA)))
    if out.suffix == ".parquet":
        return write_parquet_atomic(frame, out)
    return write_text_atomic(frame.write_csv(), out)


def read_record(path: str | Path | None = None) -> pl.DataFrame:
    """The record (:data:`~trainperf.record.row.RECORD_SCHEMA`); default the bundled one.

    A record file written before the energy columns existed (:data:`~trainperf.record.row.ENERGY_COLUMNS`)
    reads with those columns null: the schema only grows at the end.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file lacks a column of the record other than the energy columns.
    """
    p = Path(path) if path is not None else record_path()
    if p.suffix == ".parquet":
        frame = pl.read_parquet(p)
    else:
        if not p.is_file():
            raise FileNotFoundError(f"{p}: no such record file")
        header = pl.read_csv(p, n_rows=0).columns
        frame = pl.read_csv(
            p, schema_overrides={c: RECORD_SCHEMA[c] for c in header if c in RECORD_SCHEMA}
        )
    missing = [c for c in RECORD_SCHEMA if c not in frame.columns]
    if [c for c in missing if c not in ENERGY_COLUMNS]:
        raise ValueError(f"{p}: not an MLPerf record (no column {', '.join(missing)})")
    frame = frame.with_columns(pl.lit(None, RECORD_SCHEMA[c]).alias(c) for c in missing)
    return frame.select(list(RECORD_SCHEMA)).cast(RECORD_SCHEMA)
