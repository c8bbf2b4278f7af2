"""Each result file read from disk once while one folder is loaded (issue 36).

A record build reads a folder's logs for several things: the sha256 of the logs, the parse, the
duplicate-file check (the length and digest of the LF-normalised bytes) and the precision the log
states. Inside :func:`read_once` the first read of a file keeps its bytes and the others take them
from memory (:func:`open_bytes`, :func:`held_bytes`); outside it every call reads the file as
before. Files over :data:`MAX_FILE_BYTES`, or beyond :data:`MAX_HELD_BYTES` held in all, are not
kept (read from disk each time): memory stays bounded on a folder of huge logs.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

__all__ = ["MAX_FILE_BYTES", "MAX_HELD_BYTES", "held_bytes", "open_bytes", "read_once"]

MAX_FILE_BYTES = 64 << 20
"""A file larger than this (bytes) is never kept: read from disk by each reader."""

MAX_HELD_BYTES = 256 << 20
"""At most this many bytes are kept at once (the sum over the files of one :func:`read_once`)."""

_held: dict[str, bytes] | None = None  # None: outside read_once
_total = 0


@contextmanager
def read_once() -> Iterator[None]:
    """Keep the bytes of each file read by :func:`held_bytes` / :func:`open_bytes` until the block
    ends (nested blocks share the outer one's). Files changed on disk during the block are seen
    as they were at their first read."""
    global _held, _total
    if _held is not None:
        yield
        return
    _held, _total = {}, 0
    try:
        yield
    finally:
        _held, _total = None, 0


def held_bytes(path: str | Path) -> bytes | None:
    """The bytes of ``path`` inside :func:`read_once` (read now when not yet, then kept); None
    outside it or for a file not kept (over the limits): the caller reads the file itself.

    Raises:
        OSError: the file cannot be read (as ``open`` raises it).
    """
    global _total
    if _held is None:
        return None
    key = os.path.abspath(os.fspath(path))
    data = _held.get(key)
    if data is not None:
        return data
    with open(key, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > MAX_FILE_BYTES or _total + size > MAX_HELD_BYTES:
            return None
        data = f.read()
    if len(data) > MAX_FILE_BYTES or _total + len(data) > MAX_HELD_BYTES:
        return None  # grew since fstat
    _held[key] = data
    _total += len(data)
    return data


def open_bytes(path: str | Path) -> BinaryIO:
    """``open(path, "rb")``, or a file over the kept bytes inside :func:`read_once`.

    Raises:
        OSError: the file cannot be read.
    """
    data = held_bytes(path)
    return open(path, "rb") if data is None else io.BytesIO(data)
