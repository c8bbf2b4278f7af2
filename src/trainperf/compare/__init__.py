"""Per-GPU efficiency of an evaluated system (A) against a reference system (B, e.g. NVIDIA Eos).

Every ratio is oriented as **cost of A / cost of B**: above 1, the evaluated system needs more GPU
time (is less efficient per GPU) than the reference. The comparison of ``comparison.csv``
(:func:`cluster_comparison`, :func:`log_comparison`) is made at **equal GPU count** and, by
default, in the **same MLPerf round**; its ``ratio`` is the per-GPU GPU-time ratio
``(n·T)_A / (n·T)_B``, which at equal counts is the time ratio ``T_A / T_B``.

This module only re-exports; the logic lives in:

* :mod:`~trainperf.compare.ratios`: the ratio formulas, linear extrapolation and power-law
  interpolation of a reference's time to train;
* :mod:`~trainperf.compare.published`: published rows (``data/reference/published_results.csv``);
* :mod:`~trainperf.compare.evaluated`: the evaluated system's logs against the reference's
  (round choice, equal GPU count, interpolation and bounds, the summary sentence);
* :mod:`~trainperf.compare.checks`: consistency checks of published rows, candidate meanings of
  a quoted ratio;
* :mod:`~trainperf.compare.paper`: the SAKURAONE paper's table (the demo's case study);
* :mod:`~trainperf.compare.scaling`: strong-scaling efficiency of one system across node counts;
* :mod:`~trainperf.compare.comparison_words`: the comparison in sentences (summary, scaling,
  throughput, round warnings).
* :mod:`~trainperf.compare.system_json`: each evaluated result's own systems JSON in the comparison.
"""

from __future__ import annotations

from trainperf.benchmarks import BENCHMARK_NAMES
from trainperf.compare.checks import (
    CANDIDATES_SCHEMA,
    CHECKS_SCHEMA,
    caveats_by_scale,
    consistency_checks,
    ratio_candidates,
)
from trainperf.compare.comparison_words import (
    comparison_summary,
    own_scaling_summary,
    round_warnings,
    throughput_summary,
)
from trainperf.compare.evaluated import (
    COMPARISON_SCHEMA,
    SIDE_SCHEMA,
    ComparisonWarning,
    cluster_comparison,
    log_comparison,
    reference_round_for,
    reference_side,
    side_from_published,
    side_from_results,
)
from trainperf.compare.paper import (
    PAPER_SCHEMA,
    PAPER_TABLE,
    paper_comparison_table,
    talk_ratio_placement,
)
from trainperf.compare.published import (
    GPT3_EVAL_INTERVAL_TOKENS,
    GPT3_MIN_TOKENS_GBS2048,
    PUBLISHED_SCHEMA,
    load_published_results,
    load_reference,
    select_row,
)
from trainperf.compare.ratios import (
    compare_rows,
    extrapolate_linear,
    gpu_minutes,
    gpu_time_ratio,
    implied_minutes_for_ratio,
    interpolate_power_law,
    mfu_ratio,
    step_throughput_ratio,
    time_to_train_ratio,
    token_normalized_ratio,
)
from trainperf.compare.scaling import SCALING_SCHEMA, scaling_points, strong_scaling

__all__ = [
    "BENCHMARK_NAMES",
    "CANDIDATES_SCHEMA",
    "CHECKS_SCHEMA",
    "COMPARISON_SCHEMA",
    "GPT3_EVAL_INTERVAL_TOKENS",
    "GPT3_MIN_TOKENS_GBS2048",
    "PAPER_SCHEMA",
    "PAPER_TABLE",
    "PUBLISHED_SCHEMA",
    "SCALING_SCHEMA",
    "SIDE_SCHEMA",
    "ComparisonWarning",
    "caveats_by_scale",
    "cluster_comparison",
    "compare_rows",
    "comparison_summary",
    "own_scaling_summary",
    "consistency_checks",
    "extrapolate_linear",
    "gpu_minutes",
    "gpu_time_ratio",
    "implied_minutes_for_ratio",
    "interpolate_power_law",
    "load_published_results",
    "load_reference",
    "log_comparison",
    "mfu_ratio",
    "paper_comparison_table",
    "ratio_candidates",
    "scaling_points",
    "reference_round_for",
    "reference_side",
    "round_warnings",
    "select_row",
    "side_from_published",
    "side_from_results",
    "step_throughput_ratio",
    "strong_scaling",
    "talk_ratio_placement",
    "throughput_summary",
    "time_to_train_ratio",
    "token_normalized_ratio",
]
