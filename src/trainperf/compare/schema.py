"""The columns of a comparison's two sides and of ``comparison.csv`` (:mod:`trainperf.compare`)."""

from __future__ import annotations

import polars as pl

__all__ = ["COMPARISON_SCHEMA", "SIDE_SCHEMA", "evaluated_columns"]

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
    "software": pl.String,
    "throughput_basis": pl.String,
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
has no time to train, e.g. ``no valid score: 3 of 3 runs failed or damaged``, or a score from fewer
runs than logged, ``1 of 3 runs failed or damaged, counted as the dropped slowest ...``; where the
precision came from; null if nothing to say), ``software`` (String, the ``framework`` of the result's system
description, e.g. ``NVIDIA NeMo Framework Release 24.09``; null if none), ``throughput_basis``
(String, ``step`` when tokens/s, TFLOP/s and MFU are step-level, ``e2e`` when they are end to end,
tokens to converge over the time to train, evaluations included: Llama 2 70B LoRA and Llama 3.1
405B logs have no step timing)."""

COMPARISON_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.String,
    "n_nodes": pl.Int64,
    "n_gpus": pl.Int64,
    "evaluated_system": pl.String,
    "evaluated_result": pl.String,
    "evaluated_source": pl.String,
    "evaluated_round": pl.String,
    "evaluated_software": pl.String,
    "evaluated_min": pl.Float64,
    "evaluated_runs": pl.Int64,
    "evaluated_tokens_per_s_per_gpu": pl.Float64,
    "evaluated_model_tflops_per_gpu": pl.Float64,
    "evaluated_throughput_basis": pl.String,
    "evaluated_precision": pl.String,
    "evaluated_mfu": pl.Float64,
    "evaluated_mfu_bf16": pl.Float64,
    "evaluated_mfu_fp8": pl.Float64,
    "reference_system": pl.String,
    "reference_result": pl.String,
    "reference_round": pl.String,
    "reference_software": pl.String,
    "reference_round_note": pl.String,
    "reference_n_gpus": pl.Int64,
    "reference_n_nodes": pl.Int64,
    "reference_min": pl.Float64,
    "reference_kind": pl.String,
    "reference_low_n_gpus": pl.Int64,
    "reference_low_min": pl.Float64,
    "reference_high_n_gpus": pl.Int64,
    "reference_high_min": pl.Float64,
    "reference_tokens_per_s_per_gpu": pl.Float64,
    "reference_throughput_basis": pl.String,
    "reference_precision": pl.String,
    "reference_mfu": pl.Float64,
    "ratio": pl.Float64,
    "ratio_low": pl.Float64,
    "ratio_high": pl.Float64,
    "time_ratio": pl.Float64,
    "throughput_ratio": pl.Float64,
    "reference_other_round": pl.String,
    "reference_other_round_min": pl.Float64,
    "ratio_other_round": pl.Float64,
    "note": pl.String,
    "reference_accelerator": pl.String,
    "reference_submitter": pl.String,
    "reference_interpolation_error": pl.Float64,
    "published_as": pl.String,
    "record_rank": pl.Int64,
    "record_peers": pl.Int64,
    "record_best": pl.String,
    "record_best_gpu_min": pl.Float64,
    "evaluated_system_json": pl.String,
    "evaluated_host_processors": pl.String,
    "evaluated_host_networking": pl.String,
    "evaluated_accelerator_interconnect": pl.String,
    "evaluated_scaleup_domain": pl.Int64,
    "reference_host_networking": pl.String,
    "reference_accelerator_interconnect": pl.String,
}
"""Columns of :func:`log_comparison` (``comparison.csv``), one row per evaluated result.

* ``evaluated_*``: the evaluated side as in :data:`SIDE_SCHEMA` (``n_nodes``, ``n_gpus`` its own).
* ``reference_round`` (the round compared against: the evaluated result's own where the reference
  has the benchmark in it), ``reference_round_note`` (String, why another round, e.g. ``no result
  of the reference in v5.0; nearest round v4.1``; null when the same), ``reference_software``.
* ``reference_n_gpus`` (Int64, always equal to ``n_gpus``: the comparison is at equal GPU count),
  ``reference_min`` (Float64, minutes: the reference's time to train at ``reference_n_gpus``),
  ``reference_kind`` (``measured``; ``interpolated``: power law ``T = a·n^b`` through the two
  measured scales that bracket ``n_gpus``; ``extrapolated``: linearly, perfect strong scaling,
  from the nearest measured scale, beyond the largest or below the smallest; ``none``: the
  reference has no result of this benchmark), ``reference_n_nodes`` (its nodes, measured only).
* ``reference_low_n_gpus``/``reference_low_min`` and ``reference_high_n_gpus``/``reference_high_min``:
  the measured scales below and above (both the measured one itself when measured; one of them
  when extrapolated).
* ``reference_tokens_per_s_per_gpu``, ``reference_throughput_basis``, ``reference_mfu``: of a
  measured reference only; ``reference_precision`` its datatype.
* ``ratio`` (Float64): the per-GPU GPU-time ratio ``(n·T)_A / (n·T)_B`` with both sides at
  ``n_gpus`` GPUs, which is also the time ratio ``T_A / T_B``; above 1 the evaluated system needs
  more GPU time. ``ratio_low``/``ratio_high`` (Float64): the bounds the measured neighbours give,
  ``(n·T)_A`` over each neighbour's own measured GPU time (interpolated: both; extrapolated beyond
  the largest scale: ``ratio_high`` = ``ratio``, an upper bound, as no run scales better than
  perfectly; below the smallest: ``ratio_low`` = ``ratio``; measured: both equal ``ratio``).
