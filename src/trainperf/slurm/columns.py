"""Vectorised sacct value parsers: polars expressions over whole columns of sacct text.

The per-value parsers of :mod:`trainperf.slurm.fields` cost one Python call per value; for a dump of
100k records that was most of the reader's time (profiled: 34 % in ``strptime``, 36 % in per-row
Python). Here every value kind is parsed by polars, or, where a column has few distinct values
(states, exit codes, time limits, host lists, TRES strings), by the per-value parser once per
distinct value (:func:`map_unique`).

Each parser returns a :class:`Parse`: stages of expressions (stage *k* may use the columns of stages
before it) that the reader runs for all columns at once, in one lazy query (:func:`run_stages`), and
the names of its output columns, among them a Boolean ``bad`` (true where a non-empty value does not
parse), so the reader can name the first bad line or leave the bad lines out. Expensive steps (regex
groups, ``strptime``) run only on the rows that need them: a kernel skips null inputs.

With ``fast=True`` a parser reads only the forms sacct prints on almost every record (``123`` and
``123.batch``, ``2024-06-01T16:18:41``, ``00:53:40``) and marks every other value ``bad``; the
reader then parses those rows again with the full parser (values stripped), as it does for values
that do not parse. Where the fast parser reads a value, its outputs are those of the full one
(``tests/test_slurm.py`` compares them), so the result is the full parser's at a fraction of the
cost (``benchmarks/bench_slurm.py``).

The grammars are those of :mod:`trainperf.slurm.fields` (``tests/test_slurm.py`` checks that both
give the same values on the bundled and real fixtures, and on generated values), with one deliberate
difference: digits are ASCII ``0-9`` only (Python's ``\\d`` and ``int()`` also take other Unicode
digits, which sacct never prints), and numbers too large for 64-bit integers are bad values instead
of an overflow.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from trainperf.slurm.fields import INFINITE, NO_VAL

__all__ = [
    "PARALLEL_ROWS",
    "WHITESPACE",
    "Parse",
    "duration_seconds",
    "epoch_or_iso_times",
    "int_column",
    "job_id_number",
    "job_id_parts",
    "map_unique",
    "run_stages",
    "stages_of",
    "strip",
    "row_chunks",
    "value_table",
]

#: The characters Python's ``str.strip()`` removes (``str.isspace``), so that ``strip`` here and the
#: per-value parsers agree (polars' own default is Unicode White_Space, which lacks ``\x1c``-``\x1f``).
WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_WS = f"[{re.escape(WHITESPACE)}]"
_MAX_EXACT = 2.0**53  # floats hold every integer below this exactly
_MAX_EPOCH = 2**32  # Slurm times are 32-bit epochs (NO_VAL / INFINITE are the top two values)


def strip(e: pl.Expr) -> pl.Expr:
    """``str.strip()`` of every value (an expression)."""
    return e.str.strip_chars(WHITESPACE)


@dataclass
class Parse:
    """Expression stages of one column's parser and the names of its outputs."""

    stages: list[list[pl.Expr]] = field(default_factory=list)
    out: dict[str, str] = field(default_factory=dict)  # output → column name in the query

    def at(self, k: int, *exprs: pl.Expr) -> None:
        while len(self.stages) <= k:
            self.stages.append([])
        self.stages[k].extend(exprs)


#: Rows (lines or records) from which a step runs as one polars query per core, collected together
#: (``pl.collect_all``): each query splits or parses its own rows, so every core works where one
#: query's string functions would use one (issue 41: the reader used one core of two where polars'
#: ``read_csv`` uses both, 7.3-7.6x its wall time). Below it one query costs less.
PARALLEL_ROWS = 20_000


