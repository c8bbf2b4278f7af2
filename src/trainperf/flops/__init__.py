"""Model FLOP counts, MFU/HFU, accelerator peaks and the training memory model.

Units used throughout: FLOP (floating-point operations, one multiply-add = 2 FLOP), FLOP/s,
TFLOP/s (1e12 FLOP/s), bytes, decimal GB (1e9 bytes) and decimal TB (1e12 bytes), seconds.

Sources (every formula below names the one it comes from):

* [SC21] D. Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
  Using Megatron-LM", SC21, arXiv:2104.04473, eq. (3) and Appendix: FLOPs per iteration
  ``72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h))`` without recompute and
  ``96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h))`` with full activation recompute; parameter count
  ``P = 12·l·h²·(1 + 13/(12h) + (V+s)/(12·l·h))``.
* [MEG] ``NVIDIA/Megatron-LM@d98e8a64:megatron/training/training.py:802-1310``
  (``num_floating_point_operations``): expansion factor 3 (fwd, dgrad, wgrad), FMA factor 2,
  SwiGLU ffn factor 3, GQA query groups; causal halving of the attention-score term since
  ``8873b55d6a`` (2025-03-06).
* [PaLM] Chowdhery et al. 2022, arXiv:2204.02311, App. B: MFU = tokens/s × (6N + 12·L·H·Q·T) / peak.
* [KOR] V. Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models",
  arXiv:2205.05198 (MLSys 2023): activation bytes per layer ``s·b·h·(34 + 5·a·s/h)`` (Table 2),
  selective recompute ``34·s·b·h``, full recompute ``2·s·b·h``; MFU/HFU definitions §6.3.
* [ZeRO] S. Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter
  Models", arXiv:1910.02054, §3.1: mixed-precision Adam needs 2Ψ + 2Ψ + 12Ψ = 16 bytes/param.
* [DO] ``NVIDIA/Megatron-LM@d98e8a64:docs/user-guide/features/dist_optimizer.md:14-20``: bf16
  params with fp32 grads take 18 bytes/param, or ``6 + 12/d`` with the distributed optimizer.
* [LoRA] E. Hu et al., "LoRA: Low-Rank Adaptation of Large Language Models", arXiv:2106.09685.
* [MLPerf] the GPT-3 175B reference, ``mlcommons/training@aa344c7f:retired_benchmarks/gpt3``, and the
  result logs of ``mlcommons/training_results_v3.1@d06288b2`` and ``…_v4.1@b87b9e39`` (bundled in
  ``data/mlperf/``, ``data/mlperf/SOURCES.md``).

Modules: :mod:`~trainperf.flops.models` (dense model specifications, parameter counts),
:mod:`~trainperf.flops.moe` (mixture-of-experts: DeepSeek-V3, GPT-OSS-20B; the counting convention
of every model is stated there once), :mod:`~trainperf.flops.diffusion` (Flux.1 per image),
:mod:`~trainperf.flops.catalog` (the model of each MLPerf benchmark),
:mod:`~trainperf.flops.counts` (FLOPs, TFLOP/s, MFU), :mod:`~trainperf.flops.accelerators`
(peaks from the reference table), :mod:`~trainperf.flops.memory` (the memory model),
:mod:`~trainperf.flops.units`.
"""

from __future__ import annotations

import warnings

from trainperf import tables as _tables
from trainperf.flops.accelerators import (
    UnknownAcceleratorError,
    load_accelerators,
    lookup_accelerator,
    mfu_both_peaks,
    normalize_accelerator_name,
    peak_flops,
    resolve_accelerator,
    with_mfu_columns,
)
from trainperf.flops.catalog import BENCHMARK_MODEL_IDS, BenchmarkModel, benchmark_model
from trainperf.flops.counts import (
    flops_per_step,
    lora_flops_per_token,
    lora_param_count,
    mfu,
    model_flops_per_token,
    model_tflops_per_gpu,
    narayanan_flops_per_token,
    tflops_from_tokens_per_s,
)
from trainperf.flops.diffusion import (
    FLUX1_SCHNELL,
    FluxSpec,
    flux_flops_per_image,
    flux_param_count,
)
from trainperf.flops.memory import (
    BENCHMARK_TRAINING,
    MODEL_STATE_SCHEMA,
    RECIPES,
    MemoryBreakdown,
    Recipe,
    activation_bytes_per_gpu,
    activation_bytes_per_layer,
    bytes_per_gpu,
    lora_model_state_bytes,
    memory_vs_nodes,
    min_nodes_for_model_state,
    model_state_by_benchmark,
    model_state_bytes,
    model_state_bytes_per_gpu,
    model_state_fit_sentence,
)
from trainperf.flops.models import (
    GPT3_175B,
    LLAMA2_70B,
    LLAMA31_8B,
    LLAMA31_405B,
    PRESETS,
    ModelSpec,
    narayanan_param_count,
    param_count,
)
from trainperf.flops.moe import (
    DEEPSEEK_V3_671B,
    GPT_OSS_20B,
    MoESpec,
    moe_flops_per_token,
    moe_param_counts,
)
from trainperf.flops.units import GB as GB
from trainperf.flops.units import TB as TB
from trainperf.flops.units import TFLOP as TFLOP
from trainperf.flops.units import Recompute as Recompute

__all__ = [
    "BENCHMARK_MODEL_IDS",
    "BENCHMARK_TRAINING",
    "BenchmarkModel",
    "DEEPSEEK_V3_671B",
    "FLUX1_SCHNELL",
    "FluxSpec",
    "GPT_OSS_20B",
    "LLAMA31_8B",
    "MoESpec",
    "benchmark_model",
    "flux_flops_per_image",
    "flux_param_count",
    "moe_flops_per_token",
    "moe_param_counts",
    "GB",
    "TB",
    "TFLOP",
    "Recompute",
    "GPT3_175B",
    "LLAMA2_70B",
    "LLAMA31_405B",
    "MODEL_STATE_SCHEMA",
    "PRESETS",
    "RECIPES",
    "MemoryBreakdown",
    "ModelSpec",
    "Recipe",
    "activation_bytes_per_gpu",
    "activation_bytes_per_layer",
    "bytes_per_gpu",
    "flops_per_step",
    "load_accelerators",
    "lookup_accelerator",
    "UnknownAcceleratorError",
    "lora_flops_per_token",
    "lora_param_count",
    "lora_model_state_bytes",
    "memory_vs_nodes",
    "mfu",
    "mfu_both_peaks",
    "min_nodes_for_model_state",
    "model_flops_per_token",
    "model_state_bytes",
    "model_state_bytes_per_gpu",
    "model_state_by_benchmark",
    "model_state_fit_sentence",
    "model_tflops_per_gpu",
    "narayanan_flops_per_token",
    "narayanan_param_count",
    "normalize_accelerator_name",
    "param_count",
    "peak_flops",
    "resolve_accelerator",
    "tflops_from_tokens_per_s",
    "with_mfu_columns",
]


# The reference tables' loader lives in trainperf.tables; trainperf.flops exported it in 0.1.0
# (read_reference was trainperf.tables.read_table). An old name warns naming its home.
_MOVED_TO_TABLES = {
    "default_reference_dir": "default_reference_dir",
    "read_reference": "read_table",
}


def __getattr__(name: str):
    if name in _MOVED_TO_TABLES:
        new = _MOVED_TO_TABLES[name]
        warnings.warn(
            f"trainperf.flops.{name} is deprecated: use trainperf.tables.{new}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(_tables, new)
    raise AttributeError(f"module 'trainperf.flops' has no attribute {name!r}")
