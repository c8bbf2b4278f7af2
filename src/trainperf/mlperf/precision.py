"""The datatype a run trained in, read from its own log: MLLOG keys first, then the framework's
configuration dump printed into the same file.

MLPerf Training logs gained precision keys in ruleset 6.0.0 (``lowest_numerical_precision_in_linear``,
``..._in_attn``, ``..._in_comm``: ``training_6.0.0/common.yaml`` of mlcommons/logging, values
``fp8``, ``nvfp4``, ``mxfp4``, ``bfloat16``...). Earlier logs carry none, but many result files
hold the framework's own configuration dump: Megatron/NeMo print their arguments
(``fp8='hybrid'``, ``fp4=None``, ``bf16=True``: e.g. Dell's v5.1 ``llama31_8b`` results in
mlcommons/training_results_v5.1) and YAML configs print ``fp8: true``. Those settings are what the
GEMMs ran in. A log that says nothing gives None (unknown), never a guess.
"""

from __future__ import annotations

import json
import re
from itertools import chain
from pathlib import Path

import polars as pl

from trainperf.mlperf.readonce import open_bytes

__all__ = [
    "PRECISION_KEYS",
    "precision_from_log",
    "precision_from_system_json",
    "precision_in_system",
    "precision_of_runs",
]

#: MLLOG keys of ruleset 6.0.0 that name the lowest precision of the linear layers (the one the
#: peak must match), in the order they are trusted.
PRECISION_KEYS = ("lowest_numerical_precision_in_linear",)

_MLLOG_VALUES = {
    "fp8": "fp8",
    "nvfp4": "fp4",
    "mxfp4": "fp4",
    "int4": "fp4",
    "uint4": "fp4",
    "bfloat16": "bf16",
    "bf16": "bf16",
    "fp16": "bf16",
}

# a setting ``fp8=...``/``fp8: ...``/``"fp8": ...`` (not ``fp8_recipe``, not ``keep_fp8_...``)
_SETTING = re.compile(
    r"""(?<![\w.])["']?(fp8|fp4|bf16)["']?\s*(?:=|:)\s*(["']?)([A-Za-z0-9_.-]*)\2"""
)
_OFF = {"", "none", "null", "false", "0", "no", "off", "~"}
_MAX_LINE = 20_000  # longer lines are not configuration dumps


def _on(value: str) -> bool:
    return value.strip().lower() not in _OFF


def _found(text: bytes, word: bytes):
    """Positions of ``word`` in ``text`` (find: several times faster than a regex alternation)."""
    i = text.find(word)
    while i >= 0:
        yield i
        i = text.find(word, i + 1)


_BLOCK = 8 << 20  # bytes read at a time (whole lines): memory stays flat on a large log


def _lines_naming(path: str | Path):
    """(line number, line bytes with its ``\\n``) of each line naming ``fp`` or ``bf16``, as the
    file opened in text mode gives them: universal newlines (``\\r\\n`` and a lone ``\\r`` end
    a line). Read in blocks of whole lines (a block ends after a ``\\n``, so no ``\\r\\n`` is
    cut). Raises OSError."""
    base, rest, done = 0, b"", b""
    with open_bytes(path) as f:  # the bytes the parse read, inside read_once
        while True:
            block = f.read(_BLOCK)
            if block:
                block = rest + block
                cut = block.rfind(b"\n") + 1
                if cut == 0:
                    rest = block
                    continue
                block, rest = block[:cut], block[cut:]
            else:
                block, rest = rest, b""
            if b"\r" in block:
                block = block.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            if done and block:  # the lines of the blocks before (counted only when another follows:
                base += done.count(b"\n")  # a file of one block, nearly all, is never counted)
            for no, line in _candidate_lines(block):
                yield base + no, line
            if not rest and not block.endswith(b"\n") or not block:
                return
            done = block


def _candidate_lines(text: bytes):
    """(line number, line with its ``\\n``) of each line of ``text`` that holds ``fp`` or ``bf16``,
    as iterating the open file gives them (issue 36: the other lines, nearly all, are skipped by a
    search in C rather than one Python iteration each, which was 8 % of a round's record build)."""
    counted, lineno, next_start = 0, 1, 0
    for pos in sorted(chain(_found(text, b"fp"), _found(text, b"bf16"))):
        if pos < next_start:  # on the line already given
            continue
        start = text.rfind(b"\n", 0, pos) + 1
        end = text.find(b"\n", pos)
        end = len(text) if end < 0 else end + 1  # with its newline, if any
        lineno += text.count(b"\n", counted, start)
        counted, next_start = start, end
        yield lineno, text[start:end]


