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
) -> list[Path]:
    """Export ``chart`` as ``<outdir>/<name>.<fmt>`` with vl-convert (no browser, no network).

    Args:
        chart: an Altair chart.
        name: stable file stem, e.g. ``mlperf_time_to_train``.
        outdir: target folder, created if missing.
        formats: any of ``svg``, ``png`` (rendered at ``scale``, 2x by default), ``pdf``.
        scale: PNG scale factor.

    Returns:
        The written paths. Each file is written to a temporary name and renamed, so a killed run never
        leaves a half-written figure.

    Raises:
        ValueError: an unknown format.
    """
    import vl_convert as vlc

    spec = chart.to_dict()
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
