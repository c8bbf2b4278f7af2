"""Re-runs do only what changed: a notebook whose inputs did not change is not executed again.

Each executed notebook gets a record next to it, ``<out>/notebooks/<name>.run.json``: a key (SHA-256)
over everything its outputs depend on, and the outputs it left (the executed notebook, its values
file, its table CSVs, the figure files it wrote). The next run of the main job skips the notebook
when the key is the same and every recorded output is still there as it was left.

The key covers:

* the notebook source (bytes) and its parameters (JSON; the output parameters included, so that
  another ``--out`` or figures folder runs again);
* every input a parameter names (files and folders; see :func:`tree_digest`), and the project's
  ``data/`` folder, which notebooks read through library defaults (reference tables);
* the installed trainperf package (every file's content: code and package tables) and the versions
  of every installed distribution (a new polars or Altair can change a number or a chart).

A parameter that names a URL (a Prometheus server) always runs the notebook again: what a server
returns cannot be fingerprinted. ``trainperf report --force`` runs everything.

Files are fingerprinted by content when under :data:`HASH_LIMIT_BYTES` and by size and modification
time above it (the bundled profiler trace is hundreds of MB; hashing it on every run would cost
more than the check saves), so a large input edited in place within the same nanosecond and size
would be missed: an accepted limit, stated here.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import trainperf
from trainperf.atomic import write_text_atomic

__all__ = ["HASH_LIMIT_BYTES", "NotebookRun", "tree_digest"]

#: files up to this size are fingerprinted by content, larger ones by size and mtime
HASH_LIMIT_BYTES = 8 * 1024 * 1024

_RECORD_VERSION = 1
_SKIP_DIRS = {"__pycache__", ".ipynb_checkpoints", ".git"}


def _file_digest(h, path: Path, st: os.stat_result) -> None:
    if st.st_size <= HASH_LIMIT_BYTES:
        with open(path, "rb") as f:
            h.update(hashlib.file_digest(f, "sha256").digest())
    else:
        h.update(f"{st.st_size}:{st.st_mtime_ns}".encode())


def tree_digest(paths: Iterable[str | os.PathLike]) -> str:
    """SHA-256 hex digest over files and folders (recursively, in name order; names relative to
    each given path, contents as :data:`HASH_LIMIT_BYTES` says). A missing path counts as missing,
    so that its creation changes the digest. Never raises for unreadable entries: their names and
    the error kind go into the digest instead."""
    h = hashlib.sha256()
    for p in paths:
        p = Path(p)
        h.update(b"\x00path\x00" + str(p).encode())
        try:
            if p.is_file():
                _file_digest(h, p, p.stat())
                continue
            if not p.is_dir():
                h.update(b"\x00missing")
                continue
            for dirpath, dirnames, filenames in os.walk(p):
                dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
                for name in sorted(filenames):
                    f = Path(dirpath) / name
                    h.update(b"\x00f\x00" + str(f.relative_to(p)).encode())
                    try:
                        _file_digest(h, f, f.stat())
                    except OSError as exc:
                        h.update(type(exc).__name__.encode())
        except OSError as exc:
            h.update(type(exc).__name__.encode())
    return h.hexdigest()


@functools.cache
def _distributions() -> str:
    """The installed distributions, as the names of their ``*.dist-info`` / ``*.egg-info`` entries
    on ``sys.path`` (name and version; ``importlib.metadata`` would parse every METADATA file,
    0.65 s here, for the same information)."""
    names = set()
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as it:
                names.update(e.name for e in it if e.name.endswith((".dist-info", ".egg-info")))
        except OSError:
            continue
    return "\n".join(sorted(names))


def _is_url(value) -> bool:
    return isinstance(value, str) and value.startswith(("http://", "https://"))


class NotebookRun:
    """The re-run check of one notebook of the main job.

    Args:
        notebook: source notebook.
        executed: where the executed copy goes (the record is ``<executed stem>.run.json``).
        parameters: the notebook's parameters for this run.
        input_parameters: names of the parameters that name inputs (their files are fingerprinted).
        data_dir: the project's data folder (fingerprinted as a whole).
        force: never skip.
    """

    def __init__(
        self,
        notebook: Path,
        executed: Path,
        parameters: Mapping,
        input_parameters: Iterable[str],
        data_dir: Path,
        force: bool = False,
    ) -> None:

        self.notebook, self.executed = Path(notebook), Path(executed)
        self.record_path = self.executed.with_suffix(".run.json")
        inputs: list[str] = []
        self.live = force
        for k in sorted(input_parameters):
            v = parameters.get(k)
            for item in v if isinstance(v, list | tuple) else [v]:
                if _is_url(item):
                    self.live = True  # a server's answer cannot be fingerprinted
                elif isinstance(item, str) and item:
                    inputs.append(item)
        h = hashlib.sha256()
        h.update(json.dumps(_RECORD_VERSION).encode())
        h.update(json.dumps(dict(parameters), sort_keys=True, default=str).encode())
        h.update(
            tree_digest(
                [self.notebook, data_dir, Path(trainperf.__file__).parent, *inputs]
            ).encode()
        )
        h.update(_distributions().encode())
        self.key = h.hexdigest()

    def _record(self) -> dict | None:
        try:
            rec = json.loads(self.record_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return rec if isinstance(rec, dict) else None

    def unchanged(self) -> bool:
        """True when the last run had the same key and left every output as it is now."""
        if self.live:
            return False
        rec = self._record()
        if not rec or rec.get("key") != self.key or not self.executed.is_file():
            return False
        for path, stat in rec.get("outputs", {}).items():
            p = Path(path)
            try:
                st = p.stat()
            except OSError:
                return False
            if [st.st_size, st.st_mtime_ns] != stat:
                return False
        return True

    def start(self) -> None:
        """Call before executing: the last record goes (a run killed from here on is never
        taken for unchanged)."""
        self.record_path.unlink(missing_ok=True)

    def finish(self, extra_outputs: Iterable[Path] = (), figures: Iterable[Path] = ()) -> None:
        """Call after a successful execution: records the key and the outputs (the executed
        notebook, ``extra_outputs`` such as values and table files, and ``figures``: the figure
        files the notebook exported or found up to date, which the main job reads from the
        notebook's own export log, right even while other notebooks write to the same folder)."""
        figures = sorted({str(f) for f in figures if Path(f).is_file()})
        outputs = {}
        for p in [self.executed, *map(Path, extra_outputs), *map(Path, figures)]:
            if p.is_file():
                st = p.stat()
                outputs[str(p)] = [st.st_size, st.st_mtime_ns]
        write_text_atomic(
            json.dumps({"key": self.key, "figures": figures, "outputs": outputs}, indent=1),
            self.record_path,
        )
