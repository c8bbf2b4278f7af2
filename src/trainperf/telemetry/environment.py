"""The capture's record of its machine and software (``versions.txt`` of a capture folder).

The capture script writes the date, host, the commands it ran, ``nvidia-smi --query-gpu``, the
Python packages and ``nvidia-smi topo -m`` into ``versions.txt``, as the terminal showed them:
``nvidia-smi topo`` underlines its header with ANSI escape sequences, and the commands name the
capture machine's absolute output folder. :func:`capture_environment_lines` gives the lines a
reader is shown: escapes removed, a path into the capture folder written from the folder's name
on, ``nvidia-smi topo``'s standard legend left out.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["capture_environment_lines"]

#: ECMA-48 control sequences (CSI ... final byte), e.g. ``ESC[4m`` (underline) and ``ESC[0m``
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


def capture_environment_lines(path: str | Path) -> list[str]:
    """The non-blank lines of a capture's ``versions.txt`` for a reader.

    Args:
        path: the ``versions.txt`` file; its folder's name is the capture's (e.g.
            ``h200_1gpu_1.3b_20261201T0923Z``).

    Returns:
        The lines, stripped, in file order, up to ``nvidia-smi topo``'s ``Legend:`` (the legend
        is the same on every machine): ANSI escape sequences removed; an absolute path through a
        folder of the capture's name, or of a capture's name shape ``<name>_<YYYYMMDD>T<HHMM>Z``
        (``/tmp/cap/<capture>/gpt_smoke``), written from that folder on (``<capture>/gpt_smoke``), since the capture machine's folders mean nothing here.
        Bytes that are not UTF-8 read as U+FFFD.

    Raises:
        OSError: the file cannot be read.
    """
    p = Path(path)
    text = _ANSI.sub("", p.read_text(encoding="utf-8", errors="replace"))
    text = re.split(r"^\s*Legend:", text, maxsplit=1, flags=re.M)[0]
    # the capture's folder by its name, or by the shape of a capture's name (``..._<UTC stamp>Z``):
    # a capture renamed when bundled (the H100 one was written as ``h10080gbhbm3_...``)
    name = rf"{re.escape(p.parent.name)}|[\w.-]+_\d{{8}}T\d{{4}}Z"
    text = re.sub(rf"(?<![\w.~-])/[^\s'\"]*?/({name})(?=[/\s'\"]|$)", r"\1", text)
    return [ln.strip() for ln in text.splitlines() if ln.strip()]
