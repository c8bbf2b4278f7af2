"""Figure "Where the GPUs talk": one job's ranks on the nodes and rails of a rail-optimized fabric.

Drawn from :func:`trainperf.topology.rank_layout` (the run's TP/PP/DP sizes and node count) and
:func:`trainperf.topology.group_links`: one cell per GPU (column = node, row = local GPU = its NIC =
its rail), coloured by pipeline stage; a box around each tensor-parallel group (inside a node,
NVLink); the pipeline of rank 0 as a line from node to node (on one rail); the data-parallel group of
rank 0 as rings. The labels are written in each figure language here (English and Japanese), so the
figure needs no phrase table; :func:`save_topology_chart` exports every language through
:func:`trainperf.report.charts.save_chart`.

Self-contained: of :mod:`trainperf.report.charts` this module uses only the public ``save_chart``
and ``figure_languages`` (the package does not import it).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import altair as alt
import polars as pl

from trainperf.report import charts
from trainperf.topology import group_links

__all__ = ["LABELS", "save_topology_chart", "topology_chart"]

#: Every text of the figure, per language.
LABELS: dict[str, dict[str, str]] = {
    "en": {
        "title": "Where the GPUs talk: {system}, {n_nodes} nodes × {gpn} GPUs, TP {tp} × PP {pp} × DP {dp}",
        "node": "node",
        "gpu": "GPU i = NIC i",
        "stage": "pipeline stage",
        "sub_tp": "boxes: tensor-parallel groups of {tp} GPUs, {tp_link}",
        "sub_pp": "line: the pipeline of rank 0 through its {pp} stages, {pp_link}",
        "sub_dp": "rings: the data-parallel group of rank 0 ({dp} ranks), {dp_link}",
        "sub_cut": "first {shown} of {n_nodes} nodes shown",
        "NVLink (inside a node)": "inside a node over NVLink",
        "rails (GPU i to GPU i across nodes)": "node to node on one rail (GPU i to GPU i)",
        "NVLink + rails": "NVLink inside a node, one rail per GPU index between nodes",
        "crosses rails (spine or PXN)": "between different rails (spine or NVLink first, PXN)",
        "none (one rank)": "no traffic (one rank)",
        "rail": "GPU {i} → rail {i}",
        "sub_rail": "rail i: NIC i of every node, cabled to leaf switch i (rail-optimized fabric)",
    },
    "ja": {
        "title": "GPU はどこで通信するか: {system}、{n_nodes} ノード × {gpn} GPU、TP {tp} × PP {pp} × DP {dp}",
        "node": "ノード",
        "gpu": "GPU i = NIC i",
        "stage": "パイプラインステージ",
        "sub_tp": "枠: {tp} GPU のテンソル並列グループ、{tp_link}",
        "sub_pp": "線: ランク 0 のパイプライン ({pp} ステージ)、{pp_link}",
        "sub_dp": "輪: ランク 0 のデータ並列グループ ({dp} ランク)、{dp_link}",
        "sub_cut": "{n_nodes} ノードのうち先頭 {shown} ノードを表示",
        "NVLink (inside a node)": "ノード内で NVLink",
        "rails (GPU i to GPU i across nodes)": "ノード間を同じレールで (GPU i から GPU i)",
        "NVLink + rails": "ノード内は NVLink、ノード間は GPU 番号ごとに 1 本のレール",
        "crosses rails (spine or PXN)": "異なるレール間 (スパイン経由、または NVLink 経由の PXN)",
        "none (one rank)": "通信なし (1 ランク)",
        "rail": "GPU {i} → レール {i}",
        "sub_rail": "レール i: 各ノードの NIC i、リーフスイッチ i に接続 (レール最適化ファブリック)",
    },
}

_CELL = 0.86  # share of a node column / GPU row a cell fills


# Longer than ~120 lines: one Vega-Lite spec built layer by layer (nodes, GPUs, links per group,
# rail labels, legend); split up, the layers would lose the shared scales they are drawn on.
def topology_chart(
    layout: pl.DataFrame,
    system: str,
    lang: str = "en",
    max_nodes: int = 64,
    # the rails' labels and the legend lie beside the plot: the SVG within 870 px (12 px text at
    # least 11 px at the book's 800 px page width)
    width: int = 590,
) -> alt.LayerChart:
    """The layout figure of one job, labelled in ``lang``.

    Args:
        layout: :func:`trainperf.topology.rank_layout` output.
        system: name shown in the title (a system or results folder).
        lang: ``en`` or ``ja`` (:data:`LABELS`).
        max_nodes: draw at most this many nodes (the first ones; the subtitle says so).
        width: chart width in pixels.

    Returns:
        An Altair layer chart (quantitative axes: node on x, local GPU on y, GPU 0 on top).

    Raises:
        ValueError: unknown language or an empty layout.
    """
    if lang not in LABELS:
        raise ValueError(f"unknown figure language {lang!r}; known: {sorted(LABELS)}")
    if layout.height == 0:
        raise ValueError("empty layout")
    t = LABELS[lang]
    links = {r["group"]: r for r in group_links(layout).iter_rows(named=True)}
    n_nodes = int(layout["node"].max()) + 1
    gpn = int(layout["local_gpu"].max()) + 1
    tp, pp = links["TP"]["group_size"], links["PP"]["group_size"]
    dp = links["DP"]["group_size"]
    shown = min(n_nodes, max_nodes)

    def link_text(kind):
        r = links[kind]
        return t["none (one rank)"] if r["group_size"] == 1 else t[r["link"]]

    d = layout.filter(pl.col("node") < shown).with_columns(
        pl.col("node").cast(pl.Float64).alias("x0"),
        (pl.col("node") + _CELL).alias("x1"),
        pl.col("local_gpu").cast(pl.Float64).alias("y0"),
        (pl.col("local_gpu") + _CELL).alias("y1"),
        (pl.col("node") + _CELL / 2).alias("xc"),
        (pl.col("local_gpu") + _CELL / 2).alias("yc"),
    )
    x = alt.X(
        "x0:Q",
        title=t["node"],
        scale=alt.Scale(domain=[-0.3, shown + 0.2], nice=False),
        axis=alt.Axis(
            values=list(range(0, shown, max(1, shown // 8))), format="d", grid=False, labelAngle=0
        ),
    )
    y = alt.Y(
        "y0:Q",
        title=t["gpu"],
        scale=alt.Scale(domain=[-0.2, gpn + 0.1], reverse=True, nice=False),
        # the rails named as the axis's labels, on the right: laid out by Vega beside the plot,
        # so the legend keeps clear of them at any text size (the talk's projector figures)
        axis=alt.Axis(
            orient="right",
            values=[g + _CELL / 2 for g in range(gpn)],
            tickCount=gpn,  # else Vega-Lite's ceil(height / 40) thins the values to every other
            labelExpr="'" + "' + floor(datum.value) + '".join(t["rail"].split("{i}")) + "'",
            labelFontSize=12,
            labelColor="#444444",
            labelOverlap=False,  # rows 30 px apart hold every label (Vega would drop every other)
            ticks=False,
            grid=False,
            domain=False,
        ),
    )
    cells = (
        alt.Chart(d)
        .mark_rect()
        .encode(
            x=x,
            x2="x1:Q",
            y=y,
            y2="y1:Q",
            color=alt.Color(
                "pp_stage:O",
                title=t["stage"],
                scale=alt.Scale(scheme="tableau20" if pp > 10 else "tableau10"),
                legend=alt.Legend(
                    orient="right",
                    direction="vertical",
                    columns=1 if pp <= 16 else 2,
                    offset=24,
                ),
            ),
            tooltip=["rank", "node", "local_gpu", "tp_rank", "dp_rank", "pp_stage"],
        )
    )
    tp_boxes = (
        d.group_by("tp_group", "node")
        .agg(pl.col("local_gpu").min().alias("g0"), pl.col("local_gpu").max().alias("g1"))
        .with_columns(
            (pl.col("node") - 0.06).alias("x0"),
            (pl.col("node") + _CELL + 0.06).alias("x1"),
            (pl.col("g0") - 0.08).alias("y0"),
            (pl.col("g1") + _CELL + 0.08).alias("y1"),
        )
    )
    boxes = (
        alt.Chart(tp_boxes)
        .mark_rect(fill=None, stroke="#222222", strokeWidth=1.3)
        .encode(x="x0:Q", x2="x1:Q", y="y0:Q", y2="y1:Q")
    )
    rank0 = d.filter(pl.col("rank") == 0).row(0, named=True)
    pipe = d.filter(pl.col("pp_group") == rank0["pp_group"]).sort("pp_stage")
    pipe_line = (
        alt.Chart(pipe)
        .mark_line(
            color="#111111",
            strokeWidth=2,
            point=alt.OverlayMarkDef(shape="diamond", size=60, color="#111111"),
        )
        .encode(x="xc:Q", y="yc:Q", order="pp_stage:Q")
    )
    ring = d.filter(pl.col("dp_group") == rank0["dp_group"])
    rings = (
        alt.Chart(ring)
        .mark_point(shape="circle", size=55, filled=False, stroke="white", strokeWidth=2.2)
        .encode(x="xc:Q", y="yc:Q")
    )
    subtitle = [
        t["sub_rail"],
        t["sub_tp"].format(tp=tp, tp_link=link_text("TP")),
        t["sub_pp"].format(pp=pp, pp_link=link_text("PP")),
        t["sub_dp"].format(dp=dp, dp_link=link_text("DP")),
    ]
    if shown < n_nodes:
        subtitle.append(t["sub_cut"].format(shown=shown, n_nodes=n_nodes))
    title = alt.TitleParams(
        t["title"].format(system=system, n_nodes=n_nodes, gpn=gpn, tp=tp, pp=pp, dp=dp),
        subtitle=subtitle,
        subtitleFontSize=12,
        subtitleColor="#333333",
        anchor="start",
    )
    return (
        alt.layer(cells, boxes, pipe_line, rings)
        .properties(width=width, height=30 * gpn, title=title)
        .configure_view(stroke=None)
    )


def save_topology_chart(
    layout: pl.DataFrame,
    system: str,
    name: str,
    outdir: str | Path,
    langs: Iterable[str] | None = None,
    formats: Iterable[str] = ("svg", "png", "pdf"),
    **kwargs,
) -> list[Path]:
    """Export the figure in every language (``<outdir>/<name>.*``, ``<outdir>/<lang>/<name>.*``).

    Each language's chart is built with its own labels and handed to
    :func:`trainperf.report.charts.save_chart` for that language alone (``formats``, default SVG,
    PNG and PDF; the language's font); other keyword arguments go to :func:`topology_chart`.

    Returns:
        The written paths.
    """

    out: list[Path] = []
    # the languages save_chart would write: $TRAINPERF_FIGURE_LANGS in the main job's kernels (a
    # language without a font already said once by the job), those with a font otherwise
    for lang in charts.figure_languages(langs)[0]:
        chart = topology_chart(layout, system, lang=lang, **kwargs)
        out += charts.save_chart(chart, name, outdir, formats=formats, langs=[lang])
    return out
