"""One sacct dump of either format, or several merged, each checked on its own."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from trainperf.errors import InputError
from trainperf.quality import QualityLog
from trainperf.slurm.fields import SacctData, SacctWarning
from trainperf.slurm.parsable import read_sacct_parsable
from trainperf.slurm.sacct_json import read_sacct_json

__all__ = ["read_sacct", "read_sacct_dumps"]


def read_sacct(path: str | Path, *, bad_lines: str = "skip", **kwargs: Any) -> SacctData:
    """Read a sacct dump, choosing :func:`read_sacct_json` or :func:`read_sacct_parsable`.

    A file whose first non-blank character is ``{`` (or whose name ends in ``.json``) is JSON;
    anything else is parsable text and ``kwargs`` (``fields``, ``delimiter``, ``tz``) go to
    :func:`read_sacct_parsable`. ``bad_lines`` goes to either reader; its default here is
    ``"skip"``: one damaged record costs only itself (a ``bad_record`` quality row and a warning
    naming the file and the record, ``jobs[3]`` or the line), not the file. ``"raise"`` refuses the
    file at its first damaged record.

    Raises:
        SacctParseError: see the two readers.
    """
    p = Path(path)
    with p.open("rb") as f:
        head = f.read(4096).decode("utf-8", errors="replace").lstrip()
    if p.suffix.lower() == ".json" or head.startswith("{"):
        return read_sacct_json(p, bad_lines=bad_lines)
    return read_sacct_parsable(p, bad_lines=bad_lines, **kwargs)


def read_sacct_dumps(
    paths: str | Path | Sequence[str | Path],
    *,
    format: str = "auto",  # noqa: A002 (the notebook parameter's name)
    tz: str = "UTC",
    bad_lines: str = "skip",
    **kwargs: Any,
) -> SacctData:
    """Read one or more sacct dumps and merge them; a dump that cannot be read costs only itself.

    Args:
        paths: a path or a list of paths (e.g. one dump per month).
        format: ``"auto"`` (:func:`read_sacct` decides per file), ``"parsable2"`` or ``"json"``.
        tz: zone of the host that ran sacct, for parsable2 dumps with ISO times (see
            :func:`parse_sacct_parsable`).
        bad_lines: ``"skip"`` (default here): a damaged record is left out with a warning naming
            the file and line (or JSON path) and a ``quality`` row; ``"raise"``: it fails the dump.
        kwargs: passed to :func:`read_sacct_parsable` (``fields``, ``delimiter``).

    Returns:
        :class:`SacctData` with the rows of all dumps that could be read (frames concatenated
        diagonally: a sacct column missing from one dump is null there). A record present in
        several dumps (same ``JobID``; windows that overlap) is kept once, from the **last** dump
        that has it, since later dumps see later states. ``meta`` has ``format`` (one value, or
        ``"mixed"``), ``sources`` (list, all given), ``n_duplicates_dropped`` and ``failed`` (the
        dumps that could not be read). ``quality`` has the rows of every dump, one
        ``parse_error`` row (action ``parse_error``, with the error) per dump that could not be
        read, and a ``duplicate_record`` row when overlapping dumps repeated records.

    Raises:
        ValueError: unknown ``format`` or an empty list of paths.
        InputError: no dump could be read (the first error is the cause).
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    paths = [Path(p) for p in paths]
    if not paths:
        raise ValueError("no sacct dump paths given")
    fmt = format.lower()
    if fmt not in ("auto", "parsable2", "parsable", "json"):
        raise ValueError(f"format must be 'auto', 'parsable2' or 'json', not {format!r}")
    quality = QualityLog(SacctWarning)
    parts: list[SacctData] = []
    failed: list[tuple[Path, Exception]] = []
    for p in paths:
        try:
            if fmt == "json":
                d = read_sacct_json(p, bad_lines=bad_lines)
            elif fmt in ("parsable2", "parsable"):
                d = read_sacct_parsable(p, tz=tz, bad_lines=bad_lines, **kwargs)
            else:
                d = read_sacct(p, tz=tz, bad_lines=bad_lines, **kwargs)
        except (InputError, OSError) as exc:  # this dump only: the others still load
            failed.append((p, exc))
            line = getattr(exc, "line", None)
            quality.add(
                str(p),
                "parse_error",
                "parse_error",
                f"dump not read: {exc}",
                first_line=line,
            )
            continue
        parts.append(d)
        quality.extend(d.quality)
    if not parts:
        p, exc = failed[0]
        msg = str(exc)  # a product error already names the file: do not name it twice
        where = "" if msg.startswith(str(p)) else f"{p}: "
        raise InputError(f"no sacct dump could be read; {where}{msg}", str(p)) from exc
    jobs, dj = _merge([d.jobs for d in parts])
    steps, ds = _merge([d.steps for d in parts])
    if dj + ds:
        quality.add(
            ", ".join(str(d.meta.get("source")) for d in parts),
            "duplicate_record",
            "corrected",
            f"{dj} job and {ds} step record(s) appear in more than one dump (overlapping windows); "
            "each kept once, from the last dump that has it",
            n_series=dj + ds,
            warn=False,
        )
    formats = {d.meta.get("format") for d in parts}
    meta = {
        **(parts[0].meta if len(parts) == 1 else {}),
        "format": formats.pop() if len(formats) == 1 else "mixed",
        "sources": [str(p) for p in paths],
        "n_duplicates_dropped": dj + ds,
        "failed": [str(p) for p, _ in failed],
    }
    return SacctData(jobs=jobs, steps=steps, meta=meta, quality=quality.frame())


def _merge(frames: list[pl.DataFrame]) -> tuple[pl.DataFrame, int]:
    if len(frames) == 1:
        return frames[0], 0
    tagged = [f.with_columns(_dump=pl.lit(i)) for i, f in enumerate(frames)]
    df = pl.concat(tagged, how="diagonal_relaxed")
    n = df.height
    df = df.unique(subset=["JobID"], keep="last", maintain_order=True).drop("_dump")
    return df, n - df.height
