"""Per-job GPU utilisation: DCGM samples joined with each job's nodes and time window."""

from __future__ import annotations

import polars as pl

from trainperf.jobs.stats import size_bin

__all__ = ["GPU_UTIL_FIELD", "gpu_utilisation_by_size", "job_gpu_utilisation"]

#: DCGM field of the GPU utilisation (NVML "GPU utilization", integer percent 0-100; field id 203).
GPU_UTIL_FIELD = "DCGM_FI_DEV_GPU_UTIL"
_GPU_UTIL_FIELD_ID = 203


def _job_gpu_samples(jobs: pl.DataFrame, dcgm: pl.DataFrame, field: str) -> pl.DataFrame:
    """(JobID, n_nodes, hostname, gpu, timestamp, value) for every sample inside a job's window."""
    for c in ("timestamp", "hostname", "value"):
        if c not in dcgm.columns:
            raise ValueError(f"DCGM frame lacks column {c!r} (see trainperf.dcgm.SCHEMA)")
    for c in ("JobID", "nodes", "start"):
        if c not in jobs.columns:
            raise ValueError(f"jobs frame lacks column {c!r} (see trainperf.slurm.JOB_COLUMNS)")
    sel = pl.col("field") == field if "field" in dcgm.columns else pl.lit(False)
    if field == GPU_UTIL_FIELD and "field_id" in dcgm.columns:
        sel = sel | (pl.col("field_id") == _GPU_UTIL_FIELD_ID)
    gpu = pl.col("gpu") if "gpu" in dcgm.columns else pl.lit(None, pl.Int32)
    samples = dcgm.filter(sel & pl.col("value").is_not_null()).select(
        "timestamp", "hostname", gpu=gpu, value=pl.col("value").cast(pl.Float64)
    )
    end = pl.coalesce(pl.col("end"), pl.col("start") + pl.duration(seconds=pl.col("elapsed_s")))
    win = (
        jobs.filter(pl.col("start").is_not_null())
        .select("JobID", "n_nodes", "nodes", "start", _end=end)
        .filter(pl.col("_end").is_not_null())
        .explode("nodes")
        .rename({"nodes": "hostname"})
        .filter(pl.col("hostname").is_not_null())
        .sort("hostname", "start")
    )
    overlap = win.select(
        (pl.col("start") < pl.col("_end").shift(1).over("hostname")).fill_null(False).any()
    ).item()
    if overlap:
        # shared nodes: every job window on a host gets the host's samples (interval join)
        joined = samples.join(win, on="hostname", how="inner").filter(
            (pl.col("timestamp") >= pl.col("start")) & (pl.col("timestamp") < pl.col("_end"))
        )
    else:
        # exclusive nodes: at most one job per host at a time, so a backward as-of join is exact
        joined = (
            samples.sort("timestamp")
            .join_asof(
                win.sort("start"),
                left_on="timestamp",
                right_on="start",
                by="hostname",
                strategy="backward",
                check_sortedness=False,  # both sides sorted on their key above
            )
            .filter(pl.col("JobID").is_not_null() & (pl.col("timestamp") < pl.col("_end")))
        )
    return joined.select(
        "JobID", "n_nodes", "hostname", "gpu", "timestamp", "value", "start", "_end"
    )


