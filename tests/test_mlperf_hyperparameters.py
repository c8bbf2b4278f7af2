"""trainperf.mlperf.hyperparameters: the logged hyperparameters, parallelism, and what the rules fix."""

from __future__ import annotations

import shutil

import polars as pl
import pytest
from helpers import GPT3_FIXED_BY_RULES, MLPERF, gpt3_run, mllog

from trainperf import mlperf


@pytest.fixture(scope="module")
def eos64(tmp_path_factory):
    dst = tmp_path_factory.mktemp("hp") / "v4.1" / "NVIDIA"
    shutil.copytree(MLPERF / "v4.1/NVIDIA/systems", dst / "systems")
    shutil.copytree(
        MLPERF / "v4.1/NVIDIA/results/eos_n64_ngc24.09_nemo", dst / "results/eos_n64_ngc24.09_nemo"
    )
    return mlperf.load_results(dst.parent)


def test_eos_v41_gpt3_by_hand(eos64):
    # v4.1/NVIDIA/results/eos_n64_ngc24.09_nemo/gpt3/result_0.txt:
    #   583: {"key": "global_batch_size", "value": 2048, ...}
    #   584: {"key": "opt_name", "value": "adam", ...}
    #   585: {"key": "opt_base_learning_rate", "value": 2e-05, ...}
    #   596: {"key": "gradient_accumulation_steps", "value": 64, ...}
    h = mlperf.hyperparameters(eos64)
    assert h.height == 1
    r = h.row(0, named=True)
    assert (r["system"], r["benchmark"], r["n_accelerators"], r["n_runs"]) == (
        "eos_n64_ngc24.09_nemo",
        "gpt3",
        512,
        3,
    )
    assert r["global_batch_size"] == 2048 and r["gradient_accumulation_steps"] == 64
    assert r["opt_name"] == "adam" and r["opt_base_learning_rate"] == 2e-05
    # 2048 samples per step / 64 micro-batches = 32 samples per micro-step (dp x micro-batch)
    assert r["dp_x_micro_batch"] == 2048 // 64 == 32
    # neither the v4.1 log nor systems/eos_n64_ngc24.09_nemo.json names TP/PP/VP/micro-batch
    assert all(r[k] is None for k in ("tp", "pp", "vp", "cp", "ep", "micro_batch_size", "dp"))
    assert r["parallelism_source"] == "not in the log or systems JSON"
    # training_4.1.0/closed_gpt3.yaml pins (CHECK v['value'] == ...): max_sequence_length 2048,
    # opt_name 'adam', opt_base_learning_rate 2e-5 or 3e-5, opt_learning_rate_decay_schedule,
    # opt_adam_beta_1 0.9, opt_adam_beta_2 0.95, opt_adam_epsilon 1e-8, opt_gradient_clip_norm 1.0
    assert r["ruleset"] == "training_4.1.0"
    assert set(r["fixed_by_rules"].split(",")) == set(GPT3_FIXED_BY_RULES)


def test_long_form_units_rules_and_sources(eos64):
    long = mlperf.hyperparameters_long(eos64)
    by_key = {r["key"]: r for r in long.iter_rows(named=True)}
    lr = by_key["opt_base_learning_rate"]
    assert lr["allowed"] == "[2e-05, 3e-05]" and lr["meets_rule"] is True and lr["unit"] == "1"
    assert lr["source"].endswith("gpt3/result_0.txt:585")
    ga = by_key["gradient_accumulation_steps"]
    assert (ga["value"], ga["unit"], ga["check"], ga["fixed_by_rules"]) == (
        "64",
        "micro-batches",
        "v['value'] > 0",
        False,
    )
    assert (
        by_key["global_batch_size"]["unit"] == "samples"
        and not by_key["global_batch_size"]["varies"]
    )
    assert by_key["max_sequence_length"]["meets_rule"] is True


def test_parallelism_from_the_log_and_a_broken_rule(results_tree):
    # mllog constants (v5.0+): tensor_parallelism, pipeline_parallelism, micro_batch_size
    lines = gpt3_run()
    lines[1:1] = [
        mllog("tensor_parallelism", 4, 1_699_999_996_000),
        mllog("pipeline_parallelism", 8, 1_699_999_996_000),
        mllog("virtual_pipeline_parallelism", 12, 1_699_999_996_000),
        mllog("micro_batch_size", 1, 1_699_999_996_000),
        mllog("gradient_accumulation_steps", 128, 1_699_999_996_000),
        mllog("opt_name", "sgd", 1_699_999_996_000),
    ]
    results_tree.add("sysP", "gpt3", 0, lines, nodes=64, per_node=8)
    res = mlperf.load_results(results_tree.root)
    r = mlperf.hyperparameters(res).row(0, named=True)
    # 512 GPUs / (TP 4 x PP 8) = DP 16; 2048 / 128 = 16 = DP 16 x micro-batch 1
    assert (r["tp"], r["pp"], r["vp"], r["micro_batch_size"], r["dp"]) == (4, 8, 12, 1, 16)
    assert r["dp_x_micro_batch"] == 16 and r["parallelism_source"] == "log"
    long = mlperf.hyperparameters_long(res)
    opt = long.filter(pl.col("key") == "opt_name").row(0, named=True)
    assert opt["fixed_by_rules"] is True and opt["meets_rule"] is False
    # a key the rules require but the log lacks is a row with a null value
    beta = long.filter(pl.col("key") == "opt_adam_beta_1").row(0, named=True)
    assert beta["value"] is None and beta["n_runs"] == 0


def test_rules_read_from_the_yaml():
    rules = mlperf.hyperparameter_rules("llama2_70b_lora", "v4.1")
    # training_4.1.0/closed_llama2_70b_lora.yaml: lora_rank CHECK " v['value'] == 16"
    lora = rules.filter(pl.col("key") == "lora_rank").row(0, named=True)
    assert lora["fixed"] is True and lora["allowed"] == "[16]"
    assert "eval_accuracy" not in rules["key"].to_list()
    assert mlperf.hyperparameter_rules("no_such_benchmark").height == 0
