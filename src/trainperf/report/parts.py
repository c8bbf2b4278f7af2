"""The book's part titles from the provenance of its inputs.

``_quarto.yml`` names the part that holds the cluster telemetry and Slurm chapters after the demo's
inputs, which are generated (:data:`GENERATED_PART`). A user whose config gives real telemetry or a
real ``sacct`` dump must not read "generated" over their own data, so the main job writes the part
title that the config's inputs support (``values.inputs``, :meth:`trainperf.config.ClusterConfig.inputs`)
into the staged Quarto project (:func:`trainperf.report.job.stage_book`) and the preview site.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

__all__ = [
    "CASE_STUDY_PART",
    "GENERATED_PART",
    "INPUT_CHAPTERS",
    "absent_notebooks",
    "part_title",
    "shown_appendices",
    "shown_chapters",
    "with_part_titles",
]

#: The title of the telemetry and operations part in ``_quarto.yml`` (the demo: both generated).
GENERATED_PART = "Method on generated data"


def part_title(title: str, inputs: Mapping[str, bool] | None) -> str:
    """The part title to show for ``title`` of ``_quarto.yml``, given the run's ``values.inputs``.

    Only :data:`GENERATED_PART` depends on the inputs: kept when the telemetry and the Slurm
    history are both synthetic (or not known: ``inputs`` None or empty); else it names what is
    measured and what, if anything, is generated; where one of the two is not given (``inputs``
    marks it false), the part holds the other's chapter only and is named after it alone.

    Args:
        title: a ``part:`` title of ``_quarto.yml``.
        inputs: ``telemetry_synthetic`` and ``sacct_synthetic`` (booleans) among others.
    """
    if title != GENERATED_PART or not inputs:
        return title
    telemetry = bool(inputs.get("telemetry_synthetic"))
    sacct = bool(inputs.get("sacct_synthetic"))
    # one of the two not given: the part holds the other's chapter only (shown_chapters)
    if "telemetry" in inputs and not inputs["telemetry"]:
        return "Operations on generated data" if sacct else "Operations"
    if "sacct" in inputs and not inputs["sacct"]:
        return "Cluster telemetry on generated data" if telemetry else "Cluster telemetry"
    if telemetry and sacct:
        return GENERATED_PART
    if telemetry:
        return "Operations; cluster telemetry on generated data"
    if sacct:
        return "Cluster telemetry; operations on generated data"
    return "Cluster telemetry and operations"


def with_part_titles(chapters: list, inputs: Mapping[str, bool] | None) -> list:
    """``book.chapters`` of ``_quarto.yml`` with every ``part:`` title set by :func:`part_title`
    (a new list; the argument is not changed)."""
    out = []
    for entry in chapters or []:
        if isinstance(entry, dict) and "part" in entry:
            entry = {**entry, "part": part_title(str(entry["part"]), inputs)}
        out.append(entry)
    return out


#: The title of the demo's case-study part in ``_quarto.yml`` (its paper's tables, its talk's
#: ratio, its story): in the demo's book only (``values.inputs.demo``).
CASE_STUDY_PART = "Case study: SAKURAONE against NVIDIA Eos"


#: The chapters of the telemetry and operations part, each shown only where its input is given
#: (``values.inputs``): a book without cluster telemetry or accounting has no chapter, and no part,
#: that says only that it was not given (the introduction lists the inputs the book has).
INPUT_CHAPTERS = {
    "chapters/telemetry_cluster.qmd": "telemetry",
    "chapters/operations.qmd": "sacct",
}


def shown_chapters(chapters: list, inputs: Mapping[str, bool] | None) -> list:
    """``book.chapters`` of ``_quarto.yml`` as a run's book shows them: without the
    :data:`CASE_STUDY_PART` unless ``inputs`` says the book is the demo's (``inputs["demo"] is
    True``), without a chapter of :data:`INPUT_CHAPTERS` whose input ``inputs`` marks as not
    given (false), and without a part left with no chapter. ``inputs`` None: all of them."""
    if inputs is None:
        return list(chapters or [])
    demo = inputs.get("demo") is True
    dropped = {c for c, key in INPUT_CHAPTERS.items() if key in inputs and not inputs[key]}
    out = []
    for e in chapters or []:
        if isinstance(e, dict) and "part" in e:
            if e.get("part") == CASE_STUDY_PART and not demo:
                continue
            kept = [c for c in e.get("chapters") or [] if str(c) not in dropped]
            if kept:
                out.append({**e, "chapters": kept})
        elif str(e) not in dropped:
            out.append(e)
    return out


def absent_notebooks(notebooks_dir: Path) -> set[str]:
    """The stems of the executed notebooks in ``notebooks_dir`` that are stand-ins for an input
    the config does not give (``metadata.trainperf.input_given`` false,
    :mod:`trainperf.report.absent`)."""
    found = set()
    for nb in Path(notebooks_dir).glob("*.ipynb"):
        try:
            meta = json.loads(nb.read_text(encoding="utf-8")).get("metadata", {})
        except (OSError, ValueError):
            continue
        tp = meta.get("trainperf") if isinstance(meta, dict) else None
        if isinstance(tp, dict) and tp.get("input_given") is False:
            found.add(nb.stem)
    return found


def shown_appendices(appendices: list, absent: set[str]) -> list:
    """``book.appendices`` without the pages of the notebooks in ``absent`` (their chapter says
    in one sentence that the input is not given; no appendix advertises it)."""
    return [a for a in appendices or [] if Path(str(a)).stem not in absent]
