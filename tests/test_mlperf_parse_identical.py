"""Identical outputs (issue 29): the polars line parser against the one-pass Python parser it replaced.

The old ``read_log`` (``tests/mlperf_parse_reference.py``, verbatim) is the reference: on every bundled
log and on damaged lines of every kind the checks know, the events, the kept objects, the system
JSON and the checks (name, action, first detail, lines, count, in the order they fired) must be the
same. Small pieces (``_PIECE_BYTES``) make the streamed read cut the file between lines everywhere.
"""

from __future__ import annotations

import dataclasses
import json

import mlperf_parse_reference as old
import pytest
from helpers import MLPERF
from polars.testing import assert_frame_equal

from trainperf import mlperf
from trainperf.mlperf import parse, scan

HEAD = ':::MLLOG {"namespace": "", "time_ms": '


def line(t, key="k", value=1, meta='{"file": "a.py", "lineno": 1}', event="POINT_IN_TIME"):
    return f'{HEAD}{t}, "event_type": "{event}", "key": "{key}", "value": {value}, "metadata": {meta}}}'


T0 = 1727000000000
DAMAGED = [
    line(T0, "run_start", "null", '{"file": "a.py", "lineno": 1}', "INTERVAL_START"),
    line(T0, "run_start", "null", '{"file": "a.py", "lineno": 1}', "INTERVAL_START"),  # rank repeat
    line(T0 + 1, "seed", 42),
    line(T0 + 1, "seed", 42),  # an exact repeat of a kept key
    line(T0 + 2, "k", '"text"'),
    line(5, "k", 2),  # out of range, first line of its template: not cached
    line(T0 + 3, "k", 2),  # the same template, a good time: cached from here
    line(T0 + 4, "k", 2),
    line(7, "k", 2),  # out of range on a cached template
    line("007", "k", 3),  # leading zeros: the regex path
    line("12345678901234567890", "k", 3),  # 20 digits
    line(T0 + 5, "k", 1e400),
    line(T0 + 6, "k", 10**400),
    line(T0 + 7, "k", "NaN"),
    line(T0 + 8, "k", 1, "[1, 2]"),  # metadata not an object
    line(T0 + 9, "k", 1, '{"a": 1}', "1"),  # event type not a string: json decodes "1" as str
    HEAD + str(T0 + 10) + ', "event_type": 5, "key": "k", "value": 1, "metadata": {}}',
    HEAD + str(T0 + 11) + ', "key": "k", "value": 1}',  # missing metadata
    HEAD + str(T0 + 12) + ', "key": 3, "value": 1, "metadata": {}}',  # key not a string
    HEAD + str(T0 + 13) + ', "key": "k", "value": [1, ',  # corrupted JSON
    ":::MLLOG [1, 2]",
    "0: " + line(T0 + 14, "k", 4),  # rank prefix
    "0: " + line(T0 + 14, "k", 4),  # its repeat
    line(T0 + 15, "a", 1) + " " + line(T0 + 15, "b", 2),  # two events in one line
    "junk\r" + line(T0 + 16, "k", 5) + "\r",  # carriage returns
    line(T0 + 17, "k", 5) + "\r",
    ':::MLLOG {"time_ms": '
    + str(T0 + 18)
    + ', "namespace": "", "key": "k", "value": 1, "metadata": {}}',
    ':::SYSJSON {"number_of_nodes": 2}',
    line(T0 + 19, "run_stop", "null", '{"status": "success"}', "INTERVAL_END"),
    line(T0 + 20, "eval_accuracy", 0.5, '{"epoch_num": 3}'),
    line(T0 + 20, "eval_accuracy", 0.5, '{"epoch_num": 3}'),
    line(T0 + 3 * 3600 * 1000, "k", 6),  # far out of order (with enough neighbours)
    *[line(T0 + 30 + i, "step", i, f'{{"step": {i}}}') for i in range(20)],
    line(T0 + 2, "k", '"text"'),  # an exact repeat far from its first
    "",
    "plain text",
]


