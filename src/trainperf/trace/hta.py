"""HolisticTraceAnalysis (HTA) behind the whole-trace analyses, where it is installed.

HTA (PyPI ``holistictraceanalysis``, https://github.com/facebookresearch/HolisticTraceAnalysis,
MIT) is an optional extra (``pip install 'trainperf[trace]'``; the reason is in
``pyproject.toml``). :func:`available` says whether it imports; the functions here run its
``TraceAnalysis`` on the files of a :class:`~trainperf.trace.schema.TraceSet` and return polars
frames with the columns and units of :mod:`trainperf.trace.analysis` (which calls them for
``engine="hta"`` / ``"auto"``). HTA parses the files itself, once per TraceSet (cached on it).

Settings: ``HTA_DISABLE_NS_ROUNDING=1`` while HTA parses (HTA otherwise rounds every event inward
to whole microseconds, ``trace_parser.round_down_time_stamps``, which drops up to 2 us from each
kernel: 0.5 % of a step of 1500 kernels), ``visualize=False`` everywhere (HTA's plotly figures
would put ``text/html`` into a notebook), HTA's log messages at WARNING and above only.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import warnings
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _v
from typing import Any

import polars as pl

__all__ = [
    "HTA_OVERLAP_SCHEMA",
    "available",
    "comm_comp_overlap",
    "idle_breakdown",
    "kernel_type_breakdown",
    "temporal_breakdown_rows",
    "trace_analysis",
    "version",
]


def available() -> bool:
    """True when HolisticTraceAnalysis can be imported."""
    return importlib.util.find_spec("hta") is not None


def version() -> str | None:
    """The installed HolisticTraceAnalysis version, or None."""
    if not available():
        return None

    try:
        return _v("HolisticTraceAnalysis")
    except PackageNotFoundError:
        return None


@contextlib.contextmanager
def _quiet():
    """HTA without ns rounding, without log lines below ERROR and without warnings."""
    old_env = os.environ.get("HTA_DISABLE_NS_ROUNDING")
    os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
    log = logging.getLogger("hta")
    old_level = log.level
    log.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        log.setLevel(old_level)
        if old_env is None:
            os.environ.pop("HTA_DISABLE_NS_ROUNDING", None)
        else:
            os.environ["HTA_DISABLE_NS_ROUNDING"] = old_env


def trace_analysis(traces: Any) -> Any:
    """HTA's ``TraceAnalysis`` over the files of ``traces`` (rank -> file), parsed once and cached.

    Raises:
        ImportError: HTA is not installed.
        ValueError: no file with GPU activity (HTA analyses GPU kernels only).
    """
    cached = traces.__dict__.get("_hta_analysis")
    if cached is not None:
        return cached
    if not available():
        raise ImportError("HolisticTraceAnalysis is not installed: pip install 'trainperf[trace]'")
    with_gpu = set(traces.kernels["rank"].unique().to_list())
    files = {r: os.path.abspath(p) for r, p in traces.files.items() if r in with_gpu}
    if not files:
        raise ValueError("no trace with GPU activity: HolisticTraceAnalysis needs GPU kernels")
    with _quiet():
        # deferred: HolisticTraceAnalysis is the optional [trace] extra, imported with its noise muted
        from hta.trace_analysis import TraceAnalysis  # noqa: PLC0415

        ta = TraceAnalysis(trace_files=files, trace_dir=os.path.dirname(next(iter(files.values()))))
    traces.__dict__["_hta_analysis"] = ta
    return ta


def _call(traces: Any, fn: str, **kw: Any) -> Any:
    ta = trace_analysis(traces)
    with _quiet():
        return getattr(ta, fn)(**kw)


def temporal_breakdown_rows(traces: Any) -> list[dict]:
    """HTA ``get_temporal_breakdown`` (us) as rows in seconds: ``rank``, ``kernel_time_s``, ``idle_s``,
    ``compute_s``, ``non_compute_s``; :func:`trainperf.trace.analysis.temporal_breakdown` makes its
    frame from them (this module does not import the analyses, so that the two never import each other)."""
    df = _call(traces, "get_temporal_breakdown", visualize=False)
    return [
        {
            "rank": int(r["rank"]),
            "kernel_time_s": float(r["kernel_time(us)"]) / 1e6,
            "idle_s": float(r["idle_time(us)"]) / 1e6,
            "compute_s": float(r["compute_time(us)"]) / 1e6,
            "non_compute_s": float(r["non_compute_time(us)"]) / 1e6,
        }
        for r in df.to_dict("records")
    ]


HTA_OVERLAP_SCHEMA: dict[str, pl.DataType] = {"rank": pl.Int32, "comm_comp_overlap": pl.Float64}
"""Columns of :func:`comm_comp_overlap`."""


def comm_comp_overlap(traces: Any) -> pl.DataFrame:
    """HTA ``get_comm_comp_overlap``: ``rank`` (Int32) and ``comm_comp_overlap`` (HTA's percentage,
    2 decimals, / 100; null where HTA gives NaN): :data:`HTA_OVERLAP_SCHEMA`.
    :func:`trainperf.trace.analysis.comm_comp_overlap` adds ``communication_s`` from the frames
    (HTA does not return it)."""
    df = _call(traces, "get_comm_comp_overlap", visualize=False)
    rows = []
    for r in df.to_dict("records"):
        pct = r["comp_comm_overlap_pctg"]
        rows.append(
            {"rank": int(r["rank"]), "comm_comp_overlap": None if pct != pct else float(pct) / 100}
        )
    return pl.DataFrame(rows, schema=HTA_OVERLAP_SCHEMA)


def kernel_type_breakdown(traces: Any) -> pl.DataFrame:
    """HTA ``get_gpu_kernel_breakdown(include_memory_kernels=True)``'s kernel-type table (us -> s)."""
    kt, _ = _call(traces, "get_gpu_kernel_breakdown", visualize=False, include_memory_kernels=True)
    df = pl.DataFrame(
        {
            "kernel_type": [str(x) for x in kt["kernel_type"]],
            "time_s": [float(x) / 1e6 for x in kt["sum"]],
        },
        schema={"kernel_type": pl.String, "time_s": pl.Float64},
    )
    return df.with_columns(
        (pl.col("time_s") / pl.col("time_s").sum()).alias("share"), pl.lit("hta").alias("engine")
    ).sort("time_s", descending=True)


def idle_breakdown(traces: Any, consecutive_kernel_delay_us: float = 30.0) -> pl.DataFrame:
    """HTA ``get_idle_time_breakdown`` for every rank, as the frames engine's table."""
    ranks = sorted(set(traces.kernels["rank"].unique().to_list()))
    res = _call(
        traces,
        "get_idle_time_breakdown",
        ranks=ranks,
        consecutive_kernel_delay=consecutive_kernel_delay_us,
        visualize=False,
    )
    df = res[0] if isinstance(res, tuple) else res
    recs = df.to_dict("records")
    out = pl.DataFrame(
        {
            "rank": [int(r["rank"]) for r in recs],
            "stream": [int(r["stream"]) for r in recs],
            "idle_category": [str(r["idle_category"]) for r in recs],
            "idle_s": [float(r["idle_time"]) / 1e6 for r in recs],
        },
        schema={
            "rank": pl.Int32,
            "stream": pl.Int32,
            "idle_category": pl.String,
            "idle_s": pl.Float64,
        },
    )
    return out.with_columns(
        (pl.col("idle_s") / pl.col("idle_s").sum().over("rank", "stream")).alias("idle_share"),
        pl.lit("hta").alias("engine"),
    ).sort("rank", "stream", "idle_category")
