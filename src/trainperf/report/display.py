"""Tables for readers: a polars frame as a Markdown table with human headers, units and rounding.

Notebooks show tables through :func:`table`, never as pandas/polars HTML: Quarto adds require.js and
jQuery from a CDN to every page that embeds a notebook output of type ``text/html`` (quarto-cli
``src/core/jupyter/widgets.ts``), while a ``text/markdown`` output is rendered natively by pandoc, in
the book and in the preview site alike. The Markdown is written by tabulate (``tablefmt="pipe"``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

__all__ = ["MISSING", "Col", "format_value", "table", "to_markdown"]

MISSING = "—"
"""What a missing value (null, NaN) shows as."""


@dataclass(frozen=True)
class Col:
    """How one column is shown.

    Attributes:
        header: the column header, with its unit, e.g. ``"Time to train (min)"``.
        digits: decimals for floats (None: as many as needed, at most 6 significant digits).
        percent: the value is a fraction 0–1 shown as a percentage with ``digits`` decimals.
    """

    header: str
    digits: int | None = None
    percent: bool = False


def format_value(value, col: Col) -> str:
    """One cell as text: thousands separators, ``col.digits`` decimals, :data:`MISSING` for null/NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value * 100:,}" if col.percent else f"{value:,}"
    if isinstance(value, float):
        if math.isinf(value):
            return "∞" if value > 0 else "−∞"
        v = value * 100 if col.percent else value
        text = f"{v:,.{col.digits}f}" if col.digits is not None else f"{v:,.6g}"
        return text + (" %" if col.percent else "")
    text = str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(frame: pl.DataFrame, columns: Mapping[str, str | Col]) -> str:
    """The columns of ``frame`` named in ``columns`` (in that order) as a Markdown pipe table.

    Args:
        frame: the data; columns not named are left out.
        columns: column name -> header text or :class:`Col`.

    Raises:
        KeyError: a named column is not in ``frame``.
    """
    from tabulate import tabulate

    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise KeyError(
            f"no column(s) {', '.join(missing)} in the frame; it has {', '.join(frame.columns)}"
        )
    cols = {c: (Col(v) if isinstance(v, str) else v) for c, v in columns.items()}
    numeric = {c: frame.schema[c].is_numeric() for c in cols}
    rows = [
        [format_value(r[c], col) for c, col in cols.items()]
        for r in frame.select(list(cols)).iter_rows(named=True)
    ]
    return tabulate(
        rows,
        headers=[col.header for col in cols.values()],
        tablefmt="pipe",
        colalign=["right" if numeric[c] else "left" for c in cols],
        disable_numparse=True,
    )


def table(frame: pl.DataFrame, columns: Mapping[str, str | Col]):
    """:func:`to_markdown` as a notebook display object (MIME type ``text/markdown``)."""
    from IPython.display import Markdown

    return Markdown(to_markdown(frame, columns))