def row_chunks(height: int) -> list[tuple[int, int]]:
    """``(offset, length)`` of the row ranges a step is split into: one per polars thread when
    ``height`` is at least :data:`PARALLEL_ROWS`, else one range."""
    n = max(1, pl.thread_pool_size()) if height >= PARALLEL_ROWS else 1
    step = max(1, -(-height // n))
    return [(o, min(step, height - o)) for o in range(0, height, step)] or [(0, 0)]


def stages_of(lf: pl.LazyFrame, parses: Sequence[Parse]) -> pl.LazyFrame:
    """``lf`` with every parser's stages added (stage *k* of all parsers in one ``with_columns``)."""
    for k in range(max((len(p.stages) for p in parses), default=0)):
        exprs = [e for p in parses if k < len(p.stages) for e in p.stages[k]]
        if exprs:
            lf = lf.with_columns(exprs)
    return lf


def run_stages(frame: pl.DataFrame, parses: Sequence[Parse]) -> pl.DataFrame:
    """Run every parser's stages on ``frame`` in one lazy query; returns only their outputs.

    The in-memory engine: for frames of a few thousand rows its fixed cost is lower than the
    streaming engine's."""
    lf = stages_of(frame.lazy(), parses)
    out = sorted({c for p in parses for c in p.out.values()})
    return lf.select(out).collect(engine="in-memory")


def _text(p: Parse, column: str, prefix: str, strip_values: bool) -> pl.Expr:
    """Stage 0: the (stripped) text as ``{prefix}t``; returns a reference to it."""
    src = pl.col(column)
    p.at(0, (strip(src) if strip_values else src).alias(f"{prefix}t"))
    return pl.col(f"{prefix}t")


@functools.cache  # the expressions are immutable: built once per column name
def int_column(column: str, prefix: str, *, strip_values: bool = True) -> Parse:
    """Outputs ``value`` (Int64) and ``bad``: ``""`` → null; ``[+-]digits`` → int; anything else
    (or beyond 64 bits) bad."""
    p = Parse()
    t = _text(p, column, prefix, strip_values)
    # polars' text-to-Int64 cast reads exactly [+-]?[0-9]+ (ASCII digits; anything else, a blank
    # or a number beyond 64 bits is null: tests/test_slurm_fast_parsers.py), so no regex pass
    # (issue 41: the regex and the strip were 0.03 s of each count column at 174 MB)
    p.at(1, t.cast(pl.Int64, strict=False).alias(f"{prefix}v"))
    p.at(2, ((t != "") & pl.col(f"{prefix}v").is_null()).alias(f"{prefix}bad"))
    p.out = {"value": f"{prefix}v", "bad": f"{prefix}bad"}
    return p


_DURATION = (
    r"^(?:(?P<d>[0-9]+)-)?(?:(?P<h>[0-9]+):)??(?P<m>[0-9]+):(?P<s>[0-9]+(?:\.[0-9]+)?)$"
    r"|^(?P<donly>[0-9]+)-(?P<honly>[0-9]+)$"
)
_PARTS = ("d", "h", "m", "s", "donly", "honly")
_CANONICAL = r"^(?:[0-9]{1,9}-)?[0-9]{2}:[0-9]{2}:[0-9]{2}$"  # [D-]HH:MM:SS as sacct prints it


@functools.cache  # the expressions are immutable: built once per column name
def duration_seconds(
    column: str,
    prefix: str,
    *,
    words_null: Sequence[str] = (),
    strip_values: bool = True,
    fast: bool = False,
) -> Parse:
    """Outputs ``value`` (Float64 seconds) and ``bad``, as :func:`~trainperf.slurm.parse_duration`.

    ``[D-]HH:MM:SS``, ``MM:SS[.mmm]`` and ``D-HH``; ``""`` → null. ``words_null``: words (compared
    upper-case) that mean null rather than a bad value (``INVALID`` for Elapsed). Bad: no match,
    minutes ≥ 60 with hours present, seconds ≥ 60, or a total of 2**53 s or more. The fixed-width
    form is cut by position; only the other values go through the regex groups.

    ``fast``: only ``""`` and the fixed-width form with minutes and seconds below 60 (its total
    is below 2**53 s); every other value is ``bad``.
    """
    p = Parse()
    t = _text(p, column, prefix, strip_values)
    c = lambda name: pl.col(f"{prefix}{name}")  # noqa: E731
    p.at(1, t.str.contains(_CANONICAL).alias(f"{prefix}canon"))
    canon = c("canon")
    # the fixed-width [D-]HH:MM:SS cut by position (both paths)
    by_position = [
        pl.when(canon).then(t.str.head(-9).replace("", "0")).alias(f"{prefix}d0"),
        pl.when(canon).then(t.str.slice(-8, 2)).alias(f"{prefix}h0"),
        pl.when(canon).then(t.str.slice(-5, 2)).alias(f"{prefix}m0"),
        pl.when(canon).then(t.str.slice(-2, 2)).alias(f"{prefix}s0"),
    ]
    if fast:
        p.at(2, *by_position)
        d, h, m, sec = (c(f"{k}0").cast(pl.Float64) for k in ("d", "h", "m", "s"))
        ok = canon & (m < 60) & (sec < 60)
        p.at(
            3,
            pl.when(ok).then(d * 86400.0 + h * 3600.0 + m * 60.0 + sec).alias(f"{prefix}value"),
            ((t != "") & ~ok).alias(f"{prefix}bad"),
        )
        p.out = {"value": f"{prefix}value", "bad": f"{prefix}bad"}
        return p
    p.at(2, *by_position, pl.when(~canon).then(t).str.extract_groups(_DURATION).alias(f"{prefix}g"))
    g = c("g").struct.field
    p.at(
        3,
        *[
            pl.coalesce(c(f"{k}0"), g(k)).cast(pl.Float64).alias(f"{prefix}{k}")
            for k in ("d", "h", "m", "s")
        ],
        g("donly").cast(pl.Float64).alias(f"{prefix}donly"),
        g("honly").cast(pl.Float64).alias(f"{prefix}honly"),
    )
    total = (
        pl.when(c("donly").is_not_null())
        .then(c("donly") * 86400.0 + c("honly") * 3600.0)
        .otherwise(
            c("d").fill_null(0.0) * 86400.0
            + c("h").fill_null(0.0) * 3600.0
            + c("m") * 60.0
            + c("s")
        )
    )
    p.at(4, total.alias(f"{prefix}total"))
    out_of_range = ((c("m") >= 60) & c("h").is_not_null()) | (c("s") >= 60)
    matched = c("total").is_not_null() & ~(out_of_range | (c("total") >= _MAX_EXACT)).fill_null(
        False
    )
    p.at(5, matched.alias(f"{prefix}matched"))
    word = (
        pl.when(~c("matched")).then(t).str.to_uppercase().is_in(list(words_null)).fill_null(False)
        if words_null
        else pl.lit(False)
    )
    p.at(6, word.alias(f"{prefix}word"))
    p.at(
        7,
        pl.when(c("matched") & ~c("word")).then(c("total")).alias(f"{prefix}value"),
        ((t != "") & ~c("word") & ~c("matched")).alias(f"{prefix}bad"),
    )
    p.out = {"value": f"{prefix}value", "bad": f"{prefix}bad"}
    return p


def rounded_seconds(seconds: pl.Series) -> pl.Series:
    """``int(round(seconds))`` (half to even, as Python's ``round``) as Int64."""
    return seconds.round(0, mode="half_to_even").cast(pl.Int64)


_JOBID = (
    r"^(?P<id>[0-9]+)"
    r"(?:_(?P<task>[0-9]+|\[[^\]]*\]))?"
    r"(?:\+(?P<het>[0-9]+))?"
    r"(?:\.(?P<step>[A-Za-z]+|[0-9]+)(?:\+(?P<stephet>[0-9]+))?)?$"
)


# a plain job or one of its steps (``123``, ``123.batch``, ``123.0``): most records of a dump
_PLAIN_JOBID = r"^[0-9]+(?:\.(?:[A-Za-z]+|[0-9]+))?$"


@functools.cache  # the expressions are immutable: built once per column name
def job_id_parts(
    column: str, prefix: str, *, strip_values: bool = True, fast: bool = False
) -> Parse:
    """The parts of :func:`~trainperf.slurm.parse_job_id` for a column of JobIDs.

    Outputs ``id``, ``array_task_id``, ``array_pending``, ``het_offset``, ``step``, ``parent``,
    ``kind`` and ``bad`` (not a JobID, or a number beyond 64 bits).

    ``fast``: a plain id or step (``123``, ``123.batch``, ``123.0``; a regex without groups
    checks the form) is cut at its ``.``, and only the other values (array tasks, het
    components, bad values) go through the regex groups, which cost several times more; the
    outputs are the same.
    """
    p = Parse()
    t = _text(p, column, prefix, strip_values)
    c = lambda name: pl.col(f"{prefix}{name}")  # noqa: E731
    cut = t.str.splitn(".", 2)  # parent: the text before the first "." (all of it without one)
    if fast:
        p.at(1, t.str.contains(_PLAIN_JOBID).alias(f"{prefix}plain"), cut.alias(f"{prefix}cut"))
        plain = c("plain").fill_null(False)
        p.at(2, pl.when(~plain).then(t).str.extract_groups(_JOBID).alias(f"{prefix}g"))
        groups, cut_at = c("g").struct.field, c("cut").struct.field

        def g(name: str) -> pl.Expr:
            if name in ("id", "step"):
                part = cut_at("field_0" if name == "id" else "field_1")
                return pl.when(plain).then(part).otherwise(groups(name))
            return groups(name)  # null where plain: no task, het or step het

        parent, k = cut_at("field_0"), 3
    else:
        p.at(1, t.str.extract_groups(_JOBID).alias(f"{prefix}g"))
        g, parent, k = c("g").struct.field, cut.struct.field("field_0"), 2
    step = (
        pl.when(g("stephet").is_not_null())
        .then(g("step") + "+" + g("stephet"))
        .otherwise(g("step"))
    )
    task_num = g("task").str.contains(r"^[0-9]+$")
    p.at(
        k,
        g("id").cast(pl.Int64, strict=False).alias(f"{prefix}id"),
        pl.when(task_num).then(g("task").cast(pl.Int64, strict=False)).alias(f"{prefix}task_id"),
        pl.when(g("task").is_not_null() & ~task_num).then(g("task")).alias(f"{prefix}pending"),
        g("het").cast(pl.Int64, strict=False).alias(f"{prefix}het_offset"),
        step.alias(f"{prefix}step"),
        parent.alias(f"{prefix}parent"),
        task_num.fill_null(False).alias(f"{prefix}task_num"),
    )
    kind = (
        pl.when(c("step").is_not_null())
        .then(pl.lit("step"))
        .when(c("pending").is_not_null())
        .then(pl.lit("array_pending"))
        .when(c("task_id").is_not_null())
        .then(pl.lit("array_task"))
        .when(c("het_offset").is_not_null())
        .then(pl.lit("het_component"))
        .otherwise(pl.lit("job"))
    )
    bad = (
        c("id").is_null()
        | (c("task_num") & c("task_id").is_null())
        | (g("het").is_not_null() & c("het_offset").is_null())
    )
    p.at(k + 1, kind.alias(f"{prefix}kind"), bad.alias(f"{prefix}bad"))
    p.out = _JOBID_OUT(prefix)
    return p


def _JOBID_OUT(prefix: str) -> dict[str, str]:  # noqa: N802
    return {
        "id": f"{prefix}id",
        "array_task_id": f"{prefix}task_id",
        "array_pending": f"{prefix}pending",
        "het_offset": f"{prefix}het_offset",
        "step": f"{prefix}step",
        "parent": f"{prefix}parent",
        "kind": f"{prefix}kind",
        "bad": f"{prefix}bad",
    }


_JOBID_NUMBER = (
    r"^([0-9]+)(?:_(?:[0-9]+|\[[^\]]*\]))?(?:\+[0-9]+)?(?:\.(?:[A-Za-z]+|[0-9]+)(?:\+[0-9]+)?)?$"
)


@functools.cache  # the expressions are immutable: built once per column name
def job_id_number(
    column: str, prefix: str, *, strip_values: bool = True, same_as: str | None = None
) -> Parse:
    """Outputs ``id`` (Int64, the number before any suffix, what ``JobIDRaw`` is read for) and
    ``bad`` (not a JobID).

    ``same_as``: the prefix of a :func:`job_id_parts` parse (of JobID) run in the same query
    (:func:`run_stages`); where the two texts are equal its ``id`` is taken, so the regex runs
    only on the rows whose texts differ (array tasks and heterogeneous components, whose raw
    ids differ). Both grammars are the same, so the result is that of the regex (JobIDRaw
    equals JobID on most records, and the regex was a tenth of the reader's query when profiled).
    """
    p = Parse()
    t = _text(p, column, prefix, strip_values)
    if same_as is None:
        p.at(1, t.str.extract(_JOBID_NUMBER, 1).cast(pl.Int64, strict=False).alias(f"{prefix}id"))
        p.at(2, pl.col(f"{prefix}id").is_null().alias(f"{prefix}bad"))
    else:
        same = (t == pl.col(f"{same_as}t")).fill_null(False)
        p.at(1, same.alias(f"{prefix}same"))
        own = pl.when(~pl.col(f"{prefix}same")).then(t).str.extract(_JOBID_NUMBER, 1)
        p.at(2, own.cast(pl.Int64, strict=False).alias(f"{prefix}own"))
        # stage 4: job_id_parts' id is made at stage 3 (2 without ``fast``)
        p.at(
            4,
            pl.when(pl.col(f"{prefix}same"))
            .then(pl.col(f"{same_as}id"))
            .otherwise(pl.col(f"{prefix}own"))
            .alias(f"{prefix}id"),
        )
        p.at(5, pl.col(f"{prefix}id").is_null().alias(f"{prefix}bad"))
    p.out = {"id": f"{prefix}id", "bad": f"{prefix}bad"}
    return p


_NULL_TIMES = ["", "Unknown", "None", "N/A"]
_ISO_MAIN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]$"
# the two other forms the line-by-line reader accepted, %Y-%m-%d %H:%M:%S and %Y-%m-%dT%H:%M,
# rewritten to the first before strptime
_ISO_OTHER = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}"
    r"(?:T(?:[01][0-9]|2[0-3]):[0-5][0-9]| (?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9])$"
)
_ISO_FORMAT = "%Y-%m-%dT%H:%M:%S"


