"""Whole-trace analyses per rank, as HolisticTraceAnalysis 0.5 defines them.

``TraceAnalysis``: ``get_temporal_breakdown``, ``get_gpu_kernel_breakdown``,
``get_comm_comp_overlap``, ``get_idle_time_breakdown``. They run in HTA when it is installed
(``engine="hta"``, or ``"auto"``; :mod:`trainperf.trace.hta`), else on the frames with HTA's
definitions (``engine="frames"``): the activities considered are those whose launch call lies
before the last profiler step's start (HTA drops the last step, whose kernels may be cut off), the
span is first start to last end. HTA rounds event times to whole microseconds unless
``HTA_DISABLE_NS_ROUNDING=1``, which the adapter sets, so both engines agree to float precision.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from trainperf.trace import hta
from trainperf.trace.analysis.sweep import BIT, BREAKDOWN_CATEGORIES, mask_durations, window_stats
from trainperf.trace.schema import TraceSet

__all__ = [
    "ENGINE_NAMES",
    "IDLE_CATEGORY_NAMES",
    "OVERLAP_SCHEMA",
    "comm_comp_overlap",
    "idle_breakdown",
    "kernel_type_breakdown",
    "temporal_breakdown",
]

_COMPUTE, _COMM, _MEM = (BIT[c] for c in ("compute", "communication", "memory"))

#: How a table names each ``idle_category`` of :func:`idle_breakdown` for a reader.
IDLE_CATEGORY_NAMES: dict[str, str] = {
    "host_wait": "waiting for the host",
    "kernel_wait": "launch gap between kernels",
    "other": "other",
}
#: How a table names each ``engine`` of the whole-trace analyses for a reader.
ENGINE_NAMES: dict[str, str] = {
    "hta": "HolisticTraceAnalysis",
    "frames": "this book's own trace reader",
}


def _hta_kernels(traces: TraceSet) -> pl.DataFrame:
    """Activities HTA keeps: launched (correlated CPU call) before the last profiler step starts.

    HTA 0.5 (``Trace._filter_irrelevant_gpu_kernels``) takes that start as the latest start of any
    ``ProfilerStep`` event it sees as a CPU event, Kineto's ``gpu_user_annotation`` copy included,
    which starts with the step's first kernel: so the first kernels of the last step, launched
    before that, are kept. With one step or none nothing is dropped.
    """
    last = traces.steps.group_by("rank").agg(
        pl.max_horizontal(
            pl.col("cpu_start_ns").max(), pl.col("gpu_annotation_start_ns").max()
        ).alias("_last"),
        pl.len().alias("_n"),
    )
    k = traces.kernels.join(last, on="rank", how="left")
    return k.filter(
        pl.col("_n").is_null()
        | (pl.col("_n") <= 1)
        | (pl.col("launch_ns").is_not_null() & (pl.col("launch_ns") < pl.col("_last")))
    ).drop("_last", "_n")


def _engine(engine: str, traces: TraceSet) -> str:

    if engine not in ("auto", "hta", "frames"):
        raise ValueError(f"engine {engine!r}: expected 'auto', 'hta' or 'frames'")
    if engine == "auto":
        return "hta" if hta.available() and traces.has_gpu_activity else "frames"
    if engine == "hta" and not hta.available():
        raise ImportError(
            "HolisticTraceAnalysis is not installed: pip install 'trainperf[trace]' (or use engine='frames')"
        )
    return engine


def temporal_breakdown(traces: TraceSet, *, engine: str = "auto") -> pl.DataFrame:
    """HTA's temporal breakdown per rank: idle, compute and non-compute time of the traced span.

    Span = last end - first start of the activities HTA keeps (module docstring); ``idle`` = span
    minus the union of all activities; ``compute`` = union of compute kernels; ``non_compute`` =
    the rest (communication, copies and other activity with no compute beside them).

    Args:
        engine: ``"hta"`` (HolisticTraceAnalysis ``get_temporal_breakdown``), ``"frames"`` or
            ``"auto"`` (HTA where installed).

    Returns:
        one row per rank with GPU activity: ``rank`` (Int32), ``kernel_time_s``, ``idle_s``,
        ``compute_s``, ``non_compute_s`` (Float64, s), ``idle_share``, ``compute_share``,
        ``non_compute_share`` (0-1), ``engine`` (String).

    Raises:
        ImportError: ``engine="hta"`` without HTA.
    """
    eng = _engine(engine, traces)
    if eng == "hta":
        return _temporal_frame(hta.temporal_breakdown_rows(traces), "hta")
    k = _hta_kernels(traces)
    rows = []
    for (rank,), kr in k.group_by("rank", maintain_order=True):
        if kr.height == 0:
            continue
        a, b = int(kr["start_ns"].min()), int(kr["end_ns"].max())
        md = mask_durations(kr, np.array([[a, b]], dtype=np.int64))
        st = window_stats(md, np.array([b - a]))
        span, idle, comp = st["span_s"][0], st["idle_s"][0], st["compute_s"][0]
        rows.append(
            {
                "rank": rank,
                "kernel_time_s": span,
                "idle_s": idle,
                "compute_s": comp,
                "non_compute_s": span - comp - idle,
            }
        )
    return _temporal_frame(rows, "frames")


def _temporal_frame(rows: list[dict], engine: str) -> pl.DataFrame:
    schema = {
        "rank": pl.Int32,
        "kernel_time_s": pl.Float64,
        "idle_s": pl.Float64,
        "compute_s": pl.Float64,
        "non_compute_s": pl.Float64,
    }
    df = pl.DataFrame(rows, schema=schema)
    span = pl.col("kernel_time_s")
    return df.with_columns(
        (pl.col("idle_s") / span).alias("idle_share"),
        (pl.col("compute_s") / span).alias("compute_share"),
        (pl.col("non_compute_s") / span).alias("non_compute_share"),
        pl.lit(engine).alias("engine"),
    ).sort("rank")


OVERLAP_SCHEMA: dict[str, pl.DataType] = {
    "rank": pl.Int32,
    "communication_s": pl.Float64,
    "comm_comp_overlap": pl.Float64,
    "engine": pl.String,
}
"""Columns of :func:`comm_comp_overlap`."""


def comm_comp_overlap(traces: TraceSet, *, engine: str = "auto") -> pl.DataFrame:
    """HTA's communication/computation overlap per rank over the traced span.

    Returns:
        :data:`OVERLAP_SCHEMA`.
        one row per rank with GPU activity: ``rank`` (Int32), ``communication_s`` (Float64, union of
        communication kernels), ``comm_comp_overlap`` (0-1: time with communication and compute /
        communication time; null without communication kernels), ``engine``.
    """
    eng = _engine(engine, traces)
    if eng == "hta":
        frames = comm_comp_overlap(traces, engine="frames").select("rank", "communication_s")
        return (
            hta.comm_comp_overlap(traces)
            .join(frames, on="rank", how="left")
            .select("rank", "communication_s", "comm_comp_overlap", pl.lit("hta").alias("engine"))
            .sort("rank")
        )
    k = _hta_kernels(traces)
    rows = []
    for (rank,), kr in k.group_by("rank", maintain_order=True):
        a, b = int(kr["start_ns"].min()), int(kr["end_ns"].max())
        md = mask_durations(kr, np.array([[a, b]], dtype=np.int64))
        st = window_stats(md, np.array([b - a]))
        comm = st["communication_s"][0]
        rows.append(
            {
                "rank": rank,
                "communication_s": comm,
                "comm_comp_overlap": st["overlap_s"][0] / comm if comm > 0 else None,
                "engine": "frames",
            }
        )
    return pl.DataFrame(rows, schema=OVERLAP_SCHEMA).sort("rank")


def kernel_type_breakdown(traces: TraceSet, *, engine: str = "auto") -> pl.DataFrame:
    """HTA's kernel-type breakdown over all ranks: time by category and by overlap of categories.

    Each instant with some activity goes to the combination of categories running then
    (``COMPUTATION``, ``COMMUNICATION``, ``MEMORY``, or e.g. ``COMPUTATION overlapping
    COMMUNICATION``), as HTA's ``get_gpu_kernel_breakdown(include_memory_kernels=True)``
    (``other`` activity is not counted, as there). HTA truncates each piece to whole microseconds.

    Returns:
        one row per combination: ``kernel_type`` (String), ``time_s`` (Float64), ``share``
        (0-1 of the summed time), ``engine``; sorted by time, longest first.
    """
    eng = _engine(engine, traces)
    if eng == "hta":
        return hta.kernel_type_breakdown(traces)
    k = _hta_kernels(traces).filter(pl.col("category") != "other")
    total = np.zeros(1 << len(BREAKDOWN_CATEGORIES), dtype=np.int64)
    for (_rank,), kr in k.group_by("rank", maintain_order=True):
        a, b = int(kr["start_ns"].min()), int(kr["end_ns"].max())
        total += mask_durations(kr, np.array([[a, b]], dtype=np.int64))[0]
    names = {_COMPUTE: "COMPUTATION", _COMM: "COMMUNICATION", _MEM: "MEMORY"}
    acc: dict[str, int] = {}
    for m, ns in enumerate(total):
        m3 = m & (_COMPUTE | _COMM | _MEM)
        if ns == 0 or m3 == 0:
            continue
        label = " overlapping ".join(names[b] for b in (_COMPUTE, _COMM, _MEM) if m3 & b)
        acc[label] = acc.get(label, 0) + int(ns)
    df = pl.DataFrame(
        {"kernel_type": list(acc), "time_s": [v / 1e9 for v in acc.values()]},
        schema={"kernel_type": pl.String, "time_s": pl.Float64},
    )
    return df.with_columns(
        (pl.col("time_s") / pl.col("time_s").sum()).alias("share"), pl.lit("frames").alias("engine")
    ).sort("time_s", descending=True)


def idle_breakdown(
    traces: TraceSet, *, engine: str = "auto", consecutive_kernel_delay_us: float = 30.0
) -> pl.DataFrame:
    """HTA's idle-time breakdown per rank and stream: why a stream waited between two activities.

    For consecutive activities on one stream, the gap (start minus the previous end) is
    ``host_wait`` when the launch call of the later one started after the earlier one ended (the
    CPU did not enqueue work fast enough), else ``kernel_wait`` when shorter than
    ``consecutive_kernel_delay_us`` (launch overhead between back-to-back kernels), else ``other``
    (e.g. waiting on another stream or an event). HTA's default threshold is 30 (its docstring says
    ns; the trace's unit, us, is what it compares with).

    Returns:
        one row per (rank, stream, idle_category): ``rank`` (Int32), ``stream`` (Int32),
        ``idle_category`` (String: host_wait, kernel_wait, other), ``idle_s`` (Float64),
        ``idle_share`` (0-1 of the stream's idle time), ``engine``.
    """
    eng = _engine(engine, traces)
    if eng == "hta":
        return hta.idle_breakdown(traces, consecutive_kernel_delay_us)
    k = (
        _hta_kernels(traces)
        .sort("rank", "stream", "start_ns")
        .with_columns(pl.col("end_ns").shift(1).over("rank", "stream").alias("_prev_end"))
        .filter(pl.col("_prev_end").is_not_null())
        .with_columns((pl.col("start_ns") - pl.col("_prev_end")).alias("_gap"))
        .with_columns(
            pl.when(pl.col("launch_ns") > pl.col("_prev_end"))
            .then(pl.lit("host_wait"))
            .when(pl.col("_gap") < consecutive_kernel_delay_us * 1000)
            .then(pl.lit("kernel_wait"))
            .otherwise(pl.lit("other"))
            .alias("idle_category")
        )
    )
    cats = pl.DataFrame({"idle_category": list(IDLE_CATEGORY_NAMES)})
    streams = k.select("rank", "stream").unique()
    out = (
        streams.join(cats, how="cross")
        .join(
            k.group_by("rank", "stream", "idle_category").agg(
                (pl.col("_gap").sum() / 1e9).alias("idle_s")
            ),
            on=["rank", "stream", "idle_category"],
            how="left",
        )
        .with_columns(pl.col("idle_s").fill_null(0.0))
        .with_columns(
            (pl.col("idle_s") / pl.col("idle_s").sum().over("rank", "stream")).alias("idle_share"),
            pl.lit("frames").alias("engine"),
        )
    )
    return out.select(
        pl.col("rank").cast(pl.Int32),
        pl.col("stream").cast(pl.Int32),
        "idle_category",
        "idle_s",
        "idle_share",
        "engine",
    ).sort("rank", "stream", "idle_category")
