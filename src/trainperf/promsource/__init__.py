"""Telemetry from a Prometheus server: raw series and aggregates computed where the data lives.

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

from __future__ import annotations

import datetime as _dt
import gzip
import http.client
import json
import math
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import polars as pl

from trainperf import dcgm
from trainperf.errors import TrainperfError

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

MAX_POINTS_PER_SERIES = 11_000
"""Prometheus refuses range queries of more than 11,000 points per series (``query_range``:
"exceeded maximum resolution of 11,000 points per timeseries")."""

HOST_LABELS = ("hostname", "Hostname")
"""Host label spellings of dcgm-exporter (``Hostname`` until 2026-05-12)."""

JOB_LABELS = ("hpc_job", "jobid", "slurmjobid", "job_id", "slurm_job_id")
"""Labels carrying the Slurm job id (dcgm-exporter HPC mapping, jobstats, slurm-job-exporter)."""

DEFAULT_FIELDS: tuple[int | str, ...] = (
    1004,  # tensor active
    1002,  # SM active
    1005,  # DRAM active
    203,  # GPU util
    155,  # power
    100,  # SM clock
    252,  # FB used
    156,  # energy counter
    1009,  # PCIe TX
    1010,  # PCIe RX
    1011,  # NVLink TX
    1012,  # NVLink RX
    449,  # NVLink bandwidth total
    "node_network_transmit_bytes_total",
    "node_network_receive_bytes_total",
)
"""What :mod:`trainperf.telemetry` uses: DCGM field ids and the node-exporter NIC counters."""

_STAT_LABEL = "trainperf_stat"
_US = pl.Datetime("us", "UTC")


def is_url(source: Any) -> bool:
    """True for an ``http://`` or ``https://`` string (a Prometheus server, not a file)."""
    return isinstance(source, str) and source.strip().lower().startswith(("http://", "https://"))


# --------------------------------------------------------------------------------------
# Errors and traffic counters
# --------------------------------------------------------------------------------------


class PrometheusError(TrainperfError, RuntimeError):
    """A Prometheus API call failed.

    Attributes:
        endpoint: API path, e.g. ``/api/v1/query_range``.
        query: the PromQL expression (or the ``match[]`` selector) sent.
        status: HTTP status, or None when no response came (timeout, refused connection).
        error_type: the server's ``errorType`` (``bad_data``, ``execution``, ``timeout``...) or
            the Python exception name.
        message: the server's ``error`` text (or the exception's).
    """

    def __init__(
        self,
        endpoint: str,
        query: str,
        status: int | None,
        error_type: str,
        message: str,
        attempts: int = 1,
    ):
        self.endpoint, self.query, self.status = endpoint, query, status
        self.error_type, self.message, self.attempts = error_type, message, attempts
        what = f"HTTP {status}" if status is not None else "no response"
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        q = query if len(query) <= 2000 else query[:2000] + f"... ({len(query)} chars)"
        super().__init__(
            f"Prometheus {endpoint}: {what}{tries} ({error_type}: {message}) for query: {q}"
        )


class PrometheusQueryError(PrometheusError):
    """HTTP 4xx: the server rejected the query (syntax, too many points/samples...); not retried."""


class PrometheusUnavailableError(PrometheusError):
    """HTTP 5xx, a timeout or a refused connection, still failing after the last retry."""


@dataclass
class TransferStats:
    """Traffic of a :class:`PrometheusSource` since creation or :meth:`PrometheusSource.reset_stats`.

    Attributes:
        requests: HTTP requests sent (retries included).
        retries: requests that were retries of a failed one.
        bytes_sent: request bodies and query strings, bytes.
        bytes_received: response bodies as received on the wire (gzip-compressed when the
            server compresses, as Prometheus does), bytes.
        bytes_decoded: response bodies after decompression (the JSON), bytes.
        seconds: wall time spent in requests, s.
    """

    requests: int = 0
    retries: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    bytes_decoded: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """The counters as a plain dict."""
        return asdict(self)


# --------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------


def _ms(x: Any) -> int:
    """datetime / epoch seconds / ISO 8601 -> epoch milliseconds (int)."""
    if isinstance(x, _dt.datetime):
        d = x if x.tzinfo else x.replace(tzinfo=_dt.UTC)
        return round(d.timestamp() * 1000)
    if isinstance(x, (int, float)):
        return round(float(x) * 1000)
    s = str(x).strip()
    if re.fullmatch(r"\d+(\.\d+)?", s):
        return round(float(s) * 1000)
    d = _dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
    return _ms(d)


