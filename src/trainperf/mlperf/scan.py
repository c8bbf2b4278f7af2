"""The streamed read of a large log and its native pass (polars): text in pieces of whole lines,
invalid UTF-8 found, lines as mllog writes them split into template and time; used by
:func:`trainperf.mlperf.parse.read_log`."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import polars as pl

from trainperf.mlperf.checks import (
    FileChecks,
)
from trainperf.mlperf.events import _LINE_HEAD, MLLOG_TOKEN

__all__: list[str] = []

_SYSJSON = ":::SYSJSON"


def _sysjson_line(raw: str) -> bool:
    """A line carrying the system description: ``:::SYSJSON`` not in a shell trace.

    A line starting "+" is the shell's trace of the echo that prints the real one
    (``+ echo ':::SYSJSON {...}'``, Oracle v4.1 logs): its JSON ends in a quote.
    """
    return _SYSJSON in raw and not raw.lstrip().startswith("+")


# Lines as mllog writes them, recognised in one native pass (polars string expressions): the token at
# the start, once, then the head and the digits of time_ms. Such a line is the token, the head, the
# digits and a template (the text after the digits); lines of one template decode alike (see
# _template_ok), so a template is decoded in Python once and every other line is polars' work.
_SIMPLE_RE = r'^:::MLLOG \{"namespace": "", "time_ms": (0|[1-9][0-9]{0,18}),'
_PIECE_BYTES = 32 << 20  # text read, decoded and split at a time (whole lines): memory per piece


@dataclass
class _Text:
    """State of the streamed decode: invalid UTF-8 found, U+FFFD counted, lines so far."""

    lines: int = 0
    bad_byte: int | None = None
    fffd: int = 0
    fffd_line: int | None = None


def _pieces(path: str | Path, data: bytes | None):
    """The file's bytes in pieces of whole lines (joined with ``\\n`` they give the file back)."""

    with open(path, "rb") if data is None else io.BytesIO(data) as f:
        rest, offset = b"", 0
        while True:
            block = f.read(_PIECE_BYTES)
            if not block:
                yield offset, rest
                return
            block = rest + block if rest else block
            cut = block.rfind(b"\n")
            if cut < 0:
                rest = block
                continue
            yield offset, block[:cut]
            offset += cut + 1
            rest = block[cut + 1 :]


def _utf8_check(state: _Text, checks: FileChecks) -> None:
    """``invalid_utf8``: the decode replaced bytes that are not UTF-8 by U+FFFD (``state``)."""
    if state.bad_byte is not None:
        checks.add(
            "invalid_utf8",
            "corrected",
            f"bytes that are not UTF-8 (first at byte {state.bad_byte}) replaced by U+FFFD",
            state.fffd_line,
            n=state.fffd,
        )


def _decode_piece(piece: bytes, offset: int, state: _Text) -> str:
    """One piece as text: UTF-8, bytes that are not UTF-8 replaced by U+FFFD (recorded in ``state``)."""
    try:
        text = piece.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = piece.decode("utf-8", errors="replace")
        if state.bad_byte is None:
            state.bad_byte = offset + exc.start
    n = text.count("\ufffd")
    if n:
        if state.fffd_line is None:
            state.fffd_line = state.lines + text.count("\n", 0, text.find("\ufffd")) + 1
        state.fffd += n
    return text


class _Scan(NamedTuple):
    """What :func:`_scan` found in one file."""

    simple: pl.DataFrame  # the mllog-written lines: line Int64, tid UInt32, d (time digits) UInt64
    templates: list[str]  # in template id order
    others: list[tuple[int, str]]  # the other MLLOG lines: (line, text)
    sysjson: str | None  # the system description a log line carries
    state: _Text  # the decode state


def _scan(path: str | Path, data: bytes | None) -> _Scan:
    """Pass 1, native: every line's kind, mllog-written lines as (line, template id, time digits).

    Returns a :class:`_Scan` (simple frame: line Int64, tid UInt32, digits UInt64; templates in id
    order; the other MLLOG lines as [(line, text)]; sysjson; the decode state).
    """
    state = _Text()
    tids: dict[str, int] = {}
    parts, others, sysjson = [], [], None
    tok = MLLOG_TOKEN
    for offset, piece in _pieces(path, data):
        text = _decode_piece(piece, offset, state)
        n_lines = text.count("\n") + 1
        if tok not in text:
            if sysjson is None and _SYSJSON in text:
                found = next((r for r in text.split("\n") if _sysjson_line(r)), None)
                sysjson = found.split(_SYSJSON, 1)[1] if found else None
            state.lines += n_lines
            continue
        raw = pl.Series("raw", [text]).str.split("\n").explode()
        del text
        df = pl.DataFrame([raw]).with_row_index("line", offset=state.lines + 1)
        del raw
        state.lines += n_lines
        col = pl.col("raw")
        df = df.filter(
            col.str.contains(tok, literal=True) | col.str.contains(_SYSJSON, literal=True)
        )
        df = df.with_columns(
            has=col.str.contains(tok, literal=True),
            d=col.str.extract(_SIMPLE_RE, 1),
            n=col.str.count_matches(tok, literal=True),
        )
        if sysjson is None:
            sj = [r for r in df.filter(~pl.col("has"))["raw"].to_list() if _sysjson_line(r)]
            if sj:
                sysjson = sj[0].split(_SYSJSON, 1)[1]
        simple = pl.col("d").is_not_null() & (pl.col("n") == 1)
        other = df.filter(pl.col("has") & ~simple)
        if other.height:
            others.extend(
                zip(other["line"].cast(pl.Int64).to_list(), other["raw"].to_list(), strict=True)
            )
        s = df.filter(simple).select(
            pl.col("line").cast(pl.Int64),
            pl.col("d"),
            col.str.slice(pl.col("d").str.len_chars() + len(_LINE_HEAD)).alias("tpl"),
        )
        del df
        uniq = s["tpl"].unique(maintain_order=True).to_list()
        new = [t for t in uniq if t not in tids]
        for t in new:
            tids[t] = len(tids)
        ids = pl.DataFrame(
            {"tpl": uniq, "tid": [tids[t] for t in uniq]},
            schema={"tpl": pl.String, "tid": pl.UInt32},
        )
        parts.append(
            s.join(ids, on="tpl", how="left", maintain_order="left").select(
                "line", "tid", pl.col("d").cast(pl.UInt64)
            )
        )
    simple_schema = {"line": pl.Int64, "tid": pl.UInt32, "d": pl.UInt64}
    simple = pl.concat(parts) if parts else pl.DataFrame(schema=simple_schema)
    return _Scan(simple, list(tids), others, sysjson, state)
