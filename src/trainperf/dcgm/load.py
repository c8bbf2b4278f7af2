"""One entry point for telemetry files of any supported format, and many files with isolation.

:func:`read` picks the reader by the file's name and first bytes; :func:`load` reads several files
(or folders of them) so that one damaged file costs only itself: it becomes a ``parse_error``
data-quality row carrying its message, and every other file still loads.
"""

from __future__ import annotations

import gzip
import os
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import polars as pl

from trainperf.dcgm import csvfiles, dmon, exposition, promapi
from trainperf.dcgm.checks import across_sources
from trainperf.dcgm.fields import DcgmFormatError, DcgmWarning
from trainperf.dcgm.series import Reading, src_name
from trainperf.errors import TrainperfError
from trainperf.quality import QUALITY_SCHEMA, QualityLog

__all__ = ["FORMATS", "detect_format", "load", "read"]

FORMATS = ("exposition", "prometheus_api", "dmon", "csv_long", "grafana_csv")
"""Formats :func:`read` knows."""

SUFFIXES = (".prom", ".txt", ".gz", ".json", ".jsonl", ".csv", ".metrics", ".om")
"""File name endings :func:`load` picks up in a folder."""


def detect_format(source: str | os.PathLike | bytes) -> str:
    """The format of a telemetry file from its name and first 4 kB (one of :data:`FORMATS`).

    JSON (``{``/``[`` first) -> ``prometheus_api``; a ``#Entity`` header -> ``dmon``; ``.csv`` with
    a ``Time`` first column and ``{`` in the header -> ``grafana_csv``, other ``.csv`` ->
    ``csv_long``; anything else -> ``exposition``.
    """
    if isinstance(source, (bytes, bytearray)):
        head, name = bytes(source[:4096]), ""
    else:
        name = str(source).lower()
        if name.endswith(".gz"):
            try:
                with gzip.open(source, "rb") as fh:
                    head = fh.read(4096)
            except (OSError, EOFError):
                head = b""
        else:
            with open(source, "rb") as fh:
                head = fh.read(4096)
    text = head.decode("utf-8", "replace").lstrip()
    if text[:1] in ("{", "[") or name.endswith((".json", ".jsonl", ".json.gz")):
        return "prometheus_api"
    if any(ln.lstrip("# ").lower().startswith("entity") for ln in text.splitlines()[:5]):
        return "dmon"
    if name.endswith((".csv", ".csv.gz")):
        first = text.splitlines()[0] if text else ""
        if first.split(",")[0].strip().strip('"').lower() == "time" and "{" in first:
            return "grafana_csv"
        return "csv_long"
    return "exposition"


def read(source: str | os.PathLike | bytes, format: str | None = None, **kwargs: Any) -> Reading:
    """Read one telemetry file (or bytes) into a :class:`~trainperf.dcgm.Reading`.

    Args:
        source: path or bytes.
        format: one of :data:`FORMATS`; None: :func:`detect_format`.
        kwargs: passed to the reader (e.g. ``timestamp=`` for exposition, ``hostname=``,
            ``start=``, ``interval=`` for dmon, ``tz=`` for CSV).

    Raises:
        DcgmFormatError: as the chosen reader; ValueError: unknown ``format``;
        FileNotFoundError: missing file.
    """

    fmt = format or detect_format(source)
    readers = {
        "exposition": exposition.read_exposition_reading,
        "prometheus_api": promapi.read_prometheus_api_reading,
        "dmon": dmon.read_dmon_reading,
        "csv_long": csvfiles.read_csv_long_reading,
        "grafana_csv": csvfiles.read_grafana_csv_reading,
    }
    if fmt not in readers:
        raise ValueError(f"format {fmt!r}: expected one of {', '.join(FORMATS)}")
    return readers[fmt](source, **kwargs)


def _expand(sources: Iterable[str | os.PathLike]) -> list[Path]:
    out: list[Path] = []
    for s in sources:
        p = Path(s)
        if p.is_dir():
            out += sorted(
                q for q in p.rglob("*") if q.is_file() and q.name.lower().endswith(SUFFIXES)
            )
        else:
            out.append(p)
    return out


def load(
    sources: str | os.PathLike | Iterable[str | os.PathLike],
    format: str | None = None,
    **kwargs: Any,
) -> Reading:
    """Read several telemetry files into one :class:`~trainperf.dcgm.Reading`, each in isolation.

    A file that cannot be read (a :class:`~trainperf.dcgm.DcgmFormatError`, an unreadable or
    missing file) becomes a ``parse_error`` row of the quality frame with its message and line, with
    a :class:`~trainperf.dcgm.DcgmWarning`; the other files load. The data checks of each file
    (duplicates, ranges, ...) run per file.

    Args:
        sources: files and/or folders (a folder contributes its files ending in :data:`SUFFIXES`,
            recursively, sorted).
        format: force one format for every file (default: :func:`detect_format` per file).
        kwargs: passed to every reader.

    Returns:
        the readings concatenated (series ids renumbered), quality rows of every file.
    """
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    readings: list[Reading] = []
    log = QualityLog(category=DcgmWarning)
    for path in _expand(sources):
        name = src_name(path)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("default", DcgmWarning)
                readings.append(read(path, format, **kwargs))
        except (TrainperfError, OSError) as e:
            line = e.line if isinstance(e, DcgmFormatError) else None
            msg = str(e)
            for prefix in (f"{name}:{line}: ", f"{name}: "):
                msg = msg.removeprefix(prefix)
            log.add(name, "parse_error", "parse_error", msg, first_line=line)
    out = Reading.concat(readings, source=", ".join(str(s) for s in sources))
    if len(readings) > 1:
        # two exporters of one GPU in two files: the same identity checks as inside one file
        files = [r.source for r in readings for _ in range(r.series.height)]
        out = across_sources(out, log, files)
    if log.rows:
        out.quality = pl.concat([out.quality, log.frame()]).cast(QUALITY_SCHEMA)
    return out
