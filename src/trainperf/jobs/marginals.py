"""The workload shares a workload study publishes (SAKURAONE's, arXiv 2604.13600), computed from a
dump and put beside a cluster's published values, and a one-row summary of a dump."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from trainperf.jobs.stats import (
    finished_jobs,
    runtime_tails_by_size,
    share_by_size,
    share_by_state,
    successful_jobs,
)
from trainperf.tables import read_table

__all__ = [
    "ACCOUNTING_SUMMARY_SCHEMA",
    "MARGINAL_METRICS",
    "WORKLOAD_MARGINALS_SCHEMA",
    "accounting_summary",
    "published_marginals",
    "workload_marginals",
]

#: The workload shares :func:`workload_marginals` computes, in its row order: shares 0-1 of
#: finished job records or of their GPU-hours (the metrics a workload study such as SAKURAONE's,
#: arXiv 2604.13600 section 4.1, publishes). Published values of a cluster are data:
#: ``data/reference/workload_marginals.csv``, read by :func:`published_marginals`.
MARGINAL_METRICS: tuple[str, ...] = (
    "cancelled_gpu_hours_share",
    "failed_job_share",
    "failed_gpu_hours_share",
    "nodes_1_job_share",
    "nodes_1_gpu_hours_share",
    "nodes_le4_job_share",
    "nodes_le4_gpu_hours_share",
    "nodes_ge17_job_share",
    "nodes_ge17_gpu_hours_share",
    "nodes_17_32_over_7d_share",
)


def published_marginals(system: str, path: str | Path | None = None) -> dict[str, float]:
    """The workload shares published for ``system``, from the reference table.

    Args:
        system: the ``system`` of the rows (the bundled table has ``SAKURAONE``).
        path: a table of one's own in the same layout (None: ``data/reference/workload_marginals.csv``,
            columns ``system``, ``metric`` (one of :data:`MARGINAL_METRICS`), ``share`` (0-1),
            ``source``).

    Returns:
        ``{metric: share}`` (shares 0-1), in the table's order.

    Raises:
        ValueError: no row of ``system``, an unknown metric, a duplicate, or a share outside 0-1.
    """
    t = read_table("workload_marginals", path).filter(pl.col("system") == system)
    if t.height == 0:
        raise ValueError(f"workload_marginals: no published shares of {system!r}")
    out: dict[str, float] = {}
    for r in t.iter_rows(named=True):
        m, v = r["metric"], r["share"]
        if m not in MARGINAL_METRICS:
            raise ValueError(
                f"workload_marginals: {system} {m!r} is not one of {', '.join(MARGINAL_METRICS)}"
            )
        if m in out:
            raise ValueError(f"workload_marginals: {system} {m} given twice")
        if v is None or not 0.0 <= float(v) <= 1.0:
            raise ValueError(f"workload_marginals: {system} {m} share {v!r} is not within 0-1")
        out[m] = float(v)
    return out


_MARGINAL_TEXT = {
    "cancelled_gpu_hours_share": "GPU-hours of CANCELLED jobs",
    "failed_job_share": "jobs that FAILED",
    "failed_gpu_hours_share": "GPU-hours of FAILED jobs",
    "nodes_1_job_share": "jobs on 1 node",
    "nodes_1_gpu_hours_share": "GPU-hours of 1-node jobs",
    "nodes_le4_job_share": "jobs on at most 4 nodes",
    "nodes_le4_gpu_hours_share": "GPU-hours of jobs on at most 4 nodes",
    "nodes_ge17_job_share": "jobs on 17 or more nodes",
    "nodes_ge17_gpu_hours_share": "GPU-hours of jobs on 17 or more nodes",
    "nodes_17_32_over_7d_share": "17-32-node jobs that ran more than 7 days",
}


WORKLOAD_MARGINALS_SCHEMA: dict[str, pl.DataType] = {
    "metric": pl.Utf8,
    "description": pl.Utf8,
    "value": pl.Float64,
    "published": pl.Float64,
    "difference_pp": pl.Float64,
}
"""Columns of :func:`workload_marginals`."""


def workload_marginals(
    jobs: pl.DataFrame, published: dict[str, float] | None = None
) -> pl.DataFrame:
    """The workload shares of :data:`MARGINAL_METRICS`, computed from a ``jobs`` frame.

    Shares are over finished job records (states in :data:`FINAL_STATES`), as in
    :func:`share_by_state`, :func:`share_by_size` and :func:`runtime_tails_by_size`; job-size shares
    leave out records without a node count.

    Args:
        published: a cluster's published values to put beside (:func:`published_marginals`);
            None or ``{}``: none (the ``published`` column is null).

    Returns:
        One row per metric of :data:`MARGINAL_METRICS`, in that order: ``metric`` (Utf8),
        ``description`` (Utf8), ``value`` (Float64, 0-1; null when the data have no such jobs),
        ``published`` (Float64, 0-1 or null), ``difference_pp`` (Float64, percentage points,
        ``100 * (value - published)``): :data:`WORKLOAD_MARGINALS_SCHEMA`.
    """
    published = {} if published is None else published
    st = {r["state"]: r for r in share_by_state(jobs).iter_rows(named=True)}
    sz = {str(r["size_bin"]): r for r in share_by_size(jobs).iter_rows(named=True)}
    tails = {
        str(r["size_bin"]): r
        for r in runtime_tails_by_size(jobs, quantiles=(), over_days=(7,)).iter_rows(named=True)
    }

    def get(d: dict, key: str, col: str) -> float | None:
        r = d.get(key)
        return None if r is None else r[col]

    def total(cols: Sequence[str], col: str) -> float | None:
        vals = [get(sz, c, col) for c in cols]
        return None if not sz else float(sum(v or 0.0 for v in vals))

    values = {
        "cancelled_gpu_hours_share": get(st, "CANCELLED", "gpu_hours_share") if st else None,
        "failed_job_share": (get(st, "FAILED", "job_share") or 0.0) if st else None,
        "failed_gpu_hours_share": (get(st, "FAILED", "gpu_hours_share") or 0.0) if st else None,
        "nodes_1_job_share": total(["1"], "job_share"),
        "nodes_1_gpu_hours_share": total(["1"], "gpu_hours_share"),
        "nodes_le4_job_share": total(["1", "2", "3-4"], "job_share"),
        "nodes_le4_gpu_hours_share": total(["1", "2", "3-4"], "gpu_hours_share"),
        "nodes_ge17_job_share": total(["17-32", ">32"], "job_share"),
        "nodes_ge17_gpu_hours_share": total(["17-32", ">32"], "gpu_hours_share"),
        "nodes_17_32_over_7d_share": get(tails, "17-32", "share_over_7d"),
    }
    rows = []
    for key in MARGINAL_METRICS:
        v, p = values[key], published.get(key)
        rows.append(
            {
                "metric": key,
                "description": _MARGINAL_TEXT[key],
                "value": v,
                "published": p,
                "difference_pp": 100.0 * (v - p) if v is not None and p is not None else None,
            }
        )
    return pl.DataFrame(rows, schema=WORKLOAD_MARGINALS_SCHEMA)


ACCOUNTING_SUMMARY_SCHEMA: dict[str, pl.DataType] = {
    "first_start": pl.Datetime("us", "UTC"),
    "last_end": pl.Datetime("us", "UTC"),
    "n_job_records": pl.Int64,
    "n_finished": pl.Int64,
    "n_successful": pl.Int64,
    "successful_share": pl.Float64,
    "n_array_tasks": pl.Int64,
    "n_never_started": pl.Int64,
    "n_users": pl.Int64,
    "n_steps": pl.Int64,
    "gpu_hours": pl.Float64,
    "successful_gpu_hours": pl.Float64,
}
"""Columns of :func:`accounting_summary`."""


def accounting_summary(jobs: pl.DataFrame, steps: pl.DataFrame | None = None) -> pl.DataFrame:
    """One-row overview of a dump: period, counts, GPU-hours and successful jobs.

    Returns:
        Columns ``first_start``, ``last_end`` (Datetime UTC), ``n_job_records`` (Int64, all job
        rows), ``n_finished`` (Int64, rows in a final state), ``n_successful`` (Int64, COMPLETED with
        exit code 0, see :func:`successful_jobs`), ``successful_share`` (Float64, of finished),
        ``n_array_tasks`` (Int64), ``n_never_started`` (Int64, finished without a start time),
        ``n_users`` (Int64, distinct ``User``; null without that column), ``n_steps`` (Int64; null
        without ``steps``), ``gpu_hours`` (Float64, GPU·h of finished jobs) and
        ``successful_gpu_hours`` (Float64): :data:`ACCOUNTING_SUMMARY_SCHEMA`.
    """
    ok = successful_jobs(jobs).row(0, named=True)
    fin = finished_jobs(jobs)
    return pl.DataFrame(
        {
            "first_start": [jobs.get_column("start").min()],
            "last_end": [jobs.get_column("end").max()],
            "n_job_records": [jobs.height],
            "n_finished": [fin.height],
            "n_successful": [ok["n_successful"]],
            "successful_share": [ok["successful_share"]],
            "n_array_tasks": [int((jobs.get_column("kind") == "array_task").sum())],
            "n_never_started": [int(fin.get_column("start").is_null().sum())],
            "n_users": [jobs.get_column("User").n_unique() if "User" in jobs.columns else None],
            "n_steps": [steps.height if steps is not None else None],
            "gpu_hours": [float(fin.get_column("gpu_hours").fill_null(0).sum() or 0.0)],
            "successful_gpu_hours": [ok["successful_gpu_hours"]],
        },
        schema=ACCOUNTING_SUMMARY_SCHEMA,
    )
