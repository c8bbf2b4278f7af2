"""Throughput, model TFLOP/s and MFU recomputed from the bundled Eos logs (trainperf.mlperf.throughput)."""

from __future__ import annotations

import polars as pl
import pytest
from helpers import MLPERF

from trainperf import mlperf


@pytest.fixture(scope="module")
def thr():
    return mlperf.throughput(mlperf.load_results(MLPERF))


def _median(thr, system, col):
    return thr.filter(pl.col("system") == system)[col].median()


def test_v41_eos_512_step_level_by_hand(thr):
    # F_tok = 72*96*12288^2*(1 + 2048/(6*12288) + 51200/(12*96*12288)) = 1.07644e12 FLOP/token (SC21 eq. 3)
    f_tok = 72 * 96 * 12288**2 * (1 + 2048 / (6 * 12288) + 51200 / (12 * 96 * 12288))
    step = _median(thr, "eos_n64_ngc24.09_nemo", "step_time_s")
    # per step: 2048 sequences x 2048 tokens; 512 GPUs
    expected_tflops = 2048 * 2048 * f_tok / (512 * step) / 1e12
    assert _median(thr, "eos_n64_ngc24.09_nemo", "model_tflops_per_gpu_step") == pytest.approx(
        expected_tflops, rel=1e-3
    )
    # A separate parse of the same public logs (training_results_v4.1@b87b9e39, NVIDIA/results/
    # eos_n64_ngc24.09_nemo/gpt3): step 9.49 s, 929 (850 e2e) TFLOP/s/GPU
    assert step == pytest.approx(9.49, abs=0.01)
    assert expected_tflops == pytest.approx(929, rel=0.005)
    assert _median(thr, "eos_n64_ngc24.09_nemo", "model_tflops_per_gpu_e2e") == pytest.approx(
        850, rel=0.005
    )
    # MFU against both dense H100 SXM peaks: 929/1978.9 = 46.9 % (FP8), 929/989.4 = 93.9 % (BF16)
    assert _median(thr, "eos_n64_ngc24.09_nemo", "mfu_fp8_dense_step") == pytest.approx(
        929 / 1978.9, rel=0.005
    )
    assert _median(thr, "eos_n64_ngc24.09_nemo", "mfu_bf16_dense_step") == pytest.approx(
        929 / 989.4, rel=0.005
    )


def test_v31_and_v40_against_published_parse(thr):
    # A separate parse of the same public logs (training_results_v3.1@d06288b2 and _v4.0@6fe95437):
    # v3.1 eos_n96 796 (724); v4.0 Eos-dfw n1344 "block" 599 (545) TFLOP/s/GPU
    assert _median(thr, "eos_n96_ngc23.09_nemo", "model_tflops_per_gpu_step") == pytest.approx(
        796, rel=0.005
    )
    assert _median(thr, "eos_n96_ngc23.09_nemo", "model_tflops_per_gpu_e2e") == pytest.approx(
        724, rel=0.005
    )
    v40 = thr.filter(pl.col("system") == "eos-dfw_n1344_ngc24.04_nemo")
    assert set(v40["step_source"].to_list()) == {"blocks"}  # v4.0 logs carry no step timing
    assert v40["model_tflops_per_gpu_step"].median() == pytest.approx(599, rel=0.005)
    assert v40["model_tflops_per_gpu_e2e"].median() == pytest.approx(545, rel=0.005)


def test_lora_rows_have_end_to_end_flops_only(thr):
    lora = thr.filter(pl.col("benchmark") == "llama2_70b_lora")
    # 10 runs each of v4.1 eos_n8, eos (1 node) and eos_n128, data/mlperf/SOURCES.md
    assert lora.height == 30
    # the LoRA logs time no steps: no step-level rate, only end to end (tokens = samples x 8192)
    assert lora["model_tflops_per_gpu_step"].null_count() == 30
    assert lora["model_tflops_per_gpu_e2e"].null_count() == 0
    # Llama 2 70B rank-16 LoRA FLOP/token (tests/test_flops.py: 339,670,466,560)
    assert set(lora["flops_per_token"].to_list()) == {339_670_466_560}
    r = lora.row(0, named=True)
    assert r["model_tflops_per_gpu_e2e"] == pytest.approx(
        r["tokens_per_s_per_gpu_e2e"] * 339_670_466_560 / 1e12
    )
    assert r["mfu_bf16_dense_e2e"] == pytest.approx(r["model_tflops_per_gpu_e2e"] / 989.4, rel=1e-3)


def test_hfu_only_when_recompute_known():
    res = mlperf.load_results(MLPERF / "v4.1" / "NVIDIA" / "results" / "eos_n64_ngc24.09_nemo")
    unknown = mlperf.throughput(res)
    assert unknown["hfu_fp8_dense_step"].null_count() == unknown.height
    full = mlperf.throughput(res, recompute="full")
    # full recomputation: 96-form / 72-form = 4/3 on the layers, logits not recomputed (SC21):
    # (96 l h^2 (1 + s/6h + V/16lh)) / (72 l h^2 (1 + s/6h + V/12lh))
    lh = 96 * 12288**2
    ratio = (96 * lh * (1 + 2048 / (6 * 12288) + 51200 / (16 * 96 * 12288))) / (
        72 * lh * (1 + 2048 / (6 * 12288) + 51200 / (12 * 96 * 12288))
    )
    got = (full["hfu_fp8_dense_step"] / full["mfu_fp8_dense_step"]).to_list()
    assert got == pytest.approx([ratio] * full.height, rel=1e-6)


def test_v41_eos_256_step_level_per_run():
    # v4.1 eos_n32 (32 nodes, 256 GPUs, GBS 2048): medians of the raw `train_step_timing in s` values
    # of each log (300, 288 and 288 steps), read from the files with json, not with trainperf:
    steps = {"result_0.txt": 18.371562957763672, "result_1.txt": 18.374276161193848}
    steps["result_2.txt"] = 18.421175956726074  # the median run (96.664 min), the scoring one
    f_tok = 72 * 96 * 12288**2 * (1 + 2048 / (6 * 12288) + 51200 / (12 * 96 * 12288))
    res = mlperf.load_results(MLPERF / "v4.1" / "NVIDIA" / "results" / "eos_n32_ngc24.09_nemo")
    runs = mlperf.runs_with_throughput(res)
    got = {r["result_file"].rsplit("/", 1)[1]: r for r in runs.iter_rows(named=True)}
    assert set(got) == set(steps)
    for name, step in steps.items():
        assert got[name]["step_source"] == "tracked_stats"
        assert got[name]["step_time_s"] == pytest.approx(step)
        # 2048 x 2048 tokens x F_tok per step over 256 GPUs: 957.40 TFLOP/s/GPU for result_2
        assert got[name]["model_tflops_per_gpu_step"] == pytest.approx(
            2048 * 2048 * f_tok / (256 * step) / 1e12
        )
    # The 957.5 TFLOP/s/GPU quoted for this system (a 18.419 s step) is result_2's, within 0.02 %
    assert got["result_2.txt"]["model_tflops_per_gpu_step"] == pytest.approx(957.5, rel=2e-4)
    assert got["result_2.txt"]["model_tflops_per_gpu_step"] == pytest.approx(957.40, abs=0.005)
