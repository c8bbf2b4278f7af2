"""Property tests of the MLPerf reader (the suite's small fuzz; tests/fuzz/fuzz_mlperf.py is the big one).

1. Well-formed events of any content (keys, values and metadata with quotes, braces, ``"metadata": ``
   and ``"time_ms": `` inside strings, unicode, nesting, rank duplicates) parse exactly as the old
   implementation (mlperf-logging's grammar, one decode per event, no caches) parsed them. (A
   string holding the token ``:::MLLOG`` itself splits the line in both, by the grammar.)
2. Damaged bytes never raise: every file gets a status, no check is an internal error.
"""

from __future__ import annotations

import json
import warnings

import mlperf_reference as old
import polars as pl
from helpers import gpt3_run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from trainperf import mlperf

TRICKY = st.sampled_from(
    ['"metadata": ', '"time_ms": 5, ', "}", "{", "[", '\\"', ", ", "\r", "é", "\u2028"]
)
TEXT = st.one_of(st.text(max_size=12), TRICKY, st.lists(TRICKY, max_size=3).map("".join)).filter(
    lambda s: ":::MLLOG" not in s
)
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(TEXT, children, max_size=3),
    max_leaves=8,
)
EVENT = st.fixed_dictionaries(
    {"key": TEXT, "value": JSON, "metadata": st.dictionaries(TEXT, JSON, max_size=3)},
    optional={"event_type": st.sampled_from(["POINT_IN_TIME", "INTERVAL_START", "INTERVAL_END"])},
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(events=st.lists(st.tuples(EVENT, st.integers(1, 4), st.booleans()), min_size=1, max_size=12))
def test_well_formed_events_parse_as_the_reference(tmp_path_factory, events):
    t, lines = 1_700_000_000_000, []
    for ev, ranks, namespace_first in events:
        for _ in range(ranks):  # rank duplicates: the same text with another time
            t += 7
            body = {"namespace": ""} if namespace_first else {}
            body.update({"time_ms": t, **ev})
            lines.append(":::MLLOG " + json.dumps(body))
    p = tmp_path_factory.mktemp("ev") / "result_0.txt"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing here is damaged: no warning
        new = mlperf.parse_log(p)
    assert_frame_equal(new, old.parse_log(p))


def _mutate(data: bytes, flips: list[tuple[int, int]], cut: int | None) -> bytes:
    b = bytearray(data)
    for pos, byte in flips:
        b[pos % len(b)] = byte
    return bytes(b[:cut] if cut is not None else b)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=12),
    cut=st.none() | st.integers(0, 3000),
    extra=st.lists(
        st.sampled_from(["NaN", "1e400", '"x"', "[]", "-1", "0", str(2**64)]), max_size=3
    ),
)
def test_damaged_bytes_never_raise(tmp_path_factory, flips, cut, extra):
    lines = gpt3_run(minutes=7.7)
    for i, token in enumerate(extra):
        lines[(3 * i + 2) % len(lines)] = lines[(3 * i + 2) % len(lines)].replace(
            '"time_ms": ', f'"time_ms": {token}, "_t": ', 1
        )
    root = tmp_path_factory.mktemp("dmg")
    p = root / "Acme" / "results" / "sysZ" / "gpt3" / "result_0.txt"
    p.parent.mkdir(parents=True)
    p.write_bytes(_mutate(("\n".join(lines) + "\n").encode(), flips, cut))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any other warning is a bug
        warnings.simplefilter("ignore", mlperf.MLPerfLogWarning)
        res = mlperf.load_results(root)
        mlperf.throughput(res)
        mlperf.eval_curve(res)
        mlperf.hyperparameters(res)
    r = res.runs.row(0, named=True)
    assert r["status"] in mlperf.RUN_STATUSES
    assert "internal_error" not in res.quality["check"].to_list()
    if r["time_to_train_min"] is not None:
        assert 0 < r["time_to_train_min"] < 1e6
        if r["status"] == "damaged":  # a time kept beside an outcome that is not known: a flag
            assert res.quality.filter(pl.col("action") == "flagged").height > 0
        else:
            assert r["status"] in ("success", "aborted")
    assert res.quality.filter(pl.col("source") != str(p)).height == 0
