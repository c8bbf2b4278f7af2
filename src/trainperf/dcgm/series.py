"""Series normalisation shared by every DCGM reader, the normalised result (:class:`Reading`) and small
time/input helpers.

A reader turns each distinct (metric name, label set) into one *series row* (:func:`normalise_series`:
host, GPU, UUID, entity, field id, job and the remaining labels as JSON) and each sample into
``(sid, timestamp, value, line)``. :func:`trainperf.dcgm.checks.finish` then applies the data checks
and returns a :class:`Reading`; :meth:`Reading.frame` joins the two into the long frame of
:data:`trainperf.dcgm.SCHEMA`.
"""

from __future__ import annotations

import datetime as _dt
import gzip
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import polars as pl

from trainperf.dcgm.fields import FIELDS, SCHEMA, DcgmFormatError, field_id
from trainperf.quality import QUALITY_SCHEMA, empty_quality

__all__ = [
    "SAMPLE_SCHEMA",
    "SERIES_SCHEMA",
    "Reading",
    "empty_frame",
    "normalise_series",
    "series_frame",
]

HOST_KEYS = ("hostname", "Hostname", "exported_hostname", "exported_Hostname")
UUID_KEYS = ("UUID", "uuid", "exported_UUID", "exported_uuid")
GPU_KEYS = ("gpu", "exported_gpu")
JOB_KEYS = (
    "hpc_job",
    "exported_hpc_job",
    "jobid",
    "slurmjobid",
    "job_id",
    "slurm_job_id",
    "SLURM_JOB_ID",
)
LINK_KEYS = ("link", "nvlink")
SWITCH_KEYS = ("nvswitch", "exported_nvswitch")
_CONSUMED = set(HOST_KEYS) | set(UUID_KEYS) | set(GPU_KEYS) | set(JOB_KEYS) | {"__name__"}

SERIES_SCHEMA: dict[str, pl.DataType] = {
    "hostname": pl.String(),
    "gpu": pl.Int32(),
    "uuid": pl.String(),
    "entity": pl.String(),
    "entity_id": pl.Int32(),
    "field_id": pl.Int32(),
    "field": pl.String(),
    "job_id": pl.String(),
    "labels": pl.String(),
    "_is_int": pl.Boolean(),
    "_is_double": pl.Boolean(),
}
"""Columns of a series row (the series columns of :data:`SCHEMA` + two type flags for the sentinels)."""

SAMPLE_SCHEMA: dict[str, pl.DataType] = {
    "sid": pl.UInt32(),
    "timestamp": pl.Int64(),
    "value": pl.Float64(),
    "line": pl.Int64(),
}
"""Columns of the samples of a :class:`Reading`: series id, epoch microseconds (UTC), value in the
unit of :data:`trainperf.dcgm.FIELDS`, 1-based input line (null where the input has no lines)."""


def to_int(s: Any) -> int | None:
    """``int(str(s).strip())`` if it fits an Int32 column, else None."""
    if s is None:
        return None
    try:
        v = int(str(s).strip())
    except ValueError:
        return None
    return v if -(2**31) <= v < 2**31 else None


def _first(labels: Mapping[str, str], keys: tuple[str, ...]) -> tuple[str | None, str | None]:
    for k in keys:
        v = labels.get(k)
        if v not in (None, ""):
            return k, v
    return None, None


def _entity(name: str, labels: Mapping[str, str], gpu: int | None) -> tuple[str, int | None]:
    """Entity type and id: NVSwitch (``nvswitch`` label or ``DCGM_FI_DEV_NVSWITCH_*`` name), NVLink
    (``link``/``nvlink`` label), MIG instance (``GPU_I_ID``), else the GPU itself."""
    _, sw = _first(labels, SWITCH_KEYS)
    if sw is not None or name.upper().startswith("DCGM_FI_DEV_NVSWITCH_"):
        return "NVSwitch", to_int(sw)
    _, link = _first(labels, LINK_KEYS)
    gi = labels.get("GPU_I_ID") or labels.get("exported_GPU_I_ID")
    if link is not None and to_int(link) is not None:
        return "NVLink", to_int(link)
    if gi not in (None, "") and to_int(gi) is not None:
        return "GPU-I", to_int(gi)
    return "GPU", gpu


