"""``:::MLLOG`` lines of one MLPerf log file into events, with every value checked.

The grammar is mlperf-logging's (``compliance_checker/mlp_parser/ruleset_*.py``): after the token, one
JSON object with ``time_ms`` (Unix epoch milliseconds), ``key``, ``value`` and ``metadata``. This
module decodes each event's JSON once (mlperf-logging's ``string_to_logline`` plus a second
``json.loads`` and two ``json.dumps`` cost 3.5x one ``json.loads`` per line) and checks what
the grammar leaves open: ``time_ms`` finite and plausible, events in time order, field types.
"""

from __future__ import annotations

import io
import json
import math
import operator
import re
import statistics
from dataclasses import dataclass, field
from functools import cache
from itertools import compress, repeat
from pathlib import Path
from typing import Any, NamedTuple

import polars as pl

from trainperf.mlperf.checks import (
    FileChecks,
    MLPerfLogWarning,
    check_encodable,
    display_path,
    limits,
    read_result_bytes,
)
from trainperf.mlperf.timeline import offline_eval_tail
from trainperf.quality import QualityLog
from trainperf.tables import package_table

__all__ = [
    "EVENT_SCHEMA",
    "KEPT_KEYS",
    "MLLOG_TOKEN",
    "Memo",
    "ParsedLog",
    "flush",
    "parse_log",
    "read_log",
]

MLLOG_TOKEN = ":::MLLOG"
_SYSJSON = ":::SYSJSON"


def _sysjson_line(raw: str) -> bool:
    """A line carrying the system description: ``:::SYSJSON`` not in a shell trace.

    A line starting "+" is the shell's trace of the echo that prints the real one
    (``+ echo ':::SYSJSON {...}'``, Oracle v4.1 logs): its JSON ends in a quote.
    """
    return _SYSJSON in raw and not raw.lstrip().startswith("+")


_META = '"metadata": '

EVENT_SCHEMA = {
    "file": pl.String,
    "line": pl.Int64,
    "prefix": pl.String,
    "time_ms": pl.Float64,
    "event_type": pl.String,
    "key": pl.String,
    "value": pl.String,
    "value_num": pl.Float64,
    "metadata": pl.String,
}
"""Columns of an events frame (see :func:`parse_log`)."""

#: Keys whose decoded value and metadata the loader needs (kept as Python objects while parsing).
KEPT_KEYS = frozenset(
    {
        "run_start",
        "run_stop",
        "eval_accuracy",
        "submission_benchmark",
        "global_batch_size",
        "max_sequence_length",
        "seed",
    }
)


@dataclass
class ParsedLog:
    """One parsed log: its events, the kept events' objects, and what the checks found.

    Attributes:
        path: the file (as given).
        events: one row per event in file order, :data:`EVENT_SCHEMA` without ``file``.
        kept: key in :data:`KEPT_KEYS` -> [(row, value, metadata dict)] in file order; the metadata
            is None where it was damaged (not an object; the events frame then holds ``{}``).
        sysjson: text after the first ``:::SYSJSON`` token (a system description some logs embed).
        checks: the checks that fired (flushed into a :class:`~trainperf.quality.QualityLog`).
    """

    path: str
    events: pl.DataFrame
    kept: dict[str, list[tuple[int, object, dict]]]
    sysjson: str | None
    checks: FileChecks

    @property
    def cols(self) -> dict[str, pl.Series]:
        """Column name -> Series (indexable by row), every :data:`EVENT_SCHEMA` column but ``file``."""
        return {c: self.events.get_column(c) for c in self.events.columns}

    @property
    def n_events(self) -> int:
        return self.events.height

    def frame(self) -> pl.DataFrame:
        """The events as a polars frame with :data:`EVENT_SCHEMA`."""
        path = display_path(self.path)  # a name with bytes that are not UTF-8: escaped
        # one string the rows share (pl.repeat writes it once per row: 10 % of a load)
        file = pl.Series("file", [path], pl.String).new_from_index(0, self.n_events)
        return pl.DataFrame([file, *(self.events.get_column(c) for c in list(EVENT_SCHEMA)[1:])])


def _fast_dumps():
    """``json.dumps`` with its default arguments, minus its per-call set-up.

    ``json.dumps`` builds a new C encoder on every call, which costs more than encoding a small
    metadata object (measured 2.3x). The encoder built here once is the one ``json.dumps`` builds
    (``json.encoder.c_make_encoder`` with the default separators, ASCII escaping, NaN allowed); no
    circular check, which objects from ``json.loads`` never need. Without the C encoder, or if it
    does not give ``json.dumps``'s text on a probe, ``json.dumps`` itself is used.
    """
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return json.dumps
    try:
        enc = make(
            None,
            json.JSONEncoder().default,
            json.encoder.encode_basestring_ascii,
            None,
            ": ",
            ", ",
            False,
            False,
            True,
        )
        probe = {"a": [1, 2.5, None, True, '\u00e9"x'], "b": {"c": float("nan")}, "d": 1e-05}
        if "".join(enc(probe, 0)) != json.dumps(probe):
            return json.dumps
    except (TypeError, ValueError):
        return json.dumps

    def dumps(obj) -> str:
        return "".join(enc(obj, 0))

    return dumps


_DUMPS = _fast_dumps()
_FLOAT_TEXT = {math.inf: "Infinity", -math.inf: "-Infinity"}


