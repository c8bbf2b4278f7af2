"""Vectorised sacct value parsers: polars expressions over whole columns of sacct text.

The per-value parsers of :mod:`trainperf.slurm.fields` cost one Python call per value; for a dump of
100k records that was most of the reader's time (issue 16: 34 % in ``strptime``, 36 % in per-row
Python). Here every value kind is parsed by polars, or, where a column has few distinct values
(states, exit codes, time limits, host lists, TRES strings), by the per-value parser once per
distinct value (:func:`map_unique`). Each parser returns the values and a Boolean ``bad`` column
(true where a non-empty value does not parse), so the reader can name the first bad line or leave the
bad lines out.

The grammars are those of :mod:`trainperf.slurm.fields` (and ``tests/test_slurm.py`` checks that both
give the same values on the bundled and real fixtures), with one deliberate difference: digits are
ASCII ``0-9`` only (Python's ``\\d`` and ``int()`` also take other Unicode digits, which sacct never
prints), and numbers too large for 64-bit integers are bad values instead of an overflow.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import polars as pl

from trainperf.slurm.fields import _INFINITE, _NO_VAL

__all__ = [
    "WHITESPACE",
    "duration_seconds",
    "epoch_or_iso_times",
    "int_column",
    "job_id_parts",
    "map_unique",
    "rounded_seconds",
    "strip",
]

#: The characters Python's ``str.strip()`` removes (``str.isspace``), so that ``strip`` here and the
#: per-value parsers agree (polars' own default is Unicode White_Space, which lacks ``\x1c``-``\x1f``).
WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_MAX_EXACT = 2.0**53  # floats hold every integer below this exactly
_MAX_EPOCH = 2**32  # Slurm times are 32-bit epochs (NO_VAL / INFINITE are the top two values)


def strip(e: pl.Expr) -> pl.Expr:
    """``str.strip()`` of every value."""
    return e.str.strip_chars(WHITESPACE)


def int_column(e: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """``(Int64 value, bad)``: ``""`` → null; ``[+-]digits`` → int; anything else (or > 2**63) bad."""
    t = strip(e)
    ok = t.str.contains(r"^[+-]?[0-9]+$")
    v = pl.when(ok).then(t.str.strip_prefix("+").cast(pl.Int64, strict=False))
    return v, (t != "") & v.is_null()


_DURATION = (
    r"^(?:(?P<d>[0-9]+)-)?(?:(?P<h>[0-9]+):)??(?P<m>[0-9]+):(?P<s>[0-9]+(?:\.[0-9]+)?)$"
    r"|^(?P<donly>[0-9]+)-(?P<honly>[0-9]+)$"
)


def duration_seconds(e: pl.Expr, *, words_null: Sequence[str] = ()) -> tuple[pl.Expr, pl.Expr]:
    """``(Float64 seconds, bad)`` of sacct durations, as :func:`~trainperf.slurm.parse_duration`.

    ``[D-]HH:MM:SS``, ``MM:SS[.mmm]`` and ``D-HH``; ``""`` → null. ``words_null``: words (compared
    upper-case) that mean null rather than a bad value (``INVALID`` for Elapsed). Bad: no match,
    minutes ≥ 60 with hours present, seconds ≥ 60, or a total of 2**53 s or more.
    """
    t = strip(e)
    g = t.str.extract_groups(_DURATION)
    f = {k: g.struct.field(k).cast(pl.Float64) for k in ("d", "h", "m", "s", "donly", "honly")}
    hms = f["d"].fill_null(0.0) * 86400.0 + f["h"].fill_null(0.0) * 3600.0 + f["m"] * 60.0 + f["s"]
    total = pl.when(f["donly"].is_not_null()).then(f["donly"] * 86400.0 + f["honly"] * 3600.0)
    total = total.otherwise(hms)
    out_of_range = (
        ((f["m"] >= 60) & f["h"].is_not_null()) | (f["s"] >= 60) | (total >= _MAX_EXACT)
    ).fill_null(False)
    word = t.str.to_uppercase().is_in(list(words_null)) if words_null else pl.lit(False)
    matched = total.is_not_null() & ~out_of_range
    value = pl.when(matched & ~word).then(total)
    return value, (t != "") & ~word & ~matched


def rounded_seconds(seconds: pl.Expr) -> pl.Expr:
    """``int(round(seconds))`` (half to even, as Python's ``round``) as Int64."""
    return seconds.round(0, mode="half_to_even").cast(pl.Int64)


_JOBID = (
    r"^(?P<id>[0-9]+)"
    r"(?:_(?P<task>[0-9]+|\[[^\]]*\]))?"
    r"(?:\+(?P<het>[0-9]+))?"
    r"(?:\.(?P<step>[A-Za-z]+|[0-9]+)(?:\+(?P<stephet>[0-9]+))?)?$"
)


def job_id_parts(e: pl.Expr) -> tuple[dict[str, pl.Expr], pl.Expr]:
    """The parts of :func:`~trainperf.slurm.parse_job_id` as expressions, and ``bad``.

    Returns ``({"id", "array_task_id", "array_pending", "het_offset", "step", "parent", "kind"},
    bad)``; bad when the text is not a JobID or a number does not fit in 64 bits.
    """
    t = strip(e)
    g = t.str.extract_groups(_JOBID)
    ident = g.struct.field("id").cast(pl.Int64, strict=False)
    task = g.struct.field("task")
    task_is_num = task.str.contains(r"^[0-9]+$")
    task_id = pl.when(task_is_num).then(task.cast(pl.Int64, strict=False))
    pending = pl.when(task.is_not_null() & ~task_is_num).then(task)
    het = g.struct.field("het").cast(pl.Int64, strict=False)
    step = g.struct.field("step")
    stephet = g.struct.field("stephet")
    step = pl.when(stephet.is_not_null()).then(step + "+" + stephet).otherwise(step)
    kind = (
        pl.when(step.is_not_null())
        .then(pl.lit("step"))
        .when(pending.is_not_null())
        .then(pl.lit("array_pending"))
        .when(task_id.is_not_null())
        .then(pl.lit("array_task"))
        .when(het.is_not_null())
        .then(pl.lit("het_component"))
        .otherwise(pl.lit("job"))
    )
    bad = (
        ident.is_null()
        | (task_is_num.fill_null(False) & task_id.is_null())
        | (g.struct.field("het").is_not_null() & het.is_null())
    )
    parts = {
        "id": ident,
        "array_task_id": task_id,
        "array_pending": pending,
        "het_offset": het,
        "step": step,
        "parent": t.str.splitn(".", 2).struct.field("field_0"),
        "kind": kind,
    }
    return parts, bad


_NULL_TIMES = ["", "Unknown", "None", "N/A"]
_ISO = {
    "%Y-%m-%dT%H:%M:%S": r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]$",
    "%Y-%m-%d %H:%M:%S": r"^[0-9]{4}-[0-9]{2}-[0-9]{2} (?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]$",
    "%Y-%m-%dT%H:%M": r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T(?:[01][0-9]|2[0-3]):[0-5][0-9]$",
}


