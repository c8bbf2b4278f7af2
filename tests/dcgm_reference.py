"""REFERENCE ONLY: the DCGM readers as they were before the rewrite (trainperf.dcgm at commit ffda09c,
verbatim below this docstring). Tests and benchmarks compare the new readers with it on fixtures and
real captures; the product never imports it.
"""

# ruff: noqa

from __future__ import annotations

import datetime as _dt
import gzip
import hashlib
import io
import json
import os
import re
import tempfile
import urllib.parse
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import polars as pl

from trainperf.errors import InputError

__all__ = [
    "ingest_exposition",
    "ALIASES",
    "DMON_SHORT_NAMES",
    "FIELDS",
    "METRIC_REQUIREMENTS",
    "SCHEMA",
    "SERIES_KEY",
    "DcgmFormatError",
    "FieldInfo",
    "available_metrics",
    "counter_increase",
    "coverage",
    "field_id",
    "missing_metrics",
    "nvlink_throughput",
    "read_csv_long",
    "read_dmon",
    "read_exposition",
    "read_grafana_csv",
    "read_prometheus_api",
    "scan_parquet",
    "with_si_units",
    "write_parquet_partitioned",
    "xid_events",
]

# --------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------

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
"""Output schema of every reader (see the module docstring)."""

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

_INT_BLANK = float(0x7FFFFFFFFFFFFFF0)  # DCGM_INT64_BLANK; as float64 it rounds to 2**63
_INT_BLANK_CMP = 9.2e18  # every int64 sentinel (blank .. blank+3) is >= this as float64
_FP_BLANK = float(2**47)  # DCGM_FP64_BLANK = 140737488355328.0


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
    from trainperf.tables import read_table

    schema = {
        "field_id": pl.Int64, "name": pl.String, "dtype": pl.String, "unit": pl.String,
        "kind": pl.String, "si_unit": pl.String, "si_scale": pl.Float64,
        "profiling": pl.Boolean, "default_on": pl.Boolean, "dmon_short": pl.String,
    }  # fmt: skip
    rows = read_table("dcgm_fields", schema=schema).to_dicts()
    return {r["field_id"]: FieldInfo(**r) for r in rows}


def _load_aliases() -> dict[str, int]:
    from trainperf.tables import read_table

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

