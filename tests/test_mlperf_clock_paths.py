"""``clock_stepped_back`` of a run of fewer than ``_PY_WINDOW`` events runs in Python lists (issue
36: the polars expressions' fixed cost was 12 % of a round's record build). The rule is the one of
the frame version (its docstring, ``tests/test_mlperf_damage4.py`` and ``_damage5.py`` test the rule
itself): on windows with steps back, forward jumps, excluded (null) times and evaluations logging
their own later time, both give the same answer and the same checks (detail, lines, count).
"""

from __future__ import annotations

import dataclasses
import random

import polars as pl

from trainperf.mlperf import timeline
from trainperf.mlperf.checks import FileChecks


def _run(times, keys, multi_rank, window):
    checks = FileChecks("result_0.txt")
    lines = pl.Series("line", range(1, len(times) + 1), pl.Int64)
    t = pl.Series("time_ms", times, pl.Float64)
    k = pl.Series("key", keys, pl.String)
    v = pl.Series("value", ["null"] * len(times), pl.String)
    old = timeline._PY_WINDOW
    timeline._PY_WINDOW = window
    try:
        got = timeline.clock_stepped_back(t, lines, 0, len(times) - 1, checks, multi_rank, k, v)
    finally:
        timeline._PY_WINDOW = old
    return got, [(c, dataclasses.asdict(f)) for c, f in checks.found.items()]


def _window(rng: random.Random, n: int):
    t0, times, keys = 1.7e12, [], []
    t = t0
    for _ in range(n):
        r = rng.random()
        if r < 0.05:
            t -= rng.choice([70_000.0, 2_000.0, 500.0])  # a step back (beyond or within tolerance)
        elif r < 0.08:
            t += rng.choice([400_000.0, 5_000_000.0])  # a long gap
        else:
            t += rng.choice([0.0, 10.0, 1000.0, 1500.5])
        key = "eval_accuracy" if rng.random() < 0.1 else "block_start"
        times.append(None if rng.random() < 0.04 else t)
        keys.append(key)
    keys[0], keys[-1] = "run_start", "run_stop"
    return times, keys


def test_python_lists_and_polars_give_the_same_checks():
    fired = set()
    for seed in range(150):
        rng = random.Random(seed)
        times, keys = _window(rng, rng.choice([3, 6, 20, 200]))
        for multi_rank in (True, False):
            py = _run(times, keys, multi_rank, window=10**9)
            frame = _run(times, keys, multi_rank, window=0)
            assert py == frame, seed
            fired.update(c for c, _ in py[1])
    assert fired == {"clock_step_back", "clock_jump"}  # the windows reach both checks


def test_both_paths_fire_on_a_hand_made_run():
    # 100 events 1 s apart, then the clock stepped back 2 min (120 s > the 60 s rank tolerance)
    # at row 60: one clock_step_back naming line 61; a forward jump alone: clock_jump
    back = [1.7e12 + 1000.0 * i for i in range(60)] + [
        1.7e12 + 1000.0 * i - 120_000 for i in range(60, 100)
    ]
    jump = [1.7e12 + 1000.0 * i for i in range(50)] + [
        1.7e12 + 1000.0 * i + 3.6e6 for i in range(50, 100)
    ]
    keys = ["run_start"] + ["block_start"] * 98 + ["run_stop"]
    for window in (10**9, 0):
        got, found = _run(back, keys, True, window)
        assert got is True and found[0][0] == "clock_step_back"
        assert found[0][1]["lines"] == [61] and found[0][1]["n"] == 1
        # from 59 s (row 59) to 60 - 120 = -60 s: 119 s back, 1.98 min
        assert "1.98 min" in found[0][1]["detail"]
        got, found = _run(jump, keys, True, window)
        assert got is False and [c for c, _ in found] == ["clock_jump"]
        assert found[0][1]["lines"] == [51]


def test_a_window_without_a_time_below_its_running_maximum_skips_the_loop_alike(monkeypatch):
    # issue 36: a window with every time set and none more than the tolerance below the largest
    # before it takes C-level passes, not the per-event loop; on windows of no null time (steps
    # back within and beyond the tolerance, long gaps, evaluations) the answer and the checks are
    # the loop's (forced by a running maximum that never holds) and the polars version's
    fast = 0
    for seed in range(150):
        rng = random.Random(1000 + seed)
        times, keys = _window(rng, rng.choice([3, 6, 20, 200]))
        times = [t if t is not None else times[i - 1] or 1.7e12 for i, t in enumerate(times)]
        for multi_rank in (True, False):
            got = _run(times, keys, multi_rank, window=10**9)
            with monkeypatch.context() as m:
                m.setattr(timeline, "accumulate", lambda ts, f: [float("inf")] * len(ts))
                loop = _run(times, keys, multi_rank, window=10**9)
            assert got == loop == _run(times, keys, multi_rank, window=0), seed
            tol = 60_000.0 if multi_rank else timeline.SINGLE_STREAM_TOLERANCE_MS
            # the condition on the whole window (then on any window the run's end cuts from it)
            fast += all(times[i] >= max(times[:i]) - tol for i in range(1, len(times)))
    assert fast > 50  # the C-level passes were taken on many windows, the loop on the others