def epoch_or_iso_times(e: pl.Expr) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """``(UTC datetimes from epoch seconds, naive datetimes from ISO text, bad)``.

    ``Unknown``/``None``/``N/A``/``""`` and the epochs 0, NO_VAL and INFINITE are null. ISO text
    (``YYYY-MM-DDTHH:MM:SS``, ``YYYY-MM-DD HH:MM:SS``, ``YYYY-MM-DDTHH:MM``) is local time of the host
    that ran sacct; the caller localises it. Bad: anything else, an impossible date, an epoch
    below 0 or from 2**32 on.
    """
    t = strip(e)
    is_epoch = t.str.contains(r"^-?[0-9]+$")
    epoch = pl.when(is_epoch).then(t.cast(pl.Int64, strict=False))
    unset = epoch.is_in([0, _NO_VAL, _INFINITE])
    epoch_ok = epoch.is_not_null() & (epoch >= 0) & (epoch < _MAX_EPOCH)
    utc = (
        pl.when(epoch_ok & ~unset)
        .then(epoch * 1_000_000)
        .cast(pl.Datetime("us"))
        .dt.replace_time_zone("UTC")
    )
    naive = pl.coalesce(
        [
            pl.when(t.str.contains(pat)).then(t.str.strptime(pl.Datetime("us"), fmt, strict=False))
            for fmt, pat in _ISO.items()
        ]
    )
    bad = ~t.is_in(_NULL_TIMES) & pl.when(is_epoch).then(~epoch_ok).otherwise(naive.is_null())
    return utc, naive, bad


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
    """
    uniq = values.unique(maintain_order=True)
    rows, bad = [], []
    for v in uniq.to_list():
        try:
            out = fn(v)
        except (ValueError, RecursionError, OverflowError):
            out, is_bad = (None,) * len(schema), True
        else:
            is_bad = False
        rows.append(out)
        bad.append(is_bad)
    table = pl.DataFrame(rows, schema=schema, orient="row").with_columns(
        _key=uniq, _bad=pl.Series(bad, dtype=pl.Boolean)
    )
    joined = (
        values.alias("_key")
        .to_frame()
        .join(table, on="_key", how="left", maintain_order="left", nulls_equal=True)
    )
    return joined.select(list(schema)), joined.get_column("_bad").fill_null(False)
