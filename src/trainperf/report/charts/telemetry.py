"""Charts of the telemetry chapter: activity over the run, the GPU x time heatmap, phase distributions,
per-rail throughput. Every title says "SYNTHETIC data" when ``synthetic=True``.

Time axes take their tick step from the span shown (:func:`trainperf.report.charts.theme.time_axis`),
so no two ticks carry the same label. The heatmap's columns lie on the sample grid and never straddle
an MLPerf phase boundary: a uniform bin whose width is not a multiple of the train/eval period
aliases (one bin holds an eval, the next none), which paints bands a reader takes for events.
"""

from __future__ import annotations

from datetime import timedelta

import altair as alt
import polars as pl

from trainperf.report.charts.theme import (
    KIND_COLORS,
    PALETTE,
    RULE_COLOR,
    stable_floats,
    time_axis,
)
from trainperf.telemetry import ACTIVITY_FIELDS, METRIC_NAMES

__all__ = [
    "heatmap_columns",
    "telemetry_activity",
    "telemetry_heatmap",
    "telemetry_phase_distributions",
    "telemetry_rail_throughput",
]


def _synthetic_title(title: str, synthetic: bool) -> str:
    return f"{title} (SYNTHETIC data)" if synthetic else title


def _phase_rects(phases: pl.DataFrame) -> alt.Chart:
    d = phases.select("phase", "kind", "start", "end").with_columns(
        pl.col("kind").alias("kind_label")
    )
    return (
        alt.Chart(d)
        .mark_rect(opacity=0.16)
        .encode(
            x="start:T",
            x2="end:T",
            color=alt.Color(
                "kind_label:N",
                title="MLPerf phase",
                scale=alt.Scale(domain=list(KIND_COLORS), range=list(KIND_COLORS.values())),
                legend=alt.Legend(orient="right", direction="vertical"),
            ),
            tooltip=[
                "phase",
                "kind",
                alt.Tooltip("start:T", format="%H:%M:%S", formatType="utc"),
                alt.Tooltip("end:T", format="%H:%M:%S", formatType="utc"),
            ],
        )
    )


def telemetry_activity(
    timeline: pl.DataFrame,
    phases: pl.DataFrame,
    *,
    metric_label: str = "tensor-pipe active",
    field_name: str = "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    percent: bool = True,
    synthetic: bool = False,
    title: str = "Tensor-core activity over the MLPerf GPT-3 run",
    subtitle: str | None = None,
) -> alt.LayerChart:
    """A metric over the run, pooled over GPUs: median line and 5-95 % band, phases shaded.

    Args:
        timeline: :func:`trainperf.telemetry.activity_timeline` (timestamp, n_gpus, p05, p50, p95).
        phases: :func:`trainperf.telemetry.phases_from_log` (phase, kind, start, end).
        metric_label: y-axis title (with unit, if any).
        field_name: the DCGM field, named in the subtitle.
        percent: format the axis as a percentage (ratio fields).
        synthetic: say "SYNTHETIC data" in the title.
        subtitle: what the data are (e.g. the capture); the spread and field are appended.
    """
    timeline = stable_floats(timeline)  # the same data give the same figure key (see there)
    fmt = "%" if percent else ""
    one_gpu = timeline.height > 0 and timeline["n_gpus"].max() == 1
    spread = "median and 5-95 % over samples" if one_gpu else "median and 5-95 % over GPUs"
    stamps = timeline["timestamp"].to_list() + phases["start"].to_list() + phases["end"].to_list()
    x = time_axis(stamps)
    band = (
        alt.Chart(timeline)
        .mark_area(opacity=0.3, color=PALETTE[0])
        .encode(x=x, y=alt.Y("p05:Q", title=metric_label, axis=alt.Axis(format=fmt)), y2="p95:Q")
    )
    line = (
        alt.Chart(timeline)
        .mark_line(color=PALETTE[0], strokeWidth=1.8)
        .encode(
            x="timestamp:T",
            y="p50:Q",
            tooltip=[
                alt.Tooltip("timestamp:T", format="%H:%M:%S", formatType="utc"),
                alt.Tooltip("p05:Q", format=".3f"),
                alt.Tooltip("p50:Q", format=".3f"),
                alt.Tooltip("p95:Q", format=".3f"),
                "n_gpus",
            ],
        )
    )
    sub = "; ".join(s for s in (subtitle, f"{spread}, {field_name}") if s)
    return alt.layer(_phase_rects(phases), band, line).properties(
        width=640,
        height=300,
        title=alt.Title(_synthetic_title(title, synthetic), subtitle=sub),
    )


