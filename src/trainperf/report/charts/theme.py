"""The report's chart theme: fonts, a colour-blind-safe palette, benchmark names and shared axes.

Every chart module builds its axes through the helpers here, so that scales are honest in one place:
node counts on a log-2 axis with a tick at every node count of the data and a padded domain (no point
on the frame, none clipped), time axes whose tick step matches the span (no repeated labels), and
tick labels that keep a gap between them (``labelSeparation``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import NamedTuple

import altair as alt
import polars as pl

from trainperf.benchmarks import BENCHMARK_NAMES, benchmark_name

__all__ = [
    "BENCHMARK_NAMES",
    "FONT",
    "PALETTE",
    "THEME",
    "benchmark_name",
    "log_x",
    "stable_floats",
    "log_y",
    "node_axis",
    "node_axis_width",
    "theme",
    "time_axis",
]

THEME = "trainperf"
#: Latin font of the English figures (DejaVu Sans ships with every Debian; the others are fallbacks).
FONT = "DejaVu Sans, Liberation Sans, Arial, sans-serif"

#: Category colours: the Okabe-Ito palette (M. Okabe and K. Ito, "Color Universal Design", 2002;
#: B. Wong, "Points of view: Color blindness", Nature Methods 8, 441 (2011)), designed to stay apart
#: for protan, deutan and tritan readers. Yellow (#F0E442) is left out: too light for lines on white.
PALETTE: list[str] = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000"]
#: Colour of reference marks (targets, rules): vermillion, distinct from every series colour in use.
RULE_COLOR = "#D55E00"
#: Colours of the MLPerf phase kinds (init grey, train bluish green, eval orange).
KIND_COLORS = {"init": "#999999", "train": "#009E73", "eval": "#E69F00"}


def theme() -> dict:
    """The Vega-Lite config of the ``trainperf`` theme (registered by :func:`trainperf.report.charts.enable`)."""
    return {
        "config": {
            "font": FONT,
            "view": {"continuousWidth": 560, "continuousHeight": 320, "stroke": None},
            # 13 px text: a figure up to 945 px wide, scaled to the book's 800 px text column,
            # still shows it at 11 px or more (tests/test_publication.py measures every figure)
            "title": {"fontSize": 15, "anchor": "start", "fontWeight": 600, "subtitleFontSize": 13},
            "axis": {
                "labelFontSize": 13,
                "titleFontSize": 13,
                "gridColor": "#e6e6e6",
                "labelLimit": 420,
                # labels never touch: Vega hides the ones closer than this (pixels)
                "labelSeparation": 8,
                "labelOverlap": "greedy",
            },
            "legend": {
                "labelFontSize": 13,
                "titleFontSize": 13,
                "orient": "bottom",
                "direction": "vertical",
                "labelLimit": 520,
                # Vega cuts a legend title at 180 px ("system and MLPerf ro…" at 13 px bold)
                "titleLimit": 520,
                # swatches in the colour of the marks (Vega draws them at 0.7 opacity by default)
                "symbolOpacity": 1,
            },
            "header": {"labelFontSize": 13, "titleFontSize": 13},
            "range": {"category": PALETTE},
            "background": "white",
        }
    }


# registered (not enabled) at import, so that save_chart can always export with the report's theme
alt.theme.register(THEME, enable=False)(theme)


def _nice_nodes(values: Iterable[float]) -> list[int]:
    return sorted({int(v) for v in values if v is not None and v > 0})


def node_axis(
    nodes: Iterable[float], *, field: str = "n_nodes", title: str = "nodes (8 GPUs each)"
) -> alt.X:
    """A log-2 x axis for node counts with one tick per node count of the data.

    The domain is padded by a quarter octave on each side, so the first and last points sit inside
    the frame (never on it, never clipped), and labels are the node counts themselves.

    Args:
        nodes: the node counts the chart shows (e.g. ``frame["n_nodes"]``).
        field: the frame column.
        title: axis title.
    """
    vals = _nice_nodes(nodes) or [1]
    lo, hi = min(vals) / 2**_NODE_PAD, max(vals) * 2**_NODE_PAD
    return alt.X(
        f"{field}:Q",
        title=title,
        scale=alt.Scale(type="log", base=2, domain=[lo, hi], nice=False),
        axis=alt.Axis(values=vals, format="d", grid=True, labelOverlap="greedy", labelSeparation=4),
    )


_NODE_PAD = 0.3  # octaves of padding on each side of a node axis


def node_axis_width(nodes: Iterable[float], minimum: int = 320, min_gap_px: float = 26) -> int:
    """Width (px) at which every node-count label of :func:`node_axis` fits, at least ``minimum``.

    Adjacent ticks must be ``min_gap_px`` apart (room for two 3-digit labels and their gap), so
    96 next to 128 widens the chart instead of losing a label.
    """
    vals = _nice_nodes(nodes)
    if len(vals) < 2:
        return minimum
    span = math.log2(max(vals) / min(vals)) + 2 * _NODE_PAD
    gap = min(math.log2(b / a) for a, b in zip(vals, vals[1:], strict=False))
    return max(minimum, math.ceil(min_gap_px * span / gap))


class _TimeStep(NamedTuple):
    """A candidate tick step of a time axis."""

    interval: str  # Vega-Lite's time unit: second, minute, hour, day, month, year
    step: int  # ticks every ``step`` intervals
    seconds: float  # the step's length
    fmt: str  # the d3 time format of its labels


# candidate tick steps of a time axis, finest first.
# Steps below a day get explicit tick values (Vega 6 does not accept Vega-Lite's "second", "minute"
# and "hour" interval names in tickCount); longer steps use tickCount with the interval.
_TIME_STEPS: list[_TimeStep] = [
    _TimeStep("second", 5, 5, "%H:%M:%S"),
    _TimeStep("second", 10, 10, "%H:%M:%S"),
    _TimeStep("second", 15, 15, "%H:%M:%S"),
    _TimeStep("second", 30, 30, "%H:%M:%S"),
    _TimeStep("minute", 1, 60, "%H:%M"),
    _TimeStep("minute", 2, 120, "%H:%M"),
    _TimeStep("minute", 5, 300, "%H:%M"),
    _TimeStep("minute", 10, 600, "%H:%M"),
    _TimeStep("minute", 15, 900, "%H:%M"),
    _TimeStep("minute", 30, 1800, "%H:%M"),
    _TimeStep("hour", 1, 3600, "%H:%M"),
    _TimeStep("hour", 3, 3 * 3600, "%H:%M"),
    _TimeStep("hour", 6, 6 * 3600, "%d %H:%M"),
    _TimeStep("day", 1, 86400, "%b %d"),
    _TimeStep("week", 1, 7 * 86400, "%b %d"),
    # month and year steps: Vega's own multi-format labels (month names in the locale, the year at
    # January), which never repeat
    _TimeStep("month", 1, 30 * 86400, ""),
    _TimeStep("month", 3, 91 * 86400, ""),
    _TimeStep("year", 1, 365 * 86400, "%Y"),
]


def time_step(span_s: float, max_ticks: int = 9) -> tuple[str, int, str]:
    """The finest tick step (interval, step, d3 time format) giving at most ``max_ticks`` ticks over ``span_s``.

    Each step's label format shows the unit that changes between ticks (seconds for sub-minute
    steps), so two ticks never carry the same label.
    """
    for interval, step, seconds, fmt in _TIME_STEPS:
        if span_s / seconds <= max_ticks - 1:
            return interval, step, fmt
    interval, step, _, fmt = _TIME_STEPS[-1]
    return interval, max(1, math.ceil(span_s / (365 * 86400) / (max_ticks - 1))), fmt


def time_axis(
    timestamps: Sequence[datetime] | Iterable[datetime],
    *,
    field: str = "timestamp",
    title: str = "time (UTC)",
    max_ticks: int = 9,
) -> alt.X:
    """A UTC time x axis whose tick step suits the span of ``timestamps`` (see :func:`time_step`).

    Below a day the ticks are explicit values at whole multiples of the step (UTC), labelled with
    the finest unit that changes, so two ticks never show the same label. The format carries no
    ``formatType``: on a ``utc`` scale Vega-Lite formats in UTC by itself (with ``formatType="utc"``
    Vega-Lite 6 in vl-convert 1.9 prints 19:10 UTC as "07:10").
    """
    ts = [t for t in timestamps if t is not None]
    span = (max(ts) - min(ts)).total_seconds() if ts else 3600.0
    interval, step, fmt = time_step(span, max_ticks)
    scale = alt.Scale(type="utc")
    if ts and interval in ("second", "minute", "hour"):
        seconds = step * {"second": 1, "minute": 60, "hour": 3600}[interval]
        lo, hi = _epoch(min(ts)), _epoch(max(ts))
        first = math.ceil(lo / seconds) * seconds
        values = [int(v * 1000) for v in _frange(first, hi, seconds)]
        axis = alt.Axis(format=fmt, values=values)
    elif fmt:
        axis = alt.Axis(format=fmt, tickCount={"interval": interval, "step": step})
    else:
        axis = alt.Axis(tickCount={"interval": interval, "step": step})
    return alt.X(f"{field}:T", title=title, scale=scale, axis=axis)


def _epoch(t: datetime) -> float:
    # a naive datetime is UTC (polars Datetime without a zone), never the machine's local time
    return (t if t.tzinfo else t.replace(tzinfo=UTC)).timestamp()


def _frange(start: float, stop: float, step: float) -> list[float]:
    out, v = [], start
    while v <= stop + 1e-9:
        out.append(v)
        v += step
    return out


def log_ticks(lo: float, hi: float, max_ticks: int = 8) -> list[float]:
    """Tick values for a log axis over [lo, hi]: 1-2-5 (or 1-2-3-5, or powers of ten) x 10^k."""
    if not (lo > 0 and hi > lo):
        return []
    for mantissas in ((1, 2, 3, 4, 5, 6, 8), (1, 2, 3, 5), (1, 2, 5), (1, 3), (1,)):
        vals = [
            m * 10.0**k
            for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
            for m in mantissas
            if lo <= m * 10.0**k <= hi
        ]
        if len(vals) <= max_ticks:
            return vals
    return vals


def log_y(
    field: str, values: Iterable[float], title: str, *, pad: float = 1.25, max_ticks: int = 8
) -> alt.Y:
    """A log y axis over the data's range widened by ``pad`` each way, ticks from :func:`log_ticks`."""
    return alt.Y(field, title=title, **_log_encoding(values, pad, max_ticks))


