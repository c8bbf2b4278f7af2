"""The summary's sentence on the evaluated system's throughput and MFU (issue 24: the summary gave
none; only the appendix table had them)."""

import json
from pathlib import Path

import polars as pl

from trainperf import compare

ROOT = Path(__file__).parents[1]
# H100 SXM dense peaks, NVIDIA H100 datasheet: 1,979 TFLOP/s FP8 and 989 BF16 "with sparsity" halved
H100_FP8, H100_BF16 = 1978.9, 989.4


def _row(**kv):
    return {**dict.fromkeys(compare.COMPARISON_SCHEMA), "evaluated_system": "Lab 7", **kv}


def test_the_summary_gives_tokens_per_gpu_and_mfu_precision_first_e2e_labelled():
    rows = [
        # GPT-3 on 1,536 GPUs, FP8, step level: 583.1 model TFLOP/s per GPU (Azure's v3.1 rate)
        # -> 583.1 / 1978.9 = 29.47 % of FP8, 583.1 / 989.4 = 58.93 % of BF16
        _row(benchmark="gpt3", n_gpus=1536, evaluated_source="logs",
             evaluated_tokens_per_s_per_gpu=541.72, evaluated_throughput_basis="step",
             evaluated_precision="fp8", evaluated_mfu_fp8=583.1 / H100_FP8,
             evaluated_mfu_bf16=583.1 / H100_BF16),
        # LoRA on 64 GPUs, BF16, end to end: 400 TFLOP/s -> 40.43 % of BF16, 20.21 % of FP8
        _row(benchmark="llama2_70b_lora", n_gpus=64, evaluated_source="logs",
             evaluated_tokens_per_s_per_gpu=3210.4, evaluated_throughput_basis="e2e",
             evaluated_precision="bf16", evaluated_mfu_fp8=400 / H100_FP8,
             evaluated_mfu_bf16=400 / H100_BF16),
        # 405B with no precision logged (Carina v5.0 1,024 GB200s: 0.7277 of BF16, 0.3639 of FP8)
        _row(benchmark="llama31_405b", n_gpus=1024, evaluated_source="logs",
             evaluated_tokens_per_s_per_gpu=692.94, evaluated_throughput_basis="e2e",
             evaluated_mfu_fp8=0.363850709700245, evaluated_mfu_bf16=0.72770141940049),
    ]  # fmt: skip
    got = compare.throughput_summary(pl.DataFrame(rows, schema=compare.COMPARISON_SCHEMA))
    assert got == (
        "From its logs, Lab 7 trains GPT-3 175B at 1,536 GPUs at 542 tokens/s per GPU, "
        "MFU 29.5 % of the FP8 dense peak; "
        "Llama 2 70B LoRA at 64 GPUs at 3,210 tokens/s per GPU (e2e), "
        "MFU (e2e) 40.4 % of the BF16 dense peak; "
        "Llama 3.1 405B at 1,024 GPUs at 693 tokens/s per GPU (e2e), MFU (e2e) 36.4 % of the "
        "FP8 dense peak or 72.8 % of the BF16 dense peak (precision unknown: neither the logs nor the "
        "config name it)."
    )


def test_flux_gives_images_per_gpu_not_no_throughput():
    # Nebius v5.1 Flux.1 at 32 B200s: 1,050.8 model TFLOP/s per GPU, FP8 MFU 23.35 %; Flux.1-schnell
    # is 20.420 TFLOP per image (mlcommons/training text_to_image/README.md, the catalogue's source)
    # -> 1050.82e12 / 20.420235e12 = 51.46 images/s per GPU
    rows = [_row(benchmark="flux1", n_gpus=32, evaluated_source="logs",
                 evaluated_model_tflops_per_gpu=1050.82142798343, evaluated_throughput_basis="step",
                 evaluated_precision="fp8", evaluated_mfu_fp8=0.2335, evaluated_mfu_bf16=0.4670)]  # fmt: skip
    got = compare.throughput_summary(pl.DataFrame(rows, schema=compare.COMPARISON_SCHEMA))
    assert got == (
        "From its logs, Lab 7 trains Flux.1 at 32 GPUs at 51.5 samples (images)/s per GPU, "
        "MFU 23.4 % of the FP8 dense peak."
    )


def test_published_rows_only_say_that_throughput_needs_the_logs():
    # the demo: SAKURAONE's rows are transcribed from its paper, which gives times only
    rows = [_row(benchmark="gpt3", n_gpus=256, evaluated_source="published",
                 evaluated_system="SAKURAONE")]  # fmt: skip
    got = compare.throughput_summary(pl.DataFrame(rows, schema=compare.COMPARISON_SCHEMA))
    assert got.startswith("The results of SAKURAONE compared here are published rows")
    assert "no throughput or MFU" in got
    assert compare.throughput_summary(pl.DataFrame(schema=compare.COMPARISON_SCHEMA)) == ""


def test_the_summary_chapter_quotes_the_value_the_comparison_notebook_writes():

    key = "cmp_throughput"
    assert f"values.eos_comparison.{key}" in (ROOT / "chapters" / "summary.qmd").read_text()
    nb = json.loads((ROOT / "notebooks" / "eos_comparison.ipynb").read_text())
    code = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert f'cmp_vals["{key}"] = md_text(compare.throughput_summary(comparison))' in code
