"""Charts of the operations chapter (Slurm accounting): job shares, run times, GPU-hours over time.

Every title says "SYNTHETIC data" when ``synthetic=True``. Job names never reach these charts. Job
sizes have one colour each from the Okabe-Ito palette, so that the six sizes (and "all sizes" in
black) stay apart for colour-blind readers too; lines also differ in dash.
"""

from __future__ import annotations

import json

import altair as alt
import polars as pl

from trainperf.report.charts.theme import PALETTE

__all__ = [
    "slurm_gpu_hours_over_time",
    "slurm_runtime_distribution",
    "slurm_share_by_size",
    "slurm_share_by_state",
]

_SIZE_ORDER = ["1", "2", "3-4", "5-16", "17-32", ">32"]
# Okabe-Ito, one hue per size (black is "all sizes")
_SIZE_COLORS = ["#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7"]
_SIZE_DASHES = [[1, 0], [6, 3], [2, 2], [1, 0], [8, 3, 2, 3], [4, 2]]
_MEASURES = {"job_share": "share of jobs", "gpu_hours_share": "share of GPU-hours"}


def _slurm_title(title: str, synthetic: bool) -> str:
    return f"{title} (SYNTHETIC data)" if synthetic else title


def _share_bars(
    shares: pl.DataFrame, key: str, key_title: str, order: list[str] | None, title: str
) -> alt.LayerChart:
    d = (
        shares.with_columns(pl.col(key).cast(pl.String).alias("_key"))
        .unpivot(index=["_key", "n_jobs", "gpu_hours"], on=list(_MEASURES), variable_name="m")
        .with_columns(
            pl.col("m").replace_strict(_MEASURES).alias("measure_label"),
            pl.col("value").fill_null(0.0).alias("share"),
        )
    )
    sort = order if order is not None else d["_key"].unique(maintain_order=True).to_list()
    measures = list(_MEASURES.values())
    base = alt.Chart(d).encode(
        y=alt.Y("_key:N", title=key_title, sort=sort),
        yOffset=alt.YOffset("measure_label:N", sort=measures),
        x=alt.X(
            "share:Q",
            title="share",
            axis=alt.Axis(format="%", values=[i / 10 for i in range(11)]),
            scale=alt.Scale(domain=[0, 1]),
        ),
    )
    bars = base.mark_bar().encode(
        color=alt.Color(
            "measure_label:N",
            title=None,
            sort=measures,
            scale=alt.Scale(domain=measures, range=[PALETTE[1], PALETTE[0]]),
        ),
        tooltip=[
            alt.Tooltip("_key:N", title=key_title),
            "measure_label:N",
            alt.Tooltip("share:Q", format=".2%"),
            alt.Tooltip("n_jobs:Q", title="jobs", format=","),
            alt.Tooltip("gpu_hours:Q", title="GPU-hours", format=",.0f"),
        ],
    )
    text = base.mark_text(align="left", dx=3, fontSize=11).encode(
        text=alt.Text("share:Q", format=".1%")
    )
    return alt.layer(bars, text).properties(width=520, height=alt.Step(14), title=title)


def slurm_share_by_state(shares: pl.DataFrame, *, synthetic: bool = False) -> alt.LayerChart:
    """Share of jobs and of GPU-hours per final job state, side by side (horizontal bars).

    Args:
        shares: :func:`trainperf.jobs.share_by_state` (state, n_jobs, job_share, gpu_hours,
            gpu_hours_share), in the order to show (most GPU-hours first).
        synthetic: say "SYNTHETIC data" in the title.
    """
    return _share_bars(
        shares,
        "state",
        "final state",
        None,
        _slurm_title("Jobs and GPU-hours by final job state", synthetic),
    )


def slurm_share_by_size(shares: pl.DataFrame, *, synthetic: bool = False) -> alt.LayerChart:
    """Share of jobs and of GPU-hours per job size in nodes (1, 2, 3-4, 5-16, 17-32, >32).

    Args:
        shares: :func:`trainperf.jobs.share_by_size` (size_bin, n_jobs, job_share, gpu_hours,
            gpu_hours_share).
        synthetic: say "SYNTHETIC data" in the title.
    """
    return _share_bars(
        shares,
        "size_bin",
        "job size (nodes)",
        _SIZE_ORDER,
        _slurm_title("Jobs and GPU-hours by job size", synthetic),
    )