def _value_text(value, vcache: dict, dumps) -> tuple[str, float | None, bool]:
    """JSON text of a decoded value (as ``json.dumps`` writes it), its number, and whether it fits."""
    if value is None:
        return "null", None, True
    tv = type(value)
    if tv is str:
        text = vcache.get(value)
        if text is None:
            text = vcache[value] = dumps(value)
        return text, None, True
    if tv is int:
        try:
            return int.__repr__(value), float(value), True
        except OverflowError:  # an integer beyond the float range (> 1.8e308)
            return int.__repr__(value), None, False
    if tv is float:  # json.dumps writes float.__repr__, and NaN / Infinity / -Infinity
        if value == value:
            return _FLOAT_TEXT.get(value) or float.__repr__(value), value, True
        return "NaN", value, True
    if tv is bool:
        return ("true" if value else "false"), None, True
    return dumps(value), None, True  # dict, list


def _meta_text(seg: str, meta: dict, mcache: dict, dumps, loads) -> str:
    """JSON text of the metadata object, from a cache keyed by its text in the line when possible.

    mllog writes ``"metadata": {...}`` last, so the text between the last ``, "metadata": `` and the
    closing brace of the line is the metadata's own text (a key at depth 1, since exactly one brace
    follows it; the quote after ``, `` cannot be inside a string). Lines repeat their metadata (36k
    ``init_start`` lines of one text in the bundled logs), so the ``json.dumps`` of a text seen twice
    is checked against the text once and then reused.
    """
    tail = seg.rstrip()
    j = tail.rfind(_META)
    if j > 1 and tail[j - 2 : j] == ", " and tail.endswith("}"):
        cand = tail[j + len(_META) : -1]
        text = mcache.get(cand, 0)
        if text:
            return text
        if text == 0:  # first time seen: most texts never repeat (tracked_stats steps)
            mcache[cand] = None
            return dumps(meta)
        text = dumps(meta)
        try:
            if loads(cand) == meta:  # the argument above, checked once per repeated text
                mcache[cand] = text
        except (ValueError, RecursionError):
            pass
        return text
    return dumps(meta)


def _segments(raw: str) -> tuple[str, list[str]]:
    """Prefix (text before the first token, after the last carriage return) and JSON segments."""
    parts = raw.rstrip("\r").split(MLLOG_TOKEN)
    prefix = parts[0].rsplit("\r", 1)[-1].strip()
    return prefix, parts[1:]


def _time(t, lo: float, hi: float) -> tuple[float | None, str | None]:
    """``time_ms`` as a float, or (None, check) when it is not a finite plausible epoch ms."""
    tt = type(t)
    if tt is int:
        return (float(t), None) if lo <= t <= hi else (None, "time_out_of_range")
    if tt is float:
        if lo <= t <= hi:
            return t, None
        return None, ("time_out_of_range" if math.isfinite(t) else "time_invalid")
    if tt is str:  # mlperf-logging's grammar accepts float(time_ms) of a string
        try:
            return _time(float(t), lo, hi)
        except ValueError:
            return None, "time_invalid"
    return None, "time_invalid"


def _decode(seg: str, lineno: int, checks: FileChecks, loads):
    """The event object of one segment, or None (with the check recorded) when it is unusable."""
    try:
        obj = loads(seg)
    except ValueError as exc:  # json.JSONDecodeError, or an integer of more than 4300 digits
        if isinstance(exc, json.JSONDecodeError):  # "Unterminated string starting at" + column
            msg = f"{exc.msg.removesuffix(' at')} at column {exc.colno}"
        else:
            msg = str(exc)
        checks.add(
            "corrupted_json", "excluded", f"corrupted MLLOG JSON ({msg}); event skipped", lineno
        )
        return None
    except RecursionError:
        checks.add(
            "corrupted_json", "excluded", "MLLOG JSON nested too deeply; event skipped", lineno
        )
        return None
    if type(obj) is not dict:
        checks.add(
            "bad_field_type",
            "excluded",
            f"MLLOG JSON is a {type(obj).__name__}, not an object; event skipped",
            lineno,
        )
        return None
    for name in ("time_ms", "key", "value", "metadata"):
        if name not in obj:
            checks.add(
                "missing_field",
                "excluded",
                f"MLLOG event lacks required field {name!r} (expected time_ms, key, value, metadata); event skipped",
                lineno,
            )
            return None
    if type(obj["key"]) is not str:
        checks.add(
            "bad_field_type",
            "excluded",
            f"MLLOG key is a {type(obj['key']).__name__}, not a string; event skipped",
            lineno,
        )
        return None
    return obj


# An event's JSON text with the digits of its top-level time_ms taken out: ranks repeat one event
# (the bundled logs hold 36k init_start lines of 20 texts), so a text seen before is not decoded again.
_TIME_RE = re.compile(r'"time_ms": (0|[1-9][0-9]{0,18})(?=[,}\s])')
_MLLOG_HEAD = ' {"namespace": "", "time_ms": '
_HEAD_LEN = len(_MLLOG_HEAD)


