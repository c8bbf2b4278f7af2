"""Charts of the comparison with NVIDIA Eos: time to train and GPU time by scale, the per-GPU ratio, MFU.

Honest scales: GPU-minutes from zero; ratios on a scale centred on 1.0 (diverging from 1.0, equal
distance above and below); node counts on a log-2 axis with a tick at every node count shown; one
series per system and MLPerf round (results of different rounds are never joined by a line).
"""

from __future__ import annotations

import math

import altair as alt
import polars as pl

from trainperf.report.charts.theme import (
    PALETTE,
    RULE_COLOR,
    benchmark_name,
    log_y,
    node_axis,
    node_axis_width,
)

__all__ = [
    "ARROW_SHARE",
    "RATIO_BASES",
    "KIND_LABELS",
    "KIND_SHAPES",
    "comparison_ratio_by_gpus",
    "efficiency_ratio_by_scale",
    "mfu_by_scale",
    "time_to_train_by_scale",
]

_SHAPES = ["circle", "square", "triangle-up", "diamond", "cross", "triangle-down", "wedge"]


def _series(df: pl.DataFrame) -> pl.DataFrame:
    """``series_label`` = "<system> <round>" (+ " (unverified)"), one per system and MLPerf round."""
    unverified = (
        pl.when(pl.col("verified")).then(pl.lit("")).otherwise(pl.lit(" (unverified)"))
        if "verified" in df.columns
        else pl.lit("")
    )
    return df.with_columns(
        (pl.col("system") + " " + pl.col("round") + unverified).alias("series_label")
    )


def _series_scales(df: pl.DataFrame, systems: list[str]) -> tuple[list[str], list[str], list[str]]:
    """Series in a stable order (systems as given, then round), a colour and a shape for each."""
    order = (
        df.select("system", "round", "series_label")
        .unique()
        .with_columns(
            pl.col("system")
            .replace_strict({s: i for i, s in enumerate(systems)}, default=len(systems))
            .alias("_o")
        )
        .sort("_o", "round")
    )
    series = order["series_label"].to_list()
    colours = [PALETTE[i % len(PALETTE)] for i in range(len(series))]
    shapes = [_SHAPES[i % len(_SHAPES)] for i in range(len(series))]
    return series, colours, shapes


def _segments(d: pl.DataFrame) -> pl.Series:
    """``segment``: a line id per series that breaks wherever the series skips a node count shown.

    A line joins two results of one series only where no node count of the chart lies between
    them: Eos's Llama 2 LoRA line does not run through 64 and 96 nodes, where Eos has no run.
    Presentation only (which marks a line joins), no number is computed.
    """
    shown = sorted(set(d["n_nodes"].to_list()))
    pos = {n: i for i, n in enumerate(shown)}
    out: list[str] = []
    last: dict[str, tuple[int, int]] = {}  # series -> (position of its last node, segment number)
    for label, n in zip(d["series_label"].to_list(), d["n_nodes"].to_list(), strict=True):
        prev = last.get(label)
        seg = 0 if prev is None else prev[1] + (pos[n] > prev[0] + 1)
        last[label] = (pos[n], seg)
        out.append(f"{label} #{seg}")
    return pl.Series("segment", out, dtype=pl.String)


