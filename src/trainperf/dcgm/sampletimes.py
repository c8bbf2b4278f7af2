"""The time check of the DCGM readers: sample times outside 2000..2100 (checks ``timestamp_unit``,
``timestamp_implausible``; step 1b of :func:`trainperf.dcgm.checks.finish`)."""

from __future__ import annotations

import datetime as _dt

import polars as pl

from trainperf.dcgm._checkutil import _summary
from trainperf.quality import QualityLog

__all__ = ["PLAUSIBLE_US"]


PLAUSIBLE_US = (946_684_800_000_000, 4_102_444_800_000_000)
"""Sample times a DCGM reading can have: [2000-01-01, 2100-01-01) UTC in epoch microseconds."""

_TIME_UNITS = ((1000, "epoch seconds written where milliseconds are expected"),
               (1 / 1000, "epoch milliseconds written where seconds are expected"),
               (1 / 1_000_000, "epoch microseconds written where seconds are expected"))  # fmt: skip


def _check_times(series: pl.DataFrame, samples: pl.DataFrame, src: str, log: QualityLog):
    """Sample times outside :data:`PLAUSIBLE_US` (checks ``timestamp_unit``, ``timestamp_implausible``).

    A per-sample timestamp in seconds where the exposition format wants milliseconds reads as
    January 1970; Prometheus API values in milliseconds where the API gives seconds read as the
    year 57971. The unit is inferred from the magnitude: a factor of 1000 (or 10^6) that brings
    the time into [2000, 2100) is applied, where the file's other (plausible) times, if any, lie
    within a day of the corrected ones (checked against the other source of time in the file:
    scrape markers, other series). Anything else is kept as read and flagged, naming the line.
    """
    lo, hi = PLAUSIBLE_US
    t = pl.col("timestamp")
    ok = samples.select(((t >= lo) & (t < hi)).fill_null(True).alias("o"))["o"]
    if ok.all():
        return samples
    good = samples.filter(ok)
    g0, g1 = (good["timestamp"].min(), good["timestamp"].max()) if good.height else (None, None)
    day = 86_400_000_000
    bad = samples.filter(~ok)
    fixed = None
    for f, why in _TIME_UNITS:
        c = (bad["timestamp"].cast(pl.Float64) * f).round(0)
        if ((c >= lo) & (c < hi)).all():
            if g0 is None or (c.min() >= g0 - day and c.max() <= g1 + day):
                fixed = (c.cast(pl.Int64), why)
            break
    first = bad.row(0, named=True)
    at = f" at line {first['line']}" if first["line"] is not None else ""
    was = _dt_text(first["timestamp"])
    if fixed is not None:
        c, why = fixed
        log.add(src, "timestamp_unit", "corrected",
                f"{bad.height} sample times read as {was}{at}: {why}; unit inferred from the "
                f"magnitude, corrected to {_dt_text(int(c[0]))}", **_summary(bad, series))  # fmt: skip
        idx = samples.with_row_index("_i").filter(~ok)["_i"]
        return samples.with_columns(samples["timestamp"].scatter(idx, c).alias("timestamp"))
    other = (f"; the file's other sample times lie in {_dt_text(g0)} .. {_dt_text(g1)}"
             if g0 is not None else "")  # fmt: skip
    log.add(src, "timestamp_implausible", "flagged",
            f"{bad.height} sample times outside 2000..2100, e.g. {was}{at}, and no unit (s, ms, "
            f"us) brings them next to the file's other times{other}: kept as read, but they will "
            "match no MLPerf run or Slurm job; give per-sample timestamps in epoch milliseconds "
            "(exposition) or seconds (Prometheus API)", **_summary(bad, series))  # fmt: skip
    return samples


def _dt_text(us: int | None) -> str:

    if us is None:
        return "?"
    try:
        return (_dt.datetime(1970, 1, 1, tzinfo=_dt.UTC) + _dt.timedelta(microseconds=us)
                ).strftime("%Y-%m-%dT%H:%M:%SZ")  # fmt: skip
    except OverflowError:
        return f"the year {us / 3.15576e13 + 1970:.0f}"
