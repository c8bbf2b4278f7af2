"""Charts of profiler-trace analyses, in the theme and export path of :mod:`trainperf.report.charts`.

Functions take the frames of :mod:`trainperf.trace.analysis` and return Altair charts; export them
with :func:`trainperf.report.charts.save_chart` (SVG/PNG/PDF). Titles are translated by
:func:`trainperf.report.charts.localize`, whose :data:`~trainperf.report.charts.JA_PHRASES` this module extends on
import; the category labels inside the data (legend entries, row labels) are not titles, so each
function takes ``lang`` and writes them in that language: save one chart per language,
``save_chart(step_breakdown(sb, lang=l), name, out, langs=[l]) for l in FIGURE_LANGS``.
"""

from __future__ import annotations

import altair as alt
import polars as pl

from trainperf.report import charts as _charts

__all__ = ["step_breakdown", "trace_vs_telemetry"]


def _tr(text: str, lang: str) -> str:
    """A data label in ``lang`` (only ``ja`` has translations; unknown text stays English)."""
    if lang == "en":
        return text
    if lang != "ja":
        raise ValueError(f"unknown figure language {lang!r}; known: en, ja")
    return _LABELS_JA.get(text, text)


# Titles and axis titles: translated by trainperf.report.charts.localize for every exported figure.
_charts.JA_PHRASES.update(
    {
        "Where the GPU time of each profiled step goes": "プロファイルした各ステップの GPU 時間の内訳",
        "share of the step's GPU time": "ステップの GPU 時間に占める割合",
        "profiler step": "プロファイラのステップ",
        "Trace and DCGM over the same seconds": "同じ時間帯のトレースと DCGM",
        "share of the window": "時間窓に占める割合",
        "one dot per telemetry sample": "テレメトリのサンプルごとに 1 点",
        "what runs": "実行中の処理",
    }
)

# Data labels (legend entries, row labels), translated by _tr only: too generic for JA_PHRASES,
# which applies to the titles of every chart.
_LABELS_JA = {
    "compute kernels": "計算カーネル",
    "communication, not overlapped": "通信 (重なりなし)",
    "memory copies and sets": "メモリコピー・セット",
    "other GPU activity": "その他の GPU 処理",
    "GPU idle": "GPU アイドル",
    "trace: any GPU activity": "トレース: GPU 処理あり",
    "trace: compute kernels": "トレース: 計算カーネル",
    "trace: GEMM and attention kernels": "トレース: GEMM・アテンションカーネル",
    "DCGM: graphics engine active": "DCGM: グラフィックスエンジン活動率",
    "DCGM: SM active": "DCGM: SM 活動率",
    "DCGM: tensor pipe active": "DCGM: Tensor パイプ活動率",
    "(last)": "(最後)",
    "rank": "ランク",
    "step": "ステップ",
}

_PARTS = [
    ("compute_share", "compute kernels"),
    ("comm_exposed_share", "communication, not overlapped"),
    ("memory_exposed_share", "memory copies and sets"),
    ("other_exposed_share", "other GPU activity"),
    ("idle_share", "GPU idle"),
]


def step_breakdown(
    sb: pl.DataFrame,
    *,
    lang: str = "en",
    title: str = "Where the GPU time of each profiled step goes",
) -> alt.Chart:
    """Stacked bars per (rank, step): compute, exposed communication, copies, other, idle (0-100 %).

    Args:
        sb: :func:`trainperf.trace.step_breakdown` (the partition columns ``*_share``).
        lang: language of the row and legend labels (``en`` or ``ja``).
    """
    parts = [(c, _tr(n, lang)) for c, n in _PARTS]
    long = (
        sb.with_columns(
            pl.format(_tr("rank", lang) + " {} " + _tr("step", lang) + " {}", "rank", "step").alias(
                "label"
            ),
            pl.when(pl.col("complete"))
            .then(pl.lit(""))
            .otherwise(pl.lit(" " + _tr("(last)", lang)))
            .alias("_last"),
        )
        .with_columns(pl.concat_str("label", "_last").alias("label"))
        .unpivot(
            index=["label", "rank", "step"],
            on=[c for c, _ in _PARTS],
            variable_name="part",
            value_name="share",
        )
        .with_columns(
            pl.col("part").replace_strict(dict(parts)).alias("what"),
            pl.col("part").replace_strict({c: i for i, (c, _) in enumerate(parts)}).alias("order"),
        )
    )
    return (
        alt.Chart(long)
        .mark_bar()
        .encode(
            y=alt.Y("label:N", title="profiler step", sort=None),
            x=alt.X(
                "share:Q",
                title="share of the step's GPU time",
                axis=alt.Axis(format="%"),
                scale=alt.Scale(domain=[0, 1]),
            ),
            color=alt.Color(
                "what:N",
                title="what runs",
                sort=[n for _, n in parts],
                scale=alt.Scale(
                    domain=[n for _, n in parts],
                    range=["#1f4e79", "#c03d3e", "#d9822b", "#7f5fa8", "#bfbfbf"],
                ),
            ),
            order=alt.Order("order:Q"),
            tooltip=["label", "what", alt.Tooltip("share:Q", format=".2%")],
        )
        .properties(width=560, title=title)
    )


_MEASURES = [
    ("busy_share", "trace: any GPU activity"),
    ("gr_engine_active", "DCGM: graphics engine active"),
    ("compute_share", "trace: compute kernels"),
    ("sm_active", "DCGM: SM active"),
    ("matmul_share", "trace: GEMM and attention kernels"),
    ("tensor_active", "DCGM: tensor pipe active"),
]


def trace_vs_telemetry(
    mt: pl.DataFrame, *, lang: str = "en", title: str = "Trace and DCGM over the same seconds"
) -> alt.LayerChart:
    """Dot plot: per telemetry window, the trace's shares beside the DCGM activities (0-100 %).

    Args:
        mt: :func:`trainperf.trace.match_telemetry`.
        lang: language of the row labels (``en`` or ``ja``).
    """
    measures = [(c, _tr(n, lang)) for c, n in _MEASURES]
    cols = [c for c, _ in measures if c in mt.columns]
    long = (
        mt.unpivot(index=["timestamp"], on=cols, variable_name="m", value_name="value")
        .filter(pl.col("value").is_not_null())
        .with_columns(pl.col("m").replace_strict(dict(measures)).alias("measure"))
    )
    order = [n for _, n in measures]
    y = alt.Y("measure:N", title=None, sort=order)
    dots = (
        alt.Chart(long)
        .mark_circle(size=70, opacity=0.7)
        .encode(
            y=y,
            x=alt.X(
                "value:Q",
                title="share of the window",
                axis=alt.Axis(format="%"),
                scale=alt.Scale(domain=[0, 1]),
            ),
            color=alt.Color("measure:N", sort=order, legend=None),
            tooltip=[
                alt.Tooltip("timestamp:T", format="%H:%M:%S.%L", formatType="utc"),
                "measure",
                alt.Tooltip("value:Q", format=".3f"),
            ],
        )
    )
    means = (
        alt.Chart(long)
        .mark_tick(thickness=2, size=24, color="black")
        .encode(y=y, x=alt.X("mean(value):Q"))
    )
    return alt.layer(dots, means).properties(
        width=560, title=f"{title}: one dot per telemetry sample"
    )
