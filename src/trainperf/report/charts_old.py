"""Altair charts behind one theme, their offline display and their export.

Every chart of the report is a function here that takes the frames the analysis modules return and
gives back an ``alt.Chart``; no analysis happens in this module and none in the notebooks.

Display: :func:`enable` registers the ``trainperf`` renderer, whose output carries

* ``text/html``: an interactive chart with the Vega, Vega-Lite and vega-embed JavaScript inlined from
  the ``vl-convert-python`` package (``vl_convert.javascript_bundle``), so that a page shows its
  charts with no network access (no CDN script tag); the bundle runs once per page;
* ``image/png``: a static image, for PDF outputs and viewers without JavaScript.

Export: :func:`save_chart` writes SVG, PNG (2x) and PDF with vl-convert, atomically.
"""

from __future__ import annotations

import base64
import html
import json
import os
import tempfile
import uuid
from collections.abc import Iterable
from pathlib import Path

import altair as alt
import polars as pl

__all__ = [
    "THEME",
    "enable",
    "save_chart",
    "time_to_train_runs",
    "eval_curve",
]

THEME = "trainperf"
FONT = "DejaVu Sans, Liberation Sans, Arial, sans-serif"
#: Font of each figure language. Japanese needs a CJK font named explicitly: with a generic family
#: vl-convert falls back to a face without the glyphs (Debian package fonts-noto-cjk provides it).
FONTS = {"en": FONT, "ja": "Noto Sans CJK JP"}
#: Languages every exported figure is written in (``figures/<name>.*`` for English,
#: ``figures/<lang>/<name>.*`` for the others). The talk was given in Japanese.
FIGURE_LANGS: tuple[str, ...] = ("en", "ja")

# English phrase -> Japanese, applied to every title, axis and legend title of a figure (longest
# phrases first; names of systems, models and fields stay as they are).
JA_PHRASES: dict[str, str] = {
    "Per-GPU efficiency gap to Eos (1.0 = equal; higher = slower per GPU; dashed: the talk's quoted ratio)": "Eosとの GPU あたり効率差 (1.0 = 同等; 大きいほど GPU あたり遅い; 破線: 講演で示した比)",
    "GPT-3 175B model FLOPs utilization by scale (step level)": "GPT-3 175B 規模別のモデル FLOPs 利用率 (ステップ単位)",
    "Time to train per run; black tick: MLPerf score (olympic mean)": "実行ごとの学習時間 (黒線: MLPerf スコア)",
    "GPU-minutes (lower = more efficient per GPU)": "GPU 分 (小さいほど GPU あたり効率的)",
    "evaluation curve (dashed: convergence target)": "評価曲線 (破線: 収束目標)",
    "model state per GPU against node count": "ノード数ごとの GPU あたりモデル状態",
    "Jobs and GPU-hours by final job state": "最終状態別のジョブ数と GPU 時間",
    "Jobs and GPU-hours by job size": "ジョブ規模別のジョブ数と GPU 時間",
    "Tensor-core activity over the MLPerf GPT-3 run": "MLPerf GPT-3 実行中の Tensor コア活動率",
    "Tensor-core activity, real capture": "Tensor コア活動率 (実測)",
    "Memory wall: model parameters and single-accelerator memory": "メモリの壁: モデルのパラメータ数と GPU 1 基のメモリ",
    "share of jobs with run time ≤ x": "実行時間が x 以下のジョブの割合",
    "share of GPU-hours": "GPU 時間の割合",
    "share of jobs": "ジョブ数の割合",
    "final state": "最終状態",
    "tensor-pipe active": "Tensor パイプ活動率",
    "SM active": "SM 活動率",
    "DRAM active": "DRAM 活動率",
    "power (W)": "消費電力 (W)",
    "SM clock (MHz)": "SM クロック (MHz)",
    "throughput": "スループット",
    "GPU (host/gpu)": "GPU (ホスト/GPU)",
    "NIC throughput per rail": "レールごとの NIC スループット",
    "GPU-minutes ratio (evaluated / Eos)": "GPU 分の比 (評価対象 / Eos)",
    "model state per GPU (GB)": "GPU あたりモデル状態 (GB)",
    "rail (NIC i serves GPU i)": "レール (NIC i が GPU i を担当)",
    "Cumulative share by job size": "ジョブ規模別の累積割合",
    "Run time of successful jobs": "成功したジョブの実行時間",
    "time to train by scale": "規模別の学習時間",
    "time to train (minutes)": "学習時間 (分)",
    "time to train (min)": "学習時間 (分)",
    "nodes (8 GPUs each)": "ノード数 (各 8 GPU)",
    "share of successful jobs": "成功したジョブの割合",
    "evaluated": "評価対象",
    "evaluation metric": "評価指標",
    "model parameters": "モデルのパラメータ数",
    "accelerator memory (GB)": "アクセラレータのメモリ (GB)",
    "GPU memory": "GPU メモリ",
    "GPU-hours by job size": "ジョブ規模別の GPU 時間",
    "GPU-hours per": "GPU 時間 /",
    "GPU-hours": "GPU 時間",
    "GPU-minutes": "GPU 分",
    "job size (nodes)": "ジョブ規模 (ノード数)",
    "job size": "ジョブ規模",
    "jobs in group": "グループ内のジョブ",
    "MLPerf round": "MLPerf ラウンド",
    "MLPerf phase": "MLPerf のフェーズ",
    "phase kind": "フェーズ種別",
    "run status": "実行状態",
    "run time (s)": "実行時間 (秒)",
    "time (UTC)": "時刻 (UTC)",
    "tokens trained": "学習トークン数",
    "samples trained": "学習サンプル数",
    "denominator": "分母",
    "dense peak": "密行列ピーク",
    "sharding": "分割方法",
    "system": "システム",
    "nodes": "ノード数",
    "year": "年",
    "share": "割合",
    "jobs": "ジョブ",
    "Histogram": "ヒストグラム",
    "SYNTHETIC data": "合成データ",
    "synthetic": "合成",
    "one point per node": "ノードごとに 1 点",
    "median and 5-95 % over GPUs": "GPU 間の中央値と 5-95 %",
}


