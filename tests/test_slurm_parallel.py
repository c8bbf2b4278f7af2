"""The parsable2 reader's paths for both cores (issue 41) read every fixture as the one-core paths do.

Lines are split by polars' CSV reader where the bytes allow it (``parsable._read_lines``: no ``\\r``,
no byte-order mark, UTF-8), else from the text; the records of a large dump are split in one query
per polars thread (``columns.row_chunks``), and a large file's CSV read runs in a thread beside
its byte counts (``parsable.OVERLAP_BYTES``). Forced here on every fixture (damaged lines, newlines
and pipes inside job names, non-UTF-8 bytes, trailing delimiters, CRLF), the frames, quality rows
and errors are those of the text split in one query.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from trainperf import slurm
from trainperf.slurm import columns as C
from trainperf.slurm import derive, parsable

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = sorted((ROOT / "tests" / "data" / "slurm").glob("**/*.txt")) + [
    ROOT / "data" / "slurm" / "synthetic" / "sacct_parsable2.txt"
]

# blank lines (first, inside, last), a job name over two lines, a last line without its newline
HAND = (
    "\n"
    "JobID|JobName|State|Elapsed\n"
    "1|a|COMPLETED|00:01:00\n"
    "\n"
    "2|two\n"
    "lines|FAILED|00:02:00\n"
    "3|c|RUNNING|00:03:00\n"
    "\n"
    "4|d|COMPLETED|00:04:00"
)


def _read(path: Path, mode: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            d = slurm.read_sacct_parsable(path, bad_lines=mode)
        except (slurm.SacctParseError, ValueError) as exc:
            return str(exc)
        return d.jobs, d.steps, d.quality


def _same(got, want) -> None:
    if isinstance(want, str):
        assert got == want
        return
    assert not isinstance(got, str), got
    for a, b in zip(got, want, strict=True):
        assert_frame_equal(a, b)


@pytest.mark.parametrize(
    "path", [*FIXTURES, "hand", "hand_crlf"], ids=lambda p: getattr(p, "name", p)
)
def test_both_cores_read_as_one(path, tmp_path, monkeypatch):
    if path in ("hand", "hand_crlf"):
        text = HAND if path == "hand" else HAND.replace("\n", "\r\n")
        path = tmp_path / "hand.txt"
        path.write_bytes(text.encode())
    for mode in ("raise", "skip"):
        with monkeypatch.context() as m:  # the one-core paths: the text split, one query
            m.setattr(parsable, "_read_lines", lambda data: None)
            m.setattr(C, "PARALLEL_ROWS", 10**12)
            want = _read(path, mode)
        _same(_read(path, mode), want)  # as the reader goes by default on this machine
        with monkeypatch.context() as m:  # several record queries even on a small file
            m.setattr(C, "PARALLEL_ROWS", 1)
            m.setattr(derive, "CHUNKED_PARSE_ROWS", 1)
            m.setattr(pl, "thread_pool_size", lambda: 3)
            _same(_read(path, mode), want)
        with monkeypatch.context() as m:  # the CSV read in a thread beside the byte counts
            m.setattr(parsable, "OVERLAP_BYTES", 0)
            _same(_read(path, mode), want)


def test_the_hand_dump_reads_as_written(tmp_path):
    path = tmp_path / "hand.txt"
    path.write_bytes(HAND.encode())
    with pytest.warns(slurm.SacctWarning, match="fields missing"):
        d = slurm.read_sacct_parsable(path)
    # blank lines skipped; line 5's name continues on line 6; the last line read without newline
    assert d.jobs.select("JobID", "JobName", "elapsed_s", "source_line").rows() == [
        ("1", "a", 60, 3),
        ("2", "two\nlines", 120, 5),
        ("3", "c", 180, 7),
        ("4", "d", 240, 9),
    ]


def test_row_chunks(monkeypatch):
    monkeypatch.setattr(pl, "thread_pool_size", lambda: 3)
    monkeypatch.setattr(C, "PARALLEL_ROWS", 5)
    assert C.row_chunks(10) == [(0, 4), (4, 4), (8, 2)]  # ceil(10 / 3) = 4 rows a query
    assert C.row_chunks(4) == [(0, 4)]  # below PARALLEL_ROWS: one query
    assert C.row_chunks(0) == [(0, 0)]


@pytest.mark.parametrize(
    "data", [b"a|b\r\n1|2\r\n", b"\xef\xbb\xbfa|b\n", b"a|\xff\n", b"a\x1f\x1e\x00|b\n"]
)
def test_lines_from_the_text_where_the_csv_reader_would_differ(data):
    # a CR (the CSV reader ends a line at CRLF), a byte-order mark (it drops it), bytes that are
    # not UTF-8, no free separator byte
    assert parsable._read_lines(data) is None


def test_lines_from_the_csv_reader():
    got = parsable._read_lines(b'\nJobID|x\n\n1|"q\n2|b')
    assert got.to_list() == ["", "JobID|x", "", '1|"q', "2|b"]
