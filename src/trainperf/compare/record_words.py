"""The summary sentences of a comparison with the MLPerf record (:mod:`.record_comparison`).

Every sentence says what the row shows and no more: the kind of reference (measured like for like,
interpolated with its bounds and the record's own leave-one-out error, bounds only, or another
accelerator generation, named), its round, submitter, system and accelerator, and the rank in the
record with the best result of the band.
"""

from __future__ import annotations

import polars as pl

from trainperf.benchmarks import benchmark_name

__all__ = ["is_record_comparison", "record_summary", "reference_label"]


def is_record_comparison(comparison: pl.DataFrame) -> bool:
    """Whether ``comparison`` was made against the record: a reference with an accelerator, or a
    kind only the record gives (``bounds``, ``cross-generation``)."""
    if "reference_accelerator" not in comparison.columns or not comparison.height:
        return False
    kinds = comparison["reference_kind"].is_in(["bounds", "cross-generation"])
    return bool(comparison["reference_accelerator"].is_not_null().any() or kinds.any())


def _gpus(n: int) -> str:
    return f"{n:,} GPU{'s' if n != 1 else ''}"


def _ref(r: dict) -> str:
    return (
        f"{r['reference_submitter']} {r['reference_system']} ({r['reference_accelerator']}, "
        f"{r['reference_round']})"
    )


def _same_system(r: dict) -> str:
    """``: the same system's own earlier result`` where the evaluated result is a published one
    (``published_as``: ``round submitter system``) whose submitter and system name the reference's:
    a comparison with its own earlier round measures the rounds' software, not another cluster."""
    pub = (r.get("published_as") or "").split(" ", 1)
    sub, system = r.get("reference_submitter"), r.get("reference_system")
    if len(pub) < 2 or not sub or not system or pub[1] != f"{sub} {system}":
        return ""
    return f": the same system's own {r.get('reference_round')} result"


def _precisions(r: dict) -> str:
    """``; the reference trained in FP4, this run in FP8`` where the two sides' logged precisions
    differ (a like-for-like ratio then also compares number formats); "" where they agree or one
    is not known."""
    own, ref = r.get("evaluated_precision"), r.get("reference_precision")
    if not own or not ref or own.lower() == ref.lower():
        return ""
    return f"; the reference trained in {ref.upper()}, this run in {own.upper()}"


def _reference_clause(r: dict, name: str, where: str, accelerator: str | None) -> str:
    kind = r["reference_kind"]
    lo, hi = r["ratio_low"], r["ratio_high"]
    if kind == "measured":
        return (
            f"{name} needs {r['ratio']:.2f}x the GPU time of {_ref(r)} {where}, measured at the "
            f"same GPU count{_same_system(r)}{_precisions(r)}"
        )
    if kind == "interpolated":
        err = r["reference_interpolation_error"]
        loo = (
            f"; leave-one-out error of such interpolation on the record's own series up to {100 * err:.0f} %"
            if err is not None
            else ""
        )
        return (
            f"{name} needs {r['ratio']:.2f}x the GPU time of {_ref(r)} {where}, interpolated between "
            f"their {r['reference_low_n_gpus']:,}- and {r['reference_high_n_gpus']:,}-GPU results "
            f"(bounds {lo:.2f}x to {hi:.2f}x{loo}){_precisions(r)}"
        )
    if kind == "bounds":
        acc = r["reference_accelerator"]
        if lo is not None and hi is not None:
            return (
                f"{name} needs between {lo:.2f}x and {hi:.2f}x the GPU time of the {acc} results of "
                f"{r['reference_round']} {where} (measured at {r['reference_low_n_gpus']:,} and "
                f"{r['reference_high_n_gpus']:,} GPUs, more than 4x apart: no point estimate)"
            )
        if hi is not None:
            return (
                f"{name} needs at most {hi:.2f}x the GPU time of the {acc} results of "
                f"{r['reference_round']} {where} (bound from the largest measured, "
                f"{r['reference_low_n_gpus']:,} GPUs)"
            )
        return (
            f"{name} needs at least {lo:.2f}x the GPU time of the {acc} results of "
            f"{r['reference_round']} {where} (bound from the smallest measured, "
            f"{r['reference_high_n_gpus']:,} GPUs)"
        )
    if kind == "cross-generation":
        own = f", not {accelerator}" if accelerator else ""
        return (
            f"{name} needs {r['ratio']:.2f}x the GPU time of {_ref(r)} {where}: cross-generation, "
            f"the record has no {accelerator or 'same-accelerator'} result to compare with "
            f"(the reference runs {r['reference_accelerator']}{own})"
        )
    return f"The record has no published result to compare with {where}"