def localize(spec: dict, lang: str) -> dict:
    """Return a copy of a Vega-Lite ``spec`` with its labels in ``lang`` and that language's font.

    Titles, subtitles, and axis, legend and header titles are translated phrase by phrase with
    :data:`JA_PHRASES` (longest first; what has no entry stays English, e.g. system names);
    ``config.font`` is set to :data:`FONTS` ``[lang]``.

    Raises:
        ValueError: an unknown language.
    """
    import copy

    if lang not in FONTS:
        raise ValueError(f"unknown figure language {lang!r}; known: {sorted(FONTS)}")
    out = copy.deepcopy(spec)
    if lang == "en":
        return out
    phrases = sorted(JA_PHRASES.items(), key=lambda kv: -len(kv[0]))

    def tr(text):
        if isinstance(text, list):
            return [tr(t) for t in text]
        if not isinstance(text, str):
            return text
        for en, ja in phrases:
            text = text.replace(en, ja)
        return text

    def walk(node):
        if isinstance(node, dict):
            for key, val in node.items():
                if key in ("title", "subtitle") and isinstance(val, (str, list)):
                    node[key] = tr(val)
                elif key == "title" and isinstance(val, dict):
                    for k in ("text", "subtitle"):
                        if k in val:
                            val[k] = tr(val[k])
                elif key != "data" and key != "datasets":
                    walk(val)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(out)
    out.setdefault("config", {})["font"] = FONTS[lang]
    return out


PALETTE = ["#1f4e79", "#d9822b", "#3a923a", "#c03d3e", "#7f5fa8", "#8c6d31", "#e377c2", "#7f7f7f"]


def _theme() -> dict:
    return {
        "config": {
            "font": FONT,
            "view": {"continuousWidth": 560, "continuousHeight": 320, "stroke": None},
            "title": {"fontSize": 15, "anchor": "start", "fontWeight": 600},
            "axis": {
                "labelFontSize": 12,
                "titleFontSize": 13,
                "gridColor": "#e6e6e6",
                "labelLimit": 420,
            },
            "legend": {
                "labelFontSize": 12,
                "titleFontSize": 12,
                "orient": "bottom",
                "direction": "vertical",
                "labelLimit": 480,
            },
            "range": {"category": PALETTE},
            "background": "white",
        }
    }


def _vega_bundle() -> str:
    import vl_convert as vlc
    from altair.utils._importers import vl_version_for_vl_convert

    return vlc.javascript_bundle(vl_version=vl_version_for_vl_convert())


def chart_html(spec: dict) -> str:
    """Return an HTML fragment that draws a Vega-Lite ``spec`` with no network access.

    The vega-embed bundle is inlined inside a function guarded by ``window.vegaEmbed`` so that several
    charts on one page neither re-declare its top-level constants nor download anything.
    """
    div = f"tp-{uuid.uuid4().hex[:12]}"
    bundle = _vega_bundle()
    spec_json = json.dumps(spec).replace("</", "<\\/")
    return (
        f'<div class="trainperf-chart" id="{div}"></div>\n'
        '<script type="text/javascript">\n'
        f"if (!window.vegaEmbed) {{ (function() {{\n{bundle}\n}})(); }}\n"
        f'(function() {{ vegaEmbed("#{div}", {spec_json}, {{"actions": false}}).catch(console.error); }})();\n'
        "</script>\n"
    )


def _renderer(spec: dict, **_meta) -> dict:
    import vl_convert as vlc

    png = vlc.vegalite_to_png(spec, scale=2)
    return {
        "text/html": chart_html(spec),
        "image/png": base64.b64encode(png).decode("ascii"),
        "text/plain": f"<Altair chart: {html.escape(str(spec.get('title', '')))}>",
    }


