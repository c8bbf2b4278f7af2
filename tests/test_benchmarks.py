"""Benchmark names and run counts of every MLPerf Training ruleset 3.1.0-6.1.0, against
mlcommons/logging's own data (the installed ``mlperf-logging``'s ``benchmark_meta`` and its result
summarizer's benchmark columns, ``tests/data/mlperf/benchmark_names_upstream.csv``, derived from
``mlcommons/logging`` by ``scripts/derive_benchmark_names.py``)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import polars as pl
import pytest
from mlperf_logging import benchmark_meta

from trainperf.benchmarks import BENCHMARK_NAMES, benchmark_name
from trainperf.mlperf.loader import RUN_SCHEMA
from trainperf.mlperf.rules import init_allowance_min
from trainperf.mlperf.scores import score_runs

UPSTREAM = Path(__file__).parent / "data" / "mlperf" / "benchmark_names_upstream.csv"
RULESETS = ("3.1", "4.0", "4.1", "5.0", "5.1", "6.0", "6.1")


def _key(name: str) -> str:
    return re.sub(r"[^0-9a-z]", "", name.lower())


def test_every_benchmark_of_every_ruleset_has_a_readable_name():
    ids = set()
    for rs in RULESETS:
        ids |= set(benchmark_meta.get_allowed_benchmarks("training", rs))
    # 6.0 added the two MoE pre-training benchmarks, 6.1 the GRPO one (mlcommons/logging)
    assert {"llama31_8b", "flux1", "gpt_oss_20b", "deepseekv3_671b", "qwen35_397b_grpo"} <= ids
    missing = sorted(i for i in ids if i not in BENCHMARK_NAMES)
    assert not missing, f"no readable name for {missing}"
    assert benchmark_name("llama31_8b") == "Llama 3.1 8B"
    assert benchmark_name("deepseekv3_671b") == "DeepSeek-V3 671B"
    assert benchmark_name("no_such_benchmark") == "no_such_benchmark"


def test_names_agree_with_the_result_summarizer():
    with UPSTREAM.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert {r["ruleset"] for r in rows} == {f"{r}.0" for r in RULESETS}
    assert all(re.fullmatch(r"[0-9a-f]{64}", r["sha256"]) for r in rows)
    for r in rows:
        # the summarizer's column ("Llama31-8b", "LLama2-70B-LoRA", "GPT3") is ours without the
        # size or variant readers add ("GPT-3 175B", "ResNet-50", "BERT-Large")
        ours = _key(BENCHMARK_NAMES[r["benchmark"]])
        assert ours.startswith(_key(r["upstream_name"])), (r["ruleset"], r["benchmark"], ours)


# training_rules.adoc (mlcommons/training_policies@d73e20f, "Minimum Number of Runs"): Text to Image
# 10, Small LLM MoE pretraining 10, Small LLM pretraining 10, LLM pretraining 3, LLM MoE
# pretraining 3, LLM finetuning 10, Recommendation 10.
RUNS_BY_RULES = {
    "flux1": 10,
    "gpt_oss_20b": 10,
    "llama31_8b": 10,
    "llama31_405b": 3,
    "deepseekv3_671b": 3,
    "llama2_70b_lora": 10,
    "dlrm_dcnv2": 10,
}


@pytest.mark.parametrize("bench", sorted(RUNS_BY_RULES))
def test_run_count_and_olympic_score_follow_the_rules(bench, tmp_path):
    need = RUNS_BY_RULES[bench]
    assert benchmark_meta.get_result_file_counts("training")[bench] == need
    times = [float(10 + i) for i in range(need)]  # 10, 11, ... minutes
    folder = tmp_path / "results" / "sys" / bench
    folder.mkdir(parents=True)
    rows = [
        {
            "round": "v6.0",
            "submitter": "X",
            "system": "sys",
            "benchmark": bench,
            "result_file": str(folder / f"result_{i}.txt"),
            "n_accelerators": 8,
            "time_to_train_min": t,
            "status": "success",
        }
        for i, t in enumerate(times)
    ]
    scores = score_runs(pl.DataFrame(rows, schema=RUN_SCHEMA))
    s = scores.row(0, named=True)
    assert s["n_required_runs"] == need
    # drop the fastest and the slowest, mean of the rest: 3 runs -> 11; 10 runs -> mean(11..18) = 14.5
    assert s["score_min"] == pytest.approx(sum(times[1:-1]) / (need - 2))
    # one run short: the score says so
    short = score_runs(pl.DataFrame(rows[:-1], schema=RUN_SCHEMA)).row(0, named=True)
    assert f"only {need - 1} of the {need} runs the rules require" in short["note"]


@pytest.mark.parametrize("rnd", ["v3.1", "v4.1", "v5.1", "v6.0", "v6.1"])
def test_init_allowance_from_the_compliance_checker(rnd):
    # training_rules.adoc "Run result": up to 30 minutes of initialisation (4 hours in open)
    assert init_allowance_min(rnd) == 30
    assert init_allowance_min(rnd, "open") == 240
