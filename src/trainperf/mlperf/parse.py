"""``:::MLLOG`` lines of one MLPerf log file into events, with every value checked.

The grammar is mlperf-logging's (``compliance_checker/mlp_parser/ruleset_*.py``): after the token, one
JSON object with ``time_ms`` (Unix epoch milliseconds), ``key``, ``value`` and ``metadata``. This
module decodes each event's JSON once (mlperf-logging's ``string_to_logline`` plus a second
``json.loads`` and two ``json.dumps`` cost 3.5x one ``json.loads`` per line) and checks what
the grammar leaves open: ``time_ms`` finite and plausible, events in time order, field types.

The work is split by concern (no module over 800 lines): :mod:`~trainperf.mlperf.events` decodes
and checks one event and holds the :class:`Memo`; :mod:`~trainperf.mlperf.lines` runs the per-line
paths; :mod:`~trainperf.mlperf.scan` streams a large file through its native (polars) pass;
:mod:`~trainperf.mlperf.filechecks` checks a whole file's times and repeated lines. This module
puts them together (:func:`read_log`, :func:`parse_log`) and keeps the public names.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from itertools import compress, repeat
from pathlib import Path

import polars as pl

from trainperf.mlperf.checks import (
    FileChecks,
    MLPerfLogWarning,
    check_encodable,
    display_path,
    limits,
    read_result_bytes,
)
from trainperf.mlperf.events import (
    _HEAD_LEN,
    _LINE_HEAD,
    _MLLOG_HEAD,
    KEPT_KEYS,
    MLLOG_TOKEN,
    UNSHARED_KEYS,
    DecodedEvent,
    Memo,
    _event,
    _flat_event,
    _template_ok,
)
from trainperf.mlperf.filechecks import (
    _order_check,
    _order_check_frame,
    _rank_keys,
    _repeat_check_frame,
    _repeated_simple,
    _report_repeats,
)
from trainperf.mlperf.lines import _per_line, _simple_lines
from trainperf.mlperf.scan import _SYSJSON, _decode_piece, _scan, _sysjson_line, _Text, _utf8_check
from trainperf.quality import QualityLog

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
        """Column name -> Series (indexable by row), every :data:`EVENT_SCHEMA` column but ``file``.

        Built once per ``events`` frame (issue 36: the loader asks for it some eight times a file,
        and building it each time was 2 % of a round's record build)."""
        got = self.__dict__.get("_cols")
        if got is None or got[0] is not self.events:
            got = (self.events, {c: self.events.get_column(c) for c in self.events.columns})
            self.__dict__["_cols"] = got
        return got[1]

    @property
    def n_events(self) -> int:
        return self.events.height

    def frame(self) -> pl.DataFrame:
        """The events as a polars frame with :data:`EVENT_SCHEMA`."""
        path = display_path(self.path)  # a name with bytes that are not UTF-8: escaped
        # one string the rows share (pl.repeat writes it once per row: 10 % of a load)
        file = pl.Series("file", [path], pl.String).new_from_index(0, self.n_events)
        return pl.DataFrame([file, *(self.events.get_column(c) for c in list(EVENT_SCHEMA)[1:])])


# Below this size a file goes through the per-line path alone: a native pass costs about 4 ms of
# fixed polars work per file (some 30 expressions and frames), more than the per-line path's whole
# parse of a 100 kB log (measured on the bundled logs: 0.8 ms for 21 kB, 4.5 ms native).
_NATIVE_BYTES = 1 << 20


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
            ev = _flat_event(tpls[tid], float(d))  # the time is the line's own (unused here)
            if ev is not None:
                if ev.key not in UNSHARED_KEYS:
                    memo.head[tpls[tid]] = ev
                cached[tid] = ev
                first_line[tid] = ln
                continue
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
    py = None
    if others and len(work) == len(others):
        # only the other MLLOG lines (srun's rank labels "0: " on every line of NVIDIA's v5.1
        # logs): the C-level passes when each is an mllog-written line after its prefix
        n_tokens = sum(map(str.count, map(operator.itemgetter(2), work), repeat(MLLOG_TOKEN)))
        py = _simple_lines(work, n_tokens, checks, memo, lo, hi)
    if py is None:
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
    # the MLLOG lines as (line, 0, text), by C-level passes (the comprehension was 2 % of a build)
    has = list(map(operator.contains, lines, repeat(tok, len(lines))))
    work = list(zip(compress(range(1, len(lines) + 1), has), repeat(0), compress(lines, has)))
    del has
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
        number, else null), ``metadata`` (String, JSON text of an object). The JSON texts are
        ``json.dumps``'s of the decoded objects, except for an event whose value and metadata are
        flat objects of a key not in :data:`KEPT_KEYS` (``tracked_stats``), which is not decoded:
        its texts are the line's own, the same for every line mllog writes
        (:func:`~trainperf.mlperf.events._flat_event`).

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