def _template_ok(seg: str, s0: int, s1: int, obj: dict) -> bool:
    """Whether ``seg`` may serve as a template: its matched digits are the top-level ``time_ms``.

    Before the match there is exactly one ``{`` (the object's), no ``[``, no backslash and an even
    number of quotes, so the match is a key at depth 1 outside any string; ``time_ms`` occurs once
    and decoded to the matched integer. A line equal to the template except for those digits then
    decodes to the same event with another time.
    """
    if s0 == _HEAD_LEN and seg.startswith(_MLLOG_HEAD):
        # the head as mllog writes it: its text before the digits (' {"namespace": "", ') passes
        # the checks on ``pre`` below, which need not be run again for every template
        t = obj["time_ms"]
        return type(t) is int and t == int(seg[s0:s1]) and seg.count('"time_ms"') == 1
    pre = seg[: s0 - len('"time_ms": ')]
    return (
        seg[s0 - len('"time_ms": ') : s0] == '"time_ms": '
        and type(obj["time_ms"]) is int
        and obj["time_ms"] == int(seg[s0:s1])
        and pre.count("{") == 1
        and "[" not in pre
        and "\\" not in pre
        and pre.count('"') % 2 == 0
        and seg.count('"time_ms"') == 1
    )


class DecodedEvent(NamedTuple):
    """One decoded and checked event of a log line (:func:`_event`); lines of one template share it."""

    time_ms: float | None  # None: the time was excluded (out of range)
    event_type: str | None
    key: str
    value_text: str | None  # the value as JSON text (EVENT_SCHEMA's ``value``)
    value_num: float | None
    metadata_text: str  # the metadata object as JSON text
    value: Any  # the decoded value
    metadata: dict | None  # the decoded metadata (None: damaged)
    clean: bool  # no check fired while decoding it
    obj: dict  # the decoded line


def _event(
    seg: str, lineno: int, checks: FileChecks, caches: tuple, lo: float, hi: float
) -> DecodedEvent | None:
    """Decode and check one event, or None when the event is skipped (check recorded)."""
    loads, dumps, vcache, mcache = caches
    obj = _decode(seg, lineno, checks, loads)
    if obj is None:
        return None
    clean = True
    t, bad = _time(obj["time_ms"], lo, hi)
    if bad is not None:
        clean = False
        checks.add(
            bad,
            "excluded",
            f"time_ms {str(obj['time_ms'])[:40]} is not a plausible epoch time in ms "
            f"({lo:.0f}..{hi:.0f}); time excluded",
            lineno,
        )
    key = obj["key"]
    value, meta = obj["value"], obj["metadata"]
    vtext, vnum, fits = _value_text(value, vcache, dumps)
    if not fits:
        clean = False
        checks.add(
            "value_out_of_range",
            "excluded",
            f"{key} value beyond the float range; its number excluded",
            lineno,
        )
    if type(meta) is not dict:
        clean = False
        checks.add(
            "bad_field_type",
            "excluded",
            f"{key} metadata is a {type(meta).__name__}, not an object; metadata excluded",
            lineno,
        )
        meta, mtext = None, "{}"  # None in ParsedLog.kept: the metadata was damaged
    else:
        mtext = _meta_text(seg, meta, mcache, dumps, loads)
    etype = obj.get("event_type")
    if etype is not None and type(etype) is not str:
        clean = False
        checks.add(
            "bad_field_type",
            "excluded",
            f"{key} event_type is a {type(etype).__name__}, not a string; excluded",
            lineno,
        )
        etype = None
    return DecodedEvent(t, etype, key, vtext, vnum, mtext, value, meta, clean, obj)


# Lines as mllog writes them, recognised in one native pass (polars string expressions): the token at
# the start, once, then the head and the digits of time_ms. Such a line is the token, the head, the
# digits and a template (the text after the digits); lines of one template decode alike (see
# _template_ok), so a template is decoded in Python once and every other line is polars' work.
_SIMPLE_RE = r'^:::MLLOG \{"namespace": "", "time_ms": (0|[1-9][0-9]{0,18}),'
_LINE_HEAD = MLLOG_TOKEN + _MLLOG_HEAD
_PIECE_BYTES = 32 << 20  # text read, decoded and split at a time (whole lines): memory per piece
# Below this size a file goes through the per-line path alone: a native pass costs about 4 ms of
# fixed polars work per file (some 30 expressions and frames), more than the per-line path's whole
# parse of a 100 kB log (measured on the bundled logs: 0.8 ms for 21 kB, 4.5 ms native).
_NATIVE_BYTES = 1 << 20


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


@dataclass
class Memo:
    """Decoded events by template, shared by the files of one load (:func:`read_log`'s ``memo``).

    An event's decoding is a function of its text alone, and only events that fired no check are
    kept, so files of one submission (which log the same lines at other times) decode each once.
    """

    caches: tuple = field(default_factory=lambda: (json.loads, _DUMPS, {}, {}))
    head: dict = field(default_factory=dict)  # text after the time digits of mllog-written lines
    regex: dict = field(default_factory=dict)  # text with the time digits taken out


