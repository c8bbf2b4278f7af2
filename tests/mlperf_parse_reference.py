"""The MLPerf line parser as it was before the polars rewrite (issue 29): ``src/trainperf/mlperf/parse.py``
at commit c71c329, one Python pass over every line, kept verbatim below this header only as the reference of
``tests/test_mlperf_parse_identical.py``. Not part of the product; never import it outside the tests.
"""

# ruff: noqa

from __future__ import annotations

import json
import math
import operator
import re
import statistics
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import polars as pl

from trainperf.mlperf.checks import FileChecks, MLPerfLogWarning, limits
from trainperf.quality import QualityLog

__all__ = [
    "EVENT_SCHEMA",
    "KEPT_KEYS",
    "MLLOG_TOKEN",
    "ParsedLog",
    "flush",
    "parse_log",
    "read_log",
]

MLLOG_TOKEN = ":::MLLOG"
_SYSJSON = ":::SYSJSON"
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
    """One parsed log: event columns as lists, the kept events' objects, and what the checks found.

    Attributes:
        path: the file (as given).
        cols: EVENT_SCHEMA column (except ``file``) -> list of values, one per event in file order.
        kept: key in :data:`KEPT_KEYS` -> [(row, value, metadata dict)] in file order; the metadata
            is None where it was damaged (not an object; the events frame then holds ``{}``).
        sysjson: text after the first ``:::SYSJSON`` token (a system description some logs embed).
        checks: the checks that fired (flushed into a :class:`~trainperf.quality.QualityLog`).
    """

    path: str
    cols: dict[str, list]
    kept: dict[str, list[tuple[int, object, dict]]]
    sysjson: str | None
    checks: FileChecks

    @property
    def n_events(self) -> int:
        return len(self.cols["line"])

    def frame(self) -> pl.DataFrame:
        """The events as a polars frame with :data:`EVENT_SCHEMA`."""
        data = {"file": [self.path] * self.n_events, **self.cols}
        return pl.DataFrame(data, schema=EVENT_SCHEMA)


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


def _event(seg: str, lineno: int, checks: FileChecks, caches: tuple, lo: float, hi: float):
    """Decode and check one event: (time, event_type, key, value text, value_num, metadata text,
    value, metadata, clean (no check fired), decoded object), or None when the event is skipped
    (check recorded)."""
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
    return t, etype, key, vtext, vnum, mtext, value, meta, clean, obj


def read_log(path: str | Path, data: bytes | None = None) -> ParsedLog:
    """Parse one log into a :class:`ParsedLog` (the loader's form of :func:`parse_log`).

    Raises:
        OSError: the file cannot be read.
    """
    # One loop over the lines, kept in one function on purpose: it is the reader's hot path
    # (issue 16: <= 1.5x one json.loads per line), and every call or attribute lookup counts.
    src = str(path)
    checks = FileChecks(src)
    text = _decode_text(Path(path).read_bytes() if data is None else data, checks)
    lim = limits()
    lo, hi = lim["time_ms_min"], lim["time_ms_max"]
    caches = (json.loads, _DUMPS, {}, {})
    templates: dict[str, tuple] = {}  # text with the time digits taken out -> event
    head_templates: dict[str, tuple] = {}  # text after the time digits of mllog-written lines
    time_search = _TIME_RE.search
    cols: dict[str, list] = {k: [] for k in EVENT_SCHEMA if k != "file"}
    c_line, c_prefix, c_time, c_type = (
        cols["line"],
        cols["prefix"],
        cols["time_ms"],
        cols["event_type"],
    )
    c_key, c_value, c_num, c_meta = cols["key"], cols["value"], cols["value_num"], cols["metadata"]
    kept: dict[str, list] = {}
    sysjson = None
    seen: set[str] = set()  # MLLOG lines so far, for the duplicate-line check
    repeats: list[tuple[int, int]] = []  # (line, row its first event gets)
    for lineno, raw in enumerate(text.split("\n"), start=1):
        i = raw.find(MLLOG_TOKEN)
        if i < 0:
            # the one change since it was copied: the shell's trace of the echo that prints the
            # system description (`+ echo ':::SYSJSON ...'`, Oracle v4.1) is not the description
            if sysjson is None and _SYSJSON in raw and not raw.lstrip().startswith("+"):
                sysjson = raw.split(_SYSJSON, 1)[1]
            continue
        if raw in seen:
            repeats.append((lineno, len(c_line)))
        else:
            seen.add(raw)
        if i == 0 and raw.find(MLLOG_TOKEN, 8) < 0:
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
                t = float(
                    seg[s0:s1]
                )  # at most 19 digits: exact below 2**53, beyond the range above
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
                t = ev[0]
                if tpl is not None and ev[8] and _template_ok(seg, s0, s1, ev[9]):
                    cache[tpl] = ev
            key = ev[2]
            if key in KEPT_KEYS:
                kept.setdefault(key, []).append((len(c_line), ev[6], ev[7]))
            c_line.append(lineno)
            c_prefix.append(prefix)
            c_time.append(t)
            c_type.append(ev[1])
            c_key.append(key)
            c_value.append(ev[3])
            c_num.append(ev[4])
            c_meta.append(ev[5])
            prefix = ""
    _order_check(c_time, c_line, checks, lim)
    if repeats:
        _repeat_check(repeats, c_line, c_key, checks)
    return ParsedLog(src, cols, kept, sysjson, checks)