def enable() -> None:
    """Register and enable the report's theme and offline renderer (idempotent)."""
    alt.theme.register(THEME, enable=True)(_theme)
    alt.renderers.register(THEME, _renderer)
    alt.renderers.enable(THEME)
    alt.data_transformers.disable_max_rows()


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o644)  # mkstemp creates 0600; figures are meant to be shared
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_chart(
    chart: alt.TopLevelMixin,
    name: str,
    outdir: str | Path,
    formats: Iterable[str] = ("svg", "png", "pdf"),
    scale: float = 2.0,
    langs: Iterable[str] | None = None,
) -> list[Path]:
    """Export ``chart`` as ``<outdir>/<name>.<fmt>`` (and ``<outdir>/<lang>/<name>.<fmt>``) with vl-convert.

    No browser and no network. English figures go to ``outdir``, every other language of ``langs``
    to ``outdir/<lang>/`` with its labels translated and its font set (:func:`localize`).

    Args:
        chart: an Altair chart.
        name: stable file stem, e.g. ``mlperf_time_to_train``.
        outdir: target folder, created if missing.
        formats: any of ``svg``, ``png`` (rendered at ``scale``, 2x by default), ``pdf``.
        scale: PNG scale factor.
        langs: figure languages; None: :data:`FIGURE_LANGS` (English and Japanese).

    Returns:
        The written paths. Each file is written to a temporary name and renamed, so a killed run never
        leaves a half-written figure.

    Raises:
        ValueError: an unknown format or language.
    """
    out = []
    for lang in langs if langs is not None else FIGURE_LANGS:
        spec = localize(chart.to_dict(), lang)
        target = Path(outdir) if lang == "en" else Path(outdir) / lang
        out += _export(spec, name, target, formats, scale)
    return out


def _export(
    spec: dict, name: str, outdir: Path, formats: Iterable[str], scale: float
) -> list[Path]:
    import vl_convert as vlc

    out = []
    for fmt in formats:
        if fmt == "svg":
            data = vlc.vegalite_to_svg(spec).encode("utf-8")
        elif fmt == "png":
            data = vlc.vegalite_to_png(spec, scale=scale)
        elif fmt == "pdf":
            data = vlc.vegalite_to_pdf(spec)
        else:
            raise ValueError(f"unknown figure format {fmt!r}; expected svg, png or pdf")
        path = Path(outdir) / f"{name}.{fmt}"
        _atomic_write(path, data)
        out.append(path)
    return out


def _system_label(df: pl.DataFrame) -> pl.DataFrame:
    return df.with_columns(
        (
            pl.col("system")
            + " ("
            + pl.col("n_accelerators").cast(pl.String)
            + " GPUs, "
            + pl.col("round")
            + ")"
        ).alias("system_label")
    )


def time_to_train_runs(
    runs: pl.DataFrame, scores: pl.DataFrame, benchmark: str | None = None
) -> alt.LayerChart:
    """Time-to-train of every run per system (points), with the MLPerf score marked (a tick).

    Args:
        runs: ``Results.runs`` (needs system, round, benchmark, n_accelerators, time_to_train_min, status).
        scores: ``Results.scores`` (needs the same keys and score_min).
        benchmark: restrict to one benchmark; None shows all, one facet row per benchmark.
    """
    r = _system_label(runs.filter(pl.col("time_to_train_min").is_not_null()))
    s = _system_label(scores.filter(pl.col("score_min").is_not_null()))
    if benchmark:
        r = r.filter(pl.col("benchmark") == benchmark)
        s = s.filter(pl.col("benchmark") == benchmark)
    y = alt.Y("system_label:N", title=None, sort=alt.SortField("n_accelerators"))
    pts = (
        alt.Chart(r)
        .mark_point(filled=True, size=70, opacity=0.8)
        .encode(
            x=alt.X(
                "time_to_train_min:Q", title="time to train (minutes)", scale=alt.Scale(type="log")
            ),
            y=y,
            color=alt.Color("status:N", title="run status"),
            tooltip=[
                "system",
                "round",
                "benchmark",
                "result_file",
                alt.Tooltip("time_to_train_min:Q", format=".3f"),
                "status",
            ],
        )
    )
    ticks = (
        alt.Chart(s)
        .mark_tick(color="black", thickness=3, size=26)
        .encode(
            x="score_min:Q",
            y=y,
            tooltip=[
                "system",
                "round",
                "benchmark",
                alt.Tooltip("score_min:Q", format=".3f", title="score (min)"),
            ],
        )
    )
    chart = alt.layer(pts, ticks)
    title = "Time to train per run; black tick: MLPerf score (olympic mean)"
    if benchmark is None:
        return (
            chart.facet(row=alt.Row("benchmark:N", title=None), data=None)
            .resolve_scale(y="independent")
            .properties(title=title)
        )
    return chart.properties(title=f"{benchmark}: {title}", height=max(60, 40 * s.height))


def eval_curve(curve: pl.DataFrame, benchmark: str) -> alt.LayerChart:
    """Evaluation metric against training progress for every run of one benchmark, with the target line.

    Args:
        curve: :func:`trainperf.mlperf.eval_curve` frame.
        benchmark: which benchmark to show (its progress unit: tokens for gpt3, samples for LoRA).
    """
    c = _system_label(curve.filter(pl.col("benchmark") == benchmark))
    unit = c["progress_unit"][0] if c.height else "progress"
    lines = (
        alt.Chart(c)
        .mark_line(point=True, strokeWidth=1.5)
        .encode(
            x=alt.X("progress:Q", title=f"{unit} trained", axis=alt.Axis(format="~s")),
            y=alt.Y("eval_value:Q", title="evaluation metric", scale=alt.Scale(zero=False)),
            color=alt.Color("system_label:N", title="system"),
            detail="result_file:N",
            tooltip=[
                "system",
                "result_file",
                "progress",
                alt.Tooltip("eval_value:Q", format=".4f"),
            ],
        )
    )
    target = c.select("eval_target").drop_nulls().unique()
    rule = alt.Chart(target).mark_rule(color="#c03d3e", strokeDash=[6, 4]).encode(y="eval_target:Q")
    return alt.layer(lines, rule).properties(
        title=f"{benchmark}: evaluation curve (dashed: convergence target)"
    )


