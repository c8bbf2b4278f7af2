"""Reader for PyTorch profiler (Kineto) Chrome-trace JSON files, one file per rank.

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

Categories of GPU activity (the rules of HolisticTraceAnalysis 0.5, ``hta/utils/utils.py``, so
that both give the same numbers): ``communication`` if the name matches ``^nccl.*Kernel``;
``memory`` for memcpy/memset events and names matching ``^(Memcpy|Memset|dma)``; ``other`` for
names matching HTA's non-compute pattern ``(.*Memcpy)|(Memset)|(.*Sync)``; ``compute`` for the
rest. ``matmul`` (True/False) marks GEMM and fused-attention kernels by name (cuBLAS/cuBLASLt
``gemm``/``nvjet``/``xmma``/``cutlass``, wgmma/hmma kernels, flash/fmha/SDPA forward and backward):
the kernels that drive the tensor pipes, to set against ``DCGM_FI_PROF_PIPE_TENSOR_ACTIVE``.
NCCL kernel names give the collective (``ncclDevKernel_AllReduce_Sum_f32_RING_LL`` ->
``AllReduce``; ``SendRecv``, ``Send`` and ``Recv`` -> ``SendRecv``), else the kernel's
``Collective name`` argument.

Checks (one row each in ``quality`` when they fire, columns as ``trainperf.quality.QUALITY_SCHEMA``;
a :class:`TraceWarning` names the file): ``read`` (unreadable, truncated or not a trace: the file is
skipped by :func:`read_traces`, raised by :func:`read_trace`), ``no_gpu_activity`` (a CPU-only
trace: no GPU breakdown), ``no_profiler_steps`` / ``one_profiler_step``, ``duplicate_events`` (same
stream, start, duration and name: one kept), ``bad_duration`` (negative or non-finite: excluded),
``stream_overlap`` (kernels of one stream overlapping by more than 1 us: timestamps suspect,
flagged), ``clock``; across files (:func:`read_traces`): ``duplicate_rank`` (later file excluded),
``mixed_runs`` (different ``trainperf.run_id`` or ``world_size``, or profiled windows that do not
overlap in time: flagged, :attr:`TraceSet.consistent` is False).
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
import warnings
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from trainperf.errors import DataWarning, InputError

__all__ = [
    "COLLECTIVES",
    "CPU_COMM_SCHEMA",
    "KERNEL_SCHEMA",
    "QUALITY_SCHEMA",
    "RANK_SCHEMA",
    "STEP_SCHEMA",
    "TraceFormatError",
    "TraceSet",
    "TraceWarning",
    "collective_kind",
    "kernel_category",
    "read_trace",
    "read_traces",
]


class TraceFormatError(InputError):
    """A trace file that cannot be read (truncated, invalid JSON, not a Kineto trace).

    Attributes:
        source: the file.
        line: 1-based line of the problem (JSON errors), else None.
    """

    def __init__(self, message: str, source: str, line: int | None = None) -> None:
        super().__init__(message)
        self.source, self.line = source, line


class TraceWarning(DataWarning):
    """Damage the reader handled (see the module docstring's checks); the message names the file."""


KERNEL_SCHEMA: dict[str, pl.DataType] = {
    "rank": pl.Int32(),
    "device": pl.Int32(),
    "stream": pl.Int32(),
    "kind": pl.String(),  # kernel | memcpy | memset
    "category": pl.String(),  # compute | communication | memory | other
    "matmul": pl.Boolean(),
    "collective": pl.String(),  # NCCL kernels only
    "name": pl.String(),
    "start_ns": pl.Int64(),  # Unix time, ns
    "end_ns": pl.Int64(),
    "dur_ns": pl.Int64(),
    "correlation": pl.Int64(),
    "launch_ns": pl.Int64(),  # start of the launching CUDA runtime/driver call (Unix ns), if traced
    "bytes": pl.Int64(),  # memcpy/memset bytes
    "step": pl.Int64(),  # profiler step whose CPU span holds the launch, else null
}
"""Columns of :attr:`TraceSet.kernels`: one row per GPU activity (kernel, memcpy, memset)."""

STEP_SCHEMA: dict[str, pl.DataType] = {
    "rank": pl.Int32(),
    "step": pl.Int64(),  # N of ProfilerStep#N (0-based iteration of the profiled loop)
    "cpu_start_ns": pl.Int64(),
    "cpu_end_ns": pl.Int64(),
    "gpu_start_ns": pl.Int64(),  # first GPU activity launched in the step
    "gpu_end_ns": pl.Int64(),  # gpu_start_ns of the next step; for the last step gpu_busy_end_ns
    "gpu_busy_end_ns": pl.Int64(),  # end of the step's last GPU activity
    "n_kernels": pl.UInt32(),
    "complete": pl.Boolean(),  # a next step exists (its GPU span runs up to that step's start)
    "gpu_annotation_start_ns": pl.Int64(),  # Kineto's gpu_user_annotation ProfilerStep#N start
}
"""Columns of :attr:`TraceSet.steps`: one row per (rank, profiler step); times Unix ns."""

CPU_COMM_SCHEMA: dict[str, pl.DataType] = {
    "rank": pl.Int32(),
    "tid": pl.String(),
    "thread": pl.String(),
    "name": pl.String(),
    "collective": pl.String(),
    "backend": pl.String(),  # gloo | nccl | c10d | unknown
    "start_ns": pl.Int64(),
    "end_ns": pl.Int64(),
    "dur_ns": pl.Int64(),
    "msg_nelems": pl.Int64(),  # record_param_comms "In msg nelems", if recorded
    "group_size": pl.Int64(),
    "step": pl.Int64(),
}
"""Columns of :attr:`TraceSet.cpu_comms`: CPU-side collective calls (``gloo:*``, ``nccl:*``,
``c10d::*``, ``record_param_comms``). On a gloo (CPU) run the ``gloo:*`` spans are the
communication itself; with NCCL they are only the enqueueing, the time is in the NCCL kernels."""

RANK_SCHEMA: dict[str, pl.DataType] = {
    "rank": pl.Int32(),
    "file": pl.String(),
    "status": pl.String(),  # ok | no_gpu_activity | no_profiler_steps | error | excluded
    "host": pl.String(),
    "device_name": pl.String(),
    "backend": pl.String(),
    "world_size": pl.Int64(),
    "run_id": pl.String(),
    "start_ns": pl.Int64(),  # first event (Unix ns)
    "end_ns": pl.Int64(),
    "n_events": pl.Int64(),
    "n_gpu_activities": pl.Int64(),
    "n_steps": pl.Int64(),
}
"""Columns of :attr:`TraceSet.ranks`: one row per file read."""

QUALITY_SCHEMA: dict[str, pl.DataType] = {
    "source": pl.String(),
    "check": pl.String(),
    "action": pl.String(),  # excluded | corrected | flagged | parse_error
    "n_series": pl.Int64(),
    "n_gpus": pl.Int64(),
    "n_samples": pl.Int64(),
    "n_lines": pl.Int64(),
    "first_line": pl.Int64(),
    "detail": pl.String(),
}
"""Data-quality rows; the columns of ``trainperf.quality.QUALITY_SCHEMA`` (one schema for every reader)."""

COLLECTIVES = (
    "SendRecv",
    "AllReduce",
    "ReduceScatter",
    "AllGather",
    "Broadcast",
    "Reduce",
    "AllToAll",
    "Barrier",
    "Other",
)
"""Collective kinds, canonical spelling (NCCL's kernel names)."""

_GPU_CATS = {
    "kernel": "kernel",
    "Kernel": "kernel",
    "gpu_memcpy": "memcpy",
    "Memcpy": "memcpy",
    "gpu_memset": "memset",
    "Memset": "memset",
}
_LAUNCH_CATS = {"cuda_runtime", "cuda_driver", "Runtime"}
_COMM_RE = re.compile(r"^nccl.*Kernel")
_MEMORY_RE = re.compile(r"(^Memcpy)|(^Memset)|(^dma)")
_NONCOMPUTE_RE = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")
_MATMUL_RE = re.compile(
    r"gemm|nvjet|xmma|cutlass|wgmma|hmma|flash|fmha|sdpa.*(fprop|bprop)", re.IGNORECASE
)
_NCCL_KIND_RE = re.compile(r"^nccl(?:Dev)?Kernel_([A-Za-z]+)")
_STEP_RE = re.compile(r"^ProfilerStep\s*#\s*(\d+)$")
_RANK_IN_NAME = re.compile(r"rank[_-]?(\d+)", re.IGNORECASE)
_EPOCH_2001_US = 1e15
_STREAM_OVERLAP_NS = 1000

_KIND_ALIASES = {
    "sendrecv": "SendRecv",
    "send": "SendRecv",
    "recv": "SendRecv",
    "isend": "SendRecv",
    "irecv": "SendRecv",
    "batchisendirecv": "SendRecv",
    "p2p": "SendRecv",
    "allreduce": "AllReduce",
    "reducescatter": "ReduceScatter",
    "allgather": "AllGather",
    "broadcast": "Broadcast",
    "reduce": "Reduce",
    "alltoall": "AllToAll",
    "alltoallv": "AllToAll",
    "barrier": "Barrier",
}


def collective_kind(name: str | None) -> str | None:
    """Canonical collective kind (one of :data:`COLLECTIVES`) of a kernel or CPU op name.

    ``ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(...)`` -> ``ReduceScatter``;
    ``gloo:all_reduce``, ``nccl:all_reduce``, ``c10d::allreduce_``, ``allreduce`` -> ``AllReduce``;
    ``nccl:_all_gather_base``, ``c10d::_allgather_base_``, ``all_gather_into_tensor`` ->
    ``AllGather``; ``nccl:send 0->1``, ``gloo:recv``, ``ncclDevKernel_SendRecv`` -> ``SendRecv``.
    An unknown name after an NCCL/gloo/c10d prefix -> ``Other``; a bare name that is no known
    collective -> None.
    """
    if not name:
        return None
    m = _NCCL_KIND_RE.match(name)
    prefixed = name.startswith(("gloo:", "nccl:", "c10d::"))
    if m:
        raw = m.group(1)
    elif prefixed:
        raw = name.split(":", 1)[1].lstrip(":")
    else:
        raw = name
    key = raw.strip().split(" ", 1)[0].lower().replace("_", "").replace("-", "")
    for suffix in ("coalesced", "intotensor", "tensor", "base"):
        key = key.replace(suffix, "")
    if key in _KIND_ALIASES:
        return _KIND_ALIASES[key]
    return "Other" if (m or prefixed) else None


def _cpu_comm_kind(name: str, coll_arg: str | None) -> str | None:
    if name == "record_param_comms":
        return (collective_kind(coll_arg) or "Other") if coll_arg else "Other"
    return collective_kind(name)


def kernel_category(name: str, kind: str = "kernel") -> str:
    """``compute``, ``communication``, ``memory`` or ``other`` (HTA 0.5's rules, module docstring)."""
    if _COMM_RE.match(name):
        return "communication"
    if kind in ("memcpy", "memset") or _MEMORY_RE.match(name):
        return "memory"
    if not _NONCOMPUTE_RE.match(name):
        return "compute"
    return "other"


# --------------------------------------------------------------------------------------------
# Parsing one file
# --------------------------------------------------------------------------------------------


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
                    c["nelems"].append(_int(a.get("In msg nelems")))
                    c["group"].append(_int(a.get("Group size")))
                    c["coll"].append(a.get("Collective name"))
        elif ph == "M" and d.get("name") == "thread_name":
            self.threads[(str(d.get("pid")), str(d.get("tid")))] = str(
                (d.get("args") or {}).get("name", "")
            )
        return None


def _int(x: Any) -> int | None:
    try:
        return int(x) if x is not None and x != "" else None
    except (TypeError, ValueError):
        return None


def _int_series(values: list, dtype: pl.DataType) -> pl.Series:
    """Integers as ``dtype``; anything else (strings, floats, None) -> converted where exact, else null."""
    try:
        return pl.Series(values, dtype=dtype)
    except (TypeError, ValueError, OverflowError, pl.exceptions.PolarsError):
        return pl.Series([_int(x) for x in values], dtype=dtype, strict=False)


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
class _One:
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


def _quality_row(source: str, check: str, action: str, detail: str, **counts: Any) -> dict:
    row = {k: None for k in QUALITY_SCHEMA}
    row.update(source=source, check=check, action=action, detail=detail, **counts)
    return row


def _parse_one(path: Path) -> _One:
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
    meta = {k: v for k, v in doc.items() if k != "traceEvents"}
    del doc
    q: list[dict] = []

    base = meta.get("baseTimeNanoseconds")
    if not isinstance(base, int):
        base = 0
        if cols.ts_min < _EPOCH_2001_US and cols.n_events:
            q.append(
                _quality_row(
                    src,
                    "clock",
                    "flagged",
                    "no baseTimeNanoseconds and timestamps are not Unix time: the trace cannot be "
                    "matched with a log or telemetry",
                )
            )

    rank = _rank_of(meta, path)

    def to_ns(col: str) -> pl.Expr:
        return (pl.col(col).cast(pl.Float64) * 1000.0).round(0).cast(pl.Int64) + base

    # GPU activity ------------------------------------------------------------------------
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
            _quality_row(
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
            _quality_row(
                src,
                "duplicate_events",
                "excluded",
                f"{n_before - raw.height} GPU events repeated (same stream, start, duration and "
                "name); one of each kept",
                n_samples=n_before - raw.height,
            )
        )
    uniq = raw.group_by("name").agg(pl.col("kind").first())
    names, kinds = uniq["name"].to_list(), uniq["kind"].to_list()
    info = pl.DataFrame(
        {
            "name": names,
            "category": [kernel_category(n, kd) for n, kd in zip(names, kinds, strict=True)],
            "matmul": [bool(_MATMUL_RE.search(n)) for n in names],
            "coll_name": [collective_kind(n) if _COMM_RE.match(n) else None for n in names],
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
    k = (
        raw.join(info, on="name", how="left")
        .join(launches, on="correlation", how="left")
        .with_columns(
            to_ns("ts").alias("start_ns"),
            (pl.col("dur") * 1000.0).round(0).cast(pl.Int64).alias("dur_ns"),
            pl.when(pl.col("launch_ts").is_not_null()).then(to_ns("launch_ts")).alias("launch_ns"),
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

    # Steps ---------------------------------------------------------------------------------
    s = cols.steps
    st = pl.DataFrame(
        {
            "where": pl.Series(s["where"], dtype=pl.String),
            "step": pl.Series(s["step"], dtype=pl.Int64),
            "ts": pl.Series(s["ts"], dtype=pl.Float64, strict=False),
            "dur": pl.Series(s["dur"], dtype=pl.Float64, strict=False),
        }
    ).with_columns(
        to_ns("ts").alias("start_ns"),
        (to_ns("ts") + (pl.col("dur") * 1000).round(0).cast(pl.Int64)).alias("end_ns"),
    )
    cpu_steps = st.filter(pl.col("where") == "cpu").sort("start_ns")
    dup = cpu_steps.height - cpu_steps["step"].n_unique() if cpu_steps.height else 0
    if dup:
        q.append(
            _quality_row(
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

    # Kernel -> step: the CPU step span that holds the launch call, else the GPU annotation span.
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
    kernels = k.select([pl.col(c).cast(t) for c, t in KERNEL_SCHEMA.items()]).sort("start_ns")

    # stream order check
    ov = (
        kernels.sort("stream", "start_ns")
        .with_columns(pl.col("end_ns").shift(1).over("stream").alias("_prev_end"))
        .filter(pl.col("start_ns") < pl.col("_prev_end") - _STREAM_OVERLAP_NS)
    )
    if ov.height:
        q.append(
            _quality_row(
                src,
                "stream_overlap",
                "flagged",
                f"{ov.height} GPU activities start more than 1 us before the previous one on the "
                f"same stream ends (first: stream {ov['stream'][0]}, {ov['name'][0][:60]!r}); "
                "timestamps suspect",
                n_samples=ov.height,
            )
        )

    steps = _steps_frame(cpu_steps, gpu_steps, kernels, rank)

    # CPU collectives -----------------------------------------------------------------------
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
            to_ns("ts").alias("start_ns"),
            (pl.col("dur") * 1000).round(0).cast(pl.Int64).alias("dur_ns"),
            pl.col("tid").replace_strict(threads, default=None).alias("thread"),
            pl.struct("name", "coll_arg")
            .map_elements(
                lambda r: _cpu_comm_kind(r["name"], r["coll_arg"]), return_dtype=pl.String
            )
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
    cpu_comms = cpu_comms.select([pl.col(c).cast(t) for c, t in CPU_COMM_SCHEMA.items()])

    if kernels.height == 0:
        q.append(
            _quality_row(
                src,
                "no_gpu_activity",
                "flagged",
                "no GPU kernels, copies or memsets (a CPU-only run, or CUDA activity was not "
                "recorded): no GPU time breakdown for this rank",
            )
        )
    if steps.height == 0:
        q.append(
            _quality_row(
                src,
                "no_profiler_steps",
                "flagged",
                "no ProfilerStep#N annotations (the profiler had no schedule / step() was not "
                "called): no per-step analyses for this rank",
            )
        )
    elif steps.height == 1:
        q.append(
            _quality_row(
                src,
                "one_profiler_step",
                "flagged",
                "one profiler step only: its GPU span has no next step to end at",
            )
        )
    start = (
        None if cols.n_events == 0 or math.isinf(cols.ts_min) else base + round(cols.ts_min * 1000)
    )
    end = None if start is None else base + round(cols.ts_max * 1000)
    return _One(src, meta, rank, kernels, steps, cpu_comms, cols.n_events, start, end, q)


def _rank_of(meta: dict, path: Path) -> int | None:
    di = meta.get("distributedInfo")
    if isinstance(di, dict) and _int(di.get("rank")) is not None:
        return _int(di.get("rank"))
    tp = meta.get("trainperf")
    if isinstance(tp, dict) and _int(tp.get("rank")) is not None:
        return _int(tp.get("rank"))
    m = _RANK_IN_NAME.search(path.name)
    return int(m.group(1)) if m else None


def _steps_frame(
    cpu_steps: pl.DataFrame, gpu_steps: pl.DataFrame, kernels: pl.DataFrame, rank: int | None
) -> pl.DataFrame:
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


# --------------------------------------------------------------------------------------------
# Sets of files
# --------------------------------------------------------------------------------------------


@dataclass
class TraceSet:
    """Profiler traces of one run, one file per rank, as polars frames.

    Attributes:
        ranks: one row per file (:data:`RANK_SCHEMA`).
        kernels: GPU activity of all ranks (:data:`KERNEL_SCHEMA`).
        steps: profiler steps of all ranks (:data:`STEP_SCHEMA`).
        cpu_comms: CPU-side collective calls (:data:`CPU_COMM_SCHEMA`).
        quality: data-quality rows (:data:`QUALITY_SCHEMA`).
        meta: rank -> the file's top-level keys other than ``traceEvents``.
        files: rank -> path of the file read for it.
        warnings: the warning texts emitted.
    """

    ranks: pl.DataFrame
    kernels: pl.DataFrame
    steps: pl.DataFrame
    cpu_comms: pl.DataFrame
    quality: pl.DataFrame
    meta: dict[int, dict] = field(default_factory=dict)
    files: dict[int, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def consistent(self) -> bool:
        """False when the files look like ranks of different runs (check ``mixed_runs``)."""
        return not (self.quality["check"] == "mixed_runs").any()

    @property
    def has_gpu_activity(self) -> bool:
        return self.kernels.height > 0


def _trace_files(source: str | os.PathLike | Iterable[str | os.PathLike]) -> list[Path]:
    if isinstance(source, (str, os.PathLike)):
        p = Path(source)
        if p.is_dir():
            files = sorted(
                f for f in p.iterdir() if f.is_file() and f.name.endswith((".json", ".json.gz"))
            )
            if not files:
                raise FileNotFoundError(f"{p}: no *.json or *.json.gz trace files")
            return files
        if not p.exists():
            raise FileNotFoundError(f"{p}: no such trace file or folder")
        return [p]
    return [Path(s) for s in source]


def read_trace(path: str | os.PathLike) -> TraceSet:
    """Read one trace file (a single rank) into a :class:`TraceSet`.

    Raises:
        FileNotFoundError: no such file.
        TraceFormatError: unreadable, truncated or invalid JSON (with the line), not a trace.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no such trace file")
    return _assemble([(p, _parse_one(p))])


def read_traces(
    source: str | os.PathLike | Sequence[str | os.PathLike], *, progress: bool = False
) -> TraceSet:
    """Read the traces of one run: a folder of ``*.json[.gz]``, one file, or a list of files.

    Each file is one rank (``distributedInfo.rank``, else ``trainperf.rank``, else ``rank<N>`` in
    the file name, else the next free number, flagged). A file that cannot be read is recorded in
    ``ranks`` (status ``error``) and ``quality`` (check ``read``, with the line) and costs no other
    file. The checks across files are in the module docstring.

    Args:
        source: folder, file or files.
        progress: print one line per file read.

    Returns:
        :class:`TraceSet` (frames sorted by rank and time).

    Raises:
        FileNotFoundError: the folder holds no trace, a path does not exist.
    """
    parsed: list[tuple[Path, _One | TraceFormatError]] = []
    for p in _trace_files(source):
        if not p.is_file():
            raise FileNotFoundError(f"{p}: no such trace file")
        try:
            one: _One | TraceFormatError = _parse_one(p)
        except TraceFormatError as exc:
            one = exc
        if progress:
            print(f"trainperf.trace: read {p}", flush=True)
        parsed.append((p, one))
    return _assemble(parsed)


def _assemble(parsed: list[tuple[Path, _One | TraceFormatError]]) -> TraceSet:
    quality: list[dict] = []
    rank_rows: list[dict] = []
    good: dict[int, _One] = {}
    used: set[int] = {o.rank for _, o in parsed if isinstance(o, _One) and o.rank is not None}
    for p, one in parsed:
        if isinstance(one, TraceFormatError):
            quality.append(
                _quality_row(str(p), "read", "parse_error", str(one), first_line=one.line)
            )
            rank_rows.append({"rank": None, "file": str(p), "status": "error"})
            continue
        quality.extend(one.quality)
        rank = one.rank
        if rank is None:
            rank = next(i for i in range(len(parsed) + len(used) + 1) if i not in used)
            used.add(rank)
            one.rank = rank
            one.kernels = one.kernels.with_columns(pl.lit(rank, pl.Int32).alias("rank"))
            one.steps = one.steps.with_columns(pl.lit(rank, pl.Int32).alias("rank"))
            one.cpu_comms = one.cpu_comms.with_columns(pl.lit(rank, pl.Int32).alias("rank"))
            if len(parsed) > 1:
                quality.append(
                    _quality_row(
                        one.path,
                        "rank_unknown",
                        "corrected",
                        f"no rank in the trace (distributedInfo) or its name; numbered {rank}",
                    )
                )
        row = _rank_row(one)
        if rank in good:
            quality.append(
                _quality_row(
                    one.path,
                    "duplicate_rank",
                    "excluded",
                    f"rank {rank} already read from {good[rank].path}; this file is left out "
                    "(two runs mixed in one folder?)",
                )
            )
            row["status"] = "excluded"
            rank_rows.append(row)
            continue
        good[rank] = one
        rank_rows.append(row)
    quality.extend(_cross_checks(good))
    out_q = (
        pl.DataFrame(quality, schema=QUALITY_SCHEMA)
        if quality
        else pl.DataFrame(schema=QUALITY_SCHEMA)
    )
    msgs = []
    for r in out_q.iter_rows(named=True):
        where = f"{r['source']}:{r['first_line']}" if r["first_line"] is not None else r["source"]
        msg = f"{where}: {r['detail']} ({r['check']}: {r['action']})"
        msgs.append(msg)
        warnings.warn(TraceWarning(msg), stacklevel=3)
    order = sorted(good)
    ranks = pl.DataFrame(rank_rows, schema=RANK_SCHEMA).sort(
        "rank", nulls_last=True, maintain_order=True
    )
    return TraceSet(
        ranks=ranks,
        kernels=_concat([good[r].kernels for r in order], KERNEL_SCHEMA),
        steps=_concat([good[r].steps for r in order], STEP_SCHEMA),
        cpu_comms=_concat([good[r].cpu_comms for r in order], CPU_COMM_SCHEMA),
        quality=out_q,
        meta={r: good[r].meta for r in order},
        files={r: good[r].path for r in order},
        warnings=msgs,
    )


def _concat(frames: list[pl.DataFrame], schema: dict) -> pl.DataFrame:
    frames = [f for f in frames if f.height]
    return pl.concat(frames) if frames else pl.DataFrame(schema=schema)


def _rank_row(one: _One) -> dict:
    di = (
        one.meta.get("distributedInfo") if isinstance(one.meta.get("distributedInfo"), dict) else {}
    )
    tp = one.meta.get("trainperf") if isinstance(one.meta.get("trainperf"), dict) else {}
    devs = one.meta.get("deviceProperties") or []
    dev_name = devs[0].get("name") if devs and isinstance(devs[0], dict) else None
    status = "ok"
    if one.kernels.height == 0:
        status = "no_gpu_activity"
    elif one.steps.height == 0:
        status = "no_profiler_steps"
    return {
        "rank": one.rank,
        "file": one.path,
        "status": status,
        "host": one.meta.get("host_name"),
        "device_name": dev_name,
        "backend": di.get("backend"),
        "world_size": _int(di.get("world_size", tp.get("world_size"))),
        "run_id": None if tp.get("run_id") is None else str(tp.get("run_id")),
        "start_ns": one.start_ns,
        "end_ns": one.end_ns,
        "n_events": one.n_events,
        "n_gpu_activities": one.kernels.height,
        "n_steps": one.steps.height,
    }


def _cross_checks(good: dict[int, _One]) -> list[dict]:
    if len(good) < 2:
        return []
    rows = [_rank_row(o) for o in good.values()]
    out = []
    first = good[min(good)].path
    run_ids = {r["run_id"] for r in rows if r["run_id"] is not None}
    if len(run_ids) > 1:
        out.append(
            _quality_row(
                first,
                "mixed_runs",
                "flagged",
                f"the files carry {len(run_ids)} different trainperf run ids ({', '.join(sorted(run_ids))}): "
                "ranks of different runs",
            )
        )
    sizes = {r["world_size"] for r in rows if r["world_size"] is not None}
    if len(sizes) > 1:
        out.append(
            _quality_row(
                first,
                "mixed_runs",
                "flagged",
                f"the files disagree on world_size ({sorted(sizes)}): ranks of different runs",
            )
        )
    spans = [(r["start_ns"], r["end_ns"], r["file"]) for r in rows if r["start_ns"] is not None]
    if len(spans) > 1:
        latest_start = max(s for s, _, _ in spans)
        earliest_end = min(e for _, e, _ in spans)
        if latest_start > earliest_end:
            late = max(spans)[2]
            out.append(
                _quality_row(
                    first,
                    "mixed_runs",
                    "flagged",
                    f"the profiled windows do not overlap in time ({late} starts "
                    f"{(latest_start - earliest_end) / 1e9:.1f} s after another rank's trace ends): "
                    "ranks of different runs",
                )
            )
    ranks = sorted(good)
    ws = next(iter(sizes)) if len(sizes) == 1 else None
    if ws is not None and ranks != list(range(ws)):
        missing = sorted(set(range(ws)) - set(ranks))
        if missing:
            out.append(
                _quality_row(
                    first,
                    "missing_ranks",
                    "flagged",
                    f"world_size {ws} but no trace for rank(s) {missing[:16]}",
                    n_series=len(missing),
                )
            )
    return out