Used by :func:`missing_metrics`; the first satisfiable alternative is used.
"""

_HOST_KEYS = ("hostname", "Hostname", "exported_hostname", "exported_Hostname")
_UUID_KEYS = ("UUID", "uuid", "exported_UUID", "exported_uuid")
_GPU_KEYS = ("gpu", "exported_gpu")
_JOB_KEYS = (
    "hpc_job",
    "exported_hpc_job",
    "jobid",
    "slurmjobid",
    "job_id",
    "slurm_job_id",
    "SLURM_JOB_ID",
)
_LINK_KEYS = ("link", "nvlink")
_CONSUMED = set(_HOST_KEYS) | set(_UUID_KEYS) | set(_GPU_KEYS) | set(_JOB_KEYS) | {"__name__"}


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
        self.source, self.line, self.expected, self.got = source, line, expected, got
        loc = f"{source}:{line}" if line is not None else source
        if where:
            loc += f" ({where})"
        msg = f"{loc}: expected {expected}"
        if got:
            msg += f"; got {got[:200]!r}"
        super().__init__(msg)


# --------------------------------------------------------------------------------------
# Helpers shared by readers
# --------------------------------------------------------------------------------------


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


def _resolve_ids(items: Iterable[int | str]) -> list[int]:
    out = []
    for it in items:
        fid = it if isinstance(it, int) else field_id(str(it))
        if fid is None:
            raise ValueError(f"unknown DCGM field {it!r}")
        out.append(fid)
    return out


def _to_int(s: Any) -> int | None:
    if s is None:
        return None
    try:
        return int(str(s).strip())
    except ValueError:
        return None


def _normalise_series(name: str, labels: Mapping[str, str]) -> dict[str, Any]:
    """Turn one (metric name, label dict) into the series attributes of :data:`SCHEMA`."""
    labels = {k: v for k, v in labels.items() if v is not None}
    fid = field_id(name)
    info = FIELDS.get(fid) if fid is not None else None
    canonical = info.name if info else (name[:-6] if name.endswith("_total") and fid else name)

    def first(keys):
        for k in keys:
            v = labels.get(k)
            if v not in (None, ""):
                return k, v
        return None, None

    host_key, host = first(_HOST_KEYS)
    if host is None and labels.get("instance"):
        host = (
            labels["instance"].rsplit(":", 1)[0]
            if ":" in labels["instance"]
            else labels["instance"]
        )
    _, uuid = first(_UUID_KEYS)
    _, gpu_s = first(_GPU_KEYS)
    _, job = first(_JOB_KEYS)
    gpu = _to_int(gpu_s)
    gi = labels.get("GPU_I_ID") or labels.get("exported_GPU_I_ID")
    _, link = first(_LINK_KEYS)
    if link is not None and _to_int(link) is not None:
        entity, entity_id = "NVLink", _to_int(link)
    elif gi not in (None, "") and _to_int(gi) is not None:
        entity, entity_id = "GPU-I", _to_int(gi)
    else:
        entity, entity_id = "GPU", gpu
    rest: dict[str, str] = {}
    for k, v in labels.items():
        if k in _CONSUMED:
            if k in _HOST_KEYS and k != host_key and v != host and v != "":
                rest[k] = v  # a second, different host label: keep it visible
            continue
        if k.startswith("exported_"):
            base = k[len("exported_") :]
            if base in labels:
                rest["target_" + base] = labels[base]
            rest[base] = v
        elif "exported_" + k in labels:
            continue  # handled with its exported_ twin
        else:
            rest[k] = v
    if info is None:
        kind = "double_or_unknown"
    else:
        kind = info.dtype
    return {
        "hostname": host,
        "gpu": gpu,
        "uuid": uuid,
        "entity": entity,
        "entity_id": entity_id,
        "field_id": fid,
        "field": canonical,
        "job_id": job,
        "labels": json.dumps(dict(sorted(rest.items())), separators=(",", ":"), ensure_ascii=False),
        "_is_int": kind == "int64",
        "_is_double": kind == "double",
    }


_SERIES_SCHEMA = {
    "hostname": pl.String,
    "gpu": pl.Int32,
    "uuid": pl.String,
    "entity": pl.String,
    "entity_id": pl.Int32,
    "field_id": pl.Int32,
    "field": pl.String,
    "job_id": pl.String,
    "labels": pl.String,
    "_is_int": pl.Boolean,
    "_is_double": pl.Boolean,
}


def _series_frame(rows: list[dict[str, Any]], extra: dict[str, Any] | None = None) -> pl.DataFrame:
    df = (
        pl.DataFrame(rows, schema=_SERIES_SCHEMA, orient="row")
        if rows
        else pl.DataFrame(schema=_SERIES_SCHEMA)
    )
    if extra:
        df = df.with_columns(
            **{
                k: (v.alias(k) if isinstance(v, pl.Series) else pl.Series(k, v))
                for k, v in extra.items()
            }
        )
    return df


def _valid_value_expr() -> pl.Expr:
    v = pl.col("value")
    int_ok = v < _INT_BLANK_CMP
    fp_exact = (v >= _FP_BLANK) & (v <= _FP_BLANK + 3.0) & (v == v.round(0))
    double_ok = v < _FP_BLANK
    return (
        v.is_not_null()
        & v.is_finite()
        & int_ok
        & pl.when(pl.col("_is_double"))
        .then(double_ok)
        .when(pl.col("_is_int"))
        .then(True)
        .otherwise(~fp_exact)
    )


def _finish(obs: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """obs has series columns + _is_int/_is_double + timestamp (Int64 us) + value."""
    lf = obs.lazy() if isinstance(obs, pl.DataFrame) else obs
    lf = lf.filter(_valid_value_expr()).with_columns(
        pl.col("timestamp").cast(pl.Int64).cast(pl.Datetime("us", "UTC"))
    )
    return lf.select([pl.col(c).cast(t) for c, t in SCHEMA.items()]).collect()


def _empty() -> pl.DataFrame:
    return pl.DataFrame(schema=SCHEMA)


def _epoch_us(x: Any, source: str = "<arg>") -> int:
    """datetime / epoch seconds / ISO-8601 string -> epoch microseconds (UTC)."""
    if isinstance(x, _dt.datetime):
        if x.tzinfo is None:
            x = x.replace(tzinfo=_dt.timezone.utc)  # noqa: UP017 (py3.10)
        return int(round(x.timestamp() * 1_000_000))
    if isinstance(x, (int, float)):
        return int(round(float(x) * 1_000_000))
    s = str(x).strip()
    if re.fullmatch(r"\d+(\.\d+)?", s):
        return int(round(float(s) * 1_000_000))
    try:
        d = _dt.datetime.fromisoformat(s.replace("Z", "+00:00").replace(",", "."))
    except ValueError as e:
        raise DcgmFormatError(source, None, "a timestamp (epoch seconds or ISO 8601)", s) from e
    return _epoch_us(d)


def _src_name(src: Any) -> str:
    return str(src) if isinstance(src, (str, os.PathLike)) else "<bytes>"


def _read_bytes(src: str | os.PathLike | bytes) -> bytes:
    if isinstance(src, (bytes, bytearray, memoryview)):
        return bytes(src)
    p = Path(src)
    if p.suffix == ".gz":
        with gzip.open(p, "rb") as fh:
            return fh.read()
    return p.read_bytes()


def _interval_us(interval: Any) -> int:
    if isinstance(interval, _dt.timedelta):
        return int(round(interval.total_seconds() * 1_000_000))
    if isinstance(interval, (int, float)):
        return int(round(float(interval) * 1_000_000))
    s = str(interval).strip()
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(us|ms|s|m|h)?", s)
    if not m:
        raise ValueError(
            f"interval {interval!r}: expected seconds, a timedelta or e.g. '15s', '500ms', '1m'"
        )
    mult = {
        "us": 1,
        "ms": 1_000,
        "s": 1_000_000,
        None: 1_000_000,
        "m": 60_000_000,
        "h": 3_600_000_000,
    }
    return int(round(float(m.group(1)) * mult[m.group(2)]))


# --------------------------------------------------------------------------------------
# Prometheus text exposition
# --------------------------------------------------------------------------------------

_LABEL_RE = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|$)', re.S)
_ESC_RE = re.compile(r'\\([\\n"])')
_NAME_RE = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_EPOCH_LINE_RE = re.compile(r"\d{9,11}(?:\.\d+)?")
_ISO_LINE_RE = re.compile(
    r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?(?:Z|[+-]\d\d:?\d\d)?"
)
_SCRAPE_RE = re.compile(r"#\s*(?:SCRAPE|TIMESTAMP|scrape_time)\b[:=]?\s*(\S+)\s*$", re.I)


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    return _ESC_RE.sub(lambda m: {"\\": "\\", "n": "\n", '"': '"'}[m.group(1)], s)


def _parse_labels(body: str) -> dict[str, str] | None:
    """Parse the inside of ``{...}``; None if malformed."""
    out: dict[str, str] = {}
    pos, n = 0, len(body)
    while pos < n:
        if body[pos:].strip() == "":
            break
        m = _LABEL_RE.match(body, pos)
        if not m:
            return None
        out[m.group(1)] = _unescape(m.group(2))
        pos = m.end()
    return out


def _split_series_key(key: str) -> tuple[str, dict[str, str]] | None:
    if "{" in key:
        i = key.index("{")
        name, body = key[:i].strip(), key[i + 1 :]
        if not body.endswith("}"):
            return None
        labels = _parse_labels(body[:-1])
        if labels is None:
            return None
    else:
        name, labels = key.strip(), {}
    if not name and "__name__" in labels:
        name = labels.pop("__name__")
    if not _NAME_RE.fullmatch(name):
        return None
    return name, labels


def _marker_us(text: str) -> int | None:
    """A scrape-marker line -> epoch us, or None if the line is not a marker."""
    t = text.strip()
    m = _SCRAPE_RE.fullmatch(t)
    if m:
        t = m.group(1)
    elif t.startswith("#"):
        return None
    if _EPOCH_LINE_RE.fullmatch(t):
        return int(round(float(t) * 1_000_000))
    if _ISO_LINE_RE.fullmatch(t):
        return _epoch_us(t)
    if m:
        raise ValueError(t)
    return None


def read_exposition(
    source: str | os.PathLike | bytes,
    *,
    timestamp: _dt.datetime | float | str | None = None,
    engine: Literal["fast", "prometheus_client"] = "fast",
) -> pl.DataFrame:
    """Read dcgm-exporter Prometheus text exposition: one scrape or an archive of scrapes.

    Accepted forms (mixable in one file; ``.gz`` files are decompressed):

    * **single scrape** (``curl -s host:9400/metrics > f``): every sample gets
      ``timestamp`` if given, else the file's mtime (UTC). Bytes input needs ``timestamp``.
    * **per-sample timestamps**: ``name{labels} value <epoch-ms>`` (Prometheus text
      format); the sample's own timestamp always wins.
    * **archive**: a *scrape marker* line starts each scrape and gives its time to the
      samples after it, until the next marker. Markers are a bare epoch-seconds line
      (``date -u +%s`` or ``date +%s.%N``), a bare ISO-8601 line (``date -u -Iseconds``)
      or a comment ``# SCRAPE <epoch|iso8601>`` (also ``# TIMESTAMP``). Samples before
      the first marker get ``timestamp``/mtime. Capture, e.g.::

          while true; do date -u +%s; curl -s host:9400/metrics; sleep 15; done >> dcgm.prom

    ``# HELP``/``# TYPE`` and other ``#`` comments and blank lines are skipped;
    ``# TYPE ... counter`` does not change how values are kept (they are never
    differenced here).

    Args:
        source: path or the raw bytes.
        timestamp: default sample time (datetime, epoch seconds or ISO string).
        engine: ``"fast"`` (vectorised polars parser, this module) or
            ``"prometheus_client"`` (``prometheus_client.parser.text_string_to_metric_families``
            per scrape; slow, for cross-checking; needs the ``prometheus-client`` package).

    Returns:
        a frame with :data:`SCHEMA` (value in the :data:`FIELDS` unit), rows in file order.

    Raises:
        DcgmFormatError: a line that is neither a sample, a comment, blank nor a
            marker; malformed labels; a non-numeric value/timestamp; or samples with no
            time (bytes input without ``timestamp`` and no marker).
        FileNotFoundError: missing file.
    """
    name = _src_name(source)
    if isinstance(source, (str, os.PathLike)) and not str(source).endswith(".gz"):
        data: bytes | str = str(source)  # let polars read (mmap) the file itself
        Path(source).stat()  # FileNotFoundError early, with the path
    else:
        data = _read_bytes(source)
    if timestamp is not None:
        default_us: int | None = _epoch_us(timestamp, name)
    elif isinstance(source, (str, os.PathLike)):
        default_us = int(round(os.stat(source).st_mtime * 1_000_000))
    else:
        default_us = None
    if engine == "fast":
        frame = _exposition_fast(data, name, default_us)
        if frame.height == 0:
            warnings.warn(f"{name}: no samples (empty file or only comments)", stacklevel=2)
        return frame
    if engine == "prometheus_client":
        return _exposition_prometheus_client(data, name, default_us)
    raise ValueError(f"engine must be 'fast' or 'prometheus_client', not {engine!r}")


def ingest_exposition(
    source: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    timestamp: _dt.datetime | float | str | None = None,
    chunk_mb: float = 256.0,
    progress: bool = False,
) -> dict[str, int]:
    """Stream an exposition archive of any size into a partitioned Parquet store, in bounded memory.

    The file is read in chunks of about ``chunk_mb`` MB that end at a scrape marker (so every chunk
    carries its scrapes' times; a file without markers is cut at any line), each chunk is parsed as
    :func:`read_exposition` parses a whole file (same rules, same errors, line numbers counted from
    the start of the file) and written with :func:`write_parquet_partitioned`. Peak memory is a few
    times ``chunk_mb`` whatever the file size (the fast parser needs about 3x its input); analyse
    the result with :func:`scan_parquet`.

    Args:
        source: exposition file (``.gz`` is decompressed on the fly).
        out_dir: Parquet store (created; files are added, content-hash named, so re-ingesting the
            same file adds nothing).
        timestamp: default sample time for samples before the first marker (default: file mtime).
        chunk_mb: target chunk size in MB (1e6 bytes).
        progress: a tqdm progress bar over bytes read.

    Returns:
        ``{"chunks": n, "rows": n, "bytes": n}``.

    Raises:
        DcgmFormatError: as :func:`read_exposition`, naming the file and the absolute line.
        FileNotFoundError: missing file.
    """
    import gzip

    name = _src_name(source)
    path = Path(source)
    size = path.stat().st_size
    default_us = (
        _epoch_us(timestamp, name)
        if timestamp is not None
        else int(round(os.stat(path).st_mtime * 1_000_000))
    )
    limit = max(1, int(chunk_mb * 1e6))
    opener = gzip.open if str(path).endswith(".gz") else open
    stats = {"chunks": 0, "rows": 0, "bytes": 0}
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=size, unit="B", unit_scale=True, desc=f"ingest {path.name}")

    def flush(buf: list[bytes], first_line: int) -> None:
        data = b"".join(buf)
        frame = _exposition_fast(data, name, default_us, line_offset=first_line - 1)
        if frame.height:
            write_parquet_partitioned(frame, out_dir)
        stats["chunks"] += 1
        stats["rows"] += frame.height
        stats["bytes"] += len(data)
        if bar is not None:
            bar.update(len(data))

    buf: list[bytes] = []
    buf_bytes = 0
    first_line = 1
    seen_marker = False
    with opener(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            head = raw[:1]
            is_marker = False
            if head and not (head.isalpha() or head in b"_:{") and raw.strip():
                try:
                    is_marker = _marker_us(raw.decode("utf-8", "replace").strip()) is not None
                except ValueError:
                    is_marker = False  # reported with its line by the parser
            seen_marker = seen_marker or is_marker
            if buf_bytes >= limit and (is_marker or not seen_marker):
                flush(buf, first_line)
                buf, buf_bytes, first_line = [], 0, lineno
            buf.append(raw)
            buf_bytes += len(raw)
    if buf:
        flush(buf, first_line)
    if bar is not None:
        bar.close()
    return stats


def _exposition_fast(
    data: bytes | str, name: str, default_us: int | None, line_offset: int = 0
) -> pl.DataFrame:
    if (os.path.getsize(data) if isinstance(data, str) else len(data)) == 0:
        return _empty()
    try:
        lines = pl.read_csv(
            data if isinstance(data, str) else io.BytesIO(data),
            has_header=False,
            separator="\x1f",
            quote_char=None,
            new_columns=["line"],
            schema={"line": pl.String},
            encoding="utf8-lossy",
            truncate_ragged_lines=True,
        ).with_row_index("lineno", offset=1 + line_offset)
    except (pl.exceptions.ComputeError, pl.exceptions.SchemaError) as exc:
        # a unit-separator byte (0x1f) in the input: binary or not text exposition
        raise DcgmFormatError(
            name,
            1 + line_offset,
            "Prometheus text exposition (UTF-8 text)",
            f"unreadable bytes ({type(exc).__name__})",
        ) from None
    is_sample = pl.col("line").str.contains(r"^[A-Za-z_:{]")
    # HELP/TYPE comments are skipped without a trip through Python
    other = lines.filter(
        pl.col("line").is_not_null()
        & ~is_sample
        & ~pl.col("line").str.contains(r"^#\s*(?:HELP|TYPE)\s")
    )

    # --- non-sample lines (few): markers, comments, blanks, garbage -----------------
    m_line: list[int] = []
    m_us: list[int] = []
    for lineno, text in other.iter_rows():
        t = text.strip()
        if not t:
            continue
        try:
            us = _marker_us(t)
        except ValueError:
            raise DcgmFormatError(name, lineno, "'# SCRAPE <epoch seconds|ISO 8601>'", t) from None
        if us is not None:
            m_line.append(lineno)
            m_us.append(us)
        elif not t.startswith("#"):
            raise DcgmFormatError(
                name,
                lineno,
                "a sample 'name{labels} value [timestamp_ms]', a '#' comment or a scrape-time line",
                t,
            )

    # --- split samples: key = name{labels}, rest = value [ts] -------------------------
    # fast path: the first "} " ends the label set (one memchr-style scan per line)
    idx = pl.col("line").str.find("} ", literal=True)
    parts = (
        lines.lazy()
        .filter(is_sample)  # fused with the select: no copy of the sample lines
        .select(
            "lineno",
            pl.col("line").str.slice(0, idx + 1).alias("key"),
            pl.col("line").str.slice(idx + 2).str.strip_chars().alias("rest"),
        )
        .collect()
    )
    if parts.height == 0:
        return _empty()
    # lines without labels, or whose "} " split failed (tabs, odd spacing, "} " inside a
    # label value): re-split those few with a full regex
    need_re = pl.col("rest").is_null() | pl.col("rest").str.contains(r"\s\S*\s|[}\"]")
    slow = parts.filter(need_re)
    if slow.height:
        fixed = (
            slow.select("lineno")
            .join(lines, on="lineno", how="left")
            .select(
                "lineno",
                pl.col("line")
                .str.strip_chars_end()
                .str.extract_groups(
                    r"^([A-Za-z_:][A-Za-z0-9_:]*\s*(?:\{.*\})?)\s*?\s(\S+(?:\s+\S+)?)\s*$"
                )
                .alias("g"),
            )
            .unnest("g")
        )
        fixed = fixed.rename({fixed.columns[1]: "key", fixed.columns[2]: "rest"})
        bad = fixed.filter(pl.col("key").is_null())
        if bad.height:
            ln = bad["lineno"][0]
            raise DcgmFormatError(
                name,
                ln,
                "a sample 'name{labels} value [timestamp_ms]'",
                lines["line"][ln - 1 - line_offset],
            )
        parts = pl.concat([parts.filter(~need_re), fixed.select("lineno", "key", "rest")]).sort(
            "lineno"
        )
    j = pl.col("rest").str.find(" ", literal=True)
    parts = (
        parts.lazy()
        .with_columns(
            pl.when(j.is_null())
            .then(pl.col("rest"))
            .otherwise(pl.col("rest").str.slice(0, j))
            .alias("v_s"),
            pl.when(j.is_null())
            .then(None)
            .otherwise(pl.col("rest").str.slice(j + 1).str.strip_chars())
            .alias("ts_s"),
        )
        .with_columns(
            pl.col("v_s").cast(pl.Float64, strict=False).alias("value"),
            pl.col("ts_s").cast(pl.Int64, strict=False).alias("ts_ms"),
        )
        .collect()
    )
    special = pl.col("v_s").str.to_lowercase().is_in(["nan", "+inf", "-inf", "inf"])
    bad = parts.filter(
        (pl.col("value").is_null() & ~special)
        | (pl.col("ts_s").is_not_null() & pl.col("ts_ms").is_null())
    )
    if bad.height:
        ln = bad["lineno"][0]
        raise DcgmFormatError(
            name,
            ln,
            "a numeric value and optional integer timestamp (ms)",
            lines["line"][ln - 1 - line_offset],
        )

    # --- series keys -> attributes (Python over the distinct keys only) ---------------
    keys = parts.group_by("key", maintain_order=True).agg(pl.col("lineno").first())
    rows = []
    for key, ln in keys.iter_rows():
        sk = _split_series_key(key)
        if sk is None:
            raise DcgmFormatError(name, ln, 'labels as {name="value",...}', key)
        rows.append(_normalise_series(*sk))
    series = _series_frame(rows, {"key": keys["key"].to_list()})

    # --- timestamps: per-sample ms > scrape marker > default --------------------------
    if m_line:
        markers = pl.DataFrame(
            {"lineno": m_line, "scrape_us": m_us},
            schema={"lineno": pl.UInt32, "scrape_us": pl.Int64},
        )
        parts = parts.join_asof(markers, on="lineno", strategy="backward")
    else:
        parts = parts.with_columns(pl.lit(None, pl.Int64).alias("scrape_us"))
    parts = parts.with_columns(
        pl.coalesce(
            pl.col("ts_ms") * 1000, pl.col("scrape_us"), pl.lit(default_us, pl.Int64)
        ).alias("timestamp")
    )
    missing = parts.filter(pl.col("timestamp").is_null())
    if missing.height:
        ln = missing["lineno"][0]
        raise DcgmFormatError(
            name,
            ln,
            "a sample time: a scrape marker line before it, a per-sample ms timestamp, or timestamp=",
            lines["line"][ln - 1 - line_offset],
        )
    obs = (
        parts.lazy()
        .select("key", "timestamp", "value")
        .join(series.lazy(), on="key", how="left", maintain_order="left")
    )
    return _finish(obs)


def _split_scrapes(text: str, name: str) -> list[tuple[int | None, int, str]]:
    """Split an archive into (marker_us, first_line_no, text) chunks."""
    chunks: list[tuple[int | None, int, str]] = []
    cur: list[str] = []
    cur_us: int | None = None
    start = 1
    for i, line in enumerate(text.split("\n"), start=1):
        t = line.strip()
        us = None
        if t and not (t[0].isalpha() or t[0] in "_:{"):
            try:
                us = _marker_us(t)
            except ValueError:
                raise DcgmFormatError(name, i, "'# SCRAPE <epoch seconds|ISO 8601>'", t) from None
        if us is not None:
            if cur:
                chunks.append((cur_us, start, "\n".join(cur) + "\n"))
            cur, cur_us, start = [], us, i + 1
        else:
            cur.append(line)
    if cur:
        chunks.append((cur_us, start, "\n".join(cur) + "\n"))
    return chunks


def _exposition_prometheus_client(
    data: bytes | str, name: str, default_us: int | None
) -> pl.DataFrame:
    from prometheus_client.parser import text_string_to_metric_families

    if isinstance(data, str):
        data = Path(data).read_bytes()
    text = data.decode("utf-8", errors="replace")
    sid_of: dict[tuple, int] = {}
    rows: list[dict[str, Any]] = []
    o_sid: list[int] = []
    o_ts: list[int | None] = []
    o_val: list[float] = []
    for scrape_us, first_line, chunk in _split_scrapes(text, name):
        try:
            fams = list(text_string_to_metric_families(chunk))
        except Exception as e:  # prometheus_client raises bare ValueError/IndexError
            raise DcgmFormatError(
                name, first_line, f"valid Prometheus text in the scrape starting here ({e})"
            ) from e
        for fam in fams:
            for s in fam.samples:
                n = s.name
                if (
                    fam.type == "counter"
                    and n.endswith("_total")
                    and (n + "{") not in chunk
                    and (n + " ") not in chunk
                ):
                    n = n[:-6]  # prometheus_client appended _total to a counter sample
                k = (n, tuple(sorted(s.labels.items())))
                sid = sid_of.get(k)
                if sid is None:
                    sid = sid_of[k] = len(rows)
                    rows.append(_normalise_series(n, s.labels))
                ts = s.timestamp
                if ts is not None:
                    ts_us = int(round(float(ts) * 1_000_000))
                elif scrape_us is not None:
                    ts_us = scrape_us
                elif default_us is not None:
                    ts_us = default_us
                else:
                    raise DcgmFormatError(
                        name, first_line, "a sample time (scrape marker or timestamp=)"
                    )
                o_sid.append(sid)
                o_ts.append(ts_us)
                o_val.append(float(s.value))
    if not o_sid:
        return _empty()
    series = _series_frame(rows).with_row_index("sid")
    obs = pl.DataFrame(
        {"sid": o_sid, "timestamp": o_ts, "value": o_val},
        schema={"sid": pl.UInt32, "timestamp": pl.Int64, "value": pl.Float64},
    )
    return _finish(obs.join(series, on="sid", how="left", maintain_order="left"))


# --------------------------------------------------------------------------------------
# Prometheus HTTP API JSON
# --------------------------------------------------------------------------------------


def read_prometheus_api(
    source: str | os.PathLike | bytes | Mapping | Sequence, *, metric: str | None = None
) -> pl.DataFrame:
    """Read Prometheus HTTP API results: ``/api/v1/query`` (vector) or ``/api/v1/query_range`` (matrix).

    Accepts one response envelope ``{"status":"success","data":{"resultType":...}}``, a
    JSON list of envelopes (chunked range queries), or JSON Lines with one envelope per
    line; as a path, bytes, or already-decoded object. Values are strings in the API
    (``"NaN"``, ``"+Inf"`` are dropped); timestamps are float epoch seconds.
    See https://prometheus.io/docs/prometheus/latest/querying/api/.

    Args:
        source: path / bytes / decoded JSON.
        metric: metric name for results whose ``metric`` has no ``__name__`` (e.g.
            after ``avg by (...)``).

    Returns:
        a frame with :data:`SCHEMA`.

    Raises:
        DcgmFormatError: invalid JSON (with its line), ``status`` not ``success``, a
            ``resultType`` other than vector/matrix, or a malformed sample (JSON path given).
    """
    name = _src_name(source) if not isinstance(source, (Mapping, list, tuple)) else "<json>"
    if isinstance(source, (Mapping, list, tuple)):
        docs = [source] if isinstance(source, Mapping) else list(source)
    else:
        text = _read_bytes(source).decode("utf-8")
        try:
            obj = json.loads(text)
            docs = obj if isinstance(obj, list) else [obj]
        except json.JSONDecodeError as e:
            if e.msg != "Extra data":  # not JSON Lines either: report the first error
                raise DcgmFormatError(name, e.lineno, f"JSON ({e.msg}, column {e.colno})") from e
            docs = []
            for i, line in enumerate(text.splitlines(), start=1):
                if not line.strip():
                    continue
                try:
                    docs.append(json.loads(line))
                except json.JSONDecodeError as e2:
                    raise DcgmFormatError(
                        name, i, f"one JSON document per line ({e2.msg}, column {e2.colno})"
                    ) from e2
    rows: list[dict[str, Any]] = []
    sid_of: dict[tuple, int] = {}
    o_sid: list[int] = []
    o_ts: list[int] = []
    o_val: list[float] = []
    for di, doc in enumerate(docs):
        where = f"document {di}"
        if not isinstance(doc, Mapping) or "status" not in doc:
            raise DcgmFormatError(
                name, None, 'an API envelope {"status":..., "data":...}', str(doc)[:100], where
            )
        if doc["status"] != "success":
            raise DcgmFormatError(
                name,
                None,
                'status "success"',
                f"{doc.get('status')}: {doc.get('errorType')}: {doc.get('error')}",
                where,
            )
        data = doc.get("data") or {}
        rtype = data.get("resultType")
        if rtype not in ("vector", "matrix"):
            raise DcgmFormatError(name, None, "resultType 'vector' or 'matrix'", str(rtype), where)
        for ri, res in enumerate(data.get("result") or []):
            path = f"{where}: data.result[{ri}]"
            labels = dict(res.get("metric") or {})
            mname = labels.pop("__name__", None) or metric
            if not mname:
                raise DcgmFormatError(
                    name,
                    None,
                    "a __name__ label or the metric= argument",
                    json.dumps(labels)[:100],
                    path,
                )
            k = (mname, tuple(sorted(labels.items())))
            sid = sid_of.get(k)
            if sid is None:
                sid = sid_of[k] = len(rows)
                rows.append(_normalise_series(mname, labels))
            pts = [res.get("value")] if rtype == "vector" else res.get("values")
            if pts is None:
                raise DcgmFormatError(
                    name,
                    None,
                    "'value'" if rtype == "vector" else "'values'",
                    json.dumps(res)[:100],
                    path,
                )
            for pi, pt in enumerate(pts):
                try:
                    ts, v = pt
                    o_ts.append(int(round(float(ts) * 1_000_000)))
                    o_val.append(float(v))
                except (TypeError, ValueError):
                    raise DcgmFormatError(
                        name,
                        None,
                        '[<epoch seconds>, "<value>"]',
                        json.dumps(pt)[:100],
                        f"{path}.values[{pi}]",
                    ) from None
                o_sid.append(sid)
    if not o_sid:
        return _empty()
    series = _series_frame(rows).with_row_index("sid")
    obs = pl.DataFrame(
        {"sid": o_sid, "timestamp": o_ts, "value": o_val},
        schema={"sid": pl.UInt32, "timestamp": pl.Int64, "value": pl.Float64},
    )
    return _finish(obs.join(series, on="sid", how="left", maintain_order="left"))


# --------------------------------------------------------------------------------------
# dcgmi dmon
# --------------------------------------------------------------------------------------

_DMON_TS_RE = re.compile(
    r"^(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?|\d{9,11}(?:\.\d+)?)\s+(.*)$"
)
_DMON_HEADER_RE = re.compile(r"^#\s*Entity\b\s*(.*)$", re.I)
_DMON_UNITS_RE = re.compile(r"^(ID|Id)\b", re.I)
_DMON_ROW_RE = re.compile(r"^([A-Za-z][A-Za-z-]*)\s+(\d+)(?:\s+(LINK|Link|link)\s+(\d+))?\s+(.*)$")
_DMON_NOISE = ("dmon was stopped", "Note:")


def read_dmon(
    source: str | os.PathLike | bytes,
    *,
    hostname: str | None = None,
    fields: Sequence[int | str] | None = None,
    start: _dt.datetime | float | str | None = None,
    interval: float | str | _dt.timedelta | None = None,
    tz: str = "UTC",
) -> pl.DataFrame:
    """Read ``dcgmi dmon -e <ids>`` text output.

    ``dcgmi dmon`` prints no timestamps. Two capture forms are accepted:

    * **timestamped** (recommended): each line prefixed by an ISO-8601 time or epoch
      seconds, e.g.::

          dcgmi dmon -e 1001,1004,1005 -d 1000 | ts '%Y-%m-%dT%H:%M:%.SZ'   # TZ=UTC, moreutils
          dcgmi dmon -e 1001,1004 | gawk '{ print strftime("%Y-%m-%dT%H:%M:%SZ", systime(), 1), $0; fflush() }'
          dcgmi dmon -e 1001,1004 | ts '%.s'                                 # epoch seconds

      Timestamps without an offset are read in ``tz``.
    * **untimed**: pass ``start`` (time of the first tick) and ``interval`` (the ``-d``
      delay; seconds, timedelta or ``"1s"``/``"500ms"``); tick *i* is at
      ``start + i * interval``.

    Rows are grouped into ticks: a tick ends when an entity repeats. All rows of a tick
    get the tick's time (the first row's time in the timestamped form). A tick whose
    cells are all ``N/A`` yields no rows but still counts. Header lines (``#Entity``,
    ``# Entity``, ``ID``/``Id``) may recur anywhere (dmon repeats them every 14 ticks);
    the ``dmon was stopped ...`` trailer and blank lines are skipped. Columns are mapped
    to field ids by ``fields`` (the ``-e`` list, in order) or else by
    :data:`DMON_SHORT_NAMES`. Entities: ``GPU n`` -> (GPU, gpu=n), ``GPU-I n`` ->
    (GPU-I, entity_id=n, gpu null: DCGM instance ids are not GPU indices),
    ``GPU n LINK k`` -> (NVLink, gpu=n, entity_id=k); others keep their printed type.

    Returns:
        a frame with :data:`SCHEMA`; ``uuid``, ``job_id`` null, ``labels`` ``"{}"``,
        ``hostname`` = ``hostname``.

    Raises:
        DcgmFormatError: data before any header, a row whose cell count differs from the
            header, an unknown column name without ``fields``, a non-numeric cell, mixed
            timed/untimed rows, or no timestamps and no ``start``/``interval``.
    """
    name = _src_name(source)
    text = _read_bytes(source).decode("utf-8", errors="replace")
    cols: list[int] | None = None
    fixed_ids = _resolve_ids(fields) if fields is not None else None
    tick = -1
    seen: set[tuple] = set()
    tick_us: list[int | None] = []
    timed: bool | None = None
    r_tick: list[int] = []
    r_ent: list[tuple] = []
    r_fid: list[int] = []
    r_val: list[float] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        ts_us = None
        m = _DMON_TS_RE.match(line)
        if m and not line.startswith(("GPU", "#")):
            ts_us = _local_us(m.group(1), tz, name, lineno)
            line = m.group(2).strip()
        if not line or line.startswith(_DMON_NOISE):
            continue
        h = _DMON_HEADER_RE.match(line)
        if h:
            shorts = h.group(1).split()
            if fixed_ids is not None:
                if len(shorts) != len(fixed_ids):
                    raise DcgmFormatError(
                        name, lineno, f"{len(fixed_ids)} columns as in fields=", line
                    )
                cols = fixed_ids
            else:
                cols = []
                for s in shorts:
                    if s.upper() not in DMON_SHORT_NAMES:
                        raise DcgmFormatError(
                            name,
                            lineno,
                            f"a known dmon column ({', '.join(sorted(DMON_SHORT_NAMES))}) or pass fields=",
                            s,
                        )
                    cols.append(DMON_SHORT_NAMES[s.upper()])
            continue
        if line.startswith("#") or _DMON_UNITS_RE.match(line):
            continue
        r = _DMON_ROW_RE.match(line)
        if not r:
            raise DcgmFormatError(
                name, lineno, "a row 'GPU <n> <values...>' or a '#Entity' header", raw
            )
        if cols is None:
            raise DcgmFormatError(
                name, lineno, "a '#Entity ...' header before the first data row", raw
            )
        is_timed = ts_us is not None
        if timed is None:
            timed = is_timed
        elif timed != is_timed:
            raise DcgmFormatError(name, lineno, "every data row timestamped, or none", raw)
        etype, eid, link = r.group(1), int(r.group(2)), r.group(4)
        if link is not None:
            ent = ("NVLink", eid, int(link))
        elif etype.upper() == "GPU":
            ent = ("GPU", eid, eid)
        else:
            ent = ("GPU-I" if etype.upper() == "GPU-I" else etype, None, eid)
        if tick < 0 or ent in seen:
            tick += 1
            seen = set()
            tick_us.append(ts_us)
        seen.add(ent)
        cells = r.group(5).split()
        if len(cells) != len(cols):
            raise DcgmFormatError(name, lineno, f"{len(cols)} values (one per header column)", raw)
        for fid, c in zip(cols, cells, strict=True):
            if c in ("N/A", "<<<NULL>>>", "-"):
                continue
            try:
                v = float(c)
            except ValueError:
                raise DcgmFormatError(name, lineno, "a number or N/A in every cell", c) from None
            r_tick.append(tick)
            r_ent.append(ent)
            r_fid.append(fid)
            r_val.append(v)
    if tick < 0:
        return _empty()
    if not timed:
        if start is None or interval is None:
            raise DcgmFormatError(
                name,
                None,
                "timestamped lines (see read_dmon docs) or start= and interval= arguments",
                "no timestamps",
            )
        s_us, i_us = _epoch_us(start, name), _interval_us(interval)
        tick_us = [s_us + i * i_us for i in range(tick + 1)]
    if not r_val:
        return _empty()
    ents = {e: i for i, e in enumerate(dict.fromkeys(r_ent))}
    srows = []
    for (etype, gpu, eid), _ in ents.items():
        srows.append(
            {
                "hostname": hostname,
                "gpu": gpu,
                "uuid": None,
                "entity": etype,
                "entity_id": eid,
                "job_id": None,
                "labels": "{}",
            }
        )
    ent_df = pl.DataFrame(
        srows, schema={k: _SERIES_SCHEMA[k] for k in srows[0]}, orient="row"
    ).with_row_index("eid")
    finfo = pl.DataFrame(
        {
            "field_id": list(dict.fromkeys(r_fid)),
        },
        schema={"field_id": pl.Int32},
    ).with_columns(
        pl.col("field_id")
        .map_elements(lambda i: FIELDS[i].name if i in FIELDS else str(i), return_dtype=pl.String)
        .alias("field"),
        pl.col("field_id")
        .map_elements(
            lambda i: FIELDS[i].dtype == "int64" if i in FIELDS else False, return_dtype=pl.Boolean
        )
        .alias("_is_int"),
        pl.col("field_id")
        .map_elements(
            lambda i: FIELDS[i].dtype == "double" if i in FIELDS else False, return_dtype=pl.Boolean
        )
        .alias("_is_double"),
    )
    obs = pl.DataFrame(
        {
            "eid": [ents[e] for e in r_ent],
            "field_id": r_fid,
            "timestamp": [tick_us[t] for t in r_tick],
            "value": r_val,
        },
        schema={"eid": pl.UInt32, "field_id": pl.Int32, "timestamp": pl.Int64, "value": pl.Float64},
    )
    obs = obs.join(ent_df, on="eid", how="left", maintain_order="left").join(
        finfo, on="field_id", how="left", maintain_order="left"
    )
    return _finish(obs)


def _local_us(s: str, tz: str, name: str, lineno: int) -> int:
    if re.fullmatch(r"\d+(\.\d+)?", s):
        return int(round(float(s) * 1_000_000))
    try:
        d = _dt.datetime.fromisoformat(s.replace("Z", "+00:00").replace(",", "."))
    except ValueError:
        raise DcgmFormatError(name, lineno, "an ISO-8601 or epoch-seconds line prefix", s) from None
    if d.tzinfo is None:
        from zoneinfo import ZoneInfo

        d = d.replace(tzinfo=ZoneInfo(tz))
    return int(round(d.timestamp() * 1_000_000))


# --------------------------------------------------------------------------------------
# CSV: long form and Grafana wide export
# --------------------------------------------------------------------------------------

_TS_COLS = ("timestamp", "time", "ts", "datetime")
_NAME_COLS = ("field", "metric", "__name__", "name", "metric_name")
_FID_COLS = ("field_id", "fieldid")


def _parse_time_column(s: pl.Series, tz: str, name: str, line_offset: int, col: str) -> pl.Series:
    """String column -> epoch us Int64. Numbers: epoch s / ms / us by magnitude."""
    st = s.str.strip_chars()
    num = st.cast(pl.Float64, strict=False)
    if num.null_count() == st.null_count():
        a = num.abs()
        us = pl.select(
            pl.when(a < 1e11)
            .then(num * 1e6)
            .when(a < 1e14)
            .then(num * 1e3)
            .otherwise(num)
            .round(0)
            .cast(pl.Int64)
        ).to_series()
        return us
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
            from zoneinfo import ZoneInfo

            d = d.replace(tzinfo=ZoneInfo(tz))
        out.append(int(round(d.timestamp() * 1_000_000)))
    return pl.Series(out, dtype=pl.Int64)


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
      ``labels`` column holding a JSON object (as :data:`SCHEMA` frames written to CSV)
      is merged into the labels.

    Empty, ``N/A`` and sentinel values are dropped.

    Raises:
        DcgmFormatError: missing time/metric/value column (line 1), unparsable time or
            value (its line).
    """
    name = _src_name(source)
    df = pl.read_csv(io.BytesIO(_read_bytes(source)), infer_schema=False, separator=separator)
    lower = {c.lower(): c for c in df.columns}

    def pick(cands):
        for c in cands:
            if c in lower:
                return lower[c]
        return None

    tcol, ncol, fcol, vcol = (
        pick(_TS_COLS),
        pick(_NAME_COLS),
        pick(_FID_COLS),
        pick(("value", "val")),
    )
    if tcol is None or vcol is None or (ncol is None and fcol is None):
        raise DcgmFormatError(
            name,
            1,
            "a header with time (timestamp/time), metric (field/metric/field_id) and value columns",
            ",".join(df.columns),
        )
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
    rows = []
    for rec in uniq.iter_rows(named=True):
        mname = rec.get(ncol) if ncol else None
        if not mname:
            fid = _to_int(rec.get(fcol))
            mname = FIELDS[fid].name if fid in FIELDS else str(rec.get(fcol))
        labels = {}
        entity = entity_id = None
        for c in label_cols:
            v = rec[c]
            if v in (None, ""):
                continue
            lc = c.lower()
            if lc == "labels":
                try:
                    labels.update({k: str(x) for k, x in json.loads(v).items()})
                except (json.JSONDecodeError, AttributeError):
                    raise DcgmFormatError(
                        name, None, "a JSON object in column 'labels'", v
                    ) from None
            elif lc == "entity":
                entity = v
            elif lc == "entity_id":
                entity_id = _to_int(v)
            else:
                labels[c] = v
        srow = _normalise_series(mname, labels)
        if entity is not None:
            srow["entity"] = entity
            srow["entity_id"] = entity_id
        rows.append(srow)
    series = _series_frame(rows, {f"_k{i}": uniq[c] for i, c in enumerate(keycols)})
    df = df.rename({c: f"_k{i}" for i, c in enumerate(keycols)})
    obs = df.select([f"_k{i}" for i in range(len(keycols))] + ["timestamp", "value"]).join(
        series,
        on=[f"_k{i}" for i in range(len(keycols))],
        how="left",
        nulls_equal=True,
        maintain_order="left",
    )
    bad = obs.filter(pl.col("timestamp").is_null() & pl.col("value").is_not_null())
    if bad.height:
        raise DcgmFormatError(name, None, f"a time in every row of column {tcol!r}")
    return _finish(obs)


_GRAFANA_LABEL_RE = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')


def _grafana_header(h: str) -> tuple[str, dict[str, str]] | None:
    h = h.strip()
    if '""' in h:  # CSV-doubled quotes left in a header by the CSV reader
        h = h.replace('""', '"')
    m = re.fullmatch(r"([A-Za-z_:][A-Za-z0-9_:]*)?\s*\{(.*)\}", h, re.S)
    if not m:
        return None
    labels = _parse_labels(m.group(2))
    if labels is None:
        return None
    mname = m.group(1) or labels.pop("__name__", None)
    if not mname:
        return None
    labels.pop("__name__", None)
    return mname, labels


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
    name = _src_name(source)
    df = pl.read_csv(io.BytesIO(_read_bytes(source)), infer_schema=False)
    if df.width < 2 or df.columns[0].strip().lower() not in _TS_COLS:
        raise DcgmFormatError(
            name, 1, "a 'Time' first column followed by series columns", ",".join(df.columns)[:200]
        )
    tcol = df.columns[0]
    ts = _parse_time_column(df[tcol], tz, name, 2, tcol)
    frames = []
    rows = []
    for ci, col in enumerate(df.columns[1:]):
        if column_labels and col in column_labels:
            lab = dict(column_labels[col])
            mname = lab.pop("__name__", None)
            parsed = (mname, lab) if mname else None
        else:
            parsed = _grafana_header(col)
        if parsed is None:
            raise DcgmFormatError(
                name,
                1,
                'a label-set header {__name__="...", ...} or an entry in column_labels',
                col,
                f"column {ci + 2}",
            )
        rows.append(_normalise_series(*parsed))
        vs = df[col].str.strip_chars()
        num = vs.cast(pl.Float64, strict=False)
        na = vs.is_null() | vs.is_in(["", "N/A", "NaN", "null", "undefined"])
        bad = (~na & num.is_null()).arg_true()
        if len(bad):
            i = int(bad[0])
            raise DcgmFormatError(
                name,
                i + 2,
                f"a plain number in column {ci + 2} (unit suffix => 'Formatted data' export; re-export with it off)",
                vs[i],
            )
        frames.append(
            pl.DataFrame(
                {"sid": pl.Series([ci] * df.height, dtype=pl.UInt32), "timestamp": ts, "value": num}
            )
        )
    series = _series_frame(rows).with_row_index("sid")
    obs = pl.concat(frames).join(series, on="sid", how="left", maintain_order="left")
    return _finish(obs)


# --------------------------------------------------------------------------------------
# Analysis helpers
# --------------------------------------------------------------------------------------


def with_si_units(frame: pl.DataFrame) -> pl.DataFrame:
    """Add ``unit`` (String, as read), ``value_si`` (Float64) and ``si_unit`` (String) by field id.

    Conversions (:data:`FIELDS`): % -> ratio (x0.01), MHz -> Hz, mJ -> J, MiB -> B
    (x2**20), MB/s -> B/s (x1e6), KB/s -> B/s, ns -> s. Unknown fields get nulls.
    """
    t = pl.DataFrame(
        {
            "field_id": list(FIELDS),
            "unit": [f.unit for f in FIELDS.values()],
            "si_unit": [f.si_unit for f in FIELDS.values()],
            "_scale": [f.si_scale for f in FIELDS.values()],
        },
        schema={
            "field_id": pl.Int32,
            "unit": pl.String,
            "si_unit": pl.String,
            "_scale": pl.Float64,
        },
    )
    return (
        frame.join(t, on="field_id", how="left", maintain_order="left")
        .with_columns((pl.col("value") * pl.col("_scale")).alias("value_si"))
        .drop("_scale")
    )


def counter_increase(frame: pl.DataFrame, field: int | str) -> pl.DataFrame:
    """Reset-aware increase of a *counter* field per series between consecutive samples.

    A negative step is a counter reset (driver reload / reboot): the increase of that
    step is the new value (counted from 0), as Prometheus ``increase()`` does.

    Returns:
        columns SERIES_KEY + timestamp (Datetime[us, UTC]) + ``increase`` (Float64, in
        the field's unit; null on each series' first sample).

    Raises:
        ValueError: the field is not a counter in :data:`FIELDS` (e.g. the PCIe/NVLink
            ``*_BYTES`` rates, which dcgm-exporter declares ``counter`` but are B/s gauges).
    """
    (fid,) = _resolve_ids([field])
    info = FIELDS[fid]
    if info.kind != "counter":
        raise ValueError(
            f"{info.name} ({fid}) is a {info.kind} in {info.unit}, not a counter: never difference it"
        )
    d = frame.filter(pl.col("field_id") == fid).sort([*SERIES_KEY, "timestamp"], nulls_last=True)
    step = pl.col("value").diff().over(SERIES_KEY)
    return d.with_columns(
        pl.when(step < 0).then(pl.col("value")).otherwise(step).alias("increase")
    ).select([*SERIES_KEY, "timestamp", "increase"])


def coverage(
    frame: pl.DataFrame,
    interval: float | str | _dt.timedelta,
    *,
    start: _dt.datetime | float | str | None = None,
    end: _dt.datetime | float | str | None = None,
) -> pl.DataFrame:
    """Share of expected samples present, per series.

    The window is [``start``, ``end``] if given, else per host the first and last
    timestamp of *any* series of that host (so a series that stops early scores < 1).
    ``n_expected = floor((end - start) / interval) + 1``; ``n_present`` = distinct
    timestamps of the series inside the window (duplicates count once); ``coverage =
    min(1, n_present / n_expected)``. Series absent altogether do not appear: see
    :func:`missing_metrics`.

    Returns:
        SERIES_KEY columns + ``start``, ``end`` (Datetime[us, UTC]), ``n_present``,
        ``n_expected`` (Int64), ``coverage`` (Float64).
    """
    iv = _interval_us(interval)
    if iv <= 0:
        raise ValueError("interval must be positive")
    f = frame.with_columns(pl.col("timestamp").dt.epoch("us").alias("_us"))
    if start is not None and end is not None:
        win = (
            f.select("hostname")
            .unique()
            .with_columns(pl.lit(_epoch_us(start)).alias("_s"), pl.lit(_epoch_us(end)).alias("_e"))
        )
    else:
        win = f.group_by("hostname").agg(
            pl.col("_us").min().alias("_s"), pl.col("_us").max().alias("_e")
        )
        if start is not None:
            win = win.with_columns(pl.lit(_epoch_us(start)).alias("_s"))
        if end is not None:
            win = win.with_columns(pl.lit(_epoch_us(end)).alias("_e"))
    f = f.join(win, on="hostname", how="left", nulls_equal=True)
    out = (
        f.group_by(SERIES_KEY)
        .agg(
            pl.col("_s").first(),
            pl.col("_e").first(),
            pl.col("_us")
            .filter((pl.col("_us") >= pl.col("_s")) & (pl.col("_us") <= pl.col("_e")))
            .n_unique()
            .alias("n_present"),
        )
        .with_columns(
            (((pl.col("_e") - pl.col("_s")) // iv) + 1).cast(pl.Int64).alias("n_expected")
        )
        .with_columns(
            pl.min_horizontal(pl.lit(1.0), pl.col("n_present") / pl.col("n_expected")).alias(
                "coverage"
            ),
            pl.col("_s").cast(pl.Datetime("us", "UTC")).alias("start"),
            pl.col("_e").cast(pl.Datetime("us", "UTC")).alias("end"),
            pl.col("n_present").cast(pl.Int64),
        )
    )
    return out.select([*SERIES_KEY, "start", "end", "n_present", "n_expected", "coverage"]).sort(
        SERIES_KEY, nulls_last=True
    )


def available_metrics(frame: pl.DataFrame) -> pl.DataFrame:
    """Which DCGM fields a frame holds.

    Returns:
        one row per (field_id, field): ``n_hosts`` (UInt32), ``n_series`` (UInt32),
        ``n_samples`` (UInt32), ``profiling`` (Boolean), ``unit`` (String), sorted by id.
    """
    g = frame.group_by("field_id", "field").agg(
        pl.col("hostname").n_unique().alias("n_hosts"),
        pl.struct(SERIES_KEY).n_unique().alias("n_series"),
        pl.len().alias("n_samples"),
    )
    return g.with_columns(
        pl.col("field_id")
        .map_elements(
            lambda i: FIELDS[i].profiling if i in FIELDS else None, return_dtype=pl.Boolean
        )
        .alias("profiling"),
        pl.col("field_id")
        .map_elements(lambda i: FIELDS[i].unit if i in FIELDS else None, return_dtype=pl.String)
        .alias("unit"),
    ).sort("field_id", nulls_last=True)


def missing_metrics(frame: pl.DataFrame, wanted: Iterable[int | str]) -> pl.DataFrame:
    """Say which wanted fields / report metrics cannot be computed, per host, and why.

    ``wanted`` holds field ids, metric names (any alias) or keys of
    :data:`METRIC_REQUIREMENTS` (``"sm_active"``, ``"nvlink_bytes"``...; a metric is
    computable on a host if one of its alternatives has all its fields there).

    Reasons (``reason`` column), most specific first:

    * ``no_profiling``: the host exports no ``DCGM_FI_PROF_*`` series at all (profiling
      module unavailable: DCP unsupported on the GPU/MIG profile, counters held by
      another profiler such as Nsight, or no DCP fields in the exporter's counter CSV);
    * ``off_by_default``: a field commented out in dcgm-exporter ``default-counters.csv``
      (SM_ACTIVE, SM_OCCUPANCY, NVLINK_TX/RX, FP pipes...): enable it in the CSV (``-f``);
    * ``not_exported``: any other absent field.

    Returns:
        one row per (wanted item, host) that is *not* computable: ``wanted`` (String),
        ``hostname`` (String), ``missing_field_ids`` (List[Int32]), ``reason``
        (String), ``detail`` (String). Empty frame = everything computable.
    """
    hosts = frame["hostname"].unique(maintain_order=True).to_list() or [None]
    have: dict[Any, set[int]] = {h: set() for h in hosts}
    for h, fid in frame.select("hostname", "field_id").unique().iter_rows():
        if fid is not None:
            have.setdefault(h, set()).add(fid)
    out = []
    for w in wanted:
        if isinstance(w, str) and w in METRIC_REQUIREMENTS:
            alts = METRIC_REQUIREMENTS[w]
        else:
            alts = [tuple(_resolve_ids([w]))]
        for h in hosts:
            fids = have.get(h, set())
            if any(all(x in fids for x in alt) for alt in alts):
                continue
            miss = [x for x in alts[0] if x not in fids]
            prof_any = any(FIELDS.get(x) and FIELDS[x].profiling for x in fids)
            infos = [FIELDS[x] for x in miss if x in FIELDS]
            if any(i.profiling for i in infos) and not prof_any:
                reason = "no_profiling"
                detail = "host exports no DCGM_FI_PROF_* series: profiling (DCP) unavailable or not enabled"
            elif infos and all(not i.default_on for i in infos):
                reason = "off_by_default"
                detail = "off in dcgm-exporter default-counters.csv; enable " + ", ".join(
                    i.name for i in infos
                )
            else:
                reason = "not_exported"
                detail = "not in the export: " + ", ".join(
                    FIELDS[x].name if x in FIELDS else str(x) for x in miss
                )
            out.append(
                {
                    "wanted": str(w),
                    "hostname": h,
                    "missing_field_ids": miss,
                    "reason": reason,
                    "detail": detail,
                }
            )
    schema = {
        "wanted": pl.String,
        "hostname": pl.String,
        "missing_field_ids": pl.List(pl.Int32),
        "reason": pl.String,
        "detail": pl.String,
    }
    return pl.DataFrame(out, schema=schema, orient="row") if out else pl.DataFrame(schema=schema)


def nvlink_throughput(frame: pl.DataFrame, *, tolerance: float = 0.25) -> pl.DataFrame:
    """One NVLink throughput (B/s, TX+RX, all links) per GPU and timestamp, from either field.

    The same traffic is reported by ``DCGM_FI_PROF_NVLINK_TX_BYTES`` + ``_RX_BYTES``
    (1011 + 1012, B/s) and by ``DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL`` (449, MB/s,
    converted x1e6 to B/s). Rule: where 1011 and 1012 are both present at a
    (host, gpu, timestamp), their sum is used (``source="prof"``); else 449 x 1e6
    (``source="dev449"``). Where both are present, ``rel_diff`` = |prof - dev449| / max
    of the two and ``disagree`` = rel_diff > ``tolerance``; otherwise null. GPU-level
    rows only (entity ``GPU``); per-link entities are ignored.

    Returns:
        hostname, gpu, uuid, job_id, timestamp, ``bytes_per_s`` (Float64), ``source``
        (String), ``rel_diff`` (Float64), ``disagree`` (Boolean).
    """
    key = ["hostname", "gpu", "uuid", "job_id", "timestamp"]
    g = frame.filter((pl.col("entity") == "GPU") & pl.col("field_id").is_in([449, 1011, 1012]))
    w = g.group_by(key).agg(
        pl.col("value").filter(pl.col("field_id") == 1011).mean().alias("tx"),
        pl.col("value").filter(pl.col("field_id") == 1012).mean().alias("rx"),
        (pl.col("value").filter(pl.col("field_id") == 449).mean() * 1e6).alias("dev"),
    )
    prof = pl.col("tx") + pl.col("rx")
    has_prof = pl.col("tx").is_not_null() & pl.col("rx").is_not_null()
    rel = (prof - pl.col("dev")).abs() / pl.max_horizontal(prof, pl.col("dev"))
    return (
        w.with_columns(
            pl.when(has_prof).then(prof).otherwise(pl.col("dev")).alias("bytes_per_s"),
            pl.when(has_prof)
            .then(pl.lit("prof"))
            .when(pl.col("dev").is_not_null())
            .then(pl.lit("dev449"))
            .alias("source"),
            pl.when(has_prof & pl.col("dev").is_not_null())
            .then(rel.fill_nan(0.0))
            .alias("rel_diff"),
        )
        .with_columns((pl.col("rel_diff") > tolerance).alias("disagree"))
        .filter(pl.col("bytes_per_s").is_not_null())
        .select([*key, "bytes_per_s", "source", "rel_diff", "disagree"])
        .sort(key, nulls_last=True)
    )


def xid_events(frame: pl.DataFrame) -> pl.DataFrame:
    """Collapse the ``DCGM_FI_DEV_XID_ERRORS`` (230) gauge into events.

    The field holds the *last XID seen*, so it repeats the same code every scrape. Per
    (host, gpu, uuid, entity, entity_id), samples are sorted by time; an event starts at
    each sample whose XID differs from the previous sample's (including the first
    non-zero sample and a change back after 0); consecutive equal non-zero samples
    extend it. Value 0 means "no XID" and is not an event. A same-code XID recurring
    while the gauge already shows it cannot be seen in this field (use
    ``DCGM_EXP_XID_ERRORS_COUNT``).

    Returns:
        hostname, gpu, uuid, entity, entity_id, ``xid`` (Int32), ``first_seen``,
        ``last_seen`` (Datetime[us, UTC]), ``n_samples`` (UInt32), ``job_id`` (String,
        of the first sample), sorted by host, gpu, first_seen.
    """
    key = ["hostname", "gpu", "uuid", "entity", "entity_id"]
    d = frame.filter(pl.col("field_id") == 230).sort([*key, "timestamp"], nulls_last=True)
    d = d.with_columns(pl.col("value").round(0).cast(pl.Int32).alias("xid"))
    d = d.with_columns(
        (pl.col("xid") != pl.col("xid").shift(1).over(key)).fill_null(True).alias("_chg")
    )
    d = d.with_columns(pl.col("_chg").cast(pl.UInt32).cum_sum().over(key).alias("_run"))
    ev = (
        d.filter(pl.col("xid") != 0)
        .group_by([*key, "_run"])
        .agg(
            pl.col("xid").first(),
            pl.col("timestamp").min().alias("first_seen"),
            pl.col("timestamp").max().alias("last_seen"),
            pl.len().alias("n_samples"),
            pl.col("job_id").first(),
        )
    )
    return ev.drop("_run").sort(["hostname", "gpu", "first_seen"], nulls_last=True)


# --------------------------------------------------------------------------------------
# Parquet store
# --------------------------------------------------------------------------------------


def _host_dir(h: str | None) -> str:
    return "hostname=" + (urllib.parse.quote(h, safe="") if h is not None else "__null__")


def write_parquet_partitioned(frame: pl.DataFrame, out_dir: str | os.PathLike) -> list[Path]:
    """Write a reader frame as Parquet partitioned by host and UTC day.

    Layout: ``out_dir/hostname=<url-quoted host>/date=YYYY-MM-DD/part-<sha256[:16]>.parquet``
    (``hostname=__null__`` for null hosts). Each file holds all :data:`SCHEMA` columns
    (hostname included), zstd-compressed. Writes are atomic: a temp file in the target
    folder is fsynced then ``os.replace``-d into place, so readers never see partial
    files. The name is the hash of the file content, so writing the same data twice is
    a no-op rather than a duplicate.

    Returns:
        the paths of the files written (or already present).

    Raises:
        ValueError: the frame lacks :data:`SCHEMA` columns.
    """
    missing = [c for c in SCHEMA if c not in frame.columns]
    if missing:
        raise ValueError(f"frame lacks columns {missing}")
    out = Path(out_dir)
    written: list[Path] = []
    f = frame.select(list(SCHEMA)).with_columns(pl.col("timestamp").dt.date().alias("_day"))
    for (host, day), part in f.group_by(["hostname", "_day"], maintain_order=True):
        if day is None:
            continue
        d = out / _host_dir(host) / f"date={day.isoformat()}"
        d.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".parquet", dir=d)
        os.close(fd)
        try:
            part.drop("_day").sort(["gpu", "field_id", "timestamp"], nulls_last=True).write_parquet(
                tmp, compression="zstd", statistics=True
            )
            h = hashlib.sha256(Path(tmp).read_bytes()).hexdigest()[:16]
            final = d / f"part-{h}.parquet"
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
            if final.exists():
                os.unlink(tmp)
            else:
                os.replace(tmp, final)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        written.append(final)
    return written


def scan_parquet(
    out_dir: str | os.PathLike, *, hostnames: Iterable[str] | None = None
) -> pl.LazyFrame:
    """Lazily scan a store written by :func:`write_parquet_partitioned`.

    Args:
        out_dir: the store root.
        hostnames: only these hosts (prunes whole folders before reading).

    Returns:
        a LazyFrame with :data:`SCHEMA` (empty if no files).
    """
    root = Path(out_dir)
    if hostnames is not None:
        files = sorted(
            p for h in hostnames for p in (root / _host_dir(h)).glob("date=*/part-*.parquet")
        )
    else:
        files = sorted(root.glob("hostname=*/date=*/part-*.parquet"))
    if not files:
        return pl.LazyFrame(schema=SCHEMA)
    return pl.scan_parquet([str(p) for p in files], hive_partitioning=False, schema=SCHEMA)
