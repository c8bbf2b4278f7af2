"""MLPerf Training result logs (``:::MLLOG`` lines) in the MLCommons results layout.

What this package owns: reading MLPerf Training logs and results folders into typed polars frames,
checking every value it reads (a data-quality row and a warning naming the file and line for each
check that fires), timing runs and scoring systems by the MLPerf rules, and the training speed the
logs give (step times, throughput, MFU) and the hyperparameters they carry.

The MLLOG grammar, the compliance rulesets (convergence targets, progress keys, hyperparameter
rules), the number of runs a benchmark needs and the olympic scoring rule all come from the
``mlperf-logging`` package (github.com/mlcommons/logging).

Modules:

* :mod:`~trainperf.mlperf.parse`     one log file into events (:func:`parse_log`), line checks
* :mod:`~trainperf.mlperf.loader`    results folders into runs, events, quality (:func:`load_results`)
* :mod:`~trainperf.mlperf.scores`    MLPerf scores (:func:`score_runs`)
* :mod:`~trainperf.mlperf.throughput` step times, blocks, eval curves, throughput and MFU
* :mod:`~trainperf.mlperf.hyperparameters` logged hyperparameters, parallelism, what the rules fix
* :mod:`~trainperf.mlperf.convergence` the fixed convergence hyperparameters, across submissions
* :mod:`~trainperf.mlperf.precision` the datatype a run trained in, from its own log
* :mod:`~trainperf.mlperf.systems`   the cluster of a results folder's systems/*.json
* :mod:`~trainperf.mlperf.rules`     the rules read from mlperf-logging
* :mod:`~trainperf.mlperf.checks`    warning and error types, limits, value checks
"""

from __future__ import annotations

from trainperf.mlperf.checks import MLPerfLogError, MLPerfLogWarning
from trainperf.mlperf.convergence import convergence_hyperparameters, rules_sentences
from trainperf.mlperf.hyperparameters import hyperparameters, hyperparameters_long
from trainperf.mlperf.loader import (
    RUN_STATUSES,
    Results,
    find_result_files,
    load_results,
    quality_summary,
)
from trainperf.mlperf.parse import EVENT_SCHEMA, MLLOG_TOKEN, parse_log
from trainperf.mlperf.precision import (
    precision_from_log,
    precision_from_system_json,
    precision_of_runs,
)
from trainperf.mlperf.rules import (
    convergence_target,
    hyperparameter_rules,
    init_allowance_min,
    progress_key,
)
from trainperf.mlperf.scores import score_runs
from trainperf.mlperf.summary import scores_sentence, system_label
from trainperf.mlperf.systems import cluster_items, system_descriptions, system_table_rows
from trainperf.mlperf.throughput import (
    EVAL_CURVE_SCHEMA,
    STEP_TIMES_SCHEMA,
    blocks,
    eval_curve,
    runs_with_throughput,
    step_times,
    throughput,
)

__all__ = [
    "EVAL_CURVE_SCHEMA",
    "STEP_TIMES_SCHEMA",
    "EVENT_SCHEMA",
    "MLLOG_TOKEN",
    "MLPerfLogError",
    "MLPerfLogWarning",
    "RUN_STATUSES",
    "Results",
    "blocks",
    "convergence_target",
    "eval_curve",
    "find_result_files",
    "hyperparameter_rules",
    "init_allowance_min",
    "convergence_hyperparameters",
    "rules_sentences",
    "hyperparameters",
    "hyperparameters_long",
    "load_results",
    "parse_log",
    "precision_from_log",
    "precision_from_system_json",
    "precision_of_runs",
    "progress_key",
    "quality_summary",
    "runs_with_throughput",
    "score_runs",
    "cluster_items",
    "system_descriptions",
    "scores_sentence",
    "system_label",
    "system_table_rows",
    "step_times",
    "throughput",
]