def read_log(path: str | Path, data: bytes | None = None, memo: Memo | None = None) -> ParsedLog:
    """Parse one log into a :class:`ParsedLog` (the loader's form of :func:`parse_log`).

    The text is read in pieces of whole lines (memory follows what is kept, not the file): lines as
    mllog writes them are split into template and time in polars, each template is decoded once in
    Python, and only the other lines (rank prefixes, several events in one line, damage) go through
    the per-line Python path. The checks fire in line order, as one pass over the lines would fire
    them (``tests/test_mlperf_parse_identical.py`` compares with that pass).

    Args:
        path: the file (only read).
        data: its bytes, when already read.
        memo: decoded events to reuse and extend (a new one when None).

    Raises:
        OSError: the file cannot be read.
    """
    src = str(path)
    checks = FileChecks(src)
    memo = Memo() if memo is None else memo
    if data is None:
        with open(path, "rb") as f:  # one read for a small file, the first piece of a large one
            data = f.read(_NATIVE_BYTES)
            if len(data) == _NATIVE_BYTES:
                data = None
    if data is not None and len(data) < _NATIVE_BYTES:
        return _read_small(src, data, checks, memo)
    simple, tpls, others, sysjson, state = _scan(path, data)
    _utf8_check(state, checks)
    rep = _repeated_simple(simple)
    lim = limits()
    lo, hi = lim["time_ms_min"], lim["time_ms_max"]
    caches = memo.caches
    # each template decoded once, from its first line (checks there go to a scratch record: a
    # template that is not clean sends all its lines through the per-line path, which records them)
    first = simple.filter(pl.col("tid").is_first_distinct()).sort("tid")
    cached: dict[int, DecodedEvent] = {}
    first_line: dict[int, int] = {}  # template -> its first line (for messages)
    scratch = FileChecks(src)
    for tid, ln, d in zip(first["tid"].to_list(), first["line"].to_list(), first["d"].to_list(),
                          strict=True):  # fmt: skip
        ev = memo.head.get(tpls[tid])
        if ev is None:
            ds = str(d)
            seg = _MLLOG_HEAD + ds + tpls[tid]
            ev = _event(seg, ln, scratch, caches, lo, hi)
            if not (
                ev is not None
                and ev.clean
                and _template_ok(seg, _HEAD_LEN, _HEAD_LEN + len(ds), ev.obj)
            ):
                continue
            memo.head[tpls[tid]] = ev
        cached[tid] = ev
        first_line[tid] = ln
    del first, scratch
    is_cached = pl.col("tid").is_in(list(cached))
    t_ms = pl.col("d").cast(
        pl.Float64
    )  # at most 19 digits: exact below 2**53, beyond the range above
    in_range = t_ms.is_between(lo, hi)
    # the per-line path, in line order: other MLLOG lines, lines of uncached templates, and the
    # out-of-range times of cached ones (only the check: the event is the template's)
    todo = simple.filter(~is_cached | ~in_range).with_columns(c=is_cached)
    work = [(ln, 0, raw) for ln, raw in others]
    for ln, tid, d, c in todo.iter_rows():
        if c:
            work.append((ln, 1, str(d)))
        else:  # its repeats are found from (template, digits) with the others
            work.append((ln, 2, _LINE_HEAD + str(d) + tpls[tid]))
    if others and todo.height:
        work.sort(key=operator.itemgetter(0))
    del todo
    py = _per_line(work, checks, memo, lo, hi)
    check_encodable(src, py)  # a lone surrogate: the whole file refused, naming the line
    ev_cols = ("event_type", "key", "value", "value_num", "metadata")
    tmpl = {c: [None] * len(tpls) for c in ev_cols}
    for tid, ev in cached.items():
        for c, v in zip(
            ev_cols,
            (ev.event_type, ev.key, ev.value_text, ev.value_num, ev.metadata_text),
            strict=True,
        ):
            tmpl[c][tid] = v
    check_encodable(src, {"line": [first_line.get(t) for t in range(len(tpls))], **tmpl})
    tmpl_frame = pl.DataFrame(tmpl, schema={c: EVENT_SCHEMA[c] for c in ev_cols})
    cached_rows = simple.filter(is_cached)
    tid = cached_rows["tid"]
    events = pl.DataFrame(
        [
            cached_rows["line"],
            pl.Series("prefix", [""], pl.String).extend_constant("", cached_rows.height - 1)
            if cached_rows.height
            else pl.Series("prefix", [], pl.String),
            cached_rows.select(pl.when(in_range).then(t_ms).alias("time_ms"))["time_ms"],
            *(tmpl_frame[c].gather(tid) for c in ev_cols),
            tid.cast(pl.Int64).alias("src"),
        ]
    )
    del cached_rows, tid, simple
    if py["line"]:
        py_frame = pl.DataFrame(
            {**{c: py[c] for c in EVENT_SCHEMA if c != "file"},
             "src": [-1 - i for i in range(len(py["line"]))]},
            schema={**{c: t for c, t in EVENT_SCHEMA.items() if c != "file"}, "src": pl.Int64},
        )  # fmt: skip
        events = events.merge_sorted(py_frame, key="line") if events.height else py_frame
    # kept events: their decoded value and metadata, from the template or the per-line event
    kept: dict[str, list] = {}
    hit = events.with_row_index("row").filter(pl.col("key").is_in(list(KEPT_KEYS)))
    for row, key, s in hit.select("row", "key", "src").iter_rows():
        ev = cached[s] if s >= 0 else py["objects"][-1 - s]
        kept.setdefault(key, []).append((row, ev.value, ev.metadata))
    events = events.drop("src")
    events = _order_check_frame(events, checks, lim)
    _repeat_check_frame(rep, py["repeated"], events, checks)
    return ParsedLog(src, events, kept, sysjson, checks)


