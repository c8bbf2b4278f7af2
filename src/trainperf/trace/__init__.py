"""PyTorch profiler (Kineto) traces: where the time of a training step goes on the GPU.

Input kind: Chrome-trace JSON files written by ``torch.profiler`` (``export_chrome_trace``,
``tensorboard_trace_handler``), one per rank, ``.json`` or ``.json.gz``. This subpackage owns
reading them (with damage checks), the analyses of one or several ranks (time split per step,
communication by collective, communication/computation overlap, idle time, top kernels), the
joins with the MLPerf log and with DCGM telemetry of the same seconds, the optional
HolisticTraceAnalysis engine, and the profiler schedule the benchmarks use to write traces.
Analyses return polars frames; plotting is left to :mod:`trainperf.report.charts`.

Modules:

- :mod:`trainperf.trace.read`      reader of a run's files: :func:`read_trace`, :func:`read_traces`
  -> :class:`TraceSet`, with the checks across files
- :mod:`trainperf.trace.parse`     one file: the Kineto format, the checks of one file
- :mod:`trainperf.trace.names`     kernel categories, collectives, short kernel names
- :mod:`trainperf.trace.schema`    :class:`TraceSet`, the frames' schemas, error and warning
- :mod:`trainperf.trace.analysis`  analyses, one module per family (frames engine; HTA's
  definitions for the whole-trace ones)
- :mod:`trainperf.trace.hta`       HolisticTraceAnalysis behind ``engine="hta"`` (optional extra ``[trace]``)
- :mod:`trainperf.capture.profile`   ``torch.profiler`` schedule for training loops (:class:`StepProfiler`)
- :mod:`trainperf.capture.parallel`  a small GPT with tensor, pipeline and data parallelism that writes
  MLPerf events and one trace per rank (GPU with NCCL, or CPU with gloo)

Public functions:

- reading: :func:`read_trace`, :func:`read_traces`, :func:`kernel_category`, :func:`collective_kind`
- per step: :func:`step_breakdown`, :func:`rank_summary`, :func:`window_breakdown`
- per rank, as HolisticTraceAnalysis defines them (``engine="auto"|"hta"|"frames"``):
  :func:`temporal_breakdown`, :func:`kernel_type_breakdown`, :func:`comm_comp_overlap`,
  :func:`idle_breakdown`
- communication and kernels: :func:`collective_breakdown`, :func:`top_kernels`,
  :func:`short_kernel_name`
- joins: :func:`match_log` (MLPerf ``tracked_stats`` and phases, per-step model FLOP/s and MFU),
  :func:`match_telemetry` (DCGM samples against the trace over the same windows),
  :func:`steps_with_telemetry` (DCGM values per step)
- HTA: :func:`hta_available`
"""

from trainperf.trace.analysis import (
    ENGINE_NAMES,
    IDLE_CATEGORY_NAMES,
    MATCH_TELEMETRY_SCHEMA,
    OVERLAP_SCHEMA,
    collective_breakdown,
    comm_comp_overlap,
    idle_breakdown,
    kernel_type_breakdown,
    match_log,
    match_telemetry,
    rank_summary,
    step_breakdown,
    steps_with_telemetry,
    temporal_breakdown,
    top_kernels,
    window_breakdown,
)
from trainperf.trace.hta import available as hta_available
from trainperf.trace.names import COLLECTIVES, collective_kind, kernel_category, short_kernel_name
from trainperf.trace.read import read_trace, read_traces
from trainperf.trace.schema import TraceFormatError, TraceSet, TraceWarning

__all__ = [
    "MATCH_TELEMETRY_SCHEMA",
    "ENGINE_NAMES",
    "IDLE_CATEGORY_NAMES",
    "OVERLAP_SCHEMA",
    "COLLECTIVES",
    "TraceFormatError",
    "TraceSet",
    "TraceWarning",
    "collective_breakdown",
    "collective_kind",
    "comm_comp_overlap",
    "hta_available",
    "idle_breakdown",
    "kernel_category",
    "kernel_type_breakdown",
    "match_log",
    "match_telemetry",
    "rank_summary",
    "read_trace",
    "read_traces",
    "short_kernel_name",
    "step_breakdown",
    "steps_with_telemetry",
    "temporal_breakdown",
    "top_kernels",
    "window_breakdown",
]