def compare(path, data=None):
    new, ref = parse.read_log(path, data), old.read_log(path, data)
    assert_frame_equal(new.frame(), ref.frame(), check_exact=True)
    assert new.kept == ref.kept
    assert new.sysjson == ref.sysjson
    assert [(k, dataclasses.asdict(f)) for k, f in new.checks.found.items()] == [
        (k, dataclasses.asdict(f)) for k, f in ref.checks.found.items()
    ]
    return new


# both paths: the per-line path of small files, and the native one (every file, when the size
# below which a file is small is 0)
PATHS = pytest.mark.parametrize("native", [parse._NATIVE_BYTES, 0], ids=["by-size", "native"])


@PATHS
def test_every_bundled_log_parses_identically(monkeypatch, native):
    monkeypatch.setattr(parse, "_NATIVE_BYTES", native)
    files = mlperf.find_result_files(MLPERF)
    assert len(files) > 30
    for f in files:
        compare(f)


@PATHS
@pytest.mark.parametrize("piece", [scan._PIECE_BYTES, 97, 1])
def test_damaged_lines_parse_identically(tmp_path, monkeypatch, piece, native):
    monkeypatch.setattr(scan, "_PIECE_BYTES", piece)
    monkeypatch.setattr(parse, "_NATIVE_BYTES", native)
    f = tmp_path / "result_0.txt"
    f.write_text("\n".join(DAMAGED) + "\n", encoding="utf-8")
    got = compare(f)
    fired = set(got.checks.found)
    # the cases above reach every line check
    assert {"corrupted_json", "missing_field", "bad_field_type", "time_out_of_range",
            "value_out_of_range", "duplicate_line", "time_out_of_order"} <= fired  # fmt: skip
    assert got.n_events > 40


@PATHS
@pytest.mark.parametrize("piece", [scan._PIECE_BYTES, 50, 1])
def test_invalid_utf8_across_pieces_is_identical(tmp_path, monkeypatch, piece, native):
    monkeypatch.setattr(scan, "_PIECE_BYTES", piece)
    monkeypatch.setattr(parse, "_NATIVE_BYTES", native)
    text = "\n".join(DAMAGED[:8]).encode()
    data = (
        text + "\n\ufffd literal\n".encode() + line(T0 + 40, "k", '"\u00e9"').encode()[:-3]
        + b"\xff\xfe" + b'"}\n' + line(T0 + 41, "k", '"x"').encode() + b"\xe2\x82\n" + text
    )  # fmt: skip
    f = tmp_path / "result_0.txt"
    f.write_bytes(data)
    got = compare(f)
    assert "invalid_utf8" in got.checks.found
    compare(f, data)


@PATHS
def test_empty_and_tokenless_files_are_identical(tmp_path, monkeypatch, native):
    monkeypatch.setattr(parse, "_NATIVE_BYTES", native)
    for i, text in enumerate(["", "\n", "no token here\n:::SYSJSON {}", ":::MLLOG"]):
        f = tmp_path / f"result_{i}.txt"
        f.write_text(text)
        compare(f)


