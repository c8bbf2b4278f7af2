"""Tests for trainperf.flops: FLOP counts, parameter counts, MFU and the accelerator table.

Expected values are computed by hand in the comments from the cited sources
(Narayanan et al. SC21 arXiv:2104.04473 eq. (3); the H100 datasheet
https://www.nvidia.com/en-us/data-center/h100/; the bundled Eos v4.1 logs in data/mlperf; the
SAKURAONE paper arXiv 2604.13600 Table 9, as relayed by a third-party summary),
never taken from the code under test.
"""

import json
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from trainperf import flops, tables
from trainperf.flops import (
    GPT3_175B,
    LLAMA2_70B,
    PRESETS,
    ModelSpec,
    flops_per_step,
    load_accelerators,
    lora_flops_per_token,
    lora_param_count,
    mfu,
    mfu_both_peaks,
    model_flops_per_token,
    model_tflops_per_gpu,
    narayanan_flops_per_token,
    narayanan_param_count,
    normalize_accelerator_name,
    param_count,
    peak_flops,
    resolve_accelerator,
    tflops_from_tokens_per_s,
    with_mfu_columns,
)

REPO = Path(__file__).resolve().parents[1]

# GPT-3 175B, V = 51200 (padded):
#   72·l·h² = 72 · 96 · 12288² = 6912 · 150,994,944            = 1,043,677,052,928
#   12·l·s·h = 12 · 96 · 2048 · 12288 = 1152 · 25,165,824       =    28,991,029,248
#   6·h·V = 6 · 12288 · 51200                                   =     3,774,873,600
#   F_tok = 72lh²(1 + s/6h + V/12lh) = sum                      = 1,076,442,955,776  (1.07644e12)
F_TOK_GPT3 = 1_076_442_955_776


def test_presets():
    assert PRESETS["gpt3_175b"] is GPT3_175B
    assert PRESETS["llama2_70b"] is LLAMA2_70B
    assert (GPT3_175B.n_layers, GPT3_175B.hidden, GPT3_175B.n_heads) == (96, 12288, 96)
    assert (GPT3_175B.ffn_hidden, GPT3_175B.vocab_raw, GPT3_175B.vocab_padded) == (
        49152,
        50257,
        51200,
    )
    assert (LLAMA2_70B.n_kv_heads, LLAMA2_70B.ffn_hidden, LLAMA2_70B.seq_len) == (8, 28672, 8192)
    assert LLAMA2_70B.kv_dim == 8 * 128


def test_narayanan_72_form_gpt3():
    assert narayanan_flops_per_token(GPT3_175B) == pytest.approx(F_TOK_GPT3, rel=1e-12)
    assert narayanan_flops_per_token(GPT3_175B) == pytest.approx(1.07644e12, rel=1e-5)


def test_general_count_reduces_to_72_form_exactly():
    # 3·[l·(24h² + 4sh) + 2hV] = 72lh² + 12lsh + 6hV, the same integer as above.
    assert model_flops_per_token(GPT3_175B) == F_TOK_GPT3


def test_causal_variant():
    # causal halves the score term: F_tok − 12lsh/2 = 1,076,442,955,776 − 14,495,514,624
    #                                                = 1,061,947,441,152 (1.06195e12)
    assert model_flops_per_token(GPT3_175B, causal=True) == 1_061_947_441_152
    assert model_flops_per_token(GPT3_175B, causal=True) == pytest.approx(1.06195e12, rel=1e-5)


def test_hfu_96_form_and_ratio():
    # 96lh² = 1,391,569,403,904; 96lh²·s/6h = 16lsh = 38,654,705,664; 96lh²·V/16lh = 6hV = 3,774,873,600
    # 96-form = 1,433,998,983,168; ratio to 72-form = 1.433998983168/1.076442955776 = 1.33216 (SC21: 96/72-form ≈ 1.332)
    hfu = 1_433_998_983_168
    assert narayanan_flops_per_token(GPT3_175B, recompute=True) == pytest.approx(hfu, rel=1e-12)
    assert model_flops_per_token(GPT3_175B, recompute="full") == hfu
    ratio = hfu / F_TOK_GPT3
    assert ratio == pytest.approx(1.332, abs=5e-4)
    assert narayanan_flops_per_token(GPT3_175B, True) / narayanan_flops_per_token(
        GPT3_175B
    ) == pytest.approx(ratio, rel=1e-12)


def test_selective_recompute_adds_attention_core_only():
    # selective: + one forward of the attention core = 4·s·h per layer → + 4·96·2048·12288
    # = 9,663,676,416 FLOP/token
    assert model_flops_per_token(GPT3_175B, recompute="selective") == F_TOK_GPT3 + 9_663_676_416
    with pytest.raises(ValueError, match="recompute"):
        model_flops_per_token(GPT3_175B, recompute="some")


def test_flops_per_step_gpt3():
    # GBS 2048 × s 2048 × 1.07644e12 = 4.5149e18 FLOP
    assert flops_per_step(GPT3_175B, 2048) == pytest.approx(4.5149e18, rel=1e-4)
    assert flops_per_step(GPT3_175B, 2048) == 2048 * 2048 * F_TOK_GPT3


