"""FLOPs per token (per image for Flux.1) and parameter counts of the v5.1 and v6.0 benchmark
models, each computed by hand here from the reference implementation's shapes
(mlcommons/training@aa344c7f, cited in each spec's docstring) and checked against the published
totals (model cards and papers). Convention (trainperf.flops.moe): 1 multiply-add = 2 FLOP,
training = 3 x forward, no recompute, dense attention, active experts only, router counted."""

from __future__ import annotations

from dataclasses import replace

import pytest
from mlperf_logging import benchmark_meta

from trainperf.flops import (
    LLAMA31_8B,
    model_flops_per_token,
    model_state_by_benchmark,
    param_count,
)
from trainperf.flops.catalog import BENCHMARK_MODEL_IDS, benchmark_model
from trainperf.flops.diffusion import FLUX1_SCHNELL, flux_flops_per_image, flux_param_count
from trainperf.flops.moe import DEEPSEEK_V3_671B, GPT_OSS_20B, moe_flops_per_token, moe_param_counts


def test_llama31_8b_by_hand():
    # 32 layers, h 4096, 32 heads, 8 KV heads (kv width 1024), SwiGLU 14336, vocab 128256, s 8192
    h, kv, f, v, s, n_l = 4096, 1024, 14336, 128256, 8192, 32
    per_layer = 2 * h * h + 2 * h * kv + 3 * h * f + 2 * h  # q,o + k,v + MLP + 2 RMSNorm
    assert param_count(LLAMA31_8B) == n_l * per_layer + 2 * v * h + h == 8_030_261_248  # "8.03B"
    linear = 2 * (2 * h * h + 2 * h * kv + 3 * h * f)  # 436,207,616 FLOP per token per layer
    attn = 4 * s * h  # QK^T and PV, dense: 134,217,728
    fwd = n_l * (linear + attn) + 2 * h * v
    assert model_flops_per_token(LLAMA31_8B) == 3 * fwd == 57_912_852_480
    # causal: the attention term halves
    assert model_flops_per_token(LLAMA31_8B, causal=True) == 3 * (fwd - n_l * attn / 2)


def test_deepseek_v3_by_hand():
    h, a, s, v = 7168, 128, 4096, 128256
    # MLA: q_a 7168x1536, q_b 1536x(128x192), kv_a 7168x(512+64), kv_b 512x(128x256), o 16384x7168
    attn_params = h * 1536 + 1536 * a * 192 + h * 576 + 512 * a * 256 + a * 128 * h
    assert attn_params == 187_105_280
    expert = 3 * h * 2048  # 44,040,192
    dense_mlp = 3 * h * 18432  # first 3 layers
    router = h * 256
    # forward per token: attention linears; core 2 x 128 x (192 + 128) per key, 4096 keys (dense);
    # 3 dense layers; 58 MoE layers with 8 routed + 1 shared expert and the router; logits
    core = 2 * a * (192 + 128) * s
    fwd = 61 * (2 * attn_params + core) + 3 * 2 * dense_mlp + 58 * (9 * 2 * expert + 2 * router)
    fwd += 2 * h * v
    assert moe_flops_per_token(DEEPSEEK_V3_671B) == pytest.approx(3 * fwd, rel=1e-12)
    assert 3 * fwd == 281_108_152_320
    # totals with DeepSeek's own 129,280-entry vocabulary: "671B total, 37B activated"
    # (arXiv:2412.19437 §1); MTP module not counted (the 671B excludes it too)
    own = moe_param_counts(replace(DEEPSEEK_V3_671B, vocab=129280))
    total = (
        61 * attn_params + 3 * dense_mlp + 58 * (256 * expert + expert + router) + 2 * 129280 * h
    )
    assert own["total"] == total and round(total / 1e9) == 671
    assert own["active"] == total - 58 * 248 * expert - 129280 * h
    assert round(own["active"] / 1e9) == 37


