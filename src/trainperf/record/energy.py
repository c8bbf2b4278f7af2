"""The record's energy to train beside the published power results' per-run table.

The energy chapter's results table has one row per MLPerf power result; its energy comes from the
record (:data:`~trainperf.record.row.RECORD_SCHEMA`'s ``energy_to_train_*`` columns, computed by
:func:`trainperf.power.energy_to_train` when the record was built) where the record has it, else
from the bundled per-run table ``data/reference/mlperf_power_runs.csv``.
"""

from __future__ import annotations

import polars as pl

__all__ = ["ENERGY_KEYS", "with_record_energy"]

ENERGY_KEYS = ("round", "submitter", "system", "benchmark")
"""A power result's identity in both tables."""


def with_record_energy(scores: pl.DataFrame, record: pl.DataFrame | None) -> pl.DataFrame:
    """Power results' scores with the record's energy to train where the record has it.

    Args:
        scores: one row per power result, columns round, submitter, system, benchmark (String),
            accelerator (canonical name), n_accelerators, n_nodes (Int64), score_min (min),
            energy_to_train_kwh (kWh), n_runs (Int64), source (String), mean_power_kw (kW, the nodes'
            mean DC power over the kept runs); more columns are kept.
        record: the MLPerf record (:func:`trainperf.record.read_record`; a record built before the
            energy columns has them null and changes nothing), or None.

    Returns:
        ``scores`` with, where the record has energy for the same (round, submitter, system,
        benchmark), the record's score_min and energy_to_train_kwh; the record's power results that
        ``scores`` lacks appended (mean_power_kw null: the record keeps no per-run power; source the
        result folder's address at its commit); ``energy_from`` (String: ``record`` or ``power runs``)
        and wh_per_gpu (Wh per GPU = kWh x 1000 / n_accelerators) recomputed.
    """
    keys = list(ENERGY_KEYS)
    out = scores.with_columns(pl.lit("power runs").alias("energy_from"))
    if record is not None and "energy_to_train_kwh" in record.columns:
        rec = record.filter(pl.col("energy_to_train_kwh").is_not_null()).select(
            *keys,
            "accelerator",
            pl.col("n_gpus").alias("n_accelerators"),
            "n_nodes",
            "score_min",
            "energy_to_train_kwh",
            "n_runs",
            pl.when(pl.col("repo").is_not_null() & pl.col("commit").is_not_null())
            .then(pl.format("https://{}/tree/{}/{}", "repo", "commit", "folder"))
            .otherwise(pl.col("folder"))
            .alias("source"),
        )
        if rec.height:
            joined = out.join(
                rec.select(*keys, pl.col("score_min").alias("_min"),
                           pl.col("energy_to_train_kwh").alias("_kwh")),
                on=keys, how="left",
            )  # fmt: skip
            has = pl.col("_kwh").is_not_null()
            out = joined.with_columns(
                pl.when(has)
                .then("_kwh")
                .otherwise("energy_to_train_kwh")
                .alias("energy_to_train_kwh"),
                pl.when(has).then("_min").otherwise("score_min").alias("score_min"),
                pl.when(has).then(pl.lit("record")).otherwise("energy_from").alias("energy_from"),
            ).drop("_min", "_kwh")
            extra = rec.join(out, on=keys, how="anti").with_columns(
                pl.lit("record").alias("energy_from")
            )
            out = pl.concat([out, extra], how="diagonal_relaxed")
    return out.with_columns(
        (pl.col("energy_to_train_kwh") * 1000 / pl.col("n_accelerators")).alias("wh_per_gpu")
    )
