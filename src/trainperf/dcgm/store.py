"""The partitioned Parquet store of reader frames: write (atomically, content-named), scan lazily,
and the data-quality rows of what was ingested into it."""

from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.parse
from collections.abc import Iterable
from pathlib import Path

import polars as pl

from trainperf.dcgm.fields import SCHEMA
from trainperf.quality import QUALITY_SCHEMA, empty_quality

__all__ = ["scan_parquet", "store_quality", "write_parquet_partitioned", "write_store_quality"]

QUALITY_DIR = "_quality"
"""Sub-folder of a store holding the data-quality rows of the ingested sources (not scanned as data)."""


def _host_dir(h: str | None) -> str:
    return "hostname=" + (urllib.parse.quote(h, safe="") if h is not None else "__null__")


def _write_atomic_hashed(part: pl.DataFrame, d: Path) -> Path:
    """Write ``part`` as ``d/part-<sha256[:16]>.parquet`` through an fsynced temp file and a rename."""
    d.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".parquet", dir=d)
    os.close(fd)
    try:
        part.write_parquet(tmp, compression="zstd", statistics=True)
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
    return final


def write_parquet_partitioned(frame: pl.DataFrame, out_dir: str | os.PathLike) -> list[Path]:
    """Write a reader frame as Parquet partitioned by host and UTC day.

    Layout: ``out_dir/hostname=<url-quoted host>/date=YYYY-MM-DD/part-<sha256[:16]>.parquet``
    (``hostname=__null__`` for null hosts). Each file holds all :data:`trainperf.dcgm.SCHEMA`
    columns (hostname included), zstd-compressed. Writes are atomic: a temp file in the target
    folder is fsynced then ``os.replace``-d into place, so readers never see partial
    files. The name is the hash of the file content, so writing the same data twice is
    a no-op rather than a duplicate.

    Returns:
        the paths of the files written (or already present).

    Raises:
        ValueError: the frame lacks :data:`trainperf.dcgm.SCHEMA` columns.
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
        part = part.drop("_day").sort(["gpu", "field_id", "timestamp"], nulls_last=True)
        written.append(_write_atomic_hashed(part, d))
    return written


def write_store_quality(quality: pl.DataFrame, out_dir: str | os.PathLike) -> Path:
    """Add data-quality rows (:data:`trainperf.quality.QUALITY_SCHEMA`) to a store (content-named,
    atomic, so writing the same rows twice adds nothing)."""
    return _write_atomic_hashed(quality.cast(QUALITY_SCHEMA), Path(out_dir) / QUALITY_DIR)


def store_quality(out_dir: str | os.PathLike) -> pl.DataFrame:
    """The data-quality rows recorded when sources were ingested into a store (empty if none)."""
    files = sorted((Path(out_dir) / QUALITY_DIR).glob("part-*.parquet"))
    if not files:
        return empty_quality()
    return (
        pl.concat([pl.read_parquet(p) for p in files])
        .cast(QUALITY_SCHEMA)
        .unique(maintain_order=True)
    )


def scan_parquet(
    out_dir: str | os.PathLike, *, hostnames: Iterable[str] | None = None
) -> pl.LazyFrame:
    """Lazily scan a store written by :func:`write_parquet_partitioned`.

    Args:
        out_dir: the store root.
        hostnames: only these hosts (prunes whole folders before reading).

    Returns:
        a LazyFrame with :data:`trainperf.dcgm.SCHEMA` (empty if no files).
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
