"""The evaluated system's own results (MLPerf logs or published rows) against a reference's logs.

One frame per side (:func:`side_from_results`, :func:`side_from_published`, same columns,
:data:`SIDE_SCHEMA`) and their comparison per benchmark and node count (:func:`log_comparison`):
at a node count where the reference has measured runs, each is compared as measured; where it has
none, the nearest measured scales below and above are extrapolated linearly to that count
(:func:`~trainperf.compare.extrapolate_linear`, the SAKURAONE paper's method, 49.80 x 64/96 =
33.20 min) and labelled ``extrapolated``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import polars as pl

__all__ = [
    "COMPARISON_SCHEMA",
    "SIDE_SCHEMA",
    "cluster_comparison",
    "comparison_summary",
    "log_comparison",
    "side_from_published",
    "side_from_results",
]

SIDE_SCHEMA: dict[str, pl.DataType] = {
    "system": pl.String,
    "result": pl.String,
    "source": pl.String,
    "round": pl.String,
    "benchmark": pl.String,
    "n_nodes": pl.Int64,
    "n_gpus": pl.Int64,
    "time_to_train_min": pl.Float64,
    "n_runs": pl.Int64,
    "tokens_per_s_per_gpu": pl.Float64,
    "model_tflops_per_gpu": pl.Float64,
    "precision": pl.String,
    "mfu": pl.Float64,
    "mfu_bf16": pl.Float64,
    "mfu_fp8": pl.Float64,
    "note": pl.String,
}
"""One side of a comparison, one row per result (system folder or published row) and benchmark:
``system`` (String, the name the book uses), ``result`` (String, the MLPerf system folder, or
``published``), ``source`` (String, ``logs`` or ``published``), ``round`` (String, ``v4.1``),
``benchmark`` (String), ``n_nodes``, ``n_gpus`` (Int64), ``time_to_train_min`` (Float64, minutes:
the MLPerf score of the logs by the MLPerf rules, or the published time), ``n_runs`` (Int64,
runs in the score; null for published rows), ``tokens_per_s_per_gpu`` (Float64, tokens/s/GPU at
step level, median over runs), ``model_tflops_per_gpu`` (Float64, model TFLOP/s per GPU, step
level), ``precision`` (String, ``fp8``/``bf16`` the runs trained in, null if unknown), ``mfu``
(Float64, fraction of the dense peak of ``precision``; null if unknown), ``mfu_bf16``,
``mfu_fp8`` (Float64, fractions of the dense BF16 and FP8 peaks), ``note`` (String: why a result
has no time to train, e.g. ``no valid score: 3 of 3 runs failed or damaged``; where the precision
came from; null if nothing to say)."""

COMPARISON_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.String,
    "n_nodes": pl.Int64,
    "n_gpus": pl.Int64,
    "evaluated_system": pl.String,
    "evaluated_result": pl.String,
    "evaluated_source": pl.String,
    "evaluated_round": pl.String,
    "evaluated_min": pl.Float64,
    "evaluated_runs": pl.Int64,
    "evaluated_tokens_per_s_per_gpu": pl.Float64,
    "evaluated_model_tflops_per_gpu": pl.Float64,
    "evaluated_precision": pl.String,
    "evaluated_mfu": pl.Float64,
    "evaluated_mfu_bf16": pl.Float64,
    "evaluated_mfu_fp8": pl.Float64,
    "reference_system": pl.String,
    "reference_result": pl.String,
    "reference_round": pl.String,
    "reference_min": pl.Float64,
    "reference_kind": pl.String,
    "reference_basis_nodes": pl.Int64,
    "reference_basis_min": pl.Float64,
    "reference_tokens_per_s_per_gpu": pl.Float64,
    "reference_precision": pl.String,
    "reference_mfu": pl.Float64,
    "ratio": pl.Float64,
    "gpu_minutes_ratio": pl.Float64,
    "throughput_ratio": pl.Float64,
    "note": pl.String,
}
"""Columns of :func:`log_comparison`: the evaluated side (``evaluated_*``, as in
:data:`SIDE_SCHEMA`) and the reference at the same ``benchmark`` and ``n_nodes``:
``reference_min`` (Float64, minutes: the reference's score there, or its linear extrapolation),
``reference_kind`` (String: ``measured``, ``extrapolated`` or ``none`` when the reference has no
run of that benchmark), ``reference_basis_nodes`` and ``reference_basis_min`` (the measured scale
and score an extrapolation starts from; equal to ``n_nodes`` and ``reference_min`` when
measured), ``reference_tokens_per_s_per_gpu`` and ``reference_mfu`` (of the measured basis),
``ratio`` (Float64, ``evaluated_min / reference_min``, the raw time-to-train ratio at equal node
count, the paper's table), ``gpu_minutes_ratio`` (Float64, ``n_gpus_A T_A / (n_gpus_B T_B)``,
equal to ``ratio`` with equal GPUs per node) and ``throughput_ratio`` (Float64,
``tps_B / tps_A`` at step level, above 1: the evaluated system processes fewer tokens/s per GPU;
measured only) and ``note`` (String, the evaluated side's note: why it has no score, where its
precision came from)."""


def _mfu(tflops, accelerator: str | None, precision: str) -> float | None:
    from trainperf.flops import peak_flops

    if tflops is None or not accelerator:
        return None
    try:
        return tflops * 1e12 / peak_flops(accelerator, precision)
    except ValueError:  # no such peak (e.g. FP8 on A100): no MFU, never a wrong one
        return None


def _join(*notes) -> str | None:
    text = "; ".join(n for n in notes if n)
    return text or None


_PRECISION_WORDS = {"fp8": re.compile(r"\bfp8\b", re.I), "bf16": re.compile(r"\bbf16\b", re.I)}


def precision_in_logs(result_files) -> str | None:
    """The datatype (``fp8``/``bf16``) the submission's own files state, or None.

    MLPerf Training logs have no precision key (mlperf-logging's ``constants.py`` defines none);
    a submission may say it in its ``systems/<system>.json`` (``framework``, ``sw_notes``,
    ``hw_notes``, ``other_software_stack``). Read there, next to each ``result_*.txt`` in the
    MLCommons layout (``<submitter>/results/<system>/<benchmark>/result_*.txt``); exactly one of
    the two words must appear, else None (unknown: the caller falls back to the config).
    """
    import json

    found: set[str] = set()
    for f in {Path(f) for f in result_files if f}:
        if len(f.parts) < 5 or f.parts[-4] != "results":
            continue
        js = Path(*f.parts[:-4]) / "systems" / f"{f.parts[-3]}.json"
        try:
            desc = json.loads(js.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(desc, dict):
            continue
        text = " ".join(
            json.dumps(desc.get(k, ""))
            for k in ("framework", "sw_notes", "hw_notes", "other_software_stack")
        )
        found |= {p for p, rx in _PRECISION_WORDS.items() if rx.search(text)}
    return found.pop() if len(found) == 1 else None


def _with_mfu(rows: list[dict], accelerator: str | None, precision: str | None) -> pl.DataFrame:
    for r in rows:
        acc = accelerator or r.pop("_accelerator", None)
        r.pop("_accelerator", None)
        r["mfu_bf16"] = _mfu(r["model_tflops_per_gpu"], acc, "bf16")
        r["mfu_fp8"] = _mfu(r["model_tflops_per_gpu"], acc, "fp8")
        prec = r.get("precision") or precision  # the logs' own word first, then the config
        if prec is None and r["mfu_bf16"] is not None and r["mfu_bf16"] > 1:
            # model FLOP/s above the dense BF16 peak: the run cannot have been BF16
            prec = "fp8"
            r["note"] = _join(r.get("note"), "precision fp8: model FLOP/s above the BF16 peak")
        r["precision"] = prec
        r["mfu"] = r[f"mfu_{prec}"] if prec in ("bf16", "fp8") else None
    return pl.DataFrame(rows, schema=SIDE_SCHEMA)


def side_from_results(
    results,
    system: str,
    gpus_per_node: int | None = None,
    accelerator: str | None = None,
    precision: str | None = None,
    rounds: str | list[str] | None = None,
    keep_unscored: bool = False,
) -> pl.DataFrame:
    """One comparison side from MLPerf logs (:func:`trainperf.mlperf.load_results`).

    Time to train is the MLPerf score (``results.scores.score_min``, olympic mean by the MLPerf
    rules); throughput and model TFLOP/s the medians over the successful runs of
    :func:`trainperf.mlperf.runs_with_throughput`; MFU those TFLOP/s over the dense peaks of
    ``accelerator`` (:func:`trainperf.flops.peak_flops`). Results without a score are left out,
    or with ``keep_unscored`` kept with a null time and a ``note`` saying why (the evaluated side:
    its user must see that the logs were read and none scored). ``precision`` is each result's
    own (:func:`precision_in_logs`), else the ``precision`` argument, else null (unknown: both
    MFUs, ``mfu`` null).

    Args:
        results: the loaded logs.
        system: the name the book uses for this side (e.g. the config's ``name``, ``Eos``).
        gpus_per_node: node count = GPUs / this; None: the logs' ``number_of_nodes``.
        accelerator: peak FLOP/s of this accelerator; None: each run's ``accelerator_model``.
        precision: datatype the runs trained in (``fp8``/``bf16``) where their own files do not
            say; None: unknown.
        rounds: keep only these MLPerf rounds (None: all).
        keep_unscored: keep results without a score (see above).

    Returns:
        polars frame with :data:`SIDE_SCHEMA`.
    """
    from trainperf.mlperf import runs_with_throughput

    keys = ["round", "system", "benchmark"]
    thr = runs_with_throughput(results)
    ok = thr.filter(pl.col("status") == "success")
    agg = ok.group_by(keys).agg(
        pl.col("tokens_per_s_per_gpu_step").median(),
        pl.col("model_tflops_per_gpu_step").median(),
        pl.col("n_nodes").drop_nulls().first(),
        pl.col("accelerator_model").drop_nulls().first(),
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
    joined = scores.join(agg, on=keys, how="left")
    rows = []
    for r in joined.iter_rows(named=True):
        gpus = r["n_accelerators"]
        if gpus_per_node and gpus:
            nodes = -(-gpus // gpus_per_node)
        else:
            nodes = r["n_nodes"]
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
                "tokens_per_s_per_gpu": r["tokens_per_s_per_gpu_step"],
                "model_tflops_per_gpu": r["model_tflops_per_gpu_step"],
                "precision": own_precision.get((r["round"], r["system"], r["benchmark"])),
                "_accelerator": r["accelerator_model"],
                "note": _score_note(r),
            }
        )
    return _with_mfu(rows, accelerator, precision).sort("benchmark", "n_nodes", "round")


def _score_note(r: dict) -> str | None:
    if r["score_min"] is not None:
        return None
    n, ok = r.get("n_runs") or 0, r.get("n_valid_runs") or 0
    return f"no valid score: {n - ok} of {n} runs failed or damaged (see the runs' quality table)"


def side_from_published(
    published: pl.DataFrame, system: str, accelerator: str | None = None
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
        }
        for r in published.filter(pl.col("system") == system).iter_rows(named=True)
    ]
    return _with_mfu(rows, accelerator or "H100 SXM", None).sort("benchmark", "n_nodes")


def _ref_part(b: dict[str, Any], kind: str, n_nodes: int, minutes: float) -> dict[str, Any]:
    return {
        "reference_system": b["system"],
        "reference_result": b["result"],
        "reference_round": b["round"],
        "reference_min": minutes,
        "reference_kind": kind,
        "reference_basis_nodes": b["n_nodes"],
        "reference_basis_min": b["time_to_train_min"],
        "reference_tokens_per_s_per_gpu": b["tokens_per_s_per_gpu"],
        "reference_precision": b["precision"],
        "reference_mfu": b["mfu"],
        "_ref_gpus": (b["n_gpus"] or 0) * n_nodes / b["n_nodes"] if b["n_nodes"] else None,
    }


def _newest(rows: list[dict]) -> list[dict]:
    """At each node count, the rows of the newest round (rounds compare as version numbers)."""

    def version(r):
        return tuple(int(x) for x in (r["round"] or "v0").lstrip("v").split(".") if x.isdigit())

    best: dict[int, tuple] = {}
    for r in rows:
        best[r["n_nodes"]] = max(best.get(r["n_nodes"], ()), version(r))
    return [r for r in rows if version(r) == best[r["n_nodes"]]]


def log_comparison(evaluated: pl.DataFrame, reference: pl.DataFrame) -> pl.DataFrame:
    """Compare every evaluated result with the reference at the same benchmark and node count.

    Per evaluated row: every reference result measured at that ``n_nodes`` (newest round first)
    gives a ``measured`` row. Where there is none, the nearest measured node counts below and
    above (the newest round at each) give one ``extrapolated`` row each, the reference time
    scaled linearly, ``T_B(n) = T_B(n_basis) x n_basis / n`` (:func:`extrapolate_linear`, perfect
    strong scaling: optimistic for the reference below its basis, the way the SAKURAONE paper
    obtained Eos at 96 nodes from 64). A benchmark the reference never ran gives one row with
    ``reference_kind`` ``none`` and null reference columns.

    Args:
        evaluated, reference: sides with :data:`SIDE_SCHEMA` (:func:`side_from_results`,
            :func:`side_from_published`).

    Returns:
        polars frame with :data:`COMPARISON_SCHEMA`, sorted by benchmark, node count,
        evaluated result, measured before extrapolated.
    """
    from trainperf.compare import extrapolate_linear

    ref_rows = reference.filter(pl.col("n_nodes").is_not_null()).to_dicts()
    out = []
    for a in evaluated.iter_rows(named=True):
        n = a["n_nodes"]
        base = {
            "benchmark": a["benchmark"],
            "n_nodes": n,
            "n_gpus": a["n_gpus"],
            **{
                f"evaluated_{k}": a[k]
                for k in ("system", "result", "source", "round", "precision", "mfu")
            },
            "evaluated_min": a["time_to_train_min"],
            "evaluated_runs": a["n_runs"],
            "evaluated_tokens_per_s_per_gpu": a["tokens_per_s_per_gpu"],
            "evaluated_model_tflops_per_gpu": a["model_tflops_per_gpu"],
            "evaluated_mfu_bf16": a["mfu_bf16"],
            "evaluated_mfu_fp8": a["mfu_fp8"],
            "note": a.get("note"),
        }
        same = [b for b in ref_rows if b["benchmark"] == a["benchmark"]]
        measured = sorted(
            (b for b in same if b["n_nodes"] == n), key=lambda b: b["round"] or "", reverse=True
        )
        parts = [_ref_part(b, "measured", n, b["time_to_train_min"]) for b in measured]
        if not measured and n is not None:
            below = [b for b in same if b["n_nodes"] < n]
            above = [b for b in same if b["n_nodes"] > n]
            for group, pick in ((below, max), (above, min)):
                if not group:
                    continue
                nearest = pick(b["n_nodes"] for b in group)
                for b in _newest([b for b in group if b["n_nodes"] == nearest]):
                    t = extrapolate_linear(b["time_to_train_min"], b["n_nodes"], n)
                    parts.append(_ref_part(b, "extrapolated", n, t))
        if not parts:
            parts = [{"reference_kind": "none"}]
        for p in parts:
            row = {**base, **p}
            t_b, t_a = row.get("reference_min"), a["time_to_train_min"]
            row["ratio"] = t_a / t_b if (t_a is not None and t_b) else None
            gpus_b = row.pop("_ref_gpus", None)
            row["gpu_minutes_ratio"] = (
                (a["n_gpus"] * t_a) / (gpus_b * t_b)
                if (t_a is not None and t_b and gpus_b and a["n_gpus"])
                else None
            )
            tps_a, tps_b = a["tokens_per_s_per_gpu"], row.get("reference_tokens_per_s_per_gpu")
            row["throughput_ratio"] = (
                tps_b / tps_a if (tps_a and tps_b and row["reference_kind"] == "measured") else None
            )
            out.append(row)
    frame = pl.DataFrame(out, schema=COMPARISON_SCHEMA)
    return (
        frame.with_columns(
            pl.col("reference_kind")
            .replace_strict({"measured": 0, "extrapolated": 1, "none": 2}, return_dtype=pl.Int64)
            .alias("_k")
        )
        .sort("benchmark", "n_nodes", "evaluated_result", "_k")
        .drop("_k")
    )


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
    reference_gpus_per_node: int = 8,
) -> pl.DataFrame:
    """The evaluated cluster against the reference, from files: the comparison behind
    ``DIR/comparison.csv`` of ``trainperf report --config``.

    Args:
        name: the evaluated cluster's name (``evaluated_system``).
        gpus_per_node: its GPUs per node; accelerator: its accelerator (MFU peaks).
        reference_mlperf: folder of the reference's MLPerf logs (default config: the bundled
            Eos logs ``data/mlperf``).
        mlperf: folder of the evaluated cluster's MLPerf logs (or None).
        published: a published-results CSV holding rows whose ``system`` is ``name`` (or None).
        precision: datatype the evaluated runs trained in (None: unknown).
        reference_name, reference_round, reference_precision, reference_gpus_per_node: the
            reference side (``reference_round``: only that round counts as measured).

    Returns:
        :func:`log_comparison` of the evaluated side (logs and published rows, both if given)
        against the reference's logs; an empty frame with :data:`COMPARISON_SCHEMA` when neither
        ``mlperf`` nor ``published`` is given.

    Raises:
        FileNotFoundError: a folder without result files.
    """
    import warnings

    from trainperf.compare import load_published_results
    from trainperf.mlperf import load_results

    with warnings.catch_warnings():  # damaged lines are in the runs chapter's data-quality table
        warnings.simplefilter("ignore")
        ref = side_from_results(
            load_results(reference_mlperf),
            reference_name,
            reference_gpus_per_node,
            None,
            reference_precision,
            rounds=reference_round,
        )
        # the reference's folder may hold peers' logs too (data/mlperf: Oracle's RoCE cluster):
        # where some result folders carry the reference's name (eos_n64_..., eos-dfw_...), only
        # those are the reference
        own = ref.filter(
            pl.col("result").str.to_lowercase().str.starts_with(reference_name.lower())
        )
        if own.height:
            ref = own
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
                )
            )
    if published is not None:
        sides.append(side_from_published(load_published_results(published), name, accelerator))
    if not sides:
        return pl.DataFrame(schema=COMPARISON_SCHEMA)
    return log_comparison(pl.concat(sides), ref)


BENCHMARK_NAMES = {"gpt3": "GPT-3 175B", "llama2_70b_lora": "Llama 2 70B LoRA"}
"""How the book names the MLPerf benchmarks (the MLPerf Training results tables' names)."""


def comparison_summary(comparison: pl.DataFrame) -> str:
    """One sentence for the book's summary from a :func:`log_comparison` frame (``comparison.csv``):
    per benchmark and node count, the first reference row (measured before extrapolated), e.g.
    ``MyCluster needs 1.00x the GPU time of Eos v4.1 at 32 nodes (GPT-3 175B)``; GPU time is
    ``gpu_minutes_ratio`` (GPUs x minutes, so a different GPU count is accounted for), else the
    time-to-train ``ratio``. A result without a score says so with its ``note``; an extrapolated
    reference says from which scale. "" for an empty frame.
    """
    if comparison.is_empty():
        return ""
    parts, other = [], []
    name = comparison["evaluated_system"][0]
    firsts = comparison.unique(["benchmark", "n_nodes"], keep="first", maintain_order=True)
    for r in firsts.iter_rows(named=True):
        bench = BENCHMARK_NAMES.get(r["benchmark"], r["benchmark"])
        nodes = r["n_nodes"]
        where = f"at {nodes} node{'s' if nodes != 1 else ''} ({bench})"
        ref = f"{r['reference_system'] or 'the reference'} {r['reference_round'] or ''}".strip()
        if r["evaluated_min"] is None:
            why = (r.get("note") or "").removeprefix("no valid score: ")
            other.append(f"No valid score {where}" + (f": {why}." if why else "."))
        elif r["reference_kind"] == "none" or r["reference_min"] is None:
            other.append(f"No {r['reference_system'] or 'reference'} result to compare {where}.")
        else:
            gm = r.get("gpu_minutes_ratio")
            what = f"{gm:.2f}x the GPU time" if gm is not None else f"{r['ratio']:.2f}x the time"
            how = (
                f" (extrapolated from its {r['reference_basis_nodes']}-node run)"
                if r["reference_kind"] == "extrapolated"
                else ""
            )
            parts.append(f"{what} of {ref}{how} {where}")
    head = f"{name} needs " + "; ".join(parts) + "." if parts else ""
    return " ".join(x for x in [head, *other] if x)
