"""Telemetry join: each GPU event matched to the job running on its node, and what followed.

Input: :data:`trainperf.reliability.GPU_EVENT_SCHEMA` events (:func:`gpu_events`) and the
classified jobs (:func:`trainperf.reliability.classify`). An event belongs to a job when the
event's DCGM job label names the job, or else when the event's host is one of the job's nodes and
``start <= timestamp <= end`` (every GPU of the node counts, as sacct has no GPU index). An event
on a node with no job at that time is kept with a null job and the flag ``outside_job`` (a flag,
not a failure): it is a fact about the node, not about any job.
"""

from __future__ import annotations

import polars as pl

from trainperf.quality import QualityLog, empty_quality
from trainperf.reliability.events import ReliabilityWarning

__all__ = ["event_quality", "events_per_node", "events_vs_jobs"]

_FAILED = ("user_failure", "infra_failure", "timeout")


def events_vs_jobs(
    events: pl.DataFrame, classified: pl.DataFrame, *, window_h: float = 1.0
) -> pl.DataFrame:
    """Each event with its job and whether a job on that node failed within ``window_h`` after it.

    Returns:
        The event columns plus ``JobID`` (String, null outside any job), ``failure_class`` (of
        that job), ``job_end`` (Datetime UTC), ``failed_within_window`` (Boolean: a job on the
        event's node whose class is user/infra failure or timeout ended in ``[timestamp,
        timestamp + window_h]``), ``minutes_to_failure`` (Float64, to that job's end; null if
        none), ``outside_job`` (Boolean), sorted by host and time.
    """
    cols = ["JobID", "nodes", "start", "end", "failure_class"]
    jobs = classified.filter(pl.col("start").is_not_null() & pl.col("end").is_not_null()).select(
        cols
    )
    ev = events.with_row_index("_ev")
    per_host = jobs.explode("nodes").rename({"nodes": "hostname"})
    hit = ev.join(per_host, on="hostname", how="inner").filter(
        (pl.col("timestamp") >= pl.col("start")) & (pl.col("timestamp") <= pl.col("end"))
    )
    if "job_id" in ev.columns:
        lab = (
            ev.filter(pl.col("job_id").is_not_null())
            .join(jobs.drop("nodes"), left_on="job_id", right_on="JobID", how="inner")
            .with_columns(JobID=pl.col("job_id"))
        )
        hit = pl.concat(
            [lab.select(hit.columns), hit.filter(~pl.col("_ev").is_in(lab["_ev"].implode()))],
            how="vertical",
        )
    own = (
        hit.sort("start", descending=True)
        .group_by("_ev")
        .agg(
            pl.col("JobID").first(), pl.col("failure_class").first(), job_end=pl.col("end").first()
        )
    )
    w = pl.duration(seconds=int(window_h * 3600))
    failed = ev.join(per_host, on="hostname", how="inner").filter(
        pl.col("failure_class").cast(pl.String).is_in(list(_FAILED))
        & (pl.col("end") >= pl.col("timestamp"))
        & (pl.col("end") <= pl.col("timestamp") + w)
        & (pl.col("start") <= pl.col("timestamp") + w)
    )
    first_fail = failed.group_by("_ev").agg(
        minutes_to_failure=((pl.col("end") - pl.col("timestamp")).dt.total_seconds() / 60).min()
    )
    out = (
        ev.join(own, on="_ev", how="left")
        .join(first_fail, on="_ev", how="left")
        .with_columns(
            failed_within_window=pl.col("minutes_to_failure").is_not_null(),
            outside_job=pl.col("JobID").is_null(),
            minutes_to_failure=pl.col("minutes_to_failure").cast(pl.Float64),
        )
    )
    return out.sort(["hostname", "timestamp"]).drop("_ev")


def events_per_node(matched: pl.DataFrame) -> pl.DataFrame:
    """Events per node (:func:`events_vs_jobs` output summed).

    Returns:
        ``hostname``, ``n_events``, ``n_xid``, ``n_ecc_remap`` (ECC DBE and row-remap events),
        ``n_throttle``, ``n_infra`` (infrastructure evidence), ``n_outside_job``,
        ``n_followed_by_failure`` (Int64), ``first_event``, ``last_event`` (Datetime UTC); most
        infrastructure events first.
    """
    k = pl.col("kind")
    return (
        matched.group_by("hostname")
        .agg(
            n_events=pl.len().cast(pl.Int64),
            n_xid=(k == "xid").sum().cast(pl.Int64),
            n_ecc_remap=k.is_in(["ecc_dbe", "row_remap_uncorrectable", "row_remap_failure"])
            .sum()
            .cast(pl.Int64),
            n_throttle=(k == "throttle").sum().cast(pl.Int64),
            n_infra=pl.col("infra").sum().cast(pl.Int64),
            n_outside_job=pl.col("outside_job").sum().cast(pl.Int64),
            n_followed_by_failure=pl.col("failed_within_window").sum().cast(pl.Int64),
            first_event=pl.col("timestamp").min(),
            last_event=pl.col("timestamp").max(),
        )
        .sort(["n_infra", "n_events", "hostname"], descending=[True, True, False])
    )


def event_quality(matched: pl.DataFrame, source: str = "<dcgm>") -> pl.DataFrame:
    """A ``outside_job`` quality row (action ``flagged``, with a warning) when infrastructure
    events fall outside every job: they enter no job's class and no rate.

    Returns:
        :data:`trainperf.quality.QUALITY_SCHEMA` rows (empty when nothing fired).
    """
    out = matched.filter(pl.col("outside_job") & pl.col("infra"))
    if out.height == 0:
        return empty_quality()
    log = QualityLog(ReliabilityWarning)
    first = out.row(0, named=True)
    log.add(
        source,
        "outside_job",
        "flagged",
        f"{out.height} infrastructure GPU event(s) on nodes running no job, first on "
        f"{first['hostname']} at {first['timestamp']:%Y-%m-%d %H:%M} UTC: counted per node, not in the job rates",
        n_samples=out.height,
        n_gpus=out.select("hostname", "gpu").unique().height,
    )
    return log.frame()
