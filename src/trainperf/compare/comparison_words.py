"""The comparison in words (``comparison.csv`` as the book's and the command line's sentences):
the summary per row, the cluster's own scaling, throughput and MFU, and one warning line per
benchmark compared against another MLPerf round than its own."""

from __future__ import annotations

import polars as pl

from trainperf.benchmarks import benchmark_name
from trainperf.compare.record_words import is_record_comparison, record_summary
from trainperf.flops import benchmark_model

#: MFU above which a precision is ruled out as the one a run trained in (fraction of the dense
#: peak): large-model training reports 40-60 % (Megatron-LM, Narayanan et al., SC21: 52 % on A100;
#: PaLM, Chowdhery et al. 2022: 46.2 %; MLPerf GPT-3 results recomputed here: 40-50 % at FP8), so a
#: BF16 MFU of 90 % says the run used a narrower format, not that it was that efficient.
MFU_PLAUSIBLE = 0.75

__all__ = [
    "MFU_PLAUSIBLE",
    "comparison_summary",
    "own_scaling_summary",
    "round_warnings",
    "throughput_summary",
]


def _gpus(n) -> str:
    return f"{n:,} GPU{'s' if n != 1 else ''}"


def _software(r: dict, side: str) -> str:
    sw = r.get(f"{side}_software")
    return f" ({sw})" if sw else ""


def round_warnings(comparison: pl.DataFrame) -> list[str]:
    """One line per benchmark compared against another round than its own, naming both rounds and
    their software: ``llama31_405b at 512 GPUs: MyCluster v5.0 (...) compared with Eos v4.1 (...):
    no result of the reference in v5.0; nearest round v4.1``; rows that differ only in their GPU
    count share a line (``at 8, 16 and 32 GPUs``). [] when every row is same-round."""
    # rows that differ only in GPU count share one line: "at 8, 16 and 32 GPUs"
    groups: dict[tuple, list[int]] = {}
    for r in comparison.filter(pl.col("reference_round_note").is_not_null()).iter_rows(named=True):
        head = (
            f"{r['evaluated_system']} "
            f"{r['evaluated_round'] or '(round unknown)'}{_software(r, 'evaluated')} compared with "
            f"{r['reference_system']} {r['reference_round']}{_software(r, 'reference')}: "
            f"{r['reference_round_note']}"
        )
        groups.setdefault((benchmark_name(r["benchmark"]), head), []).append(r["n_gpus"])
    lines = []
    for (bench, head), counts in groups.items():
        counts = sorted(set(counts))
        if len(counts) == 1:
            at = _gpus(counts[0])
        else:
            *first, last = (f"{n:,}" for n in counts)
            at = f"{', '.join(first)} and {last} GPUs"
        lines.append(f"{bench} at {at}: {head}")
    return lines


def _estimate(r: dict) -> str:
    """``1.19x`` / ``1.04x (interpolated; between 0.90x and 1.18x)`` for a row with a ratio."""
    kind = r["reference_kind"]
    if kind == "measured":
        return f"{r['ratio']:.2f}x"
    lo, hi = r["ratio_low"], r["ratio_high"]
    if kind == "interpolated":
        return (
            f"{r['ratio']:.2f}x (reference interpolated between its {r['reference_low_n_gpus']:,}- "
            f"and {r['reference_high_n_gpus']:,}-GPU runs; bounds {lo:.2f}x to {hi:.2f}x)"
        )
    if hi is not None:
        return (
            f"at most {hi:.2f}x (reference extrapolated with perfect scaling from its "
            f"{r['reference_low_n_gpus']:,}-GPU run, its largest: an upper bound)"
        )
    return (
        f"at least {lo:.2f}x (reference extrapolated with perfect scaling from its "
        f"{r['reference_high_n_gpus']:,}-GPU run, its smallest: a lower bound)"
    )


