"""One ``:::MLLOG`` event's JSON into a checked event (:class:`DecodedEvent`), and the memo of
decoded events a load shares (:class:`Memo`); used by :mod:`trainperf.mlperf.parse`."""

from __future__ import annotations

import json
import math
import operator
import re
from dataclasses import dataclass, field
from itertools import compress, repeat
from typing import Any, NamedTuple

import polars as pl

from trainperf.mlperf.checks import (
    FileChecks,
)

__all__ = ["KEPT_KEYS", "MLLOG_TOKEN", "Memo"]

MLLOG_TOKEN = ":::MLLOG"

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

_META = '"metadata": '


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


_LINE_HEAD = MLLOG_TOKEN + _MLLOG_HEAD


@dataclass
class Memo:
    """Decoded events by template, shared by the files of one load (:func:`read_log`'s ``memo``).

    An event's decoding is a function of its text alone, and only events that fired no check are
    kept, so files of one submission (which log the same lines at other times) decode each once.
    """

    caches: tuple = field(default_factory=lambda: (json.loads, _DUMPS, {}, {}))
    head: dict = field(default_factory=dict)  # text after the time digits of mllog-written lines
    regex: dict = field(default_factory=dict)  # text with the time digits taken out


# An event as mllog writes it that needs no decoding (issue 36: 73 % of v5.1's MLLOG lines are
# tracked_stats whose values are never seen twice, each decoded only to be encoded again, and only
# the text is used: throughput.step_times decodes the few step timings from it). After the time
# digits: event_type, key, value and metadata in mllog's order and separators; strings of printable
# ASCII without escapes; value and metadata flat objects of strings, numbers (an integer of at most
# 300 digits: json.loads refuses one of more than 4,300), null, true, false. Such a text is valid
# JSON by construction and none of _event's checks can fire on it (a time out of range aside,
# which the caller checks).
_STR = r'"[ !#-\[\]-~]*"'
_NUM = r"-?(?:0|[1-9][0-9]{0,299})(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
_SCALAR = rf"(?:{_STR}|{_NUM}|null|true|false)"
_FLAT = rf"\{{(?:{_STR}: {_SCALAR}(?:, {_STR}: {_SCALAR})*)?\}}"
_FLAT_TAIL = re.compile(
    rf', "event_type": "([ !#-\[\]-~]*)", "key": "([ !#-\[\]-~]*)", '
    rf'"value": ({_FLAT}), "metadata": ({_FLAT})\}}[ \t\r]*'
)


#: Keys whose events are not kept in the :class:`Memo` when read by :func:`_flat_event`: their
#: values change every step (tracked_stats: 73 % of v5.1's lines), so a load would hold every
#: line's text to no use; their rank duplicates within a file are still read once.
UNSHARED_KEYS = frozenset({"tracked_stats"})


def _flat_event(tpl: str, t: float) -> DecodedEvent | None:
    """The event of an mllog-written line from its text after the time digits (``tpl``) and its
    time (in the plausible range: the caller checks), without ``json.loads``, when the text is in
    :data:`_FLAT_TAIL`'s form and its key is not one of :data:`KEPT_KEYS`; else None (decode it
    with :func:`_event`).

    The value and metadata texts are the line's own, which is json.dumps's text of the decoded
    object for every line mllog writes; a text written otherwise (``1.50``, a key twice) stays as
    written and decodes to the same object (json.loads keeps a repeated key's last value). The
    decoded ``value``, ``metadata`` and ``obj`` are None: only kept keys' are used. No check fires.
    """
    m = _FLAT_TAIL.fullmatch(tpl)
    if m is None:
        return None
    etype, key, vtext, mtext = m.groups()
    if key in KEPT_KEYS:
        return None
    return DecodedEvent(t, etype, key, vtext, None, mtext, None, None, True, None)


# :data:`_FLAT_TAIL` as a whole-text match in polars' regex engine (Rust's regex crate: the same
# grammar here, ASCII classes, no look-around or back-reference): a file's flat lines and their
# groups in one call, at about 1.0 us a line against 2.6 us for _flat_event's match, groups and
# tuple (measured on 50,000 v5.1 tracked_stats texts; on v5.1, v4.0 and the bundled logs, 1.87 M
# texts, the groups of the two engines are the same). Below _FLAT_BATCH_MIN texts the call's
# fixed cost (about 65 us) is more than Python's match (measured: 1.7 us a line in Python, 1.5 us
# in polars for 128 texts, 1.1 us for 2,048).
_FLAT_TAIL_FULL = "^(?:" + _FLAT_TAIL.pattern + ")$"
_FLAT_BATCH_MIN = 128
_FLAT_VALUE = '"value": {'  # in every text _FLAT_TAIL matches


def _flat_events(tpls: list[str]) -> tuple[list[int], list[tuple]]:
    """:func:`_flat_event` of the texts of ``tpls`` (the texts after the time digits) that give one:
    their positions in ``tpls`` and their events, as plain tuples in :class:`DecodedEvent`'s field
    order with ``time_ms`` None (the callers take the time from the line).

    :data:`_FLAT_TAIL`'s groups, from polars (:data:`_FLAT_TAIL_FULL`) for many texts.
    """
    n = len(tpls)
    may = list(map(operator.contains, tpls, repeat(_FLAT_VALUE)))
    if not all(may):  # only texts with an object value can match: the others are not matched at all
        at = list(compress(range(n), may))
        pos, events = _flat_events(list(compress(tpls, may))) if at else ([], [])
        return list(map(at.__getitem__, pos)), events
    if n < _FLAT_BATCH_MIN:
        groups = [
            m.groups() if m is not None else (None,) * 4 for m in map(_FLAT_TAIL.fullmatch, tpls)
        ]
        cols = list(zip(*groups, strict=True)) if groups else [(), (), (), ()]
    else:
        found = pl.Series(tpls, dtype=pl.String).str.extract_groups(_FLAT_TAIL_FULL)
        cols = [c.to_list() for c in found.struct.unnest().iter_columns()]
    etypes, keys, values, metas = cols
    ok = list(map(operator.is_not, values, repeat(None)))  # the value group is never empty
    if any(map(KEPT_KEYS.__contains__, keys)):  # decoded by _event instead
        ok = list(map(operator.and_, ok, map(operator.not_, map(KEPT_KEYS.__contains__, keys))))
    pos = list(compress(range(n), ok))
    if not pos:
        return [], []
    if len(pos) < n:
        etypes, keys, values, metas = (list(compress(c, ok)) for c in cols)
    events = list(
        zip(
            repeat(None),
            etypes,
            keys,
            values,
            repeat(None),
            metas,
            repeat(None),
            repeat(None),
            repeat(True),
            repeat(None),
        )
    )
    return pos, events
