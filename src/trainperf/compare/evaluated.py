"""The evaluated system's own results (MLPerf logs or published rows) against a reference's logs.

One frame per side (:func:`side_from_results`, :func:`side_from_published`, same columns,
:data:`SIDE_SCHEMA`) and their comparison per benchmark and GPU count (:func:`log_comparison`):
the reference in the evaluated result's own MLPerf round (else the nearest, said so), at the same
number of GPUs: measured there, else interpolated on a power law between the two measured scales
that bracket it, else extrapolated linearly beyond the last one, with the bounds each implies.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import polars as pl

from trainperf.compare.comparison_words import round_warnings
from trainperf.compare.published import load_published_results
from trainperf.compare.ratios import extrapolate_linear, gpu_time_ratio, interpolate_power_law
from trainperf.compare.record_comparison import (
    evaluated_shas,
    record_comparison,
    with_record_rank,
)
from trainperf.compare.schema import COMPARISON_SCHEMA, SIDE_SCHEMA, evaluated_columns
from trainperf.compare.system_json import with_reference_system_json, with_system_json
from trainperf.flops import peak_flops
from trainperf.mlperf import (
    load_results,
    precision_from_log,
    precision_from_system_json,
    runs_with_throughput,
)

__all__ = [
    "COMPARISON_SCHEMA",
    "SIDE_SCHEMA",
    "cluster_comparison",
    "log_comparison",
    "reference_round_for",
    "reference_side",
    "side_from_published",
    "side_from_results",
]


def _mfu(tflops, accelerator: str | None, precision: str, accelerators=None) -> float | None:
    if tflops is None or not accelerator:
        return None
    try:
        return tflops * 1e12 / peak_flops(accelerator, precision, accelerators)
    except ValueError:  # no such peak (e.g. FP8 on A100): no MFU, never a wrong one
        return None


def _join(*notes) -> str | None:
    text = "; ".join(n for n in notes if n)
    return text or None


def precision_in_logs(result_files) -> str | None:
    """The datatype (``fp4``/``fp8``/``bf16``) the submission's own files state, or None.

    The result logs first (:func:`trainperf.mlperf.precision_from_log`: the ruleset 6.0 MLLOG
    key ``lowest_numerical_precision_in_linear``, or the framework's configuration dump such as
    ``fp8: true``); else the ``systems/<system>.json`` next to the results
    (:func:`trainperf.mlperf.precision_from_system_json`). Every file that states one must agree;
    else None (unknown: the caller falls back to the config).
    """
    files = {Path(f) for f in result_files if f}
    for read in (precision_from_log, precision_from_system_json):
        stated = {p for p, _ in (read(f) for f in files) if p}
        if stated:
            return stated.pop() if len(stated) == 1 else None
    return None


def _with_mfu(
    rows: list[dict], accelerator: str | None, precision: str | None, accelerators=None
) -> pl.DataFrame:
    for r in rows:
        acc = accelerator or r.pop("_accelerator", None)
        r.pop("_accelerator", None)
        r["mfu_bf16"] = _mfu(r["model_tflops_per_gpu"], acc, "bf16", accelerators)
        r["mfu_fp8"] = _mfu(r["model_tflops_per_gpu"], acc, "fp8", accelerators)
        mfu_fp4 = _mfu(r["model_tflops_per_gpu"], acc, "fp4", accelerators)
        own = r.get("precision")
        if own and precision and own != precision:
            r["note"] = _join(
                r.get("note"), f"the logs say {own}, the config {precision}: the logs' is used"
            )
        prec = own or precision  # the logs' own word first, then the config
        if prec is None and r["mfu_bf16"] is not None and r["mfu_bf16"] > 1:
            # model FLOP/s above the dense BF16 peak: the run cannot have been BF16; on a part
            # with FP4 tensor cores it may have been FP8 or FP4 (unknown: no MFU of its own)
            if mfu_fp4 is None:
                prec = "fp8"
                r["note"] = _join(r.get("note"), "precision fp8: model FLOP/s above the BF16 peak")
            else:
                r["note"] = _join(
                    r.get("note"),
                    "precision unknown: model FLOP/s above the BF16 peak, so FP8 or FP4 "
                    "(MFU against each peak is labelled with it)",
                )
        r["precision"] = prec
        r["mfu"] = (
            r[f"mfu_{prec}"] if prec in ("bf16", "fp8") else mfu_fp4 if prec == "fp4" else None
        )
    return pl.DataFrame(rows, schema=SIDE_SCHEMA)


def side_from_results(
    results,
    system: str,
    gpus_per_node: int | None = None,
    accelerator: str | None = None,
    precision: str | None = None,
    rounds: str | list[str] | None = None,
    keep_unscored: bool = False,
    accelerators: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """One comparison side from MLPerf logs (:func:`trainperf.mlperf.load_results`).

    Time to train is the MLPerf score (``results.scores.score_min``, olympic mean by the MLPerf
    rules); throughput and model TFLOP/s the medians over the successful runs of
    :func:`trainperf.mlperf.runs_with_throughput`, step level where the logs time their steps,
    else end to end (``throughput_basis``); MFU those TFLOP/s over the dense peaks of
    ``accelerator`` (:func:`trainperf.flops.peak_flops`). Results without a score are left out,
    or with ``keep_unscored`` kept with a null time and a ``note`` saying why (the evaluated side:
    its user must see that the logs were read and none scored). ``precision`` is each result's
    own (:func:`precision_in_logs`), else the ``precision`` argument, else null (unknown: both
    MFUs, ``mfu`` null).

    Args:
        results: the loaded logs.
        system: the name the book uses for this side (e.g. the config's ``name``, ``Eos``).
        gpus_per_node: the config's GPUs per node: node count ``ceil(GPUs / this)`` where the logs
            give no ``number_of_nodes``; a disagreement with the logs is said in ``note``.
        accelerator: peak FLOP/s of this accelerator; None: each run's ``accelerator_model``.
        precision: datatype the runs trained in (``fp8``/``bf16``) where their own files do not
            say; None: unknown.
        rounds: keep only these MLPerf rounds (None: all).
        keep_unscored: keep results without a score (see above).
        accelerators: the accelerator table (:func:`trainperf.flops.load_accelerators`, with a
            config's own accelerator added; default the bundled table).

    Returns:
        polars frame with :data:`SIDE_SCHEMA`.
    """
    keys = ["round", "system", "benchmark"]
    thr = runs_with_throughput(results)
    ok = thr.filter(pl.col("status") == "success")
    agg = ok.group_by(keys).agg(
        pl.col("tokens_per_s_per_gpu_step", "model_tflops_per_gpu_step").median(),
        pl.col("tokens_per_s_per_gpu_e2e", "model_tflops_per_gpu_e2e").median(),
        pl.col("n_nodes").drop_nulls().first(),
        pl.col("accelerator_model").drop_nulls().first(),
        pl.col("framework").drop_nulls().first(),
    )
    scores = results.scores
    if not keep_unscored:
        scores = scores.filter(pl.col("score_min").is_not_null())
    files = (
        results.runs.group_by(keys).agg(pl.col("result_file").drop_nulls())
        if "result_file" in results.runs.columns
        else None
    )
    own_precision = {
        (r["round"], r["system"], r["benchmark"]): precision_in_logs(r["result_file"])
        for r in (files.iter_rows(named=True) if files is not None else [])
    }
    if rounds is not None:
        keep = [rounds] if isinstance(rounds, str) else list(rounds)
        scores = scores.filter(pl.col("round").is_in(keep))
    # a folder outside the MLCommons layout has no round (null): its results still match
    joined = scores.join(agg, on=keys, how="left", nulls_equal=True)
    rows = []
    for r in joined.iter_rows(named=True):
        gpus = r["n_accelerators"]
        nodes, node_note = _node_count(gpus, r["n_nodes"], gpus_per_node)
        # step level where the logs time steps (tokens, or images for Flux.1: model TFLOP/s)
        step = (
            r["tokens_per_s_per_gpu_step"] is not None or r["model_tflops_per_gpu_step"] is not None
        )
        e2e = r["tokens_per_s_per_gpu_e2e"] is not None or r["model_tflops_per_gpu_e2e"] is not None
        basis = "step" if step else "e2e" if e2e else None
        rows.append(
            {
                "system": system,
                "result": r["system"],
                "source": "logs",
                "round": r["round"],
                "benchmark": r["benchmark"],
                "n_nodes": nodes,
                "n_gpus": gpus,
                "time_to_train_min": r["score_min"],
                "n_runs": r["n_valid_runs"],
                "tokens_per_s_per_gpu": r[f"tokens_per_s_per_gpu_{basis or 'step'}"],
                "model_tflops_per_gpu": r[f"model_tflops_per_gpu_{basis or 'step'}"],
                "precision": own_precision.get((r["round"], r["system"], r["benchmark"])),
                "_accelerator": r["accelerator_model"],
                "note": "; ".join(n for n in (_score_note(r), node_note) if n) or None,
                "software": r["framework"],
                "throughput_basis": basis,
            }
        )
    return _with_mfu(rows, accelerator, precision, accelerators).sort(
        "benchmark", "n_gpus", "round", nulls_last=True
    )


def _node_count(
    gpus: int | None, logged_nodes: int | None, gpus_per_node: int | None
) -> tuple[int | None, str | None]:
    """Nodes of a result and a note where the config and the logs disagree.

    The logs' ``number_of_nodes`` (the systems JSON the submission describes) is the run's own
    record and wins where given; the config's ``gpus_per_node`` gives ``ceil(GPUs / it)`` where the
    logs do not say. A config whose GPUs per node do not divide the run's GPUs, or give another
    node count than the logs, is said in the note (a silent wrong count is worse than either): with
    ``gpus_per_node: 3`` on a 16-GPU result of 2 nodes the note names both and 2 is used."""
    from_config = -(-gpus // gpus_per_node) if gpus_per_node and gpus else None
    nodes = logged_nodes if logged_nodes is not None else from_config
    if from_config is None:
        return nodes, None
    if logged_nodes is not None and logged_nodes != from_config:
        return nodes, (
            f"the logs' systems description gives {logged_nodes:,} nodes, the config's "
            f"{gpus_per_node} GPUs per node would give {from_config:,} for {gpus:,} GPUs: "
            f"{logged_nodes:,} is used"
        )
    if gpus % gpus_per_node:
        return nodes, (
            f"the config's {gpus_per_node} GPUs per node do not divide the run's {gpus:,} GPUs: "
            f"{nodes:,} nodes assumed"
        )
    return nodes, None


def _score_note(r: dict) -> str | None:
    n, ok = r.get("n_runs") or 0, r.get("n_valid_runs") or 0
    if r["score_min"] is not None:
        if ok >= n:
            return None
        # a score from fewer runs than logged: the MLPerf rules count a failed run as the dropped
        # slowest one; the user must see that a file of theirs did not count
        return (
            f"{n - ok} of {n} runs failed or damaged, counted as the dropped slowest by the MLPerf "
            "rules (see the runs' quality table)"
        )
    return f"no valid score: {n - ok} of {n} runs failed or damaged (see the runs' quality table)"


def side_from_published(
    published: pl.DataFrame,
    system: str,
    accelerator: str | None = None,
    accelerators: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """One comparison side from published rows (``data/reference/published_results.csv`` layout,
    :func:`~trainperf.compare.load_published_results`): the rows whose ``system`` is ``system``.

    ``time_to_train_min`` is the published ``minutes``, throughput and TFLOP/s the published
    step-level figures, ``precision`` the published one; MFU over the dense peaks of
    ``accelerator`` (default H100 SXM, the accelerator of every published row).

    Returns:
        polars frame with :data:`SIDE_SCHEMA` (empty if no row names ``system``).
    """
    rows = [
        {
            "system": system,
            "result": "published",
            "source": "published",
            "round": r["round"],
            "benchmark": r["benchmark"],
            "n_nodes": r["n_nodes"],
            "n_gpus": r["n_gpus"],
            "time_to_train_min": r["minutes"],
            "n_runs": None,
            "tokens_per_s_per_gpu": r["tokens_per_s_per_gpu"],
            "model_tflops_per_gpu": r["tflops_per_gpu"],
            "precision": r["precision"],
            "software": None,
            "throughput_basis": "step" if r["tokens_per_s_per_gpu"] is not None else None,
        }
        for r in published.filter(pl.col("system") == system).iter_rows(named=True)
    ]
    return _with_mfu(rows, accelerator or "H100 SXM", None, accelerators).sort(
        "benchmark", "n_gpus"
    )


def _version(round_: str | None) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", round_ or ""))


def reference_round_for(
    evaluated_round: str | None, available: list[str], requested: str | None = None
) -> tuple[str | None, str | None]:
    """The reference round a result is compared against, and why if it is not its own round.

    Rule: ``requested`` (the config's ``reference.round``) when the reference has the benchmark in
    it; else the evaluated result's own round when the reference has the benchmark in that round;
    else the nearest round (by version distance, the newer of two equally near), with a reason.

    Args:
        evaluated_round: the evaluated result's MLPerf round (``v4.1``), None if unknown.
        available: the rounds in which the reference has this benchmark.
        requested: a round asked for, or None.

    Returns:
        ``(round, reason)``: reason None when the round is the evaluated round (or the requested
        one); ``(None, None)`` when ``available`` is empty.

    >>> reference_round_for("v4.1", ["v3.1", "v4.1"])
    ('v4.1', None)
    >>> reference_round_for("v5.0", ["v3.1", "v4.1"])
    ('v4.1', 'no result of the reference in v5.0; nearest round v4.1')
    """
    if not available:
        return None, None
    if requested is not None and requested in available:
        return requested, None
    if evaluated_round in available and requested is None:
        return evaluated_round, None

    def dist(r: str) -> tuple:
        a, b = _version(r), _version(evaluated_round)
        fa = a[0] + (a[1] if len(a) > 1 else 0) / 10 if a else 0.0
        fb = b[0] + (b[1] if len(b) > 1 else 0) / 10 if b else 0.0
        return (abs(fa - fb), tuple(-x for x in a))

    if evaluated_round is None:
        pick = max(available, key=_version)
        return pick, (
            "round of the evaluated logs unknown (no folder named like v5.0 or "
            f"training_results_v5.0 above them); the reference's newest round {pick}"
        )
    pick = min(available, key=dist)
    if requested is not None and pick == evaluated_round:
        # the round asked for is missing; the result's own round is there: that one, named so
        # (not "nearest", which would read as nearest to the round asked for)
        why = f"no result of the reference in {requested} (asked for); the evaluated round {pick}"
        return pick, why
    if requested is not None:
        why = f"no result of the reference in {requested} (asked for); nearest round {pick}"
        return pick, f"{why} to the evaluated round {evaluated_round}"
    return pick, f"no result of the reference in {evaluated_round}; nearest round {pick}"


_KIND_ORDER = {"measured": 0, "interpolated": 1, "extrapolated": 2, "none": 3}


def _measured_by_gpus(rows: list[dict]) -> dict[int, dict]:
    """One measured reference row per GPU count: the fastest where a round has two."""
    best: dict[int, dict] = {}
    for b in rows:
        n = b["n_gpus"]
        if n and b["time_to_train_min"] is not None:
            if n not in best or b["time_to_train_min"] < best[n]["time_to_train_min"]:
                best[n] = b
    return best


def _reference_estimate(n: int, by_gpus: dict[int, dict]) -> dict[str, Any]:
    """The reference at ``n`` GPUs from its measured scales (one round): measured, interpolated on
    a power law between the two bracketing scales, or extrapolated linearly beyond the last/first
    one. Returns the ``reference_*`` columns but the ratios."""
    lo = max((m for m in by_gpus if m < n), default=None)
    hi = min((m for m in by_gpus if m > n), default=None)
    if n in by_gpus:
        b = by_gpus[n]
        kind, t, low, high = "measured", b["time_to_train_min"], b, b
    elif lo is not None and hi is not None:
        low, high = by_gpus[lo], by_gpus[hi]
        t = interpolate_power_law(n, lo, low["time_to_train_min"], hi, high["time_to_train_min"])
        kind, b = "interpolated", None
    else:
        basis = by_gpus[lo if lo is not None else hi]
        t = extrapolate_linear(basis["time_to_train_min"], basis["n_gpus"], n)
        kind, b = "extrapolated", basis
        low, high = (basis, None) if lo is not None else (None, basis)
    any_b = b or low or high
    return {
        "reference_system": any_b["system"],
        "reference_result": (
            b["result"] if b is not None else f"{low['result']} .. {high['result']}"
        ),
        "reference_round": any_b["round"],
        "reference_software": any_b.get("software"),
        "reference_n_gpus": n,
        "reference_n_nodes": b["n_nodes"] if kind == "measured" else None,
        "reference_min": t,
        "reference_kind": kind,
        "reference_low_n_gpus": low["n_gpus"] if low else None,
        "reference_low_min": low["time_to_train_min"] if low else None,
        "reference_high_n_gpus": high["n_gpus"] if high else None,
        "reference_high_min": high["time_to_train_min"] if high else None,
        "reference_tokens_per_s_per_gpu": b["tokens_per_s_per_gpu"] if kind == "measured" else None,
        "reference_throughput_basis": b["throughput_basis"] if kind == "measured" else None,
        "reference_precision": any_b["precision"],
        "reference_mfu": b["mfu"] if kind == "measured" else None,
    }


def _other_round_measured(n: int, chosen: str | None, same: list[dict]) -> dict[str, Any]:
    """The reference measured at exactly ``n`` GPUs in a round other than ``chosen`` (the nearest
    such round, the newer of two equally near; its fastest result there): the
    ``reference_other_round*`` columns, empty when there is none."""
    rounds = {b["round"] for b in same if b["round"] and b["round"] != chosen}
    rounds = [r for r in rounds if n in _measured_by_gpus([b for b in same if b["round"] == r])]
    if not rounds:
        return {}
    c = _version(chosen) if chosen else ()

    def dist(r: str) -> tuple:
        v = _version(r)
        fv = v[0] + (v[1] if len(v) > 1 else 0) / 10 if v else 0.0
        fc = c[0] + (c[1] if len(c) > 1 else 0) / 10 if c else 0.0
        return (abs(fv - fc), tuple(-x for x in v))

    pick = min(rounds, key=dist)
    b = _measured_by_gpus([b for b in same if b["round"] == pick])[n]
    return {"reference_other_round": pick, "reference_other_round_min": b["time_to_train_min"]}


def _bounds(row: dict, n: int, t_a: float) -> tuple[float | None, float | None]:
    """(ratio_low, ratio_high): the ratio against each measured neighbour's own GPU time.

    The reference's GPU time ``n·T`` grows with its scale wherever it scales less than perfectly,
    so at ``n`` it lies between its neighbours' measured GPU times (interpolated), at or above the
    last measured one beyond it (the linear extrapolation, perfect scaling, is then an upper
    bound of the ratio) and at or below the first one below it (a lower bound)."""
    kind = row["reference_kind"]
    if kind == "measured":
        return row["ratio"], row["ratio"]
    vals = [
        gpu_time_ratio(n, t_a, row[f"reference_{s}_n_gpus"], row[f"reference_{s}_min"])
        for s in ("low", "high")
        if row[f"reference_{s}_n_gpus"]
    ]
    if kind == "interpolated":
        return min(vals), max(vals)
    if row["reference_low_n_gpus"]:  # beyond the largest measured scale
        return None, vals[0]
    return vals[0], None  # below the smallest measured scale


def log_comparison(
    evaluated: pl.DataFrame,
    reference: pl.DataFrame,
    reference_round: str | None = None,
) -> pl.DataFrame:
    """Compare every evaluated result with the reference at the same benchmark and GPU count.

    Per evaluated row (``n`` GPUs, round R):

    1. **Round** (:func:`reference_round_for`): the reference's results of the same benchmark in
       ``reference_round`` if given, else in R where the reference has the benchmark in R, else in
       the nearest round; ``reference_round_note`` says why when it is not R.
    2. **Scale**: within that round, the reference at ``n`` GPUs (``reference_n_gpus`` = ``n_gpus``):
       ``measured`` when it has a result at ``n`` GPUs (the fastest if two); ``interpolated``
       between the two bracketing measured scales on the power law ``T = a·n^b`` through them
       (:func:`~trainperf.compare.ratios.interpolate_power_law`); ``extrapolated`` linearly
       (perfect strong scaling, :func:`~trainperf.compare.ratios.extrapolate_linear`) beyond
       the largest or below the smallest measured scale; ``none`` when the reference never ran
       the benchmark.
    3. **Ratios**: ``ratio = (n·T)_A / (n·T)_B`` at ``n`` GPUs on both sides (the per-GPU GPU-time
       ratio, equal to the time ratio at equal counts); ``ratio_low``/``ratio_high`` the ratio
       against each measured neighbour's own GPU time (:func:`_bounds`: both for interpolated
       rows, the upper bound beyond the largest scale, the lower below the smallest, both equal
       to ``ratio`` when measured); ``time_ratio = T_A / reference_min``; ``throughput_ratio``
       ``tps_B / tps_A`` against a measured reference on the same basis (step or e2e).

    Args:
        evaluated, reference: sides with :data:`SIDE_SCHEMA` (:func:`side_from_results`,
            :func:`side_from_published`).
        reference_round: compare against this round where the reference has the benchmark in it.

    Returns:
        polars frame with :data:`COMPARISON_SCHEMA`, one row per evaluated result, sorted by
        benchmark, GPU count and evaluated result.
    """
    ref_rows = reference.filter(pl.col("n_gpus").is_not_null()).to_dicts()
    out = []
    for a in evaluated.iter_rows(named=True):
        n = a["n_gpus"]
        row = evaluated_columns(a)
        same = [b for b in ref_rows if b["benchmark"] == a["benchmark"]]
        rounds = sorted({b["round"] for b in same if b["round"]}, key=_version)
        chosen, why = reference_round_for(a["round"], rounds, reference_round)
        in_round = [b for b in same if b["round"] == chosen]
        by_gpus = _measured_by_gpus(in_round)
        if by_gpus and n:
            row.update(_reference_estimate(n, by_gpus))
            if why:
                row["reference_round_note"] = why
            if row["reference_kind"] != "measured":
                row.update(_other_round_measured(n, chosen, same))
        elif ref_rows:
            row["reference_system"] = (same or ref_rows)[0]["system"]
        t_a, t_b = a["time_to_train_min"], row["reference_min"]
        if t_a is not None and t_b:
            row["ratio"] = gpu_time_ratio(n, t_a, row["reference_n_gpus"], t_b)
            row["time_ratio"] = t_a / t_b
            row["ratio_low"], row["ratio_high"] = _bounds(row, n, t_a)
        t_o = row["reference_other_round_min"]
        if t_a is not None and t_o:
            row["ratio_other_round"] = t_a / t_o
        tps_a, tps_b = a["tokens_per_s_per_gpu"], row["reference_tokens_per_s_per_gpu"]
        if tps_a and tps_b and a["throughput_basis"] == row["reference_throughput_basis"]:
            row["throughput_ratio"] = tps_b / tps_a
        out.append(row)
    frame = pl.DataFrame(out, schema=COMPARISON_SCHEMA)
    return frame.sort("benchmark", "n_gpus", "evaluated_result", nulls_last=True)


def reference_side(
    results, name: str, gpus_per_node: int | None = None, precision: str | None = None
) -> pl.DataFrame:
    """The reference's side (:data:`SIDE_SCHEMA`) from its MLPerf results.

    The reference's folder may hold peers' logs too (``data/mlperf`` bundles Oracle's RoCE cluster
    beside Eos): where some result folders carry the reference's name (``eos_n64_...``,
    ``eos-dfw_...`` for ``Eos``, case-insensitive prefix), only those are the reference; where
    none does, every result is.

    Args:
        results: :class:`trainperf.mlperf.Results` of the reference's folder.
        name: the reference's name (``Eos``).
        gpus_per_node: the reference's GPUs per node; None: each result's own
            ``number_of_nodes`` (its ``systems/<system>.json``), as for a reference of 4 GPUs a
            node (e.g. GB200 systems).
        precision: the precision its runs trained in (MFU against its peak), or None.
    """
    ref = side_from_results(results, name, gpus_per_node, None, precision)
    own = ref.filter(pl.col("result").str.to_lowercase().str.starts_with(name.lower()))
    return own if own.height else ref


def cluster_comparison(
    name: str,
    gpus_per_node: int,
    accelerator: str,
    reference_mlperf,
    mlperf=None,
    published=None,
    precision: str | None = None,
    reference_name: str = "Eos",
    reference_round: str | None = None,
    reference_precision: str = "fp8",
    reference_gpus_per_node: int | None = None,
    accelerators: pl.DataFrame | None = None,
    warn: bool = True,
    record: pl.DataFrame | None = None,
    like_for_like: bool = False,
    reference_record: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The evaluated cluster against the reference, from files: the comparison behind
    ``DIR/comparison.csv`` of ``trainperf report --config`` and of ``trainperf compare``.

    Args:
        name: the evaluated cluster's name (``evaluated_system``).
        gpus_per_node: its GPUs per node; accelerator: its accelerator (MFU peaks).
        reference_mlperf: folder of the reference's MLPerf logs (default config: the bundled
            Eos logs ``data/mlperf``).
        mlperf: folder of the evaluated cluster's MLPerf logs (or None).
        published: a published-results CSV holding rows whose ``system`` is ``name`` (or None).
        precision: datatype the evaluated runs trained in (None: unknown).
        reference_name, reference_precision: the reference side.
        reference_gpus_per_node: the reference's GPUs per node (``reference_n_nodes``); None:
            each reference result's own ``number_of_nodes`` from its system description.
        reference_round: compare against this round where the reference has the benchmark in it
            (None: each result's own round, else the nearest; :func:`reference_round_for`).
        accelerators: accelerator table with the config's own accelerator (default: the bundled
            ``data/reference/accelerators.csv``).
        warn: emit one :class:`ComparisonWarning` per result compared against another round.
        record: the MLPerf record (:func:`trainperf.record.read_record`): every row gets its rank
            there (``record_rank``, ``record_peers``, ``record_best``) and ``published_as``.
        like_for_like: compare with the record like for like
            (:func:`~trainperf.compare.record_comparison.record_comparison`) instead of the
            reference's logs (a config without ``reference:``); needs ``record``.
        reference_record: the record's results a config pins as the reference (``reference:``
            with submitter, system or accelerator): compared with these, whatever their
            accelerator; the rank stays the whole record's.

    Returns:
        :func:`log_comparison` of the evaluated side (logs and published rows, both if given)
        against the reference's logs; an empty frame with :data:`COMPARISON_SCHEMA` when neither
        ``mlperf`` nor ``published`` is given.

    Raises:
        FileNotFoundError: a folder without result files.
    """
    like_for_like = like_for_like and record is not None
    with warnings.catch_warnings():  # damaged lines are in the runs chapter's data-quality table
        warnings.simplefilter("ignore")
        ref = None
        if not like_for_like:
            ref = reference_side(
                load_results(reference_mlperf),
                reference_name,
                reference_gpus_per_node,
                reference_precision,
            )
        sides = []
        if mlperf is not None:
            sides.append(
                side_from_results(
                    load_results(mlperf),
                    name,
                    gpus_per_node,
                    accelerator,
                    precision,
                    keep_unscored=True,
                    accelerators=accelerators,
                )
            )
    if published is not None:
        sides.append(
            side_from_published(load_published_results(published), name, accelerator, accelerators)
        )
    if not sides:
        return pl.DataFrame(schema=COMPARISON_SCHEMA)
    shas = evaluated_shas(mlperf) if record is not None else {}
    if like_for_like:
        frame = record_comparison(pl.concat(sides), accelerator, record, shas, reference_record)
        # the evaluated systems' JSON on both paths (the like-for-like one returned before it)
        if mlperf is not None:
            frame = with_system_json(frame, mlperf, list(COMPARISON_SCHEMA))
        return frame
    frame = log_comparison(pl.concat(sides), ref, reference_round)
    if reference_mlperf is not None and ref is not None:
        frame = with_reference_system_json(frame, reference_mlperf)
    if record is not None:
        frame = with_record_rank(frame, record, shas)
    if mlperf is not None:
        frame = with_system_json(frame, mlperf, list(COMPARISON_SCHEMA))
    if warn:
        for line in round_warnings(frame):
            warnings.warn(line, ComparisonWarning, stacklevel=2)
    return frame


class ComparisonWarning(UserWarning):
    """A comparison made against another MLPerf round than the evaluated result's own."""
