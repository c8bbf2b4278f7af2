"""Tables for readers: a polars frame as a Markdown table with human headers, units and rounding.

Notebooks show every table through :func:`table`, never as a pandas/polars HTML repr. Quarto adds
require.js and jQuery from a CDN to every page that embeds a notebook in which *any* display output
has the MIME type ``text/html`` or ``application/javascript`` (quarto-cli
``src/core/jupyter/widgets.ts``, ``extractJupyterWidgetDependencies``), while a ``text/markdown``
output is parsed by pandoc as part of the page, in the book and in the preview site alike: a pipe
table with a caption and cross-reference id, and no script. The Markdown is written by tabulate
(``tablefmt="pipe"``); this module only decides what each cell says.

What a reader gets:

* the columns named, in that order, with the header text given (units in the header);
* numbers rounded to the digits given, thousands separators, ``—`` for a missing value, no index;
* text shown as text: every Markdown-active character of a cell is backslash-escaped, so a job
  named ``<img src=x onerror=alert(1)>`` stays a name (pandoc would pass raw HTML through);
  a cell that is a URL becomes a link whose visible text is the whole URL;
* nothing cut off: long cells wrap; long unbreakable tokens (paths, system names, URLs) get
  break opportunities (``<wbr>``, which copies as nothing) after ``/``, ``_`` and similar
  separators;
* no table wider than the text column: when the narrowest possible layout of the columns is
  wider than :data:`TEXT_WIDTH_CH`, the table is split into several tables that each repeat the
  key columns (:func:`split_columns`);
* the full detail, every column of the frame unrounded, travels with the output as ``text/csv``
  (a MIME type Quarto ignores); the main job writes it next to the executed notebook and the
  preview's notebook pages link it.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

import polars as pl

from trainperf.benchmarks import BENCHMARK_NAMES

__all__ = [
    "MISSING",
    "TEXT_WIDTH_CH",
    "Col",
    "Table",
    "EMPTY",
    "format_value",
    "label_tables",
    "min_width",
    "record",
    "split_columns",
    "table",
    "to_markdown",
]

MISSING = "—"
"""What a missing value (null, NaN) shows as."""

TEXT_WIDTH_CH = 86
"""Width of the book's text column in characters of the table font, with cell padding counted.