def time_to_train_by_scale(
    published: pl.DataFrame, systems: list[str], benchmark: str = "gpt3"
) -> alt.HConcatChart:
    """Time to train (left) and GPU-minutes (right) against node count, one line per system.

    Args:
        published: rows of ``data/reference/published_results.csv`` (:func:`trainperf.compare.load_published_results`)
            or any frame with system, round, benchmark, n_nodes, n_gpus, minutes, verified.
        systems: which systems to show (e.g. ``["SAKURAONE", "Eos"]``).
        benchmark: MLPerf benchmark name.
    """
    d = (
        published.filter((pl.col("benchmark") == benchmark) & pl.col("system").is_in(systems))
        .with_columns(
            (pl.col("minutes") * pl.col("n_gpus")).alias("gpu_minutes"),
            (
                pl.col("system")
                + pl.when(pl.col("verified")).then(pl.lit("")).otherwise(pl.lit(" (unverified)"))
            ).alias("series"),
        )
        .sort("n_nodes")
    )
    base = alt.Chart(d).encode(
        x=alt.X("n_nodes:Q", title="nodes (8 GPUs each)", scale=alt.Scale(type="log", base=2)),
        color=alt.Color("series:N", title="system"),
        shape=alt.Shape("round:N", title="MLPerf round"),
        detail="round:N",
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
    ttt = (
        base.mark_line(point=True)
        .encode(
            y=alt.Y(
                "minutes:Q",
                title="time to train (min)",
                scale=alt.Scale(type="log", zero=False, nice=False),
            )
        )
        .properties(title=f"{benchmark}: time to train by scale", width=300)
    )
    gm = (
        base.mark_line(point=True)
        .encode(y=alt.Y("gpu_minutes:Q", title="GPU-minutes", scale=alt.Scale(zero=False)))
        .properties(title="GPU-minutes (lower = more efficient per GPU)", width=300)
    )
    return alt.hconcat(ttt, gm)


def efficiency_ratio_by_scale(
    table: pl.DataFrame, talk_ratio: float | None = None
) -> alt.FacetChart:
    """Per-GPU efficiency ratio (evaluated / reference GPU-minutes) by node count.

    Args:
        table: :func:`trainperf.compare.paper_comparison_table` (n_nodes, benchmark, ratio,
            reference_label, reference_extrapolated, ratio_vs_actual).
        talk_ratio: draw a dashed rule at this ratio (the talk's quoted 1.28x), or None.
    """
    d = table.with_columns(
        pl.col("n_nodes").cast(pl.String).alias("nodes"),
        pl.when(pl.col("reference_extrapolated"))
        .then(pl.lit("reference extrapolated"))
        .otherwise(pl.lit("reference measured"))
        .alias("basis"),
    )
    base = alt.Chart(d)
    bars = base.mark_bar(clip=True).encode(
        x=alt.X("nodes:N", title="nodes", sort=None),
        y=alt.Y(
            "ratio:Q",
            title="GPU-minutes ratio (evaluated / Eos)",
            scale=alt.Scale(domain=[0.9, 1.35]),
        ),
        color=alt.Color("basis:N", title=None),
        tooltip=["benchmark", "n_nodes", "reference_label", alt.Tooltip("ratio:Q", format=".3f")],
    )
    layers = [bars, base.mark_rule(color="black").encode(y=alt.datum(1.0))]
    if talk_ratio is not None:
        layers.append(
            base.mark_rule(color="#c03d3e", strokeDash=[6, 4]).encode(y=alt.datum(talk_ratio))
        )
    return (
        alt.layer(*layers)
        .properties(width=220)
        .facet(column=alt.Column("benchmark:N", title=None))
        .resolve_scale(x="independent")
        .properties(
            title="Per-GPU efficiency gap to Eos (1.0 = equal; higher = slower per GPU; dashed: the talk's quoted ratio)"
        )
    )


def mfu_by_scale(frame: pl.DataFrame, accelerator_label: str = "H100 SXM") -> alt.Chart:
    """MFU against both dense peaks (BF16 and FP8) by node count.

    Args:
        frame: columns system, round, n_nodes, mfu_bf16_dense, mfu_fp8_dense (fractions 0-1), verified.
        accelerator_label: named in the axis title with the precision of each peak.
    """
    d = frame.unpivot(
        index=["system", "round", "n_nodes", "verified"],
        on=["mfu_bf16_dense", "mfu_fp8_dense"],
        variable_name="peak",
        value_name="mfu",
    ).with_columns(
        pl.col("peak").replace(
            {"mfu_bf16_dense": "BF16 dense peak", "mfu_fp8_dense": "FP8 dense peak"}
        )
    )
    return (
        alt.Chart(d)
        .mark_line(point=True)
        .encode(
            x=alt.X("n_nodes:Q", title="nodes (8 GPUs each)", scale=alt.Scale(type="log", base=2)),
            y=alt.Y(
                "mfu:Q",
                title=f"MFU (model FLOPs / {accelerator_label} dense peak)",
                axis=alt.Axis(format="%"),
            ),
            color=alt.Color("system:N"),
            strokeDash=alt.StrokeDash("peak:N", title="denominator"),
            shape=alt.Shape("round:N", title="MLPerf round"),
            detail="round:N",
            tooltip=["system", "round", "n_nodes", "peak", alt.Tooltip("mfu:Q", format=".1%")],
        )
        .properties(title="GPT-3 175B model FLOPs utilization by scale (step level)")
    )


def memory_per_gpu(frame: pl.DataFrame, gpu_memory_gb: float, model_label: str) -> alt.LayerChart:
    """Model-state memory per GPU against node count, with the per-GPU memory line.

    Args:
        frame: :func:`trainperf.flops.memory_vs_nodes` (n_nodes, bytes_per_gpu_perfect,
            bytes_per_gpu_layout; bytes).
        gpu_memory_gb: per-GPU memory in GB (1e9 bytes), drawn as a rule.
        model_label: model and recipe, for the title.
    """
    d = (
        frame.unpivot(
            index=["n_nodes"],
            on=["bytes_per_gpu_perfect", "bytes_per_gpu_layout"],
            variable_name="sharding",
            value_name="bytes",
        )
        .with_columns(
            (pl.col("bytes") / 1e9).alias("gb"),
            pl.col("sharding").replace(
                {
                    "bytes_per_gpu_perfect": "evenly over all GPUs",
                    "bytes_per_gpu_layout": "TP x PP x ZeRO-1 layout",
                }
            ),
        )
        .drop_nulls("gb")
    )
    lines = (
        alt.Chart(d)
        .mark_line(point=True)
        .encode(
            x=alt.X("n_nodes:Q", title="nodes (8 GPUs each)", scale=alt.Scale(type="log", base=2)),
            y=alt.Y("gb:Q", title="model state per GPU (GB)", scale=alt.Scale(type="log")),
            color=alt.Color("sharding:N", title="sharding"),
            tooltip=["n_nodes", "sharding", alt.Tooltip("gb:Q", format=".1f")],
        )
    )
    rule = (
        alt.Chart(
            pl.DataFrame({"gb": [gpu_memory_gb], "label": [f"GPU memory {gpu_memory_gb:g} GB"]})
        )
        .mark_rule(color="#c03d3e", strokeDash=[6, 4])
        .encode(y="gb:Q")
    )
    text = rule.mark_text(align="left", dx=4, dy=-6, color="#c03d3e").encode(
        text="label:N", x=alt.value(0)
    )
    return alt.layer(lines, rule, text).properties(
        title=f"{model_label}: model state per GPU against node count"
    )


def memory_wall(table: pl.DataFrame) -> alt.LayerChart:
    """Model parameters (left axis) and single-accelerator memory (right axis) by year, log scales.

    After Gholami et al., "AI and Memory Wall" (IEEE Micro 2024, https://arxiv.org/abs/2403.14123).

    Args:
        table: ``data/reference/memory_wall.csv`` (:func:`trainperf.compare.load_reference`):
            kind ("model" or "accelerator"), name, year, parameters, memory_gb, source.
    """
    models = table.filter(pl.col("kind") == "model")
    accel = table.filter(pl.col("kind") == "accelerator")
    x = alt.X("year:Q", title="year", axis=alt.Axis(format="d"), scale=alt.Scale(zero=False))
    m = alt.Chart(models).encode(
        x=x,
        y=alt.Y(
            "parameters:Q",
            title="model parameters",
            scale=alt.Scale(type="log"),
            axis=alt.Axis(format="~s", titleColor=PALETTE[0]),
        ),
        tooltip=["name", "year", alt.Tooltip("parameters:Q", format=",.0f"), "source"],
    )
    a = alt.Chart(accel).encode(
        x=x,
        y=alt.Y(
            "memory_gb:Q",
            title="accelerator memory (GB)",
            scale=alt.Scale(type="log"),
            axis=alt.Axis(titleColor=PALETTE[1]),
        ),
        tooltip=["name", "year", "memory_gb", "source"],
    )
    models_layer = m.mark_point(filled=True, size=70, color=PALETTE[0]) + m.mark_text(
        align="left", dx=5, dy=-6, fontSize=10, color=PALETTE[0]
    ).encode(text="name:N")
    accel_layer = a.mark_square(size=60, color=PALETTE[1]) + a.mark_text(
        align="left", dx=5, dy=8, fontSize=10, color=PALETTE[1]
    ).encode(text="name:N")
    return (
        alt.layer(models_layer, accel_layer)
        .resolve_scale(y="independent")
        .properties(
            title="Memory wall: model parameters and single-accelerator memory",
            width=620,
            height=360,
        )
    )


# --- telemetry charts ---
# Charts of trainperf.telemetry frames. Every title says "synthetic data" when synthetic=True.

_KIND_COLORS = {"init": "#7f7f7f", "train": "#3a923a", "eval": "#d9822b"}


def _synthetic_title(title: str, synthetic: bool) -> str:
    return f"{title} (SYNTHETIC data)" if synthetic else title


def _phase_rects(phases: pl.DataFrame) -> alt.Chart:
    d = phases.select("phase", "kind", "start", "end")
    return (
        alt.Chart(d)
        .mark_rect(opacity=0.18)
        .encode(
            x="start:T",
            x2="end:T",
            color=alt.Color(
                "kind:N",
                title="MLPerf phase",
                scale=alt.Scale(domain=list(_KIND_COLORS), range=list(_KIND_COLORS.values())),
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
    metric_label: str = "tensor-pipe active (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE)",
    percent: bool = True,
    synthetic: bool = False,
    title: str = "Tensor-core activity over the MLPerf GPT-3 run",
) -> alt.LayerChart:
    """A metric over the run, pooled over GPUs: median line and 5-95 % band, phases shaded.

    Args:
        timeline: :func:`trainperf.telemetry.activity_timeline` (timestamp, p05, p50, p95, mean).
        phases: :func:`trainperf.telemetry.phases_from_log` (phase, kind, start, end).
        metric_label: y-axis title (with unit).
        percent: format the axis as a percentage (ratio fields).
        synthetic: say "SYNTHETIC data" in the title.
    """
    fmt = "%" if percent else ""
    band = (
        alt.Chart(timeline)
        .mark_area(opacity=0.3, color=PALETTE[0])
        .encode(
            x=alt.X(
                "timestamp:T",
                title="time (UTC)",
                scale=alt.Scale(type="utc"),
                axis=alt.Axis(format="%H:%M"),
            ),
            y=alt.Y("p05:Q", title=metric_label, axis=alt.Axis(format=fmt)),
            y2="p95:Q",
        )
    )
    line = (
        alt.Chart(timeline)
        .mark_line(color=PALETTE[0])
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
    return alt.layer(_phase_rects(phases), band, line).properties(
        width=640, title=_synthetic_title(title + ": median and 5-95 % over GPUs", synthetic)
    )


def telemetry_heatmap(
    grid: pl.DataFrame,
    *,
    value_label: str = "tensor-pipe active",
    percent: bool = True,
    synthetic: bool = False,
    title: str = "Tensor-core activity per GPU over time",
    height: int = 480,
) -> alt.Chart:
    """GPU (rows) x time (columns) heatmap of :func:`trainperf.telemetry.gpu_heatmap`.

    Rows are ``host/gpu`` in host then GPU order; with more than 64 rows the row labels are
    hidden (the tooltip names the GPU). Cell width = the smallest step between bins.
    """
    ts = grid["timestamp"].unique().sort()
    step = ts.diff().drop_nulls().min() if ts.len() > 1 else None
    d = grid.with_columns(
        (pl.col("timestamp") + (step if step is not None else pl.duration(seconds=60))).alias("end")
    )
    rows = (
        d.select("hostname", "gpu", "row")
        .unique()
        .sort(["hostname", "gpu"], nulls_last=True)["row"]
        .to_list()
    )
    axis = alt.Axis(
        labels=len(rows) <= 64, ticks=len(rows) <= 64, title=f"GPU (host/gpu), {len(rows)} rows"
    )
    return (
        alt.Chart(d)
        .mark_rect(strokeWidth=0, aria=False)
        .encode(
            x=alt.X(
                "timestamp:T",
                title="time (UTC)",
                scale=alt.Scale(type="utc"),
                axis=alt.Axis(format="%H:%M"),
            ),
            x2="end:T",
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
                alt.Tooltip("timestamp:T", format="%H:%M:%S", formatType="utc"),
                alt.Tooltip("value:Q", format=".3f"),
            ],
        )
        .properties(width=640, height=height, title=_synthetic_title(title, synthetic))
    )


_METRIC_LABELS = {
    "tensor_active": "tensor active (ratio)",
    "sm_active": "SM active (ratio)",
    "dram_active": "DRAM active (ratio)",
    "power": "power (W)",
    "sm_clock": "SM clock (MHz)",
}


def telemetry_phase_distributions(
    stats: pl.DataFrame,
    *,
    by: str = "kind",
    synthetic: bool = False,
    title: str = "GPU activity by MLPerf phase",
) -> alt.FacetChart:
    """Box plots from precomputed quantiles: whiskers p05-p95, box p25-p75, tick at the median.

    Args:
        stats: :func:`trainperf.telemetry.phase_stats` (columns ``by``, metric, unit, p05, p25,
            p50, p75, p95), ``level="kind"`` or ``"phase"``.
        by: the x column (``kind`` or ``phase``).
        synthetic: say "SYNTHETIC data" in the title.
    """
    d = stats.with_columns(pl.col("metric").replace(_METRIC_LABELS).alias("metric_label"))
    order = ["init", "train", "eval"] if by == "kind" else None
    x = alt.X(f"{by}:N", title="phase" if by == "phase" else "phase kind", sort=order)
    base = alt.Chart().encode(x=x)
    whisk = base.mark_rule(color="#555555").encode(y=alt.Y("p05:Q", title=None), y2="p95:Q")
    box = base.mark_bar(size=22, opacity=0.85).encode(
        y="p25:Q",
        y2="p75:Q",
        color=alt.Color(
            f"{by}:N",
            legend=None,
            scale=alt.Scale(domain=list(_KIND_COLORS), range=list(_KIND_COLORS.values()))
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
        .properties(width=120, height=220)
        .facet(
            column=alt.Column(
                "metric_label:N", title=None, sort=[_METRIC_LABELS[m] for m in _METRIC_LABELS]
            )
        )
        .resolve_scale(y="independent")
        .properties(
            title=_synthetic_title(
                title + " (whiskers 5-95 %, box 25-75 %, tick median)", synthetic
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
    """One point per (node, rail) in GB/s, rails flagged by :func:`trainperf.telemetry.rail_imbalance` in red.

    Args:
        link: :func:`trainperf.telemetry.link_throughput` (hostname, rail, ``column`` in B/s).
        flagged: :func:`trainperf.telemetry.rail_imbalance` (hostname, rail).
        column: ``nic_Bps``, ``pcie_Bps`` or ``nvlink_Bps``.
        label: what the column is, for the axis.
        synthetic: say "SYNTHETIC data" in the title.
    """
    fl = flagged.select("hostname", "rail").with_columns(pl.lit(True).alias("_f"))
    d = (
        link.filter(pl.col(column).is_not_null())
        .join(fl, on=["hostname", "rail"], how="left")
        .with_columns(
            (pl.col(column) / 1e9).alias("GBps"),
            pl.when(pl.col("_f"))
            .then(pl.lit("below half of its node's median"))
            .otherwise(pl.lit("within range"))
            .alias("status"),
            # deterministic horizontal jitter per host, so points of one rail do not overlap
            ((pl.col("hostname").hash(seed=0) % 1000).cast(pl.Float64) / 1000.0 - 0.5).alias(
                "jitter"
            ),
        )
        .drop("_f")
    )
    pts = (
        alt.Chart(d)
        .mark_circle(size=28, opacity=0.75)
        .encode(
            x=alt.X("rail:O", title="rail (NIC i serves GPU i)"),
            xOffset=alt.XOffset("jitter:Q", scale=alt.Scale(domain=[-0.6, 0.6])),
            y=alt.Y("GBps:Q", title=f"{label} (GB/s)"),
            color=alt.Color(
                "status:N",
                title=None,
                scale=alt.Scale(
                    domain=["within range", "below half of its node's median"],
                    range=[PALETTE[0], "#c03d3e"],
                ),
            ),
            tooltip=["hostname", "rail", alt.Tooltip("GBps:Q", format=".2f"), "status"],
        )
    )
    return alt.layer(pts).properties(
        width=560, title=_synthetic_title(f"{title}: {label}, one point per node", synthetic)
    )


# --- operations (Slurm) charts ---
# Charts of trainperf.slurm frames (job shares, run times, GPU-hours over time). Every title says
# "SYNTHETIC data" when synthetic=True. Job names never reach these charts.

_SLURM_SIZE_ORDER = ["1", "2", "3-4", "5-16", "17-32", ">32"]
_SLURM_SIZE_COLORS = ["#8c6d31", "#e377c2", "#7f7f7f", "#d9822b", "#1f4e79", "#7f5fa8"]
_SLURM_MEASURES = {"job_share": "share of jobs", "gpu_hours_share": "share of GPU-hours"}


def _slurm_title(title: str, synthetic: bool) -> str:
    return f"{title} (SYNTHETIC data)" if synthetic else title


def _slurm_share_bars(
    shares: pl.DataFrame, key: str, key_title: str, order: list[str] | None, title: str
) -> alt.LayerChart:
    d = (
        shares.with_columns(pl.col(key).cast(pl.String).alias("_key"))
        .unpivot(index=["_key", "n_jobs", "gpu_hours"], on=list(_SLURM_MEASURES), variable_name="m")
        .with_columns(
            pl.col("m").replace_strict(_SLURM_MEASURES).alias("measure"),
            pl.col("value").fill_null(0.0).alias("share"),
        )
    )
    sort = order if order is not None else d["_key"].unique(maintain_order=True).to_list()
    base = alt.Chart(d).encode(
        y=alt.Y("_key:N", title=key_title, sort=sort),
        yOffset=alt.YOffset("measure:N", sort=list(_SLURM_MEASURES.values())),
        x=alt.X(
            "share:Q", title="share", axis=alt.Axis(format="%"), scale=alt.Scale(domain=[0, 1])
        ),
    )
    bars = base.mark_bar().encode(
        color=alt.Color(
            "measure:N",
            title=None,
            sort=list(_SLURM_MEASURES.values()),
            scale=alt.Scale(range=[PALETTE[1], PALETTE[0]]),
        ),
        tooltip=[
            alt.Tooltip("_key:N", title=key_title),
            "measure:N",
            alt.Tooltip("share:Q", format=".2%"),
            alt.Tooltip("n_jobs:Q", title="jobs", format=","),
            alt.Tooltip("gpu_hours:Q", title="GPU-hours", format=",.0f"),
        ],
    )
    text = base.mark_text(align="left", dx=3, fontSize=11).encode(
        text=alt.Text("share:Q", format=".1%")
    )
    return alt.layer(bars, text).properties(width=480, height=alt.Step(13), title=title)


def slurm_share_by_state(shares: pl.DataFrame, *, synthetic: bool = False) -> alt.LayerChart:
    """Share of jobs and of GPU-hours per final job state, side by side (horizontal bars).

    Args:
        shares: :func:`trainperf.slurm.share_by_state` (state, n_jobs, job_share, gpu_hours,
            gpu_hours_share), in the order to show (most GPU-hours first).
        synthetic: say "SYNTHETIC data" in the title.
    """
    return _slurm_share_bars(
        shares,
        "state",
        "final state",
        None,
        _slurm_title("Jobs and GPU-hours by final job state", synthetic),
    )


def slurm_share_by_size(shares: pl.DataFrame, *, synthetic: bool = False) -> alt.LayerChart:
    """Share of jobs and of GPU-hours per job size in nodes (1, 2, 3-4, 5-16, 17-32, >32).

    Args:
        shares: :func:`trainperf.slurm.share_by_size` (size_bin, n_jobs, job_share, gpu_hours,
            gpu_hours_share).
        synthetic: say "SYNTHETIC data" in the title.
    """
    return _slurm_share_bars(
        shares,
        "size_bin",
        "job size (nodes)",
        _SLURM_SIZE_ORDER,
        _slurm_title("Jobs and GPU-hours by job size", synthetic),
    )


_RUNTIME_TICKS_S = [60, 600, 3600, 6 * 3600, 86400, 7 * 86400, 30 * 86400]
_RUNTIME_LABELS = "{60: '1 min', 600: '10 min', 3600: '1 h', 21600: '6 h', 86400: '1 d', 604800: '1 wk', 2592000: '30 d'}"


def _runtime_axis(title: str) -> alt.Axis:
    return alt.Axis(
        values=_RUNTIME_TICKS_S,
        labelExpr=f"{_RUNTIME_LABELS}[datum.value] || datum.label",
        title=title,
    )


def slurm_runtime_distribution(
    hist: pl.DataFrame, ecdf: pl.DataFrame, *, synthetic: bool = False
) -> alt.HConcatChart:
    """Run-time distribution of successful jobs: histogram (left) and ECDF by job size (right), log time.

    Args:
        hist: :func:`trainperf.slurm.runtime_histogram` with log-spaced edges
            (:data:`trainperf.slurm.RUNTIME_EDGES_LOG_S`); the open last bin is not drawn.
        ecdf: :func:`trainperf.slurm.runtime_ecdf` (group, elapsed_s, ecdf, n_jobs).
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
    groups = ["all sizes"] + [f"{b} node" if b == "1" else f"{b} nodes" for b in _SLURM_SIZE_ORDER]
    lines = (
        alt.Chart(ecdf)
        .mark_line(interpolate="step-after", strokeWidth=1.8)
        .encode(
            x=alt.X("elapsed_s:Q", scale=x_scale, axis=_runtime_axis("run time (log scale)")),
            y=alt.Y("ecdf:Q", title="share of jobs with run time ≤ x", axis=alt.Axis(format="%")),
            color=alt.Color(
                "group:N",
                title="job size",
                sort=groups,
                scale=alt.Scale(domain=groups, range=["#222222", *_SLURM_SIZE_COLORS]),
            ),
            strokeWidth=alt.condition(
                alt.datum.group == "all sizes", alt.value(3.0), alt.value(1.6)
            ),
            tooltip=[
                "group:N",
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


def slurm_gpu_hours_over_time(
    over_time: pl.DataFrame, *, every: str = "1mo", synthetic: bool = False
) -> alt.Chart:
    """GPU-hours per period stacked by job size (a step area: each period is one flat block).

    Args:
        over_time: :func:`trainperf.slurm.gpu_hours_over_time` with ``by_size=True`` (period_start,
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
        grid = periods.join(pl.DataFrame({"size": _SLURM_SIZE_ORDER}), how="cross")
        d = grid.join(
            d.select("period_start", "size", "gpu_hours"), on=["period_start", "size"], how="left"
        )
        d = d.with_columns(pl.col("gpu_hours").fill_null(0.0))
    unit = {"1d": "day", "1w": "week", "1mo": "month"}.get(every, every)
    return (
        alt.Chart(d)
        .mark_area(interpolate="step-after", opacity=0.9)
        .encode(
            x=alt.X("period_start:T", title="time (UTC)", scale=alt.Scale(type="utc")),
            y=alt.Y("gpu_hours:Q", title=f"GPU-hours per {unit}", stack="zero"),
            color=alt.Color(
                "size:N",
                title="job size (nodes)",
                sort=_SLURM_SIZE_ORDER,
                scale=alt.Scale(domain=_SLURM_SIZE_ORDER, range=_SLURM_SIZE_COLORS),
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
        .transform_calculate(size_order=f"indexof({json.dumps(_SLURM_SIZE_ORDER)}, datum.size)")
        .properties(
            width=620,
            height=300,
            title=_slurm_title(f"GPU-hours per {unit} by job size", synthetic),
        )
    )