def comparison_summary(comparison: pl.DataFrame) -> str:
    """The book's summary sentence(s) from a :func:`log_comparison` frame (``comparison.csv``).

    Per row: ``MyCluster needs 1.04x the GPU time of Eos v4.1 at 32 GPUs (Llama 2 70B LoRA;
    reference interpolated between its 8 and 64 GPUs runs; bounds 0.90x to 1.18x)``: the ratio is
    the per-GPU GPU-time ratio at equal GPU count; an interpolated reference is quoted with both
    bounds, an extrapolated one as the bound it is. A result without a score says so with its
    ``note``, a benchmark the reference never ran says "no reference at this benchmark", and a row
    compared against another round names both rounds and their software. "" for an empty frame.
    """
    if comparison.is_empty():
        return ""
    if is_record_comparison(comparison):  # like for like with the MLPerf record
        return record_summary(comparison)
    parts, other = [], []
    name = comparison["evaluated_system"][0]
    for r in comparison.iter_rows(named=True):
        where = (
            f"at {_gpus(r['n_gpus'])} ({benchmark_name(r['benchmark'])})"
            if r["n_gpus"]
            else f"at an unknown GPU count ({benchmark_name(r['benchmark'])}; the logs name no system description)"
        )
        ref = f"{r['reference_system'] or 'the reference'} {r['reference_round'] or ''}".strip()
        if r["evaluated_min"] is None:
            why = (r.get("note") or "").removeprefix("no valid score: ")
            other.append(f"No valid score {where}" + (f": {why}." if why else "."))
        elif r["n_gpus"] is None:
            other.append(f"Nothing to compare {where}.")
        elif r["reference_kind"] == "none" or r["reference_min"] is None:
            other.append(
                f"No reference at this benchmark {where}: "
                f"{r['reference_system'] or 'the reference'} has no result of it."
            )
        else:
            if r.get("ratio_other_round") is not None:  # "(GPT-3 175B)" -> "(GPT-3 175B; ...)"
                where = (
                    f"{where[:-1]}; {r['reference_system'] or 'the reference'} measured "
                    f"{_gpus(r['n_gpus'])} in {r['reference_other_round']}: "
                    f"{r['ratio_other_round']:.2f}x against that run)"
                )
            parts.append(f"{_estimate(r)} the GPU time of {ref} {where}")
    other += [f"{line}." for line in round_warnings(comparison)]
    head = f"{name} needs " + "; ".join(parts) + "." if parts else ""
    return " ".join(x for x in [head, *other] if x)


def own_scaling_summary(comparison: pl.DataFrame) -> str:
    """The evaluated system's own strong scaling, one clause per benchmark with two or more scored
    GPU counts in ``comparison`` (:func:`log_comparison`): from its smallest to its largest count,
    ``E = (n0·T(n0)) / (n·T(n))`` (1: perfect strong scaling; the module docstring of
    :mod:`trainperf.compare.scaling`), with the numbers. "" when no benchmark has two scales.

    >>> import polars as pl
    >>> c = pl.DataFrame({"benchmark": ["llama2_70b_lora"] * 2, "n_gpus": [8, 64],
    ...     "evaluated_system": ["Lab"] * 2, "evaluated_min": [27.928383, 4.573167]})
    >>> own_scaling_summary(c)
    'From 8 to 64 GPUs, Lab keeps 76.3 % of perfect strong scaling on Llama 2 70B LoRA (E = 8 × 27.93 / (64 × 4.573))'
    """
    scored = comparison.filter(pl.col("evaluated_min").is_not_null()).unique(
        ["benchmark", "n_gpus"], keep="first", maintain_order=True
    )
    parts = []
    for bench in scored["benchmark"].unique(maintain_order=True).to_list():
        b = scored.filter(pl.col("benchmark") == bench).sort("n_gpus")
        if b.height < 2:
            continue
        lo, hi = b.row(0, named=True), b.row(-1, named=True)
        e = (lo["n_gpus"] * lo["evaluated_min"]) / (hi["n_gpus"] * hi["evaluated_min"])
        parts.append(
            f"From {lo['n_gpus']:,} to {_gpus(hi['n_gpus'])}, {lo['evaluated_system']} keeps "
            f"{100 * e:.1f} % of perfect strong scaling on {benchmark_name(bench)} (E = {lo['n_gpus']:,} × "
            f"{lo['evaluated_min']:.4g} / ({hi['n_gpus']:,} × {hi['evaluated_min']:.4g}))"
        )
    return "; ".join(parts)