Quarto's book layout gives the body column 800 px (``grid: body-width`` default); the preview site
uses the same width. Tables are set at 0.875-0.9 rem (``book.scss``; the preview's stylesheet) in
the system sans-serif font (the book's web font is switched off so that nothing loads from the
network): DejaVu Sans, the widest usual fallback, has digits of 0.636 em, 9.2 px at 14.4 px, so
800 px hold 87 of them. Each column also costs :data:`CELL_PADDING_CH` (0.5 rem each side).
"""

CELL_PADDING_CH = 2

_BREAK = "\x00"  # placeholder for a break opportunity, written as <wbr> in Markdown
_WBR = "<wbr>"
# characters after which a long token may break (paths, snake_case names, dotted versions, URLs)
# (never inside a number or version: "v4.1" and "24.09" stay whole, issue 39 found "training_4. / 1.0")
_BREAK_AFTER = re.compile(r"([/_\-=&?,;:+]|\.(?!\d))(?=[^\s])")
_LONG_TOKEN = 12
# every ASCII punctuation character pandoc's Markdown could read as markup
# (all_symbols_escapable: any of them may be backslash-escaped)
_MD_ACTIVE = re.compile(r"([\\`*_{}\[\]<>()#+\-.!|$@~^&\"':;=%])")
_URL = re.compile(r"^https?://\S+$")


@dataclass(frozen=True)
class Col:
    """How one column is shown.

    Attributes:
        header: the column header, with its unit, e.g. ``"Time to train (min)"``.
        digits: decimals for floats (None: as many as needed, at most 6 significant digits), or
            the name of a column of the frame that holds each row's decimals (a column whose
            rows have different units).
        percent: the value is a fraction 0–1 shown as a percentage with ``digits`` decimals.
        scale: the value is multiplied by this before it is shown (e.g. ``1e-9`` with a header in
            GB for a value in bytes); applied to ints and floats.
        time_format: ``strftime`` format for datetimes (a UTC datetime gets `` UTC`` appended).
        labels: text values shown under another name (id -> name; others as they are). A column
            named ``benchmark`` given by its header alone gets
            :data:`trainperf.benchmarks.BENCHMARK_NAMES` (``gpt3`` is shown as ``GPT-3 175B``).
    """

    header: str
    digits: int | str | None = None
    percent: bool = False
    scale: float = 1.0
    time_format: str = "%Y-%m-%d %H:%M:%S"
    labels: Mapping[str, str] | None = None


def _breakable(text: str) -> str:
    """Insert break opportunities into tokens longer than ``_LONG_TOKEN`` characters."""

    def one(token: str) -> str:
        return (
            _BREAK_AFTER.sub(lambda m: m.group(1) + _BREAK, token)
            if len(token) > _LONG_TOKEN
            else token
        )

    return " ".join(one(t) for t in text.split(" "))


def _escape(text: str) -> str:
    # a word joiner (U+2060, invisible) after every "{": no "{{" left, so no Quarto shortcode can
    # form from a cell's text (trainperf.markup)
    return _MD_ACTIVE.sub(r"\\\1", text).replace(_BREAK, _WBR).replace("\\{", "\\{\u2060")


def format_value(value, col: Col, markdown: bool = True, digits: int | None = None) -> str:
    """One cell as text.

    Numbers: ``col.digits`` decimals and thousands separators (``1,258,291,200``), percentages with
    a no-break space and ``%``; null and NaN: :data:`MISSING`; booleans: ``yes``/``no``; datetimes: ``col.time_format``.
    Text: newlines become spaces; with ``markdown``, Markdown-active characters are
    backslash-escaped, long tokens get break opportunities and a URL becomes a link.
    ``digits`` overrides ``col.digits`` (the row's own decimals).
    """
    if digits is None and isinstance(col.digits, int):
        digits = col.digits
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) and col.scale == 1.0 and not col.percent:
        return f"{value:,}"
    if isinstance(value, int | float):
        v = float(value) * col.scale * (100 if col.percent else 1)
        if math.isinf(v):
            return "∞" if v > 0 else "−∞"
        if digits is not None:
            # half away from zero on the decimal the number stands for: 99.65 (binary
            # 99.6499...) reads 99.7 as 81.65 does, as a reader rounding by hand expects
            d = Decimal(f"{v:.15g}").quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
            text = f"{d:,.{digits}f}"
        else:
            text = f"{v:,.6g}"
        if text.startswith("-"):
            text = "−" + text[1:]  # a real minus sign
        if text in ("−0", "−0." + "0" * (digits or 0)):
            text = text[1:]
        return text + ("\u00a0%" if col.percent else "")  # a no-break space: "46.9 %" never wraps
    if isinstance(value, _dt.datetime):
        text = value.strftime(col.time_format)
        if (
            "%H" in col.time_format
            and value.tzinfo is not None
            and value.utcoffset() == _dt.timedelta(0)
        ):
            text += " UTC"
        return text
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return str(value)
    if col.labels is not None and isinstance(value, str):
        value = col.labels.get(value, value)
    text = re.sub(
        r"[ \t\r\n\f\v]+", " ", str(value)
    ).strip()  # newlines to spaces; keeps no-break spaces
    if not markdown:
        return text
    if _URL.match(text):
        return f"[{_escape(_breakable(text))}](<{text.replace('>', '%3E')}>)"
    return _escape(_breakable(text))


def _visible(text: str) -> str:
    """What a reader sees of a Markdown cell written by :func:`format_value`."""
    text = re.sub(r"\]\(<[^>]*>\)$", "", text)
    text = text[1:] if text.startswith("[") else text
    return re.sub(r"\\(.)", r"\1", text.replace(_WBR, "").replace("\u2060", ""))


#: widest a column asks to be, in characters, when pandoc shares out the text width
PREFERRED_MAX_CH = 36


def _separator(rows: list[list[str]], headers: list[str], align: list[str]) -> str:
    """A pipe-table separator line whose dash counts are each column's preferred width.

    Pandoc gives a pipe table with a line longer than 72 characters (always, with the escapes
    and ``<wbr>`` marks) relative column widths from the number of dashes per column; tabulate's
    dashes would count the markup. Here a column asks for its longest visible cell, capped at
    :data:`PREFERRED_MAX_CH` so that one long text column does not squeeze the numbers.
    """
    parts = []
    for i, al in enumerate(align):
        want = max([len(_visible(headers[i]))] + [len(_visible(r[i])) for r in rows])
        want = max(3, min(want, PREFERRED_MAX_CH))
        parts.append((":" + "-" * want) if al == "left" else ("-" * want + ":"))
    return "|" + "|".join(parts) + "|"


def min_width(texts: Sequence[str]) -> int:
    """Narrowest width a column of these cell texts can take, in characters: its longest run of
    characters without a break opportunity (space or ``<wbr>``), Markdown escapes not counted."""
    best = 0
    for t in texts:
        t = re.sub(r"\]\(<[^>]*>\)$", "", t)
        t = t[1:] if t.startswith("[") else t
        for word in re.split(r"[ \t\r\n]+|<wbr>", t):  # a no-break space does not break
            best = max(best, len(_visible(word)))
    return best


def split_columns(
    widths: Mapping[str, int], key: Sequence[str], budget: int = TEXT_WIDTH_CH
) -> list[list[str]]:
    """Group columns into tables that each fit ``budget`` characters, every group starting with
    ``key``; greedy in the given order. A column wider than the budget alone still gets a group.

    Args:
        widths: column -> narrowest width in characters (padding not included).
        key: columns repeated in every group (e.g. the row label).
    """
    cost = {c: w + CELL_PADDING_CH for c, w in widths.items()}
    key = [c for c in key if c in widths]
    rest = [c for c in widths if c not in key]
    base = sum(cost[c] for c in key)
    groups: list[list[str]] = []
    current: list[str] = []
    used = base
    for c in rest:
        if current and used + cost[c] > budget:
            groups.append(key + current)
            current, used = [], base
        current.append(c)
        used += cost[c]
    if current or not groups:
        groups.append(key + current)
    return groups


def _cells(frame: pl.DataFrame, cols: Mapping[str, Col], markdown: bool) -> list[list[str]]:
    extra = [col.digits for col in cols.values() if isinstance(col.digits, str)]
    names = list(dict.fromkeys([*cols, *extra]))
    return [
        [
            format_value(
                r[c], col, markdown, r[col.digits] if isinstance(col.digits, str) else None
            )
            for c, col in cols.items()
        ]
        for r in frame.select(names).iter_rows(named=True)
    ]


def _normalise(frame: pl.DataFrame, columns: Mapping[str, str | Col]) -> dict[str, Col]:
    wanted = list(columns) + [
        v.digits for v in columns.values() if isinstance(v, Col) and isinstance(v.digits, str)
    ]
    missing = [c for c in dict.fromkeys(wanted) if c not in frame.columns]
    if missing:
        raise KeyError(
            f"no column(s) {', '.join(missing)} in the frame; it has {', '.join(frame.columns)}"
        )
    return {
        c: (
            Col(v, labels=BENCHMARK_NAMES if c == "benchmark" else None)
            if isinstance(v, str)
            else v
        )
        for c, v in columns.items()
    }


def to_markdown(
    frame: pl.DataFrame,
    columns: Mapping[str, str | Col],
    key: Sequence[str] | None = None,
    budget: int = TEXT_WIDTH_CH,
) -> str:
    """The columns of ``frame`` named in ``columns`` (in that order) as Markdown pipe table(s).

    Args:
        frame: the data; columns not named are left out.
        columns: column name -> header text or :class:`Col`.
        key: columns repeated in every part when the table is split to fit ``budget`` (default:
            the first column).
        budget: text width in characters (:data:`TEXT_WIDTH_CH`).

    Returns:
        One pipe table, or several separated by a blank line when the columns do not fit.

    Raises:
        KeyError: a named column is not in ``frame``.
    """
    # deferred: tabulate costs ~0.5-1 s at import (-X importtime); only Markdown tables use it
    from tabulate import tabulate  # noqa: PLC0415

    cols = _normalise(frame, columns)
    names = list(cols)
    rows = _cells(frame, cols, markdown=True)
    headers = [_escape(col.header) for col in cols.values()]
    widths = {c: min_width([headers[i]] + [r[i] for r in rows]) for i, c in enumerate(names)}
    numeric = {c: frame.schema[c].is_numeric() for c in names}
    key = list(key) if key is not None else names[:1]
    groups = split_columns(widths, key, budget)
    if len(groups) == 1:
        groups = [names]  # it fits: the columns in the order given
    parts = []
    for group in groups:
        idx = [names.index(c) for c in group]
        sub_rows = [[r[i] for i in idx] for r in rows]
        sub_headers = [headers[i] for i in idx]
        align = ["right" if numeric[c] else "left" for c in group]
        lines = tabulate(
            sub_rows,
            headers=sub_headers,
            tablefmt="pipe",
            colalign=align,
            disable_numparse=True,
        ).splitlines()
        lines[1] = _separator(sub_rows, sub_headers, align)
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def _plain(frame: pl.DataFrame, cols: Mapping[str, Col]) -> str:
    # deferred: tabulate costs ~0.5-1 s at import (-X importtime); only plain tables use it
    from tabulate import tabulate  # noqa: PLC0415

    return tabulate(
        _cells(frame, cols, markdown=False),
        headers=[col.header for col in cols.values()],
        tablefmt="simple",
        disable_numparse=True,
    )


def _csv(frame: pl.DataFrame) -> str:
    """Every column as CSV; nested and object columns as their string form."""
    flat = frame.with_columns(
        pl.col(c).cast(pl.String)
        if isinstance(frame.schema[c], pl.List | pl.Array | pl.Struct | pl.Object)
        else pl.col(c)
        for c in frame.columns
    )
    try:
        return flat.write_csv()
    except Exception:  # a dtype CSV cannot hold: fall back to text per value
        return flat.select(pl.all().cast(pl.String)).write_csv()


class Table:
    """A reader table as a notebook display object: ``text/markdown`` (the book's table),
    ``text/plain`` (the same, unescaped) and ``text/csv`` (the full detail).

    Attributes:
        markdown: the pipe table(s).
        plain: a plain-text rendering.
        csv: the full-detail CSV (every column of the detail frame, unrounded).
    """

    def __init__(self, markdown: str, plain: str, csv: str):
        self.markdown, self.plain, self.csv = markdown, plain, csv

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/markdown": self.markdown, "text/plain": self.plain, "text/csv": self.csv}

    def _repr_markdown_(self):
        return self.markdown

    def __repr__(self) -> str:
        return self.plain


EMPTY = "*No rows.*"
"""What a table with no rows shows instead of a header with nothing under it."""

_NOTE: list[str] = [""]  # the note every table of this process starts with (label_tables)


def label_tables(note: str) -> None:
    """Start every table this process shows from now on with ``note`` (Markdown, one line), e.g.
    ``"**Synthetic data** (generated, not measured)."`` in a notebook whose input is synthetic,
    so that the label sits inside the table's float wherever the table is embedded; ``""`` ends it."""
    _NOTE[0] = note


#: Caveats that many sources of one table share, each written once under the key: the phrase in
#: a source text -> (its mark, the sentence under the key). The reference tables' transcribed
#: values (``data/reference/*.csv``) say where a third-party summary relays a paper.
SOURCE_CAVEATS: dict[str, tuple[str, str]] = {
    "as relayed by a third-party summary; not checked against the paper": (
        "†",
        "† As relayed by a third-party summary of the paper; not checked against the paper.",
    ),
}


def _source_key(frame: pl.DataFrame, sources: Sequence[str]) -> tuple[pl.DataFrame, str]:
    """``frame`` with the texts of the ``sources`` columns replaced by marks ``[1]``, ``[2]``, ...
    (in order of first appearance) and the Markdown key of the marks; a caveat of
    :data:`SOURCE_CAVEATS` in a text becomes its mark there and one sentence under the key."""
    texts: list[str] = []
    for c in sources:
        for v in frame[c].to_list():
            if v is not None and str(v) not in texts:
                texts.append(str(v))
    if not texts:
        return frame, ""
    mark = {v: f"[{i + 1}]" for i, v in enumerate(texts)}
    shown = frame.with_columns(
        pl.col(c).cast(pl.String).replace_strict(mark, default=None) for c in sources
    )
    notes: list[str] = []
    keyed = []
    for v in texts:
        for phrase, (sign, sentence) in SOURCE_CAVEATS.items():
            if phrase in v:
                v = re.sub(rf"[,;]?\s*{re.escape(phrase)}", f" {sign}", v)
                if sentence not in notes:
                    notes.append(sentence)
        keyed.append(v)
    # one source a line (a Markdown hard break, backslash-newline), the caveats on lines of their
    # own: a list to look a mark up in, not a paragraph to read through
    lines = [f"[{i + 1}] {_key_text(v)}" for i, v in enumerate(keyed)]
    key = "\\\n".join(["Sources:", *lines, *notes])
    # a block of its own (book.scss: left-aligned, small), never centred under the table like a
    # caption, its URLs short links (issue 39: a centred wall of 25 lines of bare URLs)
    return shown, "\n".join(["::: {.source-key}", key, ":::"])


_URL_IN_TEXT = re.compile(r"https?://[^\s)]+")


def _key_text(text: str) -> str:
    """A source text for the key under a table: escaped like a cell, each URL in it a link whose
    visible text is the address without its scheme and trailing slash."""
    out, last = [], 0
    for m in _URL_IN_TEXT.finditer(text):
        url = m.group(0).rstrip(".,;")
        end = m.start() + len(url)
        out.append(text[last : m.start()])
        shown = re.sub(r"^https?://(www\.)?", "", url).rstrip("/")
        out.append(f"\x01{shown}\x02{url}\x03")
        last = end
    out.append(text[last:])
    md = _escape(_breakable(re.sub(r"[ \t\r\n\f\v]+", " ", "".join(out)).strip()))
    return re.sub(
        r"\x01(.*?)\x02(.*?)\x03",
        lambda m: f"[{m.group(1)}](<{_visible(m.group(2)).replace('>', '%3E')}>)",
        md,
    )


def table(
    frame: pl.DataFrame,
    columns: Mapping[str, str | Col],
    key: Sequence[str] | None = None,
    detail: pl.DataFrame | None = None,
    budget: int = TEXT_WIDTH_CH,
    note: str | None = None,
    sources: Sequence[str] = (),
) -> Table:
    """A reader table for a notebook cell (see the module docstring).

    Args:
        frame: the rows to show (none: the table says :data:`EMPTY` instead of a bare header).
        columns: column name -> header (with unit) or :class:`Col`, in display order.
        key: columns repeated when the table is split (default: the first).
        detail: the frame written as the CSV download (default: ``frame``, all its columns);
            when it has more rows than ``frame``, a line under the table says how many are shown.
        budget: text width in characters.
        note: a Markdown line above the table (default: the one of :func:`label_tables`).
        sources: columns that cite sources: each distinct text becomes a mark ``[n]`` in the
            table and is written once in a key below it ("Sources:", then "[1] ...", "[2] ...",
            a line each), instead of the same long citation in every row (the CSV download keeps
            the full text).

    Returns:
        A :class:`Table`; as the last expression of a cell it displays as ``text/markdown``.

    Raises:
        KeyError: a named column is not in ``frame``.
    """
    cols = _normalise(frame, columns)
    shown, key_md = _source_key(frame, sources)
    md = to_markdown(shown, cols, key=key, budget=budget) if frame.height else EMPTY
    if key_md and frame.height:
        md = f"{md}\n\n{key_md}"
    if detail is not None and frame.height and detail.height > frame.height:
        # a table cut to its first rows says so (a review found 15 rows of 92 shown unannounced)
        md = f"{md}\n\nShown: {frame.height:,} of the {detail.height:,} rows of the CSV download."
    note = _NOTE[0] if note is None else note
    return Table(
        f"{note}\n\n{md}" if note else md,
        _plain(frame, cols),
        _csv(detail if detail is not None else frame),
    )


def record(
    frame: pl.DataFrame,
    fields: Mapping[str, str | Col],
    headers: tuple[str, str] = ("Quantity", "Value"),
    label: str | None = None,
    budget: int = TEXT_WIDTH_CH,
) -> Table:
    """A frame turned on its side: one field per row, one column per row of the frame (e.g. a
    one-row summary, or a few runs compared on many quantities, each with its own digits).

    Args:
        frame: the rows; a one-row frame gives a two-column table.
        fields: column name -> label (with unit) or :class:`Col` (its ``header`` is the label),
            in display order.
        headers: the header of the label column, and of the value column of a one-row frame.
        label: with several rows, the column whose values head the value columns.

    Raises:
        KeyError: a named column is not in ``frame``; ValueError: the frame is empty, or has
            several rows and no ``label``.
    """
    cols = _normalise(frame, fields)
    if frame.height == 0:
        raise ValueError("record(): the frame has no row")
    if frame.height > 1 and label is None:
        raise ValueError("record(): a frame of several rows needs label= (the column heads)")
    heads = [headers[1]] if frame.height == 1 else [str(v) for v in frame[label].to_list()]
    data = {"field": [col.header for col in cols.values()]}
    for i, row in enumerate(frame.iter_rows(named=True)):
        data[f"v{i}"] = [format_value(row[c], col, markdown=False) for c, col in cols.items()]
    rows = pl.DataFrame(data)
    numeric = all(frame.schema[c].is_numeric() for c in cols)
    md = to_markdown(
        rows, {"field": headers[0], **{f"v{i}": h for i, h in enumerate(heads)}}, budget=budget
    )
    if numeric:  # numbers in every value column: align them right
        lines = md.splitlines()
        for k, line in enumerate(lines):
            if re.fullmatch(r"\|(:?-+:?\|)+", line):
                cells = line.strip("|").split("|")
                lines[k] = (
                    "|" + "|".join([cells[0]] + [c.lstrip(":") + ":" for c in cells[1:]]) + "|"
                )
        md = "\n".join(lines)
    return Table(
        f"{_NOTE[0]}\n\n{md}" if _NOTE[0] else md,
        _plain(rows, {"field": Col(headers[0]), **{f"v{i}": Col(h) for i, h in enumerate(heads)}}),
        _csv(frame),
    )
