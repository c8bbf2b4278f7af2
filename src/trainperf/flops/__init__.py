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
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

import polars as pl

from trainperf.tables import default_reference_dir, read_table

read_reference = (
    read_table  # the name this module exported before the tables moved to trainperf.tables
)

__all__ = [
    "GPT3_175B",
    "LLAMA2_70B",
    "PRESETS",
    "RECIPES",
    "MemoryBreakdown",
    "ModelSpec",
    "Recipe",
    "activation_bytes_per_gpu",
    "activation_bytes_per_layer",
    "bytes_per_gpu",
    "default_reference_dir",
    "read_reference",
    "flops_per_step",
    "load_accelerators",
    "lora_flops_per_token",
    "lora_param_count",
    "memory_vs_nodes",
    "mfu",
    "mfu_both_peaks",
    "min_nodes_for_model_state",
    "model_flops_per_token",
    "model_state_bytes",
    "model_state_bytes_per_gpu",
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

Recompute = Literal["none", "selective", "full"]

TFLOP = 1e12
"""FLOP in one TFLOP."""
GB = 1e9
"""Bytes in one decimal gigabyte."""
TB = 1e12
"""Bytes in one decimal terabyte."""


# --------------------------------------------------------------------------------------------
# Model specifications
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelSpec:
    """Architecture of a decoder-only transformer, as far as FLOP and memory counts need it.

    Attributes:
        name: display name.
        n_layers: transformer layers ``l``.
        hidden: model width ``h``.
        n_heads: attention (query) heads ``a``.
        n_kv_heads: key/value heads (GQA query groups); equal to ``n_heads`` for MHA.
        ffn_hidden: MLP inner width.
        activation: ``'gelu'`` (two MLP GEMMs) or ``'swiglu'`` (three MLP GEMMs: gate, up, down).
        vocab_raw: tokenizer vocabulary size.
        vocab_padded: vocabulary after padding for tensor parallelism; the logits GEMM uses this.
        seq_len: training sequence length ``s``.
        bias: linear layers carry biases (GPT-3 yes, Llama no).
        norm: ``'layernorm'`` (weight + bias, 2h params) or ``'rmsnorm'`` (weight only, h params).
        learned_pos_emb: learned absolute position embedding of ``s·h`` params (GPT-3) vs RoPE.
        tied_embeddings: output projection shares the input embedding matrix.
    """

    name: str
    n_layers: int
    hidden: int
    n_heads: int
    n_kv_heads: int
    ffn_hidden: int
    activation: Literal["gelu", "swiglu"]
    vocab_raw: int
    vocab_padded: int
    seq_len: int
    bias: bool = True
    norm: Literal["layernorm", "rmsnorm"] = "layernorm"
    learned_pos_emb: bool = True
    tied_embeddings: bool = True

    def __post_init__(self) -> None:
        if self.activation not in ("gelu", "swiglu"):
            raise ValueError(f"activation must be 'gelu' or 'swiglu', got {self.activation!r}")
        if self.norm not in ("layernorm", "rmsnorm"):
            raise ValueError(f"norm must be 'layernorm' or 'rmsnorm', got {self.norm!r}")
        if self.hidden % self.n_heads:
            raise ValueError("hidden must be divisible by n_heads")
        if self.n_heads % self.n_kv_heads:
            raise ValueError("n_heads must be divisible by n_kv_heads")

    @property
    def head_dim(self) -> int:
        """Per-head width ``h / a``."""
        return self.hidden // self.n_heads

    @property
    def kv_dim(self) -> int:
        """Width of the K (or V) projection output: ``n_kv_heads · head_dim``."""
        return self.n_kv_heads * self.head_dim


GPT3_175B = ModelSpec(
    name="GPT-3 175B",
    n_layers=96,
    hidden=12288,
    n_heads=96,
    n_kv_heads=96,
    ffn_hidden=49152,
    activation="gelu",
    vocab_raw=50257,
    vocab_padded=51200,
    seq_len=2048,
    bias=True,
    norm="layernorm",
    learned_pos_emb=True,
    tied_embeddings=True,
)
"""MLPerf Training GPT-3 175B: ``mlcommons/training@aa344c7f:retired_benchmarks/gpt3/paxml/README.md:32-46``
and ``…/megatron-lm/run_gpt3.sh:55-59``; vocab 50257 padded to 51200 (Megatron reference, TP=8,
divisible by 128, ``…/megatron-lm/megatron/tokenizer/tokenizer.py:55-68``; PAX
``…/paxml/c4.py:631-632`` ``VOCAB_SIZE = 51200``)."""

LLAMA2_70B = ModelSpec(
    name="Llama 2 70B",
    n_layers=80,
    hidden=8192,
    n_heads=64,
    n_kv_heads=8,
    ffn_hidden=28672,
    activation="swiglu",
    vocab_raw=32000,
    vocab_padded=32000,
    seq_len=8192,
    bias=False,
    norm="rmsnorm",
    learned_pos_emb=False,
    tied_embeddings=False,
)
"""Llama 2 70B (Touvron et al. 2023, arXiv:2307.09288; HF ``meta-llama/Llama-2-70b-hf`` config:
80 layers, h=8192, 64 heads, 8 KV heads, SwiGLU 28672, vocab 32000, untied output). Sequence length
8192 is the MLPerf Training ``llama2_70b_lora`` setting (GovReport, max length 8192)."""

PRESETS: dict[str, ModelSpec] = {"gpt3_175b": GPT3_175B, "llama2_70b": LLAMA2_70B}
"""Model presets keyed by benchmark-style short names."""


def _vocab(spec: ModelSpec, vocab: int | Literal["raw", "padded"]) -> int:
    if vocab == "raw":
        return spec.vocab_raw
    if vocab == "padded":
        return spec.vocab_padded
    if isinstance(vocab, int):
        return vocab
    raise ValueError(f"vocab must be 'raw', 'padded' or an int, got {vocab!r}")


# --------------------------------------------------------------------------------------------
# Parameter counts
# --------------------------------------------------------------------------------------------


def narayanan_param_count(spec: ModelSpec, vocab: int | Literal["raw", "padded"] = "raw") -> float:
    """Parameter count by [SC21]: ``P = 12·l·h²·(1 + 13/(12h) + (V+s)/(12·l·h))``.

    Valid for GPT-3-style models (MHA, 4h GELU MLP, biases, LayerNorm, learned positions, tied
    embeddings). The final LayerNorm (2h) is not counted by the formula.

    Args:
        spec: model.
        vocab: ``'raw'`` (default; GPT-3 with V=50257 gives 174.60e9), ``'padded'`` or an int.

    Returns:
        Parameters (count, float).
    """
    n_l, h, s = spec.n_layers, spec.hidden, spec.seq_len
    v = _vocab(spec, vocab)
    return 12 * n_l * h * h * (1 + 13 / (12 * h) + (v + s) / (12 * n_l * h))


def _linear_weights_per_layer(spec: ModelSpec) -> dict[str, tuple[int, int]]:
    """(d_in, d_out) of every linear layer in one transformer block."""
    h, kv, f = spec.hidden, spec.kv_dim, spec.ffn_hidden
    mats = {
        "q": (h, h),
        "k": (h, kv),
        "v": (h, kv),
        "o": (h, h),
    }
    if spec.activation == "swiglu":
        mats.update({"gate": (h, f), "up": (h, f), "down": (f, h)})
    else:
        mats.update({"up": (h, f), "down": (f, h)})
    return mats


def param_count(spec: ModelSpec, vocab: int | Literal["raw", "padded"] = "raw") -> int:
    """General parameter count (handles GQA, SwiGLU, RMSNorm, untied embeddings, no biases).

    Per layer: Q, K, V, O projections (K and V have ``n_kv_heads·head_dim`` outputs), the MLP
    (2 matrices for GELU, 3 for SwiGLU), biases if ``spec.bias``, two norms. Plus the input
    embedding ``V·h``, learned positions ``s·h`` if any, the final norm and an untied output
    matrix ``V·h`` if ``tied_embeddings`` is false.

    For GPT-3 this equals :func:`narayanan_param_count` plus the final LayerNorm's ``2h``
    (the SC21 formula omits it): per layer ``12h² + 13h``, embeddings ``(V + s)·h``.
    For Llama 2 70B (vocab 32000) it gives 68,976,648,192 (the published "70B").

    Returns:
        Parameters (int).
    """
    h = spec.hidden
    v = _vocab(spec, vocab)
    per_layer = 0
    for d_in, d_out in _linear_weights_per_layer(spec).values():
        per_layer += d_in * d_out + (d_out if spec.bias else 0)
    norm_params = 2 * h if spec.norm == "layernorm" else h
    per_layer += 2 * norm_params
    total = spec.n_layers * per_layer
    total += v * h  # input embedding
    if spec.learned_pos_emb:
        total += spec.seq_len * h
    total += norm_params  # final norm
    if not spec.tied_embeddings:
        total += v * h
    return total


# --------------------------------------------------------------------------------------------
# FLOPs
# --------------------------------------------------------------------------------------------


def narayanan_flops_per_token(spec: ModelSpec, recompute: bool = False) -> float:
    """Model FLOPs per training token by the closed form of [SC21] eq. (3), padded vocabulary.

    * ``recompute=False`` (MFU numerator): ``72·l·h²·(1 + s/(6h) + V/(12·l·h))``.
      GPT-3 175B (V=51200): 72·96·12288²·(1 + 2048/(6·12288) + 51200/(12·96·12288)) =
      1.07644e12 FLOP/token.
    * ``recompute=True`` (full activation recompute, HFU numerator):
      ``96·l·h²·(1 + s/(6h) + V/(16·l·h))``; the logits layer is not recomputed.
      GPT-3 175B: 1.4340e12 FLOP/token (ratio 1.332 to the 72-form).

    The attention-score term is non-causal (dense), as in SC21 and PaLM. The closed form
    assumes MHA and a 4h GELU MLP; use :func:`model_flops_per_token` for GQA/SwiGLU models.
    Divide per-iteration FLOPs by ``B·s``; this function already returns the per-token value.

    Returns:
        FLOP per token (float).
    """
    n_l, h, s, v = spec.n_layers, spec.hidden, spec.seq_len, spec.vocab_padded
    if recompute:
        return 96 * n_l * h * h * (1 + s / (6 * h) + v / (16 * n_l * h))
    return 72 * n_l * h * h * (1 + s / (6 * h) + v / (12 * n_l * h))


def _layer_forward_flops(spec: ModelSpec, causal: bool) -> tuple[float, float]:
    """Forward FLOP per token of one layer, split into (linear GEMMs, attention core)."""
    linear = sum(2.0 * d_in * d_out for d_in, d_out in _linear_weights_per_layer(spec).values())
    q_width = spec.n_heads * spec.head_dim  # = h
    # QK^T and softmax(.)V: 2·s·q_width FLOP each per token (dense); causal masks half.
    attn = 4.0 * spec.seq_len * q_width
    if causal:
        attn *= 0.5
    return linear, attn


def model_flops_per_token(
    spec: ModelSpec,
    causal: bool = False,
    recompute: Recompute = "none",
) -> float:
    """Per-layer FLOP count per training token (general: GQA, SwiGLU), [MEG]-style.

    Forward FLOP per token and layer (1 multiply-add = 2 FLOP):

    * Q and O projections ``2·h²`` each; K and V ``2·h·kv_dim`` each (GQA: ``kv_dim =
      n_kv_heads·head_dim``);
    * attention core ``QKᵀ`` and ``softmax·V``: ``2·s·h`` each, halved when ``causal``
      (Megatron-LM since ``8873b55d6a``, 2025-03; NeMo since ``6251117f4c``, 2025-08);
    * MLP ``2·h·ffn`` per matrix: 2 matrices (GELU) or 3 (SwiGLU);
    * logits ``2·h·V_padded`` once per token (not per layer).

    Training multiplies the forward by 3 (forward, dgrad, wgrad). Recompute adds forward passes
    that are *hardware* FLOPs (HFU numerator), never model FLOPs:

    * ``'none'``: 3× everywhere — the MFU numerator.
    * ``'selective'``: [KOR] recomputes the attention core only: attention core 4×, rest 3×.
    * ``'full'``: every layer forward recomputed (4×); the logits layer is not (3×).

    For GPT-3 175B with ``causal=False`` this reduces exactly to the [SC21] forms of
    :func:`narayanan_flops_per_token`: 3·[l·(24h² + 4sh) + 2hV] = 72lh²(1 + s/6h + V/12lh), and
    with ``recompute='full'`` to 96lh²(1 + s/6h + V/16lh). With ``causal=True``: 1.06195e12.

    Returns:
        FLOP per token (float).

    Raises:
        ValueError: unknown ``recompute``.
    """
    linear, attn = _layer_forward_flops(spec, causal)
    logits = 2.0 * spec.hidden * spec.vocab_padded
    if recompute == "none":
        layer = 3 * (linear + attn)
    elif recompute == "selective":
        layer = 3 * linear + 4 * attn
    elif recompute == "full":
        layer = 4 * (linear + attn)
    else:
        raise ValueError(f"recompute must be 'none', 'selective' or 'full', got {recompute!r}")
    return spec.n_layers * layer + 3 * logits


def flops_per_step(
    spec: ModelSpec,
    global_batch_size: int,
    causal: bool = False,
    recompute: Recompute = "none",
    seq_len: int | None = None,
) -> float:
    """FLOPs of one optimizer step: ``global_batch_size · seq_len · F_tok``.

    Args:
        spec: model.
        global_batch_size: sequences per step.
        causal, recompute: passed to :func:`model_flops_per_token`.
        seq_len: tokens per sequence; defaults to ``spec.seq_len``. When given, the attention
            term uses this length too.

    Returns:
        FLOP per step. GPT-3 175B, GBS 2048, dense: 2048·2048·1.07644e12 = 4.5149e18.
    """
    if seq_len is not None and seq_len != spec.seq_len:
        spec = replace(spec, seq_len=seq_len)
    return global_batch_size * spec.seq_len * model_flops_per_token(spec, causal, recompute)


def lora_param_count(
    spec: ModelSpec,
    lora_rank: int,
    target_modules: Sequence[str] = ("q", "k", "v", "o"),
) -> int:
    """Trainable parameters of LoRA adapters: ``Σ r·(d_in + d_out)`` over targets and layers.

    ``target_modules`` name the linear layers of one block: ``q, k, v, o`` and ``gate, up, down``
    (SwiGLU) or ``up, down`` (GELU). The default (attention projections) is the MLPerf
    ``llama2_70b_lora`` reference setting (NeMo ``linear_qkv`` + ``linear_proj``); rank 16 in the
    Eos v4.1 logs (``lora_rank`` events of ``data/mlperf/v4.1/NVIDIA/results/eos_n8_ngc24.09_nemo``).

    Raises:
        ValueError: unknown target module.
    """
    mats = _linear_weights_per_layer(spec)
    unknown = [m for m in target_modules if m not in mats]
    if unknown:
        raise ValueError(f"unknown LoRA target modules {unknown}; known: {sorted(mats)}")
    per_layer = sum(lora_rank * (mats[m][0] + mats[m][1]) for m in target_modules)
    return spec.n_layers * per_layer


def lora_flops_per_token(
    spec: ModelSpec,
    lora_rank: int,
    target_modules: Sequence[str] = ("q", "k", "v", "o"),
    causal: bool = False,
    seq_len: int | None = None,
) -> float:
    """Model FLOPs per training token for LoRA fine-tuning (frozen base + low-rank adapters).

    Convention (stated because no MLPerf or Megatron code fixes one):

    * Frozen base linear layers and the frozen logits layer: forward ``2·d_in·d_out`` plus the
      input-gradient (dgrad) GEMM ``2·d_in·d_out``, **no weight-gradient GEMM** → 2× forward
      (≈ "4N" instead of "6N" for the frozen part). The dgrad of the very first layer, which is
      strictly not needed, is counted for simplicity.
    * Attention core (no weights): forward plus backward w.r.t. both activation operands → 3×
      forward, as in full training; halved when ``causal``.
    * LoRA adapters ``A: d_in×r``, ``B: r×d_out`` [LoRA]: forward, dgrad and wgrad → 3× forward,
      i.e. ``6·r·(d_in + d_out)`` per adapted matrix.
    * No recompute, embedding lookups are free.

    Args:
        spec: base model (e.g. :data:`LLAMA2_70B`).
        lora_rank: adapter rank ``r``.
        target_modules: adapted linear layers of each block (see :func:`lora_param_count`).
        causal: halve the attention-score FLOPs.
        seq_len: sequence length for the attention term (default ``spec.seq_len``).

    Returns:
        FLOP per token (float).
    """
    if seq_len is not None and seq_len != spec.seq_len:
        spec = replace(spec, seq_len=seq_len)
    linear, attn = _layer_forward_flops(spec, causal)
    adapters = 2.0 * lora_param_count(spec, lora_rank, target_modules)  # forward, all layers
    logits = 2.0 * spec.hidden * spec.vocab_padded
    return spec.n_layers * (2 * linear + 3 * attn) + 3 * adapters + 2 * logits


def tflops_from_tokens_per_s(tokens_per_s_per_gpu: float, flops_per_token: float) -> float:
    """Model TFLOP/s per GPU = tokens/s/GPU × FLOP/token / 1e12.

    Example (SAKURAONE paper, 32 nodes): 707.62 × 1.07644e12 / 1e12 = 761.7 TFLOP/s/GPU
    (the paper prints 757.13, 0.6% lower; see :func:`trainperf.compare.consistency_check`).
    """
    return tokens_per_s_per_gpu * flops_per_token / TFLOP


def model_tflops_per_gpu(total_flops: float, seconds: float, n_gpus: int) -> float:
    """Model TFLOP/s per GPU = FLOP / (seconds × GPUs) / 1e12 (Megatron/NeMo "TFLOP/s/GPU").

    Args:
        total_flops: model FLOPs done in ``seconds`` (e.g. :func:`flops_per_step`).
        seconds: wall time (a step time for step-level, the time to train for end-to-end).
        n_gpus: GPUs.

    Returns:
        TFLOP/s per GPU. Eos v4.1 n32: 4.5149e18 / (256 × 18.419 s) / 1e12 = 957.5.

    Raises:
        ValueError: non-positive ``seconds`` or ``n_gpus``.
    """
    if seconds <= 0 or n_gpus <= 0:
        raise ValueError("seconds and n_gpus must be positive")
    return total_flops / (seconds * n_gpus) / TFLOP


def mfu(tokens_per_s_per_gpu: float, flops_per_token: float, peak_flops: float) -> float:
    """Model FLOPs utilisation [PaLM]: ``tokens/s/GPU × FLOP/token / peak FLOP/s`` (fraction).

    Args:
        tokens_per_s_per_gpu: training throughput per GPU (tokens/s).
        flops_per_token: model FLOPs per token (no recompute), e.g. 1.07644e12 for GPT-3.
        peak_flops: dense peak of the precision the GEMMs ran in, FLOP/s (see :func:`peak_flops`).

    Returns:
        MFU as a fraction in [0, 1] for physical inputs. Pass the HFU numerator
        (``recompute='full'``) as ``flops_per_token`` to get HFU.

    Raises:
        ValueError: non-positive ``peak_flops``.
    """
    if peak_flops <= 0:
        raise ValueError("peak_flops must be positive (FLOP/s)")
    return tokens_per_s_per_gpu * flops_per_token / peak_flops


# --------------------------------------------------------------------------------------------
# Accelerators
# --------------------------------------------------------------------------------------------


_ACCEL_SCHEMA = {
    "accelerator": pl.String,
    "aliases": pl.String,
    "bf16_dense_tflops": pl.Float64,
    "fp8_dense_tflops": pl.Float64,
    "memory_gb": pl.Float64,
    "memory_bandwidth_tbps": pl.Float64,
    "source_url": pl.String,
}


def load_accelerators(path: str | Path | None = None) -> pl.DataFrame:
    """Load the accelerator peak table.

    Args:
        path: CSV path; default ``data/reference/accelerators.csv`` in the repository.

    Returns:
        polars frame, one row per accelerator, columns: ``accelerator`` (String, canonical
        name), ``aliases`` (String, ``;``-separated), ``bf16_dense_tflops`` (Float64, TFLOP/s,
        no 2:4 sparsity), ``fp8_dense_tflops`` (Float64, null where unsupported),
        ``memory_gb`` (Float64, decimal GB), ``memory_bandwidth_tbps`` (Float64, TB/s),
        ``source_url`` (String). Values from the vendor datasheets named in ``source_url``
        (``data/reference/README.md``).

    Raises:
        FileNotFoundError: missing file.
    """
    return read_reference("accelerators", path, _ACCEL_SCHEMA)


_STRIP_TOKENS = re.compile(r"^(nvidia|amd|instinct|tesla|\d+gb|hbm\w*)$")


def normalize_accelerator_name(name: str) -> str:
    """Normalise an accelerator string for lookup.

    Lower-cases, splits on non-alphanumerics, drops vendor words (``nvidia``, ``amd``,
    ``instinct``, ``tesla``) and memory tokens (``80gb``, ``hbm3``…), and joins the rest.
    ``"NVIDIA H100-SXM5-80GB"`` (MLPerf ``systems/*.json`` ``accelerator_model_name``) →
    ``"h100sxm5"``, an alias of ``"H100 SXM"``.
    """
    tokens = [t for t in re.split(r"[^0-9a-z]+", name.lower()) if t]
    return "".join(t for t in tokens if not _STRIP_TOKENS.match(t))


def resolve_accelerator(name: str, accelerators: pl.DataFrame | None = None) -> str:
    """Map an accelerator string (canonical name or alias, any case) to its canonical name.

    Raises:
        ValueError: no row matches; the message lists the known canonical names.
    """
    table = accelerators if accelerators is not None else load_accelerators()
    key = normalize_accelerator_name(name)
    for row in table.iter_rows(named=True):
        names = [row["accelerator"], *((row["aliases"] or "").split(";"))]
        if any(normalize_accelerator_name(n) == key for n in names if n.strip()):
            return row["accelerator"]
    known = ", ".join(table["accelerator"].to_list())
    raise ValueError(f"unknown accelerator {name!r}; known accelerators: {known}")


_PRECISION_COLUMNS = {
    "bf16": "bf16_dense_tflops",
    "fp16": "bf16_dense_tflops",
    "fp8": "fp8_dense_tflops",
}


def peak_flops(
    accelerator: str, precision: str = "bf16", accelerators: pl.DataFrame | None = None
) -> float:
    """Dense (no 2:4 sparsity) peak tensor throughput of one accelerator, FLOP/s.

    Args:
        accelerator: canonical name or alias (e.g. ``"NVIDIA H100-SXM5-80GB"`` → H100 SXM).
        precision: ``'bf16'``, ``'fp16'`` (same peak as BF16) or ``'fp8'``.
        accelerators: table from :func:`load_accelerators` (loaded if omitted).

    Returns:
        FLOP/s, e.g. H100 SXM: 989.4e12 (bf16), 1978.9e12 (fp8).

    Raises:
        ValueError: unknown accelerator (message lists known ones), unknown precision, or a
            precision the accelerator does not support (e.g. FP8 on A100).
    """
    table = accelerators if accelerators is not None else load_accelerators()
    canonical = resolve_accelerator(accelerator, table)
    col = _PRECISION_COLUMNS.get(precision.lower())
    if col is None:
        raise ValueError(f"unknown precision {precision!r}; known: {sorted(_PRECISION_COLUMNS)}")
    value = table.filter(pl.col("accelerator") == canonical)[col].item()
    if value is None or (isinstance(value, float) and math.isnan(value)):
        raise ValueError(f"{canonical} has no dense {precision} tensor peak in the table")
    return float(value) * TFLOP


def mfu_both_peaks(
    tflops_per_gpu: float,
    accelerator: str = "H100 SXM",
    accelerators: pl.DataFrame | None = None,
) -> dict[str, float | None]:
    """MFU of a model TFLOP/s/GPU figure against both the BF16 and the FP8 dense peak.

    NVIDIA-stack MLPerf GPT-3 runs trained in FP8 (Transformer Engine FP8 hybrid: ``fp8``
    settings of the NVIDIA GPT-3 configs in ``mlcommons/training_results_v4.1@b87b9e39``), so an MFU against
    the BF16 peak alone can exceed 90% and means little; report both, labelled.

    Returns:
        ``{'mfu_bf16_dense': fraction, 'mfu_fp8_dense': fraction or None if no FP8}``.
        Eos v4.1 n32 step-level 957.5 → 0.968 (BF16) and 0.484 (FP8).
    """
    table = accelerators if accelerators is not None else load_accelerators()
    out: dict[str, float | None] = {
        "mfu_bf16_dense": tflops_per_gpu * TFLOP / peak_flops(accelerator, "bf16", table)
    }
    try:
        out["mfu_fp8_dense"] = tflops_per_gpu * TFLOP / peak_flops(accelerator, "fp8", table)
    except ValueError:
        out["mfu_fp8_dense"] = None
    return out


def with_mfu_columns(
    df: pl.DataFrame,
    tflops_col: str = "tflops_per_gpu",
    accelerator: str = "H100 SXM",
    accelerators: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Append ``mfu_bf16_dense`` and ``mfu_fp8_dense`` (Float64 fractions) to ``df``.

    Args:
        df: any frame with a TFLOP/s/GPU column.
        tflops_col: the model TFLOP/s/GPU column.
        accelerator: accelerator of every row (canonical name or alias).

    Returns:
        ``df`` with two extra Float64 columns (null where ``tflops_col`` is null; FP8 column
        all-null if the accelerator has no FP8 peak).
    """
    table = accelerators if accelerators is not None else load_accelerators()
    bf16 = peak_flops(accelerator, "bf16", table) / TFLOP
    try:
        fp8: float | None = peak_flops(accelerator, "fp8", table) / TFLOP
    except ValueError:
        fp8 = None
    return df.with_columns(
        (pl.col(tflops_col).cast(pl.Float64) / bf16).alias("mfu_bf16_dense"),
        (pl.col(tflops_col).cast(pl.Float64) / fp8 if fp8 else pl.lit(None, pl.Float64)).alias(
            "mfu_fp8_dense"
        ),
    )


# --------------------------------------------------------------------------------------------
# Memory model
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Recipe:
    """Bytes per parameter of the model state, by component.

    Attributes:
        name: preset key.
        weight_bytes: working (compute) copy of the weights.
        grad_bytes: gradients.
        master_bytes: fp32 master weights (0 if the working copy is fp32).
        optimizer_bytes: optimizer state (Adam: momentum + variance, fp32 → 8).
        source: where the numbers come from.
    """

    name: str
    weight_bytes: float
    grad_bytes: float
    master_bytes: float
    optimizer_bytes: float
    source: str = ""

    @property
    def bytes_per_param(self) -> float:
        """Total model-state bytes per parameter, unsharded."""
        return self.weight_bytes + self.grad_bytes + self.master_bytes + self.optimizer_bytes


RECIPES: dict[str, Recipe] = {
    "mixed_adam_fp32_grads": Recipe(
        "mixed_adam_fp32_grads",
        2,
        4,
        4,
        8,
        "Megatron bf16 params + fp32 main grads: 18 B/param "
        "(NVIDIA/Megatron-LM@d98e8a64:docs/user-guide/features/dist_optimizer.md:14-20)",
    ),
    "mixed_adam": Recipe(
        "mixed_adam",
        2,
        2,
        4,
        8,
        "ZeRO (Rajbhandari et al. 2020, arXiv:1910.02054 §3.1): 2Ψ + 2Ψ + 12Ψ = 16 B/param",
    ),
    "fp32_adam": Recipe(
        "fp32_adam",
        4,
        4,
        0,
        8,
        "fp32 params and grads + Adam: 16 B/param (dist_optimizer.md:14-20)",
    ),
}
"""Model-state recipes keyed by name."""


def _recipe(recipe: Recipe | str) -> Recipe:
    if isinstance(recipe, Recipe):
        return recipe
    try:
        return RECIPES[recipe]
    except KeyError:
        raise ValueError(f"unknown recipe {recipe!r}; known: {sorted(RECIPES)}") from None


def model_state_bytes(
    spec: ModelSpec, recipe: Recipe | str = "mixed_adam_fp32_grads", n_params: float | None = None
) -> float:
    """Total model state (weights, grads, master weights, optimizer), bytes, unsharded.

    Args:
        spec: model (used for :func:`param_count` unless ``n_params`` is given).
        recipe: :class:`Recipe` or a key of :data:`RECIPES`.
        n_params: override the parameter count (e.g. 175e9 for the talk's arithmetic).

    Returns:
        Bytes. GPT-3 with N = 175e9 at 18 B/param: 3.15e12 (3.15 TB); with
        ``param_count(GPT3_175B)`` = 174.6e9: 3.14e12.

    Raises:
        ValueError: unknown recipe name.
    """
    n = float(param_count(spec) if n_params is None else n_params)
    return n * _recipe(recipe).bytes_per_param


def model_state_bytes_per_gpu(
    spec: ModelSpec,
    recipe: Recipe | str = "mixed_adam_fp32_grads",
    tp: int = 1,
    pp: int = 1,
    dp: int = 1,
    zero_stage: int = 0,
    n_params: float | None = None,
) -> float:
    """Model-state bytes on one GPU under TP × PP model parallelism and ZeRO over DP.

    Parameters per GPU are ``N / (tp·pp)`` (even split; embeddings and logits imbalance ignored).
    Sharding over the ``dp`` data-parallel ranks [ZeRO]:

    * stage 0: nothing sharded;
    * stage 1 (= Megatron distributed optimizer): master weights + optimizer state ``/dp``
      (bf16/fp32-grad recipe: ``6 + 12/dp`` B/param [DO]);
    * stage 2: also gradients ``/dp``;
    * stage 3: also weights ``/dp``.

    Returns:
        Bytes per GPU (float). GPT-3, 18 B/param, tp=4, pp=8: dp=1 → 98.2e9; dp=2, stage 1 → 65.5e9.

    Raises:
        ValueError: bad parallel sizes or stage.
    """
    if min(tp, pp, dp) < 1:
        raise ValueError("tp, pp and dp must be >= 1")
    if zero_stage not in (0, 1, 2, 3):
        raise ValueError(f"zero_stage must be 0..3, got {zero_stage}")
    r = _recipe(recipe)
    n = float(param_count(spec) if n_params is None else n_params) / (tp * pp)
    w, g, opt = r.weight_bytes, r.grad_bytes, r.master_bytes + r.optimizer_bytes
    if zero_stage >= 1:
        opt /= dp
    if zero_stage >= 2:
        g /= dp
    if zero_stage >= 3:
        w /= dp
    return n * (w + g + opt)


def activation_bytes_per_layer(
    spec: ModelSpec,
    micro_batch_size: int = 1,
    tp: int = 1,
    sequence_parallel: bool = True,
    recompute: Recompute = "none",
    flash_attention: bool = False,
    seq_len: int | None = None,
) -> float:
    """Activation bytes stored for one layer and one micro-batch [KOR] Table 2 (16-bit activations).

    * no recompute, no parallelism: ``s·b·h·(34 + 5·a·s/h)``;
      with TP and sequence parallelism: divided by ``tp``;
      with TP without SP: ``s·b·h·(10 + 24/t + 5·a·s/(h·t))``;
    * ``'selective'`` (attention core recomputed): ``34·s·b·h`` (÷ tp with SP);
    * ``'full'``: only the layer input, ``2·s·b·h`` (÷ tp with SP);
    * ``flash_attention=True`` drops the ``5·a·s/h`` term (no s² score matrix is stored).

    The formula was derived for MHA; for GQA models it is an approximation.

    Returns:
        Bytes. GPT-3, s=2048, b=1, tp=4 with SP: 0.72e9 (0.21e9 with flash attention).
    """
    s = seq_len or spec.seq_len
    b, h, a, t = micro_batch_size, spec.hidden, spec.n_heads, tp
    sbh = s * b * h
    score = 0.0 if flash_attention else 5 * a * s / h
    if recompute == "full":
        return 2 * sbh / (t if sequence_parallel else 1)
    if recompute == "selective":
        return 34 * sbh / (t if sequence_parallel else 1)
    if recompute != "none":
        raise ValueError(f"recompute must be 'none', 'selective' or 'full', got {recompute!r}")
    if sequence_parallel or t == 1:
        return sbh * (34 + score) / t
    return sbh * (10 + 24 / t + score / t)


def activation_bytes_per_gpu(
    spec: ModelSpec,
    micro_batch_size: int = 1,
    tp: int = 1,
    pp: int = 1,
    virtual_pp: int = 1,
    sequence_parallel: bool = True,
    recompute: Recompute = "none",
    flash_attention: bool = False,
) -> float:
    """Peak activation bytes on the first pipeline stage under 1F1B [KOR] §4.2.3.

    The first stage holds ``pp`` micro-batches of ``l/pp`` layers, i.e. ``l`` layers' worth of
    activations whatever ``pp`` is; the interleaved schedule multiplies this by
    ``1 + (pp − 1)/(pp · virtual_pp)``. Embedding, logits and loss buffers are not counted.

    Returns:
        Bytes per GPU.
    """
    per_layer = activation_bytes_per_layer(
        spec, micro_batch_size, tp, sequence_parallel, recompute, flash_attention
    )
    factor = 1.0
    if virtual_pp > 1 and pp > 1:
        factor += (pp - 1) / (pp * virtual_pp)
    return spec.n_layers * per_layer * factor


@dataclass(frozen=True)
class MemoryBreakdown:
    """Per-GPU memory estimate, bytes.

    Attributes:
        model_state_bytes: weights + grads + master + optimizer on this GPU.
        activation_bytes: stored activations (first pipeline stage).
        total_bytes: sum of the two (no workspace, NCCL buffers or fragmentation).
    """

    model_state_bytes: float
    activation_bytes: float

    @property
    def total_bytes(self) -> float:
        """Model state + activations, bytes."""
        return self.model_state_bytes + self.activation_bytes


def bytes_per_gpu(
    spec: ModelSpec,
    recipe: Recipe | str = "mixed_adam_fp32_grads",
    tp: int = 1,
    pp: int = 1,
    dp: int = 1,
    zero_stage: int = 1,
    micro_batch_size: int = 1,
    virtual_pp: int = 1,
    sequence_parallel: bool = True,
    recompute: Recompute = "none",
    flash_attention: bool = True,
    n_params: float | None = None,
) -> MemoryBreakdown:
    """Per-GPU memory: :func:`model_state_bytes_per_gpu` + :func:`activation_bytes_per_gpu`.

    Defaults follow the NVIDIA MLPerf GPT-3 layout family (distributed optimizer = ZeRO-1,
    sequence parallel, fused/flash attention, no recompute).

    Returns:
        :class:`MemoryBreakdown` in bytes.
    """
    return MemoryBreakdown(
        model_state_bytes=model_state_bytes_per_gpu(spec, recipe, tp, pp, dp, zero_stage, n_params),
        activation_bytes=activation_bytes_per_gpu(
            spec,
            micro_batch_size,
            tp,
            pp,
            virtual_pp,
            sequence_parallel,
            recompute,
            flash_attention,
        ),
    )


def min_nodes_for_model_state(
    spec: ModelSpec,
    recipe: Recipe | str = "mixed_adam_fp32_grads",
    gpus_per_node: int = 8,
    gpu_memory_bytes: float = 80e9,
    n_params: float | None = None,
) -> int:
    """Smallest node count whose aggregate GPU memory holds the model state, perfect sharding.

    ``ceil(model_state_bytes / (gpus_per_node · gpu_memory_bytes))`` — a lower bound that
    ignores activations, workspace, NCCL buffers and the divisibility of a real TP×PP×DP layout.
    GPT-3 at 18 B/param: 3.15e12 B > 4 × 8 × 80e9 = 2.56e12 B, so at least 5 nodes.

    Returns:
        Nodes (int).
    """
    state = model_state_bytes(spec, recipe, n_params)
    return math.ceil(state / (gpus_per_node * gpu_memory_bytes))


def memory_vs_nodes(
    spec: ModelSpec,
    nodes: Iterable[int] = (1, 2, 4, 8, 16, 32, 64, 96),
    recipe: Recipe | str = "mixed_adam_fp32_grads",
    gpus_per_node: int = 8,
    gpu_memory_bytes: float = 80e9,
    tp: int = 4,
    pp: int = 8,
    zero_stage: int = 1,
    n_params: float | None = None,
) -> pl.DataFrame:
    """Model-state memory against node count, for charts.

    Returns:
        polars frame, one row per node count, columns:
        ``n_nodes`` (Int64), ``n_gpus`` (Int64), ``aggregate_hbm_bytes`` (Float64),
        ``model_state_bytes`` (Float64, total, unsharded), ``bytes_per_gpu_perfect`` (Float64,
        total / n_gpus), ``fits_perfect`` (Boolean), ``dp`` (Int64, ``n_gpus/(tp·pp)``, null if
        not a positive integer), ``bytes_per_gpu_layout`` (Float64, :func:`model_state_bytes_per_gpu`
        with tp/pp/dp/zero_stage; null where dp is null), ``fits_layout`` (Boolean, model state
        only, null where dp is null), ``gpu_memory_bytes`` (Float64).
    """
    state = model_state_bytes(spec, recipe, n_params)
    rows = []
    for n in nodes:
        g = n * gpus_per_node
        dp = g // (tp * pp) if g % (tp * pp) == 0 and g >= tp * pp else None
        layout = (
            model_state_bytes_per_gpu(spec, recipe, tp, pp, dp, zero_stage, n_params)
            if dp
            else None
        )
        rows.append(
            {
                "n_nodes": n,
                "n_gpus": g,
                "aggregate_hbm_bytes": float(g * gpu_memory_bytes),
                "model_state_bytes": state,
                "bytes_per_gpu_perfect": state / g,
                "fits_perfect": state / g <= gpu_memory_bytes,
                "dp": dp,
                "bytes_per_gpu_layout": layout,
                "fits_layout": None if layout is None else layout <= gpu_memory_bytes,
                "gpu_memory_bytes": float(gpu_memory_bytes),
            }
        )
    schema = {
        "n_nodes": pl.Int64,
        "n_gpus": pl.Int64,
        "aggregate_hbm_bytes": pl.Float64,
        "model_state_bytes": pl.Float64,
        "bytes_per_gpu_perfect": pl.Float64,
        "fits_perfect": pl.Boolean,
        "dp": pl.Int64,
        "bytes_per_gpu_layout": pl.Float64,
        "fits_layout": pl.Boolean,
        "gpu_memory_bytes": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema)
