"""Per-GPU efficiency of an evaluated system (A) against a reference system (B, e.g. NVIDIA Eos).

Every ratio here is oriented as **cost of A / cost of B**: a value above 1 means the evaluated
system needs more GPU time (is less efficient per GPU) than the reference. This is the
orientation of the SAKURAONE paper's table (SAKURAONE minutes ÷ Eos minutes = 1.09× …).

Definitions (the ratios of published MLPerf Training results, ``mlcommons/training_results_v3.1@d06288b2``
and ``…_v4.1@b87b9e39``; the raw time-to-train ratio is the SAKURAONE paper's, arXiv:2604.13600 Table 12):

* **token-normalized GPU-minutes ratio** ``(n_A·T_A/tokens_A) / (n_B·T_B/tokens_B)`` with n GPUs,
  T time to train and tokens the tokens consumed to reach the target. It cancels the
  GBS-dependent token budgets (GBS 3072–4096 runs need 4–8% more tokens than GBS 2048) and
  equals ``TFLOP/s/GPU_B / TFLOP/s/GPU_A`` (end-to-end) = ``MFU_B / MFU_A`` with one F_tok.
* **step-level tokens/s/GPU ratio** ``tps_B / tps_A`` (training-step throughput; excludes
  evaluation and start-up).
* **MFU ratio** ``MFU_B / MFU_A`` (same F_tok and peak on both sides, so equal to the TFLOP/s ratio).
* **raw time-to-train ratio** ``T_A / T_B`` at equal node count (the paper's table).
* **linear extrapolation** of a reference to another node count ``T_B(n') = T_B(n)·n/n'``
  (perfect strong scaling, optimistic for the reference; the paper's 96-node Eos value
  ``49.80 × 64/96 = 33.20`` min).

Input frames follow ``data/reference/published_results.csv`` (see :func:`load_published_results`).
Sources: SAKURAONE paper (Konishi, Tsubouchi, Tsuruta, MLSys 2026, arXiv:2604.13600,
https://arxiv.org/abs/2604.13600, Table 12, as relayed by a third-party summary; not checked against
the paper); Eos results from
``mlcommons/training_results_v3.1@d06288b2`` and ``…_v4.1@b87b9e39``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from trainperf.flops import GPT3_175B, model_flops_per_token
from trainperf.tables import read_table

__all__ = [
    "COMPARISON_SCHEMA",
    "GPT3_EVAL_INTERVAL_TOKENS",
    "GPT3_MIN_TOKENS_GBS2048",
    "PAPER_TABLE",
    "PUBLISHED_SCHEMA",
    "cluster_comparison",
    "compare_rows",
    "consistency_check",
    "extrapolate_linear",
    "gpu_minutes",
    "implied_minutes_for_ratio",
    "load_published_results",
    "log_comparison",
    "mfu_ratio",
    "paper_comparison_table",
    "select_row",
    "side_from_published",
    "side_from_results",
    "step_throughput_ratio",
    "talk_ratio_placement",
    "time_to_train_ratio",
    "token_normalized_ratio",
]

PUBLISHED_SCHEMA: dict[str, pl.DataType] = {
    "system": pl.String,
    "round": pl.String,
    "submitter": pl.String,
    "benchmark": pl.String,
    "n_gpus": pl.Int64,
    "n_nodes": pl.Int64,
    "minutes": pl.Float64,
    "tokens_to_converge": pl.Int64,
    "samples_to_converge": pl.Int64,
    "global_batch_size": pl.Int64,
    "precision": pl.String,
    "tokens_per_s_per_gpu": pl.Float64,
    "tflops_per_gpu": pl.Float64,
    "source": pl.String,
    "verified": pl.Boolean,
}
"""Schema of ``published_results.csv``: ``minutes`` is the MLPerf time to train
(time_to_train_min); ``tokens_per_s_per_gpu`` and ``tflops_per_gpu`` are step-level (training
steps only), model FLOPs with F_tok = 1.07644e12 for GPT-3."""

GPT3_EVAL_INTERVAL_TOKENS = 24576 * 2048
"""Tokens between GPT-3 evaluations: 24,576 sequences × 2048 = 50,331,648
(``mlcommons/training_policies@ad8c1ace:training_rules.adoc:477``)."""

GPT3_MIN_TOKENS_GBS2048 = 23 * GPT3_EVAL_INTERVAL_TOKENS
"""Smallest GPT-3 token budget seen at GBS 2048: 23 evaluations = 1,157,627,904 tokens
(the fewest evaluations of any GBS-2048 GPT-3 result in ``mlcommons/training_results_v3.0`` to
``…_v4.1``, counted from the last evaluation's ``epoch_num`` in those logs; the bundled GBS-2048
Eos logs took 24). A lower bound used when a row does not state its tokens."""

PAPER_TABLE: tuple[dict[str, Any], ...] = (
    {"benchmark": "gpt3", "n_nodes": 32, "paper_evaluated_min": 105.31, "paper_reference_min": 96.66, "paper_ratio": 1.09},
    {"benchmark": "gpt3", "n_nodes": 64, "paper_evaluated_min": 58.30, "paper_reference_min": 49.80, "paper_ratio": 1.17},
    {"benchmark": "gpt3", "n_nodes": 96, "paper_evaluated_min": 41.86, "paper_reference_min": 33.20, "paper_ratio": 1.26},
    {"benchmark": "llama2_70b_lora", "n_nodes": 1, "paper_evaluated_min": 28.44, "paper_reference_min": 27.93, "paper_ratio": 1.02},
    {"benchmark": "llama2_70b_lora", "n_nodes": 8, "paper_evaluated_min": 4.79, "paper_reference_min": 4.57, "paper_ratio": 1.05},
)  # fmt: skip
"""The SAKURAONE paper's Eos comparison (arXiv:2604.13600 Table 12, as relayed by a third-party
summary; not checked against the paper). The 96-node Eos value is the paper's linear extrapolation from
64 nodes, not a measurement."""


def load_published_results(path: str | Path | None = None) -> pl.DataFrame:
    """Load ``data/reference/published_results.csv`` with :data:`PUBLISHED_SCHEMA`.

    Returns:
        polars frame, one row per published result; columns and dtypes as in
        :data:`PUBLISHED_SCHEMA` (nulls where a value is not published).

    Raises:
        FileNotFoundError: missing file.
    """
    return read_table("published_results", path, PUBLISHED_SCHEMA)


def select_row(results: pl.DataFrame, **equals: Any) -> dict[str, Any]:
    """Return the single row of ``results`` whose columns equal the given values.

    Example: ``select_row(df, system="Eos", round="v4.1", benchmark="gpt3", n_nodes=64)``.

    Raises:
        ValueError: no row or more than one row matches (the message shows the filter).
    """
    sub = results
    for col, val in equals.items():
        sub = sub.filter(pl.col(col) == val)
    if sub.height != 1:
        raise ValueError(f"expected exactly one row for {equals}, found {sub.height}")
    return sub.row(0, named=True)


def gpu_minutes(minutes: float, n_gpus: int) -> float:
    """GPU-minutes = time to train (min) × GPUs."""
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
    """Time to train at ``nodes_target`` assuming perfect strong scaling: ``T·n_ref/n_target``.

    This is how the SAKURAONE paper obtained Eos at 96 nodes: 49.80 × 64/96 = 33.20 min. It is
    optimistic for the reference (Eos's measured v3.1 96-node score is 40.626 min at GBS 3072).
    """
    return minutes_ref * nodes_ref / nodes_target


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


def paper_comparison_table(
    results: pl.DataFrame | None = None,
    evaluated: str = "SAKURAONE",
    reference: str = "Eos",
    reference_round: str = "v4.1",
    extrapolate_from_nodes: int = 64,
    actual_96_round: str = "v3.1",
) -> pl.DataFrame:
    """Reproduce the SAKURAONE paper's Eos comparison from the published rows.

    Reference rows as the paper used them (arXiv:2604.13600 Table 12, as relayed by a third-party
    summary; the Eos minutes match the bundled v4.1 logs' scores): GPT-3 at 32 and 64 nodes → Eos v4.1 ``eos_n32`` (96.664 min) and ``eos_n64``
    (49.795 min); GPT-3 at 96 nodes → Eos v4.1 64-node result extrapolated linearly
    (:func:`extrapolate_linear`); Llama 2 70B LoRA at 1 and 8 nodes → Eos v4.1 8-GPU (27.93 min) and
    64-GPU (4.573 min) results. Beside the extrapolation, Eos's measured 96-node result
    (v3.1 ``eos_n96``, 40.626 min, GBS 3072, older software) is shown.

    Returns:
        polars frame, one row per :data:`PAPER_TABLE` entry, columns:
        ``benchmark`` (String), ``n_nodes`` (Int64), ``n_gpus`` (Int64),
        ``evaluated_min`` (Float64), ``reference_min`` (Float64), ``reference_extrapolated``
        (Boolean), ``reference_label`` (String), ``ratio`` (Float64, T_A/T_B),
        ``ratio_2dp`` (Float64, rounded), ``paper_ratio`` (Float64), ``matches_paper``
        (Boolean), ``reference_actual_min`` (Float64, measured Eos at that node count from
        another round, null unless extrapolated), ``ratio_vs_actual`` (Float64),
        ``gpu_minutes_evaluated`` (Float64), ``gpu_minutes_reference`` (Float64).

    Raises:
        ValueError: a needed row is missing or ambiguous.
    """
    df = results if results is not None else load_published_results()
    out = []
    for entry in PAPER_TABLE:
        bench, nodes = entry["benchmark"], entry["n_nodes"]
        a = select_row(df, system=evaluated, benchmark=bench, n_nodes=nodes)
        actual_min = None
        try:
            b = select_row(
                df, system=reference, round=reference_round, benchmark=bench, n_nodes=nodes
            )
            ref_min, extrapolated = b["minutes"], False
            label = f"{reference} {reference_round} n{nodes} (measured)"
        except ValueError:
            base = select_row(
                df,
                system=reference,
                round=reference_round,
                benchmark=bench,
                n_nodes=extrapolate_from_nodes,
            )
            ref_min = extrapolate_linear(base["minutes"], extrapolate_from_nodes, nodes)
            extrapolated = True
            label = (
                f"{reference} {reference_round} n{extrapolate_from_nodes} "
                f"x {extrapolate_from_nodes}/{nodes} (linear extrapolation)"
            )
            try:
                actual = select_row(
                    df, system=reference, round=actual_96_round, benchmark=bench, n_nodes=nodes
                )
                actual_min = actual["minutes"]
            except ValueError:
                actual_min = None
        ratio = time_to_train_ratio(a["minutes"], ref_min)
        out.append(
            {
                "benchmark": bench,
                "n_nodes": nodes,
                "n_gpus": a["n_gpus"],
                "evaluated_min": a["minutes"],
                "reference_min": ref_min,
                "reference_extrapolated": extrapolated,
                "reference_label": label,
                "ratio": ratio,
                "ratio_2dp": round(ratio, 2),
                "paper_ratio": entry["paper_ratio"],
                "matches_paper": round(ratio, 2) == entry["paper_ratio"],
                "reference_actual_min": actual_min,
                "ratio_vs_actual": None if actual_min is None else a["minutes"] / actual_min,
                "gpu_minutes_evaluated": gpu_minutes(a["minutes"], a["n_gpus"]),
                "gpu_minutes_reference": gpu_minutes(ref_min, a["n_gpus"]),
            }
        )
    schema = {
        "benchmark": pl.String,
        "n_nodes": pl.Int64,
        "n_gpus": pl.Int64,
        "evaluated_min": pl.Float64,
        "reference_min": pl.Float64,
        "reference_extrapolated": pl.Boolean,
        "reference_label": pl.String,
        "ratio": pl.Float64,
        "ratio_2dp": pl.Float64,
        "paper_ratio": pl.Float64,
        "matches_paper": pl.Boolean,
        "reference_actual_min": pl.Float64,
        "ratio_vs_actual": pl.Float64,
        "gpu_minutes_evaluated": pl.Float64,
        "gpu_minutes_reference": pl.Float64,
    }
    return pl.DataFrame(out, schema=schema)


def consistency_check(
    results: pl.DataFrame | None = None,
    flops_per_token: float | None = None,
    assumed_tokens: float = GPT3_MIN_TOKENS_GBS2048,
    benchmark: str = "gpt3",
    tolerance: float = 0.01,
) -> pl.DataFrame:
    """Check published rows for internal consistency.

    Three checks per row (rows of ``benchmark`` only):

    1. **Token budget.** ``implied_tokens = minutes·60 · n_gpus · tokens_per_s_per_gpu`` against
       ``tokens_to_converge`` (or, where a row gives none, ``assumed_tokens``, by default the
       smallest GBS-2048 budget, 23 × 50,331,648 = 1.158e9, a lower bound). With step-level
       throughput the time to train also contains evaluation and start-up (7–12% of the time to train
       in the NVIDIA and Oracle GPT-3 logs of ``mlcommons/training_results_v3.0`` to ``…_v4.1``), so ``implied/needed − 1`` should be a few
       percent **positive**. A negative value is impossible: the run would not have had time to
       process the tokens.
    2. **FLOPs per token.** ``implied_flops_per_token = tflops_per_gpu·1e12 / tokens_per_s_per_gpu``
       against ``flops_per_token`` (default: GPT-3 175B dense 72-form, 1.07644e12). Step times
       rounded to 0.01 s in the Eos rows leave up to ~0.6% here; ``tolerance`` sets the flag.
    3. **Duplicate time.** A row whose ``minutes`` equals (to 0.005 min) another system's row
       of the same benchmark is flagged: SAKURAONE 64 nodes 58.30 min = Eos v3.1 ``eos_n64``
       58.30 min (``mlcommons/training_results_v3.1@d06288b2``), a possible transcription mix-up.

    Args:
        results: published rows (default: :func:`load_published_results`).
        flops_per_token: F_tok to compare with, FLOP/token.
        assumed_tokens: tokens used where ``tokens_to_converge`` is null.
        benchmark: benchmark to check.
        tolerance: relative disagreement above which a FLOP check is flagged.

    Returns:
        polars frame, one row per checked result, columns: ``system``, ``round``, ``n_nodes``
        (Int64), ``n_gpus`` (Int64), ``minutes``, ``tokens_per_s_per_gpu``, ``tflops_per_gpu``,
        ``tokens_needed`` (Float64), ``tokens_assumed`` (Boolean, true if ``assumed_tokens`` was
        used), ``implied_tokens`` (Float64), ``tokens_rel_diff`` (Float64, implied/needed − 1),
        ``implied_flops_per_token`` (Float64, FLOP), ``flops_rel_diff`` (Float64,
        implied/F_tok − 1), ``verified`` (Boolean), ``issues`` (String, "" if none).
    """
    df = results if results is not None else load_published_results()
    f_tok = flops_per_token if flops_per_token is not None else model_flops_per_token(GPT3_175B)
    rows = []
    bench_rows = df.filter(pl.col("benchmark") == benchmark)
    for r in bench_rows.iter_rows(named=True):
        tps = r["tokens_per_s_per_gpu"]
        tokens_assumed = r["tokens_to_converge"] is None
        needed = float(assumed_tokens if tokens_assumed else r["tokens_to_converge"])
        implied = r["minutes"] * 60 * r["n_gpus"] * tps if tps is not None else None
        tok_diff = implied / needed - 1 if implied is not None else None
        flops_impl = r["tflops_per_gpu"] * 1e12 / tps if tps and r["tflops_per_gpu"] else None
        flops_diff = flops_impl / f_tok - 1 if flops_impl is not None else None
        issues = []
        if tok_diff is not None and tok_diff < 0:
            what = "the smallest GBS-2048 budget" if tokens_assumed else "its tokens_to_converge"
            issues.append(
                f"throughput x time to train = {implied / 1e9:.3f}e9 tokens < {what} "
                f"{needed / 1e9:.3f}e9 ({tok_diff:+.1%}): throughput cannot be the run's"
            )
        if flops_diff is not None and abs(flops_diff) > tolerance:
            issues.append(
                f"tflops/tokens_per_s = {flops_impl:.4g} FLOP/token, {flops_diff:+.1%} "
                f"from F_tok {f_tok:.5g}"
            )
        twins = bench_rows.filter(
            (pl.col("system") != r["system"]) & ((pl.col("minutes") - r["minutes"]).abs() < 0.005)
        )
        for t in twins.iter_rows(named=True):
            issues.append(
                f"minutes {r['minutes']} equal {t['system']} {t['round']} "
                f"{t['n_nodes']}-node result ({t['minutes']})"
            )
        rows.append(
            {
                "system": r["system"],
                "round": r["round"],
                "n_nodes": r["n_nodes"],
                "n_gpus": r["n_gpus"],
                "minutes": r["minutes"],
                "tokens_per_s_per_gpu": tps,
                "tflops_per_gpu": r["tflops_per_gpu"],
                "tokens_needed": needed,
                "tokens_assumed": tokens_assumed,
                "implied_tokens": implied,
                "tokens_rel_diff": tok_diff,
                "implied_flops_per_token": flops_impl,
                "flops_rel_diff": flops_diff,
                "verified": r["verified"],
                "issues": "; ".join(issues),
            }
        )
    schema = {
        "system": pl.String,
        "round": pl.String,
        "n_nodes": pl.Int64,
        "n_gpus": pl.Int64,
        "minutes": pl.Float64,
        "tokens_per_s_per_gpu": pl.Float64,
        "tflops_per_gpu": pl.Float64,
        "tokens_needed": pl.Float64,
        "tokens_assumed": pl.Boolean,
        "implied_tokens": pl.Float64,
        "tokens_rel_diff": pl.Float64,
        "implied_flops_per_token": pl.Float64,
        "flops_rel_diff": pl.Float64,
        "verified": pl.Boolean,
        "issues": pl.String,
    }
    return pl.DataFrame(rows, schema=schema)


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


def talk_ratio_placement(
    results: pl.DataFrame | None = None,
    ratio: float = 1.28,
    evaluated: str = "SAKURAONE",
) -> pl.DataFrame:
    """Where the talk's quoted per-GPU gap (1.28×, Cloud Operator Days Tokyo 2025) would sit.

    For each SAKURAONE GPT-3 scale, the paper's reference (Eos v4.1 measured at 32/64 nodes,
    extrapolated at 96) gives the time to train that a ``ratio`` gap implies; the observed
    SAKURAONE time and ratio are shown beside it. GBS/tokens of the SAKURAONE runs are not
    published, so equal tokens are assumed (raw GPU-minutes).

    Returns:
        polars frame, columns: ``n_nodes`` (Int64), ``reference_label`` (String),
        ``reference_min`` (Float64), ``implied_min`` (Float64, T that gives ``ratio``),
        ``observed_min`` (Float64), ``observed_ratio`` (Float64), ``ratio`` (Float64).
    """
    table = paper_comparison_table(results, evaluated=evaluated).filter(
        pl.col("benchmark") == "gpt3"
    )
    return table.select(
        "n_nodes",
        "reference_label",
        "reference_min",
        (pl.col("reference_min") * ratio).alias("implied_min"),
        pl.col("evaluated_min").alias("observed_min"),
        pl.col("ratio").alias("observed_ratio"),
        pl.lit(ratio, pl.Float64).alias("ratio"),
    )


def load_reference(name: str, path: str | Path | None = None) -> pl.DataFrame:
    """Load a cited reference table ``data/reference/<name>.csv`` (see ``data/reference/README.md``).

    Args:
        name: ``memory_wall``, ``systems``, ``top500``, ``accelerators`` or ``published_results``.
        path: an explicit CSV path instead.

    Returns:
        The table as read by polars (column types inferred; every table has a source column).

    Raises:
        FileNotFoundError: no such table (the message lists the tables there are).
    """
    return read_table(name, path)


# the evaluated system's own logs against the reference's (trainperf report --config)
# Caveat checks and the candidate meanings of a quoted ratio (issue 18) live in their own module.
from trainperf.compare.checks import (  # noqa: E402
    caveats_by_scale,
    consistency_checks,
    ratio_candidates,
)
from trainperf.compare.evaluated import (  # noqa: E402  (uses extrapolate_linear above)
    COMPARISON_SCHEMA,
    cluster_comparison,
    comparison_summary,
    log_comparison,
    side_from_published,
    side_from_results,
)

__all__ += ["caveats_by_scale", "comparison_summary", "consistency_checks", "ratio_candidates"]
