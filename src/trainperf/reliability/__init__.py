"""Cluster reliability from Slurm accounting and DCGM telemetry: failures, MTTF and goodput.

Frames in, frames out (nothing here reads files except :func:`read_node_events`, the reader of
``sacctmgr show event`` exports):

* :mod:`~trainperf.reliability.taxonomy`: the failure class of every job and step
  (:func:`classify`, rules in ``trainperf/tables/failure_taxonomy.csv`` with their sources);
* :mod:`~trainperf.reliability.rates`: job failure rate by size in GPUs, infrastructure failures
  per 1,000 GPU-days and node-days with exact intervals, MTTF per node and its projection to jobs
  of N nodes (``MTTF_job = MTTF_node / N``) against the measured MTTF of each size;
* :mod:`~trainperf.reliability.goodput`: ETTR of long runs and its expected value from failure
  rate, checkpoint interval and restart overhead (Kokolis et al., HPCA 2025);
* :mod:`~trainperf.reliability.events` and :mod:`~trainperf.reliability.join`: XID, ECC,
  row-remap and throttle events from DCGM, matched to jobs, per node.

The damage cases (a final job without End, a negative elapsed time, an event on a node running
no job) give quality rows (:data:`trainperf.quality.QUALITY_SCHEMA`) and a
:class:`ReliabilityWarning`, never a number.
"""

from trainperf.reliability.events import (
    GPU_EVENT_KIND_NAMES,
    GPU_EVENT_SCHEMA,
    NODE_EVENT_SCHEMA,
    ReliabilityWarning,
    clock_event_reasons,
    gpu_event_rows,
    gpu_events,
    node_events_frame,
    read_node_events,
    xid_catalogue,
)
from trainperf.reliability.goodput import (
    DEFAULT_CHECKPOINT_INTERVAL_H,
    DEFAULT_CHECKPOINT_WRITE_H,
    DEFAULT_RESTART_OVERHEAD_H,
    ETTR_CURVE_SCHEMA,
    ettr_curve,
    expected_ettr,
    measured_ettr,
    training_runs,
    young_interval,
)
from trainperf.reliability.join import event_quality, events_per_node, events_vs_jobs
from trainperf.reliability.rates import (
    GPU_SIZE_BINS,
    INFRA_FAILURE_RATE_SCHEMA,
    PROJECTED_MTTF_SCHEMA,
    clopper_pearson,
    failure_rate_by_size,
    garwood_interval,
    infra_failure_rate,
    job_sizes,
    mttf_by_size,
    projected_mttf,
)
from trainperf.reliability.taxonomy import (
    FAILURE_CLASS_DTYPE,
    FAILURE_CLASS_NAMES,
    FAILURE_CLASSES,
    RULES,
    classification_quality,
    classify,
    taxonomy_rules,
)

__all__ = [
    "ETTR_CURVE_SCHEMA",
    "INFRA_FAILURE_RATE_SCHEMA",
    "PROJECTED_MTTF_SCHEMA",
    "DEFAULT_CHECKPOINT_INTERVAL_H",
    "DEFAULT_CHECKPOINT_WRITE_H",
    "DEFAULT_RESTART_OVERHEAD_H",
    "FAILURE_CLASSES",
    "FAILURE_CLASS_NAMES",
    "FAILURE_CLASS_DTYPE",
    "GPU_EVENT_KIND_NAMES",
    "GPU_EVENT_SCHEMA",
    "GPU_SIZE_BINS",
    "NODE_EVENT_SCHEMA",
    "RULES",
    "ReliabilityWarning",
    "classification_quality",
    "classify",
    "clock_event_reasons",
    "clopper_pearson",
    "ettr_curve",
    "event_quality",
    "events_per_node",
    "events_vs_jobs",
    "expected_ettr",
    "failure_rate_by_size",
    "garwood_interval",
    "gpu_event_rows",
    "gpu_events",
    "infra_failure_rate",
    "job_sizes",
    "measured_ettr",
    "mttf_by_size",
    "node_events_frame",
    "projected_mttf",
    "read_node_events",
    "taxonomy_rules",
    "training_runs",
    "xid_catalogue",
    "young_interval",
]
