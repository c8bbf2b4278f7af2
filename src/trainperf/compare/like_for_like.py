"""Like for like from the MLPerf record: each evaluated result against published results.

For one evaluated result (benchmark, accelerator, ``n`` GPUs, round, time to train ``T_A``) and the
record (:func:`trainperf.record.read_record`), :func:`record_reference` picks, in this order:

1. ``measured``: the best (shortest score) other result of the same benchmark on the same
   accelerator at exactly ``n`` GPUs, in the newest round that has one;
2. ``interpolated``: the same accelerator's measured scales of one system family (round, submitter,
   accelerator) that bracket ``n`` with the two adjacent points at most 4x apart, interpolated in
   log-log (:func:`~trainperf.compare.ratios.interpolate_power_law`); both neighbours give the
   bounds; the newest round, then the family that gives the shortest time;
3. ``bounds``: no point estimate across a wider gap: the same accelerator's nearest measured scales
   below and above ``n`` (newest round with any) give only the bounds (a scale below gives an upper
   bound of the ratio, one above a lower bound: GPU time grows with scale where scaling is less than
   perfect);
4. ``cross-generation``: no result of the same accelerator: the accelerator of the nearest
   generation (``data/reference/accelerator_generations.csv``: launch year, then the same vendor,
   then the newer) that has a result at ``n`` GPUs, measured there.

:func:`record_rank` places the result by GPU-minutes among the record's results of the same
benchmark and round with ``n/2 <= N <= 2n`` GPUs. A result whose logs are byte for byte a published
one (same ``logs_sha256``) is that result: named (``published_as``) and left out of its own
reference and rank.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import polars as pl

from trainperf.compare.ratios import gpu_time_ratio, interpolate_power_law
from trainperf.flops import normalize_accelerator_name
from trainperf.tables import read_table

__all__ = ["MAX_GAP", "accelerator_key", "generations", "record_rank", "record_reference"]

MAX_GAP = 4.0
"""Largest ratio of adjacent measured GPU counts interpolated between (issue 36: the chord over 8x
or 16x gaps overestimated NVIDIA's own measured 72-GPU LoRA times by 18 % and 33 %)."""


def accelerator_key(canonical: str | None, text: str | None = None) -> str | None:
    """The key two results share when their accelerator is the same: the canonical name, else the
    normalised systems-JSON text (:func:`trainperf.flops.normalize_accelerator_name`)."""
    if canonical:
        return canonical
    return normalize_accelerator_name(text) if text else None


@cache
def generations() -> dict[str, tuple[int, str]]:
    """``{canonical accelerator: (launch year, vendor)}`` of ``accelerator_generations.csv``."""
    t = read_table("accelerator_generations")
    return {r["accelerator"]: (int(r["year"]), r["vendor"]) for r in t.iter_rows(named=True)}


def _scored(record: pl.DataFrame, benchmark: str, exclude_sha: str | None) -> list[dict]:
    rows = record.filter(
        (pl.col("benchmark") == benchmark)
        & pl.col("score_min").is_not_null()
        & pl.col("n_gpus").is_not_null()
    ).to_dicts()
    for r in rows:
        r["_acc"] = accelerator_key(r["accelerator"], r["accelerator_model_name"])
    return [r for r in rows if not (exclude_sha and r["logs_sha256"] == exclude_sha)]


def _rkey(round_: str | None) -> tuple:
    try:
        return tuple(int(x) for x in (round_ or "v0")[1:].split("."))
    except ValueError:
        return (0,)


def _best(rows: list[dict]) -> dict:
    return min(rows, key=lambda r: (r["score_min"], r["submitter"], r["system"]))


def _ref_cols(r: dict, kind: str) -> dict[str, Any]:
    return {
        "reference_system": r["system"],
        "reference_result": r["folder"],
        "reference_round": r["round"],
        "reference_submitter": r["submitter"],
        "reference_accelerator": r["accelerator"] or r["accelerator_model_name"],
        "reference_software": r["framework"],
        "reference_n_nodes": r["n_nodes"],
        "reference_kind": kind,
        "reference_tokens_per_s_per_gpu": r["tokens_per_s_per_gpu"],
        "reference_throughput_basis": r["throughput_basis"],
        "reference_precision": r["precision"],
        "reference_mfu": r["mfu"],
        # the reference's own system description (the record's copy of its systems JSON)
        "reference_host_networking": r.get("host_interconnect"),
        "reference_accelerator_interconnect": r.get("accelerator_interconnect"),
    }


def _measured(n: int, rows: list[dict], kind: str = "measured") -> dict | None:
    at = [r for r in rows if r["n_gpus"] == n]
    if not at:
        return None
    newest = max(_rkey(r["round"]) for r in at)
    b = _best([r for r in at if _rkey(r["round"]) == newest])
    m = b["score_min"]
    return {**_ref_cols(b, kind), "reference_n_gpus": n, "reference_min": m,
            "reference_low_n_gpus": n, "reference_low_min": m,
            "reference_high_n_gpus": n, "reference_high_min": m}  # fmt: skip


def _best_per_n(rows: list[dict]) -> dict[int, dict]:
    out: dict[int, dict] = {}
    for r in rows:
        if r["n_gpus"] not in out or r["score_min"] < out[r["n_gpus"]]["score_min"]:
            out[r["n_gpus"]] = r
    return out


def _interpolated(n: int, rows: list[dict]) -> dict | None:
    families: dict[tuple, list[dict]] = {}
    for r in rows:
        families.setdefault((r["round"], r["submitter"], r["_acc"]), []).append(r)
    found = []
    for fam in families.values():
        pts = _best_per_n(fam)
        lo = max((m for m in pts if m < n), default=None)
        hi = min((m for m in pts if m > n), default=None)
        if lo is None or hi is None or hi / lo > MAX_GAP:
            continue
        a, b = pts[lo], pts[hi]
        t = interpolate_power_law(n, lo, a["score_min"], hi, b["score_min"])
        found.append((_rkey(a["round"]), -t, a, b, t))
    if not found:
        return None
    _, _, a, b, t = max(found, key=lambda f: (f[0], f[1]))
    return {**_ref_cols(a, "interpolated"), "reference_result": f"{a['folder']} .. {b['folder']}",
            "reference_system": f"{a['system']} .. {b['system']}", "reference_n_nodes": None,
            "reference_tokens_per_s_per_gpu": None, "reference_throughput_basis": None,
            "reference_mfu": None, "reference_n_gpus": n, "reference_min": t,
            "reference_low_n_gpus": a["n_gpus"], "reference_low_min": a["score_min"],
            "reference_high_n_gpus": b["n_gpus"], "reference_high_min": b["score_min"]}  # fmt: skip


def _bounds_only(n: int, rows: list[dict]) -> dict | None:
    if not rows:
        return None
    newest = max(_rkey(r["round"]) for r in rows)
    pts = _best_per_n([r for r in rows if _rkey(r["round"]) == newest])
    lo = max((m for m in pts if m < n), default=None)
    hi = min((m for m in pts if m > n), default=None)
    any_r = pts[lo if lo is not None else hi]
    out = {**_ref_cols(any_r, "bounds"), "reference_n_gpus": n, "reference_min": None,
           "reference_n_nodes": None, "reference_tokens_per_s_per_gpu": None,
           "reference_throughput_basis": None, "reference_mfu": None}  # fmt: skip
    for side, m in (("low", lo), ("high", hi)):
        out[f"reference_{side}_n_gpus"] = m
        out[f"reference_{side}_min"] = pts[m]["score_min"] if m is not None else None
    names = [pts[m]["system"] for m in (lo, hi) if m is not None]
    out["reference_system"] = " .. ".join(names)
    out["reference_result"] = " .. ".join(pts[m]["folder"] for m in (lo, hi) if m is not None)
    return out


def _cross_generation(n: int, accelerator: str | None, rows: list[dict]) -> dict | None:
    gens = generations()
    if accelerator not in gens:
        return None
    year, vendor = gens[accelerator]
    others = {r["_acc"] for r in rows if r["n_gpus"] == n and r["_acc"] in gens}
    others.discard(accelerator)
    if not others:
        return None
    pick = min(others, key=lambda a: (abs(gens[a][0] - year), gens[a][1] != vendor, -gens[a][0], a))
    return _measured(n, [r for r in rows if r["_acc"] == pick], "cross-generation")


def record_reference(
    benchmark: str,
    accelerator: str | None,
    n_gpus: int | None,
    minutes: float | None,
    record: pl.DataFrame,
    exclude_sha: str | None = None,
    any_accelerator: bool = False,
) -> dict[str, Any]:
    """The record's reference for one evaluated result and the ratios against it.

    Args:
        benchmark: MLPerf benchmark name (``llama2_70b_lora``).
        accelerator: the evaluated result's canonical accelerator (or normalised text, as
            :func:`accelerator_key` gives it).
        n_gpus: its GPU count ``n``; minutes: its time to train ``T_A`` (None: no ratios).
        record: :func:`trainperf.record.read_record`.
        exclude_sha: ``logs_sha256`` of the evaluated logs (their own published row is left out).
        any_accelerator: every row of ``record`` counts as the same accelerator (a reference the
            config pins: ``record`` is then its results only); no cross-generation fallback.

    Returns:
        the ``reference_*`` columns of :data:`~trainperf.compare.COMPARISON_SCHEMA` (``reference_kind``
        ``measured``, ``interpolated``, ``bounds``, ``cross-generation`` or ``none``), ``ratio``
        (the per-GPU GPU-time ratio ``(n·T)_A / (n·T)_B``, null for ``bounds``), ``ratio_low`` and
        ``ratio_high`` (against each measured neighbour's own GPU time; one may be null for
        ``bounds``), ``time_ratio`` (``T_A / reference_min``).
    """
    out: dict[str, Any] = {"reference_kind": "none"}
    if not n_gpus:
        return out
    rows = _scored(record, benchmark, exclude_sha)
    same = (
        rows if any_accelerator else [r for r in rows if accelerator and r["_acc"] == accelerator]
    )
    ref = (
        _measured(n_gpus, same)
        or _interpolated(n_gpus, same)
        or _bounds_only(n_gpus, same)
        or (None if any_accelerator else _cross_generation(n_gpus, accelerator, rows))
    )
    if ref is None:
        return out
    out.update(ref)
    if minutes is None:
        return out
    t_b = out.get("reference_min")
    if t_b:
        out["ratio"] = gpu_time_ratio(n_gpus, minutes, n_gpus, t_b)
        out["time_ratio"] = minutes / t_b
    bound = {
        side: gpu_time_ratio(n_gpus, minutes, out[f"reference_{side}_n_gpus"], out[f"reference_{side}_min"])
        for side in ("low", "high")
        if out.get(f"reference_{side}_n_gpus")
    }  # fmt: skip
    # the neighbour above gives the lower bound of the ratio, the one below the upper bound
    if "low" in bound and "high" in bound:
        out["ratio_low"], out["ratio_high"] = min(bound.values()), max(bound.values())
    elif "low" in bound:
        out["ratio_high"] = bound["low"]
    elif "high" in bound:
        out["ratio_low"] = bound["high"]
    return out


def record_rank(
    benchmark: str,
    round_: str | None,
    n_gpus: int | None,
    minutes: float | None,
    record: pl.DataFrame,
    exclude_sha: str | None = None,
) -> dict[str, Any]:
    """Rank by GPU-minutes (``minutes x n``) among the record's results of ``benchmark`` in
    ``round_`` (the newest round with the benchmark when the record has none of ``round_``) whose GPU
    count N satisfies ``n/2 <= N <= 2n``, the evaluated result counted once.

    Returns:
        ``record_rank`` (Int, 1 = fewest GPU-minutes), ``record_peers`` (Int, results in the band
        with the evaluated one), ``record_best`` (String, ``round submitter system (N GPUs)`` of the
        band's best other result) and ``record_best_gpu_min`` (Float, its GPU-minutes); empty when
        the result has no score or GPU count.
    """
    if not n_gpus or minutes is None:
        return {}
    rows = _scored(record, benchmark, exclude_sha)
    rounds = {r["round"] for r in rows}
    if round_ not in rounds:
        if not rounds:
            return {}
        round_ = max(rounds, key=_rkey)
    band = [r for r in rows if r["round"] == round_ and n_gpus / 2 <= r["n_gpus"] <= 2 * n_gpus]
    own = minutes * n_gpus
    gm = [r["score_min"] * r["n_gpus"] for r in band]
    out: dict[str, Any] = {
        "record_rank": 1 + sum(g < own for g in gm),
        "record_peers": len(band) + 1,
    }
    if band:
        b = min(band, key=lambda r: (r["score_min"] * r["n_gpus"], r["submitter"], r["system"]))
        out["record_best"] = f"{b['round']} {b['submitter']} {b['system']} ({b['n_gpus']:,} GPUs)"
        out["record_best_gpu_min"] = b["score_min"] * b["n_gpus"]
    return out
