"""Time split per window, per profiled step and per rank (the sweep of :mod:`.sweep`).

A step's GPU span (:data:`~trainperf.trace.schema.STEP_SCHEMA`) runs from the first activity the
step launched to the first activity of the next step, so the gap the GPU waits for the host between
steps is idle time of the step before it; the last profiled step has no next step
(``complete`` False) and is left out of means unless asked for.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from trainperf.trace.analysis.sweep import TIME_COLS, mask_durations, window_stats, with_shares
from trainperf.trace.schema import TraceSet

__all__ = ["rank_summary", "step_breakdown", "window_breakdown"]


def window_breakdown(traces: TraceSet, windows: pl.DataFrame) -> pl.DataFrame:
    """The time split (:mod:`trainperf.trace.analysis.sweep`) of each window of each rank.

    Args:
        traces: the traces.
        windows: columns ``rank`` (Int32), ``start_ns``, ``end_ns`` (Int64 Unix ns), plus any
            others, which are kept. Windows of one rank must not overlap.

    Returns:
        the windows' columns plus the ``*_s`` times of :data:`TIME_COLS` (Float64, s), the
        ``*_share`` ratios (0-1; null for an empty window) and ``comm_comp_overlap`` (0-1, null
        without communication).
    """
    parts = []
    for (rank,), w in windows.sort("rank", "start_ns").group_by("rank", maintain_order=True):
        k = traces.kernels.filter(pl.col("rank") == rank)
        arr = w.select("start_ns", "end_ns").to_numpy().astype(np.int64)
        md = mask_durations(k, arr)
        st = window_stats(md, arr[:, 1] - arr[:, 0])
        parts.append(w.with_columns(*[pl.Series(c, st[c], dtype=pl.Float64) for c in TIME_COLS]))
    if not parts:
        return with_shares(
            windows.clear().with_columns(*[pl.lit(None, pl.Float64).alias(c) for c in TIME_COLS])
        )
    return with_shares(pl.concat(parts))


def step_breakdown(traces: TraceSet) -> pl.DataFrame:
    """Compute / communication / memory / idle time of every profiled step of every rank.

    Returns:
        one row per (rank, step) with GPU activity: ``rank`` (Int32), ``step`` (Int64), ``complete``
        (Boolean: a next step bounds the span), ``gpu_start_ns``, ``gpu_end_ns`` (Int64),
        ``cpu_step_s`` (Float64, the ProfilerStep's CPU duration), then :func:`window_breakdown`'s
        columns over [gpu_start_ns, gpu_end_ns).
    """
    st = traces.steps.filter(pl.col("gpu_start_ns").is_not_null())
    w = st.select(
        "rank",
        "step",
        "complete",
        pl.col("gpu_start_ns").alias("start_ns"),
        pl.col("gpu_end_ns").alias("end_ns"),
        ((pl.col("cpu_end_ns") - pl.col("cpu_start_ns")) / 1e9).alias("cpu_step_s"),
    )
    out = window_breakdown(traces, w)
    return out.rename({"start_ns": "gpu_start_ns", "end_ns": "gpu_end_ns"}).sort("rank", "step")


def rank_summary(traces: TraceSet, *, include_incomplete: bool = False) -> pl.DataFrame:
    """Per rank: the step breakdown summed over the profiled steps (complete ones by default).

    Returns:
        one row per rank: ``rank``, ``n_steps`` (UInt32), ``step_s`` (Float64, mean span), the
        summed ``*_s`` columns, the ``*_share`` ratios and ``comm_comp_overlap`` of the sums.
    """
    sb = step_breakdown(traces)
    if not include_incomplete:
        sb = sb.filter(pl.col("complete"))
    agg = sb.group_by("rank").agg(
        pl.len().alias("n_steps"),
        pl.col("span_s").mean().alias("step_s"),
        *[pl.col(c).sum() for c in TIME_COLS],
    )
    return with_shares(agg).sort("rank")
