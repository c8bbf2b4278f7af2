"""CSV telemetry: a long form (one row per sample) and Grafana's wide panel export."""

from __future__ import annotations

import datetime as _dt
import io
import json
import os
import re
from collections.abc import Mapping
from zoneinfo import ZoneInfo

import polars as pl

from trainperf.dcgm.checks import finish
from trainperf.dcgm.fields import FIELDS, DcgmFormatError
from trainperf.dcgm.series import (
    Reading,
    normalise_series,
    read_bytes,
    series_frame,
    src_name,
    to_int,
)
from trainperf.dcgm.text import parse_labels

__all__ = ["read_csv_long", "read_csv_long_reading", "read_grafana_csv", "read_grafana_csv_reading"]

_TS_COLS = ("timestamp", "time", "ts", "datetime")
_NAME_COLS = ("field", "metric", "__name__", "name", "metric_name")
_FID_COLS = ("field_id", "fieldid")
_GRAFANA_HEADER_RE = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)?\s*\{(.*)\}", re.S)


def _read_csv(source, name: str, separator: str = ",") -> pl.DataFrame:
    try:
        return pl.read_csv(io.BytesIO(read_bytes(source)), infer_schema=False, separator=separator,
                           encoding="utf8-lossy")  # fmt: skip
    except pl.exceptions.PolarsError as e:
        raise DcgmFormatError(
            name, None, "a CSV file with a header row", str(e).splitlines()[0]
        ) from None


def _parse_time_column(s: pl.Series, tz: str, name: str, line_offset: int, col: str) -> pl.Series:
    """String column -> epoch us Int64. Numbers: epoch s / ms / us by magnitude."""
    st = s.str.strip_chars()
    num = st.cast(pl.Float64, strict=False)
    if num.null_count() == st.null_count():
        a = num.abs()
        us = pl.select(
            pl.when(a < 1e11).then(num * 1e6).when(a < 1e14).then(num * 1e3).otherwise(num)
        ).to_series()
        bad = (us.is_nan() | us.is_infinite() | (us.abs() > 9e18)).fill_null(False).arg_true()
        if len(bad):
            i = int(bad[0])
            raise DcgmFormatError(
                name, i + line_offset, f"a finite epoch time in column {col!r}", st[i]
            )
        return us.round(0).cast(pl.Int64)
    iso = st.str.replace(r"^(\d{4}-\d\d-\d\d) ", "${1}T")
    has_tz = iso.str.contains(r"(Z|[+-]\d\d:?\d\d)$")
    out = []
    for i, (v, z) in enumerate(zip(iso.to_list(), has_tz.to_list(), strict=True)):
        if v is None:
            out.append(None)
            continue
        try:
            d = _dt.datetime.fromisoformat(v.replace("Z", "+00:00").replace(",", "."))
        except ValueError:
            raise DcgmFormatError(
                name, i + line_offset, f"a time in column {col!r} (epoch s/ms/us or ISO 8601)", v
            ) from None
        if not z and d.tzinfo is None:
            d = d.replace(tzinfo=ZoneInfo(tz))
        out.append(int(round(d.timestamp() * 1_000_000)))
    return pl.Series(out, dtype=pl.Int64)


def _long_series(rec: dict, ncol, fcol, label_cols, name) -> dict:
    mname = rec.get(ncol) if ncol else None
    if not mname:
        fid = to_int(rec.get(fcol))
        mname = FIELDS[fid].name if fid in FIELDS else str(rec.get(fcol))
    labels: dict[str, str] = {}
    entity = entity_id = None
    for c in label_cols:
        v = rec[c]
        if v in (None, ""):
            continue
        lc = c.lower()
        if lc == "labels":
            try:
                obj = json.loads(v)
                labels.update({str(k): str(x) for k, x in obj.items()})
            except (json.JSONDecodeError, AttributeError, RecursionError):
                raise DcgmFormatError(name, None, "a JSON object in column 'labels'", v) from None
        elif lc == "entity":
            entity = v
        elif lc == "entity_id":
            entity_id = to_int(v)
        else:
            labels[c] = v
    srow = normalise_series(mname, labels)
    if entity is not None:
        srow["entity"] = entity
        srow["entity_id"] = entity_id
    return srow