# Damage that leaves every line as mllog writes it (the token and head at the start, one event,
# plain time digits in range): such a small file takes parse._simple_lines, not the per-line loop
SIMPLE_DAMAGED = [
    line(T0, "run_start", "null", '{"file": "a.py", "lineno": 1}', "INTERVAL_START"),
    line(T0, "run_start", "null", '{"file": "a.py", "lineno": 1}', "INTERVAL_START"),  # rank repeat
    line(T0 + 1, "seed", 42),
    line(T0 + 2, "k", 1, "[1, 2]"),  # metadata not an object: not cached, decoded again below
    line(T0 + 3, "k", 1, "[1, 2]"),
    line(T0 + 4, "k", 1e400),  # Python writes inf: not JSON, corrupted
    line(T0 + 5, "k", 10**400),  # beyond the float range
    HEAD + str(T0 + 6) + ', "event_type": 5, "key": "k", "value": 1, "metadata": {}}',
    HEAD + str(T0 + 7) + ', "key": "k", "value": 1}',  # missing metadata
    HEAD + str(T0 + 8) + ', "key": 3, "value": 1, "metadata": {}}',  # key not a string
    HEAD + str(T0 + 9) + ', "key": "k", "value": [1, ',  # corrupted JSON
    HEAD + str(T0 + 10) + ', "time_ms": 5, "key": "k", "value": 1, "metadata": {}}',  # 2nd time_ms
    line(T0 + 11, "k", '"text"'),
    line(T0 + 12, "k", '"text"'),  # a cached template, another time
    line(T0 + 3 * 3600 * 1000, "k", 6),  # far out of order (with enough neighbours)
    *[line(T0 + 30 + i, "step", i, f'{{"step": {i}}}') for i in range(20)],
    line(T0 + 11, "k", '"text"'),  # an exact repeat far from its first
    line(T0 + 60, "run_stop", "null", '{"status": "success"}', "INTERVAL_END"),
    "plain text",
]


def test_simple_damaged_lines_take_the_vectorised_path_identically(tmp_path, monkeypatch):
    calls = []
    per_line = parse._per_line
    monkeypatch.setattr(parse, "_per_line", lambda *a: calls.append(1) or per_line(*a))
    f = tmp_path / "result_0.txt"
    f.write_text("\n".join(SIMPLE_DAMAGED) + "\n", encoding="utf-8")
    got = compare(f)
    assert calls == []  # parse._simple_lines took every line
    # 37 MLLOG lines (the last line is plain text), 4 skipped: line 6 (inf) and 11 (cut off) are
    # corrupted JSON, 9 lacks metadata, 10 has a key that is not a string; the line with two
    # time_ms keys (12) is kept with its time excluded: 37 - 4 = 33 events
    assert got.n_events == 33
    assert got.checks.found["corrupted_json"].lines == [6, 11]
    assert got.checks.found["time_out_of_range"].lines == [12]
    assert {"corrupted_json", "missing_field", "bad_field_type", "time_out_of_range",
            "value_out_of_range", "duplicate_line", "time_out_of_order"} <= set(got.checks.found)  # fmt: skip
    assert got.checks.found["bad_field_type"].lines == [4, 5, 8, 10]
    # line 2 repeats line 1 (run_start is not a key every rank logs at one millisecond, in
    # mlperf_rank_events.csv), line 36 repeats line 13
    assert got.checks.found["duplicate_line"].lines == [2, 36]


def test_bundled_small_logs_take_the_vectorised_path(monkeypatch):
    calls = []
    per_line = parse._per_line
    monkeypatch.setattr(parse, "_per_line", lambda *a: calls.append(1) or per_line(*a))
    small = [f for f in mlperf.find_result_files(MLPERF) if f.stat().st_size < parse._NATIVE_BYTES]
    for f in small:
        parse.read_log(f)
    assert len(small) > 30 and calls == []


@pytest.mark.parametrize(
    "seg",
    [
        ' {"namespace": "", "time_ms": 1727000000000, "key": "k", "value": 1, "metadata": {}}',
        ' {"namespace": "", "time_ms": 1727000000000, "key": "k", "time_ms": 5, "metadata": {}}',
        ' {"namespace": "", "time_ms": 1727000000000, "key": "k", "value": {"time_ms": 1}}',
        ' {"namespace": "", "time_ms": 1727000000000, "key": "[\\\\", "value": 1, "metadata": {}}',
    ],
)
def test_template_rule_of_the_head_is_the_general_rule(seg):
    # the head's shortcut (its text before the digits needs no check) gives the reference's answer:
    # True for the first, False for a second time_ms key (twice, at depth 1 and 2)

    s0 = parse._HEAD_LEN
    s1 = seg.find(",", s0)
    obj = json.loads(seg)
    assert parse._template_ok(seg, s0, s1, obj) is old._template_ok(seg, s0, s1, obj)
    assert parse._template_ok(seg, s0, s1, obj) is (seg.count('"time_ms"') == 1)