def test_param_count_gpt3():
    # P = 12lh² + 13lh + (V+s)h, V=50257:
    #   173,946,175,488 + 15,335,424 + (50257+2048)·12288 = 642,723,840 → 174,604,234,752 (174.60e9)
    assert narayanan_param_count(GPT3_175B) == pytest.approx(174_604_234_752, rel=1e-12)
    assert narayanan_param_count(GPT3_175B) == pytest.approx(174.6e9, rel=1e-3)
    # general count adds the final LayerNorm, 2h = 24,576
    assert param_count(GPT3_175B) == 174_604_234_752 + 24_576


def test_param_count_llama2_70b():
    # per layer: q,o 2·8192² = 134,217,728; k,v 2·8192·1024 = 16,777,216;
    #   SwiGLU 3·8192·28672 = 704,643,072; 2 RMSNorm 16,384 → 855,654,400
    # 80 layers = 68,452,352,000; embed + untied head 2·32000·8192 = 524,288,000; final norm 8192
    # total 68,976,648,192
    assert param_count(LLAMA2_70B) == 68_976_648_192


def test_llama_gqa_swiglu_flops():
    # linear fwd per layer = 2·(855,654,400 − 16,384) = 1,711,276,032; attention 4·s·h = 268,435,456
    # 3·(1,979,711,488)·80 = 475,130,757,120; logits 3·2·8192·32000 = 1,572,864,000
    # total 476,703,621,120
    assert model_flops_per_token(LLAMA2_70B) == 476_703_621_120
    # MHA instead of GQA must cost more (K,V become 8192 wide)
    mha = replace(LLAMA2_70B, n_kv_heads=64)
    assert model_flops_per_token(mha) > model_flops_per_token(LLAMA2_70B)


def test_lora_flops():
    # adapters r=16 on q,k,v,o: 16·(16384 + 9216 + 9216 + 16384) = 819,200 per layer → 65,536,000
    assert lora_param_count(LLAMA2_70B, 16) == 65_536_000
    # frozen linear 2× fwd, attention 3× fwd, adapters 3× fwd, logits 2× fwd:
    # 80·(2·1,711,276,032 + 3·268,435,456) = 338,228,674,560
    # + 3·2·65,536,000 = 393,216,000 + 2·2·8192·32000 = 1,048,576,000 → 339,670,466,560
    assert lora_flops_per_token(LLAMA2_70B, 16) == 339_670_466_560
    assert lora_flops_per_token(LLAMA2_70B, 16) < model_flops_per_token(LLAMA2_70B)
    with pytest.raises(ValueError, match="unknown LoRA target"):
        lora_param_count(LLAMA2_70B, 16, ("q", "qkv"))


def test_eos_v41_n32_worked_example():
    # 4.5149e18 / (256 × 18.419 s, the step that published_results.csv's 889.5 tok/s/GPU implies) = 957.5 TFLOP/s/GPU
    #   957.5 / 1978.9 = 48.4% (FP8);  957.5 / 989.4 = 96.8% ("BF16", not meaningful)
    tf = model_tflops_per_gpu(flops_per_step(GPT3_175B, 2048), 18.419, 256)
    assert tf == pytest.approx(957.5, abs=0.05)
    both = mfu_both_peaks(tf, "H100 SXM")
    assert both["mfu_fp8_dense"] == pytest.approx(0.484, abs=5e-4)
    assert both["mfu_bf16_dense"] == pytest.approx(0.968, abs=5e-4)
    # end to end: 1,207,959,552 tokens in 96.664 min on 256 GPUs → 875.8 TFLOP/s/GPU (44.3% FP8)
    e2e = model_tflops_per_gpu(1_207_959_552 * F_TOK_GPT3, 96.664 * 60, 256)
    assert e2e == pytest.approx(875.8, abs=0.1)
    with pytest.raises(ValueError):
        model_tflops_per_gpu(1.0, 0.0, 256)


def test_sakuraone_32_node_tflops():
    # arXiv 2604.13600 Table 9 (relayed by a third-party summary): 707.62 tokens/s/GPU, 757.13 TFLOP/s/GPU, MFU 38.3% of 1979.
    # 707.62 × 1.076443e12 = 761.71e12 FLOP/s → 757.13/761.71 − 1 = −0.60 %: the paper's pair
    # implies 1.0700e12 FLOP/token, between our dense (1.07644e12) and causal (1.06195e12) counts.
    tf = tflops_from_tokens_per_s(707.62, F_TOK_GPT3)
    assert tf == pytest.approx(761.71, abs=0.01)
    assert 757.13 / tf - 1 == pytest.approx(-0.0060, abs=2e-4)
    assert abs(757.13 / tf - 1) < 0.01  # agrees within 1%, but not within 0.5%
    # MFU against the FP8 dense peak: paper 757.13/1979 = 0.3826 → 38.3 %;
    # recomputed with F_tok: 761.71/1978.9 = 0.3849 → 38.5 %
    assert 757.13 / 1979 == pytest.approx(0.383, abs=5e-4)
    m = mfu(707.62, F_TOK_GPT3, peak_flops("H100 SXM", "fp8"))
    assert m == pytest.approx(0.3849, abs=1e-4)


