"""Atomic output files: write to a temporary name in the target folder, then rename.

A killed run never leaves a half-written output, and an existing output is replaced in one step.
"""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # polars only for the annotation: `trainperf init` writes through here without it
    import polars as pl

__all__ = [
    "atomic_path",
    "current_umask",
    "dir_mode",
    "file_mode",
    "write_bytes_atomic",
    "write_parquet_atomic",
    "write_text_atomic",
]

_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process's umask (read by setting and restoring it, under a lock)."""
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def file_mode() -> int:
    """Mode of a new output file: what ``open()`` would give it (0666 less the umask)."""
    return 0o666 & ~current_umask()


def dir_mode() -> int:
    """Mode of a new output folder: what ``mkdir`` would give it (0777 less the umask)."""
    return 0o777 & ~current_umask()


def atomic_path(target: str | Path) -> Path:
    """Create and return an empty temporary file next to ``target`` for an atomic write, with the
    mode a plain ``open()`` would give (:func:`file_mode`: 0666 less the umask), not mkstemp's 0600."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.fchmod(fd, file_mode())  # mkstemp creates 0600; outputs follow the umask like any file
    os.close(fd)
    return Path(tmp)


def _name_target(exc: OSError, target: Path) -> OSError:
    """``exc`` naming ``target`` where it names no file (a full disk fails the ``write()``, whose
    ``OSError: [Errno 28] No space left on device`` names none): the user's output, not the
    temporary file, is the file to name."""
    if exc.filename is None or str(exc.filename).startswith(
        str(target.parent / f".{target.name}.")
    ):
        exc.filename = str(target)
    return exc


def write_bytes_atomic(data: bytes, target: str | Path) -> Path:
    """Write ``data`` to ``target`` through a temporary file and a rename. Returns ``target``.

    Raises:
        OSError: the write failed (a full disk, ``ENOSPC``; no permission): its ``filename`` is
            ``target``.
    """
    target = Path(target)
    tmp = atomic_path(target)
    try:
        tmp.write_bytes(data)
        os.replace(tmp, target)
    except OSError as exc:
        raise _name_target(exc, target) from None
    finally:
        tmp.unlink(missing_ok=True)
    return target


def write_text_atomic(text: str, target: str | Path) -> Path:
    """Write ``text`` (UTF-8) to ``target`` through a temporary file and a rename. Returns ``target``."""
    return write_bytes_atomic(text.encode("utf-8"), target)


def write_parquet_atomic(frame: pl.DataFrame, target: str | Path) -> Path:
    """Write a polars frame to Parquet through a temporary file and a rename. Returns ``target``."""
    target = Path(target)
    tmp = atomic_path(target)
    try:
        frame.write_parquet(tmp)
        os.replace(tmp, target)
    except OSError as exc:
        raise _name_target(exc, target) from None
    finally:
        tmp.unlink(missing_ok=True)
    return target
