"""Charts of the memory chapter: model state per GPU by node count, and the memory wall.

The memory wall puts bytes against bytes on one axis: the model state of each model (parameters x
bytes per parameter of the training recipe, 18 B/param for BF16 weights with FP32 gradients, FP32
master weights and Adam moments) and the memory of one accelerator, after Gholami et al., "AI and
Memory Wall" (IEEE Micro 2024, https://arxiv.org/abs/2403.14123).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import altair as alt
import polars as pl

from trainperf.report.charts.theme import PALETTE, RULE_COLOR, log_y, node_axis

__all__ = [
    "OTHER_RECIPES",
    "PLACED_LABELS",
    "memory_per_gpu",
    "memory_wall",
    "place_labels",
    "replace_labels",
]


def _nodes_title(frame: pl.DataFrame) -> str:
    """``nodes (4 GPUs each)`` from the frame's own ``n_gpus / n_nodes`` (a GB200 NVL72 tray has 4,
    an HGX board 8); ``nodes`` where the frame does not give one count per node."""
    if "n_gpus" not in frame.columns or not frame.height:
        return "nodes"
    per = {g / n for g, n in zip(frame["n_gpus"], frame["n_nodes"], strict=True) if g and n}
    if len(per) != 1 or not float(next(iter(per))).is_integer():
        return "nodes"
    g = int(next(iter(per)))
    return f"nodes ({g} GPU{'s' if g != 1 else ''} each)"


def memory_per_gpu(
    frame: pl.DataFrame,
    gpu_memory_gb: float,
    model_label: str,
    bytes_per_param: float | None = None,
) -> alt.LayerChart:
    """Model-state memory per GPU against node count (log axes), with the per-GPU memory line.

    Args:
        frame: :func:`trainperf.flops.memory_vs_nodes` (n_nodes, bytes_per_gpu_perfect,
            bytes_per_gpu_layout; bytes).
        gpu_memory_gb: per-GPU memory in GB (1e9 bytes), drawn as a dashed rule.
        model_label: the model, for the title (e.g. "GPT-3 175B").
        bytes_per_param: model-state bytes per parameter of the recipe, named in the subtitle.
    """
    d = (
        frame.unpivot(
            index=["n_nodes"],
            on=["bytes_per_gpu_perfect", "bytes_per_gpu_layout"],
            variable_name="sharding_label",
            value_name="bytes",
        )
        .with_columns(
            (pl.col("bytes") / 1e9).alias("gb"),
            pl.col("sharding_label").replace(
                {
                    "bytes_per_gpu_perfect": "evenly over all GPUs",
                    "bytes_per_gpu_layout": "TP x PP x ZeRO-1 layout",
                }
            ),
        )
        .drop_nulls("gb")
    )
    # only the shardings drawn (a model without a sourced layout has no layout line)
    present = set(d["sharding_label"].to_list())
    pairs = [("TP x PP x ZeRO-1 layout", PALETTE[0]), ("evenly over all GPUs", PALETTE[1])]
    order = [lab for lab, _ in pairs if lab in present]
    colours = [c for lab, c in pairs if lab in present]
    lines = (
        alt.Chart(d)
        .mark_line(point=alt.OverlayMarkDef(filled=True, size=60), strokeWidth=2)
        .encode(
            x=node_axis(d["n_nodes"], title=_nodes_title(frame)),
            y=log_y(
                "gb:Q", [*d["gb"].to_list(), gpu_memory_gb], "model state per GPU (GB, log scale)"
            ),
            color=alt.Color(
                "sharding_label:N",
                title="sharding",
                sort=order,
                scale=alt.Scale(domain=order, range=colours),
            ),
            tooltip=["n_nodes", "sharding_label", alt.Tooltip("gb:Q", format=".1f")],
        )
    )
    mem = pl.DataFrame({"gb": [gpu_memory_gb], "rule_label": [f"GPU memory {gpu_memory_gb:g} GB"]})
    rule = alt.Chart(mem).mark_rule(color=RULE_COLOR, strokeDash=[6, 4]).encode(y="gb:Q")
    text = (
        alt.Chart(mem)
        # at the plot's right edge whatever its width (a slide's plot is wider than the book's)
        .mark_text(
            align="right", baseline="bottom", x="width", dx=-4, dy=-4, color=RULE_COLOR, fontSize=12
        )
        .encode(y="gb:Q", text="rule_label:N")
    )
    sub = "dashed: memory of one GPU"
    if bytes_per_param:
        sub = f"{bytes_per_param:g} B/param model state; {sub}"
    return alt.layer(lines, rule, text).properties(
        title=alt.Title(f"{model_label}: model state per GPU against node count", subtitle=sub),
        width=560,
    )


# -- label placement ---------------------------------------------------------------------------

# candidate label offsets (dx, dy) in pixels from a point, tried in order: right, left, then
# further above and below on either side
_OFFSETS = [(9, 0), (-9, 0)] + [
    (sx * 9, sy * k * 13) for k in (1, 2, 3, 4) for sy in (-1, 1) for sx in (1, -1)
]


class _Box(NamedTuple):
    """A label's or a marker's box in pixels, y downwards."""

    x0: float
    y0: float
    x1: float
    y1: float


def place_labels(
    points: list[tuple[float, float, str]],
    width: float,
    height: float,
    font_size: float = 11,
    char_width: float = 0.62,
    marker: float = 6,
) -> list[tuple[float, float, str]]:
    """Greedy label placement: for each point (pixels), the first offset whose box hits nothing.

    A label box must stay inside ``width`` x ``height`` and may not overlap any point marker
    (``marker`` px half-size) or an earlier label. The text width is estimated as ``char_width`` x
    ``font_size`` per character (DejaVu Sans averages 0.55-0.6 em for Latin text).

    Args:
        points: ``(x_px, y_px, text)``, y downwards.

    Returns:
        ``(label_x_px, label_y_px, align)`` per point, ``align`` "left" or "right" (the label's
        anchor side; the y is the label's vertical middle). A point with no free offset gets the
        first one (right; left where right leaves the plot); :func:`_place` also names them.
    """
    return _place(points, width, height, font_size, char_width, marker)[0]


def _place(
    points: list[tuple[float, float, str]],
    width: float,
    height: float,
    font_size: float = 11,
    char_width: float = 0.62,
    marker: float = 6,
) -> tuple[list[tuple[float, float, str]], list[str]]:
    """:func:`place_labels`, and the texts of the labels that found no free offset."""
    markers = [_Box(x - marker, y - marker, x + marker, y + marker) for x, y, _ in points]
    placed: list[_Box] = []
    out = []
    unplaced: list[str] = []  # labels that found no free offset
    h = font_size + 2
    # the offsets were chosen for 11 px text: larger text (a projected slide) moves further away
    grow = max(1.0, font_size / 11)
    offsets = [(dx * grow, dy * grow) for dx, dy in _OFFSETS]
    for x, y, text in points:
        w = len(text) * font_size * char_width
        choice = None
        for dx, dy in offsets:
            x0 = x + dx if dx >= 0 else x + dx - w
            box = _Box(x0, y + dy - h / 2, x0 + w, y + dy + h / 2)
            if box.x0 < 0 or box.x1 > width or box.y0 < 0 or box.y1 > height:
                continue
            if any(_overlap(box, b) for b in markers + placed):
                continue
            choice = (dx, dy, box)
            break
        if choice is None:  # the first offset, kept inside the plot where it fits (counted below)
            dx, dy = offsets[0] if x + offsets[0][0] + w <= width else offsets[1]
            x0 = x + dx if dx >= 0 else x + dx - w
            choice = (dx, dy, _Box(x0, y - h / 2, x0 + w, y + h / 2))
            unplaced.append(text)
        dx, dy, box = choice
        placed.append(box)
        out.append((x + dx, y + dy, "left" if dx >= 0 else "right"))
    return out, unplaced


def _overlap(a: _Box, b: _Box) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def _byte_ticks(lo: float, hi: float) -> list[float]:
    return [
        10.0**k
        for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
        if lo <= 10.0**k <= hi
    ]


_BYTES_LABEL = (
    "datum.value >= 1e12 ? format(datum.value / 1e12, '~g') + ' TB' : "
    "format(datum.value / 1e9, '~g') + ' GB'"
)


#: Models of ``memory_wall.csv`` trained with another recipe than the one the memory-wall chart
#: draws, and how (the chart marks them and says so). DeepSeek-V3: FP8 mixed-precision training
#: with the AdamW moments in BF16 (DeepSeek-V3 Technical Report, arXiv 2412.19437, section 3.3).
OTHER_RECIPES = {
    "DeepSeek-V3": "trained in FP8 with BF16 Adam moments (its technical report, §3.3), "
    "so its own model state is smaller",
}


def memory_wall(table: pl.DataFrame, bytes_per_param: float = 18.0) -> alt.LayerChart:
    """Model state (parameters x ``bytes_per_param``) and one accelerator's memory by year, in bytes
    on one log axis; every point named, labels placed so that none overlaps another or a point.

    Args:
        table: ``data/reference/memory_wall.csv`` (:func:`trainperf.compare.load_reference`):
            kind ("model" or "accelerator"), name, year, parameters, memory_gb, source.
        bytes_per_param: model-state bytes per parameter (18: BF16 weights, FP32 gradients, FP32
            master weights, Adam moments; :data:`trainperf.flops.RECIPES`).
    """
    what_model = f"model state ({bytes_per_param:g} bytes per parameter)"
    # models whose own training recipe is not the one drawn: marked with * and named in a note
    other = {n: OTHER_RECIPES[n] for n in table["name"].to_list() if n in OTHER_RECIPES}
    table = table.with_columns(
        pl.when(pl.col("name").is_in(list(other)))
        .then(pl.col("name") + "*")
        .otherwise(pl.col("name"))
        .alias("name")
    )
    what_accel = "memory of one accelerator"
    d = (
        table.with_columns(
            pl.when(pl.col("kind") == "model")
            .then(pl.col("parameters").cast(pl.Float64) * bytes_per_param)
            .otherwise(pl.col("memory_gb").cast(pl.Float64) * 1e9)
            .alias("bytes"),
            pl.when(pl.col("kind") == "model")
            .then(pl.lit(what_model))
            .otherwise(pl.lit(what_accel))
            .alias("what_label"),
        )
        .drop_nulls("bytes")
        .sort("year", "bytes")
    )
    width, height = 640, 400
    x0, x1 = d["year"].min() - 0.5, d["year"].max() + 0.5
    y0, y1 = d["bytes"].min() / 2.5, d["bytes"].max() * 2.5
    d = d.with_columns(
        pl.Series(name, values)
        for name, values in _label_columns(
            d["year"].to_list(),
            d["bytes"].to_list(),
            d["name"].to_list(),
            (x0, x1),
            (y0, y1),
            width,
            height,
            _LABEL_FONT,
        ).items()
        if name != "unplaced"
    )
    x = alt.X(
        "year:Q",
        title="year",
        scale=alt.Scale(domain=[x0, x1], nice=False, zero=False),
        axis=alt.Axis(format="d", values=list(range(int(math.ceil(x0)), int(x1) + 1))),
    )
    y = alt.Y(
        "bytes:Q",
        title="bytes (log scale)",
        scale=alt.Scale(type="log", domain=[y0, y1], nice=False),
        axis=alt.Axis(values=_byte_ticks(y0, y1), labelExpr=_BYTES_LABEL),
    )
    colour = alt.Color(
        "what_label:N",
        title=None,
        scale=alt.Scale(domain=[what_model, what_accel], range=[PALETTE[0], PALETTE[3]]),
        legend=alt.Legend(orient="bottom", direction="vertical"),
    )
    base = alt.Chart(d)
    layers = [
        base.transform_filter("datum.moved")
        .mark_rule(strokeWidth=0.6, opacity=0.6)
        .encode(
            x=x,
            y=y,
            x2="label_year:Q",
            y2="label_bytes:Q",
            color=colour,
        ),
        base.mark_point(filled=True, size=70, opacity=0.95).encode(
            x=x,
            y=y,
            color=colour,
            shape=alt.Shape(
                "what_label:N",
                scale=alt.Scale(domain=[what_model, what_accel], range=["circle", "square"]),
                legend=None,
            ),
            tooltip=["name", "year", alt.Tooltip("bytes:Q", format=".3~s"), "source"],
        ),
    ]
    for align in ("left", "right"):
        layers.append(
            base.transform_filter(f"datum.align == '{align}'")
            .mark_text(align=align, baseline="middle", fontSize=_LABEL_FONT)
            .encode(
                x=alt.X("label_year:Q", scale=alt.Scale(domain=[x0, x1])),
                y=alt.Y("label_bytes:Q", scale=alt.Scale(type="log", domain=[y0, y1])),
                text="name:N",
                color=colour,
            )
        )
    subtitle = [f"every model drawn with the same recipe, {bytes_per_param:g} B per parameter"]
    subtitle += [f"* {n}: {why}" for n, why in other.items()]
    return alt.layer(*layers).properties(
        title=alt.Title(
            "Memory wall: model state against the memory of one accelerator", subtitle=subtitle
        ),
        width=width,
        height=height,
        # how the labels were placed, so that the chart laid out again at another size or text
        # size (the talk's projector figures, export.projector_spec) places them again
        usermeta={
            PLACED_LABELS: {
                "x": "year",
                "y": "bytes",
                "text": "name",
                "x_domain": [x0, x1],
                "y_domain": [y0, y1],
            }
        },
    )


_LABEL_FONT = 11  # px, the point labels of the memory wall

#: ``usermeta`` key of a chart whose point labels :func:`place_labels` placed (log y axis): the
#: fields of x, y and the label, and the axis domains (:func:`replace_labels` reads it)
PLACED_LABELS = "trainperf_placed_labels"


def _label_columns(
    xs: list[float],
    ys: list[float],
    names: list[str],
    x_domain: tuple[float, float],
    y_domain: tuple[float, float],
    width: float,
    height: float,
    font_size: float,
) -> dict[str, list]:
    """label_year, label_bytes, align and moved of each point (x linear, y log10) for a plot of
    ``width`` x ``height`` px and labels of ``font_size`` px (:func:`place_labels`), and
    ``unplaced``: the labels that found no free place."""
    (x0, x1), (ly0, ly1) = x_domain, (math.log10(y_domain[0]), math.log10(y_domain[1]))

    def px(x, b):
        return (x - x0) / (x1 - x0) * width, height - (math.log10(b) - ly0) / (ly1 - ly0) * height

    pts = [(*px(x, b), n) for x, b, n in zip(xs, ys, names, strict=True)]
    spots, unplaced = _place(pts, width, height, font_size=font_size)
    return {
        "unplaced": unplaced,
        "label_year": [x0 + lx / width * (x1 - x0) for lx, _, _ in spots],
        "label_bytes": [10 ** (ly0 + (height - ly) / height * (ly1 - ly0)) for _, ly, _ in spots],
        "align": [a for _, _, a in spots],
        "moved": [abs(ly - y) > 1 for (_, y, _), (_, ly, _) in zip(pts, spots, strict=True)],
    }


def replace_labels(spec: dict) -> dict:
    """``spec`` (a Vega-Lite dict of :func:`memory_wall`, possibly laid out again at another plot
    size and text size) with its point labels placed again for its own ``width``, ``height`` and
    label font size; a spec without :data:`PLACED_LABELS` in its ``usermeta`` is returned as is.
    Modifies and returns ``spec``; only the label positions of its data change."""
    meta = (spec.get("usermeta") or {}).get(PLACED_LABELS)
    if not meta:
        return spec
    sizes = [
        layer["mark"].get("fontSize")
        for layer in spec.get("layer", [])
        if isinstance(layer.get("mark"), dict) and layer["mark"].get("type") == "text"
    ]
    font = max([f for f in sizes if f] or [_LABEL_FONT])
    for rows in (spec.get("datasets") or {}).values():
        if not rows or "label_year" not in rows[0]:
            continue
        cols = _label_columns(
            [r[meta["x"]] for r in rows],
            [r[meta["y"]] for r in rows],
            [r[meta["text"]] for r in rows],
            tuple(meta["x_domain"]),
            tuple(meta["y_domain"]),
            spec["width"],
            spec["height"],
            font,
        )
        # how many labels found no free place at this size (talk/prepare.py tries another layout)
        meta["unplaced"] = cols.pop("unplaced")
        for i, r in enumerate(rows):
            for key, values in cols.items():
                r[key] = values[i]
    return spec
