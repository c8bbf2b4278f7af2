"""Achieved FLOP/s from tensor activity, the MFU cross-check against the log, and the all-reduce check."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from trainperf import dcgm, flops, mlperf
from trainperf.dcgm import DcgmWarning
from trainperf.dcgm.checks import value_bounds
from trainperf.telemetry._common import ACTIVITY_FIELDS, collect
from trainperf.telemetry.activity import phase_stats
from trainperf.telemetry.phases import phases_from_log, with_phases


def _ratio_in_range(data: pl.DataFrame | pl.LazyFrame, fid: int) -> pl.LazyFrame:
    """``data`` without the samples of field ``fid`` outside its range (warns with their count)."""

    lo, hi = value_bounds(fid)
    lf = data.lazy() if isinstance(data, pl.DataFrame) else data
    if lo is None and hi is None:
        return lf
    v = pl.col("value")
    bad = (pl.col("field_id") == fid) & ((v < lo) | (v > hi)).fill_null(False)
    n = lf.select(bad.sum()).pipe(collect).item()
    if n:
        warnings.warn(
            DcgmWarning(
                f"{n} {dcgm.FIELDS[fid].name} values outside {lo:g}..{hi:g} left out of the "
                "FLOP/s estimate (not physical; seen on MIG instances)",
                None,
                None,
                "out_of_range",
            ),
            stacklevel=3,
        )
        lf = lf.filter(~bad)
    return lf


def tflops_from_tensor_active(
    tensor_active: float, accelerator: str = "H100 SXM", precision: str = "fp8"
) -> float:
    """Achieved TFLOP/s estimated as tensor-pipe activity x the dense tensor peak.

    ``DCGM_FI_PROF_PIPE_TENSOR_ACTIVE`` is the fraction of cycles in which *any* tensor pipe is
    active; it does not tell the datatype (no FP8 field in ``NVIDIA/DCGM:dcgmlib/dcgm_fields.h``, DCGM 4.6.0) nor whether
    the pipe ran at full rate, so the product is an upper-bound style estimate labelled with the
    precision of the peak used (:func:`trainperf.flops.peak_flops`, dense, no sparsity).

    Returns:
        TFLOP/s per GPU, e.g. 0.45 x 1978.9 = 890.505 for H100 SXM FP8.

    Raises:
        ValueError: unknown accelerator/precision (from ``peak_flops``) or a ratio outside 0-1.
    """

    if not 0.0 <= tensor_active <= 1.0:
        raise ValueError(f"tensor_active is a ratio 0-1, got {tensor_active}")
    return tensor_active * flops.peak_flops(accelerator, precision) / flops.TFLOP


ACHIEVED_TFLOPS_SCHEMA: dict[str, pl.DataType] = {
    "kind": pl.String,
    "tensor_active_mean": pl.Float64,
    "n": pl.UInt32,
    "precision": pl.String,
    "peak_tflops": pl.Float64,
    "achieved_tflops": pl.Float64,
}
"""Columns of :func:`achieved_tflops`."""


def achieved_tflops(
    data: pl.DataFrame | pl.LazyFrame,
    phases: pl.DataFrame,
    accelerator: str = "H100 SXM",
    *,
    kinds: Sequence[str] = ("train", "eval", "init"),
    precisions: Sequence[str] = ("bf16", "fp8"),
) -> pl.DataFrame:
    """Achieved TFLOP/s per GPU from tensor activity, per phase kind, against each dense peak.

    Tensor-activity values outside the ratio range 0-1 (``trainperf/tables/dcgm_ranges.csv``; the
    readers already exclude them, a hand-made frame may not) are left out with a
    :class:`~trainperf.dcgm.DcgmWarning`, so the estimate never exceeds the dense peak.

    Returns:
        kind (String), tensor_active_mean (Float64, ratio, mean over all samples of all GPUs in
        phases of that kind), n (UInt32), precision (String), peak_tflops (Float64, dense peak,
        TFLOP/s), achieved_tflops (Float64, TFLOP/s per GPU = mean x peak). No row for a kind
        without tensor-activity samples. :data:`ACHIEVED_TFLOPS_SCHEMA`.
    """

    data = _ratio_in_range(data, ACTIVITY_FIELDS["tensor_active"][0])
    st = phase_stats(
        data, phases, level="kind", fields={"tensor_active": ACTIVITY_FIELDS["tensor_active"]}
    ).filter(pl.col("kind").is_in(list(kinds)))
    rows = []
    for kind, mean, n in st.select("kind", "mean", "n").iter_rows():
        for p in precisions:
            peak = flops.peak_flops(accelerator, p) / flops.TFLOP
            rows.append(
                {
                    "kind": kind,
                    "tensor_active_mean": mean,
                    "n": n,
                    "precision": p,
                    "peak_tflops": peak,
                    "achieved_tflops": mean * peak,
                }
            )
    return pl.DataFrame(rows, schema=ACHIEVED_TFLOPS_SCHEMA, orient="row")


TFLOPS_COMPARISON_SCHEMA: dict[str, pl.DataType] = {
    "source": pl.String,
    "quantity": pl.String,
    "precision": pl.String,
    "tflops_per_gpu": pl.Float64,
    "fraction_of_peak": pl.Float64,
}
"""Columns of :func:`tflops_comparison`."""


def tflops_comparison(
    achieved: pl.DataFrame, results: Any, *, synthetic: bool = False
) -> pl.DataFrame:
    """Telemetry TFLOP/s estimate beside the model TFLOP/s computed from the MLPerf log.

    Args:
        achieved: :func:`achieved_tflops` (its ``train`` rows are used).
        results: :class:`trainperf.mlperf.Results` of the run (or a result-file path), for
            :func:`trainperf.mlperf.throughput` (step level: median step time; end to end: tokens to
            converge / time to train, evaluations included).
        synthetic: mark the telemetry rows' source as synthetic.

    Returns:
        source (String), quantity (String), precision (String or null), tflops_per_gpu
        (Float64, TFLOP/s per GPU), fraction_of_peak (Float64: tensor activity or MFU against
        the dense peak of ``precision``; null where no peak applies):
        :data:`TFLOPS_COMPARISON_SCHEMA`.
    """

    if isinstance(results, (str, Path)):
        results = mlperf.load_results(results)
    src = "telemetry (synthetic)" if synthetic else "telemetry"
    rows = []
    for r in achieved.filter(pl.col("kind") == "train").iter_rows(named=True):
        rows.append(
            {
                "source": src,
                "quantity": "tensor active x dense peak, training blocks",
                "precision": r["precision"],
                "tflops_per_gpu": r["achieved_tflops"],
                "fraction_of_peak": r["tensor_active_mean"],
            }
        )
    thr = mlperf.throughput(results)
    for r in thr.iter_rows(named=True):
        for kind, label in (("step", "median step time"), ("e2e", "end to end")):
            t = r[f"model_tflops_per_gpu_{kind}"]
            if t is None:
                continue
            for p in ("bf16", "fp8"):
                rows.append(
                    {
                        "source": "MLPerf log",
                        "quantity": f"model FLOPs, {label}",
                        "precision": p,
                        "tflops_per_gpu": t,
                        "fraction_of_peak": r[f"mfu_{p}_dense_{kind}"],
                    }
                )
    return pl.DataFrame(rows, schema=TFLOPS_COMPARISON_SCHEMA, orient="row")


def logged_flops_per_token(results: Any) -> float | None:
    """The model FLOPs per token a run logged itself (MLLOG key ``model_flops_per_token``), or None.

    ``python -m trainperf.capture.smoke`` logs it (Narayanan et al. SC21 eq. 3 for its own model); MLPerf
    reference implementations do not, and :func:`trainperf.mlperf.throughput` uses a model preset.
    """
    ev = results.events.filter(pl.col("key") == "model_flops_per_token")
    return float(ev["value_num"][0]) if ev.height and ev["value_num"][0] is not None else None


def mfu_cross_check(
    data: pl.DataFrame | pl.LazyFrame,
    results: Any,
    accelerator: str | None = None,
    *,
    precision: str = "bf16",
    peak_clock_mhz: float = 1830.0,
) -> pl.DataFrame:
    """MFU from model FLOPs (the log) against the tensor-activity estimate (the telemetry), per GPU.

    Model side: tokens per second per GPU = global_batch_size x max_sequence_length / (median step
    time x n GPUs), from the log's ``tracked_stats`` step times; times the model FLOPs per token the
    run logged (:func:`logged_flops_per_token`) or, for gpt3, the preset of
    :func:`trainperf.mlperf.throughput`; divided by the dense peak of ``precision``
    (:func:`trainperf.flops.peak_flops`).

    Telemetry side, over the samples inside the training blocks of the log: mean
    ``DCGM_FI_PROF_PIPE_TENSOR_ACTIVE`` (fraction of cycles any tensor pipe is busy) x the same dense
    peak; and that estimate scaled by the mean SM clock over the clock the datasheet peak assumes,
    since the activity ratio counts cycles at the clock the GPU actually ran (a power-capped GPU runs
    below it). For H100/H200 SXM the dense BF16 peak, 989.4 TFLOP/s, is 132 SMs x 4 tensor cores x
    1024 dense BF16 FLOP per clock at 1830 MHz (989.4e12 / (528 x 1024) = 1.830e9 Hz; NVIDIA H100
    Tensor Core GPU Architecture whitepaper, https://resources.nvidia.com/en-us-tensor-core), not at
    the 1980 MHz maximum SM clock that ``nvidia-smi --query-gpu=clocks.max.sm`` reports.

    Args:
        data: DCGM long frame (the capture).
        results: :class:`trainperf.mlperf.Results` of the run (a result-file path is loaded).
        accelerator: GPU model for the peak; None: the log's ``accelerator_model``.
        precision: the datatype the run computed in (``bf16`` for the smoke benchmark).
        peak_clock_mhz: the SM clock the dense peak assumes (MHz; 1830 for H100 and H200 SXM).

    Returns:
        one row per GPU: gpu (Int32), n_samples (UInt32), tensor_active_mean (Float64, 0-1),
        sm_clock_mean_mhz (Float64, MHz), model_tflops_per_gpu (Float64, TFLOP/s), mfu (Float64,
        0-1 against the dense peak of ``precision``), tensor_estimate_tflops (Float64, TFLOP/s),
        tensor_estimate_clock_adjusted_tflops (Float64, TFLOP/s), estimate_over_model (Float64:
        tensor_estimate_tflops / model_tflops_per_gpu), adjusted_over_model (Float64), precision
        (String).

    Raises:
        ValueError: the log has no step times, no FLOPs per token, or the telemetry no tensor
            activity inside the training blocks.
    """

    if isinstance(results, (str, Path)):
        results = mlperf.load_results(results)
    run = results.runs.row(0, named=True)
    steps = mlperf.step_times(results.events)
    if steps.height == 0:
        raise ValueError(f"{run['result_file']}: no tracked_stats step times in the log")
    f_tok = logged_flops_per_token(results)
    if f_tok is None:
        thr = mlperf.throughput(results)
        f_tok = thr["flops_per_token"][0] if thr.height else None
    if f_tok is None:
        raise ValueError(
            f"{run['result_file']}: no model FLOPs per token (not logged, no model preset for {run['benchmark']!r})"
        )
    n = run["n_accelerators"] or 1
    step_s = steps["step_time_s"].median()
    tokens_per_s_per_gpu = run["global_batch_size"] * run["max_sequence_length"] / (step_s * n)
    peak = flops.peak_flops(accelerator or run["accelerator_model"], precision)
    model_tflops = tokens_per_s_per_gpu * f_tok / flops.TFLOP
    phases = phases_from_log(results)
    tensor_id, clock_id = ACTIVITY_FIELDS["tensor_active"][0], ACTIVITY_FIELDS["sm_clock"][0]
    lf = with_phases(_ratio_in_range(data, tensor_id), phases).filter(pl.col("kind") == "train")
    wide = collect(
        lf.filter(pl.col("field_id").is_in([tensor_id, clock_id]))
        .group_by("gpu", "field_id")
        .agg(pl.col("value").mean().alias("mean"), pl.len().alias("n"))
    )
    tensor = wide.filter(pl.col("field_id") == tensor_id)
    if tensor.height == 0:
        raise ValueError(
            "no DCGM_FI_PROF_PIPE_TENSOR_ACTIVE samples inside the training blocks of the log"
        )
    clock = wide.filter(pl.col("field_id") == clock_id).select(
        "gpu", pl.col("mean").alias("sm_clock_mean_mhz")
    )
    out = (
        tensor.select(
            "gpu", pl.col("n").alias("n_samples"), pl.col("mean").alias("tensor_active_mean")
        )
        .join(clock, on="gpu", how="left")
        .with_columns(
            pl.lit(model_tflops).alias("model_tflops_per_gpu"),
            pl.lit(model_tflops * flops.TFLOP / peak).alias("mfu"),
            (pl.col("tensor_active_mean") * peak / flops.TFLOP).alias("tensor_estimate_tflops"),
        )
        .with_columns(
            (pl.col("tensor_estimate_tflops") * pl.col("sm_clock_mean_mhz") / peak_clock_mhz).alias(
                "tensor_estimate_clock_adjusted_tflops"
            )
        )
        .with_columns(
            (pl.col("tensor_estimate_tflops") / pl.col("model_tflops_per_gpu")).alias(
                "estimate_over_model"
            ),
            (
                pl.col("tensor_estimate_clock_adjusted_tflops") / pl.col("model_tflops_per_gpu")
            ).alias("adjusted_over_model"),
            pl.lit(precision).alias("precision"),
        )
        .sort("gpu")
    )
    return out


def allreduce_check(
    data: pl.DataFrame | pl.LazyFrame,
    results: Any,
    *,
    grad_bytes_per_param: int = 4,
) -> pl.DataFrame:
    """NVLink traffic of a data-parallel run against its gradient all-reduce volume, per GPU.

    A ring all-reduce of S bytes over n GPUs sends 2(n-1)/n x S bytes from each GPU (reduce-scatter
    then all-gather; Patarasuk and Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
    workstations", JPDC 2009; NCCL's ring algorithm). With S = parameters x ``grad_bytes_per_param``
    (4: fp32 gradients of a bf16-autocast model, as ``trainperf.capture.smoke`` trains) once per step, the
    expected transmit rate is that volume over the median step time. The parameter count is the one
    the run logged (MLLOG key ``model_param_count``).

    Returns:
        one row per GPU: gpu (Int32), measured_tx_GBps, measured_rx_GBps (Float64, GB/s = 1e9 B/s,
        mean of DCGM_FI_PROF_NVLINK_TX_BYTES / RX_BYTES (B/s gauges) over the training blocks),
        expected_tx_GBps (Float64), measured_over_expected (Float64).

    Raises:
        ValueError: the log has no parameter count or step times, or the run used one GPU.
    """

    if isinstance(results, (str, Path)):
        results = mlperf.load_results(results)
    run = results.runs.row(0, named=True)
    n = run["n_accelerators"] or 1
    if n < 2:
        raise ValueError(f"{run['result_file']}: a one-GPU run has no gradient all-reduce")
    ev = results.events.filter(pl.col("key") == "model_param_count")
    steps = mlperf.step_times(results.events)
    if ev.height == 0 or steps.height == 0:
        raise ValueError(
            f"{run['result_file']}: needs model_param_count and tracked_stats step times in the log"
        )
    params = float(ev["value_num"][0])
    expected = 2 * (n - 1) / n * params * grad_bytes_per_param / steps["step_time_s"].median()
    phases = phases_from_log(results)
    tx, rx = (
        dcgm.field_id("DCGM_FI_PROF_NVLINK_TX_BYTES"),
        dcgm.field_id("DCGM_FI_PROF_NVLINK_RX_BYTES"),
    )
    got = collect(
        with_phases(data, phases)
        .filter((pl.col("kind") == "train") & pl.col("field_id").is_in([tx, rx]))
        .group_by("gpu")
        .agg(
            (pl.col("value").filter(pl.col("field_id") == tx).mean() / 1e9).alias(
                "measured_tx_GBps"
            ),
            (pl.col("value").filter(pl.col("field_id") == rx).mean() / 1e9).alias(
                "measured_rx_GBps"
            ),
        )
    )
    return got.with_columns(
        pl.lit(expected / 1e9).alias("expected_tx_GBps"),
        (pl.col("measured_tx_GBps") / (expected / 1e9)).alias("measured_over_expected"),
    ).sort("gpu")


# --------------------------------------------------------------------------------------
# Network: NIC, PCIe, NVLink
