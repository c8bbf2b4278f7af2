"""Building the book of a run: ``quarto render`` of the staged project where Quarto is on PATH,
else the pandoc preview site; and the figure languages of the run."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from trainperf.report.charts.fonts import figure_languages
from trainperf.report.demo import book_bibliography
from trainperf.report.execution import rel_path
from trainperf.report.preview import build_preview_site, network_loads
from trainperf.report.staging import book_title, stage_book

__all__ = ["QUARTO_INSTALL_HINT", "build_book", "figure_setup", "quarto_available", "site_figures"]

QUARTO_INSTALL_HINT = "install Quarto from https://quarto.org/docs/get-started/ or `conda install -c conda-forge quarto`"


def quarto_available() -> str | None:
    """Return the path of the ``quarto`` binary on PATH, or None."""
    return shutil.which("quarto")


def site_figures(figures: Path, language: str) -> Path:
    """The figure folder the preview site shows for the config's ``language``: the notebooks export
    every figure in English to ``figures/`` and in Japanese to ``figures/ja/``
    (:data:`trainperf.report.charts.FIGURE_LANGS`); the prose stays English."""
    ja = figures / "ja"
    return ja if language == "ja" and ja.is_dir() else figures


def figure_setup(out: Path, log) -> tuple[list[str], Path]:
    """Figure languages (Japanese needs a CJK font; without one, said once and English only) and
    the export log of this run."""

    figure_langs, _, font_note = figure_languages(warn=False)
    if font_note:
        log(font_note)
    figure_log = out / "figures.jsonl"
    figure_log.parent.mkdir(parents=True, exist_ok=True)
    figure_log.unlink(missing_ok=True)
    return list(figure_langs), figure_log


def build_book(
    root: Path, out: Path, figures: Path, cfg, values: dict, use_quarto: bool | None, log
) -> dict:
    """``quarto render`` of the run's staged project (:func:`stage_book`) when Quarto is there,
    for any ``out``, else the pandoc preview site. Returns the summary's ``quarto``, ``site`` and
    ``problems``."""
    quarto = (
        quarto_available() if use_quarto is None else (quarto_available() if use_quarto else None)
    )
    demo = (values.get("inputs") or {}).get("demo") is True
    if quarto:
        stage = stage_book(
            root, out, figures, cfg.name, {**cfg.inputs(), **(values.get("inputs") or {})}, values
        )
        book_bibliography(root, stage / "references.bib", demo)  # the copy, without the demo's
        log(f"rendering the book with quarto render in {rel_path(stage, root)}")
        subprocess.run([quarto, "render"], cwd=stage, check=True)
        book = stage / "_book"
        if out.resolve() == (root / "_output").resolve():
            # the default run: the book where `make report` has always put it
            shutil.rmtree(root / "_book", ignore_errors=True)
            shutil.copytree(book, root / "_book", symlinks=False)
            book = root / "_book"
        problems = []
        for page, urls in network_loads(book).items():
            line = f"{rel_path(book, root)}/{page} loads from the network: {', '.join(urls[:3])}"
            problems.append(line)
            log(f"warning: {line}")
        return {"quarto": True, "site": str(book / "index.html"), "problems": problems}
    note = (
        "This is the preview site, built with pandoc because Quarto was not found on PATH; "
        f"{QUARTO_INSTALL_HINT}, then run the same `trainperf report` command again for the book."
    )
    index, problems = build_preview_site(
        root,
        out / "notebooks",
        site_figures(figures, cfg.language),
        values,
        out / "site",
        note=note if use_quarto is None else "",
        log=log,
        title=book_title(cfg.name),
        bibliography=book_bibliography(root, out / "scratch" / "references.bib", demo),
    )
    if use_quarto is None:
        log(
            f"Quarto not found on PATH: skipped `quarto render`; preview site at {rel_path(index, root)}; {QUARTO_INSTALL_HINT}"
        )
    return {"quarto": False, "site": str(index), "problems": problems}