def read_csv_long_reading(
    source: str | os.PathLike | bytes, *, tz: str = "UTC", separator: str = ","
) -> Reading:
    """:func:`read_csv_long`, returning the normalised :class:`~trainperf.dcgm.Reading`."""
    name = src_name(source)
    df = _read_csv(source, name, separator)
    lower = {c.lower(): c for c in df.columns}

    def pick(cands):
        return next((lower[c] for c in cands if c in lower), None)

    tcol, ncol, fcol, vcol = (pick(_TS_COLS), pick(_NAME_COLS), pick(_FID_COLS),
                              pick(("value", "val")))  # fmt: skip
    if tcol is None or vcol is None or (ncol is None and fcol is None):
        raise DcgmFormatError(
            name, 1,
            "a header with time (timestamp/time), metric (field/metric/field_id) and value columns",
            ",".join(df.columns),
        )  # fmt: skip
    df = df.with_row_index("_line", offset=2)
    vs = df[vcol].str.strip_chars()
    na = vs.is_null() | vs.is_in(["", "N/A", "NaN", "nan", "<<<NULL>>>"])
    num = vs.cast(pl.Float64, strict=False)
    bad = df.filter(~na & num.is_null())
    if bad.height:
        raise DcgmFormatError(name, bad["_line"][0], f"a number in column {vcol!r}", bad[vcol][0])
    ts = _parse_time_column(df[tcol], tz, name, 2, tcol)
    label_cols = [c for c in df.columns if c not in (tcol, ncol, fcol, vcol, "_line")]
    df = df.with_columns(value=num, timestamp=ts)
    keycols = [c for c in (ncol, fcol) if c] + label_cols
    uniq = df.select(keycols).unique(maintain_order=True)
    rows = [_long_series(rec, ncol, fcol, label_cols, name) for rec in uniq.iter_rows(named=True)]
    series = series_frame(rows).with_row_index("sid")
    keys = uniq.rename({c: f"_k{i}" for i, c in enumerate(keycols)}).with_row_index("sid")
    df = df.rename({c: f"_k{i}" for i, c in enumerate(keycols)})
    obs = df.select([f"_k{i}" for i in range(len(keycols))] + ["timestamp", "value", "_line"]).join(
        keys, on=[f"_k{i}" for i in range(len(keycols))], how="left", nulls_equal=True,
        maintain_order="left",
    )  # fmt: skip
    bad = obs.filter(pl.col("timestamp").is_null() & pl.col("value").is_not_null())
    if bad.height:
        raise DcgmFormatError(name, int(bad["_line"][0]), f"a time in every row of column {tcol!r}")
    samples = obs.filter(pl.col("value").is_not_null()).select(
        pl.col("sid").cast(pl.UInt32),
        "timestamp",
        "value",
        pl.col("_line").cast(pl.Int64).alias("line"),
    )
    return finish(series, samples, name)


def read_csv_long(
    source: str | os.PathLike | bytes, *, tz: str = "UTC", separator: str = ","
) -> pl.DataFrame:
    """Read a long-form CSV: one row per sample.

    Columns (header names matched case-insensitively):

    * time: ``timestamp``/``time``/``ts`` — epoch seconds, ms or us (chosen by
      magnitude: < 1e11 s, < 1e14 ms, else us) or ISO 8601 (no offset -> ``tz``);
    * metric: ``field``/``metric``/``__name__``/``name`` (any alias) and/or ``field_id``;
    * ``value``;
    * optional: any label column (``hostname``/``Hostname``, ``gpu``, ``UUID``, ``hpc_job``,
      ...), handled like exposition labels; ``entity``/``entity_id`` taken as given; a
      ``labels`` column holding a JSON object (as :data:`trainperf.dcgm.SCHEMA` frames written
      to CSV) is merged into the labels.

    Empty, ``N/A`` and sentinel values are dropped; the value checks of
    :mod:`trainperf.dcgm.checks` apply.

    Raises:
        DcgmFormatError: missing time/metric/value column (line 1), unparsable time or
            value (its line).
    """
    return read_csv_long_reading(source, tz=tz, separator=separator).frame()


