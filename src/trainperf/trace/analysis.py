"""Where the time of a step goes: analyses of a :class:`~trainperf.trace.read.TraceSet` (frames only).

Every function returns a polars frame; times are seconds (``*_s``) unless named ``*_ns`` (Unix ns)
or ``*_us``; shares are ratios 0-1 (``*_share``). Nothing here plots.

Time on the GPU is split by what runs, whatever stream it runs on: at each instant the set of
categories with an activity running (``compute``, ``communication``, ``memory``, ``other``, and
``matmul`` for the GEMM/attention subset of compute; categories in :mod:`trainperf.trace.read`)
decides where that instant goes. Per window (a step, a telemetry sample):

* ``compute_s``: some compute kernel runs; ``communication_s``, ``memory_s``, ``matmul_s``: likewise
  (these overlap one another);
* the partition ``compute_s + comm_exposed_s + memory_exposed_s + other_exposed_s + idle_s =
  span_s``: communication with no compute beside it, copies with neither, other activity alone,
  nothing at all;
* ``comm_comp_overlap`` = time with communication *and* compute / ``communication_s`` (HTA's
  communication/computation overlap, ``CommunicationAnalysis.get_comm_comp_overlap``; the paper's
  72.3 % and 67.2 %), null without communication.

A step's GPU span (:data:`~trainperf.trace.read.STEP_SCHEMA`) runs from the first activity the
step launched to the first activity of the next step, so the gap the GPU waits for the host between
steps is idle time of the step before it; the last profiled step has no next step
(``complete`` False) and is left out of means unless asked for.

Whole-trace analyses per rank follow HolisticTraceAnalysis 0.5 (``TraceAnalysis``:
``get_temporal_breakdown``, ``get_gpu_kernel_breakdown``, ``get_comm_comp_overlap``,
``get_idle_time_breakdown``) and run in it when it is installed (``engine="hta"``, or ``"auto"``;
:mod:`trainperf.trace.hta`), else on the frames with HTA's definitions (``engine="frames"``): the
activities considered are those whose launch call lies before the last profiler step's start
(HTA drops the last step, whose kernels may be cut off), the span is first start to last end.
HTA rounds event times to whole microseconds unless ``HTA_DISABLE_NS_ROUNDING=1``, which the
adapter sets, so both engines agree to float precision.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from trainperf.trace.read import TraceSet

__all__ = [
    "BREAKDOWN_CATEGORIES",
    "collective_breakdown",
    "comm_comp_overlap",
    "idle_breakdown",
    "kernel_type_breakdown",
    "match_log",
    "match_telemetry",
    "rank_summary",
    "short_kernel_name",
    "step_breakdown",
    "steps_with_telemetry",
    "temporal_breakdown",
    "top_kernels",
    "window_breakdown",
]

BREAKDOWN_CATEGORIES = ("compute", "communication", "memory", "other", "matmul")
"""Bits of the sweep, in order (``matmul`` is a subset of ``compute``)."""

_BIT = {c: 1 << i for i, c in enumerate(BREAKDOWN_CATEGORIES)}
_COMPUTE, _COMM, _MEM, _OTHER, _MATMUL = (_BIT[c] for c in BREAKDOWN_CATEGORIES)


# --------------------------------------------------------------------------------------------
# The sweep
# --------------------------------------------------------------------------------------------


def _mask_durations(k: pl.DataFrame, windows: np.ndarray) -> np.ndarray:
    """ns spent in each category combination (32 masks) inside each window.

    ``k``: activities of one rank (start_ns, end_ns, category, matmul). ``windows``: (n, 2) int64,
    sorted, non-overlapping [start, end). Returns (n, 32) int64.
    """
    n_win = len(windows)
    out = np.zeros((n_win, 1 << len(BREAKDOWN_CATEGORIES)), dtype=np.int64)
    if n_win == 0:
        return out
    bits = np.zeros(k.height, dtype=np.int64)
    cat = k["category"].to_numpy()
    for c in ("compute", "communication", "memory", "other"):
        bits[cat == c] = _BIT[c]
    mm = k["matmul"].fill_null(False).to_numpy()
    starts = k["start_ns"].to_numpy()
    ends = k["end_ns"].to_numpy()
    keep = ends > starts
    cats = list(BREAKDOWN_CATEGORIES)
    # per category: +1 at start, -1 at end (matmul on top of its compute bit)
    pts = [windows[:, 0], windows[:, 1]]
    deltas = [np.zeros((2 * n_win, len(cats)), dtype=np.int64)]
    for j, c in enumerate(cats):
        sel = keep & (mm if c == "matmul" else (bits == _BIT[c]))
        if not sel.any():
            continue
        s, e = starts[sel], ends[sel]
        pts += [s, e]
        d = np.zeros((2 * len(s), len(cats)), dtype=np.int64)
        d[: len(s), j] = 1
        d[len(s) :, j] = -1
        deltas.append(d)
    p = np.concatenate(pts)
    dl = np.concatenate(deltas)
    order = np.argsort(p, kind="stable")
    p, dl = p[order], dl[order]
    active = np.cumsum(dl, axis=0)
    mask = ((active > 0) * (1 << np.arange(len(cats)))).sum(axis=1)
    seg = np.diff(p)
    seg_start = p[:-1]
    mask = mask[:-1]
    w = np.searchsorted(windows[:, 0], seg_start, side="right") - 1
    inside = (w >= 0) & (seg > 0)
    inside[inside] &= seg_start[inside] < windows[w[inside], 1]
    np.add.at(out, (w[inside], mask[inside]), seg[inside])
    return out


def _stats(md: np.ndarray, spans_ns: np.ndarray) -> dict[str, np.ndarray]:
    m = np.arange(md.shape[1])

    def t(sel: np.ndarray) -> np.ndarray:
        return md[:, sel].sum(axis=1) / 1e9

    has = {c: (m & _BIT[c]) > 0 for c in BREAKDOWN_CATEGORIES}
    busy = t(m > 0)
    span = spans_ns / 1e9
    r = {
        "span_s": span,
        "busy_s": busy,
        "idle_s": span - busy,
        "compute_s": t(has["compute"]),
        "communication_s": t(has["communication"]),
        "memory_s": t(has["memory"]),
        "other_s": t(has["other"]),
        "matmul_s": t(has["matmul"]),
        "overlap_s": t(has["communication"] & has["compute"]),
        "comm_exposed_s": t(has["communication"] & ~has["compute"]),
        "memory_exposed_s": t(has["memory"] & ~has["compute"] & ~has["communication"]),
        "other_exposed_s": t(
            has["other"] & ~has["compute"] & ~has["communication"] & ~has["memory"]
        ),
    }
    return r


_TIME_COLS = (
    "span_s",
    "busy_s",
    "idle_s",
    "compute_s",
    "communication_s",
    "memory_s",
    "other_s",
    "matmul_s",
    "overlap_s",
    "comm_exposed_s",
    "memory_exposed_s",
    "other_exposed_s",
)


def _with_shares(df: pl.DataFrame) -> pl.DataFrame:
    span = pl.col("span_s")
    return df.with_columns(
        *[
            pl.when(span > 0).then(pl.col(f"{c}_s") / span).alias(f"{c}_share")
            for c in (
                "busy",
                "idle",
                "compute",
                "communication",
                "memory",
                "matmul",
                "comm_exposed",
                "memory_exposed",
                "other_exposed",
            )
        ],
        pl.when(pl.col("communication_s") > 0)
        .then(pl.col("overlap_s") / pl.col("communication_s"))
        .alias("comm_comp_overlap"),
    )


def window_breakdown(traces: TraceSet, windows: pl.DataFrame) -> pl.DataFrame:
    """The time split (module docstring) of each window of each rank.

    Args:
        traces: the traces.
        windows: columns ``rank`` (Int32), ``start_ns``, ``end_ns`` (Int64 Unix ns), plus any
            others, which are kept. Windows of one rank must not overlap.

    Returns:
        the windows' columns plus the ``*_s`` times of :data:`_TIME_COLS` (Float64, s), the
        ``*_share`` ratios (0-1; null for an empty window) and ``comm_comp_overlap`` (0-1, null
        without communication).
    """
    parts = []
    for (rank,), w in windows.sort("rank", "start_ns").group_by("rank", maintain_order=True):
        k = traces.kernels.filter(pl.col("rank") == rank)
        arr = w.select("start_ns", "end_ns").to_numpy().astype(np.int64)
        md = _mask_durations(k, arr)
        st = _stats(md, arr[:, 1] - arr[:, 0])
        parts.append(w.with_columns(*[pl.Series(c, st[c], dtype=pl.Float64) for c in _TIME_COLS]))
    if not parts:
        return _with_shares(
            windows.clear().with_columns(*[pl.lit(None, pl.Float64).alias(c) for c in _TIME_COLS])
        )
    return _with_shares(pl.concat(parts))


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
        *[pl.col(c).sum() for c in _TIME_COLS],
    )
    return _with_shares(agg).sort("rank")


# --------------------------------------------------------------------------------------------
# Whole-trace analyses as HTA defines them
# --------------------------------------------------------------------------------------------


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
    from trainperf.trace import hta

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
        from trainperf.trace import hta

        return _temporal_frame(hta.temporal_breakdown_rows(traces), "hta")
    k = _hta_kernels(traces)
    rows = []
    for (rank,), kr in k.group_by("rank", maintain_order=True):
        if kr.height == 0:
            continue
        a, b = int(kr["start_ns"].min()), int(kr["end_ns"].max())
        md = _mask_durations(kr, np.array([[a, b]], dtype=np.int64))
        st = _stats(md, np.array([b - a]))
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


def comm_comp_overlap(traces: TraceSet, *, engine: str = "auto") -> pl.DataFrame:
    """HTA's communication/computation overlap per rank over the traced span.

    Returns:
        one row per rank with GPU activity: ``rank`` (Int32), ``communication_s`` (Float64, union of
        communication kernels), ``comm_comp_overlap`` (0-1: time with communication and compute /
        communication time; null without communication kernels), ``engine``.
    """
    eng = _engine(engine, traces)
    if eng == "hta":
        from trainperf.trace import hta

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
        md = _mask_durations(kr, np.array([[a, b]], dtype=np.int64))
        st = _stats(md, np.array([b - a]))
        comm = st["communication_s"][0]
        rows.append(
            {
                "rank": rank,
                "communication_s": comm,
                "comm_comp_overlap": st["overlap_s"][0] / comm if comm > 0 else None,
            }
        )
    return (
        pl.DataFrame(
            rows,
            schema={
                "rank": pl.Int32,
                "communication_s": pl.Float64,
                "comm_comp_overlap": pl.Float64,
            },
        )
        .with_columns(pl.lit("frames").alias("engine"))
        .sort("rank")
    )


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
        from trainperf.trace import hta

        return hta.kernel_type_breakdown(traces)
    k = _hta_kernels(traces).filter(pl.col("category") != "other")
    total = np.zeros(1 << len(BREAKDOWN_CATEGORIES), dtype=np.int64)
    for (_rank,), kr in k.group_by("rank", maintain_order=True):
        a, b = int(kr["start_ns"].min()), int(kr["end_ns"].max())
        total += _mask_durations(kr, np.array([[a, b]], dtype=np.int64))[0]
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
        from trainperf.trace import hta

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
    cats = pl.DataFrame({"idle_category": ["host_wait", "kernel_wait", "other"]})
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


# --------------------------------------------------------------------------------------------
# Communication and kernels
# --------------------------------------------------------------------------------------------


def collective_breakdown(traces: TraceSet, *, by_step: bool = False) -> pl.DataFrame:
    """Communication time by collective kind, per rank (and step).

    Source per rank: its NCCL kernels when it has any (``source`` ``gpu_kernels``: GPU time of each
    kernel, waiting for peers included); else its ``gloo:*`` calls (``gloo_ops``: CPU wall time of
    each call on the thread that ran it). The share is of the rank's summed communication time, as
    the paper's "NCCL SendRecv ... 91.2 % of NCCL time".

    Returns:
        one row per (rank[, step], collective): ``rank`` (Int32), [``step`` (Int64)],
        ``collective`` (String, :data:`~trainperf.trace.read.COLLECTIVES`), ``source`` (String),
        ``n_calls`` (UInt32), ``time_s`` (Float64, summed durations), ``mean_us`` (Float64),
        ``share`` (0-1 of the rank's [step's] communication time).
    """
    keys = ["rank", "step"] if by_step else ["rank"]
    gpu = traces.kernels.filter(pl.col("category") == "communication").select(
        "rank", "step", "collective", "dur_ns", pl.lit("gpu_kernels").alias("source")
    )
    with_gpu = gpu["rank"].unique().to_list()
    cpu = traces.cpu_comms.filter(
        (pl.col("backend") == "gloo")
        & pl.col("collective").is_not_null()
        & ~pl.col("rank").is_in(with_gpu)
    ).select("rank", "step", "collective", "dur_ns", pl.lit("gloo_ops").alias("source"))
    allc = pl.concat([gpu, cpu])
    if by_step:
        allc = allc.filter(pl.col("step").is_not_null())
    out = allc.group_by(*keys, "collective", "source").agg(
        pl.len().alias("n_calls"),
        (pl.col("dur_ns").sum() / 1e9).alias("time_s"),
        (pl.col("dur_ns").mean() / 1e3).alias("mean_us"),
    )
    out = out.with_columns((pl.col("time_s") / pl.col("time_s").sum().over(keys)).alias("share"))
    return out.select(
        pl.col("rank").cast(pl.Int32),
        *(["step"] if by_step else []),
        "collective",
        "source",
        "n_calls",
        "time_s",
        "mean_us",
        "share",
    ).sort(*keys, "time_s", descending=[False] * len(keys) + [True])


def short_kernel_name(name: str) -> str:
    """A kernel name without return type, namespaces in brackets, template and call arguments.

    ``void at::native::(anonymous namespace)::multi_tensor_apply_kernel<...>(...)`` ->
    ``at::native::multi_tensor_apply_kernel``; ``nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_NTN``
    unchanged (the bracket-dropping rule of HTA's ``shorten_name``).
    """
    if "<" not in name and "(" not in name:
        return name
    out: list[str] = []
    depth = 0
    for ch in name.replace("->", ""):
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    s = re.sub(r"(::)+", "::", "".join(out)).strip()
    return s.split(" ")[-1] if s else name


def top_kernels(traces: TraceSet, *, n: int = 10) -> pl.DataFrame:
    """The ``n`` activities with the most GPU time per rank (all profiled steps).

    Returns:
        ``rank`` (Int32), ``kernel`` (String, :func:`short_kernel_name`), ``category`` (String),
        ``matmul`` (Boolean), ``n_calls`` (UInt32), ``time_s`` (Float64, summed durations),
        ``mean_us`` (Float64), ``share`` (0-1 of the rank's summed activity time), ``name``
        (String, one full name of the group); sorted by rank, then time.
    """
    k = traces.kernels
    names = k["name"].unique()
    short = pl.DataFrame({"name": names, "kernel": [short_kernel_name(x) for x in names]})
    g = (
        k.join(short, on="name", how="left")
        .group_by("rank", "kernel", "category", "matmul")
        .agg(
            pl.len().alias("n_calls"),
            (pl.col("dur_ns").sum() / 1e9).alias("time_s"),
            (pl.col("dur_ns").mean() / 1e3).alias("mean_us"),
            pl.col("name").first(),
        )
        .with_columns((pl.col("time_s") / pl.col("time_s").sum().over("rank")).alias("share"))
        .sort(["rank", "time_s"], descending=[False, True])
    )
    return (
        g.group_by("rank", maintain_order=True)
        .head(n)
        .select(
            pl.col("rank").cast(pl.Int32),
            "kernel",
            "category",
            "matmul",
            "n_calls",
            "time_s",
            "mean_us",
            "share",
            "name",
        )
    )


# --------------------------------------------------------------------------------------------
# Matching with the MLPerf log and with telemetry
# --------------------------------------------------------------------------------------------


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
    from trainperf import flops, mlperf, telemetry

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
        telemetry lacks is null.
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
        return pl.DataFrame(
            schema={
                "rank": pl.Int32,
                "gpu": pl.Int32,
                "timestamp": pl.Datetime("us", "UTC"),
                "window_s": pl.Float64,
                **{
                    f"{c}_share": pl.Float64
                    for c in ("busy", "compute", "matmul", "communication", "memory")
                },
                **{c: pl.Float64 for c in _DCGM_COLUMNS.values()},
            }
        )
    out = window_breakdown(traces, pl.concat(wins))
    return out.select(
        "rank",
        "gpu",
        "timestamp",
        "window_s",
        "busy_share",
        "compute_share",
        "matmul_share",
        "communication_share",
        "memory_share",
        *_DCGM_COLUMNS.values(),
    ).sort("rank", "timestamp")


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