def time_to_train_by_scale(
    published: pl.DataFrame, systems: list[str], benchmark: str = "gpt3"
) -> alt.HConcatChart:
    """Time to train (left, log axis) and GPU-minutes (right, from zero) against node count.

    One line per system and MLPerf round; a result of another round is its own series. A line
    never runs through a node count shown where its series has no result (:func:`_segments`).
    Marks are filled for a result recomputed from its MLPerf logs and hollow for a transcribed one
    (column ``source``: ``logs`` or ``transcribed``; a frame without it: every mark filled).

    Args:
        published: rows of ``data/reference/published_results.csv``
            (:func:`trainperf.compare.load_published_results`) or any frame with system, round,
            benchmark, n_nodes, n_gpus, minutes, verified; optionally ``source`` (``logs`` or
            ``transcribed``, :func:`trainperf.compare.scaling.scaling_points`, whose
            ``time_to_train_min`` is used for ``minutes`` where ``minutes`` is absent).
        systems: which systems to show (e.g. ``["SAKURAONE", "Eos"]``), in legend order.
        benchmark: MLPerf benchmark id (titled by its name, e.g. GPT-3 175B).
    """
    src = published
    if "minutes" not in src.columns and "time_to_train_min" in src.columns:
        src = src.with_columns(pl.col("time_to_train_min").alias("minutes"))
    if "verified" not in src.columns:
        src = src.with_columns(pl.lit(True).alias("verified"))
    if "source" not in src.columns:
        src = src.with_columns(pl.lit("logs").alias("source"))
    d = _series(
        src.filter((pl.col("benchmark") == benchmark) & pl.col("system").is_in(systems))
    ).with_columns((pl.col("minutes") * pl.col("n_gpus")).alias("gpu_minutes"))
    d = d.sort("n_nodes")
    d = d.with_columns(_segments(d))
    # transcribed (hollow, larger) marks drawn first, the recomputed ones on top: a transcribed time
    # equal to a measured one (SAKURAONE's 64-node 58.30 min on Eos v3.1's) shows as a ring around
    # the filled mark instead of hiding under it, and a hollow triangle keeps a visible inside
    d = d.sort(pl.col("source") == "logs", "n_nodes", maintain_order=True)
    series, colours, shapes = _series_scales(d, systems)
    width = node_axis_width(d["n_nodes"])
    legend = alt.Legend(title="system and MLPerf round", orient="bottom", columns=2)
    colour_scale = alt.Scale(domain=series, range=colours)
    base = alt.Chart(d).encode(
        x=node_axis(d["n_nodes"]),
        color=alt.Color("series_label:N", scale=colour_scale, sort=series, legend=legend),
        tooltip=[
            "system",
            "round",
            "n_nodes",
            "n_gpus",
            "minutes",
            alt.Tooltip("gpu_minutes:Q", format=",.0f"),
            "source",
        ],
    )
    marks = {
        "shape": alt.Shape(
            "series_label:N",
            scale=alt.Scale(domain=series, range=shapes),
            sort=series,
            legend=legend,
        ),
        # filled in the series' colour when recomputed from logs, hollow (white) when transcribed
        "fill": alt.condition(
            "datum.source == 'logs'",
            alt.Color("series_label:N", scale=colour_scale, sort=series, legend=None),
            alt.value("white"),
        ),
        "opacity": alt.value(1),
        "size": alt.condition("datum.source == 'logs'", alt.value(90), alt.value(200)),
    }

    def panel(y: alt.Y, title: str) -> alt.LayerChart:
        lines = base.mark_line(strokeWidth=2).encode(y=y, detail="segment:N")
        points = base.mark_point(strokeWidth=2).encode(y=y, **marks)
        return alt.layer(lines, points).properties(title=title, width=width)

    ttt = panel(
        log_y("minutes:Q", d["minutes"], "time to train (min, log scale)"),
        f"{benchmark_name(benchmark)}: time to train by scale",
    )
    gm = panel(
        alt.Y(
            "gpu_minutes:Q",
            title="GPU-minutes = time to train × GPUs",
            scale=alt.Scale(zero=True),
            axis=alt.Axis(format=",.0f"),
        ),
        "GPU-minutes (lower = more efficient per GPU; axis from zero)",
    )
    return (
        alt.hconcat(ttt, gm)
        .resolve_scale(color="shared", shape="shared")
        .properties(
            # a title of its own: Vega draws no subtitle under an empty title
            title=alt.Title(
                "filled mark: recomputed from its MLPerf logs; hollow mark: transcribed",
                fontSize=13,
                fontWeight="normal",
            )
        )
    )


