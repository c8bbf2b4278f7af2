"""The value checks of the DCGM readers: blank sentinels and physical ranges (steps 1 and 2 of
:func:`trainperf.dcgm.checks.finish`).

* ``blank_value`` / ``non_finite``: DCGM *blank sentinels* (int64 fields ``>= 0x7ffffffffffffff0``,
  double fields ``>= 2**47``, fields of unknown type ``>= 0x7ffffffffffffff0`` or exactly
  ``2**47 + 0..3``; ``testing/python3/dcgmvalue.py`` in NVIDIA/DCGM), ``NaN`` and ``±Inf`` excluded;
* ``out_of_range``: values outside the physical range of their unit excluded (the package table
  ``dcgm_ranges.csv``: ratio 0–1, percent 0–100, power 0 .. the board limit of
  ``accelerator_power.csv`` x 1.2 for the exporter's ``modelName``).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import polars as pl

from trainperf import flops
from trainperf.dcgm._checkutil import _field_counts, _label_dict, _per_sid, _summary
from trainperf.dcgm.fields import FIELDS, FP_BLANK, INT_BLANK_CMP
from trainperf.quality import QualityLog
from trainperf.tables import read_table

__all__ = ["RANGES_SCHEMA", "range_table", "value_bounds"]


RANGES_SCHEMA: dict[str, pl.DataType] = {
    "scope": pl.String, "key": pl.String, "min": pl.Float64, "max": pl.Float64,
    "max_from": pl.String, "max_factor": pl.Float64, "source": pl.String,
}  # fmt: skip
"""Columns of :func:`range_table`."""


@cache
def range_table() -> pl.DataFrame:
    """The unit ranges (``trainperf/tables/dcgm_ranges.csv``): scope, key, min, max, max_from,
    max_factor, source (:data:`RANGES_SCHEMA`)."""

    return read_table("dcgm_ranges", schema=RANGES_SCHEMA)


@cache
def _power_limit(model: str) -> float | None:
    """Maximum board power (W) of a GPU model name (``modelName`` label), or None if unknown."""

    try:
        acc = flops.resolve_accelerator(model)
        t = read_table("accelerator_power", schema={"accelerator": pl.String,
                       "max_power_w": pl.Float64, "source": pl.String})  # fmt: skip
    except (ValueError, FileNotFoundError):
        return None
    row = t.filter(pl.col("accelerator") == acc)
    return float(row["max_power_w"][0]) if row.height else None


def value_bounds(field_id: int | None, labels: dict[str, str] | None = None) -> tuple[Any, Any]:
    """(min, max) of a field's values from :func:`range_table` (None = unbounded).

    Args:
        field_id: DCGM field id (None: a non-DCGM metric, unbounded).
        labels: the series' labels (``modelName`` gives the power limit).
    """
    model = (labels or {}).get("modelName")
    return _bounds(field_id, model)


@cache
def _bounds(field_id: int | None, model: str | None) -> tuple[Any, Any]:
    info = FIELDS.get(field_id) if field_id is not None else None
    if info is None:
        return None, None
    rows = range_table().filter((pl.col("scope") == "unit") & (pl.col("key") == info.unit))
    if rows.height == 0:
        return None, None
    r = rows.row(0, named=True)
    hi = r["max"]
    if r["max_from"] == "power_limit":
        lim = _power_limit(model) if model else None
        hi = lim * (r["max_factor"] or 1.0) if lim is not None else None
    return r["min"], hi


def _drop_blank(series: pl.DataFrame, samples: pl.DataFrame, src: str, log: QualityLog):
    v = pl.col("value")
    # cheap exit, one pass: every value finite and under 2**47 is no sentinel of any field type
    # (the int64 sentinels are larger, the double ones from 2**47)
    if samples.select((v.is_finite() & (v < FP_BLANK)).fill_null(False).all()).item():
        return samples
    kind = [
        2 if d else 1 if i else 0
        for i, d in zip(series["_is_int"], series["_is_double"], strict=True)
    ]
    k = _per_sid(kind, pl.UInt8)
    v = pl.col("value")
    fp_exact = (v >= FP_BLANK) & (v <= FP_BLANK + 3.0) & (v == v.round(0))
    ok = (
        v.is_not_null()
        & v.is_finite()
        & (v < INT_BLANK_CMP)
        & pl.when(k == 2).then(v < FP_BLANK).when(k == 1).then(True).otherwise(~fp_exact)
    )
    mask = samples.select(ok.alias("ok"))["ok"]
    if mask.all():  # the common case: no filter pass (the mask has no nulls: is_not_null first)
        return samples
    bad = samples.filter(~mask)
    if bad.height:
        # NaN / +-Inf are not DCGM's documented blanks (those are the sentinels and N/A, read as
        # null): an exporter or a converter produced them, so they are warned about, naming the line
        nonfinite = bad.filter(pl.col("value").is_not_null() & ~pl.col("value").is_finite())
        blank = bad.filter(pl.col("value").is_null() | pl.col("value").is_finite())
        if blank.height:
            log.add(src, "blank_value", "excluded",
                    f"{blank.height} DCGM blank/not-supported sentinels or N/A values "
                    f"({_field_counts(blank, series)})", warn=False,
                    **_summary(blank, series))  # fmt: skip
        if nonfinite.height:
            first = nonfinite.row(0, named=True)
            at = f" at line {first['line']}" if first["line"] is not None else ""
            log.add(src, "non_finite", "excluded",
                    f"{nonfinite.height} NaN or +-Inf values ({_field_counts(nonfinite, series)}), "
                    f"e.g. {series['field'][first['sid']]} = {first['value']}{at}: not used",
                    **_summary(nonfinite, series))  # fmt: skip
        samples = samples.filter(mask)
    return samples


def _drop_out_of_range(series: pl.DataFrame, samples: pl.DataFrame, src: str, log: QualityLog):
    lo, hi, seen = [], [], {}
    for fid, lab in zip(series["field_id"], series["labels"], strict=True):
        watts = fid in FIELDS and FIELDS[fid].unit == "W"
        labels = _label_dict(lab, seen) if watts and lab and "modelName" in lab else None
        a, b = value_bounds(fid, labels)
        lo.append(a)
        hi.append(b)
    if all(a is None for a in lo) and all(b is None for b in hi):
        return samples
    v = pl.col("value")
    out = ((v < _per_sid(lo, pl.Float64)) | (v > _per_sid(hi, pl.Float64))).fill_null(False)
    mask = samples.select(out.alias("o"))["o"]
    if not mask.any():  # the common case: no filter pass
        return samples
    bad = samples.filter(mask)
    if bad.height:
        first = bad.row(0, named=True)
        sid = first["sid"]
        unit = FIELDS[series["field_id"][sid]].unit
        ex = (f"e.g. {series['field'][sid]} = {first['value']:g} {unit}"
              f"{' at line ' + str(first['line']) if first['line'] is not None else ''}, "
              f"outside {lo[sid]:g}..{'' if hi[sid] is None else format(hi[sid], 'g')}")  # fmt: skip
        log.add(src, "out_of_range", "excluded",
                f"{bad.height} values outside their physical range ({_field_counts(bad, series)}); {ex}",
                **_summary(bad, series))  # fmt: skip
        samples = samples.filter(~mask)
    return samples
