"""Tests for the memory model in trainperf.flops.

Hand arithmetic from ZeRO (arXiv:1910.02054 §3.1), Megatron-LM
(NVIDIA/Megatron-LM@d98e8a64:docs/user-guide/features/dist_optimizer.md:14-20: bf16 params with
fp32 grads, 18 B/param, 6 + 12/d distributed), Korthikanti et al. (arXiv:2205.05198 Table 2) and
the MLPerf GPT-3 layout TP=4 × PP=8; 175e9 × 18 B = 3.15 TB > 4 nodes × 8 × 80 GB = 2.56 TB.
"""

import pytest

from trainperf.flops import (
    GPT3_175B,
    RECIPES,
    activation_bytes_per_gpu,
    activation_bytes_per_layer,
    bytes_per_gpu,
    memory_vs_nodes,
    min_nodes_for_model_state,
    model_state_bytes,
    model_state_bytes_per_gpu,
    param_count,
)

N_GPT3 = param_count(GPT3_175B)  # 174,604,259,328 (checked in test_flops.py)


def test_recipes_bytes_per_param():
    # bf16 weights 2 + fp32 grads 4 + fp32 master 4 + Adam m,v 8 = 18
    assert RECIPES["mixed_adam_fp32_grads"].bytes_per_param == 18
    # ZeRO: 2Ψ + 2Ψ + 12Ψ = 16
    assert RECIPES["mixed_adam"].bytes_per_param == 16
    with pytest.raises(ValueError, match="known"):
        model_state_bytes(GPT3_175B, "sgd")


def test_gpt3_does_not_fit_on_four_nodes():
    # talk: 175e9 × 18 B = 3.15e12 B (3.15 TB); 4 nodes × 8 GPUs × 80e9 B = 2.56e12 B
    state = model_state_bytes(GPT3_175B, "mixed_adam_fp32_grads", n_params=175e9)
    assert state == pytest.approx(3.15e12, rel=1e-12)
    assert state > 4 * 8 * 80e9 == 2.56e12
    # with the counted N = 174.6e9: 174,604,259,328 × 18 = 3.1429e12 (3.14 TB)
    assert model_state_bytes(GPT3_175B) == pytest.approx(3.1429e12, rel=1e-4)
    # 16 B/param: 174.6e9 × 16 = 2.79e12 — still > 2.56e12
    assert model_state_bytes(GPT3_175B, "mixed_adam") == pytest.approx(2.7937e12, rel=1e-4)
    assert model_state_bytes(GPT3_175B, "mixed_adam") > 2.56e12


def test_min_nodes_for_model_state():
    # ceil(3.15e12 / (8 × 80e9)) = ceil(4.92) = 5 nodes (perfect sharding lower bound)
    assert min_nodes_for_model_state(GPT3_175B, n_params=175e9) == 5
    assert min_nodes_for_model_state(GPT3_175B) == 5
    # 16 B/param: ceil(2.79e12 / 640e9) = ceil(4.37) = 5
    assert min_nodes_for_model_state(GPT3_175B, "mixed_adam") == 5
    # H200 141 GB: ceil(3.1429e12 / (8 × 141e9)) = ceil(2.79) = 3
    assert min_nodes_for_model_state(GPT3_175B, gpu_memory_bytes=141e9) == 3


def test_sharded_model_state_mlperf_layout():
    # TP=4 × PP=8 = 32-way model parallel: N/32 = 5.4564e9 params per GPU
    per_gpu_params = N_GPT3 / 32
    assert per_gpu_params == pytest.approx(5.46e9, rel=1e-3)
    # DP=1: 18 B → 98.2e9 B > 80e9
    assert model_state_bytes_per_gpu(GPT3_175B, tp=4, pp=8) == pytest.approx(18 * per_gpu_params)
    assert model_state_bytes_per_gpu(GPT3_175B, tp=4, pp=8) > 80e9
    # distributed optimizer (ZeRO-1): 6 + 12/d B/param → d=2: 12, d=4: 9, d=8: 7.5
    for dp, bpp in ((2, 12), (4, 9), (8, 7.5)):
        got = model_state_bytes_per_gpu(GPT3_175B, tp=4, pp=8, dp=dp, zero_stage=1)
        assert got == pytest.approx(bpp * per_gpu_params), dp
    # d=2 → 12 × 5.4564e9 = 65.5e9 B
    assert model_state_bytes_per_gpu(GPT3_175B, tp=4, pp=8, dp=2, zero_stage=1) == pytest.approx(
        65.5e9, rel=1e-3
    )
    # ZeRO-3 with d=4: 18/4 = 4.5 B/param
    assert model_state_bytes_per_gpu(GPT3_175B, tp=4, pp=8, dp=4, zero_stage=3) == pytest.approx(
        4.5 * per_gpu_params
    )
    with pytest.raises(ValueError):
        model_state_bytes_per_gpu(GPT3_175B, zero_stage=4)
    with pytest.raises(ValueError):
        model_state_bytes_per_gpu(GPT3_175B, tp=0)


