"""What the MLPerf reader checks in a value, and how it records what it found.

Every check that fires becomes one data-quality row per (file, check) (:data:`trainperf.quality.QUALITY_SCHEMA`)
and one :class:`MLPerfLogWarning` naming the file and the first line; the limits (plausible ``time_ms``
range, tolerances) are the package table ``trainperf/tables/mlperf_limits.csv``, each with its source.
"""

from __future__ import annotations

import gzip
import math
import os
import zlib
from dataclasses import dataclass, field
from functools import cache

from trainperf.errors import DataWarning, InputError
from trainperf.quality import QualityLog
from trainperf.tables import package_table

__all__ = [
    "INT64_MAX",
    "MLPerfLogError",
    "MLPerfLogWarning",
    "FileChecks",
    "as_count",
    "check_encodable",
    "check_results_folder",
    "display_path",
    "limits",
    "read_result_bytes",
]

INT64_MAX = 2**63 - 1
"""Largest count stored (polars Int64)."""


class MLPerfLogWarning(DataWarning):
    """A problem in an MLPerf log that does not stop loading (the message names file and line)."""


class MLPerfLogError(InputError):
    """An MLPerf result file that cannot be read at all (``source`` and ``line`` name where)."""


@cache
def limits() -> dict[str, float]:
    """The reader's limits from ``trainperf/tables/mlperf_limits.csv``: name -> value.

    Keys: ``time_ms_min``, ``time_ms_max`` (plausible MLLOG ``time_ms``, Unix epoch ms),
    ``order_tolerance_ms``, ``order_window`` (the file-order check), ``duplicate_tolerance_ms``
    (consensus of rank duplicates). The CSV gives each one's unit and source.
    """

    return {r["name"]: float(r["value"]) for r in package_table("mlperf_limits")}


