"""Caveats computed from the published rows, and the candidate meanings of a quoted per-GPU ratio.

Two questions a reader of a comparison asks before trusting its ratios:

* **Do a row's own numbers agree with each other?** :func:`consistency_checks` applies three
  checks to every row it is given (the evaluated system's, the reference's, or a user's own
  cluster's): the FLOPs per token its TFLOP/s and tokens/s imply, whether its throughput can cover
  the tokens a run needs in its time to train, and whether its time to train duplicates another
  system's published score.
* **What can a quoted ratio mean?** :func:`ratio_candidates` computes, for every scale of the
  evaluated system, each per-GPU ratio a talk could have quoted (time to train against a measured
  or an extrapolated reference, step-level tokens/s per GPU, step-level TFLOP/s per GPU) and says
  which of them come within a tolerance of the quoted value (the SAKURAONE talk's 1.28x).

Ratios are oriented as in :mod:`trainperf.compare`: cost of the evaluated system over cost of the
reference, above 1 = the evaluated system needs more GPU time.

Sources: F_tok is the GPT-3 175B dense count of Narayanan et al. (SC21, arXiv:2104.04473, eq. (3))
from :func:`trainperf.flops.model_flops_per_token`; the token budget of a GPT-3 run is a whole
number of evaluations of 24,576 sequences × 2048 tokens
(``mlcommons/training_policies@ad8c1ace:training_rules.adoc:477``), at least 23 at GBS 2048
(:data:`trainperf.compare.GPT3_MIN_TOKENS_GBS2048`); the published rows and their sources are
``data/reference/published_results.csv``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import polars as pl

from trainperf.compare.published import GPT3_MIN_TOKENS_GBS2048
from trainperf.flops import GPT3_175B, model_flops_per_token

__all__ = [
    "CANDIDATES_SCHEMA",
    "CHECKS_SCHEMA",
    "caveats_by_scale",
    "consistency_checks",
    "ratio_candidates",
]

CHECKS_SCHEMA: dict[str, pl.DataType] = {
    "system": pl.String,
    "round": pl.String,
    "benchmark": pl.String,
    "n_nodes": pl.Int64,
    "n_gpus": pl.Int64,
    "check": pl.String,
    "value": pl.Float64,
    "expected": pl.Float64,
    "unit": pl.String,
    "rel_diff": pl.Float64,
    "verdict": pl.String,
    "detail": pl.String,
    "source": pl.String,
    "verified": pl.Boolean,
    "value_text": pl.String,
    "expected_text": pl.String,
}
"""Columns of :func:`consistency_checks`."""

#: ``verdict`` values: the check passed, failed, could not be made (a value is missing).
VERDICTS = ("consistent", "inconsistent", "not checked")


def _round_key(r: str | None) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", r or ""))


def _fmt_e12(x: float) -> str:
    return f"{x / 1e12:.3f}e12"


def _pct(rel: float) -> str:
    """A signed percentage with a true minus sign, as the book's tables print it: ``−1.1%``."""
    return f"{rel:+.1%}".replace("-", "−")


def _fmt_min(x: float) -> str:
    """Minutes as published: at least two decimals, three when the third is not zero."""
    text = f"{x:.3f}"
    return text[:-1] if text.endswith("0") else text


