"""The small-file path's short cuts (issue 29) against the one-pass reference parser.

``check_encodable`` is skipped for a file without a ``\\uD800``-``\\uDFFF`` escape (the only way a
decoded event gets a character UTF-8 cannot store); the file column is one shared string. A file
with a lone surrogate in its key or event type must still be refused naming the line, a valid
surrogate pair must still be read, as the reference does.
"""

from __future__ import annotations

import mlperf_parse_reference as old
import pytest
from polars.testing import assert_frame_equal

from trainperf import mlperf
from trainperf.mlperf import parse

HEAD = ':::MLLOG {"namespace": "", "time_ms": '
T0 = 1727000000000


def line(t, key="k", event="POINT_IN_TIME"):
    return f'{HEAD}{t}, "event_type": "{event}", "key": "{key}", "value": 1, "metadata": {{}}}}'


def _write(tmp_path, lines):
    p = tmp_path / "result_0.txt"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


@pytest.mark.parametrize(
    ("key", "event"),
    [
        ("k\\ud800", "POINT_IN_TIME"),  # lone high surrogate in the key
        ("k", "P\\uDC00"),  # lone low surrogate (upper-case hex) in the event type
        ("k\\udbff", "POINT_IN_TIME"),
    ],
)
def test_lone_surrogate_still_refused_naming_the_line(tmp_path, key, event):
    p = _write(tmp_path, [line(T0, "a"), line(T0 + 1, key, event), line(T0 + 2, "b")])
    # (the reference parser predates the refusal: test_mlperf_damage3 states it)
    with pytest.raises(mlperf.MLPerfLogError, match=r"result_0\.txt:2: .*surrogate"):
        parse.read_log(p)


@pytest.mark.parametrize(
    "key",
    # a pair; an escaped backslash; an escape outside D800-DFFF; none
    ["k\\ud83d\\ude00", "k\\\\ud800", "k\\u00e9", "plain"],
)
def test_no_lone_surrogate_reads_as_the_reference(tmp_path, key):
    p = _write(tmp_path, [line(T0, "a"), line(T0 + 1, key), line(T0 + 1, key)])
    new, ref = parse.read_log(p), old.read_log(p)
    assert_frame_equal(new.frame(), ref.frame(), check_exact=True)
    assert new.frame()["file"].to_list() == [str(p)] * 3
    assert list(new.checks.found) == list(ref.checks.found)


@pytest.mark.parametrize(
    "prefixes",
    [
        [
            "0: ",
            "1: ",
            "0: ",
            "12: ",
        ],  # srun --label on every line (issue 36: 43 % of v5.1's lines)
        ["0: ", "", "0: ", "1: "],  # one line without a prefix
        ["0: ", "0:\r", "0: ", "0: "],  # a carriage return in a prefix: cut there by the reference
        ["[1,0]<stdout>: ", " ", "x ", "0: "],
    ],
)
def test_prefixed_lines_read_as_the_reference(tmp_path, prefixes):
    # the same event repeated by rank (one template), a second key, and an exact repeat of a line
    # (line 4 = line 1 when the prefixes agree): events, prefixes and checks as the reference
    body = [line(T0, "a"), line(T0 + 1, "b"), line(T0 + 1, "b"), line(T0, "a")]
    p = _write(tmp_path, [pre + b for pre, b in zip(prefixes, body, strict=True)])
    new, ref = parse.read_log(p), old.read_log(p)
    assert_frame_equal(new.frame(), ref.frame(), check_exact=True)
    assert new.frame()["prefix"].to_list() == [x.rsplit("\r", 1)[-1].strip() for x in prefixes]
    assert list(new.checks.found) == list(ref.checks.found)
