"""Parsing one PyTorch profiler (Kineto) Chrome-trace JSON file (one rank) into frames.

Format (what ``torch.profiler.profile.export_chrome_trace`` and ``tensorboard_trace_handler`` write;
Kineto ``libkineto/src/output_json.cpp``, https://github.com/pytorch/kineto; the Chrome trace
event format, https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU):
one JSON object, ``.json`` or gzip-compressed ``.json.gz``, whose ``traceEvents`` list holds the
events and whose other top-level keys describe the run (``distributedInfo`` with ``rank``,
``world_size``, ``backend`` and the process groups; ``deviceProperties``; ``baseTimeNanoseconds``;
``trainperf`` written by :mod:`trainperf.capture.profile`). The events used:

* complete events (``"ph": "X"``, ``ts`` and ``dur`` in microseconds) of category ``kernel``,
  ``gpu_memcpy`` and ``gpu_memset`` (older Kineto: ``Kernel``, ``Memcpy``, ``Memset``): GPU activity,
  with ``args.stream``, ``args.device`` and ``args.correlation``;
* ``cuda_runtime`` / ``cuda_driver`` (older: ``Runtime``) events: the CPU call that launched a GPU
  activity with the same ``args.correlation``;
* ``user_annotation`` events named ``ProfilerStep#N``: the CPU span of profiler step ``N``
  (``gpu_user_annotation`` ones: the GPU span Kineto derived);
* CPU events of collectives: ``record_param_comms``, ``c10d::*``, ``nccl:*``, ``gloo:*``.

Times: an event's Unix time in ns is ``baseTimeNanoseconds + round(ts * 1000)`` (Kineto writes
``ts`` relative to that base; checked against ``time.time()``: within 2 ms). Traces without the key
(older Kineto) are taken as Unix microseconds when ``ts`` is later than 2001, else flagged
``clock`` (then no matching with logs or telemetry is possible).

Categories of GPU activity, ``matmul`` and the collective of a kernel: :mod:`trainperf.trace.names`.

Checks of one file (one row each in ``quality`` when they fire; :mod:`trainperf.trace.read` turns
them into warnings): ``read`` (unreadable, truncated or not a trace: :class:`TraceFormatError`),
``no_gpu_activity`` (a CPU-only trace: no GPU breakdown), ``no_profiler_steps`` /
``one_profiler_step``, ``duplicate_events`` (same stream, start, duration and name: one kept),
``duplicate_steps``, ``bad_duration`` (negative or non-finite: excluded), ``stream_overlap``
(kernels of one stream overlapping by more than 1 us: timestamps suspect, flagged), ``clock``.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from trainperf.trace.names import (
    collective_kind,
    cpu_comm_kind,
    is_communication,
    is_matmul,
    kernel_category,
)
from trainperf.trace.schema import (
    CPU_COMM_SCHEMA,
    KERNEL_SCHEMA,
    STEP_SCHEMA,
    TraceFormatError,
    quality_row,
)

__all__ = ["One", "as_int", "parse_one"]

_GPU_CATS = {
    "kernel": "kernel",
    "Kernel": "kernel",
    "gpu_memcpy": "memcpy",
    "Memcpy": "memcpy",
    "gpu_memset": "memset",
    "Memset": "memset",
}
_LAUNCH_CATS = {"cuda_runtime", "cuda_driver", "Runtime"}
_STEP_RE = re.compile(r"^ProfilerStep\s*#\s*(\d+)$")
_RANK_IN_NAME = re.compile(r"rank[_-]?(\d+)", re.IGNORECASE)
_EPOCH_2001_US = 1e15
_STREAM_OVERLAP_NS = 1000


class _Columns:
    """Column lists filled by the JSON object hook while the decoder walks the file.

    The hook sees every JSON object once, innermost first; an event (a dict with ``ph``) is reduced
    to the few fields the analyses need and dropped, so the decoded document never holds the
    events as dicts (peak memory: the file's text plus these columns; ``benchmarks/trace_read.py``).
    """

    def __init__(self) -> None:
        self.n_events = 0
        self.ts_min = math.inf
        self.ts_max = -math.inf
        self.g: dict[str, list] = {
            k: []
            for k in ("kind", "name", "ts", "dur", "stream", "device", "corr", "bytes", "coll")
        }
        self.launch_corr: list[int] = []
        self.launch_ts: list[float] = []
        self.steps: dict[str, list] = {k: [] for k in ("where", "step", "ts", "dur")}
        self.comm: dict[str, list] = {
            k: [] for k in ("name", "tid", "ts", "dur", "nelems", "group", "coll")
        }
        self.threads: dict[tuple[str, str], str] = {}
        self.names: dict[str, str] = {}

    def hook(self, d: dict) -> Any:
        ph = d.get("ph")
        if ph is None:
            return d  # args, metadata, the top-level object
        self.n_events += 1
        if ph == "X":
            ts = d.get("ts")
            if isinstance(ts, (int, float)):
                if ts < self.ts_min:
                    self.ts_min = ts
                end = ts + (d.get("dur") or 0)
                if end > self.ts_max:
                    self.ts_max = end
            cat = d.get("cat")
            if cat in _GPU_CATS:
                a = d.get("args") or {}
                name = d.get("name", "")
                name = self.names.setdefault(name, name)
                g = self.g
                g["kind"].append(_GPU_CATS[cat])
                g["name"].append(name)
                g["ts"].append(ts)
                g["dur"].append(d.get("dur"))
                g["stream"].append(a.get("stream", d.get("tid")))
                g["device"].append(a.get("device", d.get("pid")))
                g["corr"].append(a.get("correlation"))
                g["bytes"].append(a.get("bytes"))
                g["coll"].append(a.get("Collective name"))
            elif cat in _LAUNCH_CATS:
                corr = (d.get("args") or {}).get("correlation")
                if corr is not None:
                    self.launch_corr.append(corr)
                    self.launch_ts.append(ts)
            else:
                name = d.get("name", "")
                if cat in ("user_annotation", "gpu_user_annotation") and name.startswith(
                    "ProfilerStep"
                ):
                    m = _STEP_RE.match(name)
                    if m:
                        s = self.steps
                        s["where"].append("cpu" if cat == "user_annotation" else "gpu")
                        s["step"].append(int(m.group(1)))
                        s["ts"].append(ts)
                        s["dur"].append(d.get("dur"))
                elif cat != "gpu_user_annotation" and (
                    name == "record_param_comms" or name.startswith(("gloo:", "nccl:", "c10d::"))
                ):
                    a = d.get("args") or {}
                    c = self.comm
                    c["name"].append(name)
                    c["tid"].append(str(d.get("tid")))
                    c["ts"].append(ts)
                    c["dur"].append(d.get("dur"))
                    c["nelems"].append(as_int(a.get("In msg nelems")))
                    c["group"].append(as_int(a.get("Group size")))
                    c["coll"].append(a.get("Collective name"))
        elif ph == "M" and d.get("name") == "thread_name":
            self.threads[(str(d.get("pid")), str(d.get("tid")))] = str(
                (d.get("args") or {}).get("name", "")
            )
        return None


def as_int(x: Any) -> int | None:
    try:
        return int(x) if x is not None and x != "" else None
    except (TypeError, ValueError):
        return None


def _int_series(values: list, dtype: pl.DataType) -> pl.Series:
    """Integers as ``dtype``; anything else (strings, floats, None) -> converted where exact, else null."""
    try:
        return pl.Series(values, dtype=dtype)
    except (TypeError, ValueError, OverflowError, pl.exceptions.PolarsError):
        return pl.Series([as_int(x) for x in values], dtype=dtype, strict=False)


def _read_text(path: Path) -> str:
    src = str(path)
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as fh:
                raw = fh.read()
        else:
            raw = path.read_bytes()
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise TraceFormatError(f"{src}: damaged or truncated gzip stream ({exc})", src) from exc
    except OSError as exc:
        raise TraceFormatError(f"{src}: cannot read ({exc.strerror or exc})", src) from exc
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TraceFormatError(
            f"{src}: not UTF-8 text at byte {exc.start} (a binary file, not a Chrome trace?)", src
        ) from exc


@dataclass
class One:
    """What one file gave (internal)."""

    path: str
    meta: dict[str, Any]
    rank: int | None
    kernels: pl.DataFrame
    steps: pl.DataFrame
    cpu_comms: pl.DataFrame
    n_events: int
    start_ns: int | None
    end_ns: int | None
    quality: list[dict] = field(default_factory=list)


def parse_one(path: Path) -> One:
    """Read one trace file into the frames of one rank (:class:`One`), with its quality rows.

    The steps, in order: decode the JSON into columns, the clock base, the GPU activity (bad
    durations and duplicates out), the profiler steps, the step of each activity, the stream
    order check, the CPU collectives, the checks of what the file lacks.

    Raises:
        TraceFormatError: unreadable, truncated or invalid JSON (with the line), not a trace.
    """
    src = str(path)
    meta, cols = _decode(path)
    q: list[dict] = []
    base = _time_base(meta, cols, src, q)
    rank = _rank_of(meta, path)
    k = _kernel_frame(_gpu_activity(cols, src, q), cols, base)
    cpu_steps, gpu_steps = _step_spans(cols, base, src, q)
    kernels = _assign_steps(k, cpu_steps, gpu_steps, rank)
    _check_stream_order(kernels, src, q)
    steps = _steps_frame(cpu_steps, gpu_steps, kernels, rank)
    cpu_comms = _cpu_comms(cols, base, cpu_steps, rank)
    _check_missing(kernels, steps, src, q)
    start = (
        None if cols.n_events == 0 or math.isinf(cols.ts_min) else base + round(cols.ts_min * 1000)
    )
    end = None if start is None else base + round(cols.ts_max * 1000)
    return One(src, meta, rank, kernels, steps, cpu_comms, cols.n_events, start, end, q)


def _decode(path: Path) -> tuple[dict[str, Any], _Columns]:
    """The file's top-level keys other than ``traceEvents``, and its events as columns."""
    src = str(path)
    text = _read_text(path)
    cols = _Columns()
    try:
        doc = json.loads(text, object_hook=cols.hook)
    except json.JSONDecodeError as exc:
        # an error on the last line of the text: the file ends mid-document (cut off)
        what = "truncated" if "\n" not in text[exc.pos :].rstrip() else "invalid JSON"
        raise TraceFormatError(
            f"{src}:{exc.lineno}: {what} ({exc.msg} at line {exc.lineno}, column {exc.colno})",
            src,
            exc.lineno,
        ) from exc
    except RecursionError as exc:
        raise TraceFormatError(f"{src}: JSON nested too deeply", src) from exc
    del text
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise TraceFormatError(
            f"{src}: not a Chrome trace (expected a JSON object with a traceEvents list)", src
        )
    return {k: v for k, v in doc.items() if k != "traceEvents"}, cols


def _time_base(meta: dict[str, Any], cols: _Columns, src: str, q: list[dict]) -> int:
    """``baseTimeNanoseconds``, else 0 (``ts`` taken as Unix us; ``clock`` flagged if it is not)."""
    base = meta.get("baseTimeNanoseconds")
    if isinstance(base, int):
        return base
    if cols.ts_min < _EPOCH_2001_US and cols.n_events:
        q.append(
            quality_row(
                src,
                "clock",
                "flagged",
                "no baseTimeNanoseconds and timestamps are not Unix time: the trace cannot be "
                "matched with a log or telemetry",
            )
        )
    return 0


def _to_ns(col: str, base: int) -> pl.Expr:
    """A ``ts``-like column (us since the base) as Unix ns."""
    return (pl.col(col).cast(pl.Float64) * 1000.0).round(0).cast(pl.Int64) + base


def _gpu_activity(cols: _Columns, src: str, q: list[dict]) -> pl.DataFrame:
    """The GPU events as read, less those with a bad ts/dur and repeated ones (checks in ``q``)."""
    g = cols.g
    raw = pl.DataFrame(
        {
            "kind": pl.Series(g["kind"], dtype=pl.String),
            "name": pl.Series(g["name"], dtype=pl.String),
            "ts": pl.Series(g["ts"], dtype=pl.Float64, strict=False),
            "dur": pl.Series(g["dur"], dtype=pl.Float64, strict=False),
            "stream": _int_series(g["stream"], pl.Int32),
            "device": _int_series(g["device"], pl.Int32),
            "correlation": _int_series(g["corr"], pl.Int64),
            "bytes": _int_series(g["bytes"], pl.Int64),
            "coll_arg": pl.Series(
                [None if x is None else str(x) for x in g["coll"]], dtype=pl.String
            ),
        }
    )
    bad = raw.filter(
        pl.col("ts").is_null()
        | pl.col("dur").is_null()
        | ~pl.col("ts").is_finite()
        | ~pl.col("dur").is_finite()
        | (pl.col("dur") < 0)
    )
    if bad.height:
        q.append(
            quality_row(
                src,
                "bad_duration",
                "excluded",
                f"{bad.height} GPU events with a missing, negative or non-finite ts/dur "
                f"(first: {bad['name'][0][:80]!r})",
                n_samples=bad.height,
            )
        )
        raw = raw.filter(
            pl.col("ts").is_finite() & pl.col("dur").is_finite() & (pl.col("dur") >= 0)
        )
    n_before = raw.height
    raw = raw.unique(subset=["stream", "ts", "dur", "name"], keep="first", maintain_order=True)
    if raw.height < n_before:
        q.append(
            quality_row(
                src,
                "duplicate_events",
                "excluded",
                f"{n_before - raw.height} GPU events repeated (same stream, start, duration and "
                "name); one of each kept",
                n_samples=n_before - raw.height,
            )
        )
    return raw


def _kernel_frame(raw: pl.DataFrame, cols: _Columns, base: int) -> pl.DataFrame:
    """GPU activity with category, matmul, collective, launch time and Unix ns times."""
    uniq = raw.group_by("name").agg(pl.col("kind").first())
    names, kinds = uniq["name"].to_list(), uniq["kind"].to_list()
    info = pl.DataFrame(
        {
            "name": names,
            "category": [kernel_category(n, kd) for n, kd in zip(names, kinds, strict=True)],
            "matmul": [is_matmul(n) for n in names],
            "coll_name": [collective_kind(n) if is_communication(n) else None for n in names],
        },
        schema={
            "name": pl.String,
            "category": pl.String,
            "matmul": pl.Boolean,
            "coll_name": pl.String,
        },
    )
    launches = pl.DataFrame(
        {
            "correlation": _int_series(cols.launch_corr, pl.Int64),
            "launch_ts": pl.Series(cols.launch_ts, dtype=pl.Float64, strict=False),
        }
    ).unique(subset=["correlation"], keep="first")
    return (
        raw.join(info, on="name", how="left")
        .join(launches, on="correlation", how="left")
        .with_columns(
            _to_ns("ts", base).alias("start_ns"),
            (pl.col("dur") * 1000.0).round(0).cast(pl.Int64).alias("dur_ns"),
            pl.when(pl.col("launch_ts").is_not_null())
            .then(_to_ns("launch_ts", base))
            .alias("launch_ns"),
            pl.when(pl.col("category") == "communication")
            .then(
                pl.coalesce(
                    pl.col("coll_name"),
                    pl.col("coll_arg").map_elements(collective_kind, return_dtype=pl.String),
                    pl.lit("Other"),
                )
            )
            .alias("collective"),
        )
        .with_columns((pl.col("start_ns") + pl.col("dur_ns")).alias("end_ns"))
    )


def _step_spans(
    cols: _Columns, base: int, src: str, q: list[dict]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The CPU spans of the profiler steps (repeats out, flagged) and Kineto's GPU spans."""
    s = cols.steps
    st = pl.DataFrame(
        {
            "where": pl.Series(s["where"], dtype=pl.String),
            "step": pl.Series(s["step"], dtype=pl.Int64),
            "ts": pl.Series(s["ts"], dtype=pl.Float64, strict=False),
            "dur": pl.Series(s["dur"], dtype=pl.Float64, strict=False),
        }
    ).with_columns(
        _to_ns("ts", base).alias("start_ns"),
        (_to_ns("ts", base) + (pl.col("dur") * 1000).round(0).cast(pl.Int64)).alias("end_ns"),
    )
    cpu_steps = st.filter(pl.col("where") == "cpu").sort("start_ns")
    dup = cpu_steps.height - cpu_steps["step"].n_unique() if cpu_steps.height else 0
    if dup:
        q.append(
            quality_row(
                src,
                "duplicate_steps",
                "excluded",
                f"{dup} ProfilerStep annotations repeated on the CPU; the first of each kept",
                n_samples=dup,
            )
        )
        cpu_steps = cpu_steps.unique(subset=["step"], keep="first", maintain_order=True)
    gpu_steps = (
        st.filter(pl.col("where") == "gpu")
        .unique(subset=["step"], keep="first")
        .select("step", pl.col("start_ns").alias("g_start"), pl.col("end_ns").alias("g_end"))
        .sort("g_start")
    )
    return cpu_steps, gpu_steps


def _assign_steps(
    k: pl.DataFrame, cpu_steps: pl.DataFrame, gpu_steps: pl.DataFrame, rank: int | None
) -> pl.DataFrame:
    """Kernel -> step: the CPU step span that holds the launch call, else the GPU annotation span."""
    k = k.sort("start_ns")
    if cpu_steps.height:
        by_launch = (
            k.select("start_ns", "launch_ns")
            .with_row_index("_i")
            .filter(pl.col("launch_ns").is_not_null())
            .sort("launch_ns")
            .join_asof(
                cpu_steps.select("step", "start_ns", "end_ns").rename(
                    {"start_ns": "s_start", "end_ns": "s_end"}
                ),
                left_on="launch_ns",
                right_on="s_start",
                strategy="backward",
            )
            .filter(pl.col("launch_ns") <= pl.col("s_end"))
            .select("_i", pl.col("step").alias("step_l"))
        )
        k = k.with_row_index("_i").join(by_launch, on="_i", how="left").drop("_i")
    else:
        k = k.with_columns(pl.lit(None, dtype=pl.Int64).alias("step_l"))
    if gpu_steps.height:
        by_gpu = (
            k.select("start_ns")
            .with_row_index("_i")
            .join_asof(gpu_steps, left_on="start_ns", right_on="g_start", strategy="backward")
            .filter(pl.col("start_ns") < pl.col("g_end"))
            .select("_i", pl.col("step").alias("step_g"))
        )
        k = k.with_row_index("_i").join(by_gpu, on="_i", how="left").drop("_i")
    else:
        k = k.with_columns(pl.lit(None, dtype=pl.Int64).alias("step_g"))
    k = k.with_columns(
        pl.coalesce("step_l", "step_g").alias("step"), pl.lit(rank, pl.Int32).alias("rank")
    )
    return k.select([pl.col(c).cast(t) for c, t in KERNEL_SCHEMA.items()]).sort("start_ns")


def _check_stream_order(kernels: pl.DataFrame, src: str, q: list[dict]) -> None:
    """Flag activities that start over 1 us before the previous one of their stream ends."""
    ov = (
        kernels.sort("stream", "start_ns")
        .with_columns(pl.col("end_ns").shift(1).over("stream").alias("_prev_end"))
        .filter(pl.col("start_ns") < pl.col("_prev_end") - _STREAM_OVERLAP_NS)
    )
    if ov.height:
        q.append(
            quality_row(
                src,
                "stream_overlap",
                "flagged",
                f"{ov.height} GPU activities start more than 1 us before the previous one on the "
                f"same stream ends (first: stream {ov['stream'][0]}, {ov['name'][0][:60]!r}); "
                "timestamps suspect",
                n_samples=ov.height,
            )
        )


def _cpu_comms(
    cols: _Columns, base: int, cpu_steps: pl.DataFrame, rank: int | None
) -> pl.DataFrame:
    """The CPU collective calls (:data:`CPU_COMM_SCHEMA`), each with the CPU step that holds it."""
    c = cols.comm
    cc = pl.DataFrame(
        {
            "name": pl.Series(c["name"], dtype=pl.String),
            "tid": pl.Series(c["tid"], dtype=pl.String),
            "ts": pl.Series(c["ts"], dtype=pl.Float64, strict=False),
            "dur": pl.Series(c["dur"], dtype=pl.Float64, strict=False),
            "msg_nelems": pl.Series(c["nelems"], dtype=pl.Int64),
            "group_size": pl.Series(c["group"], dtype=pl.Int64),
            "coll_arg": pl.Series(
                [None if x is None else str(x) for x in c["coll"]], dtype=pl.String
            ),
        }
    ).filter(pl.col("ts").is_finite() & pl.col("dur").is_finite() & (pl.col("dur") >= 0))
    threads = {tid: nm for (pid, tid), nm in cols.threads.items()}
    cpu_comms = (
        cc.with_columns(
            _to_ns("ts", base).alias("start_ns"),
            (pl.col("dur") * 1000).round(0).cast(pl.Int64).alias("dur_ns"),
            pl.col("tid").replace_strict(threads, default=None).alias("thread"),
            pl.struct("name", "coll_arg")
            .map_elements(lambda r: cpu_comm_kind(r["name"], r["coll_arg"]), return_dtype=pl.String)
            .alias("collective"),
            pl.col("name")
            .str.extract(r"^(gloo|nccl|c10d):", 1)
            .fill_null("unknown")
            .alias("backend"),
        )
        .with_columns(
            (pl.col("start_ns") + pl.col("dur_ns")).alias("end_ns"),
            pl.lit(rank, pl.Int32).alias("rank"),
        )
        .sort("start_ns")
    )
    if cpu_steps.height and cpu_comms.height:
        cpu_comms = cpu_comms.join_asof(
            cpu_steps.select(
                "step", pl.col("start_ns").alias("s_start"), pl.col("end_ns").alias("s_end")
            ),
            left_on="start_ns",
            right_on="s_start",
            strategy="backward",
        ).with_columns(
            pl.when(pl.col("start_ns") <= pl.col("s_end")).then(pl.col("step")).alias("step")
        )
    else:
        cpu_comms = cpu_comms.with_columns(pl.lit(None, pl.Int64).alias("step"))
    return cpu_comms.select([pl.col(c).cast(t) for c, t in CPU_COMM_SCHEMA.items()])


def _check_missing(kernels: pl.DataFrame, steps: pl.DataFrame, src: str, q: list[dict]) -> None:
    """Flag a rank with no GPU activity, no profiler steps, or one step only."""
    if kernels.height == 0:
        q.append(
            quality_row(
                src,
                "no_gpu_activity",
                "flagged",
                "no GPU kernels, copies or memsets (a CPU-only run, or CUDA activity was not "
                "recorded): no GPU time breakdown for this rank",
            )
        )
    if steps.height == 0:
        q.append(
            quality_row(
                src,
                "no_profiler_steps",
                "flagged",
                "no ProfilerStep#N annotations (the profiler had no schedule / step() was not "
                "called): no per-step analyses for this rank",
            )
        )
    elif steps.height == 1:
        q.append(
            quality_row(
                src,
                "one_profiler_step",
                "flagged",
                "one profiler step only: its GPU span has no next step to end at",
            )
        )


def _rank_of(meta: dict, path: Path) -> int | None:
    """``distributedInfo.rank``, else ``trainperf.rank``, else ``rank<N>`` in the file name."""
    di = meta.get("distributedInfo")
    if isinstance(di, dict) and as_int(di.get("rank")) is not None:
        return as_int(di.get("rank"))
    tp = meta.get("trainperf")
    if isinstance(tp, dict) and as_int(tp.get("rank")) is not None:
        return as_int(tp.get("rank"))
    m = _RANK_IN_NAME.search(path.name)
    return int(m.group(1)) if m else None


def _steps_frame(
    cpu_steps: pl.DataFrame, gpu_steps: pl.DataFrame, kernels: pl.DataFrame, rank: int | None
) -> pl.DataFrame:
    """One row per CPU profiler step (:data:`STEP_SCHEMA`): its GPU span from the activities."""
    if cpu_steps.height == 0:
        return pl.DataFrame(schema=STEP_SCHEMA)
    g = (
        kernels.filter(pl.col("step").is_not_null())
        .group_by("step")
        .agg(
            pl.col("start_ns").min().alias("gpu_start_ns"),
            pl.col("end_ns").max().alias("gpu_busy_end_ns"),
            pl.len().alias("n_kernels"),
        )
    )
    out = (
        cpu_steps.select(
            "step", pl.col("start_ns").alias("cpu_start_ns"), pl.col("end_ns").alias("cpu_end_ns")
        )
        .join(g, on="step", how="left")
        .join(
            gpu_steps.select("step", pl.col("g_start").alias("gpu_annotation_start_ns")),
            on="step",
            how="left",
        )
        .sort("step")
        .with_columns(
            pl.col("gpu_start_ns").shift(-1).alias("_next"),
            pl.col("n_kernels").fill_null(0),
            pl.lit(rank, pl.Int32).alias("rank"),
        )
        .with_columns(
            pl.coalesce("_next", "gpu_busy_end_ns").alias("gpu_end_ns"),
            pl.col("_next").is_not_null().alias("complete"),
        )
    )
    return out.select([pl.col(c).cast(t) for c, t in STEP_SCHEMA.items()])
