"""The evaluated results against the MLPerf record: like for like by default (no pinned reference).

:func:`record_comparison` gives the ``comparison.csv`` rows of :data:`~trainperf.compare.COMPARISON_SCHEMA`
with the reference of :func:`~trainperf.compare.like_for_like.record_reference`, the rank of
:func:`~trainperf.compare.like_for_like.record_rank` and, on interpolated rows, the record's own
leave-one-out interpolation error; :func:`with_record_rank` adds the rank (and ``published_as``) to
rows compared against a pinned reference.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from trainperf.compare.interpolation_error import max_interpolation_error
from trainperf.compare.like_for_like import record_rank, record_reference
from trainperf.compare.schema import COMPARISON_SCHEMA, evaluated_columns
from trainperf.mlperf import find_result_files
from trainperf.record.folders import logs_sha256

__all__ = ["evaluated_shas", "record_comparison", "with_record_rank"]


def evaluated_shas(mlperf: str | Path | None) -> dict[tuple[str, str], str]:
    """``{(system folder, benchmark folder): logs_sha256}`` of the result folders under ``mlperf``
    (:func:`trainperf.record.folders.logs_sha256`: the record's digest of a folder's logs); empty
    when ``mlperf`` is None."""
    if mlperf is None:
        return {}
    folders = {f.parent for f in find_result_files(mlperf)}
    return {(d.parent.name, d.name): logs_sha256(d) for d in sorted(folders) if d.is_dir()}


def _published(record: pl.DataFrame, sha: str | None) -> dict | None:
    """The record's row whose logs have the checksum ``sha`` (None where none has)."""
    if not sha:
        return None
    hit = record.filter(pl.col("logs_sha256") == sha)
    return hit.row(0, named=True) if hit.height else None


def _named(r: dict | None) -> str | None:
    """``round submitter system`` of a record row (None for none)."""
    return None if r is None else f"{r['round']} {r['submitter']} {r['system']}"


def _sha(a: dict, shas: dict) -> str | None:
    return shas.get((a["result"], a["benchmark"])) if a["source"] == "logs" else None


def record_comparison(
    evaluated: pl.DataFrame,
    accelerator: str | None,
    record: pl.DataFrame,
    shas: dict[tuple[str, str], str] | None = None,
    reference_record: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Each evaluated result against the record, like for like.

    Args:
        evaluated: a side with :data:`~trainperf.compare.SIDE_SCHEMA` (the config's logs and
            published rows).
        accelerator: the evaluated cluster's canonical accelerator (the config's).
        record: :func:`trainperf.record.read_record`.
        shas: :func:`evaluated_shas` of the evaluated logs (a result that is a published one is
            named and left out of its own reference and rank).
        reference_record: results pinned as the reference (a subset of the record): the
            reference is taken from these, whatever their accelerator (measured at the GPU
            count, else interpolated within 4x, else bounds); None: the whole record, like for like.

    Returns:
        :data:`~trainperf.compare.COMPARISON_SCHEMA`, one row per evaluated result, sorted by
        benchmark, GPU count and evaluated result; ``reference_kind`` one of ``measured``,
        ``interpolated``, ``bounds``, ``cross-generation``, ``none``.
    """
    shas = shas or {}
    out = []
    errors: dict[str, float | None] = {}
    for a in evaluated.iter_rows(named=True):
        sha = _sha(a, shas)
        same = _published(record, sha)
        if a["round"] is None and same is not None:
            # logs outside a training_results_vX.Y folder that are a published result: its round
            a = {**a, "round": same["round"]}
        row = evaluated_columns(a)
        row["published_as"] = _named(same)
        n, t = a["n_gpus"], a["time_to_train_min"]
        if reference_record is None:
            row.update(record_reference(a["benchmark"], accelerator, n, t, record, sha))
        else:
            row.update(record_reference(a["benchmark"], None, n, t, reference_record, sha,
                                        any_accelerator=True))  # fmt: skip
        row.update(record_rank(a["benchmark"], a["round"], n, t, record, sha))
        if row["reference_kind"] == "interpolated":
            if a["benchmark"] not in errors:
                errors[a["benchmark"]] = max_interpolation_error(record, a["benchmark"])
            row["reference_interpolation_error"] = errors[a["benchmark"]]
        tps_a, tps_b = a["tokens_per_s_per_gpu"], row.get("reference_tokens_per_s_per_gpu")
        if tps_a and tps_b and a["throughput_basis"] == row.get("reference_throughput_basis"):
            row["throughput_ratio"] = tps_b / tps_a
        out.append(row)
    frame = pl.DataFrame(out, schema=COMPARISON_SCHEMA)
    return frame.sort("benchmark", "n_gpus", "evaluated_result", nulls_last=True)


def with_record_rank(
    comparison: pl.DataFrame, record: pl.DataFrame, shas: dict | None = None
) -> pl.DataFrame:
    """``comparison`` (against a pinned reference) with ``published_as``, ``record_rank``,
    ``record_peers``, ``record_best`` and ``record_best_gpu_min`` from the record.

    Returns:
        :data:`~trainperf.compare.schema.COMPARISON_SCHEMA`, the rows of ``comparison``."""
    shas = shas or {}
    rows = []
    for r in comparison.iter_rows(named=True):
        a = {"result": r["evaluated_result"], "benchmark": r["benchmark"],
             "source": r["evaluated_source"]}  # fmt: skip
        sha = _sha(a, shas)
        r["published_as"] = _named(_published(record, sha))
        r.update(record_rank(r["benchmark"], r["evaluated_round"], r["n_gpus"],
                             r["evaluated_min"], record, sha))  # fmt: skip
        rows.append(r)
    return pl.DataFrame(rows, schema=COMPARISON_SCHEMA)
