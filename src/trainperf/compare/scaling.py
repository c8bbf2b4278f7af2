"""Strong scaling: how much of each added GPU's work a system keeps when one training job is
spread over more nodes.

A fixed MLPerf workload (the same benchmark and convergence target) trained at ``n`` nodes in
``T(n)`` minutes has the strong-scaling efficiency, against its own run at ``n0`` nodes,

    E(n0 -> n) = (n0 · T(n0)) / (n · T(n))

(Amdahl-style parallel efficiency: the speedup ``T(n0)/T(n)`` over the ideal speedup ``n/n0``;
1 is perfect, below 1 each added GPU contributed less than the first ones, above 1 is
super-linear). Equivalently, ``n · T(n)`` (GPU-time to train) is flat under perfect strong
scaling. The efficiency is computed only between results of one system in one MLPerf round
(same software stack); across rounds the software changed as well as the scale, and the row says
so. MLPerf lets the global batch size grow with scale, so a larger run may also train more tokens
(GBS 3072 needs about 4 % more than GBS 2048 for GPT-3 175B): the efficiency here is of time to
train, what the benchmark measures, not of steps.
"""

from __future__ import annotations

import polars as pl

__all__ = ["SCALING_SCHEMA", "scaling_points", "strong_scaling"]

SCALING_SCHEMA = {
    "system": pl.String,
    "round": pl.String,
    "benchmark": pl.String,
    "n_nodes": pl.Int64,
    "n_gpus": pl.Int64,
    "time_to_train_min": pl.Float64,
    "gpu_hours": pl.Float64,
    "source": pl.String,
}
"""Columns of :func:`scaling_points`: ``gpu_hours`` = ``n_gpus · time_to_train_min / 60``;
``source`` ``logs`` (the MLPerf score recomputed from bundled logs) or ``transcribed`` (a
published row, not recomputed)."""


def scaling_points(
    published: pl.DataFrame,
    systems: list[str],
    scores: pl.DataFrame | None = None,
    benchmark: str = "gpt3",
) -> pl.DataFrame:
    """Time to train by scale of some systems, from their logs where the logs are bundled.

    Args:
        published: rows of ``data/reference/published_results.csv``
            (:func:`trainperf.compare.load_published_results`): ``system``, ``round``,
            ``submitter``, ``benchmark``, ``n_gpus``, ``n_nodes``, ``minutes``.
        systems: the ``system`` values to keep (the evaluated system, the reference, peers).
        scores: ``trainperf.mlperf.load_results(...).scores`` of the bundled logs (``round``,
            ``submitter``, ``benchmark``, ``n_accelerators``, ``score_min``): a published row
            whose round, submitter, benchmark and GPU count match a score takes the score
            (``source`` ``logs``); others keep their minutes (``transcribed``).
        benchmark: the MLPerf benchmark.

    Returns:
        polars frame with :data:`SCALING_SCHEMA`, sorted by system order, round, nodes.
    """
    rows = published.filter(
        pl.col("system").is_in(systems)
        & (pl.col("benchmark") == benchmark)
        & pl.col("minutes").is_not_null()
    )
    if scores is not None and scores.height:
        s = scores.filter(pl.col("score_min").is_not_null()).select(
            "round",
            "submitter",
            "benchmark",
            pl.col("n_accelerators").cast(pl.Int64).alias("n_gpus"),
            pl.col("score_min"),
        )
        s = s.unique(["round", "submitter", "benchmark", "n_gpus"], keep="first")
        rows = rows.join(s, on=["round", "submitter", "benchmark", "n_gpus"], how="left")
    else:
        rows = rows.with_columns(pl.lit(None, pl.Float64).alias("score_min"))
    order = {s: i for i, s in enumerate(systems)}
    return (
        rows.with_columns(
            pl.coalesce("score_min", "minutes").alias("time_to_train_min"),
            pl.when(pl.col("score_min").is_not_null())
            .then(pl.lit("logs"))
            .otherwise(pl.lit("transcribed"))
            .alias("source"),
            pl.col("system").replace_strict(order, return_dtype=pl.Int64).alias("_o"),
        )
        .with_columns((pl.col("n_gpus") * pl.col("time_to_train_min") / 60).alias("gpu_hours"))
        .sort("_o", "round", "n_nodes")
        .select([pl.col(c).cast(t) for c, t in SCALING_SCHEMA.items()])
    )


def strong_scaling(points: pl.DataFrame) -> pl.DataFrame:
    """Strong-scaling efficiency between every pair of scales of each system
    (``E = n0·T(n0) / (n·T(n))``, module docstring).

    Args:
        points: :func:`scaling_points`.

    Returns:
        polars frame, one row per system and ordered pair of node counts ``n0 < n``:
        ``system``, ``benchmark``, ``from_nodes``, ``to_nodes`` (Int64), ``from_round``,
        ``to_round`` (String), ``from_min``, ``to_min`` (Float64, minutes), ``speedup``
        (``T(n0)/T(n)``), ``ideal_speedup`` (``n/n0``), ``efficiency`` (Float64, fraction),
        ``same_round`` (Boolean: both results of one MLPerf round), ``source`` (``logs`` when
        both times come from logs, else ``transcribed``). Where a system has two results at one
        scale (two rounds), each pairs with the other scales.
    """
    p = points.select(
        "system", "benchmark", "round", "n_nodes", "time_to_train_min", "source"
    ).with_row_index("_i")
    pairs = p.join(p, on=["system", "benchmark"], suffix="_to").filter(
        pl.col("n_nodes") < pl.col("n_nodes_to")
    )
    return (
        pairs.select(
            "system",
            "benchmark",
            pl.col("n_nodes").alias("from_nodes"),
            pl.col("n_nodes_to").alias("to_nodes"),
            pl.col("round").alias("from_round"),
            pl.col("round_to").alias("to_round"),
            pl.col("time_to_train_min").alias("from_min"),
            pl.col("time_to_train_min_to").alias("to_min"),
            (pl.col("time_to_train_min") / pl.col("time_to_train_min_to")).alias("speedup"),
            (pl.col("n_nodes_to") / pl.col("n_nodes")).alias("ideal_speedup"),
            (
                (pl.col("n_nodes") * pl.col("time_to_train_min"))
                / (pl.col("n_nodes_to") * pl.col("time_to_train_min_to"))
            ).alias("efficiency"),
            (pl.col("round") == pl.col("round_to")).alias("same_round"),
            pl.when((pl.col("source") == "logs") & (pl.col("source_to") == "logs"))
            .then(pl.lit("logs"))
            .otherwise(pl.lit("transcribed"))
            .alias("source"),
            "_i",
            "_i_to",
        )
        .sort("_i", "_i_to")
        .drop("_i", "_i_to")
    )