def job_gpu_utilisation(
    jobs: pl.DataFrame,
    dcgm: pl.DataFrame,
    *,
    field: str = GPU_UTIL_FIELD,
    low_threshold: float = 20.0,
) -> pl.DataFrame:
    """Per-job GPU utilisation from DCGM samples, joined on the job's nodes and time window.

    A sample (``hostname``, ``gpu``, ``timestamp``, ``value``) belongs to a job when its host is in
    the job's ``nodes`` and ``start <= timestamp < end`` (``end`` of a running job: ``start +
    elapsed_s``). Every GPU of the node is attributed to the job, which is exact for whole-node
    allocations (the usual 8-GPU LLM job); on shared nodes sacct has no GPU index, so a node's GPUs
    are given to every job on it (sacct records no GPU index). With regular sampling, a share
    of samples is a share of time: ``low_share`` is the "time below 20 %" of the SAKURAONE study, and
    ``util_mean`` is the per-job mean that Princeton jobstats reports (``avg_over_time`` per GPU,
    averaged over GPUs when every GPU has the same number of samples).

    Args:
        jobs: :attr:`SacctData.jobs` (``JobID``, ``nodes``, ``start``, ``end``, ``elapsed_s``,
            ``n_nodes``).
        dcgm: long DCGM frame (:data:`trainperf.dcgm.SCHEMA`: ``timestamp`` Datetime UTC,
            ``hostname``, ``gpu``, ``field``, ``value``); rows of other fields are ignored.
        field: DCGM field name; the default ``DCGM_FI_DEV_GPU_UTIL`` (also matched by field id 203)
            is in percent 0-100.
        low_threshold: the "low utilisation" bound, in the field's unit (20 = 20 %).

    Returns:
        One row per job with at least one sample, sorted by ``JobID``: ``JobID`` (Utf8), ``n_nodes``
        (Int64), ``n_hosts_seen`` (UInt32/Int64, hosts with samples), ``n_gpus_seen`` (Int64,
        distinct host/GPU pairs), ``n_samples`` (Int64), ``util_median`` (Float64, median over all
        samples), ``util_mean`` (Float64), ``low_share`` (Float64, 0-1, samples ``< low_threshold``),
        ``first_sample`` / ``last_sample`` (Datetime UTC), ``interval_s`` (Float64, median time
        between consecutive samples of one GPU), ``window_s`` (Float64, the job's ``end - start``)
        and ``coverage`` (Float64, 0-1: ``(last_sample - first_sample + interval_s) / window_s``,
        capped at 1; the share of the job's run time that the telemetry spans, gaps inside not
        subtracted; null with one sample per GPU). Jobs without samples are absent (no telemetry
        is not zero utilisation).

    Raises:
        ValueError: a frame without the columns named above.
    """
    s = _job_gpu_samples(jobs, dcgm, field).sort("JobID", "hostname", "gpu", "timestamp")
    s = s.with_columns(
        _dt_s=pl.col("timestamp").diff().over("JobID", "hostname", "gpu").dt.total_microseconds()
        / 1e6
    )
    out = s.group_by("JobID").agg(
        n_nodes=pl.col("n_nodes").first().cast(pl.Int64),
        n_hosts_seen=pl.col("hostname").n_unique().cast(pl.Int64),
        n_gpus_seen=pl.struct("hostname", "gpu").n_unique().cast(pl.Int64),
        n_samples=pl.len().cast(pl.Int64),
        util_median=pl.col("value").median(),
        util_mean=pl.col("value").mean(),
        low_share=(pl.col("value") < low_threshold).mean().cast(pl.Float64),
        first_sample=pl.col("timestamp").min(),
        last_sample=pl.col("timestamp").max(),
        interval_s=pl.col("_dt_s").median().cast(pl.Float64),
        window_s=(pl.col("_end").first() - pl.col("start").first()).dt.total_microseconds() / 1e6,
    )
    span = (pl.col("last_sample") - pl.col("first_sample")).dt.total_microseconds() / 1e6
    covered = (span + pl.col("interval_s")) / pl.col("window_s")
    out = out.with_columns(
        coverage=pl.when(pl.col("interval_s").is_not_null() & (pl.col("window_s") > 0))
        .then(pl.min_horizontal(covered, pl.lit(1.0)))
        .cast(pl.Float64)
    )
    return out.sort("JobID")


def gpu_utilisation_by_size(
    jobs: pl.DataFrame,
    dcgm: pl.DataFrame,
    *,
    field: str = GPU_UTIL_FIELD,
    low_threshold: float = 20.0,
) -> pl.DataFrame:
    """GPU utilisation per job-size bin, over all samples of the bin's jobs (the SAKURAONE table).

    Same join as :func:`job_gpu_utilisation`.

    Returns:
        One row per ``size_bin`` (Enum, :data:`SIZE_BINS` order) with samples: ``n_jobs`` (Int64, jobs
        with samples), ``n_samples`` (Int64), ``util_median`` (Float64), ``low_share`` (Float64, 0-1).
    """
    s = _job_gpu_samples(jobs, dcgm, field).with_columns(size_bin=size_bin("n_nodes"))
    return (
        s.filter(pl.col("size_bin").is_not_null())
        .group_by("size_bin")
        .agg(
            n_jobs=pl.col("JobID").n_unique().cast(pl.Int64),
            n_samples=pl.len().cast(pl.Int64),
            util_median=pl.col("value").median(),
            low_share=(pl.col("value") < low_threshold).mean().cast(pl.Float64),
        )
        .sort("size_bin")
    )
