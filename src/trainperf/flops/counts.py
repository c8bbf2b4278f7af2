"""Model FLOPs per token and per step, LoRA, TFLOP/s and MFU from throughput; each formula names its source (see :mod:`trainperf.flops`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from trainperf.flops.models import ModelSpec, linear_weights_per_layer
from trainperf.flops.units import TFLOP, Recompute

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
    linear = sum(2.0 * d_in * d_out for d_in, d_out in linear_weights_per_layer(spec).values())
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
    mats = linear_weights_per_layer(spec)
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
    (the paper prints 757.13, 0.6% lower; see :func:`trainperf.compare.consistency_checks`).

    >>> round(tflops_from_tokens_per_s(707.62, 1.07644e12), 1)
    761.7
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

        >>> round(model_tflops_per_gpu(4.5149e18, 18.419, 256), 1)
        957.5

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

    >>> round(mfu(707.62, 1.07644e12, 989.4e12), 3)  # 761.7 TFLOP/s of H100 SXM's BF16 dense 989.4
    0.77
    """
    if peak_flops <= 0:
        raise ValueError("peak_flops must be positive (FLOP/s)")
    return tokens_per_s_per_gpu * flops_per_token / peak_flops
