"""Numbers the notebooks compute for the book's prose: recorded per notebook, merged into values.yml."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from trainperf.atomic import write_text_atomic

__all__ = ["merge_values", "record_values"]


def record_values(values: dict, path: str | Path | None) -> None:
    """Record numbers a notebook computed for the book's prose (JSON, written atomically).

    The main job passes each notebook a ``values_path``; after all notebooks ran it merges the files
    into ``<out>/values.yml`` as ``values: {<notebook>: {...}}``, which ``_quarto.yml`` reads through
    ``metadata-files``, so that chapters write ``{{< meta values.mlperf_runs.n_result_files >}}``
    instead of typing a number. The preview site resolves the same shortcodes.

    Args:
        values: flat mapping of names (letters, digits, ``_``) to numbers or short strings.
        path: where to write; empty or None: do nothing (a notebook run on its own).

    Returns nothing, so that a notebook's last cell shows no dump of the values.

    Raises:
        ValueError: a name that Quarto's ``meta`` shortcode could not address.
    """
    for key in values:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(key)):
            raise ValueError(f"value name {key!r}: use letters, digits and _ only")
    if path:
        write_text_atomic(json.dumps(values, indent=2, default=str), path)


def merge_values(values_dir: str | Path, target: str | Path) -> dict:
    """Merge ``<values_dir>/<notebook>.json`` files into ``target`` (YAML, ``values:`` mapping)."""

    merged = {
        p.stem: json.loads(p.read_text(encoding="utf-8"))
        for p in sorted(Path(values_dir).glob("*.json"))
    }
    write_text_atomic(
        yaml.safe_dump({"values": merged}, sort_keys=True, allow_unicode=True), target
    )
    return merged
