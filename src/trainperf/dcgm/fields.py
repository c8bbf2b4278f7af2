"""DCGM field table, output schema, metric-name aliases and the reader's error and warning types.

Everything here is data or a lookup: the field table and its aliases are the package tables
``trainperf/tables/dcgm_fields.csv`` and ``dcgm_aliases.csv`` (sources in ``trainperf/tables/README.md``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import polars as pl

from trainperf.errors import DataWarning, InputError
from trainperf.tables import read_table

__all__ = [
    "ALIASES",
    "DMON_SHORT_NAMES",
    "FIELDS",
    "METRIC_REQUIREMENTS",
    "SCHEMA",
    "SERIES_KEY",
    "DcgmFormatError",
    "DcgmWarning",
    "FieldInfo",
    "field_id",
]

SCHEMA: dict[str, pl.DataType] = {
    "timestamp": pl.Datetime("us", "UTC"),
    "hostname": pl.String(),
    "gpu": pl.Int32(),
    "uuid": pl.String(),
    "entity": pl.String(),
    "entity_id": pl.Int32(),
    "field_id": pl.Int32(),
    "field": pl.String(),
    "value": pl.Float64(),
    "job_id": pl.String(),
    "labels": pl.String(),
}
"""Output schema of every reader (see the :mod:`trainperf.dcgm` docstring)."""

SERIES_KEY: list[str] = [
    "hostname",
    "gpu",
    "uuid",
    "entity",
    "entity_id",
    "field_id",
    "field",
    "job_id",
]
"""Columns identifying one time series in a reader frame."""

INT_BLANK_CMP = 9.2e18
"""Every DCGM int64 sentinel (``DCGM_INT64_BLANK = 0x7ffffffffffffff0`` .. ``+3``) is >= this as float64."""
FP_BLANK = float(2**47)
"""``DCGM_FP64_BLANK`` = 140737488355328.0 (``dcgmlib/dcgm_structs.h``); double sentinels are >= it."""


@dataclass(frozen=True)
class FieldInfo:
    """One DCGM field: id, canonical name, DCGM type, unit and how to treat it.

    Attributes:
        field_id: DCGM numeric id (``dcgmlib/dcgm_fields.h``).
        name: canonical dcgm-exporter / DCGM name.
        dtype: ``"double"`` or ``"int64"`` (decides the blank-sentinel threshold).
        unit: unit of ``value`` as exported (``"ratio"`` = 0–1, ``"%"`` = 0–100).
        kind: ``"gauge"`` (incl. rates), ``"counter"`` (monotonic, resets on driver
            reload), ``"code"`` (XID) or ``"bitmask"``.
        si_unit / si_scale: ``value * si_scale`` is in ``si_unit``.
        profiling: a DCP (``DCGM_FI_PROF_*``) field, needs the profiling module.
        default_on: enabled in dcgm-exporter ``etc/default-counters.csv``.
        dmon_short: column header printed by ``dcgmi dmon``.
    """

    field_id: int
    name: str
    dtype: str
    unit: str
    kind: str
    si_unit: str
    si_scale: float
    profiling: bool = False
    default_on: bool = False
    dmon_short: str | None = None


def _load_fields() -> dict[int, FieldInfo]:
    schema = {
        "field_id": pl.Int64, "name": pl.String, "dtype": pl.String, "unit": pl.String,
        "kind": pl.String, "si_unit": pl.String, "si_scale": pl.Float64,
        "profiling": pl.Boolean, "default_on": pl.Boolean, "dmon_short": pl.String,
    }  # fmt: skip
    rows = read_table("dcgm_fields", schema=schema).to_dicts()
    return {r["field_id"]: FieldInfo(**r) for r in rows}


def _load_aliases() -> dict[str, int]:

    rows = read_table(
        "dcgm_aliases", schema={"alias": pl.String, "field_id": pl.Int64, "source": pl.String}
    )
    return dict(zip(rows["alias"], rows["field_id"], strict=True))


FIELDS: dict[int, FieldInfo] = _load_fields()
"""DCGM fields by numeric id, read from the package table ``trainperf/tables/dcgm_fields.csv``.