def normalise_series(
    name: str, labels: Mapping[str, str], cache: dict | None = None
) -> dict[str, Any]:
    """Turn one (metric name, label dict) into the series attributes of :data:`SCHEMA`.

    Rules (module docstring of :mod:`trainperf.dcgm`): host from ``hostname``/``Hostname``/
    ``exported_*``/``instance``; ``exported_X`` wins over ``X`` (kept as ``target_X``); NVSwitch
    series (``nvswitch`` label or an ``DCGM_FI_DEV_NVSWITCH_*`` name) get entity ``NVSwitch`` and a
    null ``gpu``.

    Args:
        name: metric name.
        labels: its labels.
        cache: a dict kept by the caller over many series: what depends on the labels alone is
            worked out once per label set (dcgm-exporter gives every field of a GPU the same
            labels: 20 series per set), the same result as without.

    Returns:
        a dict with the keys of :data:`SERIES_SCHEMA`.
    """
    if cache is None:
        part = _label_attrs(labels)
        labels_nn, host, uuid, gpu_s, job, gpu, rest_json = part
        entity, entity_id = _entity(name, labels_nn, gpu)
        fid, canonical, dtype = _name_attrs(name)
    else:
        # the label part once per label set, found by the dict's identity where the caller passes
        # the same dict again (split_series_key's cache does: 20 fields of a GPU), else by its
        # items; the entry keeps the dict alive, so its id cannot be reused while the cache lives
        hit = cache.get(id(labels))
        if hit is None or hit[0] is not labels:
            ck = tuple(labels.items())
            part = cache.get(ck)
            if part is None:
                part = cache[ck] = _label_attrs(labels)
            # the entity as the labels give it: "" is no NVSwitch metric name
            hit = cache[id(labels)] = (labels, part, _entity("", part[0], part[5]))
        _, part, (entity, entity_id) = hit
        labels_nn, host, uuid, gpu_s, job, gpu, rest_json = part
        if entity != "NVSwitch" and name.upper().startswith("DCGM_FI_DEV_NVSWITCH_"):
            entity, entity_id = "NVSwitch", None  # _entity: by name, no nvswitch label
        named = cache.get(("name", name))
        if named is None:
            named = cache[("name", name)] = _name_attrs(name)
        fid, canonical, dtype = named
    if entity == "NVSwitch" and gpu_s is None:
        gpu = None
    return {
        "hostname": host,
        "gpu": gpu,
        "uuid": uuid,
        "entity": entity,
        "entity_id": entity_id,
        "field_id": fid,
        "field": canonical,
        "job_id": job,
        "labels": rest_json,
        "_is_int": dtype == "int64",
        "_is_double": dtype == "double",
    }


def _name_attrs(name: str) -> tuple[int | None, str, str]:
    """What a series row takes from its metric name alone: (field id, canonical name, dtype)."""
    fid = field_id(name)
    info = FIELDS.get(fid) if fid is not None else None
    canonical = info.name if info else (name[:-6] if name.endswith("_total") and fid else name)
    return fid, canonical, info.dtype if info is not None else "double_or_unknown"


class _LabelAttrs(NamedTuple):
    """What a series row takes from its labels alone (:func:`_label_attrs`)."""

    labels: dict[str, str]  # without None values
    host: str | None
    uuid: str | None
    gpu_text: str | None  # the gpu label as written
    job: str | None
    gpu: int | None
    rest_json: str  # the remaining labels as JSON


def _label_attrs(labels: Mapping[str, str]) -> _LabelAttrs:
    """What a series row takes from its labels alone: (labels without None values, host, uuid, gpu
    label text, job, gpu, the remaining labels as JSON)."""
    labels = {k: v for k, v in labels.items() if v is not None}
    host_key, host = _first(labels, HOST_KEYS)
    if host is None and labels.get("instance"):
        inst = labels["instance"]
        host = inst.rsplit(":", 1)[0] if ":" in inst else inst
    _, uuid = _first(labels, UUID_KEYS)
    _, gpu_s = _first(labels, GPU_KEYS)
    _, job = _first(labels, JOB_KEYS)
    gpu = to_int(gpu_s)
    rest: dict[str, str] = {}
    for k, v in labels.items():
        if k in _CONSUMED:
            if k in HOST_KEYS and k != host_key and v != host and v != "":
                rest[k] = v  # a second, different host label: keep it visible
            elif k in GPU_KEYS and gpu is None and v not in (None, ""):
                rest[k] = v  # not a GPU index (beyond Int32, not a number): kept, and flagged
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
    rest_json = json.dumps(dict(sorted(rest.items())), separators=(",", ":"), ensure_ascii=False)
    return _LabelAttrs(labels, host, uuid, gpu_s, job, gpu, rest_json)


def series_frame(rows: list[dict[str, Any]], extra: dict[str, Any] | None = None) -> pl.DataFrame:
    """Series rows (:func:`normalise_series`) as a frame with :data:`SERIES_SCHEMA` (+ ``extra`` columns)."""
    df = (
        pl.DataFrame(rows, schema=SERIES_SCHEMA, orient="row")
        if rows
        else pl.DataFrame(schema=SERIES_SCHEMA)
    )
    if extra:
        df = df.with_columns(
            **{
                k: (v.alias(k) if isinstance(v, pl.Series) else pl.Series(k, v))
                for k, v in extra.items()
            }
        )
    return df


def empty_frame() -> pl.DataFrame:
    """An empty frame with :data:`SCHEMA`."""
    return pl.DataFrame(schema=SCHEMA)


def empty_samples() -> pl.DataFrame:
    """An empty frame with :data:`SAMPLE_SCHEMA`."""
    return pl.DataFrame(schema=SAMPLE_SCHEMA)


