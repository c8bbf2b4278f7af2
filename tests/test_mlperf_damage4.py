"""Damaged MLPerf results, round 4 (issue 40): a result file that is a byte copy of another is not a
distinct run; a clock that steps back inside a log makes the time to train unusable. Expected values
by hand."""

from __future__ import annotations

import json

import pytest
from helpers import gpt3_run, mllog
from helpers import load_results_warned as load


def test_byte_copy_of_a_result_file_is_not_a_run(results_tree):
    # gpt3 (3 runs required): distinct runs of 10, 12 and 14 min, and result_3.txt a byte copy of
    # result_0.txt. Counting the copy, the olympic mean of [10, 10, 12, 14] drops 10 and 14 and
    # gives (10 + 12) / 2 = 11 min over "4 runs"; the 3 distinct runs give the median, 12 min.
    for i, m in enumerate([10.0, 12.0, 14.0]):
        results_tree.add("sysA", "gpt3", i, gpt3_run(minutes=m, seed=i + 1))
    d = results_tree.root / "Acme" / "results" / "sysA" / "gpt3"
    (d / "result_3.txt").write_bytes((d / "result_0.txt").read_bytes())
    r, msgs = load(results_tree.root)
    runs = {row["result_file"].rsplit("/", 1)[1]: row for row in r.runs.iter_rows(named=True)}
    assert runs["result_3.txt"]["status"] == "duplicate"
    assert runs["result_3.txt"]["time_to_train_min"] is None
    assert runs["result_0.txt"]["status"] == "success"
    s = r.scores.row(0, named=True)
    assert (s["n_runs"], s["n_valid_runs"], s["n_required_runs"]) == (3, 3, 3)
    assert s["score_min"] == pytest.approx(12.0)
    assert "1 result file is a byte copy of another" in s["note"]
    q = r.quality.filter(r.quality["check"] == "duplicate_file").row(0, named=True)
    assert q["source"].endswith("result_3.txt") and q["action"] == "flagged"
    assert "result_0.txt" in q["detail"]
    assert any("result_3.txt" in m and "byte copy of result_0.txt" in m for m in msgs)


def test_copies_leave_fewer_distinct_runs_than_the_rules_require(results_tree):
    # 2 distinct gpt3 runs (10, 12 min) + a copy of each: 2 runs, not 4; the rules need 3; an
    # olympic mean of 2 runs drops both (no score)
    for i, m in enumerate([10.0, 12.0]):
        results_tree.add("sysA", "gpt3", i, gpt3_run(minutes=m, seed=i + 1))
    d = results_tree.root / "Acme" / "results" / "sysA" / "gpt3"
    for i in (0, 1):
        (d / f"result_{i + 2}.txt").write_bytes((d / f"result_{i}.txt").read_bytes())
    r, _ = load(results_tree.root)
    s = r.scores.row(0, named=True)
    assert s["n_runs"] == 2 and s["score_min"] is None
    assert "only 2 of the 3 runs the rules require" in s["note"]
    assert "2 result files are byte copies of another" in s["note"]


def test_same_bytes_in_another_benchmark_folder_is_not_a_copy(results_tree):
    # the same bytes under two systems are two folders' runs, each counted in its own folder
    results_tree.add("sysA", "gpt3", 0, gpt3_run(minutes=10.0))
    results_tree.add("sysB", "gpt3", 0, gpt3_run(minutes=10.0))
    r, _ = load(results_tree.root)
    assert r.runs["status"].to_list() == ["success", "success"]


def test_clock_step_back_inside_a_log_is_flagged(results_tree):
    # a 12-minute gpt3 run with evals every 3 min (at 3, 6, 9, 12 min - 1 ms). After the third
    # eval the clock is stepped back 5 min: the 4th eval reads 12 - 5 = 7 min, 2 min before the
    # 9-min eval, and run_stop 7 min: run_stop - run_start = 7 min instead of 12. The step back is
    # flagged at the 4th eval's line (line 11: 7 lines before run's evals, evals on lines 8..11),
    # the status is damaged and there is no time to train.
    lines = gpt3_run(minutes=12.0, n_evals=4)
    for k in (10, 11):  # the 4th eval and run_stop (0-based)
        obj = json.loads(lines[k].split(" ", 1)[1])
        obj["time_ms"] -= 300_000
        lines[k] = ":::MLLOG " + json.dumps(obj)
    results_tree.add("sysA", "gpt3", 0, lines)
    r, msgs = load(results_tree.root)
    row = r.runs.row(0, named=True)
    assert row["status"] == "damaged" and row["time_to_train_min"] is None
    assert "clock_step_back" in row["quality"]
    q = r.quality.filter(r.quality["check"] == "clock_step_back").row(0, named=True)
    assert q["first_line"] == 11 and q["action"] == "flagged"
    assert "2.00 min" in q["detail"]
    assert any("result_0.txt:11" in m and "clock_step_back" in m for m in msgs)


