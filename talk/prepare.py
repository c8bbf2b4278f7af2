"""Lay out what the talk's Quarto project reads, and check both decks against it (``make talk``).

Copies the figures ``make report`` exported (``figures/NAME.png`` in English, ``figures/ja/NAME.png``
in Japanese) into ``talk/figures`` and the numbers the report computed (``_output/values.yml``) into
``talk/values.yml``, and renders the figures the decks show again with text large enough for a
projector (at least 20 px on the 1600 x 900 slide, :func:`projector_figures`). ``talk/_quarto.yml``
reads ``talk/values.yml`` as metadata, so that the slides quote the numbers with
``{{< meta values.<notebook>.<key> >}}``. Then every deck listed in ``_quarto.yml`` is checked: every
figure it shows exists in the copy, and every value it quotes exists in ``values.yml`` (Quarto would
otherwise print ``?meta:...`` on the slide). Failures print one line each and exit 1::

    python talk/prepare.py --figures figures --values _output/values.yml --talk talk

Both copies are made in a temporary sibling and renamed into place, so an interrupted run never
leaves half a figure folder; the inputs are never modified.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

import yaml

FIGURE = re.compile(r"!\[[^\]]*\]\((figures/[^)\s]+)\)")
FIGURE_ATTRS = re.compile(r"!\[[^\]]*\]\((figures/[^)\s]+)\)\{([^}]*)\}")

# The slide (talk/_quarto.yml, talk/talk.css): laid out at 1600 x 900; talk.css gives a figure a box
# as wide as the slide and 600 px high (470 px with .short, under a diagram) and fits the picture into
# it (object-fit: contain). reveal.js shows the slide scaled by 1 - margin (0.04) in a window of the
# slide's size (Reveal.getScale() is 0.96 in a 1600 x 900 window), so text of 20 px on that screen
# is 20 / 0.96 = 20.8 px on the slide.
SLIDE_FIG_W = 1600
SLIDE_FIG_H = {"": 600, "short": 470}
SHOWN = 1 - 0.04  # the slide's scale in a 1600 x 900 window
MIN_TEXT_PX = 20  # smallest text on a 1600 x 900 screen
# layouts tried, in order of preference, until the text is large enough, no axis label is lost, no
# point label is left unplaced and the plots fill the slide's width (MIN_FILL):
# (text factor, plot width factor, plot height factor, legend, panels stacked), legend one of
# "right" (bottom legends moved to the right of the plot), "row" (under the plot, in one row) and
# "bottom" (as in the book); the slide's box is wide, so plots get wider and, where needed, lower;
# last, two panels side by side (hconcat) are stacked, each as wide as the slide allows
LAYOUTS = tuple(
    (t, w, h, legend, False)
    for h in (1.0, 0.8, 0.65)
    for legend in ("right", "row", "bottom")
    for w in (2.0, 1.5, 1.0)
    for t in (1.5, 1.8, 2.1)
) + tuple(
    (t, w, h, legend, True)
    for h in (0.65, 0.5)
    for legend in ("right", "row")
    for w in (2.8, 2.5, 2.0)
    for t in (1.8, 2.1, 1.5)
)
# the plots (panels side by side added up) should span this share of the slide's width at least:
# a chart drawn small in the middle of a wide slide leaves the room its text needs unused
MIN_FILL = 0.7
_FONT_SIZE = re.compile(r'font-size="([\d.]+)(?:px)?"')
_SVG_SIZE = re.compile(r'<svg[^>]*\swidth="([\d.]+)"[^>]*\sheight="([\d.]+)"')
META = re.compile(r"\{\{<\s*meta\s+([^\s>]+)\s*>\}\}")


def decks(talk: Path) -> list[Path]:
    """The qmd files ``talk/_quarto.yml`` renders (``project.render``), in order."""
    config = yaml.safe_load((talk / "_quarto.yml").read_text(encoding="utf-8"))
    return [talk / name for name in config["project"]["render"]]


def referenced_figures(text: str) -> list[str]:
    """The image paths (``figures/...``) a deck shows, in order."""
    return FIGURE.findall(text)


def meta_keys(text: str) -> list[str]:
    """The metadata keys a deck quotes with ``{{< meta KEY >}}``, in order (``values.a.b``)."""
    return META.findall(text)


def lookup(values: dict, key: str):
    """The value at dotted ``key`` in ``values`` (the parsed values.yml); KeyError when absent."""
    node = values
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(key)
        node = node[part]
    if isinstance(node, dict):
        raise KeyError(key)  # a section, not a value
    return node


#: What ``make talk`` says when the Japanese deck cannot be made: its figures need a CJK font
#: (trainperf.report.charts.fonts looks for Noto Sans CJK JP and the other families it names).
JA_FONT_NOTE = (
    "the Japanese deck (index.qmd) needs the Japanese figures, which need a CJK font such as "
    "Noto Sans CJK JP (Debian/Ubuntu: apt-get install fonts-noto-cjk; then run 'make report' and "
    "'make talk' again); rendering the English deck only"
)


def japanese_figures(figures: Path) -> bool:
    """Whether ``make report`` exported the Japanese figure set (``figures/ja/*``): it does only
    where a CJK font is installed."""
    ja = figures / "ja"
    return ja.is_dir() and any(ja.iterdir())


def decks_to_render(talk: Path, figures: Path) -> list[Path]:
    """The decks of ``talk/_quarto.yml`` that can be made from ``figures``: all of them, less any
    deck that shows a Japanese figure (``figures/ja/...``) where there are none."""
    ja = japanese_figures(figures)
    return [
        d
        for d in decks(talk)
        if ja
        or not any(
            f.startswith("figures/ja/") for f in referenced_figures(d.read_text(encoding="utf-8"))
        )
    ]


def problems(talk: Path, values: dict, only: list[Path] | None = None) -> list[str]:
    """``deck: what is wrong`` for each figure missing from ``talk/figures`` and each quoted value
    missing from ``values`` (of the decks ``only``, default every deck)."""
    out = []
    for deck in decks(talk) if only is None else only:
        text = deck.read_text(encoding="utf-8")
        for ref in referenced_figures(text):
            if not (talk / ref).is_file():
                out.append(f"{deck.name}: figure {ref} not found (run 'make report' first)")
        for key in meta_keys(text):
            try:
                lookup(values, key)
            except KeyError:
                out.append(f"{deck.name}: {key} is not in values.yml")
    return out


def slide_figures(text: str) -> list[tuple[str, float]]:
    """The images a deck shows with the height of their box on the slide (px), in order."""
    return [
        (path, SLIDE_FIG_H["short" if ".short" in attrs else ""])
        for path, attrs in FIGURE_ATTRS.findall(text)
    ]


def svg_text_px(svg: str, box_h: float, box_w: float = SLIDE_FIG_W) -> tuple[float, float]:
    """(smallest font size in the SVG, the scale at which it is shown): the picture fitted into a
    ``box_w`` x ``box_h`` box keeping its aspect ratio (talk.css: object-fit: contain)."""
    w, h = (float(v) for v in _SVG_SIZE.search(svg).groups())
    sizes = [float(v) for v in _FONT_SIZE.findall(svg)]
    return (min(sizes) if sizes else float("inf")), min(box_w / w, box_h / h)


def shown_text_px(svg: str, box_h: float) -> float:
    """The smallest text of ``svg`` as a 1600 x 900 screen shows it in a figure box ``box_h`` high
    (px): its font size x the picture's scale in the box x the slide's scale (:data:`SHOWN`)."""
    smallest, scale = svg_text_px(svg, box_h)
    return smallest * scale * SHOWN


def hidden_axis_labels(spec: dict, vertical: bool = False) -> list[str]:
    """The labels of horizontal axes that Vega hides in ``spec`` (a label that would overlap its
    neighbour is drawn with opacity 0, ``labelOverlap``): a node axis that loses its 128 when the
    text grows. (A y axis thinning its reading ticks on a lower plot loses no data position.) With
    ``vertical``, those of vertical axes too: the bar names of a horizontal bar chart."""
    import vl_convert as vlc  # noqa: PLC0415

    hidden: list[str] = []

    def walk(node, horizontal=False):
        if isinstance(node, dict):
            if node.get("role") == "axis":
                for axis in node.get("items", []):
                    walk(axis, vertical or axis.get("orient") in ("bottom", "top"))
                return
            if horizontal and node.get("marktype") == "text" and node.get("role") == "axis-label":
                hidden.extend(
                    str(i.get("text")) for i in node.get("items", []) if i.get("opacity") == 0
                )
            for value in node.values():
                if isinstance(value, (dict, list)):
                    walk(value, horizontal)
        elif isinstance(node, list):
            for item in node:
                walk(item, horizontal)

    walk(vlc.vegalite_to_scenegraph(spec))
    return hidden


def _unplaced_labels(spec: dict) -> int:
    """How many point labels found no free place in ``spec`` laid out again (the memory wall's,
    trainperf.report.charts.memory.replace_labels); 0 for a chart without placed labels."""
    from trainperf.report.charts.memory import PLACED_LABELS  # noqa: PLC0415

    return len(((spec.get("usermeta") or {}).get(PLACED_LABELS) or {}).get("unplaced", []))


def _names_on_y(spec: dict) -> bool:
    """Whether a y encoding of ``spec`` is nominal or ordinal: its axis labels name rows."""
    if isinstance(spec, dict):
        y = spec.get("y")
        if isinstance(y, dict) and y.get("type") in ("nominal", "ordinal"):
            return True
        return any(_names_on_y(v) for k, v in spec.items() if k not in ("data", "datasets"))
    if isinstance(spec, list):
        return any(_names_on_y(v) for v in spec)
    return False


def plot_width(spec: dict) -> float:
    """The width of the plots of a Vega-Lite ``spec`` (px, as laid out): a view's ``width``, or
    the theme's ``config.view.continuousWidth`` (Vega-Lite's 300 without one); panels side by side
    (``hconcat``) added up, panels one above the other (``vconcat``) their widest."""
    default = ((spec.get("config") or {}).get("view") or {}).get("continuousWidth", 300)

    def width(node: dict) -> float:
        if "hconcat" in node:
            return sum(width(n) for n in node["hconcat"])
        if "vconcat" in node:
            return max(width(n) for n in node["vconcat"])
        if isinstance(node.get("width"), (int, float)):
            return float(node["width"])
        if "layer" in node:
            return max(width(n) for n in node["layer"])
        return float(default)

    return width(spec)


def plot_fill(spec: dict, svg: str, box_h: float) -> float:
    """The share of the slide's width (:data:`SLIDE_FIG_W`) that the plots of ``spec`` take when
    its picture ``svg`` is fitted into the figure box ``box_h`` high (:func:`svg_text_px`)."""
    _, scale = svg_text_px(svg, box_h)
    return plot_width(spec) * scale / SLIDE_FIG_W


def projector_layout(spec: dict, box_h: float) -> tuple[dict, str]:
    """The Vega-Lite ``spec`` laid out again for a slide's figure box ``box_h`` high
    (trainperf.report.charts.export.projector_spec) with the first of :data:`LAYOUTS` whose
    smallest text is at least :data:`MIN_TEXT_PX` on a 1600 x 900 screen, which keeps every axis
    label the book's figure shows (:func:`hidden_axis_labels`), places every point label and whose plots fill
    :data:`MIN_FILL` of the slide's width (:func:`plot_fill`). Where none does, of the layouts
    keeping every label with text large enough the one whose plots are widest; where none has text
    large enough, the one keeping every label whose smallest text comes out largest. Returns the
    spec and its SVG (:func:`shown_text_px` of it gives the smallest text on the screen)."""
    # here, not at the top: checking the decks (problems) needs neither
    from trainperf.report.charts.export import projector_spec, render_svg  # noqa: PLC0415

    best = None
    # every axis label the book's figure shows: of a vertical axis too where it names things (the
    # bars of a horizontal bar chart), not where it reads a quantity (a lower plot thins its ticks)
    vertical = _names_on_y(spec)
    book_hidden = len(hidden_axis_labels(spec, vertical=vertical))
    for t, w, h, legend, stack in LAYOUTS:
        if stack and "hconcat" not in spec:
            continue
        laid_out = projector_spec(
            spec, t, w, h, legend_right=legend == "right", stack=stack, legend_row=legend == "row"
        )
        svg = render_svg(laid_out)
        shown = shown_text_px(svg, box_h)
        readable = shown >= MIN_TEXT_PX
        fill = plot_fill(laid_out, svg, box_h)
        rank = (readable, fill if readable else shown)
        if best is not None and best[2] and (True, *rank) <= best[2:]:
            continue  # cannot beat a layout had: its labels need not be looked at (a scenegraph)
        whole = len(
            hidden_axis_labels(laid_out, vertical=vertical)
        ) <= book_hidden and not _unplaced_labels(laid_out)
        if best is None or (whole, *rank) > best[2:]:
            best = (laid_out, svg, whole, *rank)
        if whole and readable and fill >= MIN_FILL:
            break
    return best[0], best[1]


def projector_png(spec: dict, box_h: float) -> tuple[bytes, str]:
    """A PNG of the Vega-Lite ``spec`` laid out for the slide (:func:`projector_layout`), rendered
    by vl-convert at twice the size it is shown at (or more). Returns the PNG and the SVG it was
    drawn from."""
    import vl_convert as vlc  # noqa: PLC0415

    _, svg = projector_layout(spec, box_h)
    _, scale = svg_text_px(svg, box_h)
    return vlc.svg_to_png(svg, scale=max(2.0, 2 * scale)), svg


def projector_figures(figures: Path, talk: Path) -> dict[str, float]:
    """Render again, for the projector, every figure the decks show whose spec ``make report``
    kept beside it (``.NAME.vl.json``), into ``talk/figures``; return each one's smallest text size
    on a 1600 x 900 screen (px, :func:`shown_text_px`). Beside each PNG, ``.NAME.slide.json`` gives
    the size of the picture it was drawn at and its smallest text there (px). A figure without a kept spec stays the copy of the book's figure."""
    done: dict[str, float] = {}
    for deck in decks(talk):
        for ref, box_h in slide_figures(deck.read_text(encoding="utf-8")):
            rel = Path(ref).relative_to("figures")
            spec_path = figures / rel.parent / f".{rel.stem}.vl.json"
            if ref in done or not spec_path.is_file():
                continue
            png, svg = projector_png(json.loads(spec_path.read_text(encoding="utf-8")), box_h)
            done[ref] = shown_text_px(svg, box_h)
            out = talk / ref
            tmp = out.with_name(f".{out.name}.tmp")
            tmp.write_bytes(png)
            tmp.replace(out)
            # the picture's own size and smallest text, for a check of the rendered slide (the
            # size it is shown at times this, tests/test_browser.py)
            smallest, _ = svg_text_px(svg, box_h)
            w, h = (float(v) for v in _SVG_SIZE.search(svg).groups())
            note = out.with_name(f".{out.stem}.slide.json")
            tmp = note.with_name(f"{note.name}.tmp")
            tmp.write_text(json.dumps({"smallest_text_px": smallest, "width": w, "height": h}))
            tmp.replace(note)
    return done


def _replace(src: Path, dst: Path) -> None:
    """Copy ``src`` (file or folder) to ``dst`` through a temporary sibling, then rename."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{dst.name}.", dir=dst.parent))
    try:
        staged = tmp / dst.name
        if src.is_dir():
            shutil.copytree(src, staged)
        else:
            shutil.copy2(src, staged)
        if dst.is_dir():
            old = tmp / (dst.name + ".old")
            dst.rename(old)
        staged.rename(dst)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def prepare(figures: Path, values_yml: Path, talk: Path) -> list[str]:
    """Copy ``figures`` to ``talk/figures`` and ``values_yml`` to ``talk/values.yml``; return the
    :func:`problems` of the decks (empty when they are ready to render).

    Raises FileNotFoundError (with the command that makes it) when an input is missing."""
    if not figures.is_dir() or not any(figures.glob("*.png")):
        raise FileNotFoundError(f"no figures in {figures}; run 'make report' first")
    if not values_yml.is_file():
        raise FileNotFoundError(f"no {values_yml}; run 'make report' first")
    values = yaml.safe_load(values_yml.read_text(encoding="utf-8")) or {}
    _replace(figures, talk / "figures")
    _replace(values_yml, talk / "values.yml")
    projector_figures(figures, talk)
    return problems(talk, values, decks_to_render(talk, figures))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--figures", type=Path, default=Path("figures"))
    ap.add_argument("--values", type=Path, default=Path("_output/values.yml"))
    ap.add_argument("--talk", type=Path, default=Path(__file__).resolve().parent)
    ap.add_argument(
        "--print-decks",
        action="store_true",
        help="print the decks to render (file names in talk/, one line) where not every deck can "
        "be made; nothing where the whole project renders (for `make talk`)",
    )
    args = ap.parse_args(argv)
    try:
        found = prepare(args.figures, args.values, args.talk)
    except (FileNotFoundError, yaml.YAMLError) as exc:
        print(f"talk: {exc}", file=sys.stderr)
        return 1
    for line in found:
        print(f"talk: {line}", file=sys.stderr)
    if found:
        return 1
    render = decks_to_render(args.talk, args.figures)
    partial = len(render) < len(decks(args.talk))
    if partial:
        print(f"talk: {JA_FONT_NOTE}", file=sys.stderr)
    if args.print_decks and partial:  # nothing printed: render the whole project
        print(" ".join(d.name for d in render))
    return 0


if __name__ == "__main__":
    sys.exit(main())