def _sec(ms: int) -> str:
    """epoch ms -> the API's decimal seconds, exact (no float rounding)."""
    sign = "-" if ms < 0 else ""
    ms = abs(ms)
    return f"{sign}{ms // 1000}.{ms % 1000:03d}"


def _qstr(s: str) -> str:
    """A PromQL string literal: a raw backtick string when possible (no escaping), else quoted."""
    return f"`{s}`" if "`" not in s else json.dumps(s)


def _regex_of(values: Iterable[str]) -> str:
    return "|".join(re.escape(v) for v in sorted(set(values)))


def _name_regex(field: int | str) -> str:
    """Regex (for ``__name__=~``) of every metric name of a DCGM field, or the name itself."""
    fid = field if isinstance(field, int) else dcgm.field_id(str(field))
    if fid is None:
        if isinstance(field, int):
            raise ValueError(f"unknown DCGM field id {field}")
        return re.escape(str(field))
    names = {n for n, i in dcgm.ALIASES.items() if i == fid} | {dcgm.FIELDS[fid].name}
    return "(?i)(?:" + _regex_of(names) + ")"


def _is_dcgm(name: str) -> bool:
    return dcgm.field_id(name) is not None


# --------------------------------------------------------------------------------------
# The source
# --------------------------------------------------------------------------------------