def _grafana_header(h: str) -> tuple[str, dict[str, str]] | None:
    h = h.strip()
    if '""' in h:  # CSV-doubled quotes left in a header by the CSV reader
        h = h.replace('""', '"')
    m = _GRAFANA_HEADER_RE.fullmatch(h)
    if not m:
        return None
    labels = parse_labels(m.group(2))
    if labels is None:
        return None
    mname = m.group(1) or labels.pop("__name__", None)
    if not mname:
        return None
    labels.pop("__name__", None)
    return mname, labels


def read_grafana_csv_reading(
    source: str | os.PathLike | bytes,
    *,
    tz: str = "UTC",
    column_labels: Mapping[str, Mapping[str, str]] | None = None,
) -> Reading:
    """:func:`read_grafana_csv`, returning the normalised :class:`~trainperf.dcgm.Reading`."""
    name = src_name(source)
    df = _read_csv(source, name)
    if df.width < 2 or df.columns[0].strip().lower() not in _TS_COLS:
        raise DcgmFormatError(
            name, 1, "a 'Time' first column followed by series columns", ",".join(df.columns)[:200]
        )
    tcol = df.columns[0]
    ts = _parse_time_column(df[tcol], tz, name, 2, tcol)
    frames, rows = [], []
    lines = pl.Series(range(2, df.height + 2), dtype=pl.Int64)
    for ci, col in enumerate(df.columns[1:]):
        if column_labels and col in column_labels:
            lab = dict(column_labels[col])
            mname = lab.pop("__name__", None)
            parsed = (mname, lab) if mname else None
        else:
            parsed = _grafana_header(col)
        if parsed is None:
            raise DcgmFormatError(
                name, 1, 'a label-set header {__name__="...", ...} or an entry in column_labels',
                col, f"column {ci + 2}",
            )  # fmt: skip
        rows.append(normalise_series(*parsed))
        vs = df[col].str.strip_chars()
        num = vs.cast(pl.Float64, strict=False)
        na = vs.is_null() | vs.is_in(["", "N/A", "NaN", "null", "undefined"])
        bad = (~na & num.is_null()).arg_true()
        if len(bad):
            i = int(bad[0])
            raise DcgmFormatError(
                name, i + 2,
                f"a plain number in column {ci + 2} (unit suffix => 'Formatted data' export; re-export with it off)",
                vs[i],
            )  # fmt: skip
        frames.append(pl.DataFrame({"sid": pl.Series([ci] * df.height, dtype=pl.UInt32),
                                    "timestamp": ts, "value": num, "line": lines}))  # fmt: skip
    series = series_frame(rows).with_row_index("sid")
    samples = pl.concat(frames).filter(
        pl.col("value").is_not_null() & pl.col("timestamp").is_not_null()
    )
    return finish(series, samples, name)


def read_grafana_csv(
    source: str | os.PathLike | bytes,
    *,
    tz: str = "UTC",
    column_labels: Mapping[str, Mapping[str, str]] | None = None,
) -> pl.DataFrame:
    """Read a Grafana panel CSV export ("Series joined by time", wide form).

    First column ``Time``: epoch ms (raw export) or date strings (formatted export; read
    in ``tz`` — Grafana writes browser-local time, so pass the browser's zone). Each
    other column header is a label set, ``{__name__="DCGM_FI_DEV_GPU_UTIL", gpu="0", ...}``
    or ``DCGM_FI_DEV_GPU_UTIL{gpu="0", ...}``. Legend-renamed headers (``GPU 0``) carry
    no labels: supply them with ``column_labels={"GPU 0": {"__name__": ..., "gpu": "0",
    "Hostname": ...}}``. Empty cells are gaps.

    Raises:
        DcgmFormatError: a header that is no label set and not in ``column_labels``
            (line 1, column named); a value with a unit suffix (``45 %``, ``67.4 W``:
            a "Formatted data" export, whose scaling is ambiguous — re-export with
            "Formatted data" off) or otherwise non-numeric (its line and column).
    """
    return read_grafana_csv_reading(source, tz=tz, column_labels=column_labels).frame()
