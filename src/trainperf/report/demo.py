"""The bundled demo's case study and what keeps it out of a user's book: whether a config is the
demo's (:func:`is_demo`), the notebook parameters that hide its material otherwise, and the
bibliography without its sources."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

from trainperf import project_root
from trainperf.atomic import write_text_atomic
from trainperf.config import DEMO_CONFIG, load_config
from trainperf.errors import ConfigError

__all__ = ["book_bibliography", "demo_overrides", "is_demo"]


def _demo_config(root: Path):
    """The bundled demo's config (of this checkout, else of the installed package), or None."""
    for base in (root, project_root()):
        path = base / DEMO_CONFIG
        if path.is_file():
            try:
                return load_config(path)
            except ConfigError:
                return None
    return None


_BIB_ENTRY = re.compile(r"^@\w+\s*\{", re.MULTILINE)


def book_bibliography(root: Path, dest: Path, demo: bool) -> Path:
    """The BibTeX file of a book: the project's ``references.bib`` for the demo; for any other
    config a copy at ``dest`` without the entries that name the demo's case study (its paper,
    white paper and talk: the references page lists every entry, ``nocite: @*``).

    Returns:
        The file to render with (``root / "references.bib"`` or ``dest``, written atomically).
    """
    bib = root / "references.bib"
    demo_cfg = None if demo else _demo_config(root)
    if demo or demo_cfg is None or not bib.is_file():
        return bib
    text = bib.read_text(encoding="utf-8")
    starts = [m.start() for m in _BIB_ENTRY.finditer(text)] + [len(text)]
    head, entries = text[: starts[0]], [text[a:b] for a, b in itertools.pairwise(starts)]
    name = demo_cfg.name.casefold()
    kept = [e for e in entries if name not in e.casefold()]
    write_text_atomic(head + "".join(kept), dest)
    return dest


def is_demo(cfg, root: Path) -> bool:
    """Whether ``cfg`` is the bundled demo's case study: the config's ``name`` and its
    ``published:`` rows (byte for byte) are those of :data:`~trainperf.config.DEMO_CONFIG`.

    Only then does the book carry the case study's own material (its paper's table, its talk's
    quoted ratio, the prose about its transcribed rows, its name beside the synthetic data it
    calibrated): ``values.inputs.demo``, tested by the chapters with ``when-meta``. Any other
    config, one with published rows of its own included, gets none of it. A demo config that
    cannot be read (an installed package without ``configs/``) makes every config a user's."""
    demo = _demo_config(root) if cfg.published is not None else None
    if demo is None or demo.published is None or cfg.name != demo.name:
        return False
    try:
        return Path(cfg.published.path).read_bytes() == Path(demo.published.path).read_bytes()
    except OSError:
        return False


def demo_overrides(cfg, demo: bool) -> dict[str, dict]:
    """Notebook parameters that keep the case study's material out of a user's book:
    ``eos_comparison.case_study`` (its paper's comparison and its talk's ratio) and, where the
    Slurm history is the synthetic one, the label of the published shares the generator is
    calibrated to (named only in the demo's book), and the energy chapter's GPU captures (the
    project's own, shown only in the demo's book)."""
    ov: dict[str, dict] = {"eos_comparison": {"case_study": demo}}
    if cfg.sacct_synthetic and not demo:
        ov["slurm_jobs"] = {"marginals_label": "Calibration target (published shares)"}
    if not demo:  # the project's own H200 captures are no telemetry of the user's cluster
        ov["energy"] = {"capture_paths": []}
    return ov
