"""The loader of the reference tables (:mod:`trainperf.tables` says where they are)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import polars as pl

__all__ = ["PACKAGE_TABLES", "default_reference_dir", "package_table", "read_table"]

PACKAGE_TABLES = Path(__file__).resolve().parent
"""Folder of the tables shipped inside the package."""


def default_reference_dir() -> Path:
    """``<repo>/data/reference`` of the source checkout trainperf is installed from."""
    return PACKAGE_TABLES.parents[2] / "data" / "reference"


def read_table(
    name: str, path: str | Path | None = None, schema: dict | None = None
) -> pl.DataFrame:
    """Read a reference table with polars.

    Args:
        name: table name: ``trainperf/tables/<name>.csv`` if the package has it, else
            ``data/reference/<name>.csv``.
        path: read this file instead (a user's own copy of the table).
        schema: polars schema (column -> dtype) to read with; None: polars infers the types.

    Returns:
        The table, one row per CSV record.

    Raises:
        FileNotFoundError: no such table (the message lists the tables there are).
    """
    if path is not None:
        p = Path(path)
    elif (PACKAGE_TABLES / f"{name}.csv").is_file():
        p = PACKAGE_TABLES / f"{name}.csv"
    else:
        p = default_reference_dir() / f"{name}.csv"
    if not p.is_file():
        known = sorted(
            {q.stem for d in (PACKAGE_TABLES, default_reference_dir()) for q in d.glob("*.csv")}
        )
        raise FileNotFoundError(f"{p}: no reference table {name!r}; tables: {', '.join(known)}")
    return pl.read_csv(p, schema=schema)


@cache
def package_table(name: str) -> tuple[dict, ...]:
    """The rows of a package table as dicts (read once; for module-level constants)."""
    return tuple(read_table(name).to_dicts())
