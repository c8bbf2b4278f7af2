"""trainperf.mlperf: real Eos logs against published results, and one synthetic file per log defect."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import warnings

import polars as pl
import pytest
from conftest import MLPERF, gpt3_run, mllog

from trainperf import mlperf
from trainperf.mlperf import MLPerfLogWarning, load_results


@pytest.fixture(scope="module")
def bundled():
    with warnings.catch_warnings():
        warnings.simplefilter("error", MLPerfLogWarning)  # the real logs load without a warning
        return load_results(MLPERF)


def _score(res, round_, system, benchmark):
    row = res.scores.filter(
        (pl.col("round") == round_)
        & (pl.col("system") == system)
        & (pl.col("benchmark") == benchmark)
    )
    assert row.height == 1, res.scores
    return row.row(0, named=True)


# Published scores, MLPerf Training results tables (mlcommons.org/benchmarks/training, rounds v3.1, v4.0,
# v4.1, NVIDIA closed division, "Available on-premise"/"cloud"), as relayed in
# ../shared/research/mfu_and_results.md §5.1 and §5.4 (minutes, 3 decimals).
PUBLISHED = [
    ("v4.1", "eos_n64_ngc24.09_nemo", "gpt3", 512, 49.795),
    ("v3.1", "eos_n96_ngc23.09_nemo", "gpt3", 768, 40.626),
    ("v4.0", "eos-dfw_n1344_ngc24.04_nemo", "gpt3", 10752, 3.709),
    ("v4.1", "eos_n8_ngc24.09_nemo", "llama2_70b_lora", 64, 4.573),
]


@pytest.mark.parametrize(("round_", "system", "benchmark", "n_gpus", "minutes"), PUBLISHED)
def test_scores_match_published_results(bundled, round_, system, benchmark, n_gpus, minutes):
    s = _score(bundled, round_, system, benchmark)
    assert s["n_accelerators"] == n_gpus
    assert s["score_min"] == pytest.approx(minutes, abs=0.0006)  # published to 3 decimals
    assert s["n_valid_runs"] == s["n_runs"] == s["n_required_runs"]


def test_time_to_train_of_one_log_by_hand(bundled):
    # v4.1 eos_n64 gpt3 result_0.txt: run_start time_ms 1727896646904 (line 600),
    # run_stop time_ms 1727899633389 (last line): (1727899633389 - 1727896646904) / 60000 = 49.77475 min.
    run = bundled.runs.filter(
        pl.col("result_file").str.ends_with(
            "v4.1/NVIDIA/results/eos_n64_ngc24.09_nemo/gpt3/result_0.txt"
        )
    )
    r = run.row(0, named=True)
    assert r["time_to_train_min"] == pytest.approx((1727899633389 - 1727896646904) / 60000)
    assert r["status"] == "success"
    # 24 evaluations every 24,576 sequences x 2048 tokens = 50,331,648 tokens: 24 x 50331648 = 1,207,959,552.
    assert r["n_evals"] == 24
    assert r["tokens_to_converge"] == 24 * 50331648
    assert r["samples_to_converge"] == 24 * 24576
    # systems/eos_n64_ngc24.09_nemo.json: number_of_nodes 64 x accelerators_per_node 8.
    assert r["n_nodes"] == 64 and r["n_accelerators"] == 512
    assert (
        r["global_batch_size"] == 2048 and r["max_sequence_length"] == 2048 and r["seed"] == 24842
    )
    # Target of the v4.1 gpt3 ruleset (closed_gpt3.yaml): log perplexity <= 2.69.
    assert r["eval_target"] == 2.69 and r["eval_target_met"] is True
    assert r["run_start"].isoformat().startswith("2024-10-02T19:17:26.904")


def test_llama_counts_samples(bundled):
    # v4.1 eos_n8 llama2_70b_lora result_0.txt: last eval_accuracy has samples_count 3840, value 0.92084;
    # the v4.1 ruleset target is eval loss <= 0.925.
    r = bundled.runs.filter(
        pl.col("result_file").str.ends_with("llama2_70b_lora/result_0.txt")
    ).row(0, named=True)
    assert r["samples_to_converge"] == 3840 and r["tokens_to_converge"] is None
    assert r["eval_value"] == pytest.approx(0.9208403825759888)
    assert r["eval_target"] == 0.925 and r["eval_target_met"] is True


def test_inputs_are_not_modified(bundled_copy):
    before = {
        p: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in bundled_copy.rglob("*")
        if p.is_file()
    }
    load_results(bundled_copy)
    after = {
        p: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in bundled_copy.rglob("*")
        if p.is_file()
    }
    assert before == after


def test_bundled_data_match_provenance():
    # SOURCES.md lists the sha256 of every copied file: the bundled copies must be byte-for-byte.
    table = (MLPERF / "SOURCES.md").read_text()
    rows = re.findall(r"\| `([^`]+)` \|.*\| `([0-9a-f]{64})` \|", table)
    assert len(rows) == 23
    for rel, sha in rows:
        assert hashlib.sha256((MLPERF / rel).read_bytes()).hexdigest() == sha, rel


def test_events_long_form(bundled):
    ev = bundled.events
    assert ev.schema["time_ms"] == pl.Float64 and ev.schema["line"] == pl.Int64
    first = ev.filter(pl.col("file").str.ends_with("eos_n64_ngc24.09_nemo/gpt3/result_0.txt")).row(
        0, named=True
    )
    # Line 1 of that file: cache_clear, value true, time_ms 1727896379069, metadata lineno 3.
    assert (first["line"], first["key"], first["value"], first["time_ms"]) == (
        1,
        "cache_clear",
        "true",
        1727896379069.0,
    )
    assert json.loads(first["metadata"]) == {"file": "<string>", "lineno": 3}


def test_step_times_v41(bundled):
    st = mlperf.step_times(
        bundled.events.filter(
            pl.col("file").str.ends_with("eos_n64_ngc24.09_nemo/gpt3/result_0.txt")
        )
    )
    # result_0.txt: the first tracked_stats event is {"train_step_timing in s": 9.360885620117188} at step 4194304.
    assert st.row(0, named=True)["step_time_s"] == pytest.approx(9.360885620117188)
    assert st.row(0, named=True)["step"] == 4194304
    # one step per global batch: 1,207,959,552 tokens / (2048 sequences x 2048 tokens) = 288 steps
    assert st.height == 1207959552 // (2048 * 2048) == 288
    assert st["step"].n_unique() == 288


# --- synthetic defect files -------------------------------------------------------------------------


def test_prefixes_cr_long_lines_and_noise(results_tree):
    lines = gpt3_run(minutes=12.0)
    noisy = []
    for i, line in enumerate(lines):
        noisy += [f"+ srun --ntasks=8 step {k}" for k in range(400)]  # shell traces
        noisy.append(':::SYSJSON {"submitter": "Acme"}')
        prefix = ["0: ", "Processing ", "[1,0]<stdout>:", ""][i % 4]
        noisy.append(prefix + line)
    noisy.insert(3, "x" * 20_000)  # a 20 KB line that is not MLLOG
    noisy.insert(
        5, mllog("tracked_stats", {"blob": "y" * 15_000}, 1_699_999_999_000)
    )  # a 15 KB MLLOG line
    p = results_tree.add("sysA", "gpt3", 0, noisy, newline="\r\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error", MLPerfLogWarning)
        res = load_results(p)
    r = res.runs.row(0, named=True)
    assert r["status"] == "success"
    assert r["time_to_train_min"] == pytest.approx(12.0)
    assert res.events.height == len(lines) + 1
    prefixes = set(res.events["prefix"].to_list())
    assert {"0:", "Processing", "[1,0]<stdout>:", ""} <= prefixes
    assert not any(v.endswith("\r") for v in res.events["metadata"].to_list())
    # source line numbers count physical lines: run_start is the 7th MLLOG line of gpt3_run
    rs = res.events.filter(pl.col("key") == "run_start").row(0, named=True)
    assert noisy[rs["line"] - 1].endswith(lines[6])


def test_rank_duplicates_and_backwards_time(results_tree):
    base = 1_700_000_000_000
    run = gpt3_run(t0=base, minutes=10.0)
    start_idx = next(i for i, line in enumerate(run) if '"run_start"' in line)
    # 8 ranks each log run_start; rank clocks disagree by up to 1.5 s, and the log order is not time order
    ranks = [
        mllog("run_start", None, base + d, event_type="INTERVAL_START")
        for d in (700, 0, -1500, 300, 200, 100, 50, 10)
    ]
    stops = [
        mllog("run_stop", None, base + 600_000 + d, {"status": "success"}, "INTERVAL_END")
        for d in (0, 900, -300)
    ]
    lines = run[:start_idx] + ranks + run[start_idx + 1 : -1] + stops
    res = load_results(results_tree.add("sysB", "gpt3", 0, lines))
    r = res.runs.row(0, named=True)
    # first run_start = base - 1500 ms; last run_stop = base + 600000 + 900 ms: (600900 + 1500) / 60000 min
    assert r["time_to_train_min"] == pytest.approx((600_900 + 1500) / 60_000)
    assert r["status"] == "success"
    assert r["n_evals"] == 3


def test_truncated_run_is_incomplete(results_tree):
    lines = gpt3_run()[:-1]  # no run_stop
    p = results_tree.add("sysC", "gpt3", 0, lines)
    with pytest.warns(MLPerfLogWarning, match="run_start without run_stop"):
        res = load_results(p)
    r = res.runs.row(0, named=True)
    assert r["status"] == "incomplete" and r["time_to_train_min"] is None and r["run_stop"] is None


def test_relaunch_is_flagged_not_added(results_tree):
    first = gpt3_run(t0=1_700_000_000_000, minutes=5.0)[
        :-1
    ]  # crashed after some evals, no run_stop
    second = gpt3_run(t0=1_700_001_000_000, minutes=10.0)
    p = results_tree.add("sysD", "gpt3", 0, first + second)
    with pytest.warns(MLPerfLogWarning, match="relaunch"):
        res = load_results(p)
    r = res.runs.row(0, named=True)
    assert r["status"] == "relaunched"
    # never the sum of the attempts, never run_stop minus the first run_start (26.67 min): the last attempt only
    assert r["time_to_train_min"] == pytest.approx(10.0)
    assert res.scores.row(0, named=True)["n_valid_runs"] == 0


def test_corrupted_json_line_warns_with_file_and_line(results_tree):
    lines = gpt3_run(minutes=8.0)
    lines.insert(
        8,
        ':::MLLOG {"namespace": "", "time_ms": 1700000100000, "event_type": "POINT_IN_TIME", "key": "eval_acc',
    )
    p = results_tree.add("sysE", "gpt3", 0, lines)
    with pytest.warns(MLPerfLogWarning, match=re.escape(f"{p}:9: corrupted MLLOG JSON")):
        res = load_results(p)
    r = res.runs.row(0, named=True)
    assert r["status"] == "success" and r["time_to_train_min"] == pytest.approx(8.0)
    assert r["n_warnings"] == 1 and len(res.warnings) == 1


def test_missing_time_ms_is_a_clear_warning_not_keyerror(results_tree):
    lines = gpt3_run(minutes=8.0)
    lines.insert(
        2,
        ':::MLLOG {"namespace": "", "event_type": "POINT_IN_TIME", "key": "seed", "value": 3, "metadata": {}}',
    )
    p = results_tree.add("sysF", "gpt3", 0, lines)
    with pytest.warns(
        MLPerfLogWarning, match=re.escape(f"{p}:3: MLLOG event lacks required field 'time_ms'")
    ):
        res = load_results(p)
    assert res.runs.row(0, named=True)["status"] == "success"


def test_file_without_events_is_parse_error(results_tree):
    p = results_tree.add("sysG", "gpt3", 0, ["no mllog here", "+ srun"])
    with pytest.warns(MLPerfLogWarning, match="no run_start"):
        res = load_results(p)
    assert res.runs.row(0, named=True)["status"] == "parse_error"


# --- scoring rules --------------------------------------------------------------------------------


def _times(res):
    return res.scores.row(0, named=True)


def test_olympic_mean_gpt3_is_median(results_tree):
    for i, m in enumerate([11.0, 10.0, 13.0]):
        results_tree.add("sysH", "gpt3", i, gpt3_run(minutes=m, seed=i))
    s = _times(load_results(results_tree.root))
    assert s["score_min"] == pytest.approx(11.0)  # sorted 10, 11, 13: drop 10 and 13


def test_one_failed_run_counts_as_dropped_slowest(results_tree):
    results_tree.add("sysI", "gpt3", 0, gpt3_run(minutes=10.0))
    results_tree.add("sysI", "gpt3", 1, gpt3_run(minutes=12.0))
    results_tree.add("sysI", "gpt3", 2, gpt3_run(minutes=9.0, status="aborted"))
    s = _times(load_results(results_tree.root))
    # successful 10, 12 plus one failure: drop the fastest (10) and the failure, leaving 12
    assert s["score_min"] == pytest.approx(12.0)
    assert (s["n_runs"], s["n_valid_runs"]) == (3, 2)


def test_two_failed_runs_give_no_score(results_tree):
    results_tree.add("sysJ", "gpt3", 0, gpt3_run(minutes=10.0))
    results_tree.add("sysJ", "gpt3", 1, gpt3_run(minutes=12.0, status="aborted"))
    results_tree.add("sysJ", "gpt3", 2, gpt3_run(minutes=9.0)[:-1])
    with pytest.warns(MLPerfLogWarning):
        s = _times(load_results(results_tree.root))
    assert s["score_min"] is None and "no score" in s["note"]


def test_llama_mean_of_middle_eight(results_tree):
    for i in range(10):
        lines = [
            line.replace('"gpt3"', '"llama2_70b_lora"')
            for line in gpt3_run(minutes=float(i + 1), seed=i)
        ]
        results_tree.add("sysK", "llama2_70b_lora", i, lines, nodes=8)
    s = _times(load_results(results_tree.root))
    # 1..10 minutes: drop 1 and 10, mean of 2..9 = 44 / 8 = 5.5
    assert s["score_min"] == pytest.approx(5.5)
    assert s["n_required_runs"] == 10 and s["n_accelerators"] == 64


def test_found_at_any_depth_with_round_from_folder(tmp_path):
    deep = tmp_path / "a" / "b" / "training_results_v4.1" / "NVIDIA"
    shutil.copytree(MLPERF / "v4.1" / "NVIDIA", deep)
    res = load_results(tmp_path)
    assert set(res.runs["round"].to_list()) == {"v4.1"}
    assert res.runs.height == 13


def test_sysjson_fallback_when_systems_json_missing(tmp_path):
    # v4.0 logs embed the system description as ':::SYSJSON' lines (number_of_nodes 1344, 8 per node).
    src = (
        MLPERF
        / "v4.0"
        / "NVIDIA"
        / "results"
        / "eos-dfw_n1344_ngc24.04_nemo"
        / "gpt3"
        / "result_0.txt"
    )
    dst = tmp_path / "v4.0" / "NVIDIA" / "results" / "eos-dfw_n1344_ngc24.04_nemo" / "gpt3"
    dst.mkdir(parents=True)
    shutil.copy(src, dst)
    res = load_results(tmp_path)
    assert res.runs.row(0, named=True)["n_accelerators"] == 1344 * 8


def test_missing_path_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        load_results(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="no result_.*txt files"):
        load_results(tmp_path)


def test_convergence_targets_from_rulesets():
    # closed_gpt3.yaml (v3.1, v4.1): v['value'] <= 2.69; closed_llama2_70b_lora.yaml (v4.1): <= 0.925
    assert mlperf.convergence_target("gpt3", "v3.1") == (2.69, "<=")
    assert mlperf.convergence_target("llama2_70b_lora", "v4.1") == (0.925, "<=")
    assert mlperf.convergence_target("no_such_benchmark") is None