#: What each bar of :func:`efficiency_ratio_by_scale` compares with, in order of weight (legend
#: order): a measured Eos result first, a transcribed time that the checks leave unconfirmed, then an
#: extrapolated Eos time. Fill, stroke and dash of each.
RATIO_BASES = {
    "measured": ("against Eos's measured result, same MLPerf round", PALETTE[0], PALETTE[0], []),
    "measured_other": (
        "against Eos's measured result of an older MLPerf round",
        PALETTE[5],
        PALETTE[0],
        [],
    ),
    "unconfirmed": (
        "unconfirmed: the evaluated time equals an Eos score",
        "#D9E8F5",
        PALETTE[0],
        [4, 3],
    ),
    "extrapolated": ("against an Eos time extrapolated from 64 nodes", "white", "#555555", [6, 4]),
}


def _ratio_domain(values: list[float]) -> list[float]:
    """From just below the smaller of 1.0 and the smallest value to just above the largest, on
    0.05 steps: the bars start at 1.0 and no half of the frame is left empty."""
    vals = [v for v in values if v is not None and math.isfinite(v)] + [1.0]
    lo = math.floor((min(vals) - 0.02) / 0.05) * 0.05
    hi = math.ceil((max(vals) + 0.03) / 0.05) * 0.05
    return [round(lo, 4), round(hi, 4)]


