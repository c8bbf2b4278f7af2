"""The model each MLPerf Training benchmark trains: one table for throughput, MFU and the memory
model (GPT-3 175B, Llama 3.1 405B and 8B, Llama 2 70B LoRA, DeepSeek-V3 671B, GPT-OSS-20B, Flux.1).

The counting convention of every figure is the one stated in :mod:`trainperf.flops.moe` (dense
models: :func:`trainperf.flops.model_flops_per_token`, the same rules): 1 multiply-add = 2 FLOP,
3 x forward for training, no recomputation, only the trained network (active experts; frozen
encoders and frozen LoRA bases pay no weight gradient), attention dense unless ``causal``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from trainperf.flops.counts import lora_flops_per_token, lora_param_count, model_flops_per_token
from trainperf.flops.diffusion import FLUX1_SCHNELL, flux_flops_per_image, flux_param_count
from trainperf.flops.models import GPT3_175B, LLAMA2_70B, LLAMA31_8B, LLAMA31_405B, param_count
from trainperf.flops.moe import DEEPSEEK_V3_671B, GPT_OSS_20B, moe_flops_per_token, moe_param_counts

__all__ = ["BENCHMARK_MODEL_IDS", "BenchmarkModel", "benchmark_model"]


@dataclass(frozen=True)
class BenchmarkModel:
    """What a benchmark trains, in the units its logs count.

    Attributes:
        benchmark: MLPerf id (``llama31_8b``).
        model: the model's name (``Llama 3.1 8B``).
        kind: ``dense``, ``lora``, ``moe`` or ``diffusion``.
        sample_unit: what one logged sample is: ``sequence`` (of ``seq_len`` tokens) or ``image``.
        seq_len: tokens per sequence where the logs state none (None for images).
        flops_per_token: model FLOPs per trained token (None for images).
        flops_per_sample: model FLOPs per sample (a sequence of ``seq_len`` tokens, or an image).
        params_total: every parameter (the model state holds these; all experts).
        params_active: parameters one token (or image) uses.
        params_trainable: parameters that get gradients and optimizer state (LoRA: the adapters).
        source: where the architecture comes from (the spec's docstring has the detail).
    """

    benchmark: str
    model: str
    kind: Literal["dense", "lora", "moe", "diffusion"]
    sample_unit: Literal["sequence", "image"]
    seq_len: int | None
    flops_per_token: float | None
    flops_per_sample: float
    params_total: int
    params_active: int
    params_trainable: int
    source: str


BENCHMARK_MODEL_IDS = (
    "gpt3",
    "llama31_405b",
    "llama31_8b",
    "llama2_70b_lora",
    "deepseekv3_671b",
    "gpt_oss_20b",
    "flux1",
)
"""The benchmarks :func:`benchmark_model` knows (every LLM and text-to-image benchmark of v3.1 to
v6.0)."""

_REF = "mlcommons/training@aa344c7f:"


def benchmark_model(
    benchmark: str, causal: bool = False, seq_len: int | None = None
) -> BenchmarkModel | None:
    """The model of an MLPerf benchmark, with FLOPs per token and per sample.

    Args:
        benchmark: MLPerf id.
        causal: halve the full-attention score FLOPs (Megatron-LM's convention since 2025-03).
        seq_len: the run's ``max_sequence_length`` when its logs state one (the attention term
            uses it); None: the benchmark's own.

    Returns:
        :class:`BenchmarkModel`, or None for a benchmark without a model here (ResNet, BERT...).
        Hand computations of each figure: ``tests/test_moe_models.py`` and ``tests/test_flops.py``.
    """
    if benchmark == "flux1":
        f = flux_flops_per_image(FLUX1_SCHNELL)
        n = flux_param_count(FLUX1_SCHNELL)
        return BenchmarkModel(benchmark, "Flux.1-schnell", "diffusion", "image", None, None, f, n,
                              n, n, _REF + "text_to_image/README.md")  # fmt: skip
    if benchmark in ("deepseekv3_671b", "gpt_oss_20b"):
        spec = DEEPSEEK_V3_671B if benchmark == "deepseekv3_671b" else GPT_OSS_20B
        if seq_len and seq_len != spec.seq_len:
            spec = replace(spec, seq_len=seq_len)
        f = moe_flops_per_token(spec, causal=causal)
        p = moe_param_counts(spec)
        src = ("llm_moe_pretraining/nemo/README.md" if benchmark == "deepseekv3_671b"
               else "small_llm_moe_pretraining/primus/conf/gpt_oss_20B-pretrain.yaml")  # fmt: skip
        return BenchmarkModel(benchmark, spec.name, "moe", "sequence", spec.seq_len, f,
                              f * spec.seq_len, p["total"], p["active"], p["total"], _REF + src)  # fmt: skip
    dense = {"gpt3": GPT3_175B, "llama31_405b": LLAMA31_405B, "llama31_8b": LLAMA31_8B}
    if benchmark in dense or benchmark == "llama2_70b_lora":
        spec = dense.get(benchmark, LLAMA2_70B)
        s = seq_len or spec.seq_len
        if s != spec.seq_len:
            spec = replace(spec, seq_len=s)
        n = param_count(spec)
        if benchmark == "llama2_70b_lora":
            # rank 16 on q, k, v, o: the logs' lora_rank (data/mlperf, Eos v4.1)
            f = lora_flops_per_token(spec, 16, causal=causal)
            return BenchmarkModel(benchmark, spec.name, "lora", "sequence", s, f, f * s, n, n,
                                  lora_param_count(spec, 16), _REF + "llama2_70b_lora/README.md")  # fmt: skip
        f = model_flops_per_token(spec, causal=causal)
        src = {"gpt3": "retired_benchmarks/gpt3", "llama31_405b": "large_language_model_pretraining",
               "llama31_8b": "small_llm_pretraining/nemo/README.md"}[benchmark]  # fmt: skip
        return BenchmarkModel(benchmark, spec.name, "dense", "sequence", s, f, f * s, n, n, n,
                              _REF + src)  # fmt: skip
    return None
