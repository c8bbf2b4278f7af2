"""Charts of the profiler-trace chapter: where the GPU time of each step goes, trace against DCGM.

Functions take the frames of :mod:`trainperf.trace` and return Altair charts in English; every text
a reader sees in the data (legend entries, row labels) is in a ``*_label`` column, so
:func:`trainperf.report.charts.save_chart` writes the Japanese figure from the same chart
(:mod:`trainperf.report.charts.i18n`).
"""

from __future__ import annotations

import altair as alt
import polars as pl

from trainperf.report.charts.theme import PALETTE

__all__ = ["STEP_PARTS", "TRACE_MEASURES", "trace_step_breakdown", "trace_vs_telemetry"]

#: The partition of a step's GPU time (columns of :func:`trainperf.trace.step_breakdown`), in stack
#: order, with the reader's name and colour (Okabe-Ito; idle in grey).
STEP_PARTS: list[tuple[str, str, str]] = [
    ("compute_share", "compute kernels", PALETTE[0]),
    ("comm_exposed_share", "communication, not overlapped", "#D55E00"),
    ("memory_exposed_share", "memory copies and sets", PALETTE[1]),
    ("other_exposed_share", "other GPU activity", PALETTE[4]),
    ("idle_share", "GPU idle", "#BBBBBB"),
]

#: Height of one row (px) of the trace charts: a 13 px label and the theme's 8 px label separation.
ROW_STEP_PX = 26

#: Columns of :func:`trainperf.trace.match_telemetry` drawn by :func:`trace_vs_telemetry`, each trace
#: share next to the DCGM field that measures the same thing, and the row label.
TRACE_MEASURES: list[tuple[str, str]] = [
    ("busy_share", "trace: any GPU activity"),
    ("gr_engine_active", "DCGM: graphics engine active"),
    ("compute_share", "trace: compute kernels"),
    ("sm_active", "DCGM: SM active"),
    ("matmul_share", "trace: GEMM and attention kernels"),
    ("tensor_active", "DCGM: tensor pipe active"),
]


def trace_step_breakdown(
    sb: pl.DataFrame, *, title: str = "Where the GPU time of each profiled step goes"
) -> alt.Chart:
    """Stacked bars per (rank, step), 0-100 %: compute, exposed communication, copies, other, idle.

    Args:
        sb: :func:`trainperf.trace.step_breakdown` (``rank``, ``step``, ``complete`` (Boolean: the
            step has a next step to end at) and the shares ``compute_share``,
            ``comm_exposed_share``, ``memory_exposed_share``, ``other_exposed_share``,
            ``idle_share``, fractions 0-1 that sum to 1).
        title: chart title.

    Returns:
        A bar chart, x from 0 to 100 % (the parts partition the step, so the axis is the whole).
    """
    names = {c: n for c, n, _ in STEP_PARTS}
    order = {c: i for i, (c, _, _) in enumerate(STEP_PARTS)}
    cols = [c for c, _, _ in STEP_PARTS]
    long = (
        sb.sort("rank", "step")
        .with_columns(
            pl.format("rank {} step {}", "rank", "step").alias("step_label"),
        )
        .with_columns(
            pl.when(pl.col("complete"))
            .then(pl.col("step_label"))
            .otherwise(pl.col("step_label") + " (last)")
            .alias("step_label")
        )
        .unpivot(
            index=["step_label", "rank", "step"],
            on=cols,
            variable_name="part",
            value_name="share",
        )
        .with_columns(
            pl.col("part").replace_strict(names).alias("part_label"),
            pl.col("part").replace_strict(order, return_dtype=pl.Int32).alias("order"),
        )
    )
    return (
        alt.Chart(long)
        .mark_bar()
        .encode(
            # no axis title: the labels name rank and step ("rank 0 step 252"), and a title beside
            # them overlapped the Japanese labels on the talk's slide
            y=alt.Y("step_label:N", title=None, sort=None),
            x=alt.X(
                "share:Q",
                title="share of the step's GPU time",
                axis=alt.Axis(format="%", values=[0, 0.25, 0.5, 0.75, 1]),
                scale=alt.Scale(domain=[0, 1], nice=False),
            ),
            color=alt.Color(
                "part_label:N",
                title="what runs",
                sort=[n for _, n, _ in STEP_PARTS],
                scale=alt.Scale(
                    domain=[n for _, n, _ in STEP_PARTS], range=[c for _, _, c in STEP_PARTS]
                ),
                legend=alt.Legend(orient="bottom", direction="horizontal", columns=3),
            ),
            order=alt.Order("order:Q"),
            tooltip=["step_label:N", "part_label:N", alt.Tooltip("share:Q", format=".1%")],
        )
        # a row per step tall enough for its label at 13 px: Vega hides labels closer than the
        # theme's labelSeparation, and a review found every other step unlabelled
        .properties(width=560, height=alt.Step(ROW_STEP_PX), title=title)
    )


def trace_vs_telemetry(
    mt: pl.DataFrame,
    *,
    title: str = "Trace and DCGM over the same seconds",
    subtitle: str = "one dot per telemetry sample; black tick: mean",
) -> alt.LayerChart:
    """Dot plot, 0-100 %: per telemetry window, the trace's shares beside the DCGM activities.

    Args:
        mt: :func:`trainperf.trace.match_telemetry` (``timestamp`` and any of the shares of
            :data:`TRACE_MEASURES`, fractions 0-1; nulls are left out).
        title, subtitle: chart title.

    Returns:
        A layered chart: one row per measure (trace share above the DCGM field it is compared
        with), a dot per sample, a tick at the mean.
    """
    names = dict(TRACE_MEASURES)
    cols = [c for c, _ in TRACE_MEASURES if c in mt.columns]
    long = (
        mt.unpivot(index=["timestamp"], on=cols, variable_name="m", value_name="value")
        .filter(pl.col("value").is_not_null())
        .with_columns(pl.col("m").replace_strict(names).alias("measure_label"))
    )
    order = [names[c] for c in cols]
    y = alt.Y("measure_label:N", title=None, sort=order)
    color = alt.Color(
        "measure_label:N",
        sort=order,
        scale=alt.Scale(domain=order, range=PALETTE[: len(order)]),
        legend=None,
    )
    dots = (
        alt.Chart(long)
        .mark_circle(size=60, opacity=0.6)
        .encode(
            y=y,
            x=alt.X(
                "value:Q",
                title="share of the window",
                axis=alt.Axis(format="%", values=[0, 0.25, 0.5, 0.75, 1]),
                scale=alt.Scale(domain=[0, 1], nice=False),
            ),
            color=color,
            tooltip=[
                alt.Tooltip("timestamp:T", format="%H:%M:%S"),
                "measure_label:N",
                alt.Tooltip("value:Q", format=".1%"),
            ],
        )
    )
    means = (
        alt.Chart(long)
        .mark_tick(thickness=2, size=22, color="black")
        .encode(y=y, x=alt.X("mean(value):Q"))
    )
    return alt.layer(dots, means).properties(
        width=560, height=alt.Step(ROW_STEP_PX), title=alt.TitleParams(title, subtitle=subtitle)
    )
