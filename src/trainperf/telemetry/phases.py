"""Phases of an MLPerf run (from its log) and the attribution of telemetry samples to them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from trainperf import mlperf
from trainperf.telemetry._common import DATETIME_US, PHASE_SCHEMA, as_lazy, to_datetime

_COUNT_KEYS = ("first_epoch_num", "epoch_num", "samples_count")
"""Metadata that numbers a block or an evaluation: ``first_epoch_num`` / ``epoch_num`` (gpt3,
llama31: tokens or epochs) or ``samples_count`` (llama2_70b_lora; MLPerf Training rules, the
llama2_70b_lora reference's ``custom_callbacks.py``). A LoRA ``block_start`` carries the samples
before the block and its ``block_stop`` the samples after it, so starts and stops are paired by
time order, not by equal metadata."""


def _merged(events: pl.DataFrame, key: str, agg: str) -> list[float]:
    """Times (ms) of ``key`` events, rank duplicates merged: the events of one number (the first
    of :data:`_COUNT_KEYS` present) give one time, the earliest (``agg="min"``) or the latest."""
    ev = events.filter((pl.col("key") == key) & pl.col("time_ms").is_not_null())
    if ev.height == 0:
        return []
    n = pl.coalesce([pl.col("metadata").str.json_path_match(f"$.{k}") for k in _COUNT_KEYS]).alias(
        "_n"
    )
    ev = ev.with_columns(n)
    g = ev.group_by("_n").agg(getattr(pl.col("time_ms"), agg)().alias("t"))
    # events without any number: each is its own phase boundary (one rank, or unnumbered logs)
    numbered = g.filter(pl.col("_n").is_not_null())["t"].to_list()
    loose = ev.filter(pl.col("_n").is_null())["time_ms"].to_list()
    return sorted(numbered + loose)


def _pair(starts: list[float], stops: list[float]) -> list[tuple[float, float]]:
    """Each start with the first stop at or after it and before the next start."""
    out, j = [], 0
    for i, s in enumerate(starts):
        nxt = starts[i + 1] if i + 1 < len(starts) else float("inf")
        while j < len(stops) and stops[j] < s:
            j += 1
        if j < len(stops) and stops[j] < nxt:
            out.append((s, stops[j]))
            j += 1
    return out


def phases_from_log(source: Any, file: str | None = None) -> pl.DataFrame:
    """Phases of one MLPerf run from its ``:::MLLOG`` events.

    Args:
        source: a ``result_*.txt`` path, a :class:`trainperf.mlperf.Results`, or an events frame
            (:func:`trainperf.mlperf.parse_log` / ``Results.events``: columns file, key, time_ms,
            metadata).
        file: which result file when ``source`` holds several.

    Returns:
        one row per phase, in time order: ``phase`` (String: ``init``, ``train_01`` ...,
        ``eval_01`` ...), ``kind`` (String: ``init``, ``train`` or ``eval``), ``index``
        (Int32, 0 for init, 1-based for blocks and evaluations), ``start``, ``end``
        (Datetime[us, UTC]), ``duration_s`` (Float64, s). Rank duplicates are merged: a phase
        starts at the earliest start and ends at the latest stop over ranks of the same
        ``first_epoch_num`` / ``epoch_num`` / ``samples_count`` (:data:`_COUNT_KEYS`; LoRA logs
        carry ``samples_count``). Starts and stops are then paired in time order.

    Raises:
        trainperf.mlperf.MLPerfLogError (an :class:`~trainperf.errors.InputError`, a ValueError):
            several result files and no ``file``, a ``file`` not among them, or a log with no
            ``init_start``/``init_stop``, block or eval pair to align with; the message names the
            file and says what to do.
        TypeError: ``source`` of another type.
    """

    if isinstance(source, (str, Path)):
        events = mlperf.parse_log(source)
    elif isinstance(source, mlperf.Results):
        events = source.events
    elif isinstance(source, pl.DataFrame):
        events = source
    else:
        raise TypeError("source must be a result file path, a Results or an events frame")
    files = events["file"].unique(maintain_order=True).to_list() if "file" in events.columns else []
    if file is not None:
        events = events.filter(pl.col("file") == str(file))
        if events.height == 0:
            raise mlperf.MLPerfLogError(
                f"{file}: not among the result files of the events ({', '.join(map(str, files[:5]))}"
                f"{', ...' if len(files) > 5 else ''}); pass one of them as file=",
                source=str(file),
            )
    elif len(files) > 1:
        shown = ", ".join(map(str, files[:5])) + (", ..." if len(files) > 5 else "")
        raise mlperf.MLPerfLogError(
            f"{len(files)} result files in the events ({shown}): pass file= to say which run's "
            "phases to take",
            source=str(files[0]),
        )
    name = str(file if file is not None else files[0] if files else source)
    rows: list[dict[str, Any]] = []
    t = {
        k: events.filter(pl.col("key") == k)["time_ms"].drop_nulls()
        for k in ("init_start", "init_stop")
    }
    if t["init_start"].len() and t["init_stop"].len():
        rows.append(
            {
                "phase": "init",
                "kind": "init",
                "index": 0,
                "s": t["init_start"].min(),
                "e": t["init_stop"].max(),
            }
        )
    for kind, a, b in (("train", "block_start", "block_stop"), ("eval", "eval_start", "eval_stop")):
        pairs = _pair(_merged(events, a, "min"), _merged(events, b, "max"))
        for i, (s, e) in enumerate(pairs, start=1):
            rows.append({"phase": f"{kind}_{i:02d}", "kind": kind, "index": i, "s": s, "e": e})
    if not rows:
        raise mlperf.MLPerfLogError(
            f"{name}: no init_start/init_stop, block_start/block_stop or eval_start/eval_stop pair "
            "to align telemetry with (a truncated log, or not an MLPerf Training result file?); "
            "give the run's phases by hand (trainperf.telemetry.PHASE_SCHEMA) or another log",
            source=name,
        )
    df = pl.DataFrame(
        rows,
        schema={
            "phase": pl.String,
            "kind": pl.String,
            "index": pl.Int32,
            "s": pl.Float64,
            "e": pl.Float64,
        },
        orient="row",
    )
    return (
        df.with_columns(
            (pl.col("s") * 1000).round(0).cast(pl.Int64).cast(DATETIME_US).alias("start"),
            (pl.col("e") * 1000).round(0).cast(pl.Int64).cast(DATETIME_US).alias("end"),
            ((pl.col("e") - pl.col("s")) / 1000.0).alias("duration_s"),
        )
        .select(list(PHASE_SCHEMA))
        .sort("start", "kind")
    )


def shift_phases(phases: pl.DataFrame, start: Any) -> pl.DataFrame:
    """Shift all phases so that the first one starts at ``start`` (datetime, epoch s or ISO).

    Durations and gaps are kept. Returns a frame with :data:`PHASE_SCHEMA`.
    """
    if phases.height == 0:
        return phases
    delta = to_datetime(start) - phases["start"].min()
    return phases.with_columns(pl.col("start") + delta, pl.col("end") + delta)


def interval_table(phases: pl.DataFrame) -> tuple[list[int], pl.DataFrame]:
    """Sorted boundaries (epoch us) and, per interval number j ([b_{j-1}, b_j)), the phase covering it."""
    p = phases.with_columns(
        pl.col("start").dt.epoch("us").alias("_s"), pl.col("end").dt.epoch("us").alias("_e")
    ).sort("_s")
    bounds = sorted(set(p["_s"].to_list()) | set(p["_e"].to_list()))
    recs = p.select("phase", "kind", "index", "_s", "_e").rows()
    # Phase i covers the intervals pos(s_i)+1 .. pos(e_i); an interval covered by several
    # (overlapping phases) gets the one that started last, i.e. the last in ``recs``. Phases are
    # visited last to first and each claims its still unclaimed intervals, found by a "next
    # unclaimed" pointer with path halving: O(phases + intervals), where testing every phase
    # against every interval was quadratic (64 tiled runs: 3,136 phases, 0.8 s per call).
    pos = {b: j for j, b in enumerate(bounds)}
    owner: list[int | None] = [None] * len(bounds)
    nxt = list(range(len(bounds) + 1))

    def unclaimed(j: int) -> int:
        while nxt[j] != j:
            nxt[j] = nxt[nxt[j]]
            j = nxt[j]
        return j

    for i in range(len(recs) - 1, -1, -1):
        hi = pos[recs[i][4]]
        j = unclaimed(pos[recs[i][3]] + 1)
        while j <= hi:
            owner[j] = i
            nxt[j] = j + 1
            j = unclaimed(j + 1)
    rows = []
    for j in range(1, len(bounds)):
        if owner[j] is not None:
            ph, kind, idx, _, _ = recs[owner[j]]
            rows.append({"_iv": j, "phase": ph, "kind": kind, "index": idx})
    table = pl.DataFrame(
        rows,
        schema={"_iv": pl.Int32, "phase": pl.String, "kind": pl.String, "index": pl.Int32},
        orient="row",
    )
    return bounds, table


def interval_expr(bounds: list[int]) -> pl.Expr:
    """``_iv`` (Int32): the number of boundaries <= t = the interval number of
    :func:`interval_table` ([b_{j-1}, b_j) -> j)."""
    return (
        pl.lit(pl.Series(bounds, dtype=pl.Int64))
        .search_sorted(pl.col("timestamp").dt.epoch("us"), side="right")
        .cast(pl.Int32)
        .alias("_iv")
    )


def in_span(bounds: list[int]) -> pl.Expr:
    """``bounds[0] <= t < bounds[-1]``: a plain time predicate that polars pushes into a Parquet
    scan (row groups and files outside the phases are skipped). Samples outside the span belong
    to no phase, so filtering them first changes no result."""
    return (pl.col("timestamp") >= pl.lit(bounds[0]).cast(DATETIME_US)) & (
        pl.col("timestamp") < pl.lit(bounds[-1]).cast(DATETIME_US)
    )


def with_phases(
    data: pl.DataFrame | pl.LazyFrame, phases: pl.DataFrame, *, keep_outside: bool = False
) -> pl.LazyFrame:
    """Attach ``phase``, ``kind``, ``index`` (see :func:`phases_from_log`) to every sample.

    A sample at time t belongs to the phase with ``start <= t < end``. Lazy: the boundaries
    are located with ``search_sorted`` and joined to a small interval table, no sort of the data.

    Args:
        data: reader frame (eager or lazy).
        phases: :func:`phases_from_log` output (possibly :func:`shift_phases`-ed).
        keep_outside: keep samples outside every phase (with null phase columns).

    Returns:
        a LazyFrame: the input columns + phase (String), kind (String), index (Int32).
    """
    lf = as_lazy(data)
    bounds, table = interval_table(phases)
    if len(bounds) < 2:
        out = lf.with_columns(
            pl.lit(None, pl.String).alias("phase"),
            pl.lit(None, pl.String).alias("kind"),
            pl.lit(None, pl.Int32).alias("index"),
        )
        return out if keep_outside else out.filter(pl.lit(False))
    if not keep_outside:
        lf = lf.filter(in_span(bounds))
    out = lf.with_columns(interval_expr(bounds)).join(
        table.lazy(), on="_iv", how="left" if keep_outside else "inner", maintain_order="left"
    )
    return out.drop("_iv")


# --------------------------------------------------------------------------------------
# Jobs and selection
