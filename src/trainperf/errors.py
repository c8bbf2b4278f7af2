"""The product's own error and warning types, and the one-line error printer of the command line.

Every reader raises :class:`InputError` (or a subclass) for input it cannot read without guessing, and
warns with :class:`DataWarning` (or a subclass) for damage it handled (a value excluded, corrected or
flagged); both name the source (file or URL) and, where there is one, the line. Configuration mistakes
(an unknown key, a missing path) are :class:`ConfigError`. Anything else escaping the library is a bug.
"""

from __future__ import annotations

import errno
import sys
import traceback

__all__ = [
    "BatchRunError",
    "ConfigError",
    "DataWarning",
    "InputError",
    "TrainperfError",
    "format_error",
    "print_error",
]


class TrainperfError(Exception):
    """Base of every error trainperf raises on purpose."""


class InputError(TrainperfError, ValueError):
    """Input that cannot be read without guessing.

    Attributes:
        source: file name or URL the input came from (None if unknown).
        line: 1-based line number in ``source``, or None when the problem is not tied to a line.
    """

    source: str | None = None
    line: int | None = None

    def __init__(self, message: str, source: str | None = None, line: int | None = None):
        super().__init__(message)
        if source is not None:
            self.source = source
        if line is not None:
            self.line = line


class ConfigError(TrainperfError, ValueError):
    """A configuration or parameter the product refuses before running (the message names the key)."""


class BatchRunError(TrainperfError):
    """A batch grid's runs failed where the main job needs their results (the message names the
    grid, how many runs failed, and the first one's error)."""


class DataWarning(UserWarning):
    """Damage in an input that was handled (value excluded, corrected or flagged).

    Attributes:
        source: file name or URL (None if unknown).
        line: 1-based line number, or None.
        check: short name of the check that fired (e.g. ``duplicate_series``), or None.
    """

    def __init__(
        self,
        message: str,
        source: str | None = None,
        line: int | None = None,
        check: str | None = None,
    ):
        super().__init__(message)
        self.source, self.line, self.check = source, line, check


def format_error(exc: BaseException) -> str:
    """One line for a failure: ``Type: first line of the message`` of the innermost cause.

    Follows ``__cause__`` (``raise ... from``) to the first exception of the chain, so that a wrapper
    does not hide the real cause, and takes the first non-empty line of its message.
    """
    seen = set()
    while exc.__cause__ is not None and id(exc) not in seen:
        seen.add(id(exc))
        exc = exc.__cause__
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return _disk_full(exc)
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def _disk_full(exc: OSError) -> str:
    """A full disk in words, naming the file being written when the error knows it."""
    where = f" writing {exc.filename}" if exc.filename else ""
    return (
        f"disk full{where} (No space left on device): free space on that file system or "
        "write elsewhere (--out)"
    )


def print_error(exc: BaseException, debug: bool, prog: str = "trainperf") -> int:
    """Print a command-line failure to stderr: one line by default, the traceback when ``debug``.

    Returns:
        1, the exit status for a failure.
    """
    if debug:
        traceback.print_exception(exc)
    else:
        print(
            f"{prog}: error: {format_error(exc)} (run with --debug for the traceback)",
            file=sys.stderr,
        )
    return 1