_RUNTIME_TICKS_S = [60, 600, 3600, 6 * 3600, 86400, 7 * 86400, 30 * 86400]
_RUNTIME_LABELS = "{60: '1 min', 600: '10 min', 3600: '1 h', 21600: '6 h', 86400: '1 d', 604800: '1 wk', 2592000: '30 d'}"


def _runtime_axis(title: str) -> alt.Axis:
    return alt.Axis(
        values=_RUNTIME_TICKS_S,
        labelExpr=f"{_RUNTIME_LABELS}[datum.value] || datum.label",
        labelSeparation=4,
        title=title,
    )


def _group_names() -> list[str]:
    return ["all sizes"] + [f"{b} node" if b == "1" else f"{b} nodes" for b in _SIZE_ORDER]


def slurm_runtime_distribution(
    hist: pl.DataFrame, ecdf: pl.DataFrame, *, synthetic: bool = False
) -> alt.HConcatChart:
    """Run-time distribution of successful jobs: histogram (left) and ECDF by job size (right), log time.

    Args:
        hist: :func:`trainperf.jobs.runtime_histogram` with log-spaced edges
            (:data:`trainperf.jobs.RUNTIME_EDGES_LOG_S`); the open last bin is not drawn.
        ecdf: :func:`trainperf.jobs.runtime_ecdf` (group, elapsed_s, ecdf, n_jobs); groups are
            "all sizes", "1 node", "2 nodes", ... as the reader names them.
        synthetic: say "SYNTHETIC data" in the title.
    """
    h = hist.filter(pl.col("bin_hi_s").is_not_null() & (pl.col("bin_lo_s") > 0))
    x_scale = alt.Scale(type="log", domain=[10, 60 * 86400])
    bars = (
        alt.Chart(h)
        .mark_rect(color=PALETTE[0], stroke="white", strokeWidth=0.5)
        .encode(
            x=alt.X("bin_lo_s:Q", scale=x_scale, axis=_runtime_axis("run time (log scale)")),
            x2="bin_hi_s:Q",
            y=alt.Y("job_share:Q", title="share of successful jobs", axis=alt.Axis(format="%")),
            y2=alt.datum(0),
            tooltip=[
                alt.Tooltip("bin_lo_s:Q", title="from (s)", format=",.0f"),
                alt.Tooltip("bin_hi_s:Q", title="to (s)", format=",.0f"),
                alt.Tooltip("n_jobs:Q", title="jobs"),
                alt.Tooltip("job_share:Q", format=".1%"),
            ],
        )
        .properties(width=300, height=260, title="Histogram")
    )
    groups = _group_names()
    lines = (
        alt.Chart(ecdf.with_columns(pl.col("group").alias("group_label")))
        .mark_line(interpolate="step-after")
        .encode(
            x=alt.X("elapsed_s:Q", scale=x_scale, axis=_runtime_axis("run time (log scale)")),
            y=alt.Y("ecdf:Q", title="share of jobs with run time ≤ x", axis=alt.Axis(format="%")),
            color=alt.Color(
                "group_label:N",
                title="job size",
                sort=groups,
                scale=alt.Scale(domain=groups, range=["#000000", *_SIZE_COLORS]),
                legend=alt.Legend(
                    orient="right",
                    direction="vertical",
                    symbolType="stroke",
                    symbolStrokeWidth=2.5,
                    symbolSize=400,
                ),  # beside the ECDF: a wide, short figure that fits a 16:9 slide
            ),
            strokeDash=alt.StrokeDash(
                "group_label:N",
                sort=groups,
                scale=alt.Scale(domain=groups, range=[[1, 0], *_SIZE_DASHES]),
                legend=None,
            ),
            strokeWidth=alt.condition(
                alt.datum.group_label == "all sizes", alt.value(3.2), alt.value(2.0)
            ),
            tooltip=[
                "group_label:N",
                alt.Tooltip("elapsed_s:Q", title="run time (s)", format=",.0f"),
                alt.Tooltip("ecdf:Q", format=".1%"),
                alt.Tooltip("n_jobs:Q", title="jobs in group"),
            ],
        )
        .properties(width=320, height=260, title="Cumulative share by job size")
    )
    return alt.hconcat(bars, lines).properties(
        title=_slurm_title("Run time of successful jobs", synthetic)
    )


