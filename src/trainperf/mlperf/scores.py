"""MLPerf Training scores of the runs: the olympic mean, as mlperf-logging's result summarizer computes it."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl

from trainperf.mlperf.rules import olympic_average, required_runs, scaling_factor
from trainperf.quality import QualityLog

__all__ = ["SCORE_SCHEMA", "score_runs"]

SCORE_SCHEMA = {
    "round": pl.String,
    "submitter": pl.String,
    "system": pl.String,
    "benchmark": pl.String,
    "n_accelerators": pl.Int64,
    "n_runs": pl.Int64,
    "n_valid_runs": pl.Int64,
    "n_required_runs": pl.Int64,
    "scaling_factor": pl.Float64,
    "score_min": pl.Float64,
    "note": pl.String,
}
"""Columns of a scores frame (see :func:`score_runs`)."""


def _notes_for_quality(sub: pl.DataFrame) -> list[str]:
    notes = []
    damaged = sub.filter(pl.col("status") == "damaged").height
    if damaged:
        notes.append(
            f"{damaged} run{'s' if damaged > 1 else ''} damaged, counted as failed (see the quality table)"
        )
    if "quality" in sub.columns:
        fixed = sub.filter(
            (pl.col("status") == "success")
            & pl.col("quality").str.contains("time_out_of|duplicate_time")
        ).height
        if fixed:
            notes.append(
                f"{fixed} run{'s' if fixed > 1 else ''} timed from the agreeing duplicates (see the quality table)"
            )
    return notes


def _distinct_runs(sub: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """The runs of a group without the byte copies of another result file (status ``duplicate``,
    :mod:`trainperf.mlperf.timeline`), and how many copies there were."""
    keep = sub.filter(pl.col("status") != "duplicate")
    return keep, sub.height - keep.height


def score_runs(runs: pl.DataFrame, log: QualityLog | None = None) -> pl.DataFrame:
    """Score each (round, submitter, system, benchmark) as the MLPerf Training rules do.

    Rule (MLPerf Training rules, "Benchmark Results", mlcommons/training_policies training_rules.adoc;
    implemented by mlperf-logging's result summarizer, whose ``_compute_olympic_average`` is called
    here, :func:`~trainperf.mlperf.rules.olympic_average`): sort the successful runs' times, drop the
    fastest and the slowest and average the rest (3 gpt3 runs give the median, 10 llama2_70b_lora
    runs the mean of the middle 8). A run that did not succeed (aborted, incomplete, relaunched,
    damaged, parse_error) counts as the dropped slowest one; more failed runs than may be dropped
    (1; 4 for unet3d) gives no score. A result file that is a byte copy of another (status
    ``duplicate``) is not a run: ``n_runs`` and the runs the rules require count distinct runs. The
    ``scaling.json`` factor of a results folder, when present,
    multiplies the score; an unreadable one, or a factor outside
    :data:`~trainperf.mlperf.rules.SCALING_RANGE`, gives no score, a ``bad_scaling`` row
    (``excluded``) and a warning naming the file; a score that is not finite is no score either.

    Args:
        runs: the ``runs`` frame of :func:`~trainperf.mlperf.loader.load_results`.
        log: the load's quality log (an :class:`~trainperf.mlperf.checks.MLPerfLogWarning` log):
            ``bad_scaling`` rows go here; without one they are only in the note.

    Returns:
        :data:`SCORE_SCHEMA`, one row per group: round, submitter, system, benchmark (String), n_accelerators
        (Int64), n_runs, n_valid_runs (successful), n_required_runs (Int64, from mlperf-logging's
        benchmark_meta; null when unknown), scaling_factor (Float64; null when ``scaling.json`` is
        unreadable), score_min (Float64, minutes, null when no score), note (String: why there is
        no score, or what is unusual, e.g. damaged runs or times taken from agreeing duplicates).
    """
    keys = ["round", "submitter", "system", "benchmark"]
    required = required_runs()
    out = []
    for group, sub_all in runs.group_by(keys, maintain_order=True):
        rec = dict(zip(keys, group, strict=True))
        sub, n_copies = _distinct_runs(sub_all)
        ok = sub.filter((pl.col("status") == "success") & pl.col("time_to_train_min").is_not_null())
        dropped = sub.height - ok.height
        max_dropped = 4 if rec["benchmark"] == "unet3d" else 1
        req = required.get(rec["benchmark"])
        notes = []
        score = None
        try:
            factor = scaling_factor(Path(sub["result_file"][0]).parent)
        except ValueError as exc:
            factor = None
            notes.append(f"{exc}: no score")
            if log is not None:
                where = str(exc).split(": ", 1)
                log.add(
                    where[0], "bad_scaling", "excluded", f"{where[-1]}: no score for this benchmark"
                )
        if dropped > max_dropped:
            notes.append(
                f"{dropped} runs did not succeed (at most {max_dropped} may be dropped): no score"
            )
        elif factor is not None:
            avg = olympic_average(ok["time_to_train_min"].to_list(), dropped, max_dropped)
            if avg is None:
                notes.append("too few successful runs for an olympic mean")
            else:
                score = avg * factor
                if not math.isfinite(score):
                    score = None
                    notes.append(f"score {avg:g} x {factor:g} is not a finite number: no score")
                if dropped:
                    notes.append(f"{dropped} failed run counted as the dropped slowest")
        if req is not None and sub.height < req:
            notes.append(f"only {sub.height} of the {req} runs the rules require")
        if factor is not None and factor != 1.0:
            notes.append(f"scaled by scaling.json factor {factor}")
        notes += _notes_for_quality(sub)
        if n_copies:
            notes.append(
                f"{n_copies} result file{'s are byte copies' if n_copies > 1 else ' is a byte copy'} "
                "of another, not counted as runs"
            )
        n_acc = sub["n_accelerators"].drop_nulls()
        out.append(
            {
                **rec,
                "n_accelerators": n_acc[0] if n_acc.len() else None,  # of the distinct runs
                "n_runs": sub.height,
                "n_valid_runs": ok.height,
                "n_required_runs": req,
                "scaling_factor": factor,
                "score_min": score,
                "note": "; ".join(notes),
            }
        )
    return pl.DataFrame(out, schema=SCORE_SCHEMA)