def efficiency_ratio_by_scale(
    table: pl.DataFrame, talk_ratio: float | None = None, talk_benchmark: str = "gpt3"
) -> alt.HConcatChart:
    """Per-GPU efficiency ratio (evaluated / Eos GPU-minutes) by node count, one panel per benchmark.

    Bars rise from the parity rule at 1.0 (above 1 = more GPU time than Eos). Each bar says what
    it compares with (:data:`RATIO_BASES`): a measured Eos result is a solid bar; where an Eos time
    was extrapolated, the measured result of another round at that scale stands beside it as its
    own solid bar and the extrapolated one is hollow with a dashed outline; a row whose evaluated
    time the checks leave unconfirmed (column ``evaluated_unconfirmed``, True) is a pale bar with a
    dashed outline. The y range runs from just under 1.0 to just over the largest value.

    Args:
        table: :func:`trainperf.compare.paper_comparison_table` (benchmark, n_nodes, ratio,
            reference_label, reference_extrapolated, ratio_vs_actual), optionally with
            ``evaluated_unconfirmed`` (Boolean; e.g. the rows whose ``duplicate_time`` check of
            :func:`trainperf.compare.consistency_checks` fails).
        talk_ratio: draw a dashed rule at this quoted ratio (config ``published.quoted_ratio``; the demo: 1.28) on the
            ``talk_benchmark`` panel only, labelled as a quoted ratio with no stated definition, or None.
        talk_benchmark: the benchmark the quoted ratio is about.
    """
    unconfirmed = (
        pl.col("evaluated_unconfirmed").fill_null(False)
        if "evaluated_unconfirmed" in table.columns
        else pl.lit(False)
    )
    main = table.select(
        "benchmark",
        "n_nodes",
        "ratio",
        "reference_label",
        pl.when(pl.col("reference_extrapolated"))
        .then(pl.lit("extrapolated"))
        .when(unconfirmed)
        .then(pl.lit("unconfirmed"))
        .otherwise(pl.lit("measured"))
        .alias("basis"),
    )
    other = table.filter(pl.col("ratio_vs_actual").is_not_null()).select(
        "benchmark",
        "n_nodes",
        pl.col("ratio_vs_actual").alias("ratio"),
        pl.lit("Eos, measured, older round").alias("reference_label"),
        pl.lit("measured_other").alias("basis"),
    )
    order = list(RATIO_BASES)
    d = (
        pl.concat([main, other])
        .with_columns(
            pl.col("n_nodes").cast(pl.String).alias("nodes"),
            pl.col("basis")
            .replace_strict({k: v[0] for k, v in RATIO_BASES.items()})
            .alias("basis_label"),
            pl.col("basis").replace_strict({k: i for i, k in enumerate(order)}).alias("_o"),
            pl.col("ratio").round(2).cast(pl.String).alias("ratio_text"),
            pl.lit(1.0).alias("one"),
        )
        .with_columns(
            # one x slot per bar, labelled by its node count (two bars at a scale: two slots)
            (pl.col("nodes") + "|" + pl.col("basis")).alias("slot"),
            pl.col("benchmark")
            .replace_strict(
                {b: i for i, b in enumerate(table["benchmark"].unique(maintain_order=True))}
            )
            .alias("_b"),
        )
        .sort("_b", "n_nodes", "_o")
    )
    shown = [k for k in order if k in set(d["basis"].to_list())]
    labels = [RATIO_BASES[k][0] for k in shown]
    domain = _ratio_domain(d["ratio"].to_list() + ([talk_ratio] if talk_ratio is not None else []))
    tick = 0.1 if domain[1] - domain[0] > 0.45 else 0.05
    ticks = [
        round(domain[0] + k * tick, 4)
        for k in range(int(round((domain[1] - domain[0]) / tick)) + 1)
    ]
    fill = alt.Color(
        "basis_label:N",
        title="the bar compares with",
        scale=alt.Scale(domain=labels, range=[RATIO_BASES[k][1] for k in shown]),
        sort=labels,
        legend=alt.Legend(orient="bottom", direction="vertical", labelLimit=600, symbolSize=200),
    )
    stroke = alt.Stroke(
        "basis_label:N",
        scale=alt.Scale(domain=labels, range=[RATIO_BASES[k][2] for k in shown]),
        sort=labels,
        legend=None,
    )
    dash = alt.StrokeDash(
        "basis_label:N",
        scale=alt.Scale(domain=labels, range=[RATIO_BASES[k][3] for k in shown]),
        sort=labels,
        legend=None,
    )
    panels = []
    for i, bench in enumerate(d["benchmark"].unique(maintain_order=True).to_list()):
        db = d.filter(pl.col("benchmark") == bench)
        y = alt.Y(
            "ratio:Q",
            title="GPU-time ratio, evaluated / Eos" if i == 0 else None,
            scale=alt.Scale(domain=domain, nice=False, zero=False),
            axis=alt.Axis(format=".2f", values=ticks),
        )
        x = alt.X(
            "slot:N",
            title="nodes",
            sort=db["slot"].to_list(),
            scale=alt.Scale(paddingInner=0.25),
            axis=alt.Axis(labelAngle=0, labelExpr="split(datum.label, '|')[0]"),
        )
        bars = (
            alt.Chart(db)
            .mark_bar(strokeWidth=2, clip=True)
            .encode(
                x=x,
                y=y,
                y2="one:Q",
                fill=fill,
                stroke=stroke,
                strokeDash=dash,
                tooltip=[
                    "benchmark",
                    "n_nodes",
                    "reference_label",
                    alt.Tooltip("ratio:Q", format=".3f"),
                ],
            )
        )
        # a value label above its bar, or just inside the bar's top where above it would sit on
        # the quoted ratio's dashed line (the label is ~24 px of the plot's 320 px high)
        near = (domain[1] - domain[0]) * 24 / 320
        quoted = talk_ratio if talk_ratio is not None and bench == talk_benchmark else None
        db = db.with_columns(
            (
                pl.lit(quoted is not None)
                & (pl.lit(quoted or 0.0) - pl.col("ratio")).is_between(0, near)
            ).alias("label_inside")
        )
        text = [
            alt.Chart(db)
            .transform_filter(f"{'' if inside else '!'}datum.label_inside")
            .mark_text(
                baseline="top" if inside else "bottom",
                dy=4 if inside else -4,
                fontSize=14,
                fontWeight=700,
                color="black",
            )
            .encode(x=x, y="ratio:Q", text="ratio_text:N")
            for inside in (False, True)
        ]
        layers = [bars, *text] + _parity_layers(db.head(1))
        if talk_ratio is not None and bench == talk_benchmark:
            layers += _talk_layers(talk_ratio)
        n_bars = db.height
        panels.append(
            alt.layer(*layers).properties(
                width=max(150, 70 * n_bars), height=320, title=benchmark_name(bench)
            )
        )
    subtitle = ["above 1.0: more GPU time than Eos for the same training"]
    if talk_ratio is not None:
        subtitle.append("dashed line: the ratio quoted in the talk, with no stated definition")
    return (
        alt.hconcat(*panels)
        .resolve_scale(y="shared")
        .properties(title=alt.Title("Per-GPU efficiency against Eos", subtitle=subtitle))
    )