@cache
def _rank_keys() -> frozenset[str]:
    from trainperf.tables import package_table

    return frozenset(r["key"] for r in package_table("mlperf_rank_events"))


def _repeat_check(repeats: list[tuple[int, int]], lines: list[int], keys: list[str],
                  checks: FileChecks) -> None:  # fmt: skip
    """``duplicate_line``: an MLLOG line that repeats an earlier line of the file exactly (same
    prefix, time_ms and text), except keys every rank logs at one millisecond
    (``mlperf_rank_events.csv``). The loader counts rank duplicates once, so nothing is dropped;
    the row says the file was copied into itself (a log appended twice, ``tee`` of one stream)."""
    rank = _rank_keys()
    hit = [ln for ln, row in repeats
           if row < len(lines) and lines[row] == ln and keys[row] not in rank]  # fmt: skip
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


def _decode_text(data: bytes, checks: FileChecks) -> str:
    """The file's text: UTF-8, with bytes that are not UTF-8 replaced by U+FFFD (check recorded)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", errors="replace")
        first = text.find("\ufffd")
        checks.add(
            "invalid_utf8",
            "corrected",
            f"bytes that are not UTF-8 (first at byte {exc.start}) replaced by U+FFFD",
            text[:first].count("\n") + 1 if first >= 0 else None,
            n=text.count("\ufffd"),
        )
        return text


def _order_check(times: list, lines: list[int], checks: FileChecks, lim: dict) -> None:
    """Exclude (set to None) times far from the median of their file-order neighbours.

    MLLOG lines are written in time order, so in a file the median of an event's neighbourhood is
    its own time up to rank skew: for ``n >= 2k + 1`` valid times, an interior event is compared
    with the median of the ``2h + 1`` times centred on it (``h = min(k, distance to an end)``), the
    first and last with the median of their ``k`` nearest. A time further than ``order_tolerance_ms``
    (1 h) is damage (a ``2**32`` ms wrap is 49.7 days). Files with fewer times are not checked.
    """
    k = int(lim["order_window"])
    tol = lim["order_tolerance_ms"]
    idx = [i for i, t in enumerate(times) if t is not None]
    n = len(idx)
    if n < 2 * k + 1:
        return
    ts = [times[i] for i in idx]
    # |t_i - median| <= k * (largest step) within a window: no step above tol / k, nothing to find.
    if max(map(abs, map(operator.sub, ts[1:], ts[:-1]))) <= tol / k:
        return
    med = pl.Series(ts, dtype=pl.Float64).rolling_median(2 * k + 1, center=True).to_list()
    med[0] = statistics.median(ts[1 : k + 1])
    med[-1] = statistics.median(ts[-k - 1 : -1])
    for j in list(range(1, k)) + list(range(n - k, n - 1)):
        h = min(j, n - 1 - j)
        med[j] = statistics.median(ts[j - h : j + h + 1])
    for j, (t, m) in enumerate(zip(ts, med, strict=True)):
        if abs(t - m) > tol:
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
    parsed = read_log(path)
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
