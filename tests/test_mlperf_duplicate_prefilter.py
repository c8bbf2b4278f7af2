"""``duplicate_files`` hashes only the files whose length (CRLF read as LF) another file of the
folder shares (issue 36): a copy has its original's length, so the answer is that of hashing every
file; the rule itself is tested in ``tests/test_mlperf_damage4.py``."""

from __future__ import annotations

from trainperf.mlperf import timeline


def test_only_files_of_a_shared_length_are_hashed(tmp_path, monkeypatch):
    d = tmp_path / "bench"
    d.mkdir()
    a = b'line one\nline two\n:::MLLOG {"key": "run_start"}\n'
    files = [d / f"result_{i}.txt" for i in range(5)]
    files[0].write_bytes(a)
    files[1].write_bytes(a.replace(b"\n", b"\r\n"))  # a CRLF copy of 0: 3 bytes longer
    files[2].write_bytes(a.replace(b"one", b"two"))  # the same length, other bytes: no copy
    files[3].write_bytes(a + b"more\n")  # another length: never hashed
    files[4].write_bytes(a)  # a byte copy of 0
    hashed = []
    digest = timeline._digest
    monkeypatch.setattr(timeline, "_digest", lambda p: hashed.append(p.name) or digest(p))
    assert timeline.duplicate_files(files) == {1: files[0], 4: files[0]}
    assert sorted(hashed) == ["result_0.txt", "result_1.txt", "result_2.txt", "result_4.txt"]