def reference_label(r: dict) -> str:
    """The reference of one ``comparison.csv`` row as a table cell, for every ``reference_kind``.

    ``measured`` (``NVIDIA tyche_ngpu72 (GB200, v5.1)`` from the record, else system, round and
    folder of a pinned folder of logs); ``cross-generation`` (the same, said to be another
    generation); ``interpolated`` (system, round and the two GPU counts of the power law);
    ``extrapolated`` (perfect scaling from its nearest measured scale); ``bounds`` (the measured
    results the bounds come from, no point estimate); else ``no reference at this benchmark``.

    >>> reference_label({"reference_kind": "bounds", "reference_submitter": "NVIDIA",
    ...     "reference_system": "tyche_ngpu512_ngc25.09_nemo", "reference_accelerator": "GB200",
    ...     "reference_round": "v5.1", "reference_low_n_gpus": 512, "reference_high_n_gpus": None})
    'NVIDIA tyche_ngpu512_ngc25.09_nemo (GB200, v5.1): bound only, from its 512 GPUs'
    """
    kind = r.get("reference_kind")
    rec = _ref(r) if r.get("reference_submitter") else None
    lo, hi = r.get("reference_low_n_gpus"), r.get("reference_high_n_gpus")
    system, rnd = r.get("reference_system"), r.get("reference_round")
    if kind == "measured":
        return (rec or f"{system} {rnd} {r.get('reference_result')}") + _same_system(r)
    if kind == "cross-generation":
        return f"{rec or f'{system} {rnd}'}: another accelerator generation"
    if kind == "interpolated":
        return f"{system} {rnd}: power law between {lo} and {hi} GPUs"
    if kind == "extrapolated":
        return f"{system} {rnd}: perfect scaling from {lo if lo is not None else hi} GPUs"
    if kind == "bounds":
        head = rec or f"{system} {rnd}"
        if lo is not None and hi is not None:
            return f"{head}: bounds only, from {lo:,} and {hi:,} GPUs (more than 4x apart)"
        return f"{head}: bound only, from its {lo if lo is not None else hi:,} GPUs"
    return "no reference at this benchmark"


def record_summary(comparison: pl.DataFrame, accelerator: str | None = None) -> str:
    """The book's summary of a record comparison: one sentence per row (reference and ratio, with
    its kind and bounds) and its rank. "" for an empty frame."""
    if comparison.is_empty():
        return ""
    name = comparison["evaluated_system"][0]
    out = []
    for r in comparison.iter_rows(named=True):
        bench = benchmark_name(r["benchmark"])
        if not r["n_gpus"]:
            out.append(f"Nothing to compare for {bench}: the GPU count is unknown.")
            continue
        where = f"at {_gpus(r['n_gpus'])} ({bench})"
        if r["evaluated_min"] is None:
            why = (r.get("note") or "").removeprefix("no valid score: ")
            out.append(f"No valid score {where}" + (f": {why}." if why else "."))
            continue
        if r.get("published_as"):
            out.append(
                f"The logs {where} are the published result {r['published_as']}, left out of "
                "its own reference and rank."
            )
        out.append(_reference_clause(r, name, where, accelerator) + ".")
        if r["record_rank"] is not None:
            n = r["n_gpus"]
            band = f"{max(1, n // 2):,} to {2 * n:,} GPUs"
            best = (
                f"; the best of them {r['record_best']}, {r['record_best_gpu_min']:,.0f} GPU-minutes"
                if r["record_best"]
                else ""
            )
            out.append(
                f"By GPU-minutes it ranks {r['record_rank']} of {r['record_peers']} among the "
                f"record's {bench} results at {band}{best}."
            )
    return " ".join(out)