Sources (``trainperf/tables/README.md``): ids and types from ``dcgmlib/dcgm_fields.h`` /
``dcgmlib/src/dcgm_fields.cpp`` (https://github.com/NVIDIA/DCGM, 4.6.0); units from the same metadata
and https://docs.nvidia.com/datacenter/dcgm/latest/dcgm-api/dcgm-api-field-ids.html; ``default_on``
from ``etc/default-counters.csv`` (https://github.com/NVIDIA/dcgm-exporter, d5e5f51); dmon short names
from ``dcgmi dmon -l``. Profiling ratios are 0–1 although some HELP strings say "(in %)"; GPU_UTIL is
an integer percent 0–100.
"""

ALIASES: dict[str, int] = {f.name: fid for fid, f in FIELDS.items()} | _load_aliases()
"""Metric name -> field id: canonical names plus ``trainperf/tables/dcgm_aliases.csv`` (DCGM 4.6
renames, dcgm-exporter 1.x names). Lookup also tries the upper-cased name (1.x ``dcgm_fi_prof_*``)."""

DMON_SHORT_NAMES: dict[str, int] = {f.dmon_short: fid for fid, f in FIELDS.items() if f.dmon_short}
"""``dcgmi dmon`` column header -> field id (``dcgmi dmon -l``, DCGM 4.6.0)."""

METRIC_REQUIREMENTS: dict[str, list[tuple[int, ...]]] = {
    "gpu_util": [(203,)],
    "gr_engine_active": [(1001,)],
    "sm_active": [(1002,)],
    "sm_occupancy": [(1003,)],
    "tensor_active": [(1004,)],
    "dram_active": [(1005,)],
    "power": [(155,), (157,)],
    "energy": [(156,), (155,)],
    "fb_used": [(252,)],
    "pcie_bytes": [(1009, 1010)],
    "nvlink_bytes": [(1011, 1012), (449,)],
    "xid": [(230,)],
}
"""Report metric -> alternatives, each a tuple of field ids that must all be present.

Used by :func:`trainperf.dcgm.missing_metrics`; the first satisfiable alternative is used.
"""


class DcgmFormatError(InputError):
    """Malformed DCGM input.

    Attributes:
        source: file name (or ``"<bytes>"``).
        line: 1-based line number, or None where a JSON path / column is given instead.
        expected: what the reader expected.
        got: the offending text (truncated).
    """

    def __init__(
        self, source: str, line: int | None, expected: str, got: str = "", where: str = ""
    ):
        self.expected, self.got = expected, got
        loc = f"{source}:{line}" if line is not None else source
        if where:
            loc += f" ({where})"
        msg = f"{loc}: expected {expected}"
        if got:
            msg += f"; got {got[:200]!r}"
        super().__init__(msg, source, line)
        self.source, self.line = source, line


class DcgmWarning(DataWarning):
    """Damage in DCGM telemetry that a reader handled (values excluded, corrected or flagged)."""


def field_id(name: str) -> int | None:
    """Return the DCGM field id for a metric name (any alias), or None if unknown.

    Also accepts prometheus_client's ``<name>_total`` for counters and a numeric string.
    """
    fid = ALIASES.get(name)
    if fid is None:
        fid = ALIASES.get(name.upper())
    if fid is None and name.endswith("_total"):
        fid = ALIASES.get(name[:-6]) or ALIASES.get(name[:-6].upper())
    if fid is None and name.isdigit():
        fid = int(name) if int(name) in FIELDS else None
    return fid


def resolve_ids(items: Iterable[int | str]) -> list[int]:
    """Field ids of ``items`` (ids or any metric name).

    Raises:
        ValueError: an unknown name.
    """
    out = []
    for it in items:
        fid = it if isinstance(it, int) else field_id(str(it))
        if fid is None:
            raise ValueError(f"unknown DCGM field {it!r}")
        out.append(fid)
    return out
