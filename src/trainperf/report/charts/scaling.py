"""Strong scaling: GPU-hours to train by scale, one series per system and MLPerf round.

Under perfect strong scaling the GPU-hours to train (GPUs x time to train) stay flat as nodes are
added; a rising line is the efficiency lost (:func:`trainperf.compare.scaling.strong_scaling`).
Honest scales: GPU-hours from zero, node counts on a log-2 axis with a tick at every node count
shown; results of different rounds are never joined by a line; a time recomputed from logs is a
filled mark, a transcribed one a hollow mark. Marks that would cover each other (same node count,
GPU-hours within :data:`DODGE_Y_SHARE` of the largest) are set side by side, :data:`DODGE_OCTAVES`
apart on the log-2 axis, the ticks staying at the true node counts (:func:`dodge_nodes`).
"""

from __future__ import annotations

import altair as alt
import polars as pl

from trainperf.report.charts.theme import PALETTE, benchmark_name, node_axis, node_axis_width

__all__ = ["gpu_hours_by_scale"]

_SHAPES = ["circle", "square", "triangle-up", "diamond", "cross", "triangle-down", "wedge"]

#: Two marks at one node count collide when their GPU-hours differ by less than this share of the
#: chart's largest value: a mark is about 12 px across on a 300 px tall axis from zero.
DODGE_Y_SHARE = 0.05
#: Horizontal distance of dodged marks, in octaves of the log-2 node axis (about 21 px at the
#: chart's usual 150 px per octave: more than one mark's width).
DODGE_OCTAVES = 0.14


def dodge_nodes(points: pl.DataFrame) -> pl.Series:
    """``n_nodes_plot`` (Float64): where each point is drawn on the node axis.

    Points of one node count whose ``gpu_hours`` lie within ``DODGE_Y_SHARE`` x the largest
    ``gpu_hours`` of each other (chained, in ascending order) form a group; a group of k points is
    spread symmetrically around the true node count, ``DODGE_OCTAVES`` apart, in the frame's row
    order (the legend order). A point that collides with none is drawn at its node count.

    Args:
        points: ``n_nodes`` and ``gpu_hours`` (numeric), one row per mark.
    """
    n = points.height
    x = [float(v) for v in points["n_nodes"].to_list()]
    y = points["gpu_hours"].to_list()
    top = max((v for v in y if v is not None), default=0.0) or 1.0
    out = list(x)
    by_nodes: dict[float, list[int]] = {}
    for i in range(n):
        if y[i] is not None:
            by_nodes.setdefault(x[i], []).append(i)
    for idx in by_nodes.values():
        idx.sort(key=lambda i: y[i])
        groups, cur = [], [idx[0]]
        for i in idx[1:]:
            if y[i] - y[cur[-1]] < DODGE_Y_SHARE * top:
                cur.append(i)
            else:
                groups.append(cur)
                cur = [i]
        groups.append(cur)
        for g in groups:
            g.sort()  # row order, so the series keep their legend order left to right
            k = len(g)
            for j, i in enumerate(g):
                out[i] = x[i] * 2 ** ((j - (k - 1) / 2) * DODGE_OCTAVES)
    return pl.Series("n_nodes_plot", out, dtype=pl.Float64)


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
    d = d.with_columns(dodge_nodes(d))
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
        x=node_axis(d["n_nodes"], field="n_nodes_plot"),
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
                "marks that would overlap are set side by side",
            ],
        ),
        width=width,
        height=300,
    )