def _parity_layers(one_row: pl.DataFrame) -> list:
    """The parity rule at 1.0, labelled."""
    t = one_row.select(pl.lit(1.0).alias("one"), pl.lit("parity with Eos").alias("parity_label"))
    return [
        alt.Chart(t).mark_rule(color="black", strokeWidth=1.5).encode(y="one:Q"),
        alt.Chart(t)
        .mark_text(align="right", baseline="top", x="width", dx=-3, dy=4, fontSize=12)
        .encode(y="one:Q", text="parity_label:N"),
    ]


def _talk_layers(talk_ratio: float) -> list:
    t = pl.DataFrame(
        {"r": [float(talk_ratio)], "rule_label": [f"talk: {talk_ratio:g}, definition not stated"]}
    )
    return [
        alt.Chart(t)
        .mark_rule(color=RULE_COLOR, strokeDash=[6, 4], strokeWidth=1.5)
        .encode(y="r:Q"),
        alt.Chart(t)
        .mark_text(align="left", baseline="bottom", x=3, dy=-3, color=RULE_COLOR, fontSize=12)
        .encode(y="r:Q", text="rule_label:N"),
    ]


def mfu_by_scale(
    frame: pl.DataFrame, accelerator_label: str = "H100 SXM", systems: list[str] | None = None
) -> alt.LayerChart:
    """MFU by node count: against the dense peak of the precision the run used (primary, solid) and
    against the other precision's peak (secondary: thin, dashed, hollow points, labelled as such).

    Args:
        frame: columns system, round, n_nodes, mfu_bf16_dense, mfu_fp8_dense (fractions 0-1),
            verified, precision ("fp8" or "bf16", the datatype the run computed in; a missing column
            or null means BF16).
        accelerator_label: named in the axis title with the precision of each peak.
        systems: legend order of the systems (default: as they come).
    """
    d = frame
    if "precision" not in d.columns:
        d = d.with_columns(pl.lit("bf16").alias("precision"))
    d = _series(d.with_columns(pl.col("precision").fill_null("bf16").str.to_lowercase()))
    used = sorted(d["precision"].unique().to_list())
    one = len(used) == 1
    p_used = used[0].upper() if one else None
    p_other = ("BF16" if used[0] == "fp8" else "FP8") if one else None
    primary = (
        f"{p_used} dense peak: the precision the runs used"
        if one
        else "dense peak of the run's precision"
    )
    secondary = (
        f"{p_other} dense peak: secondary, for comparison"
        if one
        else "dense peak of the other precision: secondary, for comparison"
    )
    fp8 = pl.col("precision") == "fp8"
    d = pl.concat(
        [
            d.with_columns(
                pl.when(fp8).then("mfu_fp8_dense").otherwise("mfu_bf16_dense").alias("mfu"),
                pl.lit(primary).alias("against_label"),
                pl.when(fp8).then(pl.lit("FP8")).otherwise(pl.lit("BF16")).alias("peak"),
            ),
            d.with_columns(
                pl.when(fp8).then("mfu_bf16_dense").otherwise("mfu_fp8_dense").alias("mfu"),
                pl.lit(secondary).alias("against_label"),
                pl.when(fp8).then(pl.lit("BF16")).otherwise(pl.lit("FP8")).alias("peak"),
            ),
        ]
    ).filter(pl.col("mfu").is_not_null())
    series, colours, shapes = _series_scales(
        d, systems or d["system"].unique(maintain_order=True).to_list()
    )
    colour = alt.Color(
        "series_label:N",
        title="system and MLPerf round",
        scale=alt.Scale(domain=series, range=colours),
        sort=series,
        legend=alt.Legend(orient="bottom", columns=2, symbolType="circle"),
    )
    x = node_axis(d["n_nodes"])
    y = alt.Y(
        "mfu:Q",
        title=f"MFU (model FLOPs / {accelerator_label} dense peak)",
        scale=alt.Scale(domain=[0, 1]),
        axis=alt.Axis(format="%"),
    )
    dash = alt.StrokeDash(
        "against_label:N",
        title="MFU against",
        scale=alt.Scale(domain=[primary, secondary], range=[[1, 0], [5, 4]]),
        legend=alt.Legend(
            orient="bottom", symbolType="stroke", symbolStrokeWidth=2.5, symbolSize=500
        ),
    )
    tooltip = ["system", "round", "n_nodes", "peak", alt.Tooltip("mfu:Q", format=".1%")]
    main = alt.Chart(d.filter(pl.col("against_label") == primary))
    sec = alt.Chart(d.filter(pl.col("against_label") == secondary))
    layers = [
        sec.mark_line(strokeWidth=1.3, opacity=0.7).encode(
            x=x, y=y, color=colour, strokeDash=dash, detail="series_label:N"
        ),
        sec.mark_point(filled=False, size=45, opacity=0.8).encode(
            x=x, y=y, color=alt.Color("series_label:N", legend=None), tooltip=tooltip
        ),
        main.mark_line(strokeWidth=2.8).encode(
            x=x, y=y, color=colour, strokeDash=dash, detail="series_label:N"
        ),
        main.mark_point(filled=True, size=80, opacity=1).encode(
            x=x, y=y, color=alt.Color("series_label:N", legend=None), tooltip=tooltip
        ),
    ]
    return alt.layer(*layers).properties(
        title=alt.Title(
            "GPT-3 175B model FLOPs utilization by scale (step level)",
            subtitle="solid: the precision the runs used; dashed: the other precision, for comparison",
        ),
        width=node_axis_width(d["n_nodes"], minimum=560),
        height=340,
    )