def consistency_checks(
    results: pl.DataFrame,
    systems: Iterable[str] | None = None,
    benchmark: str = "gpt3",
    flops_per_token: float | None = None,
    assumed_tokens: float | None = None,
    tolerance: float = 0.01,
    duplicate_min: float = 0.005,
    runs: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Three checks of each published row's numbers against each other, one output row per check.

    For every row of ``results`` with ``benchmark`` (and, when given, ``system`` in ``systems``):

    1. ``flops_per_token``: ``value = tflops_per_gpu·1e12 / tokens_per_s_per_gpu`` (FLOP/token, the
       count the row's two throughputs imply) against ``expected = flops_per_token`` (default
       GPT-3 175B dense, 1.07644e12). Inconsistent when ``|value/expected − 1| > tolerance``
       (step times rounded to 0.01 s leave up to ~0.6 % in the Eos rows).
    2. ``tokens_covered``: ``value = minutes·60 · n_gpus · tokens_per_s_per_gpu`` (tokens the
       row's throughput processes in its time to train) against ``expected`` = the row's
       ``tokens_to_converge`` or, where it has none, ``assumed_tokens`` (default: the smallest
       GBS-2048 GPT-3 budget, 23 × 50,331,648 = 1,157,627,904 tokens, a lower bound). The time to
       train also holds evaluations and start-up, so a consistent row has ``value`` a few percent
       *above* ``expected``; below it, the throughput cannot be the timed run's.
    3. ``duplicate_time``: the row's ``minutes`` against every other system's row of the same
       benchmark; inconsistent when one agrees within ``duplicate_min`` minutes (``expected`` is
       that row's minutes). When ``runs`` (a :func:`trainperf.mlperf.runs_with_throughput` frame
       of bundled logs) holds the logs of the twin row (its ``source`` names their results
       folder), ``detail`` lists their times to train.

    Args:
        results: published rows (:data:`trainperf.compare.PUBLISHED_SCHEMA`).
        systems: systems to check (default: every system with ``benchmark`` rows).
        benchmark: benchmark whose rows are checked (checks 1 and 2 need a F_tok and a token
            budget, so for benchmarks other than ``gpt3`` pass ``flops_per_token`` and
            ``assumed_tokens`` or read only check 3).
        flops_per_token: F_tok, FLOP/token (default GPT-3 175B dense).
        assumed_tokens: tokens a run needs where the row gives none (default, for ``gpt3``, the
            smallest GBS-2048 budget; else the check is ``not checked``).
        tolerance: relative disagreement above which check 1 is ``inconsistent``.
        duplicate_min: minutes within which two systems' times count as the same.
        runs: optional per-run frame of bundled logs (columns ``result_file``,
            ``time_to_train_min``, ``status``), only to name the twin's runs.

    Returns:
        polars frame with :data:`CHECKS_SCHEMA`: system, round, benchmark (String), n_nodes, n_gpus
        (Int64), check (String: ``flops_per_token``, ``tokens_covered``, ``duplicate_time``), value,
        expected (Float64, in ``unit``: FLOP/token, tokens, min), unit (String), rel_diff (Float64,
        ``value/expected − 1``; null when not checked), verdict (String: ``consistent``,
        ``inconsistent``, ``not checked``), detail (String, one sentence a chapter can quote),
        source (String, where ``expected`` comes from), verified (Boolean, the row's flag),
        value_text, expected_text (String, the two with their unit, rounded for a reader). Rows
        in the input order, three per result.

    Raises:
        KeyError: ``results`` lacks a column of the published-results schema.
    """
    f_tok = flops_per_token if flops_per_token is not None else model_flops_per_token(GPT3_175B)
    if assumed_tokens is None and benchmark == "gpt3":
        assumed_tokens = GPT3_MIN_TOKENS_GBS2048
    bench = results.filter(pl.col("benchmark") == benchmark)
    chosen = bench if systems is None else bench.filter(pl.col("system").is_in(list(systems)))
    out: list[dict] = []
    for r in chosen.iter_rows(named=True):
        base = {
            "system": r["system"],
            "round": r["round"],
            "benchmark": benchmark,
            "n_nodes": r["n_nodes"],
            "n_gpus": r["n_gpus"],
            "verified": r["verified"],
        }
        where = f"{r['system']} {r['n_nodes']} nodes"
        out.append(_check_flops_per_token(r, base, where, f_tok, tolerance))
        out.append(_check_tokens_covered(r, base, where, assumed_tokens))
        out.append(_check_duplicate_time(r, base, where, bench, runs, duplicate_min))
    for row in out:
        row["value_text"] = _quantity(row["value"], row["unit"])
        row["expected_text"] = _quantity(row["expected"], row["unit"])
    return pl.DataFrame(out, schema=CHECKS_SCHEMA)


def _check_flops_per_token(r: dict, base: dict, where: str, f_tok: float, tolerance: float) -> dict:
    """Check 1: the FLOPs per token implied by the row's two throughputs."""
    tps, tflops = r["tokens_per_s_per_gpu"], r["tflops_per_gpu"]
    if tps and tflops:
        implied = tflops * 1e12 / tps
        rel = implied / f_tok - 1
        bad = abs(rel) > tolerance
        detail = (
            f"{tflops:g} TFLOP/s ÷ {tps:g} tokens/s per GPU = "
            f"{_fmt_e12(implied)} FLOP/token, {_pct(rel)} from F_tok = {_fmt_e12(f_tok)}"
            + (
                f", beyond the ±{tolerance:.0%} that rounding explains: the two throughputs "
                "cannot both be this model's, at least one is from another run or definition"
                if bad
                else ""
            )
        )
        return {
            **base,
            "check": "flops_per_token",
            "value": implied,
            "expected": f_tok,
            "unit": "FLOP/token",
            "rel_diff": rel,
            "verdict": VERDICTS[1] if bad else VERDICTS[0],
            "detail": detail,
            "source": "F_tok of Narayanan et al. SC21 (arXiv:2104.04473) eq. (3)",
        }
    else:
        return {
            **base,
            "check": "flops_per_token",
            "value": None,
            "expected": f_tok,
            "unit": "FLOP/token",
            "rel_diff": None,
            "verdict": VERDICTS[2],
            "detail": f"{where}: no tokens/s or TFLOP/s published",
            "source": "F_tok of Narayanan et al. SC21 (arXiv:2104.04473) eq. (3)",
        }


def _check_tokens_covered(r: dict, base: dict, where: str, assumed_tokens: float | None) -> dict:
    """Check 2: can the throughput cover the tokens in the time to train?"""
    tps = r["tokens_per_s_per_gpu"]
    stated = r["tokens_to_converge"]
    needed = float(stated) if stated else assumed_tokens
    if tps and r["minutes"] and r["n_gpus"] and needed:
        implied_tok = r["minutes"] * 60 * r["n_gpus"] * tps
        rel = implied_tok / needed - 1
        bad = rel < 0
        what = (
            "its tokens to converge"
            if stated
            else "the fewest tokens any GBS-2048 result needed (if the run used GBS 2048)"
        )
        hours_needed = needed / (r["n_gpus"] * tps) / 60
        detail = (
            f"{tps:g} tokens/s per GPU × {r['n_gpus']} GPUs × {_fmt_min(r['minutes'])} min "
            f"= {implied_tok / 1e9:.3f}e9 tokens, {_pct(rel)} against {what} "
            f"({needed / 1e9:.3f}e9)"
            + (
                f"; at that throughput those tokens take {hours_needed:.1f} min, "
                "longer than the time to train: either the throughput is not the timed run's "
                "(another run or another definition) or the run converged in fewer tokens "
                "than any GBS-2048 result published"
                if bad
                else ""
            )
        )
        return {
            **base,
            "check": "tokens_covered",
            "value": implied_tok,
            "expected": needed,
            "unit": "tokens",
            "rel_diff": rel,
            "verdict": VERDICTS[1] if bad else VERDICTS[0],
            "detail": detail,
            "source": "tokens_to_converge of the row"
            if stated
            else "an empirical floor, not a rule: 23 evaluations (the fewest of any GBS-2048 "
            "GPT-3 result in MLCommons training_results v3.0 to v4.1) × 24,576 sequences × "
            "2048 tokens (the evaluation interval of the MLPerf Training rules); assumes a "
            "global batch of 2048, which the row does not give",
        }
    else:
        return {
            **base,
            "check": "tokens_covered",
            "value": None,
            "expected": needed,
            "unit": "tokens",
            "rel_diff": None,
            "verdict": VERDICTS[2],
            "detail": f"{where}: no throughput or token budget to check",
            "source": "",
        }


def _check_duplicate_time(
    r: dict, base: dict, where: str, bench: pl.DataFrame, runs, duplicate_min: float
) -> dict:
    """Check 3: the same time to train as another system's published row."""
    twins = bench.filter(
        (pl.col("system") != r["system"])
        & ((pl.col("minutes") - r["minutes"]).abs() <= duplicate_min)
    )
    if twins.height:
        t = twins.row(0, named=True)
        runs_txt = _twin_runs(t, runs)
        detail = (
            f"{_fmt_min(r['minutes'])} min equals the {t['system']} {t['round']} "
            f"{t['n_nodes']}-node score ({_fmt_min(t['minutes'])} min{runs_txt}): a possible "
            f"transcription mix-up, in which case a ratio to {t['system']} at this scale "
            f"compares two {t['system']} results"
        )
        return {
            **base,
            "check": "duplicate_time",
            "value": r["minutes"],
            "expected": t["minutes"],
            "unit": "min",
            "rel_diff": r["minutes"] / t["minutes"] - 1,
            "verdict": VERDICTS[1],
            "detail": detail,
            "source": (t["source"] or "").split(" (copied")[0].split(";")[0],
        }
    else:
        return {
            **base,
            "check": "duplicate_time",
            "value": r["minutes"],
            "expected": None,
            "unit": "min",
            "rel_diff": None,
            "verdict": VERDICTS[0],
            "detail": f"{where}: no other system's row has {_fmt_min(r['minutes'])} min",
            "source": "",
        }


def _quantity(value: float | None, unit: str) -> str | None:
    """A check's value as a reader reads it: ``0.995e12 FLOP/token``, ``1.145e9 tokens``, ``58.30 min``."""
    if value is None:
        return None
    if unit == "FLOP/token":
        return f"{_fmt_e12(value)} {unit}"
    if unit == "tokens":
        return f"{value / 1e9:.3f}e9 {unit}"
    if unit == "min":
        return f"{_fmt_min(value)} {unit}"
    return f"{value:g} {unit}"


def _twin_runs(row: dict, runs: pl.DataFrame | None) -> str:
    """``"; its runs 58.247/58.302/58.353 min"`` when ``runs`` holds the logs the row cites."""
    if runs is None or not {"result_file", "time_to_train_min"} <= set(runs.columns):
        return ""
    m = re.search(r"/results/([^/\s]+)/([^/\s(]+)", row.get("source") or "")
    if not m:
        return ""
    folder = f"/results/{m.group(1)}/{m.group(2).strip()}/"
    sub = runs.filter(pl.col("result_file").str.contains(folder, literal=True))
    if "status" in sub.columns:
        sub = sub.filter(pl.col("status") == "success")
    times = sorted(sub["time_to_train_min"].drop_nulls().to_list())
    if not times:
        return ""
    return "; its bundled runs " + "/".join(f"{t:.3f}" for t in times) + " min"


def caveats_by_scale(checks: pl.DataFrame, system: str | None = None) -> pl.DataFrame:
    """The failed checks of each row joined into one caveat sentence per (system, benchmark, scale).

    Args:
        checks: :func:`consistency_checks` output.
        system: keep one system's rows only.

    Returns:
        polars frame: system, benchmark (String), n_nodes (Int64), n_failed (Int64), caveat
        (String: the ``detail`` of every inconsistent check joined with "; ", "" when none).
    """
    c = checks if system is None else checks.filter(pl.col("system") == system)
    return (
        c.group_by("system", "benchmark", "n_nodes", maintain_order=True)
        .agg(
            (pl.col("verdict") == "inconsistent").sum().cast(pl.Int64).alias("n_failed"),
            pl.col("detail").filter(pl.col("verdict") == "inconsistent").str.join("; "),
        )
        .rename({"detail": "caveat"})
        .with_columns(pl.col("caveat").fill_null(""))
    )


CANDIDATES_SCHEMA: dict[str, pl.DataType] = {
    "definition": pl.String,
    "n_nodes": pl.Int64,
    "evaluated_value": pl.Float64,
    "reference_value": pl.Float64,
    "unit": pl.String,
    "reference_label": pl.String,
    "ratio": pl.Float64,
    "diff_from_quoted": pl.Float64,
    "near_quoted": pl.Boolean,
    "quoted": pl.Float64,
}
"""Columns of :func:`ratio_candidates`."""


def _reference_run(ref_row: dict, runs: pl.DataFrame | None) -> dict | None:
    """The scored run (median time to train) of the bundled logs the reference row cites."""
    need = {"result_file", "time_to_train_min", "tokens_per_s_per_gpu_step"}
    if runs is None or not need <= set(runs.columns):
        return None
    m = re.search(r"/results/([^/\s]+)/([^/\s(]+)", ref_row.get("source") or "")
    if not m:
        return None
    folder = f"/results/{m.group(1)}/{m.group(2).strip()}/"
    sub = runs.filter(pl.col("result_file").str.contains(folder, literal=True))
    if "status" in sub.columns:
        sub = sub.filter(pl.col("status") == "success")
    sub = sub.filter(pl.col("tokens_per_s_per_gpu_step").is_not_null()).sort("time_to_train_min")
    if sub.height == 0:
        return None
    return sub.row((sub.height - 1) // 2, named=True)


# Longer than ~120 lines: one row builder per candidate definition, each a few lines, kept side by
# side so that the definitions read as the table they produce.
def ratio_candidates(
    results: pl.DataFrame,
    evaluated: str,
    reference: str = "Eos",
    *,
    quoted: float,
    tolerance: float = 0.02,
    benchmark: str = "gpt3",
    runs: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Every per-GPU ratio of ``evaluated`` to ``reference`` a talk could mean, beside a quoted one.

    For each scale (node count) of the evaluated system's ``benchmark`` rows:

    * ``time to train, measured reference``: ``T_A / T_B`` with B the reference's row at the same
      node count from its newest round that has one.
    * ``time to train, extrapolated reference``: where the reference's newest round has no row
      at that node count, ``T_A / T_B(n')`` with ``T_B(n') = T_B(n)·n/n'`` from that round's
      largest smaller scale (perfect strong scaling; what the SAKURAONE paper did at 96 nodes).
    * ``tokens/s per GPU, step level``: ``tps_B / tps_A``.
    * ``TFLOP/s per GPU, step level``: ``TFLOPS_B / TFLOPS_A`` (= the MFU ratio at one peak).

    For the step-level ratios B is the measured reference at the same node count (newest round);
    when ``runs`` holds that row's bundled logs (its ``source`` names the results folder), B's
    values are those of the scored run (the median time to train) recomputed from the logs,
    otherwise the published row's. A ratio is ``near_quoted`` when ``|ratio − quoted| <=
    tolerance``.

    Args:
        results: published rows (:data:`trainperf.compare.PUBLISHED_SCHEMA`).
        evaluated: the evaluated system's name in ``results``.
        reference: the reference system's name.
        quoted: the ratio quoted, required (no default: it is the caller's data; the demo's, 1.28
            from the SAKURAONE talk at Cloud Operator Days Tokyo 2025, comes from its config's
            ``published.quoted_ratio``).
        tolerance: absolute distance within which a candidate counts as near ``quoted``.
        benchmark: benchmark of the rows.
        runs: optional :func:`trainperf.mlperf.runs_with_throughput` frame of the reference's logs.

    Returns:
        polars frame with :data:`CANDIDATES_SCHEMA`: definition (String), n_nodes (Int64),
        evaluated_value, reference_value (Float64, in ``unit``: min, tokens/s, TFLOP/s), unit
        (String), reference_label (String: round, scale and where B comes from), ratio (Float64,
        cost A / cost B), diff_from_quoted (Float64, ``ratio − quoted``), near_quoted (Boolean),
        quoted (Float64). Sorted by n_nodes, then definition order above; a definition is left
        out at a scale where a value is missing.
    """
    bench = results.filter(pl.col("benchmark") == benchmark)
    ev = bench.filter(pl.col("system") == evaluated).sort("n_nodes")
    ref = bench.filter(pl.col("system") == reference)
    rounds = sorted(set(ref["round"].to_list()), key=_round_key)
    newest = rounds[-1] if rounds else None
    out: list[dict] = []

    def add(defn, nodes, a, b, unit, label, ratio):
        out.append(
            {
                "definition": defn,
                "n_nodes": nodes,
                "evaluated_value": a,
                "reference_value": b,
                "unit": unit,
                "reference_label": label,
                "ratio": ratio,
                "diff_from_quoted": ratio - quoted,
                "near_quoted": abs(ratio - quoted) <= tolerance + 1e-12,
                "quoted": quoted,
            }
        )

    for a in ev.iter_rows(named=True):
        n = a["n_nodes"]
        same = ref.filter(pl.col("n_nodes") == n)
        measured = None
        if same.height:
            measured = max(same.iter_rows(named=True), key=lambda r: _round_key(r["round"]))
            add(
                "time to train, measured reference",
                n,
                a["minutes"],
                measured["minutes"],
                "min",
                f"{reference} {measured['round']} {n} nodes (measured)",
                a["minutes"] / measured["minutes"],
            )
        if newest is not None and measured is not None and measured["round"] == newest:
            pass  # the newest round has this scale: nothing to extrapolate
        elif newest is not None:
            base = ref.filter((pl.col("round") == newest) & (pl.col("n_nodes") < n))
            if base.height:
                b = base.sort("n_nodes").row(-1, named=True)
                t_b = b["minutes"] * b["n_nodes"] / n
                add(
                    "time to train, extrapolated reference",
                    n,
                    a["minutes"],
                    t_b,
                    "min",
                    f"{reference} {newest} {b['n_nodes']} nodes × {b['n_nodes']}/{n} "
                    "(linear extrapolation)",
                    a["minutes"] / t_b,
                )
        if measured is None:
            continue
        run = _reference_run(measured, runs)
        if run is not None:
            ref_tps = run["tokens_per_s_per_gpu_step"]
            ref_tf = run.get("model_tflops_per_gpu_step")
            src = f"{reference} {measured['round']} {n} nodes, scored run recomputed from its log"
        else:
            ref_tps, ref_tf = measured["tokens_per_s_per_gpu"], measured["tflops_per_gpu"]
            src = f"{reference} {measured['round']} {n} nodes, published row"
        if a["tokens_per_s_per_gpu"] and ref_tps:
            add(
                "tokens/s per GPU, step level",
                n,
                a["tokens_per_s_per_gpu"],
                ref_tps,
                "tokens/s",
                src,
                ref_tps / a["tokens_per_s_per_gpu"],
            )
        if a["tflops_per_gpu"] and ref_tf:
            add(
                "TFLOP/s per GPU, step level",
                n,
                a["tflops_per_gpu"],
                ref_tf,
                "TFLOP/s",
                src,
                ref_tf / a["tflops_per_gpu"],
            )
    return pl.DataFrame(out, schema=CANDIDATES_SCHEMA)