# The only way a decoded event gets a character UTF-8 cannot store: json.loads of a surrogate escape
# (the text itself is decoded with U+FFFD for bad bytes, and json.dumps writes values and metadata
# in ASCII). A file without one needs no check_encodable pass (it was 6 % of the small-file path).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _read_small(src: str, data: bytes, checks: FileChecks, memo: Memo) -> ParsedLog:
    """:func:`read_log` of a small file: every MLLOG line through the per-line path."""
    state = _Text()
    text = _decode_piece(data, 0, state)
    _utf8_check(state, checks)
    lim = limits()
    lo, hi = lim["time_ms_min"], lim["time_ms_max"]
    tok, lines = MLLOG_TOKEN, text.split("\n")
    work = [(lineno, 0, raw) for lineno, raw in enumerate(lines, start=1) if tok in raw]
    sysjson = None
    if _SYSJSON in text:
        found = next((r for r in lines if tok not in r and _sysjson_line(r)), None)
        sysjson = found.split(_SYSJSON, 1)[1] if found is not None else None
    del lines
    maybe_surrogate = "\\u" in text and _SURROGATE_ESCAPE.search(text) is not None
    n_tokens = text.count(tok)
    del text
    py = _simple_lines(work, n_tokens, checks, memo, lo, hi)
    if py is None:  # a line mllog did not write (a prefix, two events, odd digits) or a bad time
        py = _per_line(work, checks, memo, lo, hi)
    if maybe_surrogate:
        check_encodable(src, py)  # a lone surrogate: the whole file refused, naming the line
    kept: dict[str, list] = {}
    objects = py["objects"]
    for row, key in enumerate(py["key"]):
        if key in KEPT_KEYS:
            kept.setdefault(key, []).append((row, objects[row].value, objects[row].metadata))
    _order_check(py["time_ms"], py["line"], checks, lim, py["key"], py["value"])
    if py["repeated"]:
        lines, keys, rank = py["line"], py["key"], _rank_keys()
        first: dict[int, int] = {}
        for row, ln in enumerate(lines):
            first.setdefault(ln, row)
        hit = [ln for ln in py["repeated"] if ln in first and keys[first[ln]] not in rank]
        _report_repeats(hit, checks)
    schema = {c: t for c, t in EVENT_SCHEMA.items() if c != "file"}
    events = pl.DataFrame({c: py[c] for c in schema}, schema=schema)
    return ParsedLog(src, events, kept, sysjson, checks)


# the time digits of every line of a file, one per line, as the per-line path takes them: an integer
# of at most 19 digits without a leading zero (JSON's grammar; 19 digits are exact in a float below 2**53
# and beyond the plausible range above)
_DIGIT_LINES = re.compile(r"(?:0|[1-9][0-9]{0,18})(?:\n(?:0|[1-9][0-9]{0,18}))*")
_LINE_HEAD_LEN = len(MLLOG_TOKEN + _MLLOG_HEAD)


def _simple_lines(work: list[tuple], n_tokens: int, checks: FileChecks, memo: Memo, lo: float,
                  hi: float) -> dict | None:  # fmt: skip
    """:func:`_per_line` of a file whose every MLLOG line is as mllog writes it, in C-level passes.

    Taken only when each line of ``work`` (all kind 0) starts with the token and the head (or
    every line has a prefix before them and no carriage return: srun's rank labels), holds
    no second token (``n_tokens``, the file's count, equals the lines'), and its time digits are an
    integer :data:`_DIGIT_LINES` accepts, in the plausible range: then :func:`_per_line` would take
    every line by its head, as a template (the text from the comma after the digits) and a time
    with no check. The templates are looked up all at once; only the lines of templates not seen
    before are decoded, in line order, by the same :func:`_event` and caching rule, so the events,
    the checks and their order are :func:`_per_line`'s (``tests/test_mlperf_parse_identical.py``).
    Issue 29: the per-line loop was a quarter of the loader on the bundled logs.

    Returns:
        :func:`_per_line`'s dict, or None when a line does not qualify (the caller then runs
        :func:`_per_line`).
    """
    n = len(work)
    if n == 0 or n_tokens != n:
        return None
    lines_raw = raws = list(map(operator.itemgetter(2), work))
    prefixes: list[str] | None = None
    if sum(map(str.startswith, raws, repeat(_LINE_HEAD, n))) != n:
        # every line "<prefix> :::MLLOG {...}" (srun --label's "0: ": 43 % of v5.1's lines): the
        # per-line path takes the text before the token, stripped, as the prefix (no carriage
        # return in the line: it would cut the prefix there and strip the segment) and the rest
        # as an mllog-written line
        pos = list(map(str.find, raws, repeat(_LINE_HEAD, n)))
        if min(pos) < 0 or any(map(operator.contains, raws, repeat("\r", n))):
            return None
        prefixes = [r[:p].strip() for r, p in zip(raws, pos, strict=True)]
        raws = list(map(operator.getitem, raws, map(slice, pos, repeat(None, n))))
    ends = list(map(str.find, raws, repeat(",", n), repeat(_LINE_HEAD_LEN, n)))
    if min(ends) <= _LINE_HEAD_LEN:
        return None
    digits = list(map(operator.getitem, raws, map(slice, repeat(_LINE_HEAD_LEN, n), ends)))
    if _DIGIT_LINES.fullmatch("\n".join(digits)) is None:
        return None
    times = list(map(float, digits))
    if not (lo <= min(times) and max(times) <= hi):
        return None  # the per-line path's check of a cached template's time
    tpls = list(map(operator.getitem, raws, map(slice, ends, repeat(None, n))))
    head, caches = memo.head, memo.caches
    evs = list(map(head.get, tpls))
    dropped: list[int] = []
    for i in compress(range(n), map(operator.not_, evs)):  # not seen before (in line order)
        ev = head.get(tpls[i])
        if ev is None:  # not cached by an earlier line of this loop either: decode
            seg = raws[i][len(MLLOG_TOKEN) :]
            ev = _event(seg, work[i][0], checks, caches, lo, hi)
            if ev is None:
                dropped.append(i)
                continue
            times[i] = ev.time_ms
            if ev.clean and _template_ok(seg, _HEAD_LEN, ends[i] - len(MLLOG_TOKEN), ev.obj):
                head[tpls[i]] = ev
        evs[i] = ev
    repeated: list[int] = []
    if len(set(lines_raw)) < n:  # an exact repeat of a line: which, in line order
        seen: set[str] = set()
        for lineno, _, raw in work:
            if raw in seen:
                repeated.append(lineno)
            seen.add(raw)
    line = list(map(operator.itemgetter(0), work))
    if prefixes is None:
        prefixes = [""] * n
    if dropped:
        keep = [True] * n
        for i in dropped:
            keep[i] = False
        line, times, evs, prefixes = (list(compress(c, keep)) for c in (line, times, evs, prefixes))
    field = operator.attrgetter
    out: dict[str, list] = {
        "line": line,
        "prefix": prefixes,
        "time_ms": times,
        "event_type": list(map(field("event_type"), evs)),
        "key": list(map(field("key"), evs)),
        "value": list(map(field("value_text"), evs)),
        "value_num": list(map(field("value_num"), evs)),
        "metadata": list(map(field("metadata_text"), evs)),
    }
    out["objects"], out["repeated"] = evs, repeated
    return out


