"""Where the time of a step goes: analyses of a :class:`~trainperf.trace.schema.TraceSet` (frames only).

Every function returns a polars frame; times are seconds (``*_s``) unless named ``*_ns`` (Unix ns)
or ``*_us``; shares are ratios 0-1 (``*_share``). Nothing here plots. One module per family:

- :mod:`.sweep`        the time split under all of them: which categories run at each instant
- :mod:`.steps`        per window, per profiled step, per rank: :func:`window_breakdown`,
  :func:`step_breakdown`, :func:`rank_summary`
- :mod:`.whole_trace`  per rank over the traced span, as HolisticTraceAnalysis defines them
  (``engine="auto"|"hta"|"frames"``): :func:`temporal_breakdown`, :func:`comm_comp_overlap`,
  :func:`kernel_type_breakdown`, :func:`idle_breakdown`
- :mod:`.kernels`      communication by collective and top kernels: :func:`collective_breakdown`,
  :func:`top_kernels`
- :mod:`.joins`        with the MLPerf log and DCGM telemetry: :func:`match_log`,
  :func:`match_telemetry`, :func:`steps_with_telemetry`
"""

from trainperf.trace.analysis.joins import (
    MATCH_TELEMETRY_SCHEMA,
    match_log,
    match_telemetry,
    steps_with_telemetry,
)
from trainperf.trace.analysis.kernels import collective_breakdown, top_kernels
from trainperf.trace.analysis.steps import rank_summary, step_breakdown, window_breakdown
from trainperf.trace.analysis.sweep import BREAKDOWN_CATEGORIES
from trainperf.trace.analysis.whole_trace import (
    ENGINE_NAMES,
    IDLE_CATEGORY_NAMES,
    OVERLAP_SCHEMA,
    comm_comp_overlap,
    idle_breakdown,
    kernel_type_breakdown,
    temporal_breakdown,
)
from trainperf.trace.names import short_kernel_name

__all__ = [
    "MATCH_TELEMETRY_SCHEMA",
    "ENGINE_NAMES",
    "IDLE_CATEGORY_NAMES",
    "OVERLAP_SCHEMA",
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