@dataclass
class Reading:
    """What a DCGM reader read from one source (or several, see :func:`trainperf.dcgm.load`).

    Attributes:
        series: one row per series: ``sid`` (UInt32) + hostname, gpu, uuid, entity, entity_id,
            field_id, field, job_id, labels (the series columns of :data:`SCHEMA`).
        samples: one row per kept sample, in input order: ``sid`` (UInt32), ``timestamp`` (Int64,
            epoch microseconds UTC), ``value`` (Float64, the field's unit), ``line`` (Int64, 1-based
            input line or null).
        quality: the data checks that fired (:data:`trainperf.quality.QUALITY_SCHEMA`).
        source: file name, URL or ``"<bytes>"``.
    """

    series: pl.DataFrame
    samples: pl.DataFrame
    quality: pl.DataFrame
    source: str = "<bytes>"

    def frame(self) -> pl.DataFrame:
        """The long frame of :data:`SCHEMA`, one row per sample, in input order."""
        if self.samples.height == 0:
            return empty_frame()
        ser = self.series.select("sid", *[c for c in SCHEMA if c not in ("timestamp", "value")])
        sid = ser["sid"]
        if sid.null_count() == 0 and sid.equals(
            pl.int_range(0, ser.height, dtype=sid.dtype, eager=True)
        ):
            # sid is the row number (every reader's own series table): a gather of the series rows,
            # 0.01 s of 320k samples where the join took 0.09 s (its string columns copied; a
            # gather of polars' view strings copies 16 bytes a value; issue 41)
            s = self.samples
            cols = ser.drop("sid").gather(s["sid"])
            return cols.with_columns(
                s["timestamp"].cast(pl.Datetime("us", "UTC")).alias("timestamp"), s["value"]
            ).select([pl.col(c).cast(t) for c, t in SCHEMA.items()])
        return (
            self.samples.lazy()
            .select("sid", "timestamp", "value")
            .join(ser.lazy(), on="sid", how="left", maintain_order="left")
            .select(
                pl.col("timestamp").cast(pl.Datetime("us", "UTC")),
                *[pl.col(c).cast(t) for c, t in SCHEMA.items() if c != "timestamp"],
            )
            .collect()
        )

    @staticmethod
    def empty(source: str = "<bytes>", quality: pl.DataFrame | None = None) -> Reading:
        """A reading with no series and no samples."""
        ser = pl.DataFrame(schema={"sid": pl.UInt32, **SERIES_SCHEMA}).drop("_is_int", "_is_double")
        return Reading(
            ser, empty_samples(), empty_quality() if quality is None else quality, source
        )

    @staticmethod
    def concat(readings: list[Reading], source: str = "<several>") -> Reading:
        """One reading of several: series ids renumbered, samples and quality rows appended."""
        if not readings:
            return Reading.empty(source)
        sers, samps, off = [], [], 0
        for r in readings:
            sers.append(r.series.with_columns((pl.col("sid") + off).cast(pl.UInt32)))
            samps.append(r.samples.with_columns((pl.col("sid") + off).cast(pl.UInt32)))
            off += r.series.height
        qual = pl.concat([r.quality for r in readings]) if readings else empty_quality()
        return Reading(pl.concat(sers), pl.concat(samps), qual.cast(QUALITY_SCHEMA), source)


# --------------------------------------------------------------------------------------
# time and input helpers
# --------------------------------------------------------------------------------------


def epoch_us(x: Any, source: str = "<arg>") -> int:
    """datetime / epoch seconds / ISO-8601 string -> epoch microseconds (UTC).

    Raises:
        DcgmFormatError: a string that is neither.
    """
    if isinstance(x, _dt.datetime):
        if x.tzinfo is None:
            x = x.replace(tzinfo=_dt.UTC)
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
    return epoch_us(d)


def interval_us(interval: Any) -> int:
    """seconds / timedelta / ``"15s"``, ``"500ms"``, ``"1m"`` -> microseconds.

    Raises:
        ValueError: anything else.
    """
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
    mult = {"us": 1, "ms": 1_000, "s": 1_000_000, None: 1_000_000}
    mult |= {"m": 60_000_000, "h": 3_600_000_000}
    return int(round(float(m.group(1)) * mult[m.group(2)]))


def src_name(src: Any) -> str:
    """The name a message uses for a source: the path, or ``"<bytes>"``."""
    return str(src) if isinstance(src, (str, os.PathLike)) else "<bytes>"


def read_bytes(src: str | os.PathLike | bytes) -> bytes:
    """The bytes of a path (``.gz`` decompressed) or of a bytes-like object.

    Raises:
        DcgmFormatError: a ``.gz`` file that is not valid gzip (or is cut off).
        FileNotFoundError: missing file.
    """
    if isinstance(src, (bytes, bytearray, memoryview)):
        return bytes(src)
    p = Path(src)
    if p.suffix == ".gz":
        try:
            with gzip.open(p, "rb") as fh:
                return fh.read()
        except (OSError, EOFError) as e:
            raise DcgmFormatError(str(p), None, "a complete gzip file", str(e)) from None
    return p.read_bytes()
