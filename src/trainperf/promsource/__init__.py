"""Telemetry from a Prometheus server: raw series and aggregates computed where the data lives.

Modules: :mod:`~trainperf.promsource._common` (constants, errors, traffic counters),
:mod:`~trainperf.promsource.http` (API calls with retries), :mod:`~trainperf.promsource.fetch`
(host/job/metric selection, raw samples), :mod:`~trainperf.promsource.pushdown` (PromQL statistics)
and :mod:`~trainperf.promsource.source` (:class:`PrometheusSource`, which combines them).

:class:`PrometheusSource` talks to the Prometheus HTTP API
(https://prometheus.io/docs/prometheus/latest/querying/api/) with the standard library only
(:mod:`urllib`, gzip responses, ``POST`` form bodies so long host lists fit):

* :meth:`PrometheusSource.fetch`: the samples of chosen metrics (optionally of chosen hosts or of
  one Slurm job) in a time window via ``/api/v1/query_range``, returned as the reader frame of
  :mod:`trainperf.dcgm` (:data:`trainperf.dcgm.SCHEMA`, parsed by
  :func:`trainperf.dcgm.read_prometheus_api`), so every :mod:`trainperf.telemetry` function runs on
  it as on a file. The step is the series' scrape interval (measured from the raw samples of one
  series) or coarser to fit a point budget; the window is cut into chunks so that no query
  exceeds Prometheus' limit of 11,000 points per series nor ``max_points_per_request`` points in
  all. Each step keeps only a sample scraped within that step (``timestamp(x) > time() - step``),
  so Prometheus' 5-minute look-back never repeats a sample: at the native step the frame holds
  exactly the stored samples, stamped with the step time (equal to the sample time when the
  samples lie on the step grid, otherwise at most one step later).
* Push-down (only results cross the wire), each evaluated with ``/api/v1/query`` at the end of
  the window over the window as a range selector: :meth:`PrometheusSource.window_stats` (per GPU:
  ``count_over_time``, ``avg_over_time``, ``min/max_over_time``, ``quantile_over_time``; per node:
  ``sum by (hostname, Hostname)`` of ``sum_over_time``/``count_over_time`` and the spread over the
  node's GPUs), :meth:`PrometheusSource.phase_stats` (the same per MLPerf phase, shaped like
  :func:`trainperf.telemetry.phase_stats`) and :meth:`PrometheusSource.job_means` (pooled means
  over a job's node list).

Windows are half-open ``[start, end)`` like the phases of :func:`trainperf.telemetry.with_phases`:
Prometheus 2.x range selectors include both ends, so a window is evaluated at ``end - 1 ms`` with a
range of ``end - start - 1 ms`` (sample timestamps are whole milliseconds).

Host selection matches the host label in both spellings (``hostname``; ``Hostname`` before
dcgm-exporter commit d5e5f51, 2026-05-12) and, for non-DCGM series such as node-exporter NIC
counters, the host part of ``instance``; PromQL cannot OR two label matchers in one selector, so
each spelling is a selector of its own joined with ``or``. Job selection (``job_id``) finds the hosts
whose series carry the job in an ``hpc_job``/``jobid``/``slurmjobid``/``job_id``/``slurm_job_id``
label during the window (``/api/v1/label/<name>/values`` with ``match[]``) and then selects every
series of those hosts, as :func:`trainperf.telemetry.select_job` does on files.

Errors: :class:`PrometheusQueryError` (HTTP 4xx: bad query, too many points or samples; the
message names the endpoint, the query and the server's ``errorType``/``error``);
:class:`PrometheusUnavailableError` (5xx, timeouts or refused connections still failing after
``max_attempts`` tries with exponential back-off). Traffic is counted in
:attr:`PrometheusSource.stats` (:class:`TransferStats`).
"""

from trainperf.promsource._common import (
    DEFAULT_FIELDS,
    HOST_LABELS,
    JOB_LABELS,
    MAX_POINTS_PER_SERIES,
    PrometheusError,
    PrometheusQueryError,
    PrometheusUnavailableError,
    TransferStats,
    is_url,
)
from trainperf.promsource.source import PrometheusSource

__all__ = [
    "DEFAULT_FIELDS",
    "HOST_LABELS",
    "JOB_LABELS",
    "MAX_POINTS_PER_SERIES",
    "PrometheusError",
    "PrometheusQueryError",
    "PrometheusSource",
    "PrometheusUnavailableError",
    "TransferStats",
    "is_url",
]
