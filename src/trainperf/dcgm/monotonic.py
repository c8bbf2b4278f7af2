"""The reader check of cumulative counters: a counter that steps down without resetting.

A DCGM counter (``kind`` ``counter`` in :data:`trainperf.dcgm.FIELDS`: energy in mJ, ECC and
row-remap counts, violation times) only grows, except when it resets to zero (driver reload,
reboot). A step down to about the old level (5, 5, 4, 5 ECC errors; a 1 mJ dip of
``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION``) is neither growth nor a reset: the series is
non-monotonic (a stale replica, two exporters interleaved, a corrupted sample). The rule of what is
a reset and what is a dip is :func:`trainperf.dcgm.derived.counter_increase`'s: a step down to less
than half the previous value is a reset; any smaller step down is a dip; the lifetime
``*_AGG_TOTAL`` ECC counts never reset. :func:`note_counter_dips` flags the dips (check
``counter_dip``, a warning naming the file and the first line); the increases of
:func:`~trainperf.dcgm.derived.counter_increase` count neither the dip nor the climb back.

A step down to under half (a reset's shape) whose *next* sample is back at or above the value before
the step is a glitch, not a reset (one corrupted or zero sample: ``100000000, 100080000, 0,
100240000`` mJ): a counter that had really restarted near zero cannot be back at its old level one
scrape later. The glitch sample is taken as the value before it (it adds nothing, the climb after it
counts normally) and flagged ``counter_glitch``. A real reset (a restart near zero, climbing from
there) is counted as Prometheus ``increase()`` does (from zero) and flagged ``counter_reset``. One rule
(:func:`glitch_expr`, :func:`reset_expr`) serves :func:`~trainperf.dcgm.derived.counter_increase`,
this check and :func:`trainperf.telemetry.energy.cumulative_energy`.
"""

from __future__ import annotations

import polars as pl

from trainperf.dcgm._checkutil import _period
from trainperf.dcgm.fields import FIELDS
from trainperf.quality import QualityLog

__all__ = [
    "LIFETIME_FIELDS",
    "glitch_expr",
    "note_clock_steps",
    "note_counter_dips",
    "reset_expr",
]

#: A gap between consecutive samples of one series (file order) longer than this many times the
#: series' median sample interval, and than :data:`JUMP_MIN_S`, is flagged ``clock_step`` (product
#: choice: a scrape interval is steady; such a gap is the clock stepped forward or the exporter down)
JUMP_FACTOR = 100.0
JUMP_MIN_S = 600.0

#: Counters kept across driver reloads and reboots (the InfoROM's aggregate ECC counts,
#: ``dcgm_fields.h``: ``*_AGG_TOTAL``): they never reset, so every step down is a dip.
LIFETIME_FIELDS: frozenset[int] = frozenset({312, 313})


def reset_expr(value: pl.Expr, prev: pl.Expr) -> pl.Expr:
    """True where a sample is a counter reset's shape: a step down to less than half the previous
    value (null where there is no previous sample)."""
    return value < prev / 2


def glitch_expr(value: pl.Expr, prev: pl.Expr, nxt: pl.Expr) -> pl.Expr:
    """True where a sample steps down like a reset but the next sample is back at or above the value
    before it (module docstring): a one-sample glitch, never a reset. False at a series' ends."""
    return (reset_expr(value, prev) & (nxt >= prev)).fill_null(False)


