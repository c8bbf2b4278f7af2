"""How well log-log interpolation between measured scales predicts a measured time: leave one out.

On the record's own scaling series (one system family: round, submitter, accelerator, benchmark;
the best score at each GPU count), each inner point is predicted from its two neighbours on the
power law through them (:func:`~trainperf.compare.ratios.interpolate_power_law`) and compared with
its measured score. The error of an interpolated reference is of that size; the book prints it
beside every interpolated row.
"""

from __future__ import annotations

import polars as pl

from trainperf.compare.like_for_like import MAX_GAP, accelerator_key
from trainperf.compare.ratios import interpolate_power_law

__all__ = ["LOO_SCHEMA", "leave_one_out", "max_interpolation_error"]

LOO_SCHEMA = {
    "round": pl.String,
    "submitter": pl.String,
    "accelerator": pl.String,
    "benchmark": pl.String,
    "n_gpus": pl.Int64,
    "low_n_gpus": pl.Int64,
    "high_n_gpus": pl.Int64,
    "gap": pl.Float64,
    "measured_min": pl.Float64,
    "interpolated_min": pl.Float64,
    "error": pl.Float64,
}
"""Columns of :func:`leave_one_out`: the family (round, submitter, accelerator, benchmark), the
point left out (``n_gpus``) and its neighbours, ``gap`` (``high_n_gpus / low_n_gpus``),
``measured_min`` and ``interpolated_min`` (minutes), ``error`` (fraction,
``interpolated / measured - 1``: above 0 the interpolation overestimates the time)."""


def leave_one_out(record: pl.DataFrame, max_gap: float | None = None) -> pl.DataFrame:
    """Leave-one-out interpolation errors on every scaling series of the record.

    Args:
        record: :func:`trainperf.record.read_record`.
        max_gap: only neighbours at most this far apart (``high/low`` GPUs); None: every inner point.

    Returns:
        :data:`LOO_SCHEMA`, one row per inner point of a series of three or more GPU counts.
    """
    scored = record.filter(pl.col("score_min").is_not_null() & pl.col("n_gpus").is_not_null())
    series: dict[tuple, dict[int, float]] = {}
    for r in scored.iter_rows(named=True):
        acc = accelerator_key(r["accelerator"], r["accelerator_model_name"])
        key = (r["round"], r["submitter"], acc, r["benchmark"])
        pts = series.setdefault(key, {})
        n = r["n_gpus"]
        pts[n] = min(pts.get(n, float("inf")), r["score_min"])
    rows = []
    for (round_, sub, acc, bench), pts in sorted(series.items(), key=lambda kv: str(kv[0])):
        ns = sorted(pts)
        for lo, n, hi in zip(ns, ns[1:], ns[2:], strict=False):
            if max_gap is not None and hi / lo > max_gap:
                continue
            t = interpolate_power_law(n, lo, pts[lo], hi, pts[hi])
            rows.append({"round": round_, "submitter": sub, "accelerator": acc, "benchmark": bench,
                         "n_gpus": n, "low_n_gpus": lo, "high_n_gpus": hi, "gap": hi / lo,
                         "measured_min": pts[n], "interpolated_min": t,
                         "error": t / pts[n] - 1})  # fmt: skip
    return pl.DataFrame(rows, schema=LOO_SCHEMA)


def max_interpolation_error(record: pl.DataFrame, benchmark: str) -> float | None:
    """The largest ``|error|`` of :func:`leave_one_out` for ``benchmark`` with gaps of at most
    :data:`~trainperf.compare.like_for_like.MAX_GAP` (those the comparison interpolates across);
    None when the record has no such series."""
    loo = leave_one_out(record, MAX_GAP).filter(pl.col("benchmark") == benchmark)
    return float(loo["error"].abs().max()) if loo.height else None
