"""The evaluated results' own system descriptions in the comparison (``comparison.csv``): the
``systems/<result>.json`` of each result, its host CPUs, networks and NVLink domain."""

from __future__ import annotations

import warnings

import polars as pl

from trainperf.mlperf import system_descriptions

__all__ = ["SYSTEM_JSON_COLUMNS", "with_system_json"]

SYSTEM_JSON_COLUMNS = (
    "evaluated_system_json",
    "evaluated_host_processors",
    "evaluated_host_networking",
    "evaluated_accelerator_interconnect",
    "evaluated_scaleup_domain",
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
    with warnings.catch_warnings():  # an unreadable file is named by the runs chapter
        warnings.simplefilter("ignore")
        desc = system_descriptions(mlperf)
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
    net = (
        pl.when(pl.col("host_networking_topology").is_not_null())
        .then(pl.col("host_networking") + ", " + pl.col("host_networking_topology"))
        .otherwise(pl.col("host_networking"))
    )
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