@functools.cache  # the expressions are immutable: built once per column name
def epoch_or_iso_times(
    column: str, prefix: str, *, strip_values: bool = True, fast: bool = False
) -> Parse:
    """Outputs ``utc`` (datetimes from epoch seconds), ``naive`` (from ISO text) and ``bad``.

    ``Unknown``/``None``/``N/A``/``""`` and the epochs 0, NO_VAL and INFINITE are null. ISO text
    (``YYYY-MM-DDTHH:MM:SS``, ``YYYY-MM-DD HH:MM:SS``, ``YYYY-MM-DDTHH:MM``) is local time of the host
    that ran sacct; the caller localises it. Bad: anything else, an impossible date, an epoch
    below 0 or from 2**32 on.

    ``fast``: only the null words and ``YYYY-MM-DDTHH:MM:SS``; every other value (epoch seconds
    among them) is ``bad``.
    """
    p = Parse()
    t = _text(p, column, prefix, strip_values)
    c = lambda name: pl.col(f"{prefix}{name}")  # noqa: E731
    if fast:
        main = t.str.contains(_ISO_MAIN)
        p.at(
            1,
            pl.when(main)
            .then(t.str.strptime(pl.Datetime("us"), _ISO_FORMAT, strict=False))
            .alias(f"{prefix}naive"),
            pl.lit(None, dtype=pl.Datetime("us", "UTC")).alias(f"{prefix}utc"),
            (~main & ~t.is_in(_NULL_TIMES)).alias(f"{prefix}other"),
        )
        # an impossible date of the main form (2024-02-30T00:00:00) is bad in the full parser too
        p.at(2, (c("other") | (main & c("naive").is_null())).alias(f"{prefix}bad"))
        p.out = {"utc": f"{prefix}utc", "naive": f"{prefix}naive", "bad": f"{prefix}bad"}
        return p
    p.at(
        1,
        t.str.contains(_ISO_MAIN).alias(f"{prefix}main"),
        t.is_in(_NULL_TIMES).alias(f"{prefix}null"),
    )
    p.at(2, pl.when(~c("main") & ~c("null")).then(t).alias(f"{prefix}rest"))
    rest = c("rest")  # null where no further work is needed
    p.at(
        3,
        pl.when(c("main"))
        .then(t.str.strptime(pl.Datetime("us"), _ISO_FORMAT, strict=False))
        .alias(f"{prefix}naive1"),
        pl.when(rest.str.contains(r"^-?[0-9]+$"))
        .then(rest.cast(pl.Int64, strict=False))
        .alias(f"{prefix}epoch"),
        rest.str.contains(r"^-?[0-9]+$").fill_null(False).alias(f"{prefix}is_epoch"),
        pl.when(rest.str.contains(_ISO_OTHER))
        .then(
            pl.when(rest.str.len_bytes() == 16)
            .then(rest + ":00")
            .otherwise(rest)
            .str.replace(" ", "T", literal=True)
        )
        .alias(f"{prefix}other"),
    )
    epoch_ok = c("epoch").is_not_null() & (c("epoch") >= 0) & (c("epoch") < _MAX_EPOCH)
    p.at(
        4,
        pl.coalesce(
            c("naive1"), c("other").str.strptime(pl.Datetime("us"), _ISO_FORMAT, strict=False)
        ).alias(f"{prefix}naive"),
        (epoch_ok & ~c("epoch").is_in([0, NO_VAL, INFINITE])).alias(f"{prefix}use_epoch"),
        epoch_ok.alias(f"{prefix}epoch_ok"),
    )
    p.at(
        5,
        pl.when(c("use_epoch"))
        .then(c("epoch") * 1_000_000)
        .cast(pl.Datetime("us"))
        .dt.replace_time_zone("UTC")
        .alias(f"{prefix}utc"),
        (
            ~c("null") & pl.when(c("is_epoch")).then(~c("epoch_ok")).otherwise(c("naive").is_null())
        ).alias(f"{prefix}bad"),
    )
    p.out = {"utc": f"{prefix}utc", "naive": f"{prefix}naive", "bad": f"{prefix}bad"}
    return p


