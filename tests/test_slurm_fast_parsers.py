"""The fast forms of the vectorised sacct parsers (``fast=True``) against the full parsers.

The parsable2 reader parses every value with the fast parser first and parses the rows it leaves
``bad`` again with the full parser, values stripped (:meth:`trainperf.slurm.derive.Derive._again`).
That gives the full parser's values only if (1) wherever the fast parser reads a value its outputs
equal the full parser's, and (2) wherever the full parser reads an unstripped value, it reads the
stripped one the same way. Both are checked here on every value of the fields concerned in the
parsable fixtures and the bundled dump, and on hand-written forms (array tasks and pending
arrays, het components, steps of both, whitespace, overflows, damaged times and durations). The
full parsers are checked against the per-value parsers in ``tests/test_slurm.py``.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal, assert_series_equal

from trainperf import slurm
from trainperf.slurm import columns as C
from trainperf.slurm import derive

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = sorted((ROOT / "tests" / "data" / "slurm").glob("*/*.txt")) + [
    ROOT / "data" / "slurm" / "synthetic" / "sacct_parsable2.txt"
]


def _fixture_values(field: str) -> list[str]:
    """Every value of ``field`` in the fixtures with a ``|`` header (lines of the header's width)."""
    out: set[str] = set()
    for path in FIXTURES:
        lines = path.read_bytes().decode("utf-8", "backslashreplace").splitlines()
        if not lines or "JobID" not in lines[0].split("|"):
            continue
        names = lines[0].split("|")
        if field not in names:
            continue
        k = names.index(field)
        for line in lines[1:]:
            parts = line.split("|")
            if len(parts) in (len(names), len(names) + 1):
                out.add(parts[k])
    return sorted(out)


JOB_IDS = [
    "123", "123.batch", "123.extern", "123.interactive", "123.0", "123.15", "123_4", "123_4.batch",
    "123_4.0", "123_[1-5%2]", "123_[1,3,5]", "123_[]", "1853+0", "1853+1", "1853+1.0",
    "1853+1.batch", "123.0+1", "123.batch+2", "123_4+1", "0", "007", "123.", ".batch", "123..0",
    "123.Batch", "123.EXTERN", "123.bat ch", "123.b4", "123.4a", "123_x", "123+x", "abc", "", " ", " 123", "123 ",
    " 123.batch ", "\t123_4\t", "99999999999999999999", "99999999999999999999.batch",
    "9223372036854775807", "9223372036854775808", "123_99999999999999999999", "１２３",
    "123.０", "123.batch.0",
]  # fmt: skip
TIMES = [
    "2024-06-01T16:18:41", "2024-06-01 16:18:41", "2024-06-01T16:18", "2024-02-29T00:00:00",
    "2023-02-29T00:00:00", "2024-02-30T12:00:00", "2024-13-01T00:00:00", "2024-06-01T24:00:00",
    "2024-06-01T23:59:60", "2024-06-01T23:60:00", "0000-01-01T00:00:00", "9999-12-31T23:59:59",
    "2024-6-01T16:18:41", "2024-06-01T1:18:41", "+2024-06-01T16:18:41", "2024-06-01T16:18:41Z",
    "2024-06-01T16:18:41.5", " 2024-06-01T16:18:41", "2024-06-01T16:18:41 ", "Unknown", "None",
    "N/A", "", " ", "unknown", "0", "1717258721", "-1", "4294967294", "4294967295", "4294967296",
    "99999999999999999999", "１７１７",
]  # fmt: skip
DURATIONS = [
    "00:53:40", "1-00:00:00", "12-23:59:59", "999999999-23:59:59", "1000000000-00:00:00",
    "00:60:00", "00:00:60", "99:00:00", "00:53:40.5", "53:40", "53:40.123", "1-02", "1-02:03",
    "INVALID", "invalid", "UNLIMITED", "", " ", " 00:53:40", "00:53:40 ", "0:53:40", "00:5:40",
    "-00:53:40", "1--00:00:00", "x-00:00:00", "00:53:4x", "２２:00:00",
]  # fmt: skip


def _outputs(parse: C.Parse, frame: pl.DataFrame) -> pl.DataFrame:
    return C.run_stages(frame, [parse]).select(
        pl.col(col).alias(key) for key, col in sorted(parse.out.items())
    )


def _check(fast: pl.DataFrame, full: pl.DataFrame, full_stripped: pl.DataFrame, values: list):
    # (1) where the fast parser reads a value, all its outputs are the full parser's
    ok = ~fast.get_column("bad")
    assert full.filter(ok).get_column("bad").not_().all()
    for c in fast.columns:
        assert_series_equal(fast.get_column(c).filter(ok), full.get_column(c).filter(ok))
    # (2) where the full parser reads an unstripped value, the stripped one reads the same
    good = ~full.get_column("bad")
    for c in full.columns:
        assert_series_equal(
            full.get_column(c).filter(good), full_stripped.get_column(c).filter(good)
        )
    # the forms the fast parser is for are read by it (otherwise it would be no fast path)
    assert ok.sum() > 0, values


@pytest.mark.parametrize("field", ["JobID", "JobIDRaw"])
def test_fast_job_id_parts_equal_the_regex_groups(field):
    values = sorted(set(JOB_IDS) | set(_fixture_values(field)))
    frame = pl.DataFrame({"v": values}, schema={"v": pl.Utf8})
    fast = _outputs(C.job_id_parts("v", "_a_", strip_values=False, fast=True), frame)
    full = _outputs(C.job_id_parts("v", "_a_", strip_values=False), frame)
    stripped = _outputs(C.job_id_parts("v", "_a_", strip_values=True), frame)
    _check(fast, full, stripped, values)
    # the fast JobID parser reads every JobID form (the regex groups only for those that are not
    # plain); only padded and bad values go to the full parser again
    read = set(frame.filter(~fast.get_column("bad")).get_column("v").to_list())
    assert {"123", "123.batch", "123_4", "123_[1-5%2]", "1853+1", "1853+1.0", "123.0+1"} <= read
    assert not read & {" 123", "123 ", "abc", "123.", "99999999999999999999"}
    # and on every row (bad ones too) its outputs are the full parser's
    for c in fast.columns:
        assert_series_equal(fast.get_column(c), full.get_column(c))


def test_job_id_number_after_the_fast_job_id_parts_equals_the_regex():
    ids = sorted(set(JOB_IDS) | set(_fixture_values("JobID")))
    raws = ids[1:] + ids[:1]  # shifted: most pairs differ; the first half of the frame is equal
    frame = pl.DataFrame({"jid": ids + ids, "raw": ids + raws})
    jid = C.job_id_parts("jid", "_jid_", strip_values=False, fast=True)
    num = C.job_id_number("raw", "_r_", strip_values=False, same_as="_jid_")
    got = C.run_stages(frame, [jid, num])
    full = C.run_stages(frame, [C.job_id_number("raw", "_r_", strip_values=False)])
    for c in ("_r_id", "_r_bad"):
        assert_series_equal(got.get_column(c), full.get_column(c))


def test_fast_times_equal_the_full_parser():
    values = sorted(
        set(TIMES) | {v for f in ("Submit", "Start", "End") for v in _fixture_values(f)}
    )
    frame = pl.DataFrame({"v": values}, schema={"v": pl.Utf8})
    fast = _outputs(C.epoch_or_iso_times("v", "_t_", strip_values=False, fast=True), frame)
    full = _outputs(C.epoch_or_iso_times("v", "_t_", strip_values=False), frame)
    stripped = _outputs(C.epoch_or_iso_times("v", "_t_", strip_values=True), frame)
    _check(fast, full, stripped, values)
    read = set(frame.filter(~fast.get_column("bad")).get_column("v").to_list())
    assert {"2024-06-01T16:18:41", "Unknown", "None", "N/A", ""} <= read
    # by hand: epochs, the two other ISO forms, a leap second and an impossible date are not
    assert not read & {"1717258721", "2024-06-01 16:18:41", "2024-06-01T16:18", "2024-06-01T23:59:60",
                       "2024-02-30T12:00:00"}  # fmt: skip


def test_fast_durations_equal_the_full_parser():
    values = sorted(set(DURATIONS) | set(_fixture_values("Elapsed")))
    frame = pl.DataFrame({"v": values}, schema={"v": pl.Utf8})
    kw = {"words_null": ("INVALID",)}
    fast = _outputs(C.duration_seconds("v", "_d_", strip_values=False, fast=True, **kw), frame)
    full = _outputs(C.duration_seconds("v", "_d_", strip_values=False, **kw), frame)
    stripped = _outputs(C.duration_seconds("v", "_d_", strip_values=True, **kw), frame)
    _check(fast, full, stripped, values)
    by_value = dict(zip(values, fast.get_column("value").to_list(), strict=True))
    # by hand: 53 min 40 s; one day; 12 d 23 h 59 min 59 s
    assert by_value["00:53:40"] == 53 * 60 + 40
    assert by_value["1-00:00:00"] == 86400
    assert by_value["12-23:59:59"] == 12 * 86400 + 23 * 3600 + 59 * 60 + 59
    read = set(frame.filter(~fast.get_column("bad")).get_column("v").to_list())
    assert not read & {"53:40", "1-02", "INVALID", "00:60:00", "00:00:60"}


def test_a_bad_job_id_raw_beside_a_plain_job_id_is_parsed_again_alone():
    # the rows left bad by JobIDRaw alone are parsed again by its own full parser (without
    # JobID's parse in that query): line 4's raw id is not a JobID, line 3's is padded
    head = "JobID|JobIDRaw|State|Elapsed\n"
    text = (
        head
        + "100|100|COMPLETED|00:00:10\n101| 101 |COMPLETED|00:00:10\n102|None|FAILED|00:00:01\n"
    )
    with pytest.raises(slurm.SacctParseError, match=r"line 4: .*JobIDRaw.*'None'"):
        slurm.parse_sacct_parsable(text)
    with pytest.warns(slurm.SacctWarning):
        d = slurm.parse_sacct_parsable(text, bad_lines="skip")
    assert d.jobs.select("JobID", "job_id_raw").rows() == [("100", 100), ("101", 101)]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_times_by_distinct_value_read_as_row_by_row(path, monkeypatch):
    # a large dump parses times and durations once per distinct value (derive._DISTINCT_ROWS);
    # forced here on every fixture, the frames, quality rows and errors are those of the
    # row-by-row parse
    def read(mode):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                d = slurm.read_sacct_parsable(path, bad_lines=mode, tz="Europe/Berlin")
            except (slurm.SacctParseError, ValueError) as exc:
                return str(exc)
            return d.jobs, d.steps, d.quality

    for mode in ("raise", "skip"):
        want = read(mode)
        with monkeypatch.context() as m:
            m.setattr(derive, "_DISTINCT_ROWS", 0)
            got = read(mode)
        if isinstance(want, str):
            assert got == want
            continue
        for a, b in zip(got, want, strict=True):
            assert_frame_equal(a, b)


def test_int_column_reads_the_grammar_of_its_docstring():
    """``int_column`` (a cast, no regex since issue 41): ``""`` → null and not bad; ``[+-]`` and
    ASCII digits → the int; anything else (spaces, other digits, exponents, a sign alone, a
    number beyond 64 bits) → null and bad. Expected: Python's ``int`` under the regex of the
    grammar, and the 64-bit range, value by value."""
    values = [*_fixture_values("NNodes"), *_fixture_values("NCPUS"), "", "+5", "-5", " 5", "5 ",
              "5\n", "1e3", "0x10", "5.0", "\u0663", "+-5", "--5", "+", "-", "007", "+0", "-0",
              "1_000", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
              "-9223372036854775809", "99999999999999999999"]  # fmt: skip

    def want(v: str) -> tuple[int | None, bool]:
        if v == "":
            return None, False
        if re.fullmatch(r"[+-]?[0-9]+", v) and -(2**63) <= int(v) < 2**63:
            return int(v), False
        return None, True

    got = C.run_stages(pl.DataFrame({"n": values}), [C.int_column("n", "_n_", strip_values=False)])
    assert got["_n_v"].to_list() == [want(v)[0] for v in values]
    assert got["_n_bad"].to_list() == [want(v)[1] for v in values]