def test_activation_bytes_korthikanti():
    # s·b·h = 2048 × 1 × 12288 = 25,165,824; 5·a·s/h = 5 × 96 × 2048 / 12288 = 80
    sbh = 25_165_824
    # no recompute, no parallelism: sbh·(34 + 80) = 2,868,903,936
    assert activation_bytes_per_layer(GPT3_175B) == sbh * 114
    # TP=4 with SP: /4 → 717,225,984 (0.72 GB)
    assert activation_bytes_per_layer(GPT3_175B, tp=4) == sbh * 114 / 4
    # flash attention drops 5as/h: 34/4 × sbh = 213,909,504 (0.21 GB)
    assert activation_bytes_per_layer(GPT3_175B, tp=4, flash_attention=True) == 213_909_504
    # TP=4 without SP: sbh·(10 + 24/4 + 80/4) = 36·sbh
    assert activation_bytes_per_layer(GPT3_175B, tp=4, sequence_parallel=False) == 36 * sbh
    # selective: 34·sbh; full: 2·sbh
    assert activation_bytes_per_layer(GPT3_175B, recompute="selective") == 34 * sbh
    assert activation_bytes_per_layer(GPT3_175B, recompute="full") == 2 * sbh
    with pytest.raises(ValueError):
        activation_bytes_per_layer(GPT3_175B, recompute="x")


def test_activation_bytes_per_gpu_pipeline():
    # 1F1B: first stage holds l layers' worth: 96 × 213,909,504 = 20,535,312,384
    per_layer = 213_909_504
    assert activation_bytes_per_gpu(GPT3_175B, tp=4, pp=8, flash_attention=True) == pytest.approx(
        96 * per_layer
    )
    # interleaved v=6: × (1 + 7/48)
    assert activation_bytes_per_gpu(
        GPT3_175B, tp=4, pp=8, virtual_pp=6, flash_attention=True
    ) == pytest.approx(96 * per_layer * (1 + 7 / 48))


def test_bytes_per_gpu_total():
    m = bytes_per_gpu(GPT3_175B, tp=4, pp=8, dp=8, zero_stage=1)
    # 7.5 × N/32 + 96 × 213,909,504
    assert m.model_state_bytes == pytest.approx(7.5 * N_GPT3 / 32)
    assert m.total_bytes == pytest.approx(7.5 * N_GPT3 / 32 + 96 * 213_909_504)


def test_memory_vs_nodes_frame():
    df = memory_vs_nodes(GPT3_175B, nodes=[4, 5, 8])
    assert df.columns == [
        "n_nodes",
        "n_gpus",
        "aggregate_hbm_bytes",
        "model_state_bytes",
        "bytes_per_gpu_perfect",
        "fits_perfect",
        "dp",
        "bytes_per_gpu_layout",
        "fits_layout",
        "gpu_memory_bytes",
    ]
    rows = {r["n_nodes"]: r for r in df.iter_rows(named=True)}
    assert rows[4]["aggregate_hbm_bytes"] == 2.56e12
    assert rows[4]["fits_perfect"] is False  # 3.14e12 / 32 = 98.2e9 > 80e9
    assert rows[5]["fits_perfect"] is True  # 3.14e12 / 40 = 78.6e9 ≤ 80e9
    assert rows[5]["dp"] is None  # 40 GPUs is not a multiple of tp·pp = 32
    assert rows[4]["dp"] == 1 and rows[4]["fits_layout"] is False
    assert rows[8]["dp"] == 2 and rows[8]["fits_layout"] is True  # 65.5e9 ≤ 80e9
