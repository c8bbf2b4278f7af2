"""Duplicated MLLOG lines and the wording of the reader's messages (fresh-user trial).

Expected counts come from the raw bundled log: doubling every line makes each MLLOG line a repeat
once, except ``init_start``/``cache_clear``, which every rank logs at one millisecond and which the
check leaves out (``mlperf_rank_events.csv``)."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import polars as pl
import pytest

from trainperf import mlperf
from trainperf.mlperf import MLPerfLogWarning
from trainperf.mlperf.checks import FileChecks
from trainperf.quality import QualityLog

ROOT = Path(__file__).resolve().parents[1]
RUN = "v4.1/NVIDIA/results/eos_n32_ngc24.09_nemo/gpt3/result_0.txt"
BUNDLED = ROOT / "data/mlperf" / RUN


def first_key(line: str) -> str | None:
    try:
        return json.loads(line.split(":::MLLOG", 1)[1].split(":::MLLOG")[0])["key"]
    except (ValueError, KeyError, IndexError):
        return None


def copy_tree(tmp_path: Path, lines: list[str] | None) -> Path:
    """The bundled v4.1 tree with only the eos_n32 gpt3 result_0 (its text replaced by ``lines``)."""
    root = tmp_path / "training_results_v4.1"
    dst = root / "NVIDIA/results/eos_n32_ngc24.09_nemo/gpt3/result_0.txt"
    dst.parent.mkdir(parents=True)
    shutil.copytree(ROOT / "data/mlperf/v4.1/NVIDIA/systems", root / "NVIDIA/systems")
    if lines is None:
        shutil.copy(BUNDLED, dst)
    else:
        dst.write_text("\n".join(lines) + "\n")
    return root


def load(root: Path) -> tuple[mlperf.Results, dict[str, dict]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MLPerfLogWarning)
        res = mlperf.load_results(root)
    return res, {r["check"]: r for r in res.quality.iter_rows(named=True)}


def test_every_line_doubled_is_reported_and_timed_right(tmp_path):
    lines = BUNDLED.read_text().split("\n")
    if lines[-1] == "":
        lines = lines[:-1]
    mllog = [ln for ln in lines if ":::MLLOG" in ln]
    rank = sum(1 for ln in mllog if first_key(ln) in ("init_start", "cache_clear"))
    expected = len(mllog) - rank  # one repeat per MLLOG line that is not a rank event
    assert (len(mllog), rank, expected) == (818, 288, 530)  # 818 MLLOG lines, 288 rank events
    clean, q0 = load(copy_tree(tmp_path / "a", None))
    assert "duplicate_line" not in q0  # the real log's repeats are all rank events
    doubled = [x for ln in lines for x in (ln, ln)]
    with pytest.warns(MLPerfLogWarning, match="duplicate_line: flagged"):
        res = mlperf.load_results(copy_tree(tmp_path / "b", doubled))
    q = {r["check"]: r for r in res.quality.iter_rows(named=True)}
    row = q["duplicate_line"]
    assert row["n_samples"] == expected and row["n_lines"] == expected
    first_dup = 2 * next(i for i, ln in enumerate(lines) if ":::MLLOG" in ln
                         and first_key(ln) not in ("init_start", "cache_clear")) + 2  # fmt: skip
    assert row["first_line"] == first_dup
    assert f"{expected} MLLOG lines repeat" in row["detail"] and "more time" not in row["detail"]
    t0 = clean.runs["time_to_train_min"][0]
    assert res.runs["time_to_train_min"][0] == pytest.approx(t0)


def test_one_repeated_line(results_tree):
    start = ':::MLLOG {"namespace": "", "time_ms": 1700000000000, "event_type": "INTERVAL_START", "key": "run_start", "value": null, "metadata": {}}'
    stop = ':::MLLOG {"namespace": "", "time_ms": 1700000600000, "event_type": "INTERVAL_END", "key": "run_stop", "value": null, "metadata": {"status": "success"}}'
    results_tree.add("sysA", "gpt3", 0, [start, stop, stop])
    with pytest.warns(MLPerfLogWarning, match=r"result_0\.txt:3: 1 MLLOG line repeats"):
        res = mlperf.load_results(results_tree.root)
    assert res.runs["time_to_train_min"][0] == pytest.approx(10.0)  # 600 000 ms


def test_rank_events_repeated_are_not_flagged(results_tree):
    init = ':::MLLOG {"namespace": "", "time_ms": 1699999990000, "event_type": "INTERVAL_START", "key": "init_start", "value": null, "metadata": {}}'
    start = ':::MLLOG {"namespace": "", "time_ms": 1700000000000, "event_type": "INTERVAL_START", "key": "run_start", "value": null, "metadata": {}}'
    stop = ':::MLLOG {"namespace": "", "time_ms": 1700000600000, "event_type": "INTERVAL_END", "key": "run_stop", "value": null, "metadata": {"status": "success"}}'
    results_tree.add("sysA", "gpt3", 0, [init] * 8 + [start, stop])
    with warnings.catch_warnings():
        warnings.simplefilter("error", MLPerfLogWarning)
        res = mlperf.load_results(results_tree.root)
    assert "duplicate_line" not in res.quality["check"].to_list()


def test_empty_result_file_says_empty(results_tree):
    p = results_tree.add("sysA", "gpt3", 0, [])
    p.write_bytes(b"")
    with pytest.warns(MLPerfLogWarning, match=r"empty file \(0 bytes\); status parse_error"):
        res = mlperf.load_results(results_tree.root)
    assert res.runs["status"].to_list() == ["parse_error"]
    assert res.quality.filter(pl.col("check") == "empty_file").height == 1


def test_json_error_wording(results_tree):
    start = ':::MLLOG {"namespace": "", "time_ms": 1700000000000, "event_type": "INTERVAL_START", "key": "run_start", "value": null, "metadata": {}}'
    cut = ':::MLLOG {"namespace": "", "time_ms": 1700000000001, "key": "eval_accuracy", "value'
    results_tree.add("sysA", "gpt3", 0, [start, cut])
    with pytest.warns(MLPerfLogWarning) as w:
        mlperf.load_results(results_tree.root)
    text = " ".join(str(x.message) for x in w)
    assert "Unterminated string starting at column" in text and "at at" not in text


def test_more_times_on_one_line_is_singular():
    c = FileChecks("f.txt")
    c.add("invalid_utf8", "corrected", "bytes replaced", 3, n=2)  # two bytes on one line
    log = QualityLog()
    with pytest.warns(UserWarning):
        c.flush(log)
    assert log.rows[0]["detail"] == "bytes replaced (and 1 more time, 1 line)"