def _per_line(work: list[tuple], checks: FileChecks, memo: Memo, lo: float, hi: float) -> dict:
    """The per-line Python path over ``work``, (line, kind, text) in line order.

    kind 0: an MLLOG line to parse (prefix, segments, each event decoded or taken from a template
    of this path); kind 2: the same, for an mllog-written line (its repeats are found elsewhere);
    kind 1: a line of a cached template whose time is out of range (text: the digits): only its
    check. Returns the events' columns, their events (:class:`DecodedEvent`) and the
    lines that repeat an earlier line of this path exactly.
    """
    caches, templates, head_templates = memo.caches, memo.regex, memo.head
    time_search = _TIME_RE.search
    # one (line, prefix, time, event) tuple per event; the columns are taken out after the loop
    # by C-level maps (eight list appends per event were a tenth of the small-file path)
    rows: list[tuple] = []
    add = rows.append
    seen: set[str] = set()
    repeated: list[int] = []
    for lineno, kind, raw in work:
        if kind == 1:
            checks.add(
                "time_out_of_range",
                "excluded",
                f"time_ms {raw} is not a plausible epoch time in ms ({lo:.0f}..{hi:.0f}); time excluded",
                lineno,
            )
            continue
        if kind == 0:
            n_seen = len(seen)
            seen.add(raw)  # one hash lookup: the set did not grow for a line seen before
            if len(seen) == n_seen:
                repeated.append(lineno)
        if raw.startswith(MLLOG_TOKEN) and raw.find(MLLOG_TOKEN, 8) < 0:
            prefix, segs = "", (raw[8:],)
        else:
            prefix, segs = _segments(raw)
        for seg in segs:
            ev = tpl = None
            if seg.startswith(_MLLOG_HEAD):  # how mllog writes every line: no regex needed
                s1 = seg.find(",", _HEAD_LEN)
                d = seg[_HEAD_LEN:s1]
                ok = s1 > _HEAD_LEN and len(d) <= 19 and d.isascii() and d.isdigit()
                if ok and (d[0] != "0" or len(d) == 1):
                    s0, tpl, cache = _HEAD_LEN, seg[s1:], head_templates
            if tpl is None:
                m = time_search(seg)
                if m is not None:
                    s0, s1 = m.span(1)
                    tpl, cache = seg[:s0] + seg[s1:], templates
            if tpl is not None:
                ev = cache.get(tpl)
            if ev is not None:
                # at most 19 digits: exact below 2**53, beyond the range above
                t = float(seg[s0:s1])
                if not lo <= t <= hi:
                    t = None
                    checks.add(
                        "time_out_of_range",
                        "excluded",
                        f"time_ms {seg[s0:s1]} is not a plausible epoch time in ms "
                        f"({lo:.0f}..{hi:.0f}); time excluded",
                        lineno,
                    )
            else:
                ev = _event(seg, lineno, checks, caches, lo, hi)
                if ev is None:
                    continue
                t = ev.time_ms
                if tpl is not None and ev.clean and _template_ok(seg, s0, s1, ev.obj):
                    cache[tpl] = ev
            add((lineno, prefix, t, ev))
            prefix = ""
    get, field = operator.itemgetter, operator.attrgetter
    evs = list(map(get(3), rows))
    out: dict[str, list] = {
        "line": list(map(get(0), rows)),
        "prefix": list(map(get(1), rows)),
        "time_ms": list(map(get(2), rows)),
        "event_type": list(map(field("event_type"), evs)),
        "key": list(map(field("key"), evs)),
        "value": list(map(field("value_text"), evs)),
        "value_num": list(map(field("value_num"), evs)),
        "metadata": list(map(field("metadata_text"), evs)),
    }
    out["objects"], out["repeated"] = evs, repeated  # one DecodedEvent per event
    return out


