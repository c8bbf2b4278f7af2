"""Damaged MLPerf logs (issue 15): the right number, or the value excluded with a warning naming file and
line and a recorded status. Every expected value is computed by hand in the test."""

from __future__ import annotations

import json
import re
import shutil
import warnings

import polars as pl
import pytest
from helpers import MLPERF, gpt3_run, mllog

from trainperf import mlperf
from trainperf.mlperf import MLPerfLogWarning, load_results, loader
from trainperf.quality import QUALITY_SCHEMA

T0 = 1_700_000_000_000  # 2023-11-14T22:13:20Z, epoch ms
WRAP = 2**32  # a 32-bit millisecond counter wraps every 4,294,967,296 ms (49.7 days)


def _ranked_run(start_offsets, stop_offsets, minutes=7.7, status="success", bench="gpt3"):
    """A gpt3 run whose run_start and run_stop are logged once per rank, at T0 + offset (ms)."""
    run = gpt3_run(t0=T0, minutes=minutes, status=status)
    i = next(k for k, line in enumerate(run) if '"run_start"' in line)
    starts = [mllog("run_start", None, T0 + d, event_type="INTERVAL_START") for d in start_offsets]
    stops = [mllog("run_stop", None, d, {"status": status}, "INTERVAL_END") for d in stop_offsets]
    lines = run[:i] + starts + run[i + 1 : -1] + stops
    return [line.replace('"gpt3"', f'"{bench}"') for line in lines]


