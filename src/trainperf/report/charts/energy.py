"""Energy to train against time to train: MLPerf power results, and an evaluated cluster's times.

One chart of the energy chapter. Honest scales: both axes from zero, so a run's energy and time are
read as shares of each other; runs are small dots, a score (olympic mean) a larger diamond in the
same colour; an evaluated cluster that logged no energy is a dashed vertical line at its time to
train (it has no energy to plot). Every text a reader sees is English here and goes through the
i18n table (:mod:`trainperf.report.charts.i18n`) for Japanese.
"""

from __future__ import annotations

import altair as alt
import polars as pl

from trainperf.report.charts.theme import PALETTE, benchmark_name

__all__ = ["energy_vs_time"]


def energy_vs_time(
    points: pl.DataFrame, times: pl.DataFrame | None = None, benchmark: str = "llama2_70b_lora"
) -> alt.LayerChart:
    """Energy to train (kWh) against time to train (min), one colour per result.

    Args:
        points: one row per mark: ``series`` (String, the result, e.g. ``Dell v4.1, 64 x H100``; a
            proper name, not translated), ``kind`` (``run`` or ``score``), ``time_to_train_min``
            (Float64, min), ``energy_kwh`` (Float64, kWh), in legend order.
        times: evaluated clusters without an energy: ``series`` (String) and ``time_to_train_min``
            (Float64), drawn as dashed vertical lines; None or empty for none.
        benchmark: MLPerf benchmark id (the title names it).
    """
    d = points
    series = list(dict.fromkeys(d["series"].to_list()))
    colours = [PALETTE[i % len(PALETTE)] for i in range(len(series))]
    colour = alt.Color(
        "series:N",
        scale=alt.Scale(domain=series, range=colours),
        sort=series,
        legend=alt.Legend(
            title="MLPerf power result", orient="bottom", columns=1, labelLimit=480, titleLimit=480
        ),
    )
    x = alt.X("time_to_train_min:Q", title="time to train (min)", scale=alt.Scale(zero=True))
    y = alt.Y("energy_kwh:Q", title="energy to train (kWh)", scale=alt.Scale(zero=True))
    tooltip = [
        "series",
        "kind",
        alt.Tooltip("time_to_train_min:Q", format=".2f"),
        alt.Tooltip("energy_kwh:Q", format=".2f"),
    ]
    runs = (
        alt.Chart(d.filter(pl.col("kind") == "run"))
        .mark_circle(size=45, opacity=0.55)
        .encode(x=x, y=y, color=colour, tooltip=tooltip)
    )
    scores = (
        alt.Chart(d.filter(pl.col("kind") == "score"))
        .mark_point(
            shape="diamond", size=260, filled=True, stroke="black", strokeWidth=1.2, opacity=1
        )
        .encode(x=x, y=y, color=colour, tooltip=tooltip)
    )
    layers = [runs, scores]
    subtitle = [
        "energy at the nodes' power supplies by the MLPerf power rules, with the interconnect estimate",
        "dots: runs; diamond: score (olympic mean); axes from zero",
    ]
    if times is not None and times.height:
        t = times.with_columns(
            (pl.col("series") + pl.lit(": no energy measured")).alias("note_label")
        )
        rule = (
            alt.Chart(t)
            .mark_rule(strokeDash=[6, 4], color="#555555", strokeWidth=1.5)
            .encode(x="time_to_train_min:Q")
        )
        text = (
            alt.Chart(t)
            .mark_text(align="left", dx=4, dy=-6, baseline="bottom", color="#333333", fontSize=11)
            .encode(x="time_to_train_min:Q", y=alt.value(12), text="note_label:N")
        )
        layers += [rule, text]
        subtitle.append(
            "dashed line: time to train of an evaluated cluster without an energy figure"
        )
    return alt.layer(*layers).properties(
        title=alt.TitleParams(
            f"{benchmark_name(benchmark)}: energy to train against time to train", subtitle=subtitle
        ),
        width=520,
        height=320,
    )
