"""Altair charts behind one theme, their offline display and their export, in English and Japanese.

Every chart of the report is a function that takes the frames the analysis modules return and gives
back an Altair chart; no analysis happens here and none in the notebooks. Modules:

* :mod:`~trainperf.report.charts.theme`: palette (Okabe-Ito), fonts, benchmark names, honest axes;
* :mod:`~trainperf.report.charts.i18n`: figure languages (:func:`localize`);
* :mod:`~trainperf.report.charts.fonts`: the CJK font for Japanese figures, found through fontconfig;
* :mod:`~trainperf.report.charts.export`: :func:`save_chart` (SVG once, PNG and PDF from it, unchanged
  figures skipped);
* :mod:`~trainperf.report.charts.display`: :func:`enable`, notebook display as ``image/svg+xml``;
* one module per chapter: :mod:`~.mlperf`, :mod:`~.eos`, :mod:`~.memory`, :mod:`~.telemetry`,
  :mod:`~.operations`, :mod:`~.trace`.
"""

from __future__ import annotations

import altair as alt

from trainperf.report.charts.display import enable
from trainperf.report.charts.energy import energy_vs_time
from trainperf.report.charts.eos import (
    comparison_ratio_by_gpus,
    efficiency_ratio_by_scale,
    mfu_by_scale,
    time_to_train_by_scale,
)
from trainperf.report.charts.export import EXPORTS, Exported, render_svg, save_chart
from trainperf.report.charts.fonts import FIGURE_LANGS, figure_languages, find_cjk_font
from trainperf.report.charts.i18n import FONTS, JA, localize, translate
from trainperf.report.charts.memory import memory_per_gpu, memory_wall
from trainperf.report.charts.mlperf import eval_curve, time_to_train_runs
from trainperf.report.charts.operations import (
    slurm_gpu_hours_over_time,
    slurm_runtime_distribution,
    slurm_share_by_size,
    slurm_share_by_state,
)
from trainperf.report.charts.record import record_results
from trainperf.report.charts.reliability import (
    reliability_ettr_curve,
    reliability_failure_rate_by_size,
    reliability_mttf,
)
from trainperf.report.charts.scaling import gpu_hours_by_scale
from trainperf.report.charts.telemetry import (
    telemetry_activity,
    telemetry_heatmap,
    telemetry_phase_distributions,
    telemetry_rail_throughput,
)
from trainperf.report.charts.theme import BENCHMARK_NAMES, FONT, PALETTE, THEME, benchmark_name
from trainperf.report.charts.trace import trace_step_breakdown, trace_vs_telemetry

__all__ = [
    "BENCHMARK_NAMES",
    "EXPORTS",
    "FIGURE_LANGS",
    "FONT",
    "FONTS",
    "JA",
    "PALETTE",
    "THEME",
    "Exported",
    "alt",
    "benchmark_name",
    "comparison_ratio_by_gpus",
    "efficiency_ratio_by_scale",
    "enable",
    "energy_vs_time",
    "eval_curve",
    "figure_languages",
    "find_cjk_font",
    "gpu_hours_by_scale",
    "localize",
    "memory_per_gpu",
    "memory_wall",
    "mfu_by_scale",
    "record_results",
    "reliability_ettr_curve",
    "reliability_failure_rate_by_size",
    "reliability_mttf",
    "render_svg",
    "save_chart",
    "slurm_gpu_hours_over_time",
    "slurm_runtime_distribution",
    "slurm_share_by_size",
    "slurm_share_by_state",
    "telemetry_activity",
    "telemetry_heatmap",
    "telemetry_phase_distributions",
    "telemetry_rail_throughput",
    "time_to_train_by_scale",
    "time_to_train_runs",
    "trace_step_breakdown",
    "trace_vs_telemetry",
    "translate",
]
