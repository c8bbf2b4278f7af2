"""The checks of a whole file's events: times out of order (``time_out_of_order``) and lines
that repeat an earlier one (``duplicate_line``); used by :func:`trainperf.mlperf.parse.read_log`."""

from __future__ import annotations

import operator
import statistics
from functools import cache

import polars as pl

from trainperf.mlperf.checks import (
    FileChecks,
)
from trainperf.mlperf.timeline import offline_eval_tail
from trainperf.tables import package_table

__all__: list[str] = []


def _order_check_frame(events: pl.DataFrame, checks: FileChecks, lim: dict) -> pl.DataFrame:
    """:func:`_order_check` on the events' times; the common case (no large step) stays native."""
    k = int(lim["order_window"])
    ts = events["time_ms"].drop_nulls()
    if ts.len() < 2 * k + 1:
        return events
    if ts.diff().abs().max() <= lim["order_tolerance_ms"] / k:
        return events
    times = events["time_ms"].to_list()
    keys, values = events["key"].to_list(), events["value"].to_list()
    _order_check(times, events["line"].to_list(), checks, lim, keys, values)
    return events.with_columns(pl.Series("time_ms", times, dtype=pl.Float64))


@cache
def _rank_keys() -> frozenset[str]:

    return frozenset(r["key"] for r in package_table("mlperf_rank_events"))


def _repeated_simple(simple: pl.DataFrame) -> pl.Series:
    """Lines (Int64) of ``simple`` that repeat an earlier one: same template and time digits.

    Equal texts have equal times, so only lines that share their time with another are compared
    (a hash table of the times alone first, not of every (template, time) pair: memory). Run before
    the events are built, while less is held.
    """
    same_time = simple.filter(pl.col("d").is_duplicated())
    return same_time.filter(~pl.struct("tid", "d").is_first_distinct())["line"]


def _repeat_check_frame(rep: pl.Series, repeated: list[int], events: pl.DataFrame,
                        checks: FileChecks) -> None:  # fmt: skip
    """``duplicate_line``: an MLLOG line that repeats an earlier line of the file exactly (same
    prefix, time_ms and text), except keys every rank logs at one millisecond
    (``mlperf_rank_events.csv``). The loader counts rank duplicates once, so nothing is dropped;
    the row says the file was copied into itself (a log appended twice, ``tee`` of one stream).

    ``rep``: the repeated mllog-written lines (:func:`_repeated_simple`); ``repeated``: the other
    lines that repeat one (compared as text)."""
    if not repeated and not rep.len():
        return
    lines = rep.append(pl.Series("line", repeated, pl.Int64))
    firsts = (
        events.select("line", "key")
        .filter(pl.col("line").is_in(lines.implode()))
        .filter(pl.col("line").is_first_distinct())  # the line's first event
    )
    hit = firsts.filter(~pl.col("key").is_in(list(_rank_keys())))["line"].sort().to_list()
    _report_repeats(hit, checks)


def _report_repeats(hit: list[int], checks: FileChecks) -> None:
    """The ``duplicate_line`` check of the repeated lines ``hit`` (line order), if any."""
    if not hit:
        return
    n = len(hit)
    checks.add(
        "duplicate_line",
        "flagged",
        f"{n} MLLOG {'line repeats' if n == 1 else 'lines repeat'} an earlier line exactly (same "
        "time_ms and text: the log was written or copied twice); each event is counted once",
        hit[0],
        n=0,
    )
    found = checks.found["duplicate_line"]
    found.lines.extend(hit[1:])
    found.n, found.counted = n, True


def _offline_exempt(times: list, keys: list, values: list, tol: float) -> list[int]:
    """Rows the order check leaves alone: each run_stop that follows an offline evaluation
    (:func:`trainperf.mlperf.timeline.offline_eval_tail`) with a time not later than its last
    training event's plus ``tol``, and the evaluation events between them (timed later, and in
    any order: the rules let checkpoints be evaluated "in order, out of order")."""
    out: list[int] = []
    for r in [i for i, k in enumerate(keys) if k == "run_stop"]:
        if times[r] is None:
            continue
        end = offline_eval_tail(keys, values, r)
        if end is not None and times[end] is not None and times[r] <= times[end] + tol:
            out.extend(range(end + 1, r + 1))
    return out


def _order_check(times: list, lines: list[int], checks: FileChecks, lim: dict,
                 keys: list | None = None, values: list | None = None) -> None:  # fmt: skip
    """Exclude (set to None) times far from the median of their file-order neighbours.

    MLLOG lines are written in time order, so in a file the median of an event's neighbourhood is
    its own time up to rank skew: for ``n >= 2k + 1`` valid times, an interior event is compared
    with the median of the ``2h + 1`` times centred on it (``h = min(k, distance to an end)``).
    The first and last have neighbours on one side only, whose median lags a time-ordered end by
    half the window (hours in a log of few, long epochs): the last is damage when it is more than
    the tolerance below the median of its ``k`` nearest or above the largest of them, the first
    likewise mirrored. A time further than ``order_tolerance_ms`` (1 h) is damage (a ``2**32`` ms
    wrap is 49.7 days). Files with fewer times are not checked. A run_stop logged after an offline
    evaluation of checkpoints, and that evaluation's events, are left out (:func:`_offline_exempt`).
    """
    k = int(lim["order_window"])
    tol = lim["order_tolerance_ms"]
    work = times
    if None in times:
        idx = [i for i, t in enumerate(times) if t is not None]
        ts = [times[i] for i in idx]
    else:  # the common case: every time valid (no list built per event)
        idx, ts = range(len(times)), times
    n = len(idx)
    if n < 2 * k + 1:
        return
    # |t_i - median| <= k * (largest step) within a window: no step above tol / k, nothing to find.
    if max(map(abs, map(operator.sub, ts[1:], ts[:-1]))) <= tol / k:
        return
    exempt = []
    if keys is not None and "run_stop" in keys:
        exempt = _offline_exempt(times, keys, values, tol)
    if exempt:
        work = list(times)
        for r in exempt:
            work[r] = None
        idx = [i for i, t in enumerate(work) if t is not None]
        n = len(idx)
        if n < 2 * k + 1:
            return
    ts = [work[i] for i in idx]  # times is changed below
    med = pl.Series(ts, dtype=pl.Float64).rolling_median(2 * k + 1, center=True).to_list()
    med[0] = statistics.median(ts[1 : k + 1])
    med[-1] = statistics.median(ts[-k - 1 : -1])
    for j in list(range(1, k)) + list(range(n - k, n - 1)):
        h = min(j, n - 1 - j)
        med[j] = statistics.median(ts[j - h : j + h + 1])
    lo_first, hi_last = min(ts[1 : k + 1]), max(ts[-k - 1 : -1])
    for j, (t, m) in enumerate(zip(ts, med, strict=True)):
        if j == 0:
            bad = t > m + tol or t < lo_first - tol
        elif j == n - 1:
            bad = t < m - tol or t > hi_last + tol
        else:
            bad = abs(t - m) > tol
        if bad:
            row = idx[j]
            times[row] = None
            checks.add(
                "time_out_of_order",
                "excluded",
                f"time_ms {t:.0f} is {abs(t - m) / 3.6e6:,.1f} h from its neighbours in the file "
                f"(median {m:.0f}); time excluded",
                lines[row],
            )
