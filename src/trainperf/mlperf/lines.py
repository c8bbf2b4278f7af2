"""The per-line Python paths over a file's ``:::MLLOG`` lines: every line as mllog writes it
(:func:`_simple_lines`, C-level passes) or any line (:func:`_per_line`); used by
:func:`trainperf.mlperf.parse.read_log`."""

from __future__ import annotations

import operator
import re
from itertools import compress, repeat

from trainperf.mlperf.checks import (
    FileChecks,
)
from trainperf.mlperf.events import (
    _HEAD_LEN,
    _LINE_HEAD,
    _MLLOG_HEAD,
    _TIME_RE,
    MLLOG_TOKEN,
    UNSHARED_KEYS,
    DecodedEvent,
    Memo,
    _event,
    _flat_event,
    _flat_events,
    _segments,
    _template_ok,
)

__all__: list[str] = []

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
    with no check. The templates are looked up all at once; of the lines of templates not seen
    before, the flat ones (:func:`~trainperf.mlperf.events._flat_events`, all at once: no decoding,
    no check) take their text's fields, and the others are decoded, in line order, by the same
    :func:`_event` and caching rule, so the events, the checks and their order are
    :func:`_per_line`'s (``tests/test_mlperf_parse_identical.py``, ``test_mlperf_parse_flat.py``).
    Issue 29: the per-line loop was a quarter of the loader on the bundled logs.

    Returns:
        :func:`_per_line`'s dict (its ``objects`` a plain tuple in :class:`DecodedEvent`'s field
        order where the event is flat), or None when a line does not qualify (the caller then runs
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
    miss = list(compress(range(n), map(operator.not_, evs)))  # not seen before (in line order)
    # the flat events (no decoding, no check: tracked_stats) of all of them at once (issue 36:
    # _flat_event line by line was a fifth of a round's record build); a flat event is a function
    # of its text alone, so taking it here rather than from an earlier line's cache changes nothing
    pos, flat = _flat_events(list(map(tpls.__getitem__, miss)))
    if flat:
        at = list(map(miss.__getitem__, pos))
        any(map(operator.setitem, repeat(evs), at, flat))  # evs[at[j]] = flat[j], in C
        shared = map(
            operator.not_, map(UNSHARED_KEYS.__contains__, map(operator.itemgetter(2), flat))
        )
        for i, ev in compress(zip(at, flat, strict=True), shared):  # the other files may reuse them
            if tpls[i] not in head:
                head[tpls[i]] = DecodedEvent._make(ev)
        miss = list(compress(miss, map(operator.not_, map(evs.__getitem__, miss))))
    for i in miss:  # the others, in line order
        ev = head.get(tpls[i])
        if ev is None:  # not cached by an earlier line of this loop either
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
    # by position: a flat event is a plain tuple in DecodedEvent's field order
    field = operator.itemgetter
    out: dict[str, list] = {
        "line": line,
        "prefix": prefixes,
        "time_ms": times,
        "event_type": list(map(field(1), evs)),
        "key": list(map(field(2), evs)),
        "value": list(map(field(3), evs)),
        "value_num": list(map(field(4), evs)),
        "metadata": list(map(field(5), evs)),
    }
    out["objects"], out["repeated"] = evs, repeated  # DecodedEvent, or a tuple where flat
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
    local: dict[str, DecodedEvent] = {}  # flat events of UNSHARED_KEYS, for this file only
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
                if ev is None and cache is head_templates:
                    ev = local.get(tpl)
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
                if tpl is not None and cache is head_templates:
                    t = float(seg[s0:s1])
                    if lo <= t <= hi:
                        ev = _flat_event(tpl, t)
                if ev is not None:
                    (local if ev.key in UNSHARED_KEYS else cache)[tpl] = ev
                    add((lineno, prefix, t, ev))
                    prefix = ""
                    continue
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