def as_count(value, lo: int = 0) -> int | None:
    """``value`` as an integer count in [lo, 2**63 - 1], or None when it is not one.

    Accepts int (not bool), an integral finite float, or a decimal string of an integer (the systems
    JSON writes ``"64"``). Anything else (NaN, infinity, 2.5, 1e30, "abc", lists) gives None.
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text or len(text) > 20:
            return None
        try:
            value = int(text)
        except ValueError:
            return None
    elif isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            return None
        value = int(value)
    elif not isinstance(value, int):
        return None
    return value if lo <= value <= INT64_MAX else None


@dataclass
class _Found:
    action: str
    detail: str
    lines: list[int] = field(default_factory=list)
    n: int = 0
    counted: bool = False  # the detail already gives the count (no "and N more times")


@dataclass
class FileChecks:
    """The checks that fired on one file, aggregated per check (one quality row and one warning each).

    Attributes:
        source: the file, as the rows and warnings name it.
        found: check name -> what was found (first detail, lines, count), in the order first seen.
    """

    source: str
    found: dict[str, _Found] = field(default_factory=dict)

    def add(self, check: str, action: str, detail: str, line: int | None = None, n: int = 1):
        """Record ``n`` occurrences of ``check`` (at ``line``, 1-based, when tied to one).

        The first occurrence's ``detail`` describes the row; later ones only add lines and counts.
        """
        f = self.found.get(check)
        if f is None:
            f = self.found[check] = _Found(action, detail)
        if line is not None:
            f.lines.append(line)
        f.n += n

    def __contains__(self, check: str) -> bool:
        return check in self.found

    def flush(self, log: QualityLog) -> int:
        """Add one row per check to ``log`` (which warns); returns the number of rows added."""
        for check, f in self.found.items():
            lines = sorted(set(f.lines))
            detail = f.detail
            if f.n > 1 and not f.counted:
                more = f.n - 1
                detail += f" (and {more} more {'time' if more == 1 else 'times'}"
                nl = len(lines)
                detail += f", {nl} {'line' if nl == 1 else 'lines'})" if lines else ")"
            log.add(
                self.source,
                check,
                f.action,
                detail,
                n_samples=f.n,
                n_lines=len(lines) or None,
                first_line=lines[0] if lines else None,
            )
        return len(self.found)


_TEXT_COLUMNS = ("prefix", "event_type", "key", "value", "metadata")


def display_path(path) -> str:
    """A path as text that can be stored and printed: a name with bytes that are not UTF-8
    (``os.fsdecode`` gives lone surrogates for them) gets them as ``\\xNN`` escapes."""

    s = str(path)
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return os.fsencode(path).decode("utf-8", "backslashreplace")


def check_encodable(source: str, cols: dict[str, list]) -> None:
    """Refuse a parsed log whose text columns hold characters UTF-8 cannot store.

    JSON lets a string carry a lone surrogate escape (``"\\ud800"``); ``json.loads`` turns it into a
    Python string that no UTF-8 column (polars) or file can hold. The file is refused as one whole
    (a ``parse_error`` row in :func:`trainperf.mlperf.load_results`), the other files go on.

    Args:
        source: the file, for the message.
        cols: :class:`~trainperf.mlperf.parse.ParsedLog` columns (``line`` and the text columns).

    Raises:
        MLPerfLogError: naming the file, the line and the column.
    """
    for name in _TEXT_COLUMNS:
        col = cols.get(name)
        if not col:
            continue
        text = "\x00".join(v if isinstance(v, str) else "" for v in col)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            row = text.count("\x00", 0, exc.start)
            line = cols["line"][row] if row < len(cols.get("line", [])) else None
            ch = text[exc.start]
            raise MLPerfLogError(
                f"{display_path(source)}:{line}: the {name} holds {ch!r} (U+{ord(ch):04X}), a lone "
                "surrogate that no UTF-8 text can store (a JSON escape such as \\ud800 of a broken "
                "writer); the file is not used - fix or remove that line",
                source=display_path(source),
                line=line,
            ) from None


GZ_MAX_BYTES = 4 * 2**30
"""Largest decompressed ``result_*.txt.gz`` read (4 GiB; the largest public MLPerf Training logs
are tens of MB): a gzip bomb is refused instead of filling memory."""


#: Folders never walked for result files: a file system's root and the kernel's pseudo file systems
#: (walking ``/`` visits every file of the machine, and ``/proc`` never ends). A results folder is
#: below them.
_NEVER_WALKED = ("/proc", "/sys", "/dev")


def check_results_folder(path) -> None:
    """Refuse, before any walk, a results folder that is a file system root or a pseudo file system.

    Raises:
        InputError: ``path`` is ``/`` (or a drive's root), ``/proc``, ``/sys``, ``/dev`` or below them.
    """
    p = os.path.abspath(os.fspath(path))
    root = os.path.splitdrive(p)[1] in (os.sep, "")
    pseudo = any(p == d or p.startswith(d + os.sep) for d in _NEVER_WALKED)
    if root or pseudo:
        raise InputError(
            f"{display_path(path)}: a {'file system root' if root else 'system folder'}, not an "
            "MLPerf results folder; name the folder that holds <submitter>/results/ (or a "
            "result_*.txt)"
        )


def read_result_bytes(path) -> bytes | None:
    """The bytes of a ``result_*.txt.gz`` (decompressed), or None for a plain file (read as usual).

    Raises:
        MLPerfLogError: not a gzip file, truncated, or larger than :data:`GZ_MAX_BYTES` once
            decompressed.
    """

    if not str(path).lower().endswith(".gz"):
        return None
    out = bytearray()
    try:
        with gzip.open(path, "rb") as fh:
            while chunk := fh.read(1 << 24):
                out += chunk
                if len(out) > GZ_MAX_BYTES:
                    raise MLPerfLogError(
                        f"{display_path(path)}: more than {GZ_MAX_BYTES >> 30} GiB once "
                        "decompressed; not read (decompress it yourself if it is a real log)",
                        source=display_path(path),
                    )
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise MLPerfLogError(
            f"{display_path(path)}: not a readable gzip file ({exc}); gunzip it to check",
            source=display_path(path),
        ) from None
    return bytes(out)
