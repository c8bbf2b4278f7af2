"""DCGM (and NIC) telemetry aligned with the phases of an MLPerf run: analysis only, no plotting.

What this package owns: :mod:`~trainperf.telemetry.phases` (phases from the MLPerf log, samples
attributed to them), :mod:`~trainperf.telemetry.activity` (per-phase statistics, timelines, heatmaps,
job selection, what cannot be computed, data-quality notes of the analysis),
:mod:`~trainperf.telemetry.mfu` (achieved FLOP/s, MFU cross-check, all-reduce check) and
:mod:`~trainperf.telemetry.network` (NIC, PCIe, NVLink per rail; rail imbalance).

Input: a *reader frame* of :mod:`trainperf.dcgm` (schema :data:`trainperf.dcgm.SCHEMA`), eager
(``pl.DataFrame``) or lazy (``pl.LazyFrame``, e.g. :func:`trainperf.dcgm.scan_parquet` of a
partitioned store). Every function builds a lazy query (lazy ``group_by``) and collects only its
small result, so a cluster-day of 10-second samples never has to sit in memory.

Phases come from the MLPerf log (:func:`phases_from_log`): ``init`` (``init_start`` ..
``init_stop``), each training block (``block_start`` .. ``block_stop``, kind ``train``) and each
evaluation (``eval_start`` .. ``eval_stop``, kind ``eval``). A sample belongs to the phase whose
half-open interval ``[start, end)`` holds its timestamp; samples in no phase (before ``init_start``,
in the ~1 ms gaps between phases, after ``run_stop``) belong to none. dcgm-exporter reports the
*latest* DCGM sample at scrape time, not an average (NVIDIA/dcgm-exporter#53), so a sample is a
point in time and is attributed by its timestamp only.

Units follow :data:`trainperf.dcgm.FIELDS`: ``DCGM_FI_PROF_*`` activities are ratios 0-1,
``DCGM_FI_DEV_GPU_UTIL`` percent, power W, SM clock MHz, PCIe/NVLink ``*_BYTES`` B/s (rates).

NIC metric (not a DCGM field; the rail-optimized fabric's NIC *i* of a node serves GPU *i*):
node-exporter counters ``node_network_transmit_bytes_total`` and
``node_network_receive_bytes_total`` (bytes since boot, label ``device``). The reader keeps them
with a null ``field_id`` and ``field`` = the metric name; the device is in ``labels``. NIC
throughput is the reset-aware rate of TX + RX (B/s); the rail of a device is given by
``rail_devices`` (default: the devices of each host in natural sort order are rails 0, 1, ...).

Synthetic data (:mod:`trainperf.synthetic.telemetry`) carry the label ``synthetic="true"`` on every series
(:func:`is_synthetic`); results derived from them must be labelled so.
"""

from __future__ import annotations

import warnings

from trainperf import dcgm as _dcgm
from trainperf.telemetry._common import (
    ACTIVITY_FIELDS,
    BATCH_ROWS,
    METRIC_NAMES,
    NIC_RX,
    NIC_TX,
    PHASE_KIND_NAMES,
    PHASE_SCHEMA,
    SYNTHETIC_LABEL,
    WANTED,
)
from trainperf.telemetry.activity import (
    GPU_STATS_CATEGORICAL,
    activity_timeline,
    gpu_heatmap,
    is_synthetic,
    jobs_in,
    phase_stats,
    quality_notes,
    select_job,
    unavailable,
    write_phase_stats,
)
from trainperf.telemetry.energy import GpuEnergy, gpu_energy, trained_units
from trainperf.telemetry.environment import capture_environment_lines
from trainperf.telemetry.mfu import (
    ACHIEVED_TFLOPS_SCHEMA,
    TFLOPS_COMPARISON_SCHEMA,
    achieved_tflops,
    allreduce_check,
    logged_flops_per_token,
    mfu_cross_check,
    tflops_comparison,
    tflops_from_tensor_active,
)
from trainperf.telemetry.network import (
    imbalance_summary,
    link_throughput,
    nic_throughput,
    node_throughput,
    rail_imbalance,
    rail_summary,
)
from trainperf.telemetry.phases import phases_from_log, shift_phases, with_phases

__all__ = [
    "ACHIEVED_TFLOPS_SCHEMA",
    "ACTIVITY_FIELDS",
    "BATCH_ROWS",
    "METRIC_NAMES",
    "NIC_RX",
    "NIC_TX",
    "PHASE_KIND_NAMES",
    "PHASE_SCHEMA",
    "SYNTHETIC_LABEL",
    "TFLOPS_COMPARISON_SCHEMA",
    "WANTED",
    "achieved_tflops",
    "activity_timeline",
    "allreduce_check",
    "capture_environment_lines",
    "GpuEnergy",
    "gpu_energy",
    "gpu_heatmap",
    "imbalance_summary",
    "is_synthetic",
    "jobs_in",
    "link_throughput",
    "logged_flops_per_token",
    "mfu_cross_check",
    "nic_throughput",
    "node_throughput",
    "phase_stats",
    "GPU_STATS_CATEGORICAL",
    "phases_from_log",
    "quality_notes",
    "rail_imbalance",
    "rail_summary",
    "select_job",
    "shift_phases",
    "tflops_comparison",
    "tflops_from_tensor_active",
    "trained_units",
    "unavailable",
    "with_phases",
    "write_phase_stats",
]


def __getattr__(name: str):
    if name == "dcgm":  # the reader package was once reached through this one
        warnings.warn(
            "trainperf.telemetry.dcgm is deprecated: import trainperf.dcgm",
            DeprecationWarning,
            stacklevel=2,
        )
        return _dcgm
    raise AttributeError(f"module 'trainperf.telemetry' has no attribute {name!r}")
