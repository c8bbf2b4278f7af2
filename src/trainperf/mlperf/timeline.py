"""Two checks of MLPerf result files beyond one line: a clock that steps back inside a log, and a
result file that is a byte copy of another of its folder.

* ``clock_step_back`` (:func:`clock_stepped_back`): MLLOG lines are written in time order (each
  ``time_ms`` is the wall clock when the line was logged, ``mlperf_logging/mllog/mllog.py``). A time
  that falls more than ``duplicate_tolerance_ms`` (60 s, ``mlperf_limits.csv``: 4x the largest
  rank skew of the bundled Eos logs) below the previous event's, in file order, between the run's
  start and its stop, is the clock stepped back (NTP correcting a fast clock): the run's
  ``run_stop - run_start`` is then shorter than the time it trained by an unknown amount. The run is
  flagged, status ``damaged``, no time to train.
  In a log one rank writes (run_start and run_stop once) the tolerance is 1 s; a forward jump far
  beyond the run's own cadence is flagged ``clock_jump`` (:func:`clock_stepped_back`).
  Checkpoints evaluated after the clock stopped are not a step back (MLPerf Training rules,
  ``training_rules.adoc`` "Quality": an implementation may "evaluate [timestamped checkpoints]
  after the clock has been stopped, and update the clock stopped time to the timestamp of the
  first passing checkpoint"; Stable Diffusion: "evaluation is done offline, the time is not
  counted"): such a log ends with its ``eval_*`` events, logged after training with later times,
  then ``run_stop`` with the (earlier) checkpoint time (:func:`offline_eval_tail`). There the
  step check covers run_start up to the last training event, and run_stop's time must not be
  later than that event's (plus the tolerance). A step back from an ``eval_*`` event to a
  training event is not one either (the evaluation logged its own time). What stays unseen: a
  step back between the last training event and a run_stop that follows evaluations.
* ``duplicate_file`` (:func:`duplicate_files`, :func:`mark_duplicate`): two ``result_*.txt`` of one benchmark folder
  with the same bytes (CRLF read as LF) are one run written twice, not two runs. The first in name order is the run;
  each copy gets status ``duplicate`` and a flag naming the file it copies, and scoring leaves it
  out (:func:`trainperf.mlperf.scores.score_runs`), so the runs the rules require are counted over
  distinct runs.
"""

from __future__ import annotations

import hashlib
import heapq
import operator
from itertools import accumulate
from pathlib import Path

import polars as pl

from trainperf.mlperf.checks import FileChecks, display_path, limits
from trainperf.mlperf.readonce import open_bytes

__all__ = [
    "clock_stepped_back",
    "duplicate_files",
    "mark_duplicate",
    "offline_eval_tail",
    "unknown_stop_status",
]

#: The run_stop statuses mlperf-logging writes (``mlperf_logging/mllog/constants.py``: ``SUCCESS``,
#: ``ABORTED``).
STOP_STATUSES = frozenset({"success", "aborted"})


def unknown_stop_status(meta: dict, checks: FileChecks, line: int | None) -> bool:
    """Whether run_stop's ``metadata.status`` is not one of :data:`STOP_STATUSES` after decoding
    (``"succ\ufffdss"`` from bytes that are not UTF-8, a typo, a number): the run's outcome is
    unknown, neither a success nor a failure the log reports. Adds an ``outcome_unknown`` row
    (``flagged``) naming the line; the caller makes the run ``damaged``.
    """
    status = meta.get("status")
    if isinstance(status, str) and status in STOP_STATUSES:
        return False
    checks.add(
        "outcome_unknown",
        "flagged",
        f"run_stop status {status!r} is not one mlperf-logging writes (success, aborted): the "
        "run's outcome is unknown; status damaged",
        line,
    )
    return True


#: Steps back a log with one stream (run_start and run_stop logged once: one rank writes it) may show
#: without being a clock step, ms: product choice, one process writes its lines in time order; 1 s
#: leaves room for threads of that process flushing out of order. A log written by several ranks
#: (run_start or run_stop logged more than once) keeps ``duplicate_tolerance_ms`` (rank skew).
SINGLE_STREAM_TOLERANCE_MS = 1000.0
#: A forward jump is a gap between consecutive events more than this many times the next largest gap
#: of the run (product choice: the eval and block cadence of a run repeats, so its largest gaps come
#: in sets; one gap 10x all others is no cadence) ...
JUMP_FACTOR = 10.0
#: ... and at least this long, ms (product choice: NTP steps and time-zone slips are minutes to hours;
#: a one-off slow block of seconds is not a clock step) ...
JUMP_MIN_MS = 300_000.0
#: ... with at least this many gaps between run_start and run_stop to judge the cadence by.
JUMP_MIN_GAPS = 4