def test_mfu_function():
    # 1000 tokens/s × 1e12 FLOP/token / 2e15 FLOP/s = 0.5
    assert mfu(1000, 1e12, 2e15) == 0.5
    with pytest.raises(ValueError):
        mfu(1000, 1e12, 0)


def test_accelerator_table():
    acc = load_accelerators()
    assert set(acc.columns) == {
        "accelerator",
        "aliases",
        "bf16_dense_tflops",
        "fp8_dense_tflops",
        "memory_gb",
        "memory_bandwidth_tbps",
        "fp4_dense_tflops",
        "fp4_format",
        "scaleup_domain",
        "scaleup_fabric",
        "source_url",
    }
    for name in ("H100 SXM", "H100 PCIe", "H200", "A100 SXM", "B200", "GB200", "MI300X"):
        assert name in acc["accelerator"].to_list()
    # H100 datasheet (https://www.nvidia.com/en-us/data-center/h100/): dense = half the sparse figures
    assert peak_flops("H100 SXM", "bf16") == 989.4e12
    assert peak_flops("H100 SXM", "fp8") == 1978.9e12
    assert peak_flops("H100 PCIe", "bf16") == 756e12
    assert peak_flops("A100 SXM", "bf16") == 312e12
    assert peak_flops("B200", "fp8") == 4500e12
    assert peak_flops("GB200", "bf16") == 2500e12
    assert peak_flops("MI300X", "bf16") == 1307.4e12
    assert acc.filter(pl.col("accelerator") == "A100 SXM")["fp8_dense_tflops"].item() is None
    assert (acc["source_url"].str.len_chars() > 10).all()


def test_accelerator_name_normalisation():
    assert normalize_accelerator_name("NVIDIA H100-SXM5-80GB") == "h100sxm5"
    assert resolve_accelerator("NVIDIA H100-SXM5-80GB") == "H100 SXM"
    assert resolve_accelerator("h100 sxm") == "H100 SXM"
    assert resolve_accelerator("NVIDIA H100 PCIe") == "H100 PCIe"
    assert resolve_accelerator("AMD Instinct MI300X") == "MI300X"
    assert peak_flops("NVIDIA H100-SXM5-80GB", "fp8") == 1978.9e12
    # every MLPerf systems JSON shipped in data/mlperf must resolve
    for sysjson in (REPO / "data" / "mlperf").glob("*/*/systems/*.json"):
        name = json.loads(sysjson.read_text())["accelerator_model_name"]
        assert resolve_accelerator(name) == "H100 SXM", sysjson


def test_unknown_accelerator_error_lists_known():
    with pytest.raises(ValueError) as err:
        peak_flops("Imaginary X9", "bf16")
    msg = str(err.value)
    assert "Imaginary X9" in msg and "H100 SXM" in msg and "MI300X" in msg
    with pytest.raises(ValueError, match="precision"):
        peak_flops("H100 SXM", "int4")
    with pytest.raises(ValueError, match="fp8"):
        peak_flops("A100 SXM", "fp8")


def test_explicit_accelerator_path(tmp_path):
    p = tmp_path / "acc.csv"
    p.write_text(
        "accelerator,aliases,bf16_dense_tflops,fp8_dense_tflops,memory_gb,"
        "memory_bandwidth_tbps,source_url\nX1,X-ONE,100,200,10,1,http://example\n"
    )
    acc = load_accelerators(p)
    assert peak_flops("x-one", "fp8", acc) == 200e12
    with pytest.raises(FileNotFoundError):
        load_accelerators(tmp_path / "missing.csv")


def test_with_mfu_columns():
    df = pl.DataFrame({"tflops_per_gpu": [989.4, None]})
    out = with_mfu_columns(df)
    assert out["mfu_bf16_dense"][0] == pytest.approx(1.0)
    assert out["mfu_fp8_dense"][0] == pytest.approx(0.5, rel=1e-4)  # 989.4/1978.9
    assert out["mfu_bf16_dense"][1] is None
    a100 = with_mfu_columns(df, accelerator="A100 SXM")
    assert a100["mfu_fp8_dense"].null_count() == 2


def test_modelspec_validation():
    with pytest.raises(ValueError):
        ModelSpec("bad", 2, 100, 3, 3, 400, "gelu", 10, 10, 8)
    with pytest.raises(ValueError):
        replace(GPT3_175B, activation="relu")


def test_reference_table_loader_under_its_old_flops_name_warns_naming_trainperf_tables():
    with pytest.warns(DeprecationWarning, match=r"use trainperf\.tables\.read_table"):
        old = flops.read_reference
    assert old is tables.read_table
    assert "read_reference" not in flops.__all__
