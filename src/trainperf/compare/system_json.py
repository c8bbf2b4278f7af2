"""The evaluated results' own system descriptions in the comparison (``comparison.csv``): the
``systems/<result>.json`` of each result, its host CPUs, networks and NVLink domain."""

from __future__ import annotations

import warnings

import polars as pl

from trainperf.mlperf import system_descriptions

__all__ = ["SYSTEM_JSON_COLUMNS", "with_reference_system_json", "with_system_json"]

SYSTEM_JSON_COLUMNS = (
    "evaluated_system_json",
    "evaluated_host_processors",
    "evaluated_host_networking",
    "evaluated_accelerator_interconnect",
    "evaluated_scaleup_domain",
)


def _described(mlperf) -> pl.DataFrame:
    with warnings.catch_warnings():  # an unreadable file is named by the runs chapter
        warnings.simplefilter("ignore")
        return system_descriptions(mlperf)


def with_reference_system_json(frame: pl.DataFrame, reference_mlperf) -> pl.DataFrame:
    """The reference results' own system descriptions (the ``systems/<result>.json`` of a
    reference given as a folder of logs) in ``reference_host_networking`` and
    ``reference_accelerator_interconnect``, by ``reference_result`` (its system folder's name).

    Args:
        frame: a comparison (:data:`trainperf.compare.COMPARISON_SCHEMA`).
        reference_mlperf: the reference's folder of logs (MLCommons layout).

    Returns:
        ``frame``, its columns in order, those two filled where the folder has the JSON and the
        row has none yet (a row of the record keeps the record's).
    """
    desc = _described(reference_mlperf)
    if desc.is_empty() or frame.is_empty():
        return frame
    desc = desc.unique("system", keep="first", maintain_order=True).select(
        pl.col("system").alias("reference_result"),
        _networking().alias("_net"),
        pl.col("accelerator_interconnect").alias("_acc"),
    )
    return (
        frame.join(desc, on="reference_result", how="left", maintain_order="left")
        .with_columns(
            pl.coalesce("reference_host_networking", "_net").alias("reference_host_networking"),
            pl.coalesce("reference_accelerator_interconnect", "_acc").alias(
                "reference_accelerator_interconnect"
            ),
        )
        .select(frame.columns)
    )


def _networking() -> pl.Expr:
    """``host_networking`` and its topology, as one text (``InfiniBand, rail-optimized``)."""
    return (
        pl.when(pl.col("host_networking_topology").is_not_null())
        .then(pl.col("host_networking") + ", " + pl.col("host_networking_topology"))
        .otherwise(pl.col("host_networking"))
    )


def with_system_json(frame: pl.DataFrame, mlperf, columns: list[str]) -> pl.DataFrame:
    """The evaluated results' own system descriptions (:func:`trainperf.mlperf.system_descriptions`
    of the logs' folder) in the ``evaluated_system_json`` ... columns, by result folder name.

    Args:
        frame: a comparison (:data:`trainperf.compare.COMPARISON_SCHEMA`).
        mlperf: the evaluated logs' folder.
        columns: the comparison's columns, in order (the result keeps them).

    Returns:
        ``frame`` with those five columns filled where the folder has the result's JSON.
    """
    desc = _described(mlperf)
    if desc.is_empty():
        return frame
    cpu = (
        pl.when(pl.col("host_processors_per_node").is_not_null())
        .then(
            pl.col("host_processors_per_node").cast(pl.String)
            + " x "
            + pl.col("host_processor_model_name")
        )
        .otherwise(pl.col("host_processor_model_name"))
    )
    net = _networking()
    desc = desc.unique("system", keep="first", maintain_order=True).select(
        pl.col("system").alias("evaluated_result"),
        pl.col("file").alias("evaluated_system_json"),
        cpu.alias("evaluated_host_processors"),
        net.alias("evaluated_host_networking"),
        pl.col("accelerator_interconnect").alias("evaluated_accelerator_interconnect"),
        pl.col("scaleup_domain").alias("evaluated_scaleup_domain"),
    )
    return (
        frame.drop(SYSTEM_JSON_COLUMNS)
        .join(desc, on="evaluated_result", how="left", maintain_order="left")
        .select(columns)
    )