def value_table(
    uniq: Sequence[Any], fn: Callable[[Any], tuple], schema: dict[str, pl.DataType]
) -> pl.DataFrame:
    """The per-value parser applied to each distinct value: ``_value`` (Utf8), the ``schema``
    columns and ``_bad`` (Boolean: ``fn`` raised ``ValueError``; its outputs are null)."""
    rows, bad = [], []
    ints = [k for k, dtype in enumerate(schema.values()) if dtype == pl.Int64]
    for v in uniq:
        try:
            out = fn(v)
            _check_ints(out, ints)
        except (ValueError, RecursionError, OverflowError):
            out, is_bad = (None,) * len(schema), True
        else:
            is_bad = False
        rows.append(out)
        bad.append(is_bad)
    cols = {}
    for k, (name, dtype) in enumerate(schema.items()):
        vals = [r[k] for r in rows]
        cols[name] = (
            _list_series(name, vals)
            if dtype == pl.List(pl.Utf8)
            else pl.Series(name, vals, dtype=dtype)
        )
    cols["_bad"] = pl.Series("_bad", bad, dtype=pl.Boolean)
    cols["_value"] = pl.Series("_value", list(uniq), dtype=pl.Utf8)
    return pl.DataFrame(cols, height=len(bad))


def map_unique(
    values: pl.Series,
    fn: Callable[[Any], tuple],
    schema: dict[str, pl.DataType],
) -> tuple[pl.DataFrame, pl.Series]:
    """Apply a per-value parser once per distinct value of a column.

    Args:
        values: the column (Utf8).
        fn: value → tuple with one item per ``schema`` column; raises ``ValueError`` for a bad value.
        schema: names and dtypes of the outputs.

    Returns:
        ``(frame of the outputs, one row per input row in input order; bad Boolean Series)``; the
        outputs of a bad value are null.

    The reader itself joins the tables of :func:`value_table` in its one query
    (:meth:`trainperf.slurm.derive.Derive.parse_rows`); this is the same for one column.
    """
    if values.len() == 0:
        return pl.DataFrame(schema=schema), pl.Series([], dtype=pl.Boolean)
    table = value_table(values.unique(maintain_order=True).to_list(), fn, schema)
    # every row's outputs by one join on the value (a code per row and a gather cost more)
    out = (
        values.alias("_value")
        .to_frame()
        .join(table, on="_value", how="left", nulls_equal=True, maintain_order="left")
        .drop("_value")
    )
    return out.drop("_bad"), out.get_column("_bad")


def _check_ints(out: tuple, ints: list[int]) -> None:
    """A Python int beyond 64 bits (``int()`` has no limit) is a bad value, not a polars error.
    ``ints``: the positions of the Int64 outputs."""
    for k in ints:
        value = out[k]
        if isinstance(value, int) and not -(2**63) <= value < 2**63:
            raise OverflowError(f"{value} does not fit in 64 bits")


def _list_series(name: str, vals: list[list[str] | None]) -> pl.Series:
    """A List(Utf8) Series from Python lists: each list joined with a separator that occurs in
    none of the strings and split again by polars (a row-by-row conversion of thousands of
    names cost four times more); the plain conversion when every candidate occurs."""
    items = [x for v in vals if v for x in v]
    every = "".join(items)
    sep = next((c for c in ("\x1f", "\x1e", "\x00") if c not in every), None)
    if sep is None or len(items) < 64:
        return pl.Series(name, vals, dtype=pl.List(pl.Utf8))
    texts = pl.Series(name, [sep.join(v) if v is not None else None for v in vals], dtype=pl.Utf8)
    out = texts.str.split(sep)
    empty = pl.Series([v is not None and not v for v in vals], dtype=pl.Boolean)
    return out.set(empty, []) if empty.any() else out
