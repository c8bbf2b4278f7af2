"""trainperf.mlperf.convergence_hyperparameters against the rules YAML and the raw logs.

Expected values are read by hand: the closed GPT-3 rules of mlperf-logging 4.1
(``mlperf_logging/compliance_checker/training_4.1.0/closed_gpt3.yaml``: CHECK ``v['value'] == ...``
on max_sequence_length 2048, opt_name 'adam', opt_base_learning_rate 2e-5 or 3e-5,
opt_learning_rate_decay_schedule 'cosine with linear warmup', opt_adam_beta_1 0.9, opt_adam_beta_2
0.95, opt_adam_epsilon 1e-8, opt_gradient_clip_norm 1.0; global_batch_size has no CHECK) and the
``global_batch_size`` MLLOG events of the bundled logs (Eos v3.1 n64, v4.1 n32 and n64: 2048; v3.1 n96:
3072; v4.0 Eos-dfw n1344: 2688; published_results.csv lists the same GBS).
"""

import warnings

import polars as pl
import pytest
from helpers import GPT3_FIXED_BY_RULES, MLPERF

from trainperf import mlperf


@pytest.fixture(scope="module")
def conv():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mlperf.convergence_hyperparameters(mlperf.load_results(MLPERF))


def _row(conv, bench, key):
    (r,) = conv.filter((pl.col("benchmark") == bench) & (pl.col("key") == key)).rows(named=True)
    return r


def test_gpt3_fixed_keys_are_the_rules_yaml_checks(conv):
    g = conv.filter(pl.col("benchmark") == "gpt3")
    assert g.filter(pl.col("fixed_by_rules"))["key"].to_list() == GPT3_FIXED_BY_RULES
    # five Eos GPT-3 systems and Oracle's (v4.1, 1,536 GPUs)
    assert (g["n_systems"] == 6).all() and g["ruleset"].unique().to_list() == ["training_4.1.0"]
    lr = _row(conv, "gpt3", "opt_base_learning_rate")
    assert lr["allowed"] == "2e-05, 3e-05" and lr["values"] == "2e-05" and lr["all_meet_rule"]
    assert _row(conv, "gpt3", "opt_name")["values"] == "adam"
    assert _row(conv, "gpt3", "opt_adam_beta_2")["allowed"] == "0.95"
    # every fixed value logged by all six systems, and allowed
    fixed = g.filter(pl.col("fixed_by_rules"))
    assert (fixed["n_logged"] == 6).all() and fixed["all_meet_rule"].all()


def test_gpt3_free_keys_show_what_the_submissions_chose(conv):
    gbs = _row(conv, "gpt3", "global_batch_size")
    assert not gbs["fixed_by_rules"] and gbs["allowed"] is None and gbs["all_meet_rule"] is None
    assert not gbs["same_in_all"]
    assert sorted(gbs["values"].split(", ")) == [
        "2048 (3)",
        "2688 (1)",
        "3072 (2)",
    ]  # Eos v3.1 n96 and Oracle: 3072
    # the bundled logs carry no TP/PP and their systems JSON neither: one row per benchmark
    # (gpt3, llama2_70b_lora, llama31_405b) says so
    par = conv.filter(pl.col("key").str.starts_with("parallelism"))
    assert par.height == 3 and (par["values"] == "not in the log or systems JSON").all()


def test_lora_rank_fixed(conv):
    # closed_llama2_70b_lora.yaml: lora_rank CHECK v['value'] == 16; the three Eos LoRA systems
    # (1, 8 and 128 nodes) log 16
    r = _row(conv, "llama2_70b_lora", "lora_rank")
    assert r["fixed_by_rules"] and r["allowed"] == "16" and r["values"] == "16"
    assert r["n_logged"] == 3 and r["all_meet_rule"]


def test_one_benchmark():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = mlperf.convergence_hyperparameters(
            mlperf.load_results(MLPERF), benchmark="llama2_70b_lora"
        )
    assert set(c["benchmark"]) == {"llama2_70b_lora"}
