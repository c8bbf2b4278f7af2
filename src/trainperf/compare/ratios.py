"""Per-GPU ratios of an evaluated system (A) against a reference (B), and how a reference's time
to train is carried to another GPU count.

Every ratio is oriented as **cost of A / cost of B**: above 1, the evaluated system needs more GPU
time (is less efficient per GPU) than the reference.

* **per-GPU GPU-time ratio** ``(n_A·T_A) / (n_B·T_B)`` with n GPUs and T the time to train; at
  equal GPU counts it is the time ratio ``T_A/T_B``. This is ``ratio`` of ``comparison.csv``.
* **token-normalized GPU-minutes ratio** ``(n_A·T_A/tokens_A) / (n_B·T_B/tokens_B)``: cancels
  GBS-dependent token budgets; equals ``MFU_B/MFU_A`` end to end with one F_tok.
* **step-level tokens/s/GPU ratio** ``tps_B/tps_A`` and **MFU ratio** ``MFU_B/MFU_A``.
* **linear extrapolation** ``T_B(n') = T_B(n)·n/n'`` (perfect strong scaling: the reference's
  GPU time is the same at every count; the SAKURAONE paper's 96-node Eos value
  ``49.80 × 64/96 = 33.20`` min, arXiv:2604.13600 Table 12 as relayed).
* **power-law interpolation** ``T(n) = a·n^b`` through two measured scales (a straight line on
  the log-log strong-scaling plot, exact at both points).

Sources: the ratios of published MLPerf Training results (``mlcommons/training_results_v3.1@d06288b2``,
``…_v4.1@b87b9e39``); the raw time-to-train ratio of the SAKURAONE paper (Konishi, Tsubouchi,
Tsuruta, MLSys 2026, arXiv:2604.13600, Table 12).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from trainperf.flops import GPT3_175B, model_flops_per_token

__all__ = [
    "compare_rows",
    "extrapolate_linear",
    "gpu_minutes",
    "gpu_time_ratio",
    "implied_minutes_for_ratio",
    "interpolate_power_law",
    "mfu_ratio",
    "step_throughput_ratio",
    "time_to_train_ratio",
    "token_normalized_ratio",
]


def gpu_minutes(minutes: float, n_gpus: int) -> float:
    """GPU-minutes = time to train (min) × GPUs.

    >>> gpu_minutes(49.795, 512)  # Eos v4.1 GPT-3, 64 nodes × 8 GPUs
    25495.04
    """
    return minutes * n_gpus


def token_normalized_ratio(
    n_gpus_a: int,
    minutes_a: float,
    tokens_a: float,
    n_gpus_b: int,
    minutes_b: float,
    tokens_b: float,
) -> float:
    """``(n_A·T_A/tokens_A) / (n_B·T_B/tokens_B)``: GPU-minutes per token of A over B (unitless).

    Example (rows of ``data/reference/published_results.csv``, from
    ``mlcommons/training_results_v4.1@b87b9e39``): Oracle 1536 GPUs 19.69 min 1.309e9 tokens vs
    Eos v4.1 n32 256 GPUs 96.66 min 1.208e9 tokens → 1.13.
    """
    return (n_gpus_a * minutes_a / tokens_a) / (n_gpus_b * minutes_b / tokens_b)


def step_throughput_ratio(tokens_per_s_per_gpu_a: float, tokens_per_s_per_gpu_b: float) -> float:
    """Step-level throughput ratio ``tps_B / tps_A`` (>1: A processes fewer tokens/s per GPU)."""
    return tokens_per_s_per_gpu_b / tokens_per_s_per_gpu_a


def mfu_ratio(mfu_a: float, mfu_b: float) -> float:
    """``MFU_B / MFU_A`` (>1: A has the lower MFU). Inputs must share F_tok and peak."""
    return mfu_b / mfu_a


def time_to_train_ratio(
    minutes_a: float,
    minutes_b: float,
    n_nodes_a: int | None = None,
    n_nodes_b: int | None = None,
) -> float:
    """Raw time-to-train ratio ``T_A / T_B``; meaningful only at equal node count.

    Raises:
        ValueError: both node counts given and different.
    """
    if n_nodes_a is not None and n_nodes_b is not None and n_nodes_a != n_nodes_b:
        raise ValueError(
            f"raw time-to-train ratio needs equal node counts, got {n_nodes_a} and {n_nodes_b}; "
            "extrapolate the reference with extrapolate_linear() or use token_normalized_ratio()"
        )
    return minutes_a / minutes_b


def extrapolate_linear(minutes_ref: float, nodes_ref: int, nodes_target: int) -> float:
    """Time to train at ``nodes_target`` assuming perfect strong scaling: ``T·n_ref/n_target``
    (nodes or GPUs, the same unit on both sides).

    >>> round(extrapolate_linear(49.80, 64, 96), 2)
    33.2

    This is how the SAKURAONE paper obtained Eos at 96 nodes: 49.80 × 64/96 = 33.20 min. It is
    optimistic for the reference (Eos's measured v3.1 96-node score is 40.626 min at GBS 3072).
    """
    return minutes_ref * nodes_ref / nodes_target


def gpu_time_ratio(n_gpus_a: int, minutes_a: float, n_gpus_b: int, minutes_b: float) -> float:
    """Per-GPU GPU-time ratio ``(n_A·T_A) / (n_B·T_B)`` (unitless; above 1: A needs more GPU time).

    At equal GPU counts it is the time ratio ``T_A/T_B``:

    >>> round(gpu_time_ratio(512, 58.30, 512, 49.795), 4)  # SAKURAONE 64 nodes / Eos v4.1 n64
    1.1708
    >>> gpu_time_ratio(16, 10.0, 32, 5.0)
    1.0
    """
    return (n_gpus_a * minutes_a) / (n_gpus_b * minutes_b)


def interpolate_power_law(
    n: float, n_low: float, t_low: float, n_high: float, t_high: float
) -> float:
    """Time to train at ``n`` GPUs on the power law ``T = a·n^b`` through two measured scales.

    ``b = ln(T_high/T_low) / ln(n_high/n_low)``, ``T(n) = T_low·(n/n_low)^b``. Strong-scaling
    curves of time to train are close to straight on log-log axes between neighbouring measured
    scales (Amdahl-like: a fixed part and a part that shrinks with n), so the line through the two
    bracketing points on those axes is the least-assuming estimate that is exact at both; and it
    keeps the GPU time ``n·T = a·n^(1+b)`` between the two measured GPU times, so the two measured
    neighbours bound it. Example, Eos v4.1 Llama 2 70B LoRA, 8 GPUs 27.928 min and 64 GPUs 4.573
    min, at 32 GPUs: b = ln(4.573/27.928)/ln 8 = −0.8702, T = 27.928 × 4^−0.8702 = 27.928 × 0.2993 = 8.359 min:

    >>> round(interpolate_power_law(32, 8, 27.928, 64, 4.573), 3)
    8.359

    Raises:
        ValueError: ``n`` not between the two scales, or a count or time not positive.
    """
    if min(n, n_low, n_high, t_low, t_high) <= 0:
        raise ValueError("GPU counts and times must be positive")
    if not (min(n_low, n_high) <= n <= max(n_low, n_high)) or n_low == n_high:
        raise ValueError(f"{n} GPUs is not between the measured scales {n_low} and {n_high}")
    b = math.log(t_high / t_low) / math.log(n_high / n_low)
    return t_low * (n / n_low) ** b


def compare_rows(
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    flops_per_token: float | None = None,
    peak_flops: float = 1978.9e12,
) -> dict[str, float | None]:
    """All per-GPU ratios of row ``a`` (evaluated) against row ``b`` (reference).

    Args:
        a, b: rows of a published-results frame (e.g. from :func:`select_row`).
        flops_per_token: F_tok for MFU (default GPT-3 175B dense, 1.07644e12 FLOP/token).
        peak_flops: dense peak for MFU, FLOP/s (default H100 SXM FP8, 1978.9e12).

    Returns:
        dict with ``gpu_minutes_ratio`` (raw ``n_A·T_A/(n_B·T_B)``),
        ``token_normalized_ratio`` (None if either row lacks tokens),
        ``time_to_train_ratio`` (None unless node counts are equal),
        ``step_throughput_ratio`` and ``mfu_ratio`` (None if either row lacks tokens/s),
        ``mfu_a`` and ``mfu_b`` (fractions of ``peak_flops``, step-level).
    """
    f_tok = flops_per_token if flops_per_token is not None else model_flops_per_token(GPT3_175B)
    out: dict[str, float | None] = {
        "gpu_minutes_ratio": gpu_minutes(a["minutes"], a["n_gpus"])
        / gpu_minutes(b["minutes"], b["n_gpus"]),
        "token_normalized_ratio": None,
        "time_to_train_ratio": None,
        "step_throughput_ratio": None,
        "mfu_ratio": None,
        "mfu_a": None,
        "mfu_b": None,
    }
    if a.get("tokens_to_converge") and b.get("tokens_to_converge"):
        out["token_normalized_ratio"] = token_normalized_ratio(
            a["n_gpus"],
            a["minutes"],
            a["tokens_to_converge"],
            b["n_gpus"],
            b["minutes"],
            b["tokens_to_converge"],
        )
    if a.get("n_nodes") is not None and a.get("n_nodes") == b.get("n_nodes"):
        out["time_to_train_ratio"] = time_to_train_ratio(a["minutes"], b["minutes"])
    tps_a, tps_b = a.get("tokens_per_s_per_gpu"), b.get("tokens_per_s_per_gpu")
    if tps_a and tps_b:
        out["step_throughput_ratio"] = step_throughput_ratio(tps_a, tps_b)
        out["mfu_a"] = tps_a * f_tok / peak_flops
        out["mfu_b"] = tps_b * f_tok / peak_flops
        out["mfu_ratio"] = mfu_ratio(out["mfu_a"], out["mfu_b"])
    return out


def implied_minutes_for_ratio(
    ratio: float,
    reference: Mapping[str, Any],
    n_gpus: int,
    tokens: float | None = None,
) -> float:
    """Time to train an evaluated system would need for a given token-normalized ratio.

    ``T_A = ratio · (n_B·T_B/tokens_B) · tokens_A / n_A``; ``tokens_A`` defaults to the
    reference's tokens (same GBS). Example: 1.28 against Eos v4.1 n64 (512 GPUs, 49.795 min) at
    512 GPUs → 1.28 × 512 × 49.795 / 512 = 63.7 min.

    Args:
        ratio: target ratio (cost A / cost B).
        reference: a row (mapping with ``n_gpus``, ``minutes``, ``tokens_to_converge``).
        n_gpus: GPUs of the evaluated system.
        tokens: tokens the evaluated run needs (default: the reference's; if the reference has
            none, the ratio is applied to GPU-minutes directly).

    Returns:
        Minutes.
    """
    tok_b = reference.get("tokens_to_converge")
    tok_a = tokens if tokens is not None else tok_b
    per_token = 1.0 if tok_b is None or tok_a is None else tok_a / tok_b
    return ratio * reference["n_gpus"] * reference["minutes"] * per_token / n_gpus
