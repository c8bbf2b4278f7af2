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


def time_to_train_by_scale(
    published: pl.DataFrame, systems: list[str], benchmark: str = "gpt3"
) -> alt.HConcatChart:
    """Time to train (left, log axis) and GPU-minutes (right, from zero) against node count.

    One line per system and MLPerf round; a result of another round is its own series.

    Args:
        published: rows of ``data/reference/published_results.csv``
            (:func:`trainperf.compare.load_published_results`) or any frame with system, round,
            benchmark, n_nodes, n_gpus, minutes, verified.
        systems: which systems to show (e.g. ``["SAKURAONE", "Eos"]``), in legend order.
        benchmark: MLPerf benchmark id (titled by its name, e.g. GPT-3 175B).
    """
    d = _series(
        published.filter((pl.col("benchmark") == benchmark) & pl.col("system").is_in(systems))
    ).with_columns((pl.col("minutes") * pl.col("n_gpus")).alias("gpu_minutes"))
    d = d.sort("n_nodes")
    series, colours, shapes = _series_scales(d, systems)
    width = node_axis_width(d["n_nodes"])
    legend = alt.Legend(title="system and MLPerf round", orient="bottom", columns=2)
    base = alt.Chart(d).encode(
        x=node_axis(d["n_nodes"]),
        color=alt.Color(
            "series_label:N",
            scale=alt.Scale(domain=series, range=colours),
            sort=series,
            legend=legend,
        ),
        shape=alt.Shape(
            "series_label:N",
            scale=alt.Scale(domain=series, range=shapes),
            sort=series,
            legend=legend,
        ),
        detail="series_label:N",
        tooltip=[
            "system",
            "round",
            "n_nodes",
            "n_gpus",
            "minutes",
            alt.Tooltip("gpu_minutes:Q", format=",.0f"),
            "verified",
        ],
    )
    line = {"strokeWidth": 2}
    point = alt.OverlayMarkDef(filled=True, size=80)
    ttt = (
        base.mark_line(point=point, **line)
        .encode(y=log_y("minutes:Q", d["minutes"], "time to train (min, log scale)"))
        .properties(title=f"{benchmark_name(benchmark)}: time to train by scale", width=width)
    )
    gm = (
        base.mark_line(point=point, **line)
        .encode(
            y=alt.Y(
                "gpu_minutes:Q",
                title="GPU-minutes = time to train × GPUs",
                scale=alt.Scale(zero=True),
                axis=alt.Axis(format=",.0f"),
            )
        )
        .properties(
            title="GPU-minutes (lower = more efficient per GPU; axis from zero)", width=width
        )
    )
    return alt.hconcat(ttt, gm).resolve_scale(color="shared", shape="shared")


def _ratio_domain(values: list[float]) -> list[float]:
    """A domain centred on 1.0 holding every value, its half-width rounded up to 0.05."""
    dev = max([abs(v - 1.0) for v in values if v is not None and math.isfinite(v)] + [0.05])
    half = math.ceil(dev * 1.15 / 0.05) * 0.05
    return [round(1.0 - half, 4), round(1.0 + half, 4)]


def efficiency_ratio_by_scale(
    table: pl.DataFrame, talk_ratio: float | None = None, talk_benchmark: str = "gpt3"
) -> alt.HConcatChart:
    """Per-GPU efficiency ratio (evaluated / Eos GPU-minutes) by node count, one panel per benchmark.

    Bars diverge from 1.0 on a scale centred on 1.0 (equal room above and below; above 1 = slower per
    GPU). Bars are coloured by what the reference is (a measured or an extrapolated Eos result); where
    an extrapolated reference also has a measured result of another round, that ratio is a diamond.

    Args:
        table: :func:`trainperf.compare.paper_comparison_table` (benchmark, n_nodes, ratio,
            reference_label, reference_extrapolated, ratio_vs_actual).
        talk_ratio: draw a dashed rule at this quoted ratio (config ``published.quoted_ratio``; the demo: 1.28) on the
            ``talk_benchmark`` panel only, or None.
        talk_benchmark: the benchmark the quoted ratio is about.
    """
    bases = [
        "against Eos's measured result",
        "against Eos's extrapolated result",
        "against Eos's measured result of another MLPerf round",
    ]
    d = table.with_columns(
        pl.col("n_nodes").cast(pl.String).alias("nodes"),
        pl.when(pl.col("reference_extrapolated"))
        .then(pl.lit(bases[1]))
        .otherwise(pl.lit(bases[0]))
        .alias("basis_label"),
        pl.lit(1.0).alias("one"),
    )
    other = d.filter(pl.col("ratio_vs_actual").is_not_null()).with_columns(
        pl.lit(bases[2]).alias("basis_label")
    )
    vals = d["ratio"].to_list() + other["ratio_vs_actual"].to_list()
    domain = _ratio_domain(vals + ([talk_ratio] if talk_ratio is not None else []))
    half = domain[1] - 1.0
    tick = 0.1 if half > 0.2 else 0.05
    n = int(round(half / tick))
    colour = alt.Color(
        "basis_label:N",
        title="reference",
        scale=alt.Scale(domain=bases, range=[PALETTE[0], PALETTE[1], "#000000"]),
        legend=alt.Legend(orient="bottom", direction="vertical"),
    )
    panels = []
    for i, bench in enumerate(d["benchmark"].unique(maintain_order=True).to_list()):
        y = alt.Y(
            "ratio:Q",
            title="GPU-minutes ratio, evaluated / Eos" if i == 0 else None,
            scale=alt.Scale(domain=domain, nice=False),
            axis=alt.Axis(format=".2f", values=[round(1 + k * tick, 4) for k in range(-n, n + 1)]),
        )
        db = d.filter(pl.col("benchmark") == bench)
        ob = other.filter(pl.col("benchmark") == bench)
        layers = _ratio_layers(db, ob, y, colour, half)
        if talk_ratio is not None and bench == talk_benchmark:
            layers += _talk_layers(talk_ratio)
        panels.append(
            alt.layer(*layers).properties(
                width=max(150, 75 * db.height), height=340, title=benchmark_name(bench)
            )
        )
    subtitle = "1.0 = equal; above 1 = slower per GPU; ratio on a scale centred on 1.0" + (
        "; dashed: the quoted ratio" if talk_ratio is not None else ""
    )
    return (
        alt.hconcat(*panels)
        .resolve_scale(y="shared")
        .properties(title=alt.Title("Per-GPU efficiency against Eos", subtitle=subtitle))
    )