class PrometheusSource:
    """Telemetry source backed by a Prometheus server's HTTP API (see the module docstring).

    Args:
        url: server base URL, e.g. ``http://127.0.0.1:9090`` (a path prefix such as
            ``/prometheus`` is kept).
        timeout_s: per-request socket timeout, s (also sent as the API's ``timeout``).
        max_attempts: tries per request on 5xx / timeouts / refused connections (>= 1).
        backoff_s: first back-off, s; doubled after each failure, capped at ``backoff_max_s``.
        max_points_per_series: chunk limit per range query (Prometheus refuses > 11,000).
        max_points_per_request: chunk limit on points in all series of one range query (bounds
            the response size: about 25-30 bytes of JSON per point; Prometheus' own
            ``--query.max-samples`` default is 50,000,000).
        default_step_s: step used when the scrape interval cannot be measured, s.
        headers: extra HTTP headers (e.g. ``Authorization``).

    Attributes:
        stats: :class:`TransferStats` of every request made.
    """

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = 60.0,
        max_attempts: int = 4,
        backoff_s: float = 0.5,
        backoff_max_s: float = 8.0,
        max_points_per_series: int = MAX_POINTS_PER_SERIES,
        max_points_per_request: int = 1_000_000,
        default_step_s: float = 15.0,
        headers: Mapping[str, str] | None = None,
    ):
        if not is_url(url):
            raise ValueError(f"not an http(s) URL: {url!r}")
        if max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        if not 2 <= max_points_per_series <= MAX_POINTS_PER_SERIES:
            raise ValueError(f"max_points_per_series must be in 2..{MAX_POINTS_PER_SERIES}")
        self.url = url.strip().rstrip("/")
        self.timeout_s = float(timeout_s)
        self.max_attempts = int(max_attempts)
        self.backoff_s, self.backoff_max_s = float(backoff_s), float(backoff_max_s)
        self.max_points_per_series = int(max_points_per_series)
        self.max_points_per_request = int(max_points_per_request)
        self.default_step_s = float(default_step_s)
        self.headers = dict(headers or {})
        self.stats = TransferStats()
        # no proxies: a loopback server must be reached directly whatever the environment says
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        self._step_cache: dict[tuple, int] = {}

    def __repr__(self) -> str:
        return f"PrometheusSource({self.url!r})"

    def reset_stats(self) -> None:
        """Zero :attr:`stats`."""
        self.stats = TransferStats()

    # ---------------------------------------------------------------- HTTP

    def request(
        self, endpoint: str, params: Sequence[tuple[str, str]], *, method: str = "POST"
    ) -> dict:
        """One API call with retries; returns the decoded ``{"status":"success",...}`` envelope.

        Args:
            endpoint: path under the base URL, e.g. ``/api/v1/query``.
            params: form parameters (repeated keys allowed, e.g. ``match[]``).
            method: ``POST`` (form body) or ``GET`` (query string).

        Raises:
            PrometheusQueryError: HTTP 4xx (not retried), or a 2xx whose envelope says ``error``.
            PrometheusUnavailableError: 5xx / timeout / connection error after ``max_attempts``.
        """
        query = next((v for k, v in params if k in ("query", "match[]")), "")
        body = urllib.parse.urlencode(list(params)).encode()
        url = self.url + endpoint
        data = None
        if method == "GET":
            url += "?" + body.decode()
        else:
            data = body
        hdrs = {"Accept": "application/json", "Accept-Encoding": "gzip", **self.headers}
        if data is not None:
            hdrs["Content-Type"] = "application/x-www-form-urlencoded"
        last: tuple[int | None, str, str] = (None, "", "")
        for attempt in range(1, self.max_attempts + 1):
            if attempt > 1:
                self.stats.retries += 1
                time.sleep(min(self.backoff_max_s, self.backoff_s * 2 ** (attempt - 2)))
            req = urllib.request.Request(url, data=data, headers=hdrs, method=method)
            self.stats.requests += 1
            self.stats.bytes_sent += len(body)
            t = time.perf_counter()
            try:
                with self._opener.open(req, timeout=self.timeout_s) as resp:
                    raw = resp.read()
                    status, enc = resp.status, resp.headers.get("Content-Encoding", "")
            except urllib.error.HTTPError as e:
                raw = e.read() or b""
                status, enc = e.code, (e.headers.get("Content-Encoding", "") if e.headers else "")
            except (
                urllib.error.URLError,
                TimeoutError,
                ConnectionError,
                http.client.HTTPException,
            ) as e:
                self.stats.seconds += time.perf_counter() - t
                reason = getattr(e, "reason", e)
                last = (None, type(reason).__name__, str(reason))
                continue
            self.stats.seconds += time.perf_counter() - t
            self.stats.bytes_received += len(raw)
            if "gzip" in enc.lower():
                try:
                    raw = gzip.decompress(raw)
                except OSError:
                    pass
            self.stats.bytes_decoded += len(raw)
            try:
                doc = json.loads(raw) if raw else {}
            except ValueError:
                doc = {}
            err_type = str(doc.get("errorType") or "")
            err = str(doc.get("error") or raw[:300].decode("utf-8", "replace"))
            if 200 <= status < 300:
                if doc.get("status") != "success":
                    raise PrometheusQueryError(
                        endpoint, query, status, err_type or "bad_response", err, attempt
                    )
                return doc
            if 400 <= status < 500:
                raise PrometheusQueryError(
                    endpoint, query, status, err_type or "http", err, attempt
                )
            last = (status, err_type or "http", err)
        raise PrometheusUnavailableError(
            endpoint, query, last[0], last[1], last[2], self.max_attempts
        )

    def query(self, promql: str, at: Any) -> dict:
        """``/api/v1/query`` (instant query) at ``at`` (datetime / epoch s / ISO); the envelope."""
        return self.request(
            "/api/v1/query",
            [("query", promql), ("time", _sec(_ms(at))), ("timeout", f"{self.timeout_s:g}s")],
        )

    def query_range(self, promql: str, start: Any, end: Any, step_s: float) -> dict:
        """``/api/v1/query_range`` in one request (no chunking); the envelope (matrix)."""
        return self.request(
            "/api/v1/query_range",
            [
                ("query", promql),
                ("start", _sec(_ms(start))),
                ("end", _sec(_ms(end))),
                ("step", _sec(round(step_s * 1000))),
                ("timeout", f"{self.timeout_s:g}s"),
            ],
        )

    def label_values(
        self, label: str, match: Sequence[str] = (), start: Any = None, end: Any = None
    ) -> list[str]:
        """``/api/v1/label/<label>/values``, restricted to series matching any of ``match``."""
        params = [("match[]", m) for m in match]
        if start is not None:
            params.append(("start", _sec(_ms(start))))
        if end is not None:
            params.append(("end", _sec(_ms(end))))
        doc = self.request(
            f"/api/v1/label/{urllib.parse.quote(label, safe='')}/values", params, method="GET"
        )
        return [str(v) for v in doc.get("data") or []]

    # ---------------------------------------------------------------- selection

    def job_hostnames(self, job_id: str, start: Any, end: Any) -> list[str]:
        """Hosts whose series carry ``job_id`` in one of :data:`JOB_LABELS` during [start, end].

        Raises:
            ValueError: no series carries the job in the window.
        """
        match = [f"{{{k}={json.dumps(str(job_id))}}}" for k in JOB_LABELS]
        hosts: set[str] = set()
        for lab in HOST_LABELS:
            hosts |= set(self.label_values(lab, match, start, end))
        if not hosts:
            raise ValueError(
                f"job {job_id!r} not found in labels {', '.join(JOB_LABELS)} of {self.url} "
                f"between {_sec(_ms(start))} and {_sec(_ms(end))}"
            )
        return sorted(hosts)

    def _hosts(self, hostnames: Any, job_id: Any, s_ms: int, e_ms: int) -> list[str] | None:
        hosts: set[str] | None = None
        if hostnames is not None:
            if isinstance(hostnames, str):
                from trainperf.slurm import expand_nodelist

                hostnames = expand_nodelist(hostnames)
            hosts = set(hostnames)
        if job_id not in (None, ""):
            jh = set(self.job_hostnames(str(job_id), s_ms / 1000, e_ms / 1000))
            hosts = jh if hosts is None else hosts & jh
        return None if hosts is None else sorted(hosts)

    @staticmethod
    def _selectors(
        name: str,
        hosts: Sequence[str] | None,
        *,
        gpu_only: bool = False,
        name_is_regex: bool = False,
    ) -> list[str]:
        """Instant-vector selectors (to be joined with ``or``), one per host-label spelling."""
        base = [f"__name__=~{_qstr(name)}" if name_is_regex else f"__name__={_qstr(name)}"]
        if gpu_only:
            base += ['gpu!=""', 'GPU_I_ID=""']
        if hosts is None:
            return ["{" + ",".join(base) + "}"]
        rx = _regex_of(hosts)
        alts = [f"{lab}=~{_qstr(rx)}" for lab in HOST_LABELS]
        plain = name if not name_is_regex else ""
        if not gpu_only and not (plain and _is_dcgm(plain)):
            alts.append(f"instance=~{_qstr(f'(?:{rx})(?::[0-9]+)?')}")
        return ["{" + ",".join([*base, a]) + "}" for a in alts]

    def metric_names(self, field: int | str, start: Any, end: Any) -> list[str]:
        """Metric names of ``field`` (DCGM id or any alias, or a plain metric name) stored in
        the window, via ``/api/v1/label/__name__/values``."""
        rx = _name_regex(field)
        return sorted(self.label_values("__name__", [f"{{__name__=~{_qstr(rx)}}}"], start, end))

    # ---------------------------------------------------------------- steps and chunks

    def scrape_interval(self, selectors: Sequence[str], start: Any, end: Any) -> float:
        """Sampling interval of the series (s): median gap between the raw samples of one series
        (``topk(1, last_over_time(...))`` picks it, a range-vector instant query returns its raw
        samples) in the last ``min(window, 6 h)`` of the window; ``default_step_s`` if it has
        fewer than 2 samples there."""
        s_ms, e_ms = _ms(start), _ms(end)
        key = (tuple(selectors), s_ms, e_ms)
        if key in self._step_cache:
            return self._step_cache[key] / 1000
        d = max(1, min(e_ms - s_ms, 6 * 3600 * 1000))
        step = round(self.default_step_s * 1000)
        for sel in selectors:
            doc = self.query(f"topk(1, last_over_time({sel}[{d}ms]))", e_ms / 1000)
            res = doc["data"]["result"]
            if not res:
                continue
            labels = res[0]["metric"]
            exact = "{" + ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(labels.items())) + "}"
            raw = self.query(f"{exact}[{d}ms]", e_ms / 1000)["data"]["result"]
            ts = sorted(round(float(t) * 1000) for r in raw for t, _ in r.get("values", []))
            gaps = sorted(b - a for a, b in zip(ts, ts[1:], strict=False) if b > a)
            if gaps:
                step = gaps[len(gaps) // 2]
            break
        self._step_cache[key] = step
        return step / 1000

    def _count_series(self, selectors: Sequence[str], s_ms: int, e_ms: int) -> int:
        w = max(1, e_ms - s_ms)
        expr = "count(" + " or ".join(f"count_over_time({s}[{w}ms])" for s in selectors) + ")"
        res = self.query(expr, e_ms / 1000)["data"]["result"]
        return int(float(res[0]["value"][1])) if res else 0

    @staticmethod
    def _fresh(selectors: Sequence[str], step_ms: int) -> str:
        """Only samples scraped within the step ending at each evaluation time (no look-back
        repeats): ``x and (timestamp(x) > time() - step + 0.5 ms)``; ``timestamp()`` of a plain
        selector is the sample's own timestamp (of any other expression, the evaluation time), so
        each host-label spelling is filtered on its own."""
        lag = _sec(step_ms).rstrip("0") + "0"
        return " or ".join(
            f"({s} and (timestamp({s}) > time() - {lag} + 0.0005))" for s in selectors
        )

    # ---------------------------------------------------------------- raw series

    def fetch(
        self,
        start: Any,
        end: Any,
        *,
        fields: Iterable[int | str] | None = None,
        hostnames: Iterable[str] | str | None = None,
        job_id: str | None = None,
        step_s: float | None = None,
        max_points: int | None = None,
        exact: bool = True,
    ) -> pl.DataFrame:
        """Samples of ``fields`` in [start, end] as a reader frame (:data:`trainperf.dcgm.SCHEMA`).

        Args:
            start, end: window (datetime / epoch s / ISO 8601), both ends included.
            fields: DCGM field ids or names (any alias; every stored alias is fetched) and/or
                plain metric names (node-exporter counters); default :data:`DEFAULT_FIELDS`.
            hostnames: only these hosts (a list, or a Slurm host list such as ``gpu[001-064]``).
            job_id: only the hosts running this job (see :meth:`job_hostnames`); with
                ``hostnames``, their intersection.
            step_s: evaluation step, s; default: the measured scrape interval
                (:meth:`scrape_interval`) of each metric, or coarser for ``max_points``.
            max_points: point budget per series over the whole window: the step is at least
                ``(end - start) / (max_points - 1)`` (rounded up to a whole ms).
            exact: keep only samples scraped within each step (no look-back repeats; see the
                module docstring); False sends the bare selector (what Grafana does).

        Returns:
            a frame with :data:`trainperf.dcgm.SCHEMA`; ``timestamp`` is the evaluation step time
            (Datetime[us, UTC]), ``value`` Float64 in the exporter's unit. Empty (with the
            schema) when nothing matches.

        Raises:
            PrometheusQueryError, PrometheusUnavailableError: see :meth:`request`.
            ValueError: ``end`` before ``start``, or ``job_id`` not found.
        """
        s_ms, e_ms = _ms(start), _ms(end)
        if e_ms < s_ms:
            raise ValueError(f"end {end!r} is before start {start!r}")
        hosts = self._hosts(hostnames, job_id, s_ms, e_ms)
        if hosts is not None and not hosts:
            return pl.DataFrame(schema=dcgm.SCHEMA)
        frames: list[pl.DataFrame] = []
        for fld in DEFAULT_FIELDS if fields is None else fields:
            for name in self.metric_names(fld, s_ms / 1000, e_ms / 1000):
                sels = self._selectors(name, hosts)
                if step_s is not None:
                    st = max(1, round(step_s * 1000))
                else:
                    st = round(self.scrape_interval(sels, s_ms / 1000, e_ms / 1000) * 1000)
                if max_points:
                    st = max(st, math.ceil((e_ms - s_ms) / max(1, max_points - 1)))
                n_series = self._count_series(sels, s_ms, e_ms)
                if n_series == 0:
                    continue
                per_chunk = max(
                    1, min(self.max_points_per_series, self.max_points_per_request // n_series)
                )
                expr = self._fresh(sels, st) if exact else " or ".join(sels)
                t0 = math.ceil(s_ms / st) * st
                while t0 <= e_ms:
                    t1 = min(e_ms, t0 + (per_chunk - 1) * st)
                    env = self.query_range(expr, t0 / 1000, t1 / 1000, st / 1000)
                    f = dcgm.read_prometheus_api(env)
                    if f.height:
                        frames.append(f)
                    t0 = t1 + st
        if not frames:
            return pl.DataFrame(schema=dcgm.SCHEMA)
        out = pl.concat(frames, how="vertical")
        if hosts is not None:
            out = out.filter(pl.col("hostname").is_in(hosts))
        return out

    # ---------------------------------------------------------------- push-down

    def _window_frame(self, expr: str, name: str, at_ms: int) -> pl.DataFrame:
        doc = self.query(expr, at_ms / 1000)
        f = dcgm.read_prometheus_api(doc, metric=name, checks=False)  # aggregates, not samples
        return f.with_columns(
            pl.col("labels").str.json_path_match(f"$.{_STAT_LABEL}").alias("_stat")
        )

    def window_stats(
        self,
        start: Any,
        end: Any,
        *,
        fields: Iterable[int | str] = (1004, 1002, 1005, 155, 100),
        level: str = "gpu",
        quantiles: Sequence[float] = (0.05, 0.25, 0.5, 0.75, 0.95),
        hostnames: Iterable[str] | str | None = None,
        job_id: str | None = None,
        _names: Mapping[Any, list[str]] | None = None,
        _hosts: list[str] | None | bool = False,
    ) -> pl.DataFrame:
        """Per-GPU or per-node statistics of DCGM fields over [start, end), computed by Prometheus.

        GPU-entity series only (``gpu`` label set, no MIG ``GPU_I_ID``), like
        :func:`trainperf.telemetry.phase_stats`. One instant query per metric name, at
        ``end - 1 ms`` over a range of ``end - start - 1 ms``:

        * ``level="gpu"``: ``sum by (hostname, Hostname, gpu)`` of ``count_over_time`` and
          ``sum_over_time`` (mean = sum / count, pooled over the GPU's series), ``min by`` /
          ``max by`` of ``min/max_over_time``, ``count by`` of series, and ``max by`` of
          ``quantile_over_time`` (linear interpolation, as polars' ``quantile(q, "linear")``):
          exact when the GPU has one series in the window; with several (a label such as
          ``hpc_job`` changed; ``n_series`` > 1) the quantiles are the largest of the per-series
          ones. Aggregating by host and GPU also drops the exporter's other labels from the
          answer (3 labels per result instead of about 10).
        * ``level="node"``: ``sum by (hostname, Hostname)`` of ``sum_over_time`` and
          ``count_over_time`` (mean = pooled over the node's samples, as polars would), ``min by``
          / ``max by`` of ``min/max_over_time``, and per quantile q ``quantile by (...) (q,
          avg_over_time(...))``: the spread of the per-GPU means over the node's GPUs (columns
          ``gpu_mean_pNN``; pooled sample quantiles of a node cannot be computed in PromQL).

        Returns:
            ``level="gpu"``: hostname (String), gpu (Int32), field_id (Int32), field (String),
            n_series (UInt32), n (UInt32, samples), mean, min, max, p05, p25... (Float64, the
            field's unit). ``level="node"``: hostname, field_id, field, n, mean, min, max,
            gpu_mean_p05... Sorted by hostname, gpu, field_id. Empty frame with these columns
            when nothing matches.

        Raises:
            ValueError: unknown ``level``, empty window.
            PrometheusQueryError, PrometheusUnavailableError: see :meth:`request`.
        """
        if level not in ("gpu", "node"):
            raise ValueError(f"level must be 'gpu' or 'node', not {level!r}")
        s_ms, e_ms = _ms(start), _ms(end)
        if e_ms - s_ms < 2:
            raise ValueError(f"empty window [{start!r}, {end!r})")
        hosts = self._hosts(hostnames, job_id, s_ms, e_ms) if _hosts is False else _hosts
        qcols = [f"p{round(q * 100):02d}" for q in quantiles]
        at, w = e_ms - 1, e_ms - s_ms - 1
        frames = []
        for fld in fields:
            names = (
                _names[fld]
                if _names is not None
                else self.metric_names(fld, s_ms / 1000, e_ms / 1000)
            )
            for name in names:
                sels = self._selectors(name, hosts, gpu_only=True)

                def over(fn: str, arg: str = "", sels: list[str] = sels) -> str:
                    return " or ".join(f"{fn}({arg}{s}[{w}ms])" for s in sels)

                if level == "gpu":
                    # aggregated by host and GPU only: pools a GPU's series and sends 3 labels
                    # per result instead of the exporter's dozen
                    by = "by (" + ", ".join([*HOST_LABELS, "gpu"]) + ")"
                    stats = {
                        "n": f"sum {by} ({over('count_over_time')})",
                        "n_series": f"count {by} ({over('count_over_time')})",
                        "sum": f"sum {by} ({over('sum_over_time')})",
                        "min": f"min {by} ({over('min_over_time')})",
                        "max": f"max {by} ({over('max_over_time')})",
                    }
                    for q, c in zip(quantiles, qcols, strict=True):
                        stats[c] = f"max {by} ({over('quantile_over_time', f'{q!r}, ')})"
                else:
                    by = "by (" + ", ".join(HOST_LABELS) + ")"
                    stats = {
                        "n": f"sum {by} ({over('count_over_time')})",
                        "sum": f"sum {by} ({over('sum_over_time')})",
                        "min": f"min {by} ({over('min_over_time')})",
                        "max": f"max {by} ({over('max_over_time')})",
                    }
                    for q, c in zip(quantiles, qcols, strict=True):
                        stats["gpu_mean_" + c] = f"quantile {by} ({q!r}, {over('avg_over_time')})"
                expr = " or ".join(
                    f'label_replace({e}, "{_STAT_LABEL}", "{k}", "", "")' for k, e in stats.items()
                )
                f = self._window_frame(expr, name, at)
                if f.height:
                    frames.append(f)
        return self._shape_stats(frames, level, qcols, hosts)

    @staticmethod
    def _shape_stats(
        frames: list[pl.DataFrame], level: str, qcols: list[str], hosts: list[str] | None
    ) -> pl.DataFrame:
        if level == "gpu":
            schema = {
                "hostname": pl.String,
                "gpu": pl.Int32,
                "field_id": pl.Int32,
                "field": pl.String,
                "n_series": pl.UInt32,
                "n": pl.UInt32,
                "mean": pl.Float64,
                "min": pl.Float64,
                "max": pl.Float64,
                **{c: pl.Float64 for c in qcols},
            }
        else:
            schema = {
                "hostname": pl.String,
                "field_id": pl.Int32,
                "field": pl.String,
                "n": pl.UInt32,
                "mean": pl.Float64,
                "min": pl.Float64,
                "max": pl.Float64,
                **{f"gpu_mean_{c}": pl.Float64 for c in qcols},
            }
        if not frames:
            return pl.DataFrame(schema=schema)
        f = pl.concat(frames, how="vertical")
        if hosts is not None:
            f = f.filter(pl.col("hostname").is_in(hosts))
        index = (
            ["hostname", "gpu", "field_id", "field"]
            if level == "gpu"
            else ["hostname", "field_id", "field"]
        )
        out = f.pivot(on="_stat", index=index, values="value").with_columns(
            (pl.col("sum") / pl.col("n")).alias("mean")
        )
        for c in schema:
            if c not in out.columns:
                out = out.with_columns(pl.lit(None, pl.Float64).alias(c))
        sort = ["hostname", "gpu", "field_id"] if level == "gpu" else ["hostname", "field_id"]
        return out.select([pl.col(c).cast(t) for c, t in schema.items()]).sort(
            sort, nulls_last=True
        )

    def phase_stats(
        self,
        phases: pl.DataFrame,
        *,
        level: str = "gpu",
        fields: Mapping[str, tuple[int, str]] | None = None,
        quantiles: Sequence[float] = (0.05, 0.25, 0.5, 0.75, 0.95),
        hostnames: Iterable[str] | str | None = None,
        job_id: str | None = None,
    ) -> pl.DataFrame:
        """:func:`trainperf.telemetry.phase_stats` computed by Prometheus, one window per phase.

        Each phase ``[start, end)`` is a :meth:`window_stats` window (same samples as
        :func:`trainperf.telemetry.with_phases` for non-overlapping phases).

        Args:
            phases: :func:`trainperf.telemetry.phases_from_log` (or shifted).
            level: ``"gpu"`` (same columns as ``telemetry.phase_stats(level="gpu")``) or
                ``"node"``.
            fields: metric -> (field id, unit); default
                :data:`trainperf.telemetry.ACTIVITY_FIELDS`.
            quantiles, hostnames, job_id: see :meth:`window_stats`.

        Returns:
            ``level="gpu"``: phase, kind, index, hostname, gpu, metric, unit, n (UInt32), mean,
            p05... (Float64); ``level="node"``: phase, kind, index, hostname, metric, unit, n,
            mean, min, max, gpu_mean_p05... Sorted like ``telemetry.phase_stats``.
        """
        from trainperf import telemetry

        fields = dict(fields or telemetry.ACTIVITY_FIELDS)
        if phases.height == 0:
            raise ValueError("no phases")
        s_all, e_all = _ms(phases["start"].min()), _ms(phases["end"].max())
        hosts = self._hosts(hostnames, job_id, s_all, e_all)
        ids = [fid for fid, _ in fields.values()]
        names = {fid: self.metric_names(fid, s_all / 1000, e_all / 1000) for fid in ids}
        mt = pl.DataFrame(
            {
                "metric": list(fields),
                "field_id": ids,
                "unit": [u for _, u in fields.values()],
            },
            schema={"metric": pl.String, "field_id": pl.Int32, "unit": pl.String},
        )
        qcols = [f"p{round(q * 100):02d}" for q in quantiles]
        parts = []
        for ph, kind, idx, s, e in phases.select("phase", "kind", "index", "start", "end").rows():
            if _ms(e) - _ms(s) < 2:
                continue
            ws = self.window_stats(
                s,
                e,
                fields=ids,
                level=level,
                quantiles=quantiles,
                _names=names,
                _hosts=hosts,
            )
            parts.append(
                ws.with_columns(
                    pl.lit(ph, pl.String).alias("phase"),
                    pl.lit(kind, pl.String).alias("kind"),
                    pl.lit(idx, pl.Int32).alias("index"),
                )
            )
        out = pl.concat(parts) if parts else None
        if level == "gpu":
            cols = ["phase", "kind", "index", "hostname", "gpu", "metric", "unit", "n", "mean"]
            cols += qcols
            sort = ["_k", "index", "hostname", "gpu", "_m"]
        else:
            cols = ["phase", "kind", "index", "hostname", "metric", "unit", "n", "mean"]
            cols += ["min", "max", *[f"gpu_mean_{c}" for c in qcols]]
            sort = ["_k", "index", "hostname", "_m"]
        if out is None or out.height == 0:
            types = {"phase": pl.String, "kind": pl.String, "index": pl.Int32}
            types |= {"hostname": pl.String, "gpu": pl.Int32, "metric": pl.String}
            types |= {"unit": pl.String, "n": pl.UInt32}
            return pl.DataFrame(schema={c: types.get(c, pl.Float64) for c in cols})
        order = {m: i for i, m in enumerate(fields)}
        kind_order = {"init": 0, "train": 1, "eval": 2}
        out = out.join(mt, on="field_id", how="inner").with_columns(
            pl.col("metric").replace_strict(order, return_dtype=pl.Int32).alias("_m"),
            pl.col("kind").replace_strict(kind_order, default=9, return_dtype=pl.Int32).alias("_k"),
        )
        return out.sort(sort).select(cols)

    def job_means(
        self,
        start: Any,
        end: Any,
        *,
        hostnames: Iterable[str] | str | None = None,
        job_id: str | None = None,
        fields: Iterable[int | str] = (1004, 1002, 1005, 203, 155, 100),
    ) -> pl.DataFrame:
        """Pooled mean of each DCGM field over a job's nodes in [start, end), computed by Prometheus.

        Per metric name one instant query: ``sum(sum_over_time(sel[w]))``, ``sum(count_over_time
        (sel[w]))``, ``count(count by (hostname, Hostname) (...))`` and ``count(...)`` of series,
        where ``sel`` matches the node list on ``hostname`` or ``Hostname`` (regex, anchored).

        Args:
            start, end: window, half-open.
            hostnames: node list (or a Slurm host list string, e.g. ``sacct`` NodeList).
            job_id: or the job whose hosts to use (:meth:`job_hostnames`).
            fields: DCGM field ids or names.

        Returns:
            field_id (Int32), field (String), n_nodes (UInt32), n_series (UInt32), n (UInt32,
            samples), mean (Float64, the field's unit: every sample of every GPU pooled); one row
            per field found, in ``fields`` order.

        Raises:
            ValueError: neither ``hostnames`` nor ``job_id``.
        """
        if hostnames is None and job_id in (None, ""):
            raise ValueError("job_means needs hostnames or job_id")
        s_ms, e_ms = _ms(start), _ms(end)
        hosts = self._hosts(hostnames, job_id, s_ms, e_ms) or []
        at, w = e_ms - 1, e_ms - s_ms - 1
        schema = {
            "field_id": pl.Int32,
            "field": pl.String,
            "n_nodes": pl.UInt32,
            "n_series": pl.UInt32,
            "n": pl.UInt32,
            "mean": pl.Float64,
        }
        rows = []
        if not hosts:
            return pl.DataFrame(schema=schema)
        by = "by (" + ", ".join(HOST_LABELS) + ")"
        for fld in fields:
            for name in self.metric_names(fld, s_ms / 1000, e_ms / 1000):
                sels = self._selectors(name, hosts, gpu_only=True)

                def over(fn: str, sels: list[str] = sels) -> str:
                    return " or ".join(f"{fn}({s}[{w}ms])" for s in sels)

                stats = {
                    "sum": f"sum({over('sum_over_time')})",
                    "n": f"sum({over('count_over_time')})",
                    "n_series": f"count({over('count_over_time')})",
                    "n_nodes": f"count(count {by} ({over('count_over_time')}))",
                }
                f = self._window_frame(self._stat_query_plain(stats), name, at)
                v = dict(zip(f["_stat"].to_list(), f["value"].to_list(), strict=True))
                if not v.get("n"):
                    continue
                fid = dcgm.field_id(name)
                rows.append(
                    {
                        "field_id": fid,
                        "field": dcgm.FIELDS[fid].name if fid in dcgm.FIELDS else name,
                        "n_nodes": round(v.get("n_nodes", 0)),
                        "n_series": round(v.get("n_series", 0)),
                        "n": round(v["n"]),
                        "mean": v["sum"] / v["n"],
                    }
                )
        return pl.DataFrame(rows, schema=schema, orient="row")

    @staticmethod
    def _stat_query_plain(stats: Mapping[str, str]) -> str:
        return " or ".join(
            f'label_replace({e}, "{_STAT_LABEL}", "{k}", "", "")' for k, e in stats.items()
        )