def _order_check_frame(events: pl.DataFrame, checks: FileChecks, lim: dict) -> pl.DataFrame:
    """:func:`_order_check` on the events' times; the common case (no large step) stays native."""
    k = int(lim["order_window"])
    ts = events["time_ms"].drop_nulls()
    if ts.len() < 2 * k + 1:
        return events
    if ts.diff().abs().max() <= lim["order_tolerance_ms"] / k:
        return events
    times = events["time_ms"].to_list()
    keys, values = events["key"].to_list(), events["value"].to_list()
    _order_check(times, events["line"].to_list(), checks, lim, keys, values)
    return events.with_columns(pl.Series("time_ms", times, dtype=pl.Float64))


@cache
def _rank_keys() -> frozenset[str]:

    return frozenset(r["key"] for r in package_table("mlperf_rank_events"))


def _repeated_simple(simple: pl.DataFrame) -> pl.Series:
    """Lines (Int64) of ``simple`` that repeat an earlier one: same template and time digits.

    Equal texts have equal times, so only lines that share their time with another are compared
    (a hash table of the times alone first, not of every (template, time) pair: memory). Run before
    the events are built, while less is held.
    """
    same_time = simple.filter(pl.col("d").is_duplicated())
    return same_time.filter(~pl.struct("tid", "d").is_first_distinct())["line"]


def _repeat_check_frame(rep: pl.Series, repeated: list[int], events: pl.DataFrame,
                        checks: FileChecks) -> None:  # fmt: skip
    """``duplicate_line``: an MLLOG line that repeats an earlier line of the file exactly (same
    prefix, time_ms and text), except keys every rank logs at one millisecond
    (``mlperf_rank_events.csv``). The loader counts rank duplicates once, so nothing is dropped;
    the row says the file was copied into itself (a log appended twice, ``tee`` of one stream).

    ``rep``: the repeated mllog-written lines (:func:`_repeated_simple`); ``repeated``: the other
    lines that repeat one (compared as text)."""
    if not repeated and not rep.len():
        return
    lines = rep.append(pl.Series("line", repeated, pl.Int64))
    firsts = (
        events.select("line", "key")
        .filter(pl.col("line").is_in(lines.implode()))
        .filter(pl.col("line").is_first_distinct())  # the line's first event
    )
    hit = firsts.filter(~pl.col("key").is_in(list(_rank_keys())))["line"].sort().to_list()
    _report_repeats(hit, checks)


def _report_repeats(hit: list[int], checks: FileChecks) -> None:
    """The ``duplicate_line`` check of the repeated lines ``hit`` (line order), if any."""
    if not hit:
        return
    n = len(hit)
    checks.add(
        "duplicate_line",
        "flagged",
        f"{n} MLLOG {'line repeats' if n == 1 else 'lines repeat'} an earlier line exactly (same "
        "time_ms and text: the log was written or copied twice); each event is counted once",
        hit[0],
        n=0,
    )
    found = checks.found["duplicate_line"]
    found.lines.extend(hit[1:])
    found.n, found.counted = n, True


def _offline_exempt(times: list, keys: list, values: list, tol: float) -> list[int]:
    """Rows the order check leaves alone: each run_stop that follows an offline evaluation
    (:func:`trainperf.mlperf.timeline.offline_eval_tail`) with a time not later than its last
    training event's plus ``tol``, and the evaluation events between them (timed later, and in
    any order: the rules let checkpoints be evaluated "in order, out of order")."""
    out: list[int] = []
    for r in [i for i, k in enumerate(keys) if k == "run_stop"]:
        if times[r] is None:
            continue
        end = offline_eval_tail(keys, values, r)
        if end is not None and times[end] is not None and times[r] <= times[end] + tol:
            out.extend(range(end + 1, r + 1))
    return out