def _ratio_layers(db: pl.DataFrame, ob: pl.DataFrame, y, colour, half: float) -> list:
    """Bars from 1.0 to each ratio, the ratio written at the bar's end (inside a long bar, outside a
    short one, so it never crosses a rule), the 1.0 rule, and the other-round diamonds."""
    x = alt.X("nodes:N", title="nodes", sort=db["nodes"].to_list(), axis=alt.Axis(labelAngle=0))
    db = db.with_columns(
        pl.col("ratio").round(2).cast(pl.String).alias("ratio_text"),
        (pl.col("ratio") >= 1).alias("up"),
        ((pl.col("ratio") - 1).abs() > 0.18 * half).alias("inside"),
    )
    layers = [
        alt.Chart(db)
        .mark_bar(size=34)
        .encode(
            x=x,
            y=y,
            y2="one:Q",
            color=colour,
            tooltip=[
                "benchmark",
                "n_nodes",
                "reference_label",
                alt.Tooltip("ratio:Q", format=".3f"),
            ],
        )
    ]
    for up in (True, False):
        for inside in (True, False):
            top = (
                up == inside
            )  # text hangs below the value (inside an upward bar, under a downward one)
            layers.append(
                alt.Chart(db)
                .transform_filter(
                    f"datum.up == {str(up).lower()} && datum.inside == {str(inside).lower()}"
                )
                .mark_text(
                    baseline="top" if top else "bottom",
                    dy=5 if top else -5,
                    fontSize=12,
                    fontWeight=600,
                    color="white" if inside else "black",
                )
                .encode(x=x, y="ratio:Q", text="ratio_text:N")
            )
    layers.append(alt.Chart(db).mark_rule(color="black").encode(y="one:Q"))
    if ob.height:
        layers.append(
            alt.Chart(ob)
            .mark_point(
                filled=True, size=110, shape="diamond", stroke="white", strokeWidth=1, opacity=1
            )
            .encode(
                x=x,
                y=alt.Y("ratio_vs_actual:Q"),
                color=colour,
                tooltip=["n_nodes", alt.Tooltip("ratio_vs_actual:Q", format=".3f")],
            )
        )
        # its value beside it (right of the diamond, inside or over the bar)
        layers.append(
            alt.Chart(
                ob.with_columns(
                    pl.col("ratio_vs_actual").round(2).cast(pl.String).alias("other_text")
                )
            )
            .mark_text(align="left", dx=9, fontSize=12, fontWeight=600, color="black")
            .encode(x=x, y=alt.Y("ratio_vs_actual:Q"), text="other_text:N")
        )
    return layers


def _talk_layers(talk_ratio: float) -> list:
    t = pl.DataFrame({"r": [float(talk_ratio)], "rule_label": [f"the quoted ratio {talk_ratio:g}"]})
    return [
        alt.Chart(t)
        .mark_rule(color=RULE_COLOR, strokeDash=[6, 4], strokeWidth=1.5)
        .encode(y="r:Q"),
        alt.Chart(t)
        .mark_text(align="left", baseline="bottom", x=3, dy=-3, color=RULE_COLOR, fontSize=11)
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