def _load(path, match=None):
    if match is None:
        with warnings.catch_warnings():
            warnings.simplefilter("error", MLPerfLogWarning)
            return load_results(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = load_results(path)
    assert all(issubclass(w.category, MLPerfLogWarning) for w in caught), caught
    assert any(re.search(match, str(w.message)) for w in caught), [str(w.message) for w in caught]
    return res


def _quality(res, check):
    rows = res.quality.filter(pl.col("check") == check)
    assert rows.height == 1, res.quality
    return rows.row(0, named=True)


# --- duplicated run_start / run_stop with one damaged rank ------------------------------------------

STOP = T0 + int(7.7 * 60_000)  # 7.7 minutes after T0 = 462,000 ms
START_SKEW = [0, 120, 340, 80, 15, 260, 45, 190]  # 8 ranks' run_start, ms after T0
STOP_SKEW = [0, 310, 95, 40, 220, 150, 5, 275]  # 8 ranks' run_stop, ms after STOP


def _expected_minutes(starts, stops):
    # earliest agreeing run_start to latest agreeing run_stop (the MLPerf summarizer's time)
    return (max(stops) - min(starts)) / 60_000


@pytest.mark.parametrize(
    ("damaged_start", "check"),
    [
        (T0 + 120 + WRAP, "time_out_of_order"),  # rank 1's time wrapped forward by 2**32 ms
        (T0 + 120 - WRAP, "time_out_of_order"),  # ... or backward
        (0, "time_out_of_range"),  # zero
        ((T0 + 120) % WRAP, "time_out_of_range"),  # truncated to 32 bits: 1,230,379,456 ms (1970)
        (17_000_000_000_000, "time_out_of_range"),  # garbage (year 2508)
    ],
)
def test_eight_ranks_one_damaged_run_start(results_tree, damaged_start, check):
    starts = [T0 + d for d in START_SKEW]
    starts_logged = list(starts)
    starts_logged[1] = damaged_start
    stops = [STOP + d for d in STOP_SKEW]
    lines = _ranked_run([s - T0 for s in starts_logged], stops)
    p = results_tree.add("sysA", "gpt3", 0, lines)
    res = _load(
        p, match=re.escape(f"{p}:{6 + 1 + 1}:")
    )  # 6 lines before run_start: rank 1 on line 8
    r = res.runs.row(0, named=True)
    # the 7 good ranks: earliest start T0 + 0, latest stop STOP + 310 ms
    good = [s for k, s in enumerate(starts) if k != 1]
    expected = _expected_minutes(good, stops)
    assert expected == pytest.approx((462_000 + 310) / 60_000)  # 7.70517 min
    assert r["time_to_train_min"] == pytest.approx(expected)
    assert r["status"] == "success" and check in r["quality"]
    q = _quality(res, check)
    assert (q["action"], q["first_line"], q["source"]) == ("excluded", 8, str(p))
    # the event stays, its time is null
    assert res.events.filter(pl.col("line") == 8)["time_ms"].to_list() == [None]


def test_eight_ranks_one_run_stop_garbage(results_tree):
    stops = [STOP + d for d in STOP_SKEW]
    logged = list(stops)
    logged[5] = STOP + 150 + 10 * 3_600_000  # 10 h late: in range, out of order
    p = results_tree.add("sysB", "gpt3", 0, _ranked_run(START_SKEW, logged))
    res = _load(p, match="time_out_of_order")
    r = res.runs.row(0, named=True)
    good = [s for k, s in enumerate(stops) if k != 5]
    assert r["time_to_train_min"] == pytest.approx(
        _expected_minutes([T0 + d for d in START_SKEW], good)
    )
    assert r["status"] == "success"


def test_duplicate_outlier_within_the_order_tolerance_is_outvoted(results_tree):
    # rank 2's run_stop 5 minutes late: plausible in time order, but 7 of 8 ranks agree within 60 s
    stops = [STOP + d for d in STOP_SKEW]
    logged = list(stops)
    logged[2] = STOP + 95 + 5 * 60_000
    p = results_tree.add("sysC", "gpt3", 0, _ranked_run(START_SKEW, logged))
    res = _load(p, match="duplicate_time_outlier")
    r = res.runs.row(0, named=True)
    good = [s for k, s in enumerate(stops) if k != 2]
    assert r["time_to_train_min"] == pytest.approx(
        _expected_minutes([T0 + d for d in START_SKEW], good)
    )
    q = _quality(res, "duplicate_time_outlier")
    assert q["action"] == "excluded" and "7 that agree" in q["detail"]
    # the score takes the corrected time and says so
    assert "agreeing duplicates" in res.scores.row(0, named=True)["note"]


def test_no_majority_is_damaged_not_a_number(results_tree):
    # two ranks' run_start 10 minutes apart: neither can be trusted
    p = results_tree.add("sysD", "gpt3", 0, _ranked_run([0, 600_000], [STOP]))
    res = _load(p, match="no majority agrees")
    r = res.runs.row(0, named=True)
    assert r["status"] == "damaged" and r["time_to_train_min"] is None
    assert _quality(res, "duplicate_time_disagrees")["action"] == "flagged"


def test_single_run_stop_wrapped_is_damaged_and_not_scored(results_tree):
    # one run_stop, its time wrapped by 2**32 ms; before the fix: 7.7 + 71,582.8 minutes, "success"
    lines = gpt3_run(t0=T0, minutes=7.7)
    lines[-1] = mllog("run_stop", None, STOP + WRAP, {"status": "success"}, "INTERVAL_END")
    lines += [mllog("train_loss", 2.7, STOP + 100 * k) for k in range(8)]  # the log goes on
    results_tree.add("sysE", "gpt3", 0, gpt3_run(t0=T0, minutes=10.0, seed=1))
    results_tree.add("sysE", "gpt3", 1, gpt3_run(t0=T0, minutes=11.0, seed=2))
    p = results_tree.add("sysE", "gpt3", 2, lines)
    res = _load(results_tree.root, match=re.escape(f"{p}:11: time_ms"))
    r = res.runs.filter(pl.col("result_file") == str(p)).row(0, named=True)
    assert r["status"] == "damaged" and r["time_to_train_min"] is None
    s = res.scores.row(0, named=True)
    # 10 and 11 minutes plus one failed run: the failure is the dropped slowest, 10 the dropped fastest
    assert s["score_min"] == pytest.approx(11.0)
    assert "1 run damaged" in s["note"] and s["n_valid_runs"] == 2


def test_damaged_run_stop_metadata_is_an_unknown_outcome(results_tree):
    lines = gpt3_run(t0=T0, minutes=7.7)
    lines[-1] = lines[-1].replace(
        '"metadata": {"file": "train.py", "lineno": 1, "status": "success"}', '"metadata": ["x"]'
    )
    assert '"metadata": ["x"]' in lines[-1]
    p = results_tree.add("sysM", "gpt3", 0, lines)
    res = _load(p, match="run's status is unknown")
    r = res.runs.row(0, named=True)
    # the times are fine (7.7 min), the outcome is not known: damaged, not "aborted"
    assert r["status"] == "damaged" and r["time_to_train_min"] == pytest.approx(7.7)


def test_final_eval_with_unreadable_progress_is_still_the_final_eval(results_tree):
    lines = gpt3_run(t0=T0, minutes=9.0)
    lines[-2] = lines[-2].replace('"epoch_num": 150994944', '"epoch_num": NaN')
    assert "NaN" in lines[-2]
    p = results_tree.add("sysO", "gpt3", 0, lines)
    res = _load(p, match="bad_value")
    r = res.runs.row(0, named=True)
    # the last eval (2.75 - 3 x 0.03 = 2.66) stays the final one; its token count is unknown
    assert r["eval_value"] == pytest.approx(2.66) and r["tokens_to_converge"] is None


def test_stop_before_start_is_damaged(results_tree):
    lines = gpt3_run(t0=T0, minutes=7.7)
    lines[-1] = mllog("run_stop", None, T0 - 1, {"status": "success"}, "INTERVAL_END")
    p = results_tree.add("sysF", "gpt3", 0, lines)
    res = _load(p, match="run_stop is not after run_start")
    assert res.runs.row(0, named=True)["status"] == "damaged"


# --- the final evaluation chosen by its progress key, not its timestamp -----------------------------


def test_garbage_eval_timestamp_does_not_pick_the_final_eval(results_tree):
    # gpt3_run: evals at 1, 2, 3 x 50,331,648 tokens; give the 2nd a time 10 h in the future
    lines = gpt3_run(t0=T0, minutes=9.0)
    k = [i for i, line in enumerate(lines) if '"eval_accuracy"' in line][1]
    ev = json.loads(lines[k].split(" ", 1)[1])
    ev["time_ms"] += 10 * 3_600_000
    lines[k] = ":::MLLOG " + json.dumps(ev)
    # and a duplicate of the last eval (another rank) with time 0
    last = json.loads(lines[-2].split(" ", 1)[1])
    lines.insert(len(lines) - 1, ":::MLLOG " + json.dumps({**last, "time_ms": 0}))
    p = results_tree.add("sysG", "gpt3", 0, lines)
    res = _load(p, match="time_ms")
    r = res.runs.row(0, named=True)
    # final eval: 3 x 50,331,648 = 150,994,944 tokens / 2048 = 73,728 samples; value 2.75 - 3 x 0.03
    assert r["tokens_to_converge"] == 3 * 50_331_648
    assert r["samples_to_converge"] == 3 * 50_331_648 // 2048 == 73_728
    assert r["eval_value"] == pytest.approx(2.66) and r["eval_target_met"] is True
    assert r["n_evals"] == 3  # the duplicate has the same value and metadata
    assert r["time_to_train_min"] == pytest.approx(9.0)
    curve = mlperf.eval_curve(res)
    assert curve["progress"].to_list() == [50_331_648, 2 * 50_331_648, 3 * 50_331_648]


def test_progress_out_of_order_is_flagged(results_tree):
    lines = gpt3_run(t0=T0, minutes=9.0)
    k = [i for i, line in enumerate(lines) if '"eval_accuracy"' in line]
    lines[k[0]], lines[k[1]] = lines[k[1]], lines[k[0]]  # 2nd eval logged before the 1st
    p = results_tree.add("sysH", "gpt3", 0, lines)
    res = _load(p, match="progress_out_of_order")
    assert res.runs.row(0, named=True)["tokens_to_converge"] == 3 * 50_331_648


# --- llama31_*: progress in samples_count (rules of round v5.0) ------------------------------------


def test_llama31_counts_samples(tmp_path):
    d = tmp_path / "training_results_v5.0" / "Acme" / "results" / "sysL" / "llama31_405b"
    d.mkdir(parents=True)
    lines = [
        mllog("submission_benchmark", "llama31_405b", T0 - 5000),
        mllog("global_batch_size", 1152, T0 - 4000),
        mllog("max_sequence_length", 8192, T0 - 4000),
        mllog("run_start", None, T0, event_type="INTERVAL_START"),
    ]
    # evals every 46,080 samples (v5.0 rules: eval every 46,080 sequences); target log ppl <= 5.6
    for i, v in enumerate([5.9, 5.7, 5.58], start=1):
        lines.append(mllog("eval_accuracy", v, T0 + i * 600_000, {"samples_count": 46_080 * i}))
    lines.append(mllog("run_stop", None, T0 + 1_800_000, {"status": "success"}, "INTERVAL_END"))
    (d / "result_0.txt").write_text("\n".join(lines) + "\n")
    with pytest.warns(MLPerfLogWarning, match="no systems"):
        res = load_results(tmp_path)
    r = res.runs.row(0, named=True)
    assert r["round"] == "v5.0" and r["time_to_train_min"] == pytest.approx(30.0)
    assert r["samples_to_converge"] == 3 * 46_080 and r["tokens_to_converge"] is None
    assert r["eval_target"] == 5.6 and r["eval_target_met"] is True
    assert mlperf.progress_key("llama31_405b", "v5.0") == ("samples_count", "samples")
    curve = mlperf.eval_curve(res)
    assert set(curve["progress_unit"].to_list()) == {"samples"}
    assert curve["progress"].to_list() == [46_080, 92_160, 138_240]


# --- infinite, NaN and out-of-range numbers -------------------------------------------------------


def test_nan_inf_and_huge_numbers_are_excluded_not_crashes(results_tree):
    lines = gpt3_run(t0=T0, minutes=8.0)
    raw = {
        1: '{"namespace": "", "time_ms": 1699999996000, "event_type": "POINT_IN_TIME", "key": "global_batch_size", "value": 1e400, "metadata": {}}',
        2: '{"namespace": "", "time_ms": 1699999996000, "event_type": "POINT_IN_TIME", "key": "max_sequence_length", "value": NaN, "metadata": {}}',
        3: '{"namespace": "", "time_ms": 1699999996000, "event_type": "POINT_IN_TIME", "key": "seed", "value": 100000000000000000000000000000, "metadata": {}}',
    }
    for i, text in raw.items():
        lines[i] = ":::MLLOG " + text
    lines.insert(5, ':::MLLOG {"time_ms": NaN, "key": "x", "value": 1, "metadata": {}}')
    lines.insert(5, ':::MLLOG {"time_ms": Infinity, "key": "x", "value": 1, "metadata": {}}')
    lines.insert(5, ':::MLLOG {"time_ms": "abc", "key": "x", "value": 1, "metadata": []}')
    lines.insert(
        5,
        ':::MLLOG {"time_ms": 1699999999000, "key": "x", "value": '
        + "9" * 400
        + ', "metadata": {}}',
    )
    p = results_tree.add("sysN", "gpt3", 0, lines)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        res = load_results(p)
    r = res.runs.row(0, named=True)
    assert r["global_batch_size"] is None and r["max_sequence_length"] is None and r["seed"] is None
    assert r["status"] == "success" and r["time_to_train_min"] == pytest.approx(8.0)
    checks = set(res.quality["check"].to_list())
    assert {"bad_value", "time_invalid", "bad_field_type", "value_out_of_range"} <= checks
    assert all(isinstance(x.message, MLPerfLogWarning) for x in w)
    assert all(str(p) in str(x.message) for x in w)
    bad = _quality(res, "bad_value")
    assert bad["n_samples"] == 3 and bad["first_line"] == 2  # gbs (line 2), seq (3), seed (4)


# --- damaged files: a parse_error row, the others still load and score ------------------------------


def _tree_with_one_damaged(results_tree, damaged: bytes | None):
    for i, m in enumerate([10.0, 11.0, 12.0]):
        results_tree.add("sysI", "gpt3", i, gpt3_run(minutes=m, seed=i))
    bad = results_tree.root / "Acme" / "results" / "sysJ" / "gpt3" / "result_0.txt"
    bad.parent.mkdir(parents=True)
    if damaged is None:
        bad.mkdir()  # a folder named like a result file
    else:
        bad.write_bytes(damaged)
    return bad


@pytest.mark.parametrize(
    "damaged",
    [
        None,
        b"\x00\xff\xfe" * 1000,
        b':::MLLOG {"namespace": "", "time_ms": 17000',
        b"",
    ],
    ids=["folder", "binary", "truncated", "empty"],
)
def test_one_damaged_file_never_costs_the_others(results_tree, damaged):
    bad = _tree_with_one_damaged(results_tree, damaged)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        res = load_results(results_tree.root)
    assert res.runs.height == 4
    b = res.runs.filter(pl.col("result_file") == str(bad)).row(0, named=True)
    assert b["status"] == "parse_error"
    rows = res.quality.filter((pl.col("source") == str(bad)) & (pl.col("action") == "parse_error"))
    assert rows.height == 1 and rows["detail"][0]
    good = res.scores.filter(pl.col("system") == "sysI").row(0, named=True)
    assert good["score_min"] == pytest.approx(11.0) and good["n_valid_runs"] == 3


def test_a_reader_bug_is_isolated_and_named(results_tree, monkeypatch):
    bad = _tree_with_one_damaged(results_tree, b"x")
    real = loader.read_log

    def buggy(path, data=None, memo=None):
        if str(path) == str(bad):
            raise KeyError("boom")
        return real(path, data, memo)

    monkeypatch.setattr(loader, "read_log", buggy)
    with pytest.warns(MLPerfLogWarning, match="internal error KeyError"):
        res = load_results(results_tree.root)
    assert res.scores.filter(pl.col("system") == "sysI")["score_min"][0] == pytest.approx(11.0)
    assert _quality(res, "internal_error")["action"] == "parse_error"


def test_damaged_system_description_and_scaling(results_tree):
    p = results_tree.add("sysK", "gpt3", 0, gpt3_run(minutes=10.0))
    (results_tree.root / "Acme" / "systems" / "sysK.json").write_text('["not", "an object"]')
    (p.parent / "scaling.json").write_text('{"scaling_factor": "x"}')
    with pytest.warns(MLPerfLogWarning, match="sysK.json is not a JSON object"):
        res = load_results(results_tree.root)
    assert res.runs.row(0, named=True)["n_accelerators"] is None
    s = res.scores.row(0, named=True)
    assert s["score_min"] is None and "scaling.json" in s["note"]


def test_invalid_utf8_is_corrected_and_flagged(results_tree):
    lines = gpt3_run(minutes=10.0)
    data = ("\n".join(lines) + "\n").encode().replace(b'"train.py"', b'"tr\xffin.py"', 1)
    p = results_tree.add("sysU", "gpt3", 0, [])
    p.write_bytes(data)
    res = _load(p, match="not UTF-8")
    assert res.runs.row(0, named=True)["time_to_train_min"] == pytest.approx(10.0)
    assert _quality(res, "invalid_utf8")["action"] == "corrected"


# --- the data-quality frame --------------------------------------------------------------------------


def test_quality_frame_and_summary(results_tree):
    good = results_tree.add("sysQ", "gpt3", 0, gpt3_run(minutes=10.0))
    lines = gpt3_run(minutes=10.0)
    lines.insert(3, ':::MLLOG {"time_ms": 1699999999000, "key": "x"')  # cut off
    lines.insert(3, ':::MLLOG {"time_ms": 1699999999000, "key": "x"')
    bad = results_tree.add("sysQ", "gpt3", 1, lines)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        res = load_results(results_tree.root)
    assert dict(res.quality.schema) == QUALITY_SCHEMA
    q = _quality(res, "corrupted_json")
    # one row for the file: 2 lines (4 and 5), both skipped
    assert (q["source"], q["n_lines"], q["first_line"], q["action"]) == (str(bad), 2, 4, "excluded")
    s = mlperf.quality_summary(res)
    by_file = {r["result_file"]: r for r in s.iter_rows(named=True)}
    assert (
        by_file[str(bad)]["n_skipped_lines"] == 2
        and by_file[str(bad)]["checks"] == "corrupted_json"
    )
    assert by_file[str(good)]["n_warnings"] == 0 and by_file[str(good)]["checks"] == ""
    assert by_file[str(bad)]["status"] == "success"


def test_real_log_with_a_wrapped_duplicate(tmp_path):
    # a copy of a bundled Eos log (v4.1 eos_n64 gpt3 result_0.txt) with its run_start duplicated by a
    # rank whose time is wrapped: run_start line 600 time_ms 1727896646904, run_stop 1727899633389 (line 1082)
    src = MLPERF / "v4.1" / "NVIDIA"
    dst = tmp_path / "v4.1" / "NVIDIA"
    (dst / "results" / "eos_n64_ngc24.09_nemo" / "gpt3").mkdir(parents=True)
    shutil.copytree(src / "systems", dst / "systems")
    lines = (src / "results/eos_n64_ngc24.09_nemo/gpt3/result_0.txt").read_text().splitlines()
    assert '"run_start"' in lines[599] and "1727896646904" in lines[599]
    lines.insert(600, lines[599].replace("1727896646904", str(1727896646904 + WRAP)))
    f = dst / "results/eos_n64_ngc24.09_nemo/gpt3/result_0.txt"
    f.write_text("\n".join(lines) + "\n")
    res = _load(f, match=re.escape(f"{f}:601:"))
    r = res.runs.row(0, named=True)
    assert r["time_to_train_min"] == pytest.approx(
        (1727899633389 - 1727896646904) / 60000
    )  # 49.77475
    assert r["status"] == "success"