def heatmap_columns(
    grid: pl.DataFrame, phases: pl.DataFrame | None = None, max_bin: timedelta | None = None
) -> pl.DataFrame:
    """Group the sample times of a heatmap grid into display columns on the sample grid.

    Each column is a run of consecutive sample times in one MLPerf phase (or, without phases, in one
    uniform bin of whole samples), cut every ``max_bin``; it spans from its first sample to its last
    sample plus one sample step, so columns tile the time axis with no gap and no overlap.

    Args:
        grid: :func:`trainperf.telemetry.gpu_heatmap` at the sample resolution (timestamp column).
        phases: :func:`trainperf.telemetry.phases_from_log` (phase, start, end), or None.
        max_bin: longest column (default: a phase is one column; without phases 1/120 of the span).

    Returns:
        timestamp (the sample time), col_start, col_end (Datetime, UTC), one row per sample time.
    """
    ts = grid.select("timestamp").unique().sort("timestamp")
    step = ts["timestamp"].diff().drop_nulls().min() if ts.height > 1 else timedelta(seconds=60)
    span = (ts["timestamp"].max() - ts["timestamp"].min()) if ts.height else timedelta(0)
    if phases is not None and phases.height:
        p = phases.select("phase", "start", "end").sort("start")
        ts = ts.join_asof(p, left_on="timestamp", right_on="start", strategy="backward")
        key = pl.when(pl.col("timestamp") < pl.col("end")).then(pl.col("phase")).otherwise(None)
        ts = ts.with_columns(key.fill_null("").alias("_phase")).drop("phase", "start", "end")
    else:
        ts = ts.with_columns(pl.lit("").alias("_phase"))
        if max_bin is None:
            max_bin = max(step, (span / 120) // step * step) if step else span
    run = (pl.col("_phase") != pl.col("_phase").shift(1)).fill_null(True).cum_sum().alias("_run")
    ts = ts.with_columns(run)
    if max_bin:
        start = pl.col("timestamp").min().over("_run")
        us = int(max_bin.total_seconds() * 1e6)
        chunk = ((pl.col("timestamp") - start).dt.total_microseconds() // us).alias("_chunk")
    else:
        chunk = pl.lit(0).alias("_chunk")
    ts = ts.with_columns(chunk)
    grp = ["_run", "_chunk"]
    return ts.with_columns(
        pl.col("timestamp").min().over(grp).alias("col_start"),
        (pl.col("timestamp").max().over(grp) + step).alias("col_end"),
    ).select("timestamp", "col_start", "col_end")


def telemetry_heatmap(
    grid: pl.DataFrame,
    *,
    phases: pl.DataFrame | None = None,
    max_bin: timedelta | str | None = None,
    value_label: str = "tensor-pipe active",
    percent: bool = True,
    synthetic: bool = False,
    title: str = "Tensor-core activity per GPU over time",
    height: int = 480,
) -> alt.Chart:
    """GPU (rows) x time (columns) heatmap; columns on the sample grid (:func:`heatmap_columns`).

    Rows are ``host/gpu`` in host then GPU order; with more than 64 rows the row labels are hidden
    (the tooltip names the GPU). A cell is the mean of the GPU's samples in the column.

    Args:
        grid: :func:`trainperf.telemetry.gpu_heatmap` with ``every`` at most the sample interval
            (hostname, gpu, row, timestamp, value, n).
        phases: MLPerf phases; with them each column holds one phase (or a ``max_bin`` part of it).
        max_bin: longest column (timedelta or "120s").
    """
    if isinstance(max_bin, str):
        max_bin = _parse_duration(max_bin) if max_bin else None
    cols = heatmap_columns(grid, phases, max_bin)
    d = (
        grid.join(cols, on="timestamp", how="left")
        .group_by("hostname", "gpu", "row", "col_start", "col_end")
        .agg(
            ((pl.col("value") * pl.col("n")).sum() / pl.col("n").sum()).alias("value"),
            pl.col("n").sum(),
        )
        .sort("hostname", "gpu", "col_start", nulls_last=True)
    )
    rows = (
        d.select("hostname", "gpu", "row")
        .unique()
        .sort(["hostname", "gpu"], nulls_last=True)["row"]
        .to_list()
    )
    # only what the chart draws: fewer columns, a smaller spec to serialise and hash
    d = stable_floats(d.select("row", "col_start", "col_end", "value"))
    step = grid.select(pl.col("timestamp").unique().sort().diff().min()).item()
    axis = alt.Axis(
        labels=len(rows) <= 64, ticks=len(rows) <= 64, title=f"GPU (host/gpu), {len(rows)} rows"
    )
    stamps = cols["col_start"].to_list() + cols["col_end"].to_list()
    sub = (
        "one column per MLPerf phase, on the sample grid"
        if phases is not None
        else "one column per {n} samples"
    )
    if phases is None and cols.height:
        sub = sub.format(n=cols.group_by("col_start").len()["len"].max())
    if step is not None:
        sub += f" ({step.total_seconds():g} s)"
    return (
        alt.Chart(d)
        .mark_rect(strokeWidth=0, aria=False)
        .encode(
            x=time_axis(stamps, field="col_start"),
            x2="col_end:T",
            y=alt.Y("row:N", sort=rows, axis=axis, scale=alt.Scale(paddingInner=0, paddingOuter=0)),
            color=alt.Color(
                "value:Q",
                title=value_label,
                scale=alt.Scale(scheme="viridis"),
                legend=alt.Legend(
                    format="%" if percent else "", orient="right", direction="vertical"
                ),
            ),
            tooltip=[
                "row",
                alt.Tooltip("col_start:T", format="%H:%M:%S", formatType="utc"),
                alt.Tooltip("value:Q", format=".3f"),
            ],
        )
        .properties(
            width=640,
            height=height,
            title=alt.Title(_synthetic_title(title, synthetic), subtitle=sub),
        )
    )


def _parse_duration(text: str) -> timedelta:
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
    for u in sorted(units, key=len, reverse=True):
        if text.endswith(u):
            return timedelta(seconds=float(text[: -len(u)]) * units[u])
    return timedelta(seconds=float(text))


_METRIC_LABELS = {m: f"{n} ({ACTIVITY_FIELDS[m][1]})" for m, n in METRIC_NAMES.items()}


def telemetry_phase_distributions(
    stats: pl.DataFrame,
    *,
    by: str = "kind",
    synthetic: bool = False,
    title: str = "GPU activity by MLPerf phase",
) -> alt.FacetChart:
    """Box plots from precomputed quantiles: whiskers p05-p95, box p25-p75, line at the median.

    Args:
        stats: :func:`trainperf.telemetry.phase_stats` (columns ``by``, metric, unit, n, mean, p05,
            p25, p50, p75, p95), ``level="kind"`` or ``"phase"``.
        by: the x column (``kind`` or ``phase``).
        synthetic: say "SYNTHETIC data" in the title.
    """
    d = stable_floats(stats).with_columns(
        pl.col("metric").replace(_METRIC_LABELS).alias("metric_label"),
        pl.col(by).alias(f"{by}_label"),
    )
    order = list(KIND_COLORS) if by == "kind" else None
    # by kind, the colour legend names the three kinds: five panels in a row leave 35 px a kind,
    # too narrow for the axis labels (Vega dropped "train" as overlapping)
    x = alt.X(
        f"{by}_label:N",
        title="phase" if by == "phase" else None,
        sort=order,
        axis=alt.Axis(labelAngle=0)
        if by == "phase"
        else alt.Axis(labels=False, ticks=False, domain=True),
    )
    base = alt.Chart().encode(x=x)
    whisk = base.mark_rule(color="#555555").encode(y=alt.Y("p05:Q", title=None), y2="p95:Q")
    box = base.mark_bar(size=22, opacity=0.85).encode(
        y="p25:Q",
        y2="p75:Q",
        color=alt.Color(
            f"{by}_label:N",
            legend=alt.Legend(title="phase kind", orient="top", direction="horizontal")
            if by == "kind"
            else None,
            sort=order,
            scale=alt.Scale(domain=list(KIND_COLORS), range=list(KIND_COLORS.values()))
            if by == "kind"
            else alt.Undefined,
        ),
        tooltip=[by, "metric", "unit", "n"]
        + [
            alt.Tooltip(f"{c}:Q", format=".4g") for c in ("p05", "p25", "p50", "p75", "p95", "mean")
        ],
    )
    med = base.mark_tick(color="black", size=22, thickness=2).encode(y="p50:Q")
    return (
        alt.layer(whisk, box, med, data=d)
        .properties(width=104, height=220)
        .facet(
            column=alt.Column(
                "metric_label:N",
                title=None,
                sort=[_METRIC_LABELS[m] for m in _METRIC_LABELS],
                header=alt.Header(labelFontSize=13),
            )
        )
        .resolve_scale(y="independent")
        .properties(
            title=alt.Title(
                _synthetic_title(title, synthetic),
                subtitle="whiskers 5-95 %, box 25-75 %, line median",
            )
        )
    )


def telemetry_rail_throughput(
    link: pl.DataFrame,
    flagged: pl.DataFrame,
    *,
    column: str = "nic_Bps",
    label: str = "NIC TX+RX",
    synthetic: bool = False,
    title: str = "Per-rail throughput in the training blocks",
) -> alt.LayerChart:
    """One point per (node, rail) in GB/s, rails flagged by :func:`trainperf.telemetry.rail_imbalance`
    drawn in vermillion.

    Args:
        link: :func:`trainperf.telemetry.link_throughput` (hostname, rail, ``column`` in B/s).
        flagged: :func:`trainperf.telemetry.rail_imbalance` (hostname, rail).
        column: ``nic_Bps``, ``pcie_Bps`` or ``nvlink_Bps``.
        label: what the column is, for the axis.
        synthetic: say "SYNTHETIC data" in the title.
    """
    ok, low = "within range", "below half of its node's median"
    fl = flagged.select("hostname", "rail").with_columns(pl.lit(True).alias("_f"))
    d = (
        link.filter(pl.col(column).is_not_null())
        .join(fl, on=["hostname", "rail"], how="left")
        .with_columns(
            (pl.col(column) / 1e9).alias("GBps"),
            pl.when(pl.col("_f")).then(pl.lit(low)).otherwise(pl.lit(ok)).alias("status_label"),
            # deterministic horizontal jitter per host, so points of one rail do not overlap
            ((pl.col("hostname").hash(seed=0) % 1000).cast(pl.Float64) / 1000.0 - 0.5).alias(
                "jitter"
            ),
        )
        .drop("_f")
        .sort("hostname", "rail")  # a stable order: the same data give the same figure key
        .pipe(stable_floats)  # and the same last bits of parallel means
    )
    pts = (
        alt.Chart(d)
        .mark_circle(size=28, opacity=0.75)
        .encode(
            x=alt.X("rail:O", title="rail (NIC i serves GPU i)", axis=alt.Axis(labelAngle=0)),
            xOffset=alt.XOffset("jitter:Q", scale=alt.Scale(domain=[-0.6, 0.6])),
            y=alt.Y("GBps:Q", title=f"{label} (GB/s)"),
            color=alt.Color(
                "status_label:N",
                title=None,
                scale=alt.Scale(domain=[ok, low], range=[PALETTE[0], RULE_COLOR]),
            ),
            tooltip=["hostname", "rail", alt.Tooltip("GBps:Q", format=".2f"), "status_label"],
        )
    )
    return alt.layer(pts).properties(
        width=560,
        title=alt.Title(
            _synthetic_title(f"{title}: {label}", synthetic), subtitle="one point per node"
        ),
    )
