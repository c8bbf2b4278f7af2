"""Events read without decoding (issue 36): lines as mllog writes them whose value and metadata are
flat objects and whose key the loader does not keep (``tracked_stats``: 73 % of v5.1's lines) take
their text from the line, not from ``json.dumps(json.loads(line))``.

The one-pass reference parser (``tests/mlperf_parse_reference.py``) decodes every line: on such
lines the events, kept objects and checks must be its own, on every path (a small file, the per-line
path of prefixed or odd lines, the native pass of a large file); a damaged line that looks flat
must still be checked as the reference checks it; a text json.dumps would write otherwise stays as
written and decodes to the reference's object.
"""

from __future__ import annotations

import dataclasses
import json

import mlperf_parse_reference as old
import pytest
from polars.testing import assert_frame_equal

from trainperf.mlperf import events, lines, parse
from trainperf.mlperf.throughput import step_times


@pytest.fixture(autouse=True, params=["polars", "re"])
def _flat_engine(request, monkeypatch):
    """Every test with a file's flat texts matched in one polars regex call, and with Python's
    ``re`` one text at a time (events._FLAT_BATCH_MIN picks by count; these files are small)."""
    monkeypatch.setattr(events, "_FLAT_BATCH_MIN", 0 if request.param == "polars" else 10**9)


HEAD = ':::MLLOG {"namespace": "", "time_ms": '
T0 = 1760049947931
META = (
    '{"file": "/workspace/llm/custom_callbacks.py", "lineno": 480, "step": %s, "samples_count": %s}'
)


def line(t, key, value, meta, event="POINT_IN_TIME"):
    return f'{HEAD}{t}, "event_type": "{event}", "key": "{key}", "value": {value}, "metadata": {meta}}}'


def stats(i, t=None):
    """A v5.1 NVIDIA tracked_stats line (values as Python writes floats)."""
    v = json.dumps({"train_step_time": 0.43 + i / 977, "reduced_train_loss": 8.0 - i / 131})
    return line(
        T0 + 1000 * i if t is None else t,
        "tracked_stats",
        v,
        META % (f"{32.0 * i}", f"{512.0 * i}"),
    )


RUN = [
    line(T0 - 5, "run_start", "null", '{"file": "a.py", "lineno": 1}', "INTERVAL_START"),
    *[stats(i) for i in range(1, 40)],
    line(T0 + 50_000, "eval_accuracy", 0.5, '{"epoch_num": 3, "samples_count": 1536}'),
    # flat objects of every scalar kind; an empty object; a key the loader keeps (decoded)
    line(
        T0 + 50_001,
        "k",
        '{"a": null, "b": true, "c": false, "d": "x y", "e": -0.5, "f": 1e-05}',
        "{}",
    ),
    line(
        T0 + 50_002, "run_stop", '{"x": 1}', '{"status": "success", "file": "a.py"}', "INTERVAL_END"
    ),
]


def compare(path, data=None):
    new, ref = parse.read_log(path, data), old.read_log(path, data)
    assert_frame_equal(new.frame(), ref.frame(), check_exact=True)
    assert new.kept == ref.kept
    assert [(k, dataclasses.asdict(f)) for k, f in new.checks.found.items()] == [
        (k, dataclasses.asdict(f)) for k, f in ref.checks.found.items()
    ]
    return new


def _count_decodes(monkeypatch):
    calls = []
    for mod in (lines, parse):
        ev = mod._event
        monkeypatch.setattr(mod, "_event", lambda *a, _ev=ev: calls.append(a[1]) or _ev(*a))
    return calls


def test_flat_lines_are_not_decoded_and_read_as_the_reference(tmp_path, monkeypatch):
    calls = _count_decodes(monkeypatch)
    f = tmp_path / "result_0.txt"
    f.write_text("\n".join(RUN) + "\n", encoding="utf-8")
    got = compare(f)
    # decoded: run_start (value null), eval_accuracy (value a number), run_stop (a kept key) -
    # lines 1, 41 and 43; the 39 tracked_stats lines and the flat "k" line (42) are not
    assert sorted(calls) == [1, 41, 43]
    assert got.n_events == len(RUN)
    # the step timings read from the events' text are the reference's
    ours = step_times(got.frame())
    assert_frame_equal(ours, step_times(old.read_log(f).frame()))


@pytest.mark.parametrize("native", [True, False], ids=["native", "per-line"])
def test_flat_lines_of_the_other_paths_read_as_the_reference(tmp_path, monkeypatch, native):
    if native:  # every file through the native (polars) pass of large files
        monkeypatch.setattr(parse, "_NATIVE_BYTES", 0)
    calls = _count_decodes(monkeypatch)
    text = [
        *RUN[:10],
        "0: " + stats(50),  # a rank prefix: the per-line path
        "junk\r" + stats(51) + "\r",  # carriage returns
        stats(52) + " " + stats(53),  # two events in one line
        *RUN[10:],
    ]
    f = tmp_path / "result_0.txt"
    f.write_text("\n".join(text) + "\n", encoding="utf-8")
    got = compare(f)
    assert got.n_events == len(RUN) + 4
    # lines 2-10 and 11-13 hold tracked_stats only (each segment of line 13 starts with the
    # head): none is decoded
    assert [ln for ln in calls if 2 <= ln <= 13] == []