def precision_from_log(path: str | Path) -> tuple[str | None, str | None]:
    """The datatype of the linear layers a result file states, with the line that says it.

    Rules, in order: an MLLOG ``lowest_numerical_precision_in_linear`` (``nvfp4``/``mxfp4`` ->
    ``fp4``, ``fp8``, ``bfloat16`` -> ``bf16``); else a configuration setting that turns FP4 on
    (``fp4='nvfp4'``, ``fp4: true``) -> ``fp4``; else one that turns FP8 on (``fp8='hybrid'``,
    ``fp8: e4m3``, ``fp8: true``) -> ``fp8``; else FP8 explicitly off (``fp8=None``, ``fp8:
    false``) together with ``bf16=True`` -> ``bf16``; else None.

    Args:
        path: a ``result_*.txt``.

    Returns:
        ``(precision, evidence)``: precision ``fp4``, ``fp8``, ``bf16`` or None; evidence
        ``"<file>:<line>: <setting>"`` or None. An unreadable file gives ``(None, None)``.
    """
    found: dict[str, tuple[int, str]] = {}
    mllog: tuple[str, int, str] | None = None
    try:
        lines = list(_lines_naming(path))
    except OSError:
        return None, None
    for no, raw in lines:
        line = raw.decode("utf-8", errors="replace")
        if len(line) > _MAX_LINE:
            continue
        if mllog is None and "lowest_numerical_precision_in_linear" in line:
            m = re.search(r'"value":\s*"([A-Za-z0-9]+)"', line)
            if m and m.group(1).lower() in _MLLOG_VALUES:
                mllog = (_MLLOG_VALUES[m.group(1).lower()], no, m.group(0))
        for m in _SETTING.finditer(line):
            name, value = m.group(1), m.group(3)
            key = f"{name}_{'on' if _on(value) else 'off'}"
            found.setdefault(key, (no, m.group(0).strip()))
    where = Path(path).name
    if mllog is not None:
        return mllog[0], f"{where}:{mllog[1]}: lowest_numerical_precision_in_linear {mllog[2]}"
    for key, prec in (("fp4_on", "fp4"), ("fp8_on", "fp8")):
        if key in found:
            no, text = found[key]
            return prec, f"{where}:{no}: {text}"
    if "fp8_off" in found and "bf16_on" in found:
        no, text = found["fp8_off"]
        return "bf16", f"{where}:{no}: {text} with {found['bf16_on'][1]}"
    return None, None


_WORDS = {"fp8": re.compile(r"\bfp8\b", re.I), "bf16": re.compile(r"\bbf16\b", re.I)}


def precision_from_system_json(result_file: str | Path) -> tuple[str | None, str | None]:
    """The datatype a result's ``systems/<system>.json`` names, for a log that states none.

    In the MLCommons layout (``<submitter>/results/<system>/<benchmark>/result_*.txt``) the
    description's ``framework``, ``sw_notes``, ``hw_notes`` and ``other_software_stack`` must name
    exactly one of ``fp8`` and ``bf16`` (AMD's v5.1 ``sw_notes``: "FP8 Training").

    Returns:
        ``(precision, "<file> (sw_notes...)")`` or ``(None, None)``.
    """
    f = Path(result_file)
    if len(f.parts) < 5 or f.parts[-4] != "results":
        return None, None
    js = Path(*f.parts[:-4]) / "systems" / f"{f.parts[-3]}.json"
    try:
        desc = json.loads(js.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, None
    prec = precision_in_system(desc)
    if prec is None:
        return None, None
    return prec, f"{js.name} ({', '.join(_SYSTEM_KEYS)})"


_SYSTEM_KEYS = ("framework", "sw_notes", "hw_notes", "other_software_stack")


def precision_in_system(desc: dict) -> str | None:
    """The datatype one parsed ``systems/<system>.json`` names: ``fp8``/``bf16`` when exactly one
    of the two words appears in its ``framework``, ``sw_notes``, ``hw_notes`` or
    ``other_software_stack``, else None (also for a JSON that is not an object)."""
    if not isinstance(desc, dict):
        return None
    text = " ".join(json.dumps(desc.get(k, "")) for k in _SYSTEM_KEYS)
    found = {p for p, rx in _WORDS.items() if rx.search(text)}
    return found.pop() if len(found) == 1 else None


PRECISION_SCHEMA = {"result_file": pl.String, "precision": pl.String, "precision_source": pl.String}


def precision_of_runs(result_files) -> pl.DataFrame:
    """:func:`precision_from_log` of every result file, else :func:`precision_from_system_json`.

    Returns:
        :data:`PRECISION_SCHEMA`: result_file (String), precision (String: ``fp4``, ``fp8``, ``bf16`` or
        null), precision_source (String, ``"<file>:<line>: <setting>"`` or null).
    """
    rows = []
    for f in dict.fromkeys(result_files):
        if f:
            prec, src = precision_from_log(f)
            if prec is None:
                prec, src = precision_from_system_json(f)
            rows.append({"result_file": f, "precision": prec, "precision_source": src})
    return pl.DataFrame(rows, schema=PRECISION_SCHEMA)
