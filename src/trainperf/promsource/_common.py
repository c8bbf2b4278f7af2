"""Constants, errors, traffic counters and small helpers of :mod:`trainperf.promsource`."""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import polars as pl

from trainperf import dcgm
from trainperf.errors import TrainperfError

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

STAT_LABEL = "trainperf_stat"
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
        server: the server's base URL (named in the message before the endpoint), or None.
    """

    def __init__(
        self,
        endpoint: str,
        query: str,
        status: int | None,
        error_type: str,
        message: str,
        attempts: int = 1,
        server: str | None = None,
    ):
        self.endpoint, self.query, self.status = endpoint, query, status
        self.server = server
        self.error_type, self.message, self.attempts = error_type, message, attempts
        what = f"HTTP {status}" if status is not None else "no response"
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        q = query if len(query) <= 2000 else query[:2000] + f"... ({len(query)} chars)"
        super().__init__(
            f"Prometheus {server or ''}{endpoint}: {what}{tries} ({error_type}: {message}) "
            f"for query: {q}"
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


def epoch_ms(x: Any) -> int:
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
    return epoch_ms(d)


def api_seconds(ms: int) -> str:
    """epoch ms -> the API's decimal seconds, exact (no float rounding)."""
    sign = "-" if ms < 0 else ""
    ms = abs(ms)
    return f"{sign}{ms // 1000}.{ms % 1000:03d}"


def qstr(s: str) -> str:
    """A PromQL string literal: a raw backtick string when possible (no escaping), else quoted."""
    return f"`{s}`" if "`" not in s else json.dumps(s)


def regex_of(values: Iterable[str]) -> str:
    return "|".join(re.escape(v) for v in sorted(set(values)))


def name_regex(field: int | str) -> str:
    """Regex (for ``__name__=~``) of every metric name of a DCGM field, or the name itself."""
    fid = field if isinstance(field, int) else dcgm.field_id(str(field))
    if fid is None:
        if isinstance(field, int):
            raise ValueError(f"unknown DCGM field id {field}")
        return re.escape(str(field))
    names = {n for n, i in dcgm.ALIASES.items() if i == fid} | {dcgm.FIELDS[fid].name}
    return "(?i)(?:" + regex_of(names) + ")"


def is_dcgm(name: str) -> bool:
    return dcgm.field_id(name) is not None