def note_counter_dips(
    series: pl.DataFrame, samples: pl.DataFrame, src: str, log: QualityLog
) -> None:
    """Flag counter series that step down without resetting (check ``counter_dip``, ``flagged``).

    Args:
        series: the reader's series table (``sid``, ``field_id``, ``field``).
        samples: ``sid``, ``timestamp`` (epoch us), ``value``, ``line``.
        src: the file, for the message.
        log: the reading's quality log (one row and a warning when a dip is found).
    """
    counters = [fid for fid, f in FIELDS.items() if f.kind == "counter"]
    sids = series.filter(pl.col("field_id").is_in(counters)).select("sid", "field_id", "field")
    if sids.height == 0:
        return
    # file order: where the clock stepped back the values are in the order they were read
    d = samples.filter(pl.col("sid").is_in(sids["sid"].implode()))
    if d.height < 2:
        return
    d, p = _file_order(d, ["sid", "line", "timestamp"])
    prev = _prev_in_series(pl.col("value"), p)
    nxt = _next_in_series(pl.col("value"), p)
    life_sids = sids.filter(pl.col("field_id").is_in(list(LIFETIME_FIELDS)))["sid"]
    # cheap exit first, one query: no sample below the one before it nor a reset's shape (with
    # negative values a step to under half need not be a step down): nothing below can fire
    down = (pl.col("value") < prev) | reset_expr(pl.col("value"), prev)
    if not d.select(down.any()).item():
        return
    d = d.join(sids, on="sid", how="inner", maintain_order="left")
    lifetime = pl.col("sid").is_in(life_sids.implode())
    glitch = ~lifetime & glitch_expr(pl.col("value"), prev, nxt)
    reset = ~lifetime & reset_expr(pl.col("value"), pl.col("_prev")).fill_null(False)
    dip = (pl.col("value") < pl.col("_prev")) & (
        lifetime | (pl.col("value") >= pl.col("_prev") / 2)
    )
    # one query: the glitch samples (as read: _v0, _p0) are taken as the value before them before
    # the reset/dip rules, which see the corrected value and its previous one
    d = (
        d.lazy()
        .with_columns(_prev=prev, _glitch=glitch)
        .with_columns(_v0=pl.col("value"), _p0=pl.col("_prev"))
        .with_columns(
            pl.when(pl.col("_glitch"))
            .then(pl.col("_prev"))
            .otherwise(pl.col("value"))
            .alias("value")
        )
        .with_columns(_prev=prev)
        .with_columns(_reset=reset, _dip=dip.fill_null(False))
        .collect()
    )
    _note_step(
        d.filter(pl.col("_glitch")).with_columns(value=pl.col("_v0"), _prev=pl.col("_p0")),
        src,
        log,
        "counter_glitch",
        "one-sample drop(s) of a cumulative counter to under half, back at or above the old "
        "level at the next sample: a glitch, not a reset; the sample is taken as the value "
        "before it (nothing counted for it)",
    )
    _note_step(
        d.filter(pl.col("_reset")),
        src,
        log,
        "counter_reset",
        "reset(s) of a cumulative counter (a step down to under half, climbing from there: "
        "a driver reload or reboot): counted from zero as Prometheus increase() does; the "
        "growth between the sample before and the restart is lost",
    )
    bad = d.filter(pl.col("_dip"))
    if bad.height == 0:
        return
    first = bad.row(_first_line_row(bad), named=True)
    fields = ", ".join(sorted(bad["field"].unique().to_list()))
    log.add(
        src,
        "counter_dip",
        "flagged",
        f"{bad.height} step(s) down of a cumulative counter that are not a reset to near zero "
        f"({fields}; e.g. {first['_prev']:g} then {first['value']:g}): a non-monotonic series, "
        "not counted as a reset (the increase resumes above the highest value seen)",
        n_series=bad["sid"].n_unique(),
        n_samples=bad.height,
        first_line=first["line"],
    )


def _note_step(bad: pl.DataFrame, src: str, log: QualityLog, check: str, what: str) -> None:
    """One ``flagged`` row of ``check`` for the samples of ``bad`` (``_prev``, ``value``, ``line``)."""
    if bad.height == 0:
        return
    first = bad.row(_first_line_row(bad), named=True)
    fields = ", ".join(sorted(bad["field"].unique().to_list()))
    log.add(
        src,
        check,
        "flagged",
        f"{bad.height} {what} ({fields}; e.g. {first['_prev']:g} then {first['value']:g})",
        n_series=bad["sid"].n_unique(),
        n_samples=bad.height,
        first_line=first["line"],
    )


