"""Phases of an MLPerf run (from its log) and the attribution of telemetry samples to them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from trainperf.telemetry._common import _US, PHASE_SCHEMA, _lazy, _to_datetime


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
        starts at the earliest start and ends at the latest stop over ranks. Evaluations
        are matched start/stop by their ``epoch_num`` metadata; blocks by
        ``first_epoch_num`` (:func:`trainperf.mlperf.blocks`).

    Raises:
        ValueError: several result files and no ``file``; no ``init_start``/``init_stop`` and no
            block (nothing to align with).
    """
    from trainperf import mlperf

    if isinstance(source, (str, Path)):
        events = mlperf.parse_log(source)
    elif isinstance(source, mlperf.Results):
        events = source.events
    elif isinstance(source, pl.DataFrame):
        events = source
    else:
        raise TypeError("source must be a result file path, a Results or an events frame")
    files = events["file"].unique(maintain_order=True).to_list()
    if file is not None:
        events = events.filter(pl.col("file") == str(file))
    elif len(files) > 1:
        raise ValueError(f"{len(files)} result files in the events; pass file= (one of {files})")
    rows: list[dict[str, Any]] = []
    t = {k: events.filter(pl.col("key") == k)["time_ms"] for k in ("init_start", "init_stop")}
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
    bl = mlperf.blocks(events).sort("start_ms")
    for i, (s, e) in enumerate(bl.select("start_ms", "stop_ms").iter_rows(), start=1):
        rows.append({"phase": f"train_{i:02d}", "kind": "train", "index": i, "s": s, "e": e})
    ev = events.filter(pl.col("key").is_in(["eval_start", "eval_stop"])).with_columns(
        pl.col("metadata").str.json_path_match("$.epoch_num").alias("_n")
    )
    es = (
        ev.filter(pl.col("key") == "eval_start")
        .group_by("_n")
        .agg(pl.col("time_ms").min().alias("s"))
        .join(
            ev.filter(pl.col("key") == "eval_stop")
            .group_by("_n")
            .agg(pl.col("time_ms").max().alias("e")),
            on="_n",
            how="inner",
        )
        .sort("s")
    )
    for i, (s, e) in enumerate(es.select("s", "e").iter_rows(), start=1):
        rows.append({"phase": f"eval_{i:02d}", "kind": "eval", "index": i, "s": s, "e": e})
    if not rows:
        raise ValueError("the log has no init_start/init_stop, block or eval events to align with")
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
            (pl.col("s") * 1000).round(0).cast(pl.Int64).cast(_US).alias("start"),
            (pl.col("e") * 1000).round(0).cast(pl.Int64).cast(_US).alias("end"),
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
    delta = _to_datetime(start) - phases["start"].min()
    return phases.with_columns(pl.col("start") + delta, pl.col("end") + delta)


def _interval_table(phases: pl.DataFrame) -> tuple[list[int], pl.DataFrame]:
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


def _interval_expr(bounds: list[int]) -> pl.Expr:
    """``_iv`` (Int32): the number of boundaries <= t = the interval number of
    :func:`_interval_table` ([b_{j-1}, b_j) -> j)."""
    return (
        pl.lit(pl.Series(bounds, dtype=pl.Int64))
        .search_sorted(pl.col("timestamp").dt.epoch("us"), side="right")
        .cast(pl.Int32)
        .alias("_iv")
    )


def _in_span(bounds: list[int]) -> pl.Expr:
    """``bounds[0] <= t < bounds[-1]``: a plain time predicate that polars pushes into a Parquet
    scan (row groups and files outside the phases are skipped). Samples outside the span belong
    to no phase, so filtering them first changes no result."""
    return (pl.col("timestamp") >= pl.lit(bounds[0]).cast(_US)) & (
        pl.col("timestamp") < pl.lit(bounds[-1]).cast(_US)
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
    lf = _lazy(data)
    bounds, table = _interval_table(phases)
    if len(bounds) < 2:
        out = lf.with_columns(
            pl.lit(None, pl.String).alias("phase"),
            pl.lit(None, pl.String).alias("kind"),
            pl.lit(None, pl.Int32).alias("index"),
        )
        return out if keep_outside else out.filter(pl.lit(False))
    if not keep_outside:
        lf = lf.filter(_in_span(bounds))
    out = lf.with_columns(_interval_expr(bounds)).join(
        table.lazy(), on="_iv", how="left" if keep_outside else "inner", maintain_order="left"
    )
    return out.drop("_iv")


# --------------------------------------------------------------------------------------
# Jobs and selection
