"""Damaged lines in DCGM exposition files (fresh-user trial): a cut-off line, garbage bytes, invalid
UTF-8 in a label, a repeated sample line, an empty file. Each is excluded or flagged with a quality
row naming the file and line, and the rest of the file is read. Expected counts come from the raw
bundled file: its samples are its lines that are neither blank nor ``#`` comments (3423 in the
bundled H200 file; it reads with no quality row, checked first)."""

from __future__ import annotations

import warnings
from pathlib import Path

import polars as pl
import pytest

from trainperf import dcgm

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = ROOT / "data/telemetry/h200_1gpu_1.3b_20261129T1852Z/telemetry.prom"


def raw_lines() -> list[bytes]:
    return BUNDLED.read_bytes().split(b"\n")[:-1]  # the file ends with a newline


def n_samples(lines: list[bytes]) -> int:
    return sum(1 for ln in lines if ln.strip() and not ln.startswith(b"#"))


def sample_line(lines: list[bytes], after: int) -> int:
    """0-based index of the first sample line at or after ``after``."""
    return next(i for i in range(after, len(lines)) if lines[i].startswith(b"DCGM_FI_"))


def write(tmp_path: Path, lines: list[bytes], name: str = "t.prom") -> Path:
    p = tmp_path / name
    p.write_bytes(b"\n".join(lines) + b"\n")
    return p


def read(p: Path) -> tuple[dcgm.Reading, dict[str, dict]]:
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = dcgm.read(p)
    q = {row["check"]: row for row in r.quality.iter_rows(named=True)}
    for row in q.values():  # every check that fired warned, naming the file and the line
        if row["check"] != "blank_value":
            where = f"{p}:{row['first_line']}" if row["first_line"] is not None else str(p)
            assert any(where in str(x.message) for x in w), (row, [str(x.message) for x in w])
    return r, q


def test_bundled_file_is_clean():
    lines = raw_lines()
    assert n_samples(lines) == 3423
    r = dcgm.read(BUNDLED)
    assert r.samples.height == 3423 and r.quality.height == 0


def test_line_cut_mid_line_is_excluded_and_the_rest_read(tmp_path):
    lines = raw_lines()
    i = sample_line(lines, 5417)
    lines[i] = lines[i][: len(lines[i]) // 3]  # cut inside the label set, newline kept
    p = write(tmp_path, lines)
    r, q = read(p)
    assert r.samples.height == 3423 - 1
    row = q["malformed_line"]
    assert (row["action"], row["first_line"], row["n_lines"]) == ("excluded", i + 1, 1)
    assert set(q) == {"malformed_line"}


@pytest.mark.parametrize(
    ("garbage", "check"),
    [(b"\x00\xffGARBAGE %%% {{", "invalid_utf8"), (b"GARBAGE %%% {{", "malformed_line")],
)
def test_garbage_line_is_excluded(tmp_path, garbage, check):
    lines = raw_lines()
    i = 5465
    assert lines[i].startswith(b"# TYPE")  # a comment line: no sample is lost
    lines[i] = garbage
    r, q = read(write(tmp_path, lines))
    assert r.samples.height == 3423
    assert (
        set(q) == {check} and q[check]["first_line"] == i + 1 and q[check]["action"] == "excluded"
    )


def test_invalid_utf8_in_a_label_excludes_that_line_only(tmp_path):
    lines = raw_lines()
    i = sample_line(lines, 2477)
    assert b'modelName="NVIDIA H200"' in lines[i]
    lines[i] = lines[i].replace(b'modelName="NVIDIA H200"', b'modelName="NVIDIA \xff H200"')
    r, q = read(write(tmp_path, lines))
    assert r.samples.height == 3423 - 1
    assert set(q) == {"invalid_utf8"}  # no misleading duplicate_series
    assert (q["invalid_utf8"]["first_line"], q["invalid_utf8"]["n_lines"]) == (i + 1, 1)
    assert not r.series["labels"].str.contains("\ufffd", literal=True).any()


def test_exact_duplicate_sample_line_is_dropped(tmp_path):
    lines = raw_lines()
    i = sample_line(lines, 5900)
    lines.insert(i + 1, lines[i])  # the copy is line i + 2 (1-based)
    r, q = read(write(tmp_path, lines))
    assert r.samples.height == 3423  # 3424 sample lines, one a repeat
    row = q["duplicate_sample"]
    assert (row["action"], row["first_line"], row["n_samples"]) == ("excluded", i + 2, 1)
    assert "identical values" in row["detail"]
    assert r.samples["line"].to_list().count(i + 1) == 1 and i + 2 not in r.samples["line"]


def test_every_line_doubled_keeps_each_sample_once(tmp_path):
    lines = [x for ln in raw_lines() for x in (ln, ln)]
    r, q = read(write(tmp_path, lines))
    assert r.samples.height == 3423
    assert q["duplicate_sample"]["n_samples"] == 3423


def test_empty_file_is_flagged(tmp_path):
    p = tmp_path / "empty.prom"
    p.write_bytes(b"")
    r, q = read(p)
    assert r.samples.height == 0
    assert set(q) == {"empty_file"} and q["empty_file"]["action"] == "flagged"
    comments = tmp_path / "comments.prom"
    comments.write_bytes(b"# HELP x y\n\n# TYPE x gauge\n")
    r, q = read(comments)
    assert r.samples.height == 0 and set(q) == {"empty_file"}


def test_more_damage_than_data_still_raises():
    # 1 marker, 2 samples, 2 garbage lines: as much damage as data, nothing to bound it by
    data = (b"1767225600\nDCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 5\nDCGM_FI_DEV_GPU_UTIL{gpu=\"1\"} 6\n"
            b"!!garbage\n??garbage\n")  # fmt: skip
    with pytest.raises(dcgm.DcgmFormatError, match=r"<bytes>:4: expected a sample"):
        dcgm.read(data)
    # one garbage line fewer: 2 samples read, 1 line excluded
    with pytest.warns(dcgm.DcgmWarning, match=r"<bytes>:4: .*malformed_line: excluded"):
        r = dcgm.read(data.rsplit(b"??", 1)[0])
    assert r.samples["value"].to_list() == [5.0, 6.0]


def test_load_records_the_excluded_line(tmp_path):
    lines = raw_lines()
    i = sample_line(lines, 5417)
    lines[i] = lines[i][:40]
    p = write(tmp_path, lines)
    with pytest.warns(dcgm.DcgmWarning):
        r = dcgm.load([p])
    assert r.samples.height == 3423 - 1
    assert r.quality.filter(pl.col("check") == "malformed_line")["first_line"].to_list() == [i + 1]


def test_binary_file_raises_without_a_warning_first(tmp_path):
    p = tmp_path / "bin.prom"
    p.write_bytes(bytes(range(256)) * 4)  # not an exposition at all
    with warnings.catch_warnings():
        warnings.simplefilter("error", dcgm.DcgmWarning)  # a warning would fail first
        with pytest.raises(dcgm.DcgmFormatError):
            dcgm.read(p)
