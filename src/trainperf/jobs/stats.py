"""Job statistics over the ``jobs`` (and ``steps``) frames of :class:`trainperf.slurm.SacctData`.

Every function takes frames with the columns of :data:`trainperf.slurm.JOB_COLUMNS` (``state``,
``exit_code``, ``elapsed_s``, ``n_nodes``, ``n_gpus``, ``gpu_hours``, ``start``, ``end``...) and returns
a frame; plotting is left to :mod:`trainperf.report.charts`.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

__all__ = [
    "LONGEST_SCHEMA",
    "RUNTIME_HISTOGRAM_SCHEMA",
    "SUCCESSFUL_JOBS_SCHEMA",
    "FINAL_STATES",
    "RUNTIME_EDGES_LOG_S",
    "SIZE_BINS",
    "SIZE_BIN_DTYPE",
    "cluster_occupancy",
    "gpu_hours_over_time",
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
]

#: Job size bins in nodes, as used by the SAKURAONE workload study (1, 2, 3–4, 5–16, 17–32, >32).
SIZE_BINS: tuple[str, ...] = ("1", "2", "3-4", "5-16", "17-32", ">32")
_SIZE_EDGES = (1, 2, 4, 16, 32)  # upper bounds (inclusive) of the first five bins
SIZE_BIN_DTYPE = pl.Enum(list(SIZE_BINS))

#: States after which a job record no longer changes (https://slurm.schedmd.com/job_state_codes.html).
FINAL_STATES = frozenset(
    "BOOT_FAIL CANCELLED COMPLETED DEADLINE FAILED NODE_FAIL OUT_OF_MEMORY PREEMPTED TIMEOUT "
    "REVOKED SPECIAL_EXIT REQUEUED".split()
)


def size_bin(n_nodes: pl.Expr | str = "n_nodes") -> pl.Expr:
    """Expression giving the job-size bin (:data:`SIZE_BINS`, an ordered ``Enum``) of a node count.

    1 → ``"1"``, 2 → ``"2"``, 3–4 → ``"3-4"``, 5–16 → ``"5-16"``, 17–32 → ``"17-32"``, 33+ → ``">32"``;
    null or < 1 → null.
    """
    n = pl.col(n_nodes) if isinstance(n_nodes, str) else n_nodes
    expr = pl.when(n.is_null() | (n < 1)).then(None)
    for edge, label in zip(_SIZE_EDGES, SIZE_BINS, strict=False):
        expr = expr.when(n <= edge).then(pl.lit(label))
    return expr.otherwise(pl.lit(SIZE_BINS[-1])).cast(SIZE_BIN_DTYPE)


def finished_jobs(jobs: pl.DataFrame) -> pl.DataFrame:
    return jobs.filter(pl.col("state").is_in(list(FINAL_STATES)))


def _successful_expr() -> pl.Expr:
    return (pl.col("state") == "COMPLETED") & (pl.col("exit_code").fill_null(0) == 0)


SUCCESSFUL_JOBS_SCHEMA: dict[str, pl.DataType] = {
    "n_jobs": pl.Int64,
    "n_successful": pl.Int64,
    "successful_share": pl.Float64,
    "successful_gpu_hours": pl.Float64,
}
"""Columns of :func:`successful_jobs`."""


def successful_jobs(jobs: pl.DataFrame) -> pl.DataFrame:
    """Total number of successful jobs.

    A job row (job, array task or het component) is successful when its state is ``COMPLETED`` and its
    exit code is 0 (or unknown). Only finished records count (state in ``FINAL_STATES``).

    Returns:
        :data:`SUCCESSFUL_JOBS_SCHEMA`.
        One row: ``n_jobs`` (UInt32/Int64, finished job rows), ``n_successful`` (Int64),
        ``successful_share`` (Float64, 0–1), ``successful_gpu_hours`` (Float64, GPU·h).
    """
    f = finished_jobs(jobs)
    n = f.height
    ok = f.filter(_successful_expr())
    return pl.DataFrame(
        {
            "n_jobs": [n],
            "n_successful": [ok.height],
            "successful_share": [ok.height / n if n else None],
            "successful_gpu_hours": [float(ok.get_column("gpu_hours").sum() or 0.0)],
        },
        schema=SUCCESSFUL_JOBS_SCHEMA,
    )


LONGEST_SCHEMA: dict[str, pl.DataType] = {
    "what": pl.Utf8,
    "JobID": pl.Utf8,
    "name": pl.Utf8,
    "state": pl.Utf8,
    "n_nodes": pl.Int64,
    "n_gpus": pl.Int64,
    "start": pl.Datetime("us", "UTC"),
    "end": pl.Datetime("us", "UTC"),
    "elapsed_s": pl.Int64,
    "elapsed_days": pl.Float64,
}
"""Columns of :func:`longest_job_and_task` and :func:`longest_successful_job`."""


def longest_job_and_task(jobs: pl.DataFrame, steps: pl.DataFrame | None = None) -> pl.DataFrame:
    """The longest job and the longest task.

    *Job*: the job row (job, array task or het component) with the largest ``elapsed_s``.
    *Task*: the job step started by ``srun`` (``step_kind == "srun"``, i.e. not ``.batch``/``.extern``)
    with the largest ``elapsed_s``. Ties: the earliest start.

    Returns:
        :data:`LONGEST_SCHEMA`.
        Up to two rows with columns ``what`` ("job" / "task"), ``JobID``, ``name``, ``state``,
        ``n_nodes``, ``n_gpus``, ``start``, ``end`` (Datetime UTC), ``elapsed_s`` (Int64),
        ``elapsed_days`` (Float64, ``elapsed_s / 86400``).
    """
    out = []
    for what, df in (("job", jobs), ("task", steps)):
        if df is None:
            continue
        if what == "task":
            df = df.filter(pl.col("step_kind") == "srun")
        df = df.filter(pl.col("elapsed_s").is_not_null())
        if df.height == 0:
            continue
        best = df.sort(["elapsed_s", "start"], descending=[True, False], nulls_last=True).head(1)
        out.append(_longest_row(best, what))
    return pl.concat(out) if out else pl.DataFrame(schema=LONGEST_SCHEMA)


def _longest_row(best: pl.DataFrame, what: str) -> pl.DataFrame:
    return best.select(
        what=pl.lit(what),
        JobID=pl.col("JobID") if "JobID" in best.columns else pl.lit(None, pl.Utf8),
        name=pl.col("JobName") if "JobName" in best.columns else pl.lit(None, pl.Utf8),
        state=pl.col("state"),
        n_nodes=pl.col("n_nodes"),
        n_gpus=pl.col("n_gpus"),
        start=pl.col("start"),
        end=pl.col("end"),
        elapsed_s=pl.col("elapsed_s"),
        elapsed_days=pl.col("elapsed_s") / 86400.0,
    ).cast(LONGEST_SCHEMA)


def longest_successful_job(jobs: pl.DataFrame) -> pl.DataFrame:
    """The successful job that ran longest: the talk's "longest job" (a cancelled or timed-out run
    may have run longer without finishing its work).

    Successful as in :func:`successful_jobs` (state ``COMPLETED``, exit code 0 or unknown, finished);
    the job row (job, array task or het component) with the largest ``elapsed_s``; ties: the earliest
    start.

    Returns:
        :data:`LONGEST_SCHEMA`.
        At most one row, the columns of :func:`longest_job_and_task` with ``what`` =
        ``"successful job"``; no row when no job succeeded.
    """
    ok = finished_jobs(jobs).filter(_successful_expr() & pl.col("elapsed_s").is_not_null())
    if ok.height == 0:
        return pl.DataFrame(schema=LONGEST_SCHEMA)
    best = ok.sort(["elapsed_s", "start"], descending=[True, False], nulls_last=True).head(1)
    return _longest_row(best, "successful job")


def runtime_distribution(
    jobs: pl.DataFrame,
    quantiles: Sequence[float] = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0),
    *,
    successful_only: bool = True,
    by_size: bool = False,
) -> pl.DataFrame:
    """Quantiles of the run time (``elapsed_s``) of successful jobs (or of all finished jobs).

    Quantiles use linear interpolation between order statistics.

    Returns:
        Columns ``size_bin`` (Enum, only with ``by_size``), ``quantile`` (Float64, 0–1), ``n_jobs``
        (Int64), ``elapsed_s`` (Float64 seconds), ``elapsed_h`` (Float64 hours).
    """
    df = finished_jobs(jobs).filter(pl.col("elapsed_s").is_not_null())
    if successful_only:
        df = df.filter(_successful_expr())
    keys = ["size_bin"] if by_size else []
    if by_size:
        df = df.with_columns(size_bin=size_bin("n_nodes"))
    parts = []
    groups = df.partition_by(keys, as_dict=True, maintain_order=True) if keys else {(): df}
    for key, g in groups.items():
        vals = g.get_column("elapsed_s").cast(pl.Float64)
        for q in quantiles:
            row = {"quantile": float(q), "n_jobs": g.height}
            row["elapsed_s"] = vals.quantile(q, interpolation="linear") if g.height else None
            if by_size:
                row["size_bin"] = key[0]
            parts.append(row)
    schema = {"quantile": pl.Float64, "n_jobs": pl.Int64, "elapsed_s": pl.Float64}
    if by_size:
        schema = {"size_bin": SIZE_BIN_DTYPE, **schema}
    out = pl.DataFrame(parts, schema=schema) if parts else pl.DataFrame(schema=schema)
    out = out.with_columns(elapsed_h=pl.col("elapsed_s") / 3600.0)
    return out.sort(keys + ["quantile"]) if keys else out


_DEFAULT_EDGES_S = (0, 60, 600, 3600, 6 * 3600, 86400, 3 * 86400, 7 * 86400, 14 * 86400, 30 * 86400)


RUNTIME_HISTOGRAM_SCHEMA: dict[str, pl.DataType] = {
    "bin_lo_s": pl.Float64,
    "bin_hi_s": pl.Float64,
    "n_jobs": pl.Int64,
    "job_share": pl.Float64,
}
"""Columns of :func:`runtime_histogram`."""


def runtime_histogram(
    jobs: pl.DataFrame,
    edges_s: Sequence[float] = _DEFAULT_EDGES_S,
    *,
    successful_only: bool = True,
) -> pl.DataFrame:
    """Counts of job run times in bins ``[lo, hi)`` (seconds); the last bin is ``[last edge, ∞)``.

    Returns:
        :data:`RUNTIME_HISTOGRAM_SCHEMA`.
        Columns ``bin_lo_s`` (Float64), ``bin_hi_s`` (Float64, null for the open last bin),
        ``n_jobs`` (Int64), ``job_share`` (Float64, 0–1 of the counted jobs).
    """
    edges = sorted(float(e) for e in edges_s)
    df = finished_jobs(jobs).filter(pl.col("elapsed_s").is_not_null())
    if successful_only:
        df = df.filter(_successful_expr())
    vals = df.get_column("elapsed_s").to_list()
    total = len(vals)
    rows = []
    for k, lo in enumerate(edges):
        hi = edges[k + 1] if k + 1 < len(edges) else None
        cnt = sum(1 for v in vals if v >= lo and (hi is None or v < hi))
        rows.append(
            {
                "bin_lo_s": lo,
                "bin_hi_s": hi,
                "n_jobs": cnt,
                "job_share": cnt / total if total else None,
            }
        )
    return pl.DataFrame(
        rows,
        schema=RUNTIME_HISTOGRAM_SCHEMA,
    )


def _shares(df: pl.DataFrame, key: str) -> pl.DataFrame:
    total_jobs = df.height
    total_gh = float(df.get_column("gpu_hours").fill_null(0).sum() or 0.0)
    out = df.group_by(key).agg(
        n_jobs=pl.len().cast(pl.Int64),
        gpu_hours=pl.col("gpu_hours").fill_null(0).sum().cast(pl.Float64),
        n_unknown_gpu_hours=pl.col("gpu_hours").is_null().sum().cast(pl.Int64),
    )
    return out.with_columns(
        job_share=pl.col("n_jobs") / total_jobs if total_jobs else pl.lit(None, pl.Float64),
        gpu_hours_share=pl.col("gpu_hours") / total_gh
        if total_gh > 0
        else pl.lit(None, pl.Float64),
    )


def share_by_state(jobs: pl.DataFrame, *, final_only: bool = True) -> pl.DataFrame:
    """Share of jobs and of GPU-hours by final state.

    Args:
        final_only: keep only records in a final state (drops RUNNING, PENDING, ...).

    Returns:
        One row per ``state`` (Utf8), sorted by ``gpu_hours`` descending: ``n_jobs`` (Int64),
        ``job_share`` (Float64, 0–1), ``gpu_hours`` (Float64, GPU·h; unknown counted as 0),
        ``gpu_hours_share`` (Float64, 0–1), ``n_unknown_gpu_hours`` (Int64, rows whose GPU-hours are
        unknown).
    """
    df = finished_jobs(jobs) if final_only else jobs
    out = _shares(df, "state")
    return out.select(
        "state", "n_jobs", "job_share", "gpu_hours", "gpu_hours_share", "n_unknown_gpu_hours"
    ).sort(["gpu_hours", "n_jobs", "state"], descending=[True, True, False])


def share_by_size(jobs: pl.DataFrame, *, final_only: bool = True) -> pl.DataFrame:
    """Share of jobs and GPU-hours by job size in nodes (:data:`SIZE_BINS`).

    Returns:
        One row per ``size_bin`` (Enum, in bin order; bins without jobs have 0): ``n_jobs`` (Int64),
        ``job_share``, ``gpu_hours`` (GPU·h), ``gpu_hours_share``, ``cum_job_share``,
        ``cum_gpu_hours_share`` (Float64, running totals from the smallest bin: e.g. the share of
        jobs with ≤ 4 nodes is ``cum_job_share`` at ``"3-4"``), ``n_unknown_gpu_hours`` (Int64).
        Rows without a node count are left out.
    """
    df = (finished_jobs(jobs) if final_only else jobs).with_columns(size_bin=size_bin("n_nodes"))
    df = df.filter(pl.col("size_bin").is_not_null())
    agg = _shares(df, "size_bin")
    full = pl.DataFrame({"size_bin": pl.Series(SIZE_BINS, dtype=SIZE_BIN_DTYPE)}).join(
        agg, on="size_bin", how="left"
    )
    full = full.with_columns(
        pl.col("n_jobs", "n_unknown_gpu_hours").fill_null(0),
        pl.col("gpu_hours", "job_share", "gpu_hours_share").fill_null(0.0),
    ).sort("size_bin")
    return full.with_columns(
        cum_job_share=pl.col("job_share").cum_sum(),
        cum_gpu_hours_share=pl.col("gpu_hours_share").cum_sum(),
    ).select(
        "size_bin",
        "n_jobs",
        "job_share",
        "gpu_hours",
        "gpu_hours_share",
        "cum_job_share",
        "cum_gpu_hours_share",
        "n_unknown_gpu_hours",
    )


def runtime_tails_by_size(
    jobs: pl.DataFrame,
    quantiles: Sequence[float] = (0.5, 0.9, 0.99),
    over_days: Sequence[float] = (1, 7),
    *,
    final_only: bool = True,
) -> pl.DataFrame:
    """Run-time tails per job-size bin.

    Returns:
        One row per ``size_bin`` (Enum) with jobs: ``n_jobs`` (Int64), ``elapsed_p{100q}_s`` (Float64,
        linear interpolation; e.g. ``elapsed_p50_s``, ``elapsed_p99_s``), ``elapsed_max_s`` (Int64) and
        ``share_over_{d}d`` (Float64, 0–1: share of the bin's jobs with ``elapsed_s`` **strictly
        greater** than ``d`` days, e.g. ``share_over_7d`` = "ran for more than a week").
    """
    df = (finished_jobs(jobs) if final_only else jobs).filter(pl.col("elapsed_s").is_not_null())
    df = df.with_columns(size_bin=size_bin("n_nodes")).filter(pl.col("size_bin").is_not_null())
    aggs = [pl.len().cast(pl.Int64).alias("n_jobs")]
    for q in quantiles:
        label = f"{q * 100:g}".replace(".", "_")
        aggs.append(
            pl.col("elapsed_s")
            .cast(pl.Float64)
            .quantile(q, interpolation="linear")
            .alias(f"elapsed_p{label}_s")
        )
    aggs.append(pl.col("elapsed_s").max().cast(pl.Int64).alias("elapsed_max_s"))
    for d in over_days:
        label = f"{d:g}".replace(".", "_")
        aggs.append(
            (pl.col("elapsed_s") > d * 86400).mean().cast(pl.Float64).alias(f"share_over_{label}d")
        )
    return df.group_by("size_bin").agg(aggs).sort("size_bin")


def gpu_hours_over_time(
    jobs: pl.DataFrame,
    every: str = "1d",
    *,
    by_size: bool = True,
    final_only: bool = False,
) -> pl.DataFrame:
    """GPU-hours per time period (and job-size bin), each job split over the periods it overlaps.

    A job occupies ``[start, end)``; for a running job (``end`` null) ``end = start + elapsed_s``.
    Its GPU-hours in a period are ``n_gpus × overlap / 3600``. Periods are UTC calendar periods of
    length ``every`` (a polars duration string: ``"1h"``, ``"1d"``, ``"1w"``, ``"1mo"``).
    Jobs without start, GPUs or end are left out. The sum over periods equals ``n_gpus × (end - start)``,
    which differs from ``gpu_hours`` only for suspended jobs.

    Returns:
        Columns ``period_start`` (Datetime UTC), ``size_bin`` (Enum, with ``by_size``),
        ``gpu_hours`` (Float64, GPU·h), ``n_jobs`` (Int64, jobs overlapping the period), sorted.
    """
    df = finished_jobs(jobs) if final_only else jobs
    df = df.with_columns(
        _end=pl.coalesce(pl.col("end"), pl.col("start") + pl.duration(seconds=pl.col("elapsed_s")))
    ).filter(
        pl.col("start").is_not_null()
        & pl.col("_end").is_not_null()
        & (pl.col("_end") > pl.col("start"))
        & (pl.col("n_gpus").fill_null(0) > 0)
    )
    keys = ["period_start"] + (["size_bin"] if by_size else [])
    schema = {"period_start": pl.Datetime("us", "UTC")}
    if by_size:
        schema["size_bin"] = SIZE_BIN_DTYPE
    schema.update({"gpu_hours": pl.Float64, "n_jobs": pl.Int64})
    if df.height == 0:
        return pl.DataFrame(schema=schema)
    df = df.with_columns(size_bin=size_bin("n_nodes")).with_columns(
        period_start=pl.datetime_ranges(
            pl.col("start").dt.truncate(every), pl.col("_end"), interval=every, closed="left"
        )
    )
    df = df.explode("period_start").with_columns(
        period_end=pl.col("period_start").dt.offset_by(every)
    )
    overlap = (
        pl.min_horizontal("period_end", "_end") - pl.max_horizontal("period_start", "start")
    ).dt.total_microseconds() / 3.6e9
    df = df.with_columns(gpu_hours=pl.col("n_gpus") * overlap).filter(pl.col("gpu_hours") > 0)
    out = df.group_by(keys).agg(gpu_hours=pl.col("gpu_hours").sum(), n_jobs=pl.len().cast(pl.Int64))
    return out.sort(keys).cast(schema)


def runtime_ecdf(
    jobs: pl.DataFrame, *, successful_only: bool = True, by_size: bool = True
) -> pl.DataFrame:
    """Empirical CDF of job run times (for plotting on a log time axis).

    Jobs with ``elapsed_s`` null or 0 (never ran) are left out, since a log axis cannot show them.

    Returns:
        Columns ``group`` (Utf8: ``"all sizes"`` plus, with ``by_size``, the size bins as
        ``"1 node"``, ``"2 nodes"``, ``"3-4 nodes"``...), ``elapsed_s`` (Float64 seconds, sorted within
        a group), ``elapsed_h`` (Float64 hours), ``ecdf`` (Float64, share of the group's jobs with a run
        time <= ``elapsed_s``), ``n_jobs`` (Int64, jobs in the group).
    """
    df = finished_jobs(jobs).filter(pl.col("elapsed_s").fill_null(0) > 0)
    if successful_only:
        df = df.filter(_successful_expr())
    df = df.select(pl.col("elapsed_s").cast(pl.Float64), size_bin=size_bin("n_nodes"))
    groups = [df.with_columns(group=pl.lit("all sizes"))]
    if by_size:
        label = pl.col("size_bin").cast(pl.Utf8) + pl.when(pl.col("size_bin") == "1").then(
            pl.lit(" node")
        ).otherwise(pl.lit(" nodes"))
        groups.append(df.filter(pl.col("size_bin").is_not_null()).with_columns(group=label))
    out = pl.concat(groups).sort(["group", "elapsed_s"])
    out = out.with_columns(
        n_jobs=pl.len().over("group").cast(pl.Int64),
        _rank=pl.int_range(1, pl.len() + 1).over("group"),
    ).with_columns(ecdf=pl.col("_rank") / pl.col("n_jobs"))
    return out.select(
        pl.col("group"),
        "elapsed_s",
        elapsed_h=pl.col("elapsed_s") / 3600.0,
        ecdf=pl.col("ecdf").cast(pl.Float64),
        n_jobs="n_jobs",
    )


def cluster_occupancy(
    jobs: pl.DataFrame, *, cluster_nodes: int, gpus_per_node: int, every: str = "1mo"
) -> pl.DataFrame:
    """Allocated GPU-hours per period against the cluster's capacity.

    Args:
        cluster_nodes, gpus_per_node: the cluster (e.g. 100 and 8).
        every: polars duration string of the periods (``"1d"``, ``"1w"``, ``"1mo"``).

    Returns:
        Columns ``period_start`` (Datetime UTC), ``period_end`` (Datetime UTC), ``gpu_hours``
        (Float64, from :func:`gpu_hours_over_time`, all jobs incl. running ones),
        ``capacity_gpu_hours`` (Float64, ``cluster_nodes * gpus_per_node * period hours``) and
        ``occupancy`` (Float64, 0-1: allocated, not utilised; above 1 means the dump and the cluster
        size disagree).

    Raises:
        ValueError: a non-positive cluster size.
    """
    if cluster_nodes <= 0 or gpus_per_node <= 0:
        raise ValueError("cluster_nodes and gpus_per_node must be positive")
    ov = gpu_hours_over_time(jobs, every, by_size=False)
    ov = ov.with_columns(period_end=pl.col("period_start").dt.offset_by(every))
    hours = (pl.col("period_end") - pl.col("period_start")).dt.total_seconds() / 3600.0
    return ov.select(
        "period_start",
        "period_end",
        "gpu_hours",
        capacity_gpu_hours=(hours * cluster_nodes * gpus_per_node).cast(pl.Float64),
    ).with_columns(occupancy=pl.col("gpu_hours") / pl.col("capacity_gpu_hours"))


#: Log-spaced run-time bin edges for :func:`runtime_histogram` (seconds): 10 s to 10**6.75 s (65 days),
#: four bins per decade (10, 17.8, 31.6, 56.2, 100, ...).
RUNTIME_EDGES_LOG_S: tuple[float, ...] = tuple(10 ** (1 + k / 4) for k in range(24))
