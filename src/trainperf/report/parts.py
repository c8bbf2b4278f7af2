"""The book's part titles from the provenance of its inputs.

``_quarto.yml`` names the part that holds the cluster telemetry and Slurm chapters after the demo's
inputs, which are generated (:data:`GENERATED_PART`). A user whose config gives real telemetry or a
real ``sacct`` dump must not read "generated" over their own data, so the main job writes the part
title that the config's inputs support (``values.inputs``, :meth:`trainperf.config.ClusterConfig.inputs`)
into the staged Quarto project (:func:`trainperf.report.job.stage_book`) and the preview site.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["GENERATED_PART", "part_title", "with_part_titles"]

#: The title of the telemetry and operations part in ``_quarto.yml`` (the demo: both generated).
GENERATED_PART = "Method on generated data"


def part_title(title: str, inputs: Mapping[str, bool] | None) -> str:
    """The part title to show for ``title`` of ``_quarto.yml``, given the run's ``values.inputs``.

    Only :data:`GENERATED_PART` depends on the inputs: kept when the telemetry and the Slurm
    history are both synthetic (or not known: ``inputs`` None or empty); else it names what is
    measured and what, if anything, is generated. A missing input counts as not generated (its
    chapter says it was not given).

    Args:
        title: a ``part:`` title of ``_quarto.yml``.
        inputs: ``telemetry_synthetic`` and ``sacct_synthetic`` (booleans) among others.
    """
    if title != GENERATED_PART or not inputs:
        return title
    telemetry = bool(inputs.get("telemetry_synthetic"))
    sacct = bool(inputs.get("sacct_synthetic"))
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
