"""What the trace reader returns: :class:`TraceSet`, the schemas of its frames, its error and warning.

Data-quality rows use the one schema of every reader, :data:`trainperf.quality.QUALITY_SCHEMA`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from trainperf.errors import DataWarning, InputError
from trainperf.quality import QUALITY_SCHEMA

__all__ = [
    "CPU_COMM_SCHEMA",
    "KERNEL_SCHEMA",
    "RANK_SCHEMA",
    "QUALITY_SCHEMA",
    "STEP_SCHEMA",
    "TraceFormatError",
    "TraceSet",
    "TraceWarning",
    "quality_row",
]


class TraceFormatError(InputError):
    """A trace file that cannot be read (truncated, invalid JSON, not a Kineto trace).

    Attributes:
        source: the file.
        line: 1-based line of the problem (JSON errors), else None.
    """

    def __init__(self, message: str, source: str, line: int | None = None) -> None:
        super().__init__(message, source, line)


class TraceWarning(DataWarning):
    """Damage the reader handled (checks in :mod:`trainperf.trace.read`); names the file and line."""


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


@dataclass
class TraceSet:
    """Profiler traces of one run, one file per rank, as polars frames.

    Attributes:
        ranks: one row per file (:data:`RANK_SCHEMA`).
        kernels: GPU activity of all ranks (:data:`KERNEL_SCHEMA`).
        steps: profiler steps of all ranks (:data:`STEP_SCHEMA`).
        cpu_comms: CPU-side collective calls (:data:`CPU_COMM_SCHEMA`).
        quality: data-quality rows (:data:`trainperf.quality.QUALITY_SCHEMA`).
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
        """True when some rank has GPU kernels, copies or memsets."""
        return self.kernels.height > 0


def quality_row(source: str, check: str, action: str, detail: str, **counts: Any) -> dict:
    """One data-quality row (:data:`QUALITY_SCHEMA` keys; counts such as ``n_samples`` by name)."""
    row = {k: None for k in QUALITY_SCHEMA}
    row.update(source=source, check=check, action=action, detail=detail, **counts)
    return row