_VALIDATION_BLOCK = '"validation_step"'  # block_start/block_stop value of an evaluation's steps


def _evaluation(key: str, value) -> bool:
    """Whether an event belongs to an evaluation: an ``eval_*`` key, or a block of validation
    steps (Intel-HabanaLabs' v3.1 stable_diffusion logs)."""
    return key.startswith("eval_") or (
        value == _VALIDATION_BLOCK and key in ("block_start", "block_stop")
    )


def offline_eval_tail(keys, values, stop: int, start: int = 0) -> int | None:
    """The last training event before an evaluation logged after training, ending at run_stop.

    The tail is the events just before row ``stop`` (file order) that belong to an evaluation
    (``eval_*`` keys, blocks of ``"validation_step"``) or are rank copies of run_stop; it is an
    offline evaluation when it holds an ``eval_*`` event and the event before it is training
    progress after row ``start`` (not run_start itself: a log with no training event between start
    and stop does not show that its evaluations came after training). Its times are the
    evaluation's own or its checkpoints' (MLPerf Training rules, "Quality").

    Args:
        keys: event keys in file order (a list or a String Series).
        values: the events' values as JSON text, same order.
        stop: row of the run_stop.
        start: row of the run's run_start (the tail's training event must come after it).

    Returns:
        The row of the last training event, or None when there is no offline tail.
    """
    j, evals = stop - 1, False
    while j > start:
        k = keys[j]
        if k.startswith("eval_"):
            evals = True
        elif k != "run_stop" and not _evaluation(k, values[j]):
            break
        j -= 1
    if not evals or j <= start or keys[j] == "run_start":
        return None
    return j


def clock_stepped_back(times: pl.Series, lines: pl.Series, first: int, last: int,
                       checks: FileChecks, multi_rank: bool = True, keys: pl.Series | None = None,
                       values: pl.Series | None = None) -> bool:  # fmt: skip
    """Whether the clock stepped back, or jumped forward, between event rows ``first`` and ``last``
    (file order).

    Back: a time more than the tolerance below the previous event's (``duplicate_tolerance_ms``,
    60 s, when ``multi_rank``: rank skew; else :data:`SINGLE_STREAM_TOLERANCE_MS`), check
    ``clock_step_back``.

    Forward (check ``clock_jump``): a gap between consecutive events that is more than
    :data:`JUMP_FACTOR` times the next largest gap of the run, longer than all the other gaps together
    (more than half of ``run_stop - run_start``) and at least :data:`JUMP_MIN_MS`, judged where the run
    has at least :data:`JUMP_MIN_GAPS` gaps. The threshold rests on the run's own gaps: a long
    evaluation recurs at every eval, so it is never alone; initialisation (however long) is before
    run_start, outside the window.

    Where ``keys`` and ``values`` are given: when the run ends with an evaluation logged after
    training (:func:`offline_eval_tail`), the steps are checked from ``first`` to the last
    training event only, provided run_stop's time is not after that event's (plus the
    tolerance); and a training event is compared with the previous training event, not with an
    ``eval_*`` event before it (an evaluation may log its own later time, training resuming with
    the training clock: xFusion's v3.1 bert logs). An evaluation event is compared with the event
    before it, whatever it is.

    Args:
        times: ``time_ms`` of every event (Float64, null where excluded).
        lines: 1-based line of every event.
        first, last: the rows of the run's start and stop.
        checks: the file's checks; a ``clock_step_back`` or ``clock_jump`` row (``flagged``) is
            added naming the first line concerned.
        multi_rank: whether several ranks write the log (their lines interleave with skew).
        keys: event keys (String); values: event values as JSON text (String).

    Returns:
        True when a step back was found (the time to train is not usable); a forward jump is
        flagged (``clock_jump``) but returns False.
    """
    if last <= first:
        return False
    tol = limits()["duplicate_tolerance_ms"] if multi_rank else SINGLE_STREAM_TOLERANCE_MS
    is_eval = None
    if keys is not None and values is not None:
        train_end = offline_eval_tail(keys, values, last, first)
        if train_end is not None and times[train_end] is not None:
            if times[last] <= times[train_end] + tol:
                last = train_end
    if last - first < _PY_WINDOW:
        with_keys = keys if values is not None else None  # the rule's evaluations need both
        return _stepped_back_py(times, lines, first, last, checks, tol, with_keys)
    if keys is not None and values is not None:
        is_eval = keys.slice(first, last - first + 1).str.starts_with("eval_")
    t = times.slice(first, last - first + 1)
    prev = t.forward_fill().shift(1)
    if is_eval is not None and is_eval.any():
        train = pl.select(pl.when(~is_eval).then(t)).to_series()
        prev_train = train.forward_fill().shift(1).fill_null(prev)
        prev = pl.select(pl.when(is_eval).then(prev).otherwise(prev_train)).to_series()
    step = t - prev
    back = (step < -tol).fill_null(False)
    n = int(back.sum())
    if n == 0:
        # forward: the gaps between consecutive events in file order (an evaluation's own later
        # time counts here as any event's: a jump is a gap, whoever logged it)
        # flagged only: on MLCommons's own v3.1-v5.1 logs the rule also fires on runs the
        # summarizer scores (BERT and DLRM runs with one long gap), so the time is kept beside the flag
        _jumped_forward(t - t.forward_fill().shift(1), lines, first, checks)
        return False
    i = int(back.arg_max())
    size_min = -float(step[i]) / 60_000.0
    checks.add(
        "clock_step_back",
        "flagged",
        f"time goes back {size_min:.2f} min from the previous event (the clock was stepped back, "
        "as NTP does) between run_start and run_stop: the time to train is not usable; "
        "status damaged",
        int(lines[first + i]),
        n=n,
    )
    return True


