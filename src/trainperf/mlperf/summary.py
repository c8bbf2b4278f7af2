"""How the book names an MLPerf system and states a set of scores in one sentence."""

from __future__ import annotations

import polars as pl

from trainperf.benchmarks import benchmark_name
from trainperf.markup import md_text

__all__ = ["scores_sentence", "system_label"]


def system_label() -> pl.Expr:
    """``system_label`` (Utf8): ``"<submitter> <system>"`` as MLCommons's results tables name a
    system (``Oracle 1536xBM.GPU.H100.8``), the system alone where the submitter is unknown (a
    flat folder of logs). For a frame with ``submitter`` and ``system`` columns."""
    return (
        pl.when(pl.col("submitter").is_not_null() & (pl.col("submitter") != ""))
        .then(pl.concat_str([pl.col("submitter"), pl.col("system")], separator=" "))
        .otherwise(pl.col("system"))
        .alias("system_label")
    )


def scores_sentence(scores: pl.DataFrame) -> str:
    """The scores of ``scores`` (:attr:`trainperf.mlperf.Results.scores`: ``round``,
    ``submitter``, ``system``, ``benchmark``, ``n_accelerators``, ``n_valid_runs``, ``n_runs``,
    ``score_min``) as one Markdown sentence, the fastest score of each benchmark first:
    ``"GPT-3 175B trained in 19.69 minutes on 1,536 GPUs (Oracle 1536xBM.GPU.H100.8, MLPerf
    v4.1, 3 of 3 runs converged)."`` Scores are minutes (the MLPerf score, olympic mean); a
    system without a score (too few converged runs) is said so. Empty frame: "No MLPerf score
    could be computed from these logs."."""
    if scores.is_empty():
        return "No MLPerf score could be computed from these logs."
    parts = []
    rows = scores.with_columns(system_label()).sort(
        ["benchmark", "score_min", "n_accelerators"], nulls_last=True
    )
    for r in rows.iter_rows(named=True):
        bench = benchmark_name(r["benchmark"]) if r["benchmark"] else "an unknown benchmark"
        gpus = f"{r['n_accelerators']:,} GPUs" if r["n_accelerators"] else "an unknown GPU count"
        where = f"{r['system_label']}, MLPerf {r['round'] or 'round unknown'}"
        runs = f"{r['n_valid_runs']} of {r['n_runs']} runs converged"
        if r["score_min"] is None:
            parts.append(f"{bench} on {gpus} has no score ({where}, {runs})")
        else:
            parts.append(
                f"{bench} trained in {r['score_min']:.2f} minutes on {gpus} ({where}, {runs})"
            )
    return md_text("; ".join(parts) + ".")