def _order_check(times: list, lines: list[int], checks: FileChecks, lim: dict,
                 keys: list | None = None, values: list | None = None) -> None:  # fmt: skip
    """Exclude (set to None) times far from the median of their file-order neighbours.

    MLLOG lines are written in time order, so in a file the median of an event's neighbourhood is
    its own time up to rank skew: for ``n >= 2k + 1`` valid times, an interior event is compared
    with the median of the ``2h + 1`` times centred on it (``h = min(k, distance to an end)``).
    The first and last have neighbours on one side only, whose median lags a time-ordered end by
    half the window (hours in a log of few, long epochs): the last is damage when it is more than
    the tolerance below the median of its ``k`` nearest or above the largest of them, the first
    likewise mirrored. A time further than ``order_tolerance_ms`` (1 h) is damage (a ``2**32`` ms
    wrap is 49.7 days). Files with fewer times are not checked. A run_stop logged after an offline
    evaluation of checkpoints, and that evaluation's events, are left out (:func:`_offline_exempt`).
    """
    k = int(lim["order_window"])
    tol = lim["order_tolerance_ms"]
    work = times
    if None in times:
        idx = [i for i, t in enumerate(times) if t is not None]
        ts = [times[i] for i in idx]
    else:  # the common case: every time valid (no list built per event)
        idx, ts = range(len(times)), times
    n = len(idx)
    if n < 2 * k + 1:
        return
    # |t_i - median| <= k * (largest step) within a window: no step above tol / k, nothing to find.
    if max(map(abs, map(operator.sub, ts[1:], ts[:-1]))) <= tol / k:
        return
    exempt = []
    if keys is not None and "run_stop" in keys:
        exempt = _offline_exempt(times, keys, values, tol)
    if exempt:
        work = list(times)
        for r in exempt:
            work[r] = None
        idx = [i for i, t in enumerate(work) if t is not None]
        n = len(idx)
        if n < 2 * k + 1:
            return
    ts = [work[i] for i in idx]  # times is changed below
    med = pl.Series(ts, dtype=pl.Float64).rolling_median(2 * k + 1, center=True).to_list()
    med[0] = statistics.median(ts[1 : k + 1])
    med[-1] = statistics.median(ts[-k - 1 : -1])
    for j in list(range(1, k)) + list(range(n - k, n - 1)):
        h = min(j, n - 1 - j)
        med[j] = statistics.median(ts[j - h : j + h + 1])
    lo_first, hi_last = min(ts[1 : k + 1]), max(ts[-k - 1 : -1])
    for j, (t, m) in enumerate(zip(ts, med, strict=True)):
        if j == 0:
            bad = t > m + tol or t < lo_first - tol
        elif j == n - 1:
            bad = t < m - tol or t > hi_last + tol
        else:
            bad = abs(t - m) > tol
        if bad:
            row = idx[j]
            times[row] = None
            checks.add(
                "time_out_of_order",
                "excluded",
                f"time_ms {t:.0f} is {abs(t - m) / 3.6e6:,.1f} h from its neighbours in the file "
                f"(median {m:.0f}); time excluded",
                lines[row],
            )


def parse_log(
    path: str | Path,
    warnings_sink: list[str] | None = None,
    quality: QualityLog | None = None,
) -> pl.DataFrame:
    """Parse every ``:::MLLOG`` event of one log file.

    Each physical line (split on ``\\n``; a trailing ``\\r`` is dropped) may carry text before the
    token (a rank prefix such as ``0: `` or ``Processing``; after a carriage return only the text
    after the last ``\\r`` is kept, as a terminal shows it) and may carry more than one event when
    ranks wrote into the same line. Lines without the token (``:::SYSJSON``, shell traces) are
    skipped. Checks, each reported once per file as a data-quality row and an
    :class:`~trainperf.mlperf.checks.MLPerfLogWarning` naming the file and first line:

    * ``corrupted_json``, ``missing_field`` (one of time_ms, key, value, metadata),
      ``bad_field_type`` (not an object; key not a string): the event is skipped;
    * ``time_invalid`` (not a finite number), ``time_out_of_range`` (outside 2000..2100, e.g. 0, a
      32-bit wrap, seconds or microseconds), ``time_out_of_order`` (more than 1 h from the median
      of its file-order neighbours, e.g. a ``2**32`` ms wrap; files of 11 or more timed events):
      the event is kept with ``time_ms`` null;
    * metadata or event_type of the wrong type: replaced by ``{}`` / null; ``value_out_of_range``
      (an integer beyond the float range): ``value_num`` null; ``invalid_utf8``: U+FFFD.

    Limits and their sources: ``trainperf/tables/mlperf_limits.csv``.

    Args:
        path: the log file. It is only read.
        warnings_sink: list that receives the warning texts (also emitted through ``warnings``).
        quality: :class:`~trainperf.quality.QualityLog` that receives the data-quality rows
            (a new one, which only warns, when None).

    Returns:
        polars frame, one row per event, in file order: ``file`` (String), ``line`` (Int64, 1-based
        source line), ``prefix`` (String, text before the token, "" when none), ``time_ms`` (Float64,
        Unix epoch milliseconds; null when excluded), ``event_type`` (String), ``key`` (String),
        ``value`` (String, the value as JSON text), ``value_num`` (Float64, the value when it is a
        number, else null), ``metadata`` (String, JSON text of an object).

    Raises:
        FileNotFoundError / OSError: the file cannot be read.
    """
    parsed = read_log(path, read_result_bytes(path))  # result_*.txt.gz decompressed
    log = quality if quality is not None else QualityLog(category=MLPerfLogWarning)
    flush(parsed.checks, log, warnings_sink)
    return parsed.frame()


def flush(checks: FileChecks, log: QualityLog, sink: list[str] | None) -> int:
    """Write the checks of one file into ``log`` (which warns) and their texts into ``sink``."""
    before = len(log.rows)
    n = checks.flush(log)
    if sink is not None:
        for r in log.rows[before:]:
            where = (
                f"{r['source']}:{r['first_line']}" if r["first_line"] is not None else r["source"]
            )
            sink.append(f"{where}: {r['detail']} ({r['check']}: {r['action']})")
    return n