def test_small_rank_skew_is_not_a_clock_step(results_tree):
    # a log written by several ranks (run_start logged twice, 300 ms apart): an eval line written
    # 20 s before the previous line's time (rank skew, below the 60 s tolerance of
    # mlperf_limits.csv) changes nothing: success, 10 min (from the earlier run_start)
    lines = gpt3_run(minutes=10.0, n_evals=3)
    obj = json.loads(lines[8].split(" ", 1)[1])
    prev = json.loads(lines[7].split(" ", 1)[1])["time_ms"]
    obj["time_ms"] = prev - 20_000
    lines[8] = ":::MLLOG " + json.dumps(obj)
    start = json.loads(lines[6].split(" ", 1)[1])
    start["time_ms"] += 300
    lines.insert(7, ":::MLLOG " + json.dumps(start))
    results_tree.add("sysA", "gpt3", 0, lines)
    r, _ = load(results_tree.root)
    row = r.runs.row(0, named=True)
    assert row["status"] == "success" and row["time_to_train_min"] == pytest.approx(10.0)


def bert_run(train_samples, t0=1_700_000_000_000) -> list[str]:
    # BERT reports eval_accuracy's epoch_num in training samples (MLPerf Training rules, "Epoch
    # reporting for deprecated benchmarks"): evals at 1,000,000 / 2,000,000 / 3,000,000 samples,
    # the last (0.725) meets the 0.720 target; then train_samples, then run_stop at 2 min
    lines = [
        mllog("submission_benchmark", "bert", t0 - 5000),
        mllog("global_batch_size", 4096, t0 - 4000),
        mllog("seed", 1, t0 - 4000),
        mllog("run_start", None, t0, event_type="INTERVAL_START"),
    ]
    for i, acc in enumerate([0.60, 0.70, 0.725], start=1):
        lines.append(mllog("eval_accuracy", acc, t0 + 30_000 * i, {"epoch_num": 1_000_000 * i}))
    lines.append(mllog("train_samples", train_samples, t0 + 119_000))
    lines.append(mllog("run_stop", None, t0 + 120_000, {"status": "success"}, "INTERVAL_END"))
    return lines


def test_bert_progress_counts_samples_and_train_samples_is_read(results_tree):
    # the final eval's epoch_num is 3,000,000 samples and train_samples agrees: 3,000,000 samples
    # to converge (before: BERT's epoch_num was taken for epochs and nothing was recorded)
    results_tree.add("sysA", "bert", 0, bert_run(3_000_000))
    r, _ = load(results_tree.root)
    row = r.runs.row(0, named=True)
    assert (row["status"], row["samples_to_converge"], row["quality"]) == ("success", 3_000_000, "")
    assert row["time_to_train_min"] == pytest.approx(2.0)


def test_train_samples_that_differs_from_the_final_eval_is_flagged(results_tree):
    # train_samples 3,100,000 against the final eval's 3,000,000: the logged train_samples (the
    # rules' convergence point for BERT) is used, and the difference flagged at its line (8)
    results_tree.add("sysA", "bert", 0, bert_run(3_100_000))
    r, msgs = load(results_tree.root)
    row = r.runs.row(0, named=True)
    assert row["samples_to_converge"] == 3_100_000
    q = r.quality.filter(r.quality["check"] == "progress_mismatch").row(0, named=True)
    assert q["first_line"] == 8 and "3100000" in q["detail"] and "3000000" in q["detail"]
    assert any("result_0.txt:8" in m for m in msgs)


def test_train_samples_that_is_not_a_count_is_flagged(results_tree):
    results_tree.add("sysA", "bert", 0, bert_run("lots"))
    r, _ = load(results_tree.root)
    row = r.runs.row(0, named=True)
    assert row["samples_to_converge"] == 3_000_000  # the final eval's count
    q = r.quality.filter(r.quality["check"] == "bad_train_samples").row(0, named=True)
    assert q["first_line"] == 8 and 'train_samples "lots" is not a count' in q["detail"]