#: How :func:`comparison_ratio_by_gpus` labels each kind of reference of ``comparison.csv``: its
#: ``reference_kind``, an extrapolation split by the side of its one-sided bound (beyond the largest
#: measured scale ``ratio_high`` = ``ratio``, an upper bound; below the smallest ``ratio_low`` =
#: ``ratio``, a lower bound: :func:`trainperf.compare.evaluated._bounds`).
KIND_LABELS = {
    "measured": "reference measured at this GPU count",
    "interpolated": "reference interpolated (power law between two measured scales)",
    "extrapolated_upper": "reference extrapolated beyond its largest run: ratio at most this",
    "extrapolated_lower": "reference extrapolated below its smallest run: ratio at least this",
    "cross-generation": "another accelerator generation, measured at this GPU count",
    "bounds": "no point estimate: bounds from measured scales more than 4x apart",
    "bounds_upper": "bound from the largest measured scale below: ratio at most this",
    "bounds_lower": "bound from the smallest measured scale above: ratio at least this",
}
#: Marker of each kind: an extrapolation's triangle points to the bound's open side.
KIND_SHAPES = {
    "measured": "circle",
    "interpolated": "circle",
    "extrapolated_upper": "triangle-down",
    "extrapolated_lower": "triangle-up",
    "cross-generation": "diamond",
    "bounds": "circle",
    "bounds_upper": "triangle-down",
    "bounds_lower": "triangle-up",
}
#: Length of an extrapolation's arrow toward its open side, as a share of the y axis.
ARROW_SHARE = 0.1


