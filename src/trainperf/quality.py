"""Data-quality records: one schema for what every reader checked and what it did about it.

A reader that finds damage (duplicates, out-of-range values, frozen counters, label mismatches,
missing fields, failed scrapes, unparsable lines) adds one row per (source, check) to a
:class:`QualityLog`, which also emits a :class:`~trainperf.errors.DataWarning` naming the source and the
first line. The frame (:data:`QUALITY_SCHEMA`) is returned by the reader and shown in the book.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import polars as pl

from trainperf.errors import DataWarning

__all__ = ["ACTIONS", "QUALITY_SCHEMA", "QualityLog", "empty_quality"]

#: What a reader did with the values a check caught.
ACTIONS = ("excluded", "corrected", "flagged", "parse_error")

QUALITY_SCHEMA: dict[str, pl.DataType] = {
    "source": pl.String(),  # file path or URL
    "check": pl.String(),  # e.g. duplicate_series, out_of_range, frozen, label_mismatch, parse_error
    "action": pl.String(),  # one of ACTIONS
    "n_series": pl.Int64(),  # series (or runs / jobs) affected; null where it does not apply
    "n_gpus": pl.Int64(),  # distinct GPUs affected; null where it does not apply
    "n_samples": pl.Int64(),  # samples (values / events / records) affected
    "n_lines": pl.Int64(),  # input lines affected
    "first_line": pl.Int64(),  # 1-based line of the first occurrence, null if not tied to a line
    "detail": pl.String(),  # what was found, with the first example
}
"""Columns of a data-quality frame (one row per source and check that fired)."""


def empty_quality() -> pl.DataFrame:
    """An empty frame with :data:`QUALITY_SCHEMA`."""
    return pl.DataFrame(schema=QUALITY_SCHEMA)


def _storable(text: str) -> str:
    """``text`` with characters UTF-8 cannot store (lone surrogates: a file name with bytes that are
    not UTF-8, a ``\\ud800`` JSON escape quoted in a detail) written as ``\\udXXX`` escapes, so
    that the quality frame and the book can always hold the row."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


@dataclass
class QualityLog:
    """Collects data-quality rows and warns for each.

    Attributes:
        category: the warning class emitted (a :class:`DataWarning` subclass of the reader).
        rows: the rows added so far (dicts with the keys of :data:`QUALITY_SCHEMA`).
    """

    category: type[DataWarning] = DataWarning
    rows: list[dict] = field(default_factory=list)

    def add(
        self,
        source: str,
        check: str,
        action: str,
        detail: str,
        *,
        n_series: int | None = None,
        n_gpus: int | None = None,
        n_samples: int | None = None,
        n_lines: int | None = None,
        first_line: int | None = None,
        warn: bool = True,
    ) -> None:
        """Record one check that fired on ``source`` and (unless ``warn`` is False) warn about it.

        Raises:
            ValueError: ``action`` not in :data:`ACTIONS`.
        """
        if action not in ACTIONS:
            raise ValueError(f"action {action!r}: expected one of {', '.join(ACTIONS)}")
        source, detail = _storable(str(source)), _storable(detail)
        self.rows.append(
            {
                "source": str(source),
                "check": check,
                "action": action,
                "n_series": n_series,
                "n_gpus": n_gpus,
                "n_samples": n_samples,
                "n_lines": n_lines,
                "first_line": first_line,
                "detail": detail,
            }
        )
        if warn:
            where = f"{source}:{first_line}" if first_line is not None else str(source)
            warnings.warn(
                self.category(
                    f"{where}: {detail} ({check}: {action})", str(source), first_line, check
                ),
                stacklevel=3,
            )

    def extend(self, other: QualityLog | pl.DataFrame) -> None:
        """Append the rows of another log or quality frame (no new warnings)."""
        self.rows.extend(other.rows if isinstance(other, QualityLog) else other.to_dicts())

    def frame(self) -> pl.DataFrame:
        """The rows as a frame with :data:`QUALITY_SCHEMA`."""
        return pl.DataFrame(self.rows, schema=QUALITY_SCHEMA) if self.rows else empty_quality()
