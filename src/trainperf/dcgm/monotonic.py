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
"""

from __future__ import annotations

import polars as pl

from trainperf.dcgm.fields import FIELDS
from trainperf.quality import QualityLog

__all__ = ["LIFETIME_FIELDS", "note_counter_dips"]

#: Counters kept across driver reloads and reboots (the InfoROM's aggregate ECC counts,
#: ``dcgm_fields.h``: ``*_AGG_TOTAL``): they never reset, so every step down is a dip.
LIFETIME_FIELDS: frozenset[int] = frozenset({312, 313})


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
    d = samples.join(sids, on="sid", how="inner").sort(["sid", "timestamp"])
    if d.height < 2:
        return
    prev = pl.col("value").shift(1).over("sid")
    lifetime = pl.col("field_id").is_in(list(LIFETIME_FIELDS))
    dip = (pl.col("value") < prev) & (lifetime | (pl.col("value") >= prev / 2))
    bad = d.with_columns(_prev=prev).filter(dip.fill_null(False))
    if bad.height == 0:
        return
    first = bad.sort("line", nulls_last=True).row(0, named=True)
    fields = ", ".join(sorted(set(bad["field"].to_list())))
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
