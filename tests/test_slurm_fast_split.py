"""The parsable2 reader's fast record splits (polars' CSV reader, issue 41: the whole file when
every line fits the header, ``_read_well_formed``; else the lines, ``_Records._fast_build``)
against its slow path (the line rules of ``_Records.build``) on damaged dumps built here from the bundled one: the same
frames, the same quality rows, the same errors. The slow path is the reference: it is the
reader these tests and the older ones (test_slurm*.py) checked line by line."""

from __future__ import annotations

import warnings
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from trainperf import slurm
from trainperf.slurm import parsable

ROOT = Path(__file__).resolve().parents[1]
DUMP = ROOT / "data/slurm/synthetic/sacct_parsable2.txt"


def _lines() -> list[str]:
    return DUMP.read_text(encoding="utf-8").splitlines()[:120]  # header + 119 records


def _read(path: Path, fast: bool, monkeypatch, **kw):
    """``(SacctData or the exception, whether the fast split returned the records)``."""
    used = []
    real, real_whole = parsable._Records._fast_build, parsable._read_well_formed

    def spy(self, start):
        got = real(self, start) if fast else None
        used.append(got is not None)
        return got

    def spy_whole(*a):
        got = real_whole(*a) if fast else None
        used.append(got is not None)
        return got

    with monkeypatch.context() as m:
        m.setattr(parsable._Records, "_fast_build", spy)
        m.setattr(parsable, "_read_well_formed", spy_whole)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                return slurm.read_sacct_parsable(path, **kw), any(used)
            except Exception as exc:  # compared below: same type and message
                return exc, any(used)


def _same(tmp_path: Path, monkeypatch, text: str | bytes, **kw) -> bool:
    """Asserts fast and slow reads agree; returns whether the fast split was used."""
    p = tmp_path / "sacct.txt"
    (p.write_bytes if isinstance(text, bytes) else p.write_text)(text)
    fast, used = _read(p, True, monkeypatch, **kw)
    slow, _ = _read(p, False, monkeypatch, **kw)
    if isinstance(slow, Exception):
        assert type(fast) is type(slow) and str(fast) == str(slow)
        return used
    assert not isinstance(fast, Exception), fast
    assert_frame_equal(fast.jobs, slow.jobs)
    assert_frame_equal(fast.steps, slow.steps)
    assert_frame_equal(fast.quality, slow.quality)
    return used


def test_pipes_in_job_names_fast_and_joined(tmp_path, monkeypatch):
    lines = _lines()
    # JobName is the last field: the slow path joins the extra "|" back into it
    lines[1] += "|with|pipes"
    lines[7] += "|x|"  # ends with the delimiter, more than n + 1 parts: joined as well
    lines[9] += "||x"
    text = "\n".join(lines) + "\n"
    assert _same(tmp_path, monkeypatch, text)
    d, _ = _read(tmp_path / "sacct.txt", True, monkeypatch)
    # by hand: line 2 is the record 100001, JobName "debug" + "|with|pipes"
    assert d.jobs.filter(pl.col("source_line") == 2)["JobName"].to_list() == ["debug|with|pipes"]
    q = d.quality.filter(pl.col("check") == "delimiter_in_free_text")
    assert q["n_lines"].to_list() == [3] and q["first_line"].to_list() == [2]  # lines 2, 8, 10
    assert d.steps.filter(pl.col("source_line") == 8)["JobName"].to_list() == ["batch|x|"]


def test_well_formed_file_read_whole(tmp_path, monkeypatch):
    used = []
    real = parsable._read_well_formed
    monkeypatch.setattr(parsable, "_read_well_formed", lambda *a: used.append(real(*a)) or used[-1])
    assert _same(tmp_path, monkeypatch, "\n".join(_lines()) + "\n")
    d, _ = _read(tmp_path / "sacct.txt", True, monkeypatch)
    assert used and used[0] is not None  # the whole-file path gave the records
    # by hand: 119 records, lines 2..120
    assert d.jobs.height + d.steps.height == 119
    assert sorted([*d.jobs["source_line"], *d.steps["source_line"]]) == list(range(2, 121))


def test_duplicates_missing_fields_no_final_newline(tmp_path, monkeypatch):
    lines = _lines()
    lines = lines + lines[5:9]  # exact repeats of four records
    assert _same(tmp_path, monkeypatch, "\n".join(lines) + "\n")
    assert _same(tmp_path, monkeypatch, "\n".join(lines))  # no newline after the last record
    cut = [ln.split("|") for ln in _lines()]  # NodeList (index 14) and Submit (7) left out
    text = "\n".join("|".join(f[:7] + f[8:14] + f[15:]) for f in cut) + "\n"
    assert _same(tmp_path, monkeypatch, text)


@pytest.mark.parametrize(
    "damage",
    [
        "truncated",  # a line cut short
        "short_and_long",  # one field missing on one line, one "|" more on another: same count
        "blank",  # a blank line among the records
        "newline_in_name",  # a JobName with a newline: a record over two lines
        "trailing",  # --parsable: a delimiter after every line
        "crlf",  # Windows line ends
        "bad_utf8",  # a Latin-1 job name
        "bom",
        "wrong_header",  # a field missing from the header only
        "header_not_first",  # a blank line before the header
    ],
)
def test_damage_takes_the_slow_path_with_the_same_result(tmp_path, monkeypatch, damage):
    lines = _lines()
    text: str | bytes
    if damage == "truncated":
        lines[4] = lines[4][:40]
    elif damage == "short_and_long":
        lines[4] = lines[4].rsplit("|", 1)[0]
        lines[6] += "|x"
    elif damage == "blank":
        lines.insert(6, "")
    elif damage == "newline_in_name":
        lines[3] += "\nsecond line"
    elif damage == "trailing":
        lines = [ln + "|" for ln in lines]
    elif damage == "header_not_first":
        lines.insert(0, "")
    elif damage == "wrong_header":
        lines[0] = lines[0].replace("|ReqTRES", "")
    text = "\n".join(lines) + "\n"
    if damage == "crlf":
        text = text.replace("\n", "\r\n")
    elif damage == "bad_utf8":
        text = text.encode().replace(b"|debug\n", b"|d\xe9bug\n", 1)
    elif damage == "bom":
        text = "\ufeff" + text
    for bad_lines in ("raise", "skip"):
        used = _same(tmp_path, monkeypatch, text, bad_lines=bad_lines)
        assert not used  # none of these is a well-formed file


def test_bad_values_and_other_delimiter(tmp_path, monkeypatch):
    lines = _lines()
    lines[2] = lines[2].replace("2024-06-01T16:18:48", "2024-06-31T16:18:48", 1)  # no such day
    text = "\n".join(lines) + "\n"
    assert _same(tmp_path, monkeypatch, text, bad_lines="skip")
    assert _same(tmp_path, monkeypatch, text, bad_lines="raise")
    semi = "\n".join(_lines()).replace("|", ";") + "\n"
    assert _same(tmp_path, monkeypatch, semi, delimiter=";")
    # a delimiter of two characters: the CSV reader takes one byte, the slow path does it
    two = "\n".join(_lines()).replace("|", "::") + "\n"
    assert not _same(tmp_path, monkeypatch, two, delimiter="::")
