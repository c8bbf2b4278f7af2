"""Job statistics from Slurm accounting: what ran, how it ended, how long, on how many nodes.

Owns the analyses of the ``jobs`` and ``steps`` frames that :mod:`trainperf.slurm` reads (one row
per job record and per job step, columns :data:`trainperf.slurm.JOB_COLUMNS`): successful jobs, the
longest jobs and tasks, run-time distributions and tails, shares of jobs and GPU-hours by final
state and by job size, GPU-hours over time and occupancy (:mod:`trainperf.jobs.stats`), the
workload shares beside a cluster's published ones and a dump summary (:mod:`trainperf.jobs.marginals`), and
per-job GPU utilisation from DCGM telemetry (:mod:`trainperf.jobs.utilisation`). Every function
returns a polars frame; plotting is in :mod:`trainperf.report.charts`. Nothing here reads files.
"""

from trainperf.jobs.marginals import (
    ACCOUNTING_SUMMARY_SCHEMA,
    MARGINAL_METRICS,
    WORKLOAD_MARGINALS_SCHEMA,
    accounting_summary,
    published_marginals,
    workload_marginals,
)
from trainperf.jobs.stats import (
    FINAL_STATES,
    LONGEST_SCHEMA,
    RUNTIME_EDGES_LOG_S,
    RUNTIME_HISTOGRAM_SCHEMA,
    SIZE_BIN_DTYPE,
    SIZE_BINS,
    SUCCESSFUL_JOBS_SCHEMA,
    cluster_occupancy,
    gpu_hours_over_time,
    longest_job_and_task,
    longest_successful_job,
    runtime_distribution,
    runtime_ecdf,
    runtime_histogram,
    runtime_tails_by_size,
    share_by_size,
    share_by_state,
    size_bin,
    successful_jobs,
)
from trainperf.jobs.utilisation import GPU_UTIL_FIELD, gpu_utilisation_by_size, job_gpu_utilisation

__all__ = [
    "ACCOUNTING_SUMMARY_SCHEMA",
    "LONGEST_SCHEMA",
    "RUNTIME_HISTOGRAM_SCHEMA",
    "SUCCESSFUL_JOBS_SCHEMA",
    "WORKLOAD_MARGINALS_SCHEMA",
    "FINAL_STATES",
    "GPU_UTIL_FIELD",
    "RUNTIME_EDGES_LOG_S",
    "MARGINAL_METRICS",
    "SIZE_BINS",
    "SIZE_BIN_DTYPE",
    "accounting_summary",
    "cluster_occupancy",
    "gpu_hours_over_time",
    "gpu_utilisation_by_size",
    "job_gpu_utilisation",
    "longest_job_and_task",
    "longest_successful_job",
    "runtime_distribution",
    "runtime_ecdf",
    "runtime_histogram",
    "runtime_tails_by_size",
    "share_by_size",
    "share_by_state",
    "size_bin",
    "successful_jobs",
    "published_marginals",
    "workload_marginals",
]