def test_gpt_oss_20b_by_hand():
    h, a, kv, d, s, v = 2880, 64, 8, 64, 8192, 128256
    attn_params = h * a * d + 2 * h * kv * d + a * d * h  # q, k, v, o
    expert = 3 * h * 2880
    router = h * 32
    core = 2 * a * (d + d)  # per key
    # 12 windowed layers see 128 keys, 12 full layers 8192 (dense convention)
    fwd = 24 * (2 * attn_params + 4 * 2 * expert + 2 * router) + 12 * core * 128 + 12 * core * s
    fwd += 2 * h * v
    assert moe_flops_per_token(GPT_OSS_20B) == pytest.approx(3 * fwd, rel=1e-12)
    # model card (openai/gpt-oss-20b, own vocabulary 201,088): 20.9B total, 3.6B active
    own = moe_param_counts(replace(GPT_OSS_20B, vocab=201088))
    assert own["total"] == 24 * (attn_params + 32 * expert + router) + 2 * 201088 * h
    assert round(own["total"] / 1e8) == 209 and round(own["active"] / 1e8) == 36
    # the windows matter: all-full attention costs more
    full = replace(GPT_OSS_20B, windowed=())
    assert moe_flops_per_token(full) - moe_flops_per_token(GPT_OSS_20B) == pytest.approx(
        3 * 12 * core * (s - 128)
    )


def test_flux1_by_hand():
    h, m = 3072, 4 * 3072
    txt, img = 256, (256 // 8 // 2) ** 2  # T5 tokens; 256 px / VAE 8 / patch 2 = 16 x 16
    s = txt + img
    assert (img, s) == (256, 512)
    per_token = 3 * h * h + h * h + 2 * h * m  # a double block's stream = a single block = 12h^2
    assert per_token == h * (3 * h + m) + (h + m) * h
    per_image = (
        19 * 2 * 6 * h * h + 38 * 3 * h * h + 2 * h * h + (256 * h + h * h) + (768 * h + h * h)
    )
    io = img * (64 * h + h * 64) + txt * 4096 * h
    fwd = 2 * (s * 57 * per_token + io + per_image) + 57 * 4 * s * s * h
    assert flux_flops_per_image(FLUX1_SCHNELL) == pytest.approx(3 * fwd, rel=1e-12)
    assert 3 * fwd == pytest.approx(2.0420e13, rel=1e-4)
    n = 19 * 2 * per_token + 38 * per_token + per_image + 64 * h + 4096 * h + h * 64
    assert flux_param_count(FLUX1_SCHNELL) == n
    assert round(n / 1e8) == 119  # the reference README's "~11.9B"


def test_catalog_covers_every_llm_and_image_benchmark_of_v51_and_v60():
    wanted = set()
    for rs in ("5.1", "6.0"):
        wanted |= set(benchmark_meta.get_allowed_benchmarks("training", rs))
    wanted -= {"dlrm_dcnv2", "retinanet", "rgat"}  # not language or image generation models
    assert wanted <= set(BENCHMARK_MODEL_IDS)
    ds = benchmark_model("deepseekv3_671b")
    # memory holds every expert, compute uses the active ones
    assert ds.params_total > 18 * ds.params_active
    assert ds.flops_per_sample == ds.flops_per_token * 4096
    fx = benchmark_model("flux1")
    assert fx.sample_unit == "image" and fx.flops_per_token is None
    assert benchmark_model("resnet") is None


def test_memory_holds_every_expert_compute_uses_the_active_ones():
    t = model_state_by_benchmark(["deepseekv3_671b", "gpt_oss_20b"], 288e9, 4, "GB300")
    ds = t.row(0, named=True)
    n = moe_param_counts(DEEPSEEK_V3_671B)["total"]  # every expert
    assert ds["parameters"] == n and ds["active_parameters"] < n / 18
    # 18 B/param (bf16 weights, fp32 grads, master and Adam): 671.0e9 x 18 = 12.08 TB;
    # 12.08e12 / 288e9 = 41.9 -> 42 GPUs; / (4 x 288e9) -> 11 nodes
    assert ds["model_state_bytes"] == n * 18
    assert (ds["min_gpus"], ds["min_nodes"]) == (42, 11)
    assert "every expert held though a token uses 36.6 billion" in ds["sentence"]
