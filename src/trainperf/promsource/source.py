"""The :class:`PrometheusSource` itself: configuration, traffic counters and data-quality rows."""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping

import polars as pl

from trainperf.promsource._common import MAX_POINTS_PER_SERIES, TransferStats, is_url
from trainperf.promsource.fetch import FetchMixin
from trainperf.promsource.guards import MAX_RESPONSE_BYTES
from trainperf.promsource.http import HttpMixin
from trainperf.promsource.pushdown import PushdownMixin
from trainperf.quality import QUALITY_SCHEMA, empty_quality


class PrometheusSource(HttpMixin, FetchMixin, PushdownMixin):
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
        max_response_bytes: largest response body, compressed or inflated (default
            :data:`trainperf.promsource.guards.MAX_RESPONSE_BYTES`, 64 MiB); a larger one is
            refused with a :class:`PrometheusQueryError` (``too_large``), never inflated whole.
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
        max_response_bytes: int = MAX_RESPONSE_BYTES,
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
        self.max_response_bytes = int(max_response_bytes)
        self.stats = TransferStats()
        # no proxies: a loopback server must be reached directly whatever the environment says
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        self._step_cache: dict[tuple, int] = {}
        self._quality: list[pl.DataFrame] = []

    def __repr__(self) -> str:
        return f"PrometheusSource({self.url!r})"

    def reset_stats(self) -> None:
        """Zero :attr:`stats`."""
        self.stats = TransferStats()

    def quality(self) -> pl.DataFrame:
        """Data-quality rows (:data:`trainperf.quality.QUALITY_SCHEMA`) of every :meth:`fetch` so
        far: duplicate series of one GPU, out-of-range values... (:mod:`trainperf.dcgm.checks`),
        with ``source`` = the server URL."""

        if not self._quality:
            return empty_quality()
        q = (
            pl.concat(self._quality)
            .cast(QUALITY_SCHEMA)
            .with_columns(pl.lit(self.url).alias("source"))
        )
        # one row per check: counts summed over the chunks of all fetches
        return (
            q.group_by("source", "check", "action", maintain_order=True)
            .agg(
                pl.col("n_series", "n_gpus", "n_samples", "n_lines").sum(),
                pl.col("first_line").min(),
                pl.col("detail").first(),
            )
            .select(list(QUALITY_SCHEMA))
            .cast(QUALITY_SCHEMA)
        )
