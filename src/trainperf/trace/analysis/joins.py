"""The trace joined with other inputs of the same run: the MLPerf log (steps, phases, MFU) and DCGM.

:func:`match_log` matches each profiled step with the log's ``tracked_stats`` and phase and gives
its model FLOP/s and MFU; :func:`match_telemetry` sets DCGM samples against the time split of the
same seconds; :func:`steps_with_telemetry` gives DCGM values per step.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from trainperf import flops, mlperf, telemetry
from trainperf.trace.analysis.steps import step_breakdown, window_breakdown
from trainperf.trace.schema import TraceSet

__all__ = ["MATCH_TELEMETRY_SCHEMA", "match_log", "match_telemetry", "steps_with_telemetry"]


def match_log(
    traces: TraceSet,
    results: Any,
    *,
    tolerance_s: float = 0.05,
    accelerator: str | None = None,
    precision: str = "bf16",
) -> pl.DataFrame:
    """Each profiled step matched to the MLPerf log's timeline: its ``tracked_stats`` and phase.

    A step matches the first ``tracked_stats`` event logged after its CPU span starts, if that is
    no later than ``tolerance_s`` after the span ends (the smoke benchmark logs inside the span).
    The phase is the log's phase (:func:`trainperf.telemetry.phases_from_log`) that holds the CPU
    start. Model FLOP/s of the step = the logged model FLOPs per token
    (:func:`trainperf.telemetry.logged_flops_per_token`) x global_batch_size x max_sequence_length
    / n accelerators / the step's GPU span; MFU against the dense peak of ``precision``
    (:func:`trainperf.flops.peak_flops`).

    Args:
        traces: the traces (all ranks are matched against the one log).
        results: :class:`trainperf.mlperf.Results` or a result-file path.
        tolerance_s: see above (s).
        accelerator: GPU model for the peak; None: the log's ``accelerator_model``.
        precision: the datatype the run computed in.

    Returns:
        one row per (rank, step): ``rank``, ``step``, ``complete``, ``cpu_step_s``, ``span_s``
        (GPU span), ``log_time`` (Datetime[us, UTC]) , ``log_tokens`` (Int64, the event's ``step``
        metadata), ``log_step_time_s`` (Float64), ``phase`` (String), ``model_tflops_per_gpu``,
        ``mfu`` (Float64; both null without FLOPs per token in the log; ``mfu`` also null for an
        accelerator with no dense peak in the reference table, e.g. a CPU; both null for a step
        with no GPU activity, which has no GPU span).

    Raises:
        ValueError: the log has no ``init``, block or eval phases (:func:`trainperf.telemetry.phases_from_log`).
    """

    if isinstance(results, (str, Path)):
        results = mlperf.load_results(results)
    run = results.runs.row(0, named=True)
    st = (
        mlperf.step_times(results.events)
        .select(
            (pl.col("time_ms") * 1e6).round(0).cast(pl.Int64).alias("log_ns"),
            pl.col("step").alias("log_tokens"),
            pl.col("step_time_s").alias("log_step_time_s"),
        )
        .sort("log_ns")
    )
    steps = traces.steps.select(
        "rank",
        "step",
        "complete",
        "cpu_start_ns",
        "cpu_end_ns",
        ((pl.col("cpu_end_ns") - pl.col("cpu_start_ns")) / 1e9).alias("cpu_step_s"),
        ((pl.col("gpu_end_ns") - pl.col("gpu_start_ns")) / 1e9).alias("span_s"),
    ).sort("cpu_start_ns")
    m = steps.join_asof(st, left_on="cpu_start_ns", right_on="log_ns", strategy="forward")
    ok = pl.col("log_ns") <= pl.col("cpu_end_ns") + int(tolerance_s * 1e9)
    m = m.with_columns(
        *[pl.when(ok).then(pl.col(c)).alias(c) for c in ("log_ns", "log_tokens", "log_step_time_s")]
    )
    phases = telemetry.phases_from_log(results).with_columns(
        pl.col("start").dt.epoch("ns").alias("p_start"), pl.col("end").dt.epoch("ns").alias("p_end")
    )
    m = m.sort("cpu_start_ns").join_asof(
        phases.select("phase", "p_start", "p_end").sort("p_start"),
        left_on="cpu_start_ns",
        right_on="p_start",
        strategy="backward",
    )
    m = m.with_columns(
        pl.when(pl.col("cpu_start_ns") < pl.col("p_end")).then(pl.col("phase")).alias("phase")
    )
    f_tok = telemetry.logged_flops_per_token(results)
    n_acc = run.get("n_accelerators") or 1
    tokens_per_step = (run.get("global_batch_size") or 0) * (run.get("max_sequence_length") or 0)
    if f_tok is not None and tokens_per_step:
        try:
            peak = flops.peak_flops(accelerator or run["accelerator_model"], precision)
        except ValueError:  # no published peak (a CPU run, an unknown GPU): MFU stays null
            peak = None
        tf = f_tok * tokens_per_step / n_acc / pl.col("span_s") / flops.TFLOP
        mfu = (tf * flops.TFLOP / peak) if peak else pl.lit(None, pl.Float64)
        m = m.with_columns(tf.alias("model_tflops_per_gpu"), mfu.alias("mfu"))
    else:
        m = m.with_columns(
            pl.lit(None, pl.Float64).alias("model_tflops_per_gpu"),
            pl.lit(None, pl.Float64).alias("mfu"),
        )
    return m.select(
        pl.col("rank").cast(pl.Int32),
        "step",
        "complete",
        "cpu_step_s",
        "span_s",
        (pl.col("log_ns") // 1000).cast(pl.Datetime("us", "UTC")).alias("log_time"),
        "log_tokens",
        "log_step_time_s",
        "phase",
        "model_tflops_per_gpu",
        "mfu",
    ).sort("rank", "step")


_DCGM_COLUMNS = {
    1004: "tensor_active",
    1002: "sm_active",
    1001: "gr_engine_active",
    1005: "dram_active",
    100: "sm_clock_mhz",
    155: "power_w",
}
"""DCGM field id -> column of :func:`match_telemetry` (units: ratios 0-1, MHz, W)."""

MATCH_TELEMETRY_SCHEMA: dict[str, pl.DataType] = {
    "rank": pl.Int32,
    "gpu": pl.Int32,
    "timestamp": pl.Datetime("us", "UTC"),
    "window_s": pl.Float64,
    **{f"{c}_share": pl.Float64 for c in ("busy", "compute", "matmul", "communication", "memory")},
    **{c: pl.Float64 for c in _DCGM_COLUMNS.values()},
}
"""Columns of :func:`match_telemetry`."""


def _gpu_map(traces: TraceSet, gpu_of_rank: Mapping[int, int] | None) -> dict[int, int]:
    if gpu_of_rank is not None:
        return dict(gpu_of_rank)
    dev = traces.kernels.group_by("rank").agg(pl.col("device").drop_nulls().mode().first())
    return {r: d for r, d in dev.iter_rows() if d is not None}


def _wide_dcgm(
    data: pl.DataFrame | pl.LazyFrame, gpus: list[int], hostname: str | None
) -> pl.DataFrame:
    lf = data.lazy() if isinstance(data, pl.DataFrame) else data
    lf = lf.filter(pl.col("field_id").is_in(list(_DCGM_COLUMNS)) & pl.col("gpu").is_in(gpus))
    if hostname is not None:
        lf = lf.filter(pl.col("hostname") == hostname)
    long = lf.select("timestamp", "gpu", "field_id", "value").collect()
    if long.height == 0:
        return pl.DataFrame(
            schema={
                "timestamp": pl.Datetime("us", "UTC"),
                "gpu": pl.Int32,
                **{c: pl.Float64 for c in _DCGM_COLUMNS.values()},
            }
        )
    wide = (
        long.group_by("timestamp", "gpu", "field_id")
        .agg(pl.col("value").mean())
        .pivot(on="field_id", index=["timestamp", "gpu"], values="value")
    )
    wide = wide.rename({str(k): v for k, v in _DCGM_COLUMNS.items() if str(k) in wide.columns})
    for c in _DCGM_COLUMNS.values():
        if c not in wide.columns:
            wide = wide.with_columns(pl.lit(None, pl.Float64).alias(c))
    return wide.select("timestamp", pl.col("gpu").cast(pl.Int32), *_DCGM_COLUMNS.values()).sort(
        "gpu", "timestamp"
    )


def match_telemetry(
    traces: TraceSet,
    data: pl.DataFrame | pl.LazyFrame,
    *,
    window_s: float | None = None,
    gpu_of_rank: Mapping[int, int] | None = None,
    hostname: str | None = None,
) -> pl.DataFrame:
    """DCGM samples of the traced seconds beside the trace's time split over the same windows.

    A sample at time t is taken to average the ``window_s`` before it, (t - window_s, t]: so do
    :mod:`trainperf.capture.collect`'s GPM fields (one GPM sample per scrape) and, to within DCGM's 1 s
    sampling, dcgm-exporter's profiling fields. ``window_s`` defaults to the median spacing of the
    samples of that GPU. Samples whose window is not wholly inside the rank's traced GPU span
    (first activity start to last activity end) are dropped.

    Args:
        traces: the traces.
        data: a :mod:`trainperf.dcgm` reader frame (eager or lazy).
        window_s: see above (s).
        gpu_of_rank: rank -> DCGM ``gpu`` label; default: the CUDA device index of the rank's
            kernels (right with ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` and no remapping
            ``CUDA_VISIBLE_DEVICES``; pass the map otherwise).
        hostname: keep the samples of this host only (several nodes in one frame).

    Returns:
        one row per (rank, sample): ``rank`` (Int32), ``gpu`` (Int32), ``timestamp``
        (Datetime[us, UTC], the sample's), ``window_s`` (Float64), the trace's ``busy_share``,
        ``compute_share``, ``matmul_share``, ``communication_share``, ``memory_share`` (0-1) over
        the window, and the DCGM values ``tensor_active``, ``sm_active``, ``gr_engine_active``,
        ``dram_active`` (ratios 0-1), ``sm_clock_mhz`` (MHz), ``power_w`` (W); a field the
        telemetry lacks is null. :data:`MATCH_TELEMETRY_SCHEMA`.
    """
    gmap = _gpu_map(traces, gpu_of_rank)
    wide = _wide_dcgm(data, sorted(set(gmap.values())), hostname)
    cover = traces.kernels.group_by("rank").agg(
        pl.col("start_ns").min().alias("a"), pl.col("end_ns").max().alias("b")
    )
    wins = []
    for rank, a, b in cover.iter_rows():
        gpu = gmap.get(rank)
        if gpu is None:
            continue
        w = wide.filter(pl.col("gpu") == gpu).with_columns(
            pl.col("timestamp").dt.epoch("ns").alias("t_ns")
        )
        if w.height == 0:
            continue
        ws = window_s
        if ws is None:
            d = w["t_ns"].diff().drop_nulls()
            ws = float(d.median()) / 1e9 if d.len() else 1.0
        w = w.with_columns(
            pl.lit(rank, pl.Int32).alias("rank"),
            (pl.col("t_ns") - int(round(ws * 1e9))).alias("start_ns"),
            pl.col("t_ns").alias("end_ns"),
            pl.lit(ws).alias("window_s"),
        ).filter((pl.col("start_ns") >= a) & (pl.col("end_ns") <= b))
        wins.append(w)
    if not wins:
        return pl.DataFrame(schema=MATCH_TELEMETRY_SCHEMA)
    out = window_breakdown(traces, pl.concat(wins))
    return out.select(list(MATCH_TELEMETRY_SCHEMA)).sort("rank", "timestamp")


def steps_with_telemetry(
    traces: TraceSet,
    data: pl.DataFrame | pl.LazyFrame,
    *,
    window_s: float | None = None,
    gpu_of_rank: Mapping[int, int] | None = None,
    hostname: str | None = None,
) -> pl.DataFrame:
    """:func:`step_breakdown` with the DCGM values of the same seconds, per step.

    Each DCGM value is the mean of the samples whose windows (as in :func:`match_telemetry`)
    overlap the step's GPU span, weighted by the length of the overlap; ``telemetry_coverage`` is
    the covered fraction of the span (samples 1 s apart cover a 0.3 s step with one or two).

    Returns:
        the columns of :func:`step_breakdown` plus ``gpu`` (Int32), ``telemetry_coverage`` (0-1)
        and the DCGM columns of :func:`match_telemetry` (null where no sample overlaps).
    """
    sb = step_breakdown(traces)
    gmap = _gpu_map(traces, gpu_of_rank)
    wide = _wide_dcgm(data, sorted(set(gmap.values())), hostname)
    rows = []
    for rec in sb.iter_rows(named=True):
        gpu = gmap.get(rec["rank"])
        vals: dict[str, Any] = {c: None for c in _DCGM_COLUMNS.values()}
        cov = 0.0
        if gpu is not None:
            w = wide.filter(pl.col("gpu") == gpu).with_columns(
                pl.col("timestamp").dt.epoch("ns").alias("t")
            )
            ws = window_s
            if ws is None:
                d = w["t"].diff().drop_nulls()
                ws = float(d.median()) / 1e9 if d.len() else 1.0
            a, b = rec["gpu_start_ns"], rec["gpu_end_ns"]
            w = w.with_columns(
                (
                    pl.min_horizontal(pl.col("t"), pl.lit(b))
                    - pl.max_horizontal(pl.col("t") - int(round(ws * 1e9)), pl.lit(a))
                ).alias("ov")
            ).filter(pl.col("ov") > 0)
            if w.height:
                tot = w["ov"].sum()
                cov = min(1.0, tot / (b - a)) if b > a else 0.0
                for c in _DCGM_COLUMNS.values():
                    sub = w.filter(pl.col(c).is_not_null())
                    if sub.height:
                        vals[c] = float((sub[c] * sub["ov"]).sum() / sub["ov"].sum())
        rows.append(
            {
                "rank": rec["rank"],
                "step": rec["step"],
                "gpu": gpu,
                "telemetry_coverage": cov,
                **vals,
            }
        )
    tel = pl.DataFrame(
        rows,
        schema={
            "rank": pl.Int32,
            "step": pl.Int64,
            "gpu": pl.Int32,
            "telemetry_coverage": pl.Float64,
            **{c: pl.Float64 for c in _DCGM_COLUMNS.values()},
        },
    )
    return sb.join(tel, on=["rank", "step"], how="left")
