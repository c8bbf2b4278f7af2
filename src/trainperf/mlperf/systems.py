"""The cluster a results folder describes: its ``<submitter>/systems/<system>.json`` files
(the MLCommons system description: ``number_of_nodes``, ``accelerators_per_node``,
``host_processor_model_name``, ``host_networking``, ``accelerator_interconnect``, ``framework``...),
read into the items of the cluster table (the rows of ``data/reference/systems.csv``), each with
the file and field it came from.

Every value is checked: a field that is missing, empty, or not what its item needs (a node count
that is not a positive integer) gives no value for that item, never a made-up one; an unreadable
file gives a warning naming it and is skipped.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import polars as pl

from trainperf.flops import lookup_accelerator
from trainperf.flops.accelerators import UnknownAcceleratorError
from trainperf.mlperf.checks import MLPerfLogWarning

__all__ = [
    "CLUSTER_ITEMS_SCHEMA",
    "SYSTEMS_SCHEMA",
    "SYSTEM_TABLE_SCHEMA",
    "cluster_items",
    "system_descriptions",
    "system_table_rows",
]

SYSTEMS_SCHEMA = {
    "system": pl.String,
    "submitter": pl.String,
    "file": pl.String,
    "system_name": pl.String,
    "n_nodes": pl.Int64,
    "accelerators_per_node": pl.Int64,
    "accelerator_model_name": pl.String,
    "accelerator": pl.String,
    "scaleup_domain": pl.Int64,
    "scaleup_fabric": pl.String,
    "host_processors_per_node": pl.Int64,
    "host_processor_model_name": pl.String,
    "host_memory_capacity": pl.String,
    "host_networking": pl.String,
    "host_networking_topology": pl.String,
    "accelerator_interconnect": pl.String,
    "accelerator_interconnect_topology": pl.String,
    "host_storage": pl.String,
    "framework": pl.String,
}
"""Columns of :func:`system_descriptions`."""


def _text(desc: dict, key: str) -> str | None:
    v = desc.get(key)
    if isinstance(v, bool) or v is None:
        return None
    v = str(v).strip()
    return v or None


def _positive_int(desc: dict, key: str) -> int | None:
    v = _text(desc, key)
    try:
        n = int(v) if v is not None else None
    except ValueError:
        return None
    return n if n is not None and n > 0 else None


def system_descriptions(folder: str | Path) -> pl.DataFrame:
    """Every ``systems/*.json`` under a results folder (MLCommons layout, any depth).

    Args:
        folder: a results folder (``<submitter>/systems/<system>.json`` somewhere below it).

    Returns:
        :data:`SYSTEMS_SCHEMA`, one row per file, sorted by file: system (String, the file's stem,
        the name the results folder uses), submitter, file (String, the path), system_name,
        n_nodes, accelerators_per_node (Int64, null unless a positive integer),
        accelerator_model_name, accelerator (String: the canonical row of
        :func:`trainperf.flops.lookup_accelerator`, null when unknown), scaleup_domain (Int64,
        GPUs of one NVLink/xGMI domain, from the accelerator table), scaleup_fabric,
        host_processors_per_node (Int64), host_processor_model_name, host_memory_capacity,
        host_networking, host_networking_topology, accelerator_interconnect,
        accelerator_interconnect_topology, host_storage (type and capacity), framework (String).

    Warns:
        MLPerfLogWarning: a file that is not a JSON object (named; skipped).
    """
    rows = []
    for js in sorted(Path(folder).rglob("systems/*.json")):
        try:
            desc = json.loads(js.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            warnings.warn(f"{js}: unreadable system description ({exc})", MLPerfLogWarning,
                          stacklevel=2)  # fmt: skip
            continue
        if not isinstance(desc, dict):
            warnings.warn(f"{js}: not a JSON object", MLPerfLogWarning, stacklevel=2)
            continue
        acc_name = _text(desc, "accelerator_model_name")
        acc = dom = fabric = None
        if acc_name:
            try:
                row = lookup_accelerator(acc_name)
                acc, dom, fabric = row["accelerator"], row["scaleup_domain"], row["scaleup_fabric"]
            except UnknownAcceleratorError:
                pass
        storage = ", ".join(
            v for v in (_text(desc, "host_storage_type"), _text(desc, "host_storage_capacity")) if v
        )
        rows.append(
            {
                "system": js.stem,
                "submitter": _text(desc, "submitter"),
                "file": str(js),
                "system_name": _text(desc, "system_name"),
                "n_nodes": _positive_int(desc, "number_of_nodes"),
                "accelerators_per_node": _positive_int(desc, "accelerators_per_node"),
                "accelerator_model_name": acc_name,
                "accelerator": acc,
                "scaleup_domain": dom,
                "scaleup_fabric": fabric,
                "host_processors_per_node": _positive_int(desc, "host_processors_per_node"),
                "host_processor_model_name": _text(desc, "host_processor_model_name"),
                "host_memory_capacity": _text(desc, "host_memory_capacity"),
                "host_networking": _text(desc, "host_networking"),
                "host_networking_topology": _text(desc, "host_networking_topology"),
                "accelerator_interconnect": _text(desc, "accelerator_interconnect"),
                "accelerator_interconnect_topology": _text(
                    desc, "accelerator_interconnect_topology"
                ),
                "host_storage": storage or None,
                "framework": _text(desc, "framework"),
            }
        )
    return pl.DataFrame(rows, schema=SYSTEMS_SCHEMA)


CLUSTER_ITEMS_SCHEMA = {"item": pl.String, "value": pl.String, "source": pl.String}
"""Columns of :func:`cluster_items`."""


def cluster_items(desc: dict) -> pl.DataFrame:
    """One system description as the items of the cluster table (``data/reference/systems.csv``).

    Items and fields: Compute nodes (``number_of_nodes``), GPUs per node
    (``accelerators_per_node`` x ``accelerator_model_name``), Intra-node GPU link
    (``accelerator_interconnect`` and its topology), CPUs per node (``host_processors_per_node``
    x ``host_processor_model_name``), Host memory per node (``host_memory_capacity``), Compute
    network per node (``host_networking``), Fabric (``host_networking_topology``), Storage
    (``host_storage_type`` and ``host_storage_capacity``), Software (``framework``). An item whose
    fields are missing or empty is left out (the table then says "not given").

    Args:
        desc: a row of :func:`system_descriptions` (named).

    Returns:
        :data:`CLUSTER_ITEMS_SCHEMA`: item, value (String), source (String: ``<file> (<fields>)``).
    """
    f = desc["file"]
    acc = desc["accelerator_model_name"]
    cpu = desc["host_processor_model_name"]
    link = desc["accelerator_interconnect"]
    if link and desc["accelerator_interconnect_topology"]:
        link = f"{link}, {desc['accelerator_interconnect_topology']}"
    items = [
        ("Compute nodes", desc["n_nodes"], "number_of_nodes"),
        (
            "GPUs per node",
            f"{desc['accelerators_per_node']} x {acc}"
            if desc["accelerators_per_node"] and acc
            else None,
            "accelerators_per_node, accelerator_model_name",
        ),
        ("Intra-node GPU link", link, "accelerator_interconnect"),
        (
            "CPUs per node",
            (
                f"{desc['host_processors_per_node']} x {cpu}"
                if desc["host_processors_per_node"]
                else cpu
            )
            if cpu
            else None,
            "host_processors_per_node, host_processor_model_name",
        ),
        ("Host memory per node", desc["host_memory_capacity"], "host_memory_capacity"),
        ("Compute network per node", desc["host_networking"], "host_networking"),
        ("Fabric", desc["host_networking_topology"], "host_networking_topology"),
        ("Storage", desc["host_storage"], "host_storage_type, host_storage_capacity"),
        ("Software", desc["framework"], "framework"),
    ]
    rows = [
        {"item": item, "value": str(value), "source": f"{f} ({fields})"}
        for item, value, fields in items
        if value not in (None, "")
    ]
    return pl.DataFrame(rows, schema=CLUSTER_ITEMS_SCHEMA)


SYSTEM_TABLE_SCHEMA = {"item": pl.String, "value": pl.String, "source": pl.String,
                       "system_label": pl.String}  # fmt: skip
"""Columns of :func:`system_table_rows`."""


def system_table_rows(mlperf_path: str | Path) -> pl.DataFrame:
    """The cluster table's rows (the book's hardware table) for the largest system (most nodes;
    ties: the first file by name) whose ``<submitter>/systems/<system>.json`` lies under
    ``mlperf_path``: :func:`cluster_items` of :func:`system_descriptions`' row.

    Returns:
        :data:`SYSTEM_TABLE_SCHEMA`, one row per item the JSON fills: item, value (String, the
        JSON's text, units as the submitter wrote them), source (String,
        ``<submitter>/systems/<system>.json (<fields>)``: the folder from the submitter on, never
        the build machine's path), system_label (String, ``"<submitter> <system>"``). Empty (same
        columns) without a path (``""``), a missing folder, or no readable systems JSON (a damaged
        one is warned, naming it).
    """
    empty = pl.DataFrame(schema=SYSTEM_TABLE_SCHEMA)
    if not str(mlperf_path) or not Path(mlperf_path).is_dir():
        return empty
    described = system_descriptions(mlperf_path)
    if not described.height:
        return empty
    best = described.sort(
        [pl.col("n_nodes").fill_null(0), pl.col("file")], descending=[True, False]
    ).row(0, named=True)
    js = Path(best["file"])
    folder = js.parent.parent.name  # <submitter>/systems/<system>.json
    submitter = best["submitter"] or folder
    shown = f"{folder}/systems/{js.name}" if folder else js.name
    items = cluster_items(best)
    return items.with_columns(
        pl.col("source").str.replace(str(js), shown, literal=True),
        pl.lit(f"{submitter} {best['system']}").alias("system_label"),
    )
