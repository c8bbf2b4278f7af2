"""Every MLPerf result of one benchmark by scale: where the evaluated results stand in the record.

One chart per benchmark (the comparison chapter): GPUs against GPU-minutes to train (GPUs x time to
train), both on log axes (the record spans 8 to over 10,000 GPUs and two orders of GPU-minutes);
colour: accelerator generation; shape: network family (from the systems' descriptions); the
evaluated results as larger outlined marks with their labels. The frame comes from
:func:`trainperf.compare.record_points` (this module computes no number). Every text a reader sees
is English here and goes through the i18n table for Japanese (columns ending in ``_label``).
"""

from __future__ import annotations

import altair as alt
import polars as pl

from trainperf.compare.record_points import NETWORK_FAMILIES
from trainperf.report.charts.theme import PALETTE, benchmark_name

__all__ = ["record_results"]

# legend order of generations: vendor, then launch; "other" last (grey)
_GENERATIONS = ("Ampere", "Hopper", "Blackwell", "Blackwell Ultra", "CDNA 3", "CDNA 4", "other")
_SHAPES = {"InfiniBand": "circle", "Ethernet/RoCE": "square", "NVLink only": "triangle-up",
           "other": "cross"}  # fmt: skip


def record_results(points: pl.DataFrame, benchmark: str, rounds: str = "") -> alt.LayerChart:
    """GPUs against GPU-minutes of every result of ``benchmark`` in the record, evaluated ones marked.

    Args:
        points: :data:`trainperf.compare.record_points.POINTS_SCHEMA` (round, submitter, system,
            accelerator, generation, network, n_gpus, score_min, gpu_min, evaluated, label).
        benchmark: MLPerf benchmark id (the title names it).
        rounds: the rounds shown, for the subtitle (``v3.1–v4.1``); "" for every round of the record.
    """
    gens = [g for g in _GENERATIONS if g in set(points["generation"].to_list())]
    extra = sorted(set(points["generation"].to_list()) - set(gens))
    gens += extra
    # one colour per generation in every chart (the book shows the benchmarks' charts side by side:
    # Hopper must not be orange in one and blue in the next), by its place in _GENERATIONS
    fixed = {g: PALETTE[i % len(PALETTE)] for i, g in enumerate(_GENERATIONS[:-1])}
    fixed |= {g: PALETTE[(len(_GENERATIONS) - 1 + i) % len(PALETTE)] for i, g in enumerate(extra)}
    colours = ["#999999" if g == "other" else fixed[g] for g in gens]
    nets = [n for n in NETWORK_FAMILIES if n in set(points["network"].to_list())]
    # one evaluated system: its marks say only their GPU count, the subtitle names the system
    systems = points.filter(pl.col("evaluated"))["system"].unique().to_list()
    one = len(systems) == 1
    d = points.with_columns(
        pl.col("generation").alias("generation_label"),
        pl.col("network").alias("network_label"),
        (pl.format("{} GPUs", pl.col("n_gpus")) if one else pl.col("label")).alias("point_label"),
    )
    colour = alt.Color(
        "generation_label:N",
        scale=alt.Scale(domain=gens, range=colours),
        sort=gens,
        # four to a row: seven generations in one row made the LoRA chart 1,025 px wide, its text
        # shrunk to about 10 px in the book's column (the 8B chart, four generations: 807 px)
        legend=alt.Legend(
            title="accelerator generation", orient="bottom", direction="horizontal", columns=4
        ),
    )
    shape = alt.Shape(
        "network_label:N",
        scale=alt.Scale(domain=nets, range=[_SHAPES[n] for n in nets]),
        sort=nets,
        legend=alt.Legend(title="network", orient="bottom", direction="horizontal"),
    )
    x = alt.X(
        "n_gpus:Q", title="GPUs (log scale)", scale=alt.Scale(type="log", nice=False, padding=18)
    )
    y = alt.Y(
        "gpu_min:Q",
        title="GPU-minutes to train (GPUs × time to train, log scale)",
        scale=alt.Scale(type="log", nice=False, padding=18),
    )
    tooltip = ["round", "submitter", "system", "accelerator", "network", "n_gpus",
               alt.Tooltip("score_min:Q", format=".2f"), alt.Tooltip("gpu_min:Q", format=",.0f")]  # fmt: skip
    base = alt.Chart(d.filter(~pl.col("evaluated")))
    record = base.mark_point(size=70, filled=True, opacity=0.65).encode(
        x=x, y=y, color=colour, shape=shape, tooltip=tooltip
    )
    # labels alternate above-left and below-right of their marks in order of GPUs, so that labels of
    # neighbouring scales (2x apart: about 80 px) do not run into each other's marks
    ev_rows = d.filter(pl.col("evaluated")).sort("n_gpus")
    ev_rows = ev_rows.with_columns((pl.int_range(pl.len()) % 2 == 0).alias("_left"))
    ev = alt.Chart(ev_rows)
    marks = ev.mark_point(
        size=180, filled=True, opacity=0.8, stroke="black", strokeWidth=1.8
    ).encode(x=x, y=y, color=colour, shape=shape, tooltip=tooltip)
    text_style = {"fontSize": 11, "fontWeight": "bold", "color": "#222222"}
    left = (
        alt.Chart(ev_rows.filter(pl.col("_left")))
        .mark_text(align="right", dx=-13, dy=-13, **text_style)
        .encode(x=x, y=y, text="point_label:N")
    )
    right = (
        alt.Chart(ev_rows.filter(~pl.col("_left")))
        .mark_text(align="left", dx=13, dy=15, **text_style)
        .encode(x=x, y=y, text="point_label:N")
    )
    scope = f"MLPerf Training {rounds}" if rounds else "every MLPerf Training round in the record"
    return alt.layer(record, marks, left, right).properties(
        title=alt.TitleParams(
            f"{benchmark_name(benchmark)}: every published result by scale",
            subtitle=[
                f"{scope}, closed and open division; both axes log scale",
                "colour: accelerator generation; shape: network family (from the systems' descriptions)",
                "large outlined marks: the evaluated results" + (f" ({systems[0]})" if one else ""),
            ],
        ),
        width=560,
        height=360,
    )