BIG = "1" + "0" * 4300  # json.loads refuses an integer of more than 4,300 digits
LOOKS_FLAT = [
    line(T0, "tracked_stats", '{"a": 1.5', META % (1, 2)),  # value cut off: corrupted
    line(T0 + 1, "tracked_stats", '{"a": 1.5}', '{"step": 1'),  # metadata cut off
    line(T0 + 2, "tracked_stats", '{"a": 1.5}', "[1, 2]"),  # metadata not an object
    line(T0 + 3, "tracked_stats", '{"a": ' + BIG + "}", "{}"),  # refused by json.loads
    line(T0 + 4, "tracked_stats", '{"a": 1' + "0" * 400 + "}", "{}"),  # 401 digits: decoded
    line(5, "tracked_stats", '{"a": 1.5}', "{}"),  # time out of range
    line(T0 + 6, "tracked_stats", '{"a": NaN}', "{}"),  # not in the flat form: decoded
    line(T0 + 7, "tracked_stats", '{"a": "\\u00e9"}', "{}"),  # an escape: decoded
    line(T0 + 8, "tracked_stats", '{"a": {"b": 1}}', "{}"),  # nested: decoded
    line(T0 + 9, "tracked_stats", '{"a": 1.5}', "{}").replace('"metadata"', '"metadatum"'),
    line(T0 + 10, "tracked_stats", '{"a": 1.5}', "{}")[:-1],  # the closing brace lost
    line(T0 + 11, "tracked_stats", '{"a": 1.5}', "{}") + "}",  # one brace too many
    line(T0 + 12, "tracked_stats", '{"a": 1.5}', "{}") + " x",  # text after the object
    *[stats(i, T0 + 20 + i) for i in range(20)],
]


@pytest.mark.parametrize("native", [True, False], ids=["native", "by-size"])
def test_damaged_lines_that_look_flat_are_checked_as_the_reference(tmp_path, monkeypatch, native):
    if native:
        monkeypatch.setattr(parse, "_NATIVE_BYTES", 0)
    f = tmp_path / "result_0.txt"
    f.write_text("\n".join(LOOKS_FLAT) + "\n", encoding="utf-8")
    got = compare(f)
    found = got.checks.found
    # lines 1, 2, 4, 10 (metadata missing), 11, 12 and 13: not JSON objects of the grammar
    assert found["corrupted_json"].lines == [1, 2, 4, 11, 12, 13]
    assert found["missing_field"].lines == [10]
    assert found["bad_field_type"].lines == [3]
    assert found["time_out_of_range"].lines == [6]


def test_a_text_json_dumps_writes_otherwise_stays_as_written(tmp_path):
    # "1.50" (json.dumps writes 1.5) and a key twice (json.loads keeps the last): the event's text
    # is the line's; it decodes to the reference's object, and the other columns are its own
    written = [
        line(T0, "tracked_stats", '{"a": 1.50, "b": 2E3}', '{"step": 1, "step": 2}'),
        line(T0 + 1, "tracked_stats", '{"a": 1, "a": 3}', "{}"),
    ]
    f = tmp_path / "result_0.txt"
    f.write_text("\n".join(written) + "\n", encoding="utf-8")
    new, ref = parse.read_log(f).frame(), old.read_log(f).frame()
    assert new["value"].to_list() == ['{"a": 1.50, "b": 2E3}', '{"a": 1, "a": 3}']
    assert new["metadata"].to_list() == ['{"step": 1, "step": 2}', "{}"]
    for c in ("value", "metadata"):
        assert [json.loads(v) for v in new[c]] == [json.loads(v) for v in ref[c]]
    assert_frame_equal(new.drop("value", "metadata"), ref.drop("value", "metadata"))
    assert ref["value"].to_list() == ['{"a": 1.5, "b": 2000.0}', '{"a": 3}']  # json.dumps's


def test_kept_keys_with_flat_objects_are_decoded(tmp_path):
    # run_stop's metadata (its status) is read from the decoded object: never the flat path
    f = tmp_path / "result_0.txt"
    f.write_text(RUN[0] + "\n" + RUN[-1] + "\n", encoding="utf-8")
    got = compare(f)
    assert got.kept["run_stop"] == [(1, {"x": 1}, {"status": "success", "file": "a.py"})]
    assert len(got.kept["run_start"]) == 1


@pytest.mark.parametrize("damage", ["none", "cut", "cr"])
def test_a_large_file_of_rank_labelled_lines_takes_the_c_level_passes(
    tmp_path, monkeypatch, damage
):
    # every line "0: :::MLLOG {...}" (srun --label) in a file read by the native pass: the lines
    # go through _simple_lines as a small file's would, not the per-line loop (a cut-off line is
    # checked there too); a carriage return in a line sends them to the per-line loop; either way
    # the reference's result
    monkeypatch.setattr(parse, "_NATIVE_BYTES", 0)
    calls = []
    per_line = parse._per_line
    monkeypatch.setattr(parse, "_per_line", lambda *a: calls.append(1) or per_line(*a))
    text = [f"{i % 8}: {x}" for i, x in enumerate(RUN)]
    if damage == "cut":
        text[5] = text[5][:-20]  # cut off: corrupted JSON
    elif damage == "cr":
        text[5] = "junk\r" + text[5]
    f = tmp_path / "result_0.txt"
    f.write_text("\n".join(text) + "\n", encoding="utf-8")
    got = compare(f)
    assert calls == ([1] if damage == "cr" else [])
    assert got.n_events == len(RUN) - (damage == "cut")
    if damage == "cut":
        assert got.checks.found["corrupted_json"].lines == [6]
