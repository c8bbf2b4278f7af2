"""Lay out what the talk's Quarto project reads, and check both decks against it (``make talk``).

Copies the figures ``make report`` exported (``figures/NAME.png`` in English, ``figures/ja/NAME.png``
in Japanese) into ``talk/figures`` and the numbers the report computed (``_output/values.yml``) into
``talk/values.yml``, which ``talk/_quarto.yml`` reads as metadata so that the slides quote them with
``{{< meta values.<notebook>.<key> >}}``. Then every deck listed in ``_quarto.yml`` is checked: every
figure it shows exists in the copy, and every value it quotes exists in ``values.yml`` (Quarto would
otherwise print ``?meta:...`` on the slide). Failures print one line each and exit 1::

    python talk/prepare.py --figures figures --values _output/values.yml --talk talk

Both copies are made in a temporary sibling and renamed into place, so an interrupted run never
leaves half a figure folder; the inputs are never modified.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from pathlib import Path

import yaml

FIGURE = re.compile(r"!\[[^\]]*\]\((figures/[^)\s]+)\)")
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