# Below this many events a run's window is checked in Python lists: a polars expression costs a
# fixed ~0.1 ms, and the dozen of the frame version were 12 % of v5.1's record build (issue 36;
# runs of ~440 events). The lists give the same floats: a difference of two times is exact IEEE
# arithmetic either way.
_PY_WINDOW = 20_000


def _stepped_back_py(times: pl.Series, lines: pl.Series, first: int, last: int,
                     checks: FileChecks, tol: float, keys: pl.Series | None) -> bool:  # fmt: skip
    """:func:`clock_stepped_back`'s steps in Python lists (same rule, same checks); ``keys``
    None: every event compared with the one before it."""
    t = times.slice(first, last - first + 1).to_list()
    if len(t) > 1 and None not in t:
        # no time more than tol below the largest before it: no step back against any earlier
        # event (rounding is monotonic, so x - p >= x - max >= -tol for every earlier p), whichever
        # event the rule below compares with; then only the forward gaps, in C-level passes
        # (issue 36: the loop below was 5 % of v5.1's record build)
        if min(map(operator.sub, t[1:], accumulate(t[:-1], max))) >= -tol:
            steps = [None, *map(operator.sub, t[1:], t[:-1])]
            return _no_step_back(steps, lines, first, checks)
    is_eval = None  # only here: a polars expression's fixed cost, as the window's first pass
    if keys is not None:
        is_eval = keys.slice(first, last - first + 1).str.starts_with("eval_")
    ev = is_eval.to_list() if is_eval is not None and is_eval.any() else None
    prev_any = prev_train = None  # the last time before this event: any event's, a training one's
    steps: list[float | None] = []  # against the previous event (the clock_jump gaps)
    back: list[int] = []  # positions of a step back
    first_back: float | None = None
    for i, x in enumerate(t):
        if ev is None or ev[i]:
            p = prev_any
        else:  # a training event: against the previous training event, else any event
            p = prev_train if prev_train is not None else prev_any
        if x is not None:
            if p is not None and x - p < -tol:
                if not back:
                    first_back = x - p
                back.append(i)
            steps.append(x - prev_any if prev_any is not None else None)
            prev_any = x
            if ev is not None and not ev[i]:
                prev_train = x
        else:
            steps.append(None)
    if not back:
        return _no_step_back(steps, lines, first, checks)
    checks.add(
        "clock_step_back",
        "flagged",
        f"time goes back {-first_back / 60_000.0:.2f} min from the previous event (the clock was "
        "stepped back, as NTP does) between run_start and run_stop: the time to train is not "
        "usable; status damaged",
        int(lines[first + back[0]]),
        n=len(back),
    )
    return True


def _no_step_back(steps: list[float | None], lines: pl.Series, first: int,
                  checks: FileChecks) -> bool:  # fmt: skip
    """:func:`_stepped_back_py` of a window with no step back: the ``clock_jump`` check of its
    gaps ``steps`` (ms, against the previous event; None where no time), if the largest stands
    out; returns False."""
    gaps = [g for g in steps if g is not None and g > 0]
    if len(gaps) < JUMP_MIN_GAPS:
        return False
    g1, g2 = heapq.nlargest(2, gaps)
    if g1 >= JUMP_MIN_MS and g1 > JUMP_FACTOR * g2:  # the sum of the gaps as polars adds them
        _jumped_forward(pl.Series(steps, dtype=pl.Float64), lines, first, checks)
    return False


