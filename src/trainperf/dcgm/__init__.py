"""DCGM GPU telemetry readers: what this package owns.

Every reader returns one tidy *long* polars frame, one row per (series, timestamp),
with the schema :data:`SCHEMA`; its ``*_reading`` twin (and :func:`read` / :func:`load`) returns
the normalised :class:`Reading` instead: a series table, the samples (series id, time, value,
line) and the data-quality rows (:data:`trainperf.quality.QUALITY_SCHEMA`) of the checks that fired.

==========  ======================  ==================================================
column      dtype                   meaning
==========  ======================  ==================================================
timestamp   Datetime[us, UTC]       sample time
hostname    String                  node name (``hostname``/``Hostname``/``exported_*``)
gpu         Int32                   DCGM GPU index (``gpu`` label); null for entities
                                    with no known parent GPU (e.g. dmon ``GPU-I`` rows,
                                    NVSwitch series)
uuid        String                  GPU UUID (``UUID``/``uuid`` label); null if absent
entity      String                  ``GPU``, ``GPU-I`` (MIG instance), ``NVLink``,
                                    ``NVSwitch``, ...
entity_id   Int32                   id of the entity: GPU index, ``GPU_I_ID``, link no.,
                                    switch no.
field_id    Int32                   DCGM numeric field id (null for unknown metrics)
field       String                  canonical DCGM name, e.g. DCGM_FI_PROF_PIPE_TENSOR_ACTIVE
value       Float64                 value in the unit :data:`FIELDS` gives for the id
job_id      String                  Slurm job id (``hpc_job``/``jobid``/``slurmjobid``/
                                    ``job_id`` label; several jobs sharing a GPU: their
                                    ids sorted and joined with ``,``); null when absent
labels      String                  JSON object (sorted keys) of all other labels
==========  ======================  ==================================================

Rows come out in input order. Values are never converted between units by the
readers; :func:`with_si_units` adds SI columns and :func:`nvlink_throughput`
reconciles the two NVLink bandwidth fields.

Modules: :mod:`~trainperf.dcgm.fields` (field table, schema, aliases, errors),
:mod:`~trainperf.dcgm.series` (label normalisation, :class:`Reading`),
:mod:`~trainperf.dcgm.checks` (the data checks every reader applies),
:mod:`~trainperf.dcgm.exposition` (Prometheus text, streaming ingest; label/marker syntax in
:mod:`~trainperf.dcgm.text`, the cross-check engine in :mod:`~trainperf.dcgm.promclient`),
:mod:`~trainperf.dcgm.promapi` (Prometheus HTTP API JSON), :mod:`~trainperf.dcgm.dmon`
(``dcgmi dmon``), :mod:`~trainperf.dcgm.csvfiles` (long CSV, Grafana export),
:mod:`~trainperf.dcgm.store` (Parquet store), :mod:`~trainperf.dcgm.derived` (SI units,
counters, coverage, missing metrics, NVLink, XID), :mod:`~trainperf.dcgm.load` (format
detection, many files with isolation).

Cleaning rules applied by every reader (:mod:`trainperf.dcgm.checks` gives the sources):

* DCGM *blank sentinels*, ``N/A``, ``<<<NULL>>>``, ``NaN`` and ``±Inf`` are dropped;
* values outside their unit's physical range (ratio 0–1, percent 0–100, power up to the GPU
  model's limit x 1.2; package table ``dcgm_ranges.csv``) are excluded with a warning;
* one sample per GPU, field and time is kept where several series describe one GPU (two
  exporters, several job/pod labels on a shared GPU);
* profiling fields frozen at a constant while the GPU is busy are excluded;
* jobs are re-attributed where the ``gpu`` label and the ``device`` minor disagree;
* a failed scrape (an error text instead of metrics) inside an archive is excluded, and so is a
  cut-off last line.
* Metric names are keyed on the numeric field id through :data:`ALIASES` (current
  names, DCGM 4.6 renames, dcgm-exporter 1.x lower-case names). Unknown metric names
  are kept with a null ``field_id`` and ``field`` = the name as read.
* Host label: ``hostname``, else ``Hostname`` (dcgm-exporter before commit d5e5f51,
  2026-05-12), else ``exported_hostname``/``exported_Hostname``, else the host part of
  Prometheus' ``instance`` label. If two differ, the loser stays in ``labels``.
* ``exported_X`` (Prometheus renamed the exporter's label ``X`` because the scrape
  target had one too): the exporter's value wins and goes to ``X``; the target's
  value is kept as ``target_X`` in ``labels``.
* PCIe/NVLink ``*_BYTES`` profiling fields are rates (B/s) even where the exporter's
  ``# TYPE`` line says ``counter``: values are kept as read, never differenced
  (:func:`counter_increase` refuses them).

Errors on malformed input are :class:`DcgmFormatError` (an
:class:`trainperf.errors.InputError`, a ``ValueError``) naming the file, the line (or JSON path /
CSV column) and what was expected; handled damage warns with :class:`DcgmWarning`.
"""

from __future__ import annotations

from trainperf.dcgm.csvfiles import (
    read_csv_long,
    read_csv_long_reading,
    read_grafana_csv,
    read_grafana_csv_reading,
)
from trainperf.dcgm.derived import (
    available_metrics,
    counter_increase,
    coverage,
    missing_metrics,
    nvlink_throughput,
    with_si_units,
    xid_events,
)
from trainperf.dcgm.dmon import read_dmon, read_dmon_reading
from trainperf.dcgm.exposition import ingest_exposition, read_exposition, read_exposition_reading
from trainperf.dcgm.fields import (
    ALIASES,
    DMON_SHORT_NAMES,
    FIELDS,
    METRIC_REQUIREMENTS,
    SCHEMA,
    SERIES_KEY,
    DcgmFormatError,
    DcgmWarning,
    FieldInfo,
    field_id,
)
from trainperf.dcgm.load import detect_format, load, read
from trainperf.dcgm.promapi import read_prometheus_api, read_prometheus_api_reading
from trainperf.dcgm.series import Reading
from trainperf.dcgm.store import scan_parquet, store_quality, write_parquet_partitioned

__all__ = [
    "ALIASES",
    "DMON_SHORT_NAMES",
    "FIELDS",
    "METRIC_REQUIREMENTS",
    "SCHEMA",
    "SERIES_KEY",
    "DcgmFormatError",
    "DcgmWarning",
    "FieldInfo",
    "Reading",
    "available_metrics",
    "counter_increase",
    "coverage",
    "detect_format",
    "field_id",
    "ingest_exposition",
    "load",
    "missing_metrics",
    "nvlink_throughput",
    "read",
    "read_csv_long",
    "read_csv_long_reading",
    "read_dmon",
    "read_dmon_reading",
    "read_exposition",
    "read_exposition_reading",
    "read_grafana_csv",
    "read_grafana_csv_reading",
    "read_prometheus_api",
    "read_prometheus_api_reading",
    "scan_parquet",
    "store_quality",
    "with_si_units",
    "write_parquet_partitioned",
    "xid_events",
]