def _years_title(d: pl.DataFrame) -> str:
    """``time (UTC), 2024-2025``: the years the periods span."""
    if not d.height:
        return "time (UTC)"
    lo, hi = d["period_start"].min().year, d["period_start"].max().year
    return f"time (UTC), {lo}" + (f"–{hi}" if hi != lo else "")


def _headroom(d: pl.DataFrame) -> float | None:
    """The highest stack plus 5 %, or None (no data)."""
    if not d.height:
        return None
    top = d.group_by("period_start").agg(pl.col("gpu_hours").sum())["gpu_hours"].max()
    return float(top) * 1.05 if top else None


def slurm_gpu_hours_over_time(
    over_time: pl.DataFrame, *, every: str = "1mo", synthetic: bool = False
) -> alt.Chart:
    """GPU-hours per period stacked by job size (a step area: each period is one flat block).

    Args:
        over_time: :func:`trainperf.jobs.gpu_hours_over_time` with ``by_size=True`` (period_start,
            size_bin, gpu_hours).
        every: the period the frame was made with (``"1d"``, ``"1w"``, ``"1mo"``); the last period is
            drawn up to its end.
        synthetic: say "SYNTHETIC data" in the title.
    """
    d = over_time.with_columns(pl.col("size_bin").cast(pl.String).alias("size"))
    if d.height:
        # complete grid (0 where a bin has no jobs) and one extra point at the last period's end,
        # so that stacked step areas line up and the last period is drawn
        periods = d.select("period_start").unique().sort("period_start")
        last = periods["period_start"].max()
        periods = pl.concat(
            [
                periods,
                pl.DataFrame({"period_start": [last]}).with_columns(
                    pl.col("period_start").dt.offset_by(every)
                ),
            ]
        )
        grid = periods.join(pl.DataFrame({"size": _SIZE_ORDER}), how="cross")
        d = grid.join(
            d.select("period_start", "size", "gpu_hours"), on=["period_start", "size"], how="left"
        )
        d = d.with_columns(pl.col("gpu_hours").fill_null(0.0))
    unit = {"1d": "day", "1w": "week", "1mo": "month"}.get(every, every)
    interval = {"1d": "day", "1w": "week", "1mo": "month"}.get(every, "month")
    return (
        alt.Chart(d)
        .mark_area(interpolate="step-after", opacity=0.9)
        .encode(
            x=alt.X(
                "period_start:T",
                title=_years_title(d) if interval == "month" else "time (UTC)",
                scale=alt.Scale(type="utc"),
                axis=alt.Axis(
                    tickCount={"interval": interval, "step": 1},
                    # the year at each January and in the title (on the first tick it would
                    # crowd out the second label)
                    **(
                        {
                            "labelExpr": "utcmonth(datum.value) == 0"
                            " ? utcFormat(datum.value, '%b %Y') : utcFormat(datum.value, '%b')"
                        }
                        if interval == "month"
                        else {}
                    ),
                ),
            ),
            y=alt.Y(
                "gpu_hours:Q",
                title=f"GPU-hours per {unit}",
                stack="zero",
                # headroom: the highest block never touches the top of the frame
                scale=alt.Scale(domainMax=_headroom(d)),
                axis=alt.Axis(format=",.0f"),
            ),
            color=alt.Color(
                "size:N",
                title="job size (nodes)",
                sort=_SIZE_ORDER,
                scale=alt.Scale(domain=_SIZE_ORDER, range=_SIZE_COLORS),
                legend=alt.Legend(orient="right", direction="vertical"),
            ),
            order=alt.Order("size_order:Q"),
            tooltip=[
                alt.Tooltip(
                    "period_start:T", title="period from", format="%Y-%m-%d", formatType="utc"
                ),
                alt.Tooltip("size:N", title="job size (nodes)"),
                alt.Tooltip("gpu_hours:Q", title="GPU-hours", format=",.0f"),
            ],
        )
        .transform_calculate(size_order=f"indexof({json.dumps(_SIZE_ORDER)}, datum.size)")
        .properties(
            width=620,
            height=300,
            title=_slurm_title(f"GPU-hours per {unit} by job size", synthetic),
        )
    )