def _jumped_forward(step: pl.Series, lines: pl.Series, first: int, checks: FileChecks) -> bool:
    """The ``clock_jump`` check of :func:`clock_stepped_back` on the gaps ``step`` (ms)."""
    gaps = step.filter(step > 0)
    if gaps.len() < JUMP_MIN_GAPS:
        return False
    top = gaps.sort(descending=True)
    g1, g2 = float(top[0]), float(top[1])
    rest = float(gaps.sum()) - g1
    if not (g1 >= JUMP_MIN_MS and g1 > JUMP_FACTOR * g2 and g1 > rest):
        return False
    i = int((step == g1).fill_null(False).arg_max())
    checks.add(
        "clock_jump",
        "flagged",
        f"time jumps forward {g1 / 60_000.0:.2f} min between two consecutive events, more than "
        f"{JUMP_FACTOR:g}x the next largest gap of the run ({g2 / 1000.0:.1f} s) and longer than all "
        f"its other gaps together ({rest / 60_000.0:.2f} min): the clock may have been stepped "
        "forward, and the time to train may be too long by that gap; kept, flagged",
        int(lines[first + i]),
    )
    return True


def _digest(path: Path) -> str | None:
    """SHA-256 of a file's bytes with CRLF line ends read as LF (the reader treats them alike, so a
    CRLF copy of a result file is the same run); None when it cannot be read."""
    h = hashlib.sha256()
    carry = b""
    try:
        with open_bytes(path) as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                chunk = carry + chunk
                # a CR at a chunk's end may be the first half of a CRLF: keep it for the next chunk
                carry = b"\r" if chunk.endswith(b"\r") else b""
                if carry:
                    chunk = chunk[:-1]
                h.update(chunk.replace(b"\r\n", b"\n") if b"\r" in chunk else chunk)
    except OSError:
        return None
    h.update(carry)
    return h.hexdigest()


def _lf_length(path: Path) -> int | None:
    """The length of a file's bytes with CRLF line ends read as LF; None when it cannot be read."""
    n, carry = 0, b""
    try:
        with open_bytes(path) as f:  # in pieces: memory stays flat on a large log
            for chunk in iter(lambda: f.read(1 << 20), b""):
                chunk = carry + chunk
                carry = b"\r" if chunk.endswith(b"\r") else b""  # maybe half of a CRLF
                if carry:
                    chunk = chunk[:-1]
                if b"\r" in chunk:  # memchr: far faster than counting CRLF in a file of none
                    n -= chunk.count(b"\r\n")
                n += len(chunk)
    except OSError:
        return None
    return n + len(carry)


def duplicate_files(files: list[Path]) -> dict[int, Path]:
    """Result files that are copies of an earlier file of the same folder (the same bytes once CRLF
    line ends are read as LF, as the reader reads them).

    Files of one folder are compared by SHA-256 of their LF-normalised bytes (:func:`_digest`) where
    the folder has two or more non-empty files (sizes differ between a file and its CRLF copy, so size
    cannot pre-filter); an unreadable file is never a copy: its own read reports it.

    Args:
        files: the result files, in load order.

    Returns:
        index of each copy in ``files`` -> the earlier file it copies.
    """
    by_dir: dict[Path, list[int]] = {}
    for i, f in enumerate(files):
        try:
            size = f.stat().st_size
        except OSError:
            continue
        if size:
            by_dir.setdefault(f.parent, []).append(i)
    out: dict[int, Path] = {}
    for group in by_dir.values():
        if len(group) < 2:
            continue
        # a copy has its original's length once CRLF is read as LF: only files sharing that
        # length with another are hashed (issue 36: hashing every file was 6 % of v5.1's build)
        lengths = {i: _lf_length(files[i]) for i in group}
        seen = [n for n in lengths.values() if n is not None]
        first_of: dict[str, int] = {}
        for i in group:
            if lengths[i] is None or seen.count(lengths[i]) < 2:
                continue
            d = _digest(files[i])
            if d is None:
                continue
            if d in first_of:
                out[i] = files[first_of[d]]
            else:
                first_of[d] = i
    return out


def mark_duplicate(row: dict, checks: FileChecks, original: Path) -> None:
    """Make ``row`` the run row of a byte copy of ``original``: status ``duplicate``, no time to
    train, a ``duplicate_file`` check (``flagged``) naming the file it copies."""
    row["status"] = "duplicate"
    row["time_to_train_min"] = None
    checks.add(
        "duplicate_file",
        "flagged",
        f"a byte copy of {display_path(original.name)}: the same run written twice, not a "
        "distinct run; status duplicate, left out of the score",
        1,
    )
