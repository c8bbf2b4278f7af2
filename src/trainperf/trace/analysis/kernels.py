"""Communication time by collective, and the kernels with the most GPU time."""

from __future__ import annotations

import polars as pl

from trainperf.trace.names import short_kernel_name
from trainperf.trace.schema import TraceSet

__all__ = ["collective_breakdown", "top_kernels"]


def collective_breakdown(traces: TraceSet, *, by_step: bool = False) -> pl.DataFrame:
    """Communication time by collective kind, per rank (and step).

    Source per rank: its NCCL kernels when it has any (``source`` ``gpu_kernels``: GPU time of each
    kernel, waiting for peers included); else its ``gloo:*`` calls (``gloo_ops``: CPU wall time of
    each call on the thread that ran it). The share is of the rank's summed communication time, as
    the paper's "NCCL SendRecv ... 91.2 % of NCCL time".

    Returns:
        one row per (rank[, step], collective): ``rank`` (Int32), [``step`` (Int64)],
        ``collective`` (String, :data:`~trainperf.trace.names.COLLECTIVES`), ``source`` (String),
        ``n_calls`` (UInt32), ``time_s`` (Float64, summed durations), ``mean_us`` (Float64),
        ``share`` (0-1 of the rank's [step's] communication time).
    """
    keys = ["rank", "step"] if by_step else ["rank"]
    gpu = traces.kernels.filter(pl.col("category") == "communication").select(
        "rank", "step", "collective", "dur_ns", pl.lit("gpu_kernels").alias("source")
    )
    with_gpu = gpu["rank"].unique().to_list()
    cpu = traces.cpu_comms.filter(
        (pl.col("backend") == "gloo")
        & pl.col("collective").is_not_null()
        & ~pl.col("rank").is_in(with_gpu)
    ).select("rank", "step", "collective", "dur_ns", pl.lit("gloo_ops").alias("source"))
    allc = pl.concat([gpu, cpu])
    if by_step:
        allc = allc.filter(pl.col("step").is_not_null())
    out = allc.group_by(*keys, "collective", "source").agg(
        pl.len().alias("n_calls"),
        (pl.col("dur_ns").sum() / 1e9).alias("time_s"),
        (pl.col("dur_ns").mean() / 1e3).alias("mean_us"),
    )
    out = out.with_columns((pl.col("time_s") / pl.col("time_s").sum().over(keys)).alias("share"))
    return out.select(
        pl.col("rank").cast(pl.Int32),
        *(["step"] if by_step else []),
        "collective",
        "source",
        "n_calls",
        "time_s",
        "mean_us",
        "share",
    ).sort(*keys, "time_s", descending=[False] * len(keys) + [True])


def top_kernels(traces: TraceSet, *, n: int = 10) -> pl.DataFrame:
    """The ``n`` activities with the most GPU time per rank (all profiled steps).

    Returns:
        ``rank`` (Int32), ``kernel`` (String, :func:`short_kernel_name`), ``category`` (String),
        ``matmul`` (Boolean), ``n_calls`` (UInt32), ``time_s`` (Float64, summed durations),
        ``mean_us`` (Float64), ``share`` (0-1 of the rank's summed activity time), ``name``
        (String, one full name of the group); sorted by rank, then time.
    """
    k = traces.kernels
    names = k["name"].unique()
    short = pl.DataFrame({"name": names, "kernel": [short_kernel_name(x) for x in names]})
    g = (
        k.join(short, on="name", how="left")
        .group_by("rank", "kernel", "category", "matmul")
        .agg(
            pl.len().alias("n_calls"),
            (pl.col("dur_ns").sum() / 1e9).alias("time_s"),
            (pl.col("dur_ns").mean() / 1e3).alias("mean_us"),
            pl.col("name").first(),
        )
        .with_columns((pl.col("time_s") / pl.col("time_s").sum().over("rank")).alias("share"))
        .sort(["rank", "time_s"], descending=[False, True])
    )
    return (
        g.group_by("rank", maintain_order=True)
        .head(n)
        .select(
            pl.col("rank").cast(pl.Int32),
            "kernel",
            "category",
            "matmul",
            "n_calls",
            "time_s",
            "mean_us",
            "share",
            "name",
        )
    )
