"""The hardware of a submission from its ``systems/<system>.json`` (the MLCommons results layout).

One place reads it for the book's cluster table (:func:`system_table_rows`); the field names are
those of the MLCommons system description JSON (``training_results_v*/<submitter>/systems/*.json``,
the schema of ``mlcommons/training_policies``'s ``system_desc_id.json``).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import polars as pl

from trainperf.mlperf.checks import MLPerfLogWarning
from trainperf.mlperf.loader import find_result_files, layout_from_path

__all__ = ["SYSTEM_TABLE_FIELDS", "system_table_rows"]

#: The rows of the cluster table (``data/reference/systems.csv``'s ``item``) and the fields of the
#: system description JSON each is made of (joined with " x " or " ", empty fields left out).
SYSTEM_TABLE_FIELDS: dict[str, tuple[tuple[str, ...], str]] = {
    "Compute nodes": (("number_of_nodes",), " "),
    "GPUs per node": (("accelerators_per_node", "accelerator_model_name"), " x "),
    "Intra-node GPU link": (("accelerator_interconnect",), " "),
    "CPUs per node": (("host_processors_per_node", "host_processor_model_name"), " x "),
    "Host memory per node": (("host_memory_capacity",), " "),
    "Compute network per node": (("host_networking",), " "),
    "Fabric": (("host_networking_topology",), " "),
    "Storage": (("host_storage_type", "host_storage_capacity"), ", "),
}

_SCHEMA = {
    "item": pl.Utf8,
    "value": pl.Utf8,
    "source": pl.Utf8,
    "system_label": pl.Utf8,
}


def _count(value) -> int:
    try:
        return int(str(value).strip())
    except ValueError:
        return 0


def system_table_rows(mlperf_path: str | Path) -> pl.DataFrame:
    """The cluster table's rows for the largest system (most nodes) whose
    ``<submitter>/systems/<system>.json`` sits beside the results under ``mlperf_path``.

    Returns:
        One row per :data:`SYSTEM_TABLE_FIELDS` item that the JSON fills: ``item`` (Utf8),
        ``value`` (Utf8, the JSON's text, units as the submitter wrote them), ``source`` (Utf8,
        ``<submitter>/systems/<system>.json (<fields>)``), ``system_label`` (Utf8,
        ``"<submitter> <system>"``). Empty (same columns) where no result file has a readable
        systems JSON: no path (``""``), a flat folder of logs, a missing or damaged file (warned,
        naming the file).
    """
    if not str(mlperf_path):
        return pl.DataFrame(schema=_SCHEMA)  # no logs given
    try:
        files = find_result_files(mlperf_path)
    except FileNotFoundError:
        return pl.DataFrame(schema=_SCHEMA)
    seen: dict[Path, tuple[str, str]] = {}
    for f in files:
        lay = layout_from_path(f)
        if lay["submitter_dir"] is None or lay["system"] is None:
            continue
        js = lay["submitter_dir"] / "systems" / f"{lay['system']}.json"
        if js not in seen and js.is_file():
            seen[js] = (lay["submitter"], lay["system"])
    best: tuple[int, Path, dict] | None = None
    for js in sorted(seen):
        try:
            desc = json.loads(js.read_bytes().decode("utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
            warnings.warn(
                f"{js}: system description not read ({exc})", MLPerfLogWarning, stacklevel=2
            )
            continue
        if not isinstance(desc, dict):
            warnings.warn(
                f"{js}: system description is not a JSON object", MLPerfLogWarning, stacklevel=2
            )
            continue
        n = _count(desc.get("number_of_nodes"))
        if best is None or n > best[0]:
            best = (n, js, desc)
    if best is None:
        return pl.DataFrame(schema=_SCHEMA)
    _, js, desc = best
    submitter, system = seen[js]
    label = f"{submitter} {system}" if submitter else system
    rows = []
    for item, (fields, sep) in SYSTEM_TABLE_FIELDS.items():
        parts = [str(desc.get(k, "")).strip() for k in fields]
        used = [k for k, v in zip(fields, parts, strict=True) if v]
        if len(used) < len(fields) and sep == " x ":
            continue  # a count without its model (or the reverse) says nothing
        if not used:
            continue
        rows.append(
            {
                "item": item,
                "value": sep.join(v for v in parts if v),
                "source": f"{submitter}/systems/{js.name} ({', '.join(used)})",
                "system_label": label,
            }
        )
    return pl.DataFrame(rows, schema=_SCHEMA)
