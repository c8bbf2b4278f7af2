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

It then writes the manifest, listing the entries this and every earlier run own and, per file,
what is trainperf's: ``files`` (every file the last complete run wrote, paths relative to the
folder) and ``kept`` (files under those entries that trainperf did not write: a user's notes put
into ``site/`` or ``notebooks/<name>/`` after a run, found by :func:`claim_out` as files not in the
previous run's ``files``). A run deletes and replaces only its own files: :func:`remove_tree`,
:func:`unlink_owned` and :func:`carry_kept` (used where a folder is replaced as a whole) leave
every ``kept`` file where it was. At the end, :func:`record_files` writes the files the run left
(``complete`` true). A run that stopped before it (``complete`` false) leaves ``kept`` as it was,
and what it wrote counts as trainperf's. The checkout's own ``_output`` (ignored by git,
trainperf's build folder by definition) is adopted without a manifest.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from trainperf.atomic import write_text_atomic
from trainperf.errors import ConfigError

__all__ = [
    "ENTRIES", "MANIFEST", "carry_kept", "check_out", "claim_out", "kept_files", "owned_entries",
    "record_files", "remove_tree", "unlink_owned",
]  # fmt: skip

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


def _manifest(out: Path) -> dict | None:
    try:
        doc = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("written_by") != "trainperf":
        return None
    return doc


def _paths(doc: dict, key: str) -> set[str]:
    v = doc.get(key)
    return {f for f in v if isinstance(f, str)} if isinstance(v, list) else set()


def owned_entries(out: Path) -> set[str] | None:
    """The entries the manifest of ``out`` says are trainperf's, or None without a (readable)
    manifest."""
    doc = _manifest(out)
    if doc is None:
        return None
    return {e for e in _paths(doc, "entries") if "/" not in e}


def _files_under(out: Path, entries: set[str]) -> set[str]:
    """Every file (and link) under ``entries`` of ``out``, relative to ``out`` (``/``-separated)."""
    files: set[str] = set()
    for name in entries:
        p = out / name
        if p.is_symlink() or p.is_file():
            files.add(name)
        elif p.is_dir():
            for dirpath, dirs, names in os.walk(p):
                rel = Path(dirpath).relative_to(out)
                files |= {(rel / n).as_posix() for n in names}
                files |= {(rel / d).as_posix() for d in dirs if (Path(dirpath) / d).is_symlink()}
    files.discard(MANIFEST)
    return files


def _write(out: Path, entries: set[str], files: set[str] | list[str], kept: set[str],
           complete: bool) -> None:  # fmt: skip
    doc = {
        "written_by": "trainperf",
        "note": "trainperf report replaces and deletes only the files listed under 'files' "
        "(those it wrote); the files under 'kept' are yours and stay; remove the folder when you "
        "no longer need the report",
        "entries": sorted(entries),
        "complete": complete,
        "files": sorted(files),
        "kept": sorted(kept),
    }
    write_text_atomic(json.dumps(doc, indent=1) + "\n", out / MANIFEST)


def kept_files(path: str | Path) -> tuple[Path | None, set[str]]:
    """The output folder holding ``path`` (the nearest folder at or above it with a manifest) and
    the files in it that trainperf did not write (``kept``, relative to that folder); ``(None,
    set())`` where no manifest is found (a folder outside any report output)."""
    p = Path(path).absolute()
    for d in (p, *p.parents):
        doc = _manifest(d) if (d / MANIFEST).is_file() else None
        if doc is not None:
            return d, _paths(doc, "kept")
    return None, set()


def _kept_under(folder: Path) -> tuple[Path | None, list[str]]:
    out, kept = kept_files(folder)
    if out is None:
        return None, []
    try:
        rel = folder.absolute().relative_to(out).as_posix()
    except ValueError:
        return out, []
    prefix = "" if rel == "." else rel + "/"
    return out, sorted(k for k in kept if k.startswith(prefix))


def remove_tree(folder: str | Path) -> None:
    """Remove a folder trainperf replaces as a whole (a notebook's tables, a staged copy), except
    the ``kept`` files of its output folder's manifest (and the folders that hold them): a file
    trainperf did not write is never deleted. Without a manifest above it: ``shutil.rmtree``."""
    folder = Path(folder)
    if not folder.exists() and not folder.is_symlink():
        return
    out, kept = _kept_under(folder)
    if not kept:
        shutil.rmtree(folder, ignore_errors=True)
        return
    keep = {out / k for k in kept}
    for dirpath, dirs, names in os.walk(folder, topdown=False):
        d = Path(dirpath)
        for n in names:
            if d / n not in keep:
                (d / n).unlink(missing_ok=True)
        for n in dirs:
            sub = d / n
            if sub.is_symlink():
                if sub not in keep:
                    sub.unlink()
            elif not any(sub.iterdir()):
                sub.rmdir()
    if not any(folder.iterdir()):
        folder.rmdir()


def unlink_owned(path: str | Path) -> bool:
    """Delete a file trainperf wrote; a ``kept`` file (not trainperf's) stays. Returns whether
    the file was deleted."""
    path = Path(path)
    out, kept = kept_files(path.parent)
    if out is not None:
        try:
            if path.absolute().relative_to(out).as_posix() in kept:
                return False
        except ValueError:
            pass
    path.unlink(missing_ok=True)
    return True


def carry_kept(old: str | Path, new: str | Path) -> list[str]:
    """Before ``new`` replaces the folder ``old`` as a whole (the rebuilt ``site/``), move the
    ``kept`` files of ``old`` into ``new`` at the same relative paths, so that a user's file
    survives the rebuild. Where ``new`` has a file of the same path, the user's file wins (the
    generated one is dropped). Returns those paths (relative to the output folder), for a
    warning."""
    old, new = Path(old), Path(new)
    out, kept = _kept_under(old)
    clashes = []
    for k in kept:
        src = out / k
        if not (src.exists() or src.is_symlink()):
            continue
        dst = new / src.relative_to(old)
        if dst.exists() or dst.is_symlink():
            clashes.append(k)
            if dst.is_dir() and not dst.is_symlink():
                shutil.rmtree(dst)
            else:
                dst.unlink()
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.replace(src, dst)
    return clashes


def claim_out(
    out: str | Path, root: str | Path, *, force: bool = False, flag: str = "--out"
) -> Path:
    """Check that a report may write to ``out`` (:func:`check_out`), create it, and write its
    manifest. Returns ``out`` resolved; raises as :func:`check_out`."""
    out, owned = _check(out, root, force, flag)
    out.mkdir(parents=True, exist_ok=True)  # mode from the umask, like any mkdir
    doc = _manifest(out) or {}
    entries = set(owned) | set(ENTRIES)
    present = _files_under(out, entries)
    kept = _paths(doc, "kept") & present  # a user's file found by an earlier run, still there
    files = _paths(doc, "files")
    if doc.get("complete", "files" in doc) is True:  # a manifest of before "complete": finished
        # the last run finished and listed every file it wrote: anything else is the user's
        kept |= present - files
    _write(out, entries, files & present, kept, complete=False)
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
    """Write into the manifest of ``out`` the files this run left under its entries (relative,
    sorted; ``kept`` files excluded) and mark it complete; returns them. Does nothing without a
    manifest."""
    out = Path(out)
    doc = _manifest(out)
    if doc is None:
        return []
    owned = owned_entries(out) or set()
    kept = _paths(doc, "kept")
    present = _files_under(out, owned)
    files = sorted(present - kept)
    _write(out, owned, files, kept & present, complete=True)
    return files
