"""Batch runs: one parameterized notebook executed over a grid of parameter sets.

A grid is a YAML file::

    notebook: ../notebooks/mlperf_runs.ipynb   # the notebook to execute
    output: ../_output/batch/mlperf_systems    # runs/, summary.parquet, summary.csv go here
    workers: 2                                 # local worker processes (default: min(4, CPUs))
    parameters:                                # common to every run
      figures_dir: ""
    discover:                                  # one run per MLPerf result folder, at any depth
      kind: mlperf_results
      path: ../data/mlperf
      parameter: mlperf_path
    runs:                                      # and/or explicit parameter sets
      - name: one-system                       # optional; gives the readable part of the slug
        mlperf_path: ../data/mlperf/v4.1
    executor:                                  # optional; default: local worker processes
      kind: slurm
      partition: debug
      timeout_min: 30

Paths
    Every relative path in the file is relative to **the folder of the YAML file**: ``notebook``,
    ``output``, ``discover.path``, and the values of parameters whose name ends in ``_path`` or ``_dir``
    (an empty string stays empty: ``figures_dir: ""`` means "export no figures"). The notebook
    receives them as absolute paths and runs with its own folder as working folder, as in
    ``trainperf report``.

Runs and slugs
    Each parameter set (the common ``parameters`` updated with the run's own) is one run, named by a
    slug: a readable prefix (the run's ``name``, or else its parameter values) and the first 10 hex
    digits of the SHA-256 of the parameters as written in the file (JSON, keys sorted), e.g.
    ``v4.1-NVIDIA-eos_n64_ngc24.09_nemo-gpt3-3f0c9a1b2e``. The same parameters give the same slug on
    every machine and checkout; two runs with the same parameters are refused.

Outputs, per run, in ``<output>/runs/``
    ``<slug>.ipynb`` the executed notebook (``<slug>.failed.ipynb`` when a cell failed),
    ``<slug>.parquet`` the notebook's results table (passed to it as ``results_path`` when the notebook
    declares that parameter), and ``<slug>.json``, the done-marker written last (status, duration,
    error). All three are written to a temporary name and renamed, so a killed batch leaves no
    half-written file; temporary files left by a killed run are removed when that run starts again.

Resume
    A run is skipped (status ``skipped``, outputs reused) when its marker says ``success``, the notebook
    file is unchanged (its sha256 is in the marker) and its
    notebook and results table exist; ``force=True`` (``--force``) runs everything again. Failed runs
    are always run again.

Summary
    ``<output>/summary.parquet`` and ``summary.csv``, one row per run (see :func:`run_batch`).

Executors
    ``local`` (default): ``workers`` processes (:class:`concurrent.futures.ProcessPoolExecutor`), each
    running papermill, which starts its own kernel. ``slurm``: one Slurm job per run, submitted through
    submitit as a job array (``executor: {kind: slurm, partition: ..., timeout_min: ...}``; at most
    ``workers`` array tasks run at once); the jobs execute :func:`execute_run` with this same Python
    on the cluster, so the output folder must be on a file system the nodes share. ``submitit_local``
    runs the same submitit path as local processes (for trying a grid without a cluster).

Command line: ``trainperf batch GRID.yaml [--workers N] [--force] [--executor local|slurm]``.

Modules: :mod:`~trainperf.report.batch.grid` (the grid file), :mod:`~trainperf.report.batch.execute`
(one run), :mod:`~trainperf.report.batch.executors` (local processes, Slurm through submitit),
:mod:`~trainperf.report.batch.summary` (the summary frame), :mod:`~trainperf.report.batch.runner`
(:func:`run_batch`; :func:`plan_batch` for a caller that executes the runs itself),
:mod:`~trainperf.report.batch.cli` (``trainperf batch``).
"""

from __future__ import annotations

from trainperf.report.batch.cli import add_batch_arguments, main, run_from_args
from trainperf.report.batch.execute import execute_run
from trainperf.report.batch.grid import (
    EXECUTOR_KINDS,
    RESULTS_PARAMETER,
    STATUSES,
    Grid,
    GridError,
    Run,
    discover_mlperf,
    load_grid,
    slugify_run,
    validate_grid,
)
from trainperf.report.batch.runner import (
    PlannedBatch,
    collect_results,
    plan_batch,
    run_batch,
)

__all__ = [
    "EXECUTOR_KINDS",
    "RESULTS_PARAMETER",
    "STATUSES",
    "Grid",
    "GridError",
    "PlannedBatch",
    "Run",
    "add_batch_arguments",
    "collect_results",
    "discover_mlperf",
    "execute_run",
    "load_grid",
    "main",
    "plan_batch",
    "run_batch",
    "run_from_args",
    "slugify_run",
    "validate_grid",
]
