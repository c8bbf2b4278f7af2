"""Each result file read from disk once per folder in a record build (issue 36,
``trainperf.mlperf.readonce``): inside ``read_once`` the readers take the bytes of the first read,
and give what they give when each reads the file itself."""

from __future__ import annotations

import hashlib
import io

import pytest
from helpers import MLPERF

from trainperf.mlperf import load_results, readonce, timeline
from trainperf.mlperf.precision import precision_from_log
from trainperf.record.folders import find_result_folders, logs_sha256
from trainperf.record.row import folder_row


def test_bytes_are_read_once_inside_the_block_and_never_outside(tmp_path, monkeypatch):
    f = tmp_path / "result_0.txt"
    f.write_bytes(b"first\n")
    opened = []
    real_open = open
    monkeypatch.setattr(
        "builtins.open", lambda p, *a, **k: opened.append(str(p)) or real_open(p, *a, **k)
    )
    assert readonce.held_bytes(f) is None  # outside: the caller reads the file itself
    with readonce.read_once():
        assert readonce.held_bytes(f) == b"first\n"
        f.write_bytes(b"second\n")  # a later read inside the block sees the first read's bytes
        assert readonce.held_bytes(f) == b"first\n"
        with readonce.open_bytes(f) as fh:
            assert isinstance(fh, io.BytesIO) and fh.read() == b"first\n"
    assert opened.count(str(f)) == 1  # one read (the write goes through io.open)
    with readonce.open_bytes(f) as fh:  # after the block: the file as it is now
        assert fh.read() == b"second\n"
    assert readonce.held_bytes(f) is None


def test_files_over_the_limits_are_not_kept(tmp_path, monkeypatch):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_bytes(b"x" * 10)
    b.write_bytes(b"y" * 10)
    monkeypatch.setattr(readonce, "MAX_FILE_BYTES", 9)
    with readonce.read_once():
        assert readonce.held_bytes(a) is None  # 10 bytes > 9: read by each reader
    monkeypatch.setattr(readonce, "MAX_FILE_BYTES", 10)
    monkeypatch.setattr(readonce, "MAX_HELD_BYTES", 15)
    with readonce.read_once():
        assert readonce.held_bytes(a) == b"x" * 10
        assert readonce.held_bytes(b) is None  # 10 + 10 > 15 held in all


def test_an_unreadable_file_raises_as_open_does(tmp_path):
    with readonce.read_once(), pytest.raises(FileNotFoundError):
        readonce.held_bytes(tmp_path / "missing.txt")


@pytest.mark.filterwarnings("ignore")  # the copy and the missing systems JSON are flagged
def test_readers_give_the_same_answers_from_held_bytes(tmp_path):
    # a folder with a CRLF copy: the duplicate check (LF length and digest), the sha256 listing,
    # the precision search and the load give inside read_once what they give reading the files
    src = sorted(MLPERF.rglob("result_0.txt"))[0]
    d = tmp_path / "bench"
    d.mkdir()
    data = src.read_bytes()
    (d / "result_0.txt").write_bytes(data)
    (d / "result_1.txt").write_bytes(data.replace(b"\n", b"\r\n"))  # a CRLF copy
    files = sorted(d.iterdir())
    # the sha256sum listing by hand
    crlf = data.replace(b"\n", b"\r\n")
    listing = "".join(f"{hashlib.sha256(b).hexdigest()}  result_{i}.txt\n"
                      for i, b in enumerate((data, crlf)))  # fmt: skip
    expected_sha = hashlib.sha256(listing.encode()).hexdigest()
    outside = (
        timeline.duplicate_files(files),
        logs_sha256(d),
        [precision_from_log(f) for f in files],
        load_results(d).runs,
    )
    with readonce.read_once():
        inside = (
            timeline.duplicate_files(files),
            logs_sha256(d),
            [precision_from_log(f) for f in files],
            load_results(d).runs,
        )
    assert outside[0] == inside[0] == {1: files[0]}
    assert outside[1] == inside[1] == expected_sha
    assert outside[2] == inside[2]
    assert outside[3].equals(inside[3])


def test_a_record_row_opens_each_log_once(tmp_path, monkeypatch):
    # the hash, the parse, the duplicate check (two files of one length) and the precision search
    # of folder_row all take the one read's bytes
    root = tmp_path / "training_results_v4.1"
    d = root / "NVIDIA/results/sys/bench"
    d.mkdir(parents=True)
    src = sorted(MLPERF.rglob("result_0.txt"))[0].read_bytes()
    for i in range(2):
        (d / f"result_{i}.txt").write_bytes(src)
    opened: list[str] = []
    real_open = io.open

    def counting(p, *a, **k):
        opened.append(str(p))
        return real_open(p, *a, **k)

    monkeypatch.setattr("builtins.open", counting)
    monkeypatch.setattr(io, "open", counting)
    (rf,) = find_result_folders([root])
    row = folder_row(rf)
    assert row["n_runs"] == 2 and row["quality_status"] != "error"
    for i in range(2):
        assert opened.count(str(d / f"result_{i}.txt")) == 1