def _bound_text(r: dict) -> str | None:
    """``≤ 0.97`` for an upper bound, ``≥ 0.45`` for a lower one (two decimals), else None."""
    sign = {"extrapolated_upper": "≤", "extrapolated_lower": "≥", "bounds_upper": "≤",
            "bounds_lower": "≥"}.get(r["kind"])  # fmt: skip
    return f"{sign} {r['ratio']:.2f}" if sign else None


def comparison_ratio_by_gpus(comparison: pl.DataFrame) -> alt.HConcatChart:
    """The per-GPU GPU-time ratio of ``comparison.csv`` by GPU count, one panel per benchmark.

    A point per result (colour and shape: measured, interpolated or extrapolated reference) on a
    scale from zero with a rule at 1.0 (above 1: more GPU time than the reference). An interpolated
    point has a vertical bar from ``ratio_low`` to ``ratio_high``, its two measured neighbours'
    bounds. An extrapolated point is a one-sided bound: a triangle pointing to the open side, a
    dashed arrow of :data:`ARROW_SHARE` of the axis that way and the label ``≤ 0.97`` (beyond the
    largest measured scale: the ratio is at most this) or ``≥ 0.45`` (below the smallest: at
    least this) on the closed side; the legend says which. Rows without a ratio are left out.

    Args:
        comparison: :data:`trainperf.compare.COMPARISON_SCHEMA` frame.
    """
    # the record's bounds-only rows (trainperf.compare.like_for_like): two bounds draw a bar and no
    # point; one bound is drawn as the one-sided bound it is, at the bound
    one_side = pl.col("reference_kind").is_in(["extrapolated", "bounds"]) & (
        pl.col("ratio_low").is_null() | pl.col("ratio_high").is_null()
    )
    prefix = pl.col("reference_kind")
    kind = (
        pl.when(~one_side)
        .then(pl.col("reference_kind"))
        .when(pl.col("ratio_low").is_null())
        .then(pl.concat_str(prefix, pl.lit("_upper")))
        .otherwise(pl.concat_str(prefix, pl.lit("_lower")))
    )
    d = (
        comparison.filter(
            pl.col("ratio").is_not_null()
            | (
                (pl.col("reference_kind") == "bounds")
                & (pl.col("ratio_low").is_not_null() | pl.col("ratio_high").is_not_null())
            )
        )  # fmt: skip
        .with_columns(kind.alias("kind"))
        .with_columns(
            pl.when(pl.col("kind") == "bounds_upper")
            .then(pl.col("ratio_high"))
            .when(pl.col("kind") == "bounds_lower")
            .then(pl.col("ratio_low"))
            .otherwise(pl.col("ratio"))
            .alias("ratio")
        )
        .with_columns(
            pl.col("n_gpus").cast(pl.String).alias("gpus"),
            pl.col("kind").replace_strict(KIND_LABELS, default=None).alias("kind_label"),
            pl.coalesce("ratio_low", "ratio").alias("lo"),
            pl.coalesce("ratio_high", "ratio").alias("hi"),
        )
    )
    # the axis holds every point, bar and lower bound's arrow (ratio + ARROW_SHARE of the axis)
    finite = [v for v in d["hi"].to_list() if v is not None and math.isfinite(v)]
    lower = d.filter(pl.col("kind").str.ends_with("_lower"))["ratio"].to_list()
    top = max(finite + [v / (1 - ARROW_SHARE) / 1.15 for v in lower] + [1.0])
    domain = [0.0, math.ceil(top * 1.15 / 0.25) * 0.25]  # from zero: an honest baseline
    arrow = ARROW_SHARE * domain[1]
    d = d.with_columns(
        pl.when(pl.col("kind").str.ends_with("_upper"))
        .then(pl.max_horizontal(pl.col("ratio") - arrow, 0.0))
        .when(pl.col("kind").str.ends_with("_lower"))
        .then(pl.min_horizontal(pl.col("ratio") + arrow, domain[1]))
        .alias("tip"),
        pl.struct("kind", "ratio")
        .map_elements(_bound_text, return_dtype=pl.String)
        .alias("bound_text"),
    )
    # the legend names only the kinds drawn, each kind keeping its colour and shape
    present = set(d["kind"].drop_nulls().to_list())
    keys = [k for k in KIND_LABELS if k in present]
    colours = dict(
        zip(KIND_LABELS, [*PALETTE[:3], PALETTE[2], PALETTE[5], PALETTE[4], PALETTE[4], PALETTE[4]],
            strict=True)
    )  # fmt: skip
    legend = alt.Legend(orient="bottom", direction="vertical")
    colour = alt.Color(
        "kind_label:N",
        title="reference",
        scale=alt.Scale(domain=[KIND_LABELS[k] for k in keys], range=[colours[k] for k in keys]),
        legend=legend,
    )
    shape = alt.Shape(
        "kind_label:N",
        title="reference",
        scale=alt.Scale(
            domain=[KIND_LABELS[k] for k in keys], range=[KIND_SHAPES[k] for k in keys]
        ),
        legend=legend,
    )
    panels = []
    for i, bench in enumerate(d["benchmark"].unique(maintain_order=True).to_list()):
        db = d.filter(pl.col("benchmark") == bench).sort("n_gpus")
        order = db["gpus"].unique(maintain_order=True).to_list()
        x = alt.X("gpus:O", title="GPUs", sort=order, axis=alt.Axis(labelAngle=0))
        y = alt.Y(
            "ratio:Q",
            title="GPU-time ratio at equal GPU count" if i == 0 else None,
            scale=alt.Scale(domain=domain, nice=False),
            axis=alt.Axis(format=".2f"),
        )
        base = alt.Chart(db)
        one = alt.Chart(pl.DataFrame({"one": [1.0]})).mark_rule(color=RULE_COLOR).encode(y="one:Q")
        bars = (
            base.transform_filter((alt.datum.kind == "interpolated") | (alt.datum.kind == "bounds"))
            .mark_rule(strokeWidth=2)
            .encode(x=x, y=alt.Y("lo:Q"), y2="hi:Q", color=colour)
        )
        one_sided = base.transform_filter(alt.datum.tip != None)  # noqa: E711 (Vega null)
        arrows = one_sided.mark_rule(strokeWidth=2, strokeDash=[4, 3]).encode(
            x=x, y=alt.Y("ratio:Q"), y2="tip:Q", color=colour
        )
        # the label on the closed side: above an upper bound, below a lower one
        texts = [
            one_sided.transform_filter(f"indexof(datum.kind, '{k}') >= 0")
            .mark_text(dy=dy, fontSize=11, baseline=base_line)
            .encode(x=x, y=alt.Y("ratio:Q"), text="bound_text:N", color=colour)
            for k, dy, base_line in (("_upper", -9, "bottom"), ("_lower", 9, "top"))
        ]  # extrapolated_* and the record's bounds_*: one layer per side
        points = base.mark_point(filled=True, size=70, opacity=1).encode(
            x=x,
            y=y,
            color=colour,
            shape=shape,
            tooltip=[
                alt.Tooltip("ratio:Q", format=".3f"),
                alt.Tooltip("lo:Q", format=".3f"),
                alt.Tooltip("hi:Q", format=".3f"),
            ],
        )
        panels.append(
            alt.layer(one, bars, arrows, *texts, points).properties(
                width=max(150, 60 * len(order)), height=300, title=benchmark_name(bench)
            )
        )
    return alt.hconcat(*panels).resolve_scale(y="shared")