def note_clock_steps(samples: pl.DataFrame, src: str, log: QualityLog) -> None:
    """Flag time that goes back, or jumps far forward, between consecutive samples of one series in
    file order (check ``clock_step``, ``flagged``; a warning naming the file and the first line).

    Back: any sample older than the one read before it in the same series (the clock was stepped
    back; or lines of two files interleaved). Forward: a gap more than :data:`JUMP_FACTOR` times the
    series' median interval and at least :data:`JUMP_MIN_S` (a clock stepped forward, or the exporter
    was down: either way the time across it is not the samples' time). Counter increases are taken in
    file order in a series whose time goes back (:func:`trainperf.dcgm.derived.counter_increase`).

    Args:
        samples: ``sid``, ``timestamp`` (epoch us), ``value``, ``line``.
        src: the file, for the message.
        log: the reading's quality log.
    """
    if samples.height < 2 or samples["line"].null_count() == samples.height:
        return
    d, p = _file_order(samples.select("sid", "timestamp", "line"), ["sid", "line"])
    d = d.with_columns(_step=_prev_in_series(pl.col("timestamp").cast(pl.Int64), p, diff=True))
    # only a step back, or one of at least JUMP_MIN_S, can be flagged: the medians are taken only
    # for the series that have such a step (none, in a healthy file)
    big = (pl.col("_step") < 0) | (pl.col("_step") >= JUMP_MIN_S * 1e6)
    cand = d.filter(big)
    if cand.height == 0:
        return
    back = cand.filter(pl.col("_step") < 0)
    jump_sids = cand.filter(pl.col("_step") > 0)["sid"].unique()
    jump = cand.clear()
    if jump_sids.len():
        med = (
            d.filter(pl.col("sid").is_in(jump_sids.implode()))
            .group_by("sid")
            .agg(pl.col("_step").filter(pl.col("_step") > 0).median().alias("_med"))
        )
        jump = cand.join(med, on="sid", how="left").filter(
            (pl.col("_step") > JUMP_FACTOR * pl.col("_med")) & (pl.col("_step") >= JUMP_MIN_S * 1e6)
        )
    for bad, what in (
        (back, "time goes back from the previous sample of the series (a clock stepped back)"),
        (jump, f"a gap over {JUMP_FACTOR:g}x the series' median interval and {JUMP_MIN_S:g} s "
         "(a clock stepped forward, or the exporter down)"),
    ):  # fmt: skip
        if bad.height == 0:
            continue
        first = bad.row(_first_line_row(bad), named=True)
        log.add(
            src,
            "clock_step",
            "flagged",
            f"{bad.height} sample(s) where {what}: e.g. {abs(first['_step']) / 1e6:.0f} s "
            f"{'back' if first['_step'] < 0 else 'forward'}; times across it are not the samples' "
            "times (counter increases are taken in file order)",
            n_series=bad["sid"].n_unique(),
            n_samples=bad.height,
            first_line=first["line"],
        )


def _file_order(d: pl.DataFrame, by: list[str]) -> tuple[pl.DataFrame, int | None]:
    """``(d, p)``: where ``line`` strictly increases without nulls (samples in input order, the
    common case) and the sids repeat with period ``p`` (:func:`trainperf.dcgm._checkutil._period`:
    an archive of scrapes of one layout), ``d`` as it is and ``p`` (a series' previous sample is
    ``p`` rows back: no sort); with lines in order otherwise, ``d`` sorted by ``sid`` alone, stably;
    else sorted by every column of ``by``. In the last two ``p`` is None."""
    if d.height < 2:
        return d, None
    line = pl.col("line")
    if d["line"].null_count() == 0 and d.select((line.diff().slice(1) > 0).all()).item():
        p = _period(d["sid"])
        return (d, p) if p is not None else (d.sort("sid", maintain_order=True), None)
    return d.sort(by, nulls_last=True), None


def _prev_in_series(x: pl.Expr, p: int | None, diff: bool = False) -> pl.Expr:
    """The previous sample's ``x`` in the same series (or ``x`` minus it, ``diff``), null at a
    series' first sample, in a frame of :func:`_file_order` (period ``p``: ``p`` rows back; else
    sorted by ``sid``: the row before where it is of the same series). The same as
    ``shift(1).over("sid")`` on the sorted frame, without the group-by."""
    if p is not None:
        return x - x.shift(p) if diff else x.shift(p)
    same = pl.col("sid") == pl.col("sid").shift(1)
    return pl.when(same).then(x.diff() if diff else x.shift(1))


def _next_in_series(x: pl.Expr, p: int | None) -> pl.Expr:
    """The next sample's ``x`` in the same series, null at its last (as :func:`_prev_in_series`)."""
    if p is not None:
        return x.shift(-p)
    return pl.when(pl.col("sid") == pl.col("sid").shift(-1)).then(x.shift(-1))


def _first_line_row(bad: pl.DataFrame) -> int:
    """The row of ``bad`` with the smallest ``line`` (the first if several; 0 where every line is
    null): what ``bad.sort("line", nulls_last=True).row(0)`` gives, without the sort."""
    i = bad["line"].arg_min()
    return 0 if i is None else int(i)