def _mfu_clause(r: dict, e2e: str) -> str:
    """``MFU 40.1 % of the FP8 dense peak``: the run's own precision only where the logs or the config
    name it (BF16, FP8, or FP4 from ``evaluated_mfu``); both BF16 and FP8, named, where neither does."""
    own = (r.get("evaluated_precision") or "").lower()
    pct = {p: r.get(f"evaluated_mfu_{p}") for p in ("fp8", "bf16")}
    if own in pct and pct[own] is not None:  # the run's own precision only, where known
        return f"MFU{e2e} {100 * pct[own]:.1f} % of the {own.upper()} dense peak"
    if own and own not in pct and r.get("evaluated_mfu") is not None:
        # another known precision (FP4: NVIDIA's v5.1 B200/GB200 logs say `fp4: true`): its MFU
        # is `evaluated_mfu`, against that precision's dense peak; the logs do name it
        return f"MFU{e2e} {100 * r['evaluated_mfu']:.1f} % of the {own.upper()} dense peak"
    # a precision at whose peak the run would exceed MFU_PLAUSIBLE cannot be the one it trained in
    given = [
        f"{100 * v:.1f} % of the {p.upper()} dense peak"
        for p, v in pct.items()
        if v is not None and v <= MFU_PLAUSIBLE
    ]
    ruled_out = [p.upper() for p, v in pct.items() if v is not None and v > MFU_PLAUSIBLE]
    if not given and not ruled_out:
        return "no MFU (no dense peak of the accelerator)"
    out = f"MFU{e2e} {' or '.join(given)}" if given else f"no plausible MFU{e2e}"
    why = "precision unknown: neither the logs nor the config name it"
    if ruled_out:
        why += (
            f"; not {' or '.join(ruled_out)}, at whose dense peak it would exceed "
            f"{100 * MFU_PLAUSIBLE:.0f} %, more than any published LLM training run reaches"
        )
    return f"{out} ({why})"


def throughput_summary(comparison: pl.DataFrame) -> str:
    """The evaluated system's throughput and MFU from its logs, one sentence for the summary.

    One clause per row of ``comparison`` (:func:`log_comparison`) whose evaluated side has
    ``evaluated_tokens_per_s_per_gpu``: tokens/s per GPU and MFU against the dense peak of the
    precision the run used (``evaluated_precision``) only; both, named, where the logs name no
    precision; samples (images)/s per GPU for a benchmark counted in samples (Flux.1); ``e2e`` where the numbers come from the end-to-end
    columns (``evaluated_throughput_basis``, e.g. LoRA: :func:`trainperf.mlperf.runs_with_throughput`).
    Rows with logs but no throughput are named as such; with no row from logs (published rows
    only) the sentence says that throughput needs the logs. "" for an empty frame.

    >>> import polars as pl
    >>> c = pl.DataFrame({"benchmark": ["gpt3"], "n_gpus": [1536], "evaluated_system": ["Lab"],
    ...     "evaluated_source": ["logs"], "evaluated_tokens_per_s_per_gpu": [541.72],
    ...     "evaluated_throughput_basis": ["step"], "evaluated_precision": ["fp8"],
    ...     "evaluated_mfu_fp8": [0.2948], "evaluated_mfu_bf16": [0.5896]})
    >>> throughput_summary(c)
    'From its logs, Lab trains GPT-3 175B at 1,536 GPUs at 542 tokens/s per GPU, MFU 29.5 % of the FP8 dense peak.'
    """
    if not comparison.height:
        return ""
    name = comparison["evaluated_system"].drop_nulls().first() or "The evaluated system"
    rows = comparison.unique(["benchmark", "n_gpus"], keep="first", maintain_order=True)
    logs = [r for r in rows.iter_rows(named=True) if r.get("evaluated_source") == "logs"]
    if not logs:
        return (
            f"The results of {name} compared here are published rows, which give no throughput "
            "or MFU; its MLPerf logs (the config's mlperf key) would."
        )
    parts = []
    for r in logs:
        at = f"{benchmark_name(r['benchmark'])} at {_gpus(r['n_gpus'])}"
        tps = r.get("evaluated_tokens_per_s_per_gpu")
        e2e = " (e2e)" if r.get("evaluated_throughput_basis") == "e2e" else ""
        if tps is None:
            # a benchmark counted in samples (Flux.1: images): model TFLOP/s over the model's FLOPs
            # per sample (the benchmark catalogue, trainperf.flops.benchmark_model)
            model = benchmark_model(r["benchmark"])
            tflops = r.get("evaluated_model_tflops_per_gpu")
            if model is None or tflops is None or not model.flops_per_sample:
                parts.append(f"{at} with no throughput in its logs")
                continue
            sps = tflops * 1e12 / model.flops_per_sample
            unit = f"samples ({model.sample_unit}s)" if model.sample_unit else "samples"
            parts.append(f"{at} at {sps:,.1f} {unit}/s per GPU{e2e}, {_mfu_clause(r, e2e)}")
            continue
        parts.append(f"{at} at {tps:,.0f} tokens/s per GPU{e2e}, {_mfu_clause(r, e2e)}")
    return f"From its logs, {name} trains " + "; ".join(parts) + "."
