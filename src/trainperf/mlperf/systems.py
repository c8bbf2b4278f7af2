"""What a submission's ``systems/<system>.json`` states beyond the loader's counts: the datatype."""

from __future__ import annotations

import json
import re
from pathlib import Path

__all__ = ["precision_in_logs", "precision_in_system"]

_PRECISION_WORDS = {"fp8": re.compile(r"\bfp8\b", re.I), "bf16": re.compile(r"\bbf16\b", re.I)}


def precision_in_logs(result_files) -> str | None:
    """The datatype (``fp8``/``bf16``) the submission's own files state, or None.

    MLPerf Training logs have no precision key (mlperf-logging's ``constants.py`` defines none);
    a submission may say it in its ``systems/<system>.json`` (``framework``, ``sw_notes``,
    ``hw_notes``, ``other_software_stack``). Read there, next to each ``result_*.txt`` in the
    MLCommons layout (``<submitter>/results/<system>/<benchmark>/result_*.txt``); exactly one of
    the two words must appear, else None (unknown: the caller falls back to the config).
    """
    found: set[str] = set()
    for f in {Path(f) for f in result_files if f}:
        if len(f.parts) < 5 or f.parts[-4] != "results":
            continue
        js = Path(*f.parts[:-4]) / "systems" / f"{f.parts[-3]}.json"
        try:
            desc = json.loads(js.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(desc, dict):
            continue
        found |= _words(desc)
    return found.pop() if len(found) == 1 else None


def _words(desc: dict) -> set[str]:
    text = " ".join(
        json.dumps(desc.get(k, ""))
        for k in ("framework", "sw_notes", "hw_notes", "other_software_stack")
    )
    return {p for p, rx in _PRECISION_WORDS.items() if rx.search(text)}


def precision_in_system(desc: dict) -> str | None:
    """:func:`precision_in_logs` of one parsed systems JSON: ``fp8``/``bf16`` when exactly one of
    the two words appears in its ``framework``, ``sw_notes``, ``hw_notes`` or
    ``other_software_stack``, else None."""
    found = _words(desc) if isinstance(desc, dict) else set()
    return found.pop() if len(found) == 1 else None