* ``time_ratio`` (Float64): the raw ``T_A / reference_min`` (equal to ``ratio`` here, as the GPU
  counts are equal; kept so that a reader need not take that on trust).
* ``throughput_ratio`` (Float64): ``tps_B / tps_A`` against a measured reference on the same basis.
* ``reference_other_round``, ``reference_other_round_min``, ``ratio_other_round``: where the row's
  reference is an estimate (interpolated or extrapolated) but the reference measured exactly
  ``n_gpus`` in another round (e.g. GPT-3 at 10,752 GPUs: Eos v3.1 extrapolated from 768, measured
  in v4.0), that round (the nearest to the compared one), its time (minutes) and the ratio against
  it; null otherwise. Not the comparison (the round rule decides that): a reader's check of it.
* ``note`` (String): the evaluated side's note (why no score, runs that failed or were damaged,
  where the precision came from).
* From the MLPerf record (:mod:`trainperf.compare.like_for_like`, when no reference is pinned;
  null otherwise): ``reference_accelerator`` (String, the reference's canonical accelerator),
  ``reference_submitter`` (String), ``reference_kind`` then also ``bounds`` (no point estimate:
  the measured neighbours are more than 4x apart or on one side only; ``ratio`` null, the bounds
  given) or ``cross-generation`` (no result of the same accelerator: the nearest accelerator
  generation's, measured at the same GPU count); ``reference_interpolation_error`` (Float64,
  fraction: the largest leave-one-out error of log-log interpolation on the record's own scaling
  series of this benchmark, gaps of at most 4x, :func:`trainperf.compare.interpolation_error.leave_one_out`;
  on interpolated rows only); ``published_as`` (String, ``round submitter system`` of the record's
  result with the same log bytes, excluded from its own reference; null when none);
  ``record_rank``, ``record_peers`` (Int64: the evaluated result's rank by GPU-minutes among the
  record's results of the same benchmark and round whose GPU count N satisfies n/2 <= N <= 2n,
  itself counted once: rank 2 of 10), ``record_best`` (String, the best of that band:
  ``submitter system (N GPUs)``) and ``record_best_gpu_min`` (Float64, its GPU-minutes).
* ``evaluated_system_json`` ... ``evaluated_scaleup_domain``: the evaluated result's own
  ``systems/<result>.json`` (its path; ``host_processors_per_node`` x
  ``host_processor_model_name``; ``host_networking`` and its topology;
  ``accelerator_interconnect``; the GPUs of one NVLink/xGMI domain from the accelerator table),
  filled by :func:`cluster_comparison` from the evaluated logs' folder; null for published rows
  and where the file does not say.
* ``reference_host_networking``, ``reference_accelerator_interconnect`` (String): the same two of
  the reference result's system description, beside the evaluated side's: from the record's
  ``host_interconnect`` and ``accelerator_interconnect`` (like for like), else from the
  ``systems/<result>.json`` in the reference's folder of logs; null where it does not say."""


def evaluated_columns(a: dict) -> dict:
    """A :data:`COMPARISON_SCHEMA` row (every other column null, ``reference_kind`` ``none``) with
    the ``evaluated_*`` columns of one :data:`SIDE_SCHEMA` row ``a``."""
    row = dict.fromkeys(COMPARISON_SCHEMA)
    row.update(
        {
            "benchmark": a["benchmark"],
            "n_nodes": a["n_nodes"],
            "n_gpus": a["n_gpus"],
            **{
                f"evaluated_{k}": a[k]
                for k in (
                    "system", "result", "source", "round", "software", "precision", "mfu",
                    "throughput_basis",
                )
            },
            "evaluated_min": a["time_to_train_min"],
            "evaluated_runs": a["n_runs"],
            "evaluated_tokens_per_s_per_gpu": a["tokens_per_s_per_gpu"],
            "evaluated_model_tflops_per_gpu": a["model_tflops_per_gpu"],
            "evaluated_mfu_bf16": a["mfu_bf16"],
            "evaluated_mfu_fp8": a["mfu_fp8"],
            "note": a.get("note"),
            "reference_kind": "none",
        }
    )  # fmt: skip
    return row