def log_x(
    field: str, values: Iterable[float], title: str, *, pad: float = 1.25, max_ticks: int = 8
) -> alt.X:
    """A log x axis over the data's range widened by ``pad`` each way (see :func:`log_y`)."""
    return alt.X(field, title=title, **_log_encoding(values, pad, max_ticks))


def narrow_log_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Ticks for a log axis too narrow for :func:`log_ticks` to give three: ``n`` values evenly
    spaced in log space, rounded to two significant digits (``[16, 20, 25, 31, 39]`` over 16-39).

    >>> narrow_log_ticks(16.0, 39.0)
    [16.0, 20.0, 25.0, 31.0, 39.0]
    """
    out: list[float] = []
    for i in range(n):
        v = lo * (hi / lo) ** (i / (n - 1))
        r = float(f"{v:.2g}")
        if lo <= r <= hi and r not in out:
            out.append(r)
    return out


def _log_encoding(values: Iterable[float], pad: float, max_ticks: int) -> dict:
    vals = [v for v in values if v is not None and v > 0]
    lo, hi = (min(vals) / pad, max(vals) * pad) if vals else (1.0, 10.0)
    ticks = log_ticks(lo, hi, max_ticks)
    if len(ticks) < 3:  # a narrow range (e.g. three runs within 10 %): one 1-2-5 tick says nothing
        ticks = narrow_log_ticks(lo, hi)
    return {
        "scale": alt.Scale(type="log", domain=[lo, hi], nice=False),
        "axis": alt.Axis(values=ticks, format=",~g"),
    }


def stable_floats(df: pl.DataFrame, digits: int = 10) -> pl.DataFrame:
    """``df`` with every Float column rounded to ``digits`` significant digits.

    Aggregations that polars runs in parallel (group-by sums and means) add in a varying order, so
    the last bits of a mean can differ between two runs on the same data; a chart embedding them
    would get another content key and be exported again although nothing a reader sees changed.
    Ten significant digits are far below what a figure (or a tooltip) shows.
    """
    floats = [c for c, t in df.schema.items() if t.is_float()]
    return df.with_columns(pl.col(floats).round_sig_figs(digits)) if floats else df
