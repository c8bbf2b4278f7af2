"""The output folder of ``trainperf report`` (``--out``): which folders it may write to, and the
manifest that says what in there is trainperf's.

A report run writes, replaces and deletes outputs (``site/`` is rebuilt as a whole, stale
``values/*.json`` are removed, notebooks' folders are replaced). So before anything runs,
:func:`claim_out` refuses:

* ``/``, the home folder, the repository root and any folder above one of them (``..`` from the
  checkout), always;
* an existing folder that is not empty and holds no manifest (:data:`MANIFEST`, written by an
  earlier run), unless ``force``;
* with ``force``, such a folder when one of the entries a run writes (:data:`ENTRIES`) is
  already there: trainperf would replace or delete a file it did not write.

It then writes the manifest, listing the entries this and every earlier run own; a run deletes
and replaces only inside those. At the end, :func:`record_files` adds the files the run left
under them (for the reader: what to remove by hand). The checkout's own ``_output`` (ignored by
git, trainperf's build folder by definition) is adopted without a manifest.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from trainperf.atomic import write_text_atomic
from trainperf.errors import ConfigError

__all__ = ["ENTRIES", "MANIFEST", "check_out", "claim_out", "owned_entries", "record_files"]

MANIFEST = ".trainperf-manifest.json"
"""File name of the manifest in an output folder."""

ENTRIES = (
    "appendix",
    "batch",
    "comparison.csv",
    "figure_logs",
    "figures",
    "figures.jsonl",
    "notebooks",
    "quarto",
    "report_summary.json",
    "scratch",
    "site",
    "values",
    "values.yml",
)
"""What a report run writes directly in ``--out`` (files and folders)."""


def _forbidden(out: Path, root: Path) -> str | None:
    home = Path.home().resolve()
    anchors = {
        Path("/"): "the file system root",
        home: "your home folder",
        root: "the repository root",
    }
    for anchor, what in anchors.items():
        if out == anchor:
            return what
        if anchor != Path("/") and out in anchor.parents:
            return f"a folder above {what} ({anchor})"
    return None


def owned_entries(out: Path) -> set[str] | None:
    """The entries the manifest of ``out`` says are trainperf's, or None without a (readable)
    manifest."""
    try:
        doc = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("written_by") != "trainperf":
        return None
    return {e for e in doc.get("entries", []) if isinstance(e, str) and "/" not in e}


def _write(out: Path, entries: set[str], files: list[str] | None = None) -> None:
    doc = {
        "written_by": "trainperf",
        "note": "trainperf report replaces and deletes only inside these entries; remove the "
        "folder when you no longer need the report",
        "entries": sorted(entries),
    }
    if files is not None:
        doc["files"] = files
    write_text_atomic(json.dumps(doc, indent=1) + "\n", out / MANIFEST)


def claim_out(
    out: str | Path, root: str | Path, *, force: bool = False, flag: str = "--out"
) -> Path:
    """Check that a report may write to ``out`` (:func:`check_out`), create it, and write its
    manifest. Returns ``out`` resolved; raises as :func:`check_out`."""
    out, owned = _check(out, root, force, flag)
    out.mkdir(parents=True, exist_ok=True)  # mode from the umask, like any mkdir
    _write(out, set(owned) | set(ENTRIES))
    return out


def check_out(
    out: str | Path, root: str | Path, *, force: bool = False, flag: str = "--out"
) -> Path:
    """Check that a report may write to ``out``; changes nothing.

    Args:
        out: the output folder (relative: to ``root``, as :func:`trainperf.report.run_report`
            takes it).
        root: the repository root (refused as an output folder, as are ``/`` and the home folder).
        force: accept an existing non-empty folder without a manifest, as long as none of
            :data:`ENTRIES` is already in it.
        flag: how messages name the option.

    Returns:
        ``out``, resolved.

    Raises:
        ConfigError: one line naming the folder, why it is refused and what to do.
    """
    return _check(out, root, force, flag)[0]


def _check(out: str | Path, root: str | Path, force: bool, flag: str) -> tuple[Path, set[str]]:
    given = out
    root = Path(root).resolve()
    out = (root / Path(out).expanduser()).resolve()
    why = _forbidden(out, root)
    if why is not None:
        raise ConfigError(
            f"{flag} {given}: is {why}; a report replaces and deletes files in its output folder, "
            "so give a folder of its own (e.g. reports/mycluster)"
        )
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{flag} {given}: is a file; {flag} must be a folder")
    owned = owned_entries(out) if out.is_dir() else None
    if owned is None and out.is_dir():
        present = sorted(p.name for p in out.iterdir())
        if present and out != root / "_output":
            shown = ", ".join(present[:5]) + (", ..." if len(present) > 5 else "")
            clash = sorted(set(present) & set(ENTRIES))
            if not force:
                raise ConfigError(
                    f"{flag} {given}: an existing folder that trainperf did not create ({shown}); "
                    f"give a new or empty folder, or --force to write beside those files "
                    "(trainperf never replaces or deletes a file it did not write)"
                )
            if clash:
                raise ConfigError(
                    f"{flag} {given}: holds {', '.join(clash)}, which a report would replace, and "
                    "trainperf did not write them (no manifest); move them away or give another "
                    "folder"
                )
        owned = set()
    return out, owned or set()


def record_files(out: str | Path) -> list[str]:
    """Add to the manifest of ``out`` the files now under its entries (relative, sorted);
    returns them. Does nothing without a manifest."""
    out = Path(out)
    owned = owned_entries(out)
    if owned is None:
        return []
    files: list[str] = []
    for name in sorted(owned):
        p = out / name
        if p.is_file():
            files.append(name)
        elif p.is_dir():
            for dirpath, _dirs, names in os.walk(p):
                rel = Path(dirpath).relative_to(out)
                files += [str(rel / n) for n in names]
    files.sort()
    _write(out, owned, files)
    return files
