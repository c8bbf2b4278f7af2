"""HTTP side of :class:`~trainperf.promsource.PrometheusSource`: one API call with retries, and the query endpoints."""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib
from collections.abc import Sequence
from typing import Any

from trainperf.promsource._common import (
    PrometheusQueryError,
    PrometheusUnavailableError,
    TransferStats,
    api_seconds,
    epoch_ms,
)
from trainperf.promsource.guards import ResponseTooLarge, gunzip_bounded, read_bounded


def _too_large(server: str, endpoint: str, query: str, e: ResponseTooLarge,
               attempt: int) -> PrometheusQueryError:  # fmt: skip
    return PrometheusQueryError(
        endpoint, query, None, "too_large",
        f"the {e.what} of the response is larger than {e.limit:,} bytes (max_response_bytes); "
        "refused: narrow the query (fewer hosts or fields, a shorter window) or raise "
        "max_response_bytes", attempt, server=server,
    )  # fmt: skip


class HttpMixin:
    """API calls (needs ``url``, ``timeout_s``, ``max_response_bytes``, ``max_attempts``,
    ``backoff_s``, ``backoff_max_s``, ``headers``, ``stats`` and ``_opener`` from :class:`~trainperf.promsource.PrometheusSource`)."""

    stats: TransferStats

    # ---------------------------------------------------------------- HTTP

    def request(
        self, endpoint: str, params: Sequence[tuple[str, str]], *, method: str = "POST"
    ) -> dict:
        """One API call with retries; returns the decoded ``{"status":"success",...}`` envelope.

        Args:
            endpoint: path under the base URL, e.g. ``/api/v1/query``.
            params: form parameters (repeated keys allowed, e.g. ``match[]``).
            method: ``POST`` (form body) or ``GET`` (query string).

        A body longer than ``max_response_bytes`` (compressed or inflated: a gzip body is inflated
        in bounded pieces) is refused, never read or inflated whole.

        Raises:
            PrometheusQueryError: HTTP 4xx (not retried), a 2xx whose envelope says ``error``, or a
                response larger than ``max_response_bytes`` (``error_type`` ``too_large``).
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
            limit = self.max_response_bytes
            try:
                with self._opener.open(req, timeout=self.timeout_s) as resp:
                    raw = read_bounded(resp, limit)
                    status, enc = resp.status, resp.headers.get("Content-Encoding", "")
            except ResponseTooLarge as e:
                self.stats.seconds += time.perf_counter() - t
                raise _too_large(self.url, endpoint, query, e, attempt) from None
            except urllib.error.HTTPError as e:
                raw = (e.read(1 << 16) if e.fp is not None else b"") or b""  # its start says why
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
                    raw = gunzip_bounded(raw, limit)
                except ResponseTooLarge as e:
                    raise _too_large(self.url, endpoint, query, e, attempt) from None
                except (zlib.error, EOFError):
                    pass  # not gzip after all: read as it came
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
                        endpoint, query, status, err_type or "bad_response", err, attempt,
                        server=self.url,
                    )  # fmt: skip
                return doc
            if 400 <= status < 500:
                raise PrometheusQueryError(
                    endpoint, query, status, err_type or "http", err, attempt, server=self.url
                )
            last = (status, err_type or "http", err)
        raise PrometheusUnavailableError(
            endpoint, query, last[0], last[1], last[2], self.max_attempts, server=self.url
        )

    def query(self, promql: str, at: Any) -> dict:
        """``/api/v1/query`` (instant query) at ``at`` (datetime / epoch s / ISO); the envelope."""
        return self.request(
            "/api/v1/query",
            [
                ("query", promql),
                ("time", api_seconds(epoch_ms(at))),
                ("timeout", f"{self.timeout_s:g}s"),
            ],
        )

    def query_range(self, promql: str, start: Any, end: Any, step_s: float) -> dict:
        """``/api/v1/query_range`` in one request (no chunking); the envelope (matrix)."""
        return self.request(
            "/api/v1/query_range",
            [
                ("query", promql),
                ("start", api_seconds(epoch_ms(start))),
                ("end", api_seconds(epoch_ms(end))),
                ("step", api_seconds(round(step_s * 1000))),
                ("timeout", f"{self.timeout_s:g}s"),
            ],
        )

    def label_values(
        self, label: str, match: Sequence[str] = (), start: Any = None, end: Any = None
    ) -> list[str]:
        """``/api/v1/label/<label>/values``, restricted to series matching any of ``match``."""
        params = [("match[]", m) for m in match]
        if start is not None:
            params.append(("start", api_seconds(epoch_ms(start))))
        if end is not None:
            params.append(("end", api_seconds(epoch_ms(end))))
        doc = self.request(
            f"/api/v1/label/{urllib.parse.quote(label, safe='')}/values", params, method="GET"
        )
        return [str(v) for v in doc.get("data") or []]
