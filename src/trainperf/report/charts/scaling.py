"""Strong scaling: GPU-hours to train by scale, one series per system and MLPerf round.

Under perfect strong scaling the GPU-hours to train (GPUs x time to train) stay flat as nodes are
added; a rising line is the efficiency lost (:func:`trainperf.compare.scaling.strong_scaling`).
Honest scales: GPU-hours from zero, node counts on a log-2 axis with a tick at every node count
shown; results of different rounds are never joined by a line; a time recomputed from logs is a
filled mark, a transcribed one a hollow mark.
"""

from __future__ import annotations

import altair as alt
import polars as pl

from trainperf.report.charts.theme import PALETTE, benchmark_name, node_axis, node_axis_width

__all__ = ["gpu_hours_by_scale"]

_SHAPES = ["circle", "square", "triangle-up", "diamond", "cross", "triangle-down", "wedge"]


def gpu_hours_by_scale(points: pl.DataFrame, benchmark: str = "gpt3") -> alt.LayerChart:
    """GPU-hours to train against node count (:func:`trainperf.compare.scaling.scaling_points`).

    Args:
        points: ``system``, ``round``, ``n_nodes``, ``n_gpus``, ``time_to_train_min``,
            ``gpu_hours``, ``source`` (``logs`` or ``transcribed``), in legend order.
        benchmark: MLPerf benchmark id (the title names it).
    """
    d = points.with_columns(
        (pl.col("system") + " " + pl.col("round")).alias("series_label"),
        pl.when(pl.col("source") == "logs")
        .then(pl.lit("from its MLPerf logs"))
        .otherwise(pl.lit("transcribed, not recomputed"))
        .alias("source_label"),
    )
    series = list(dict.fromkeys(d["series_label"].to_list()))
    colours = [PALETTE[i % len(PALETTE)] for i in range(len(series))]
    shapes = [_SHAPES[i % len(_SHAPES)] for i in range(len(series))]
    width = min(640, node_axis_width(d["n_nodes"], minimum=480))
    colour = alt.Color(
        "series_label:N",
        scale=alt.Scale(domain=series, range=colours),
        sort=series,
        legend=alt.Legend(
            title="system and MLPerf round", orient="bottom", columns=2, titleLimit=480
        ),
    )
    base = alt.Chart(d).encode(
        x=node_axis(d["n_nodes"]),
        y=alt.Y(
            "gpu_hours:Q",
            title="GPU-hours to train (GPUs × time to train)",
            scale=alt.Scale(zero=True),
            axis=alt.Axis(format=",.0f"),
        ),
        color=colour,
        detail="series_label:N",
    )
    lines = base.mark_line(strokeWidth=2)
    marks = base.mark_point(size=110, strokeWidth=2).encode(
        shape=alt.Shape(
            "series_label:N", scale=alt.Scale(domain=series, range=shapes), sort=series, legend=None
        ),
        # filled in the series' own colour (the same scale as the lines), hollow when transcribed
        fill=alt.condition(
            "datum.source == 'logs'",
            alt.Color(
                "series_label:N",
                scale=alt.Scale(domain=series, range=colours),
                sort=series,
                legend=None,
            ),
            alt.value("white"),
        ),
        opacity=alt.value(1),
        tooltip=["system", "round", "n_nodes", "n_gpus", "time_to_train_min", "source"],
    )
    return alt.layer(lines, marks).properties(
        title=alt.TitleParams(
            f"{benchmark_name(benchmark)}: GPU-hours to train by scale",
            subtitle=[
                "flat = perfect strong scaling; filled mark: from its MLPerf logs,",
                "hollow mark: transcribed, not recomputed; axis from zero",
            ],
        ),
        width=width,
        height=300,
    )
