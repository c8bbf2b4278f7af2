"""Prometheus responses not to trust (issue 40): partial responses (``warnings`` in the envelope,
saved or live), a server that ignores ``step``, gzip bodies that inflate far beyond their size, bodies
larger than the bound, and errors that name the server and the query. A fake server in this process
answers with the bodies each test makes; every expected number is worked out by hand."""

from __future__ import annotations

import gzip
import http.server
import json
import threading
import tracemalloc
import urllib.parse
import warnings

import polars as pl
import pytest

from trainperf import dcgm, promsource
from trainperf.errors import DataWarning

T0 = 1_767_225_600  # 2026-01-01T00:00:00Z, epoch s
METRIC = {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "UUID": "GPU-a", "Hostname": "n1"}


def matrix(values: list, warnings_: list[str] | None = None) -> dict:
    env = {"status": "success", "data": {"resultType": "matrix",
                                         "result": [{"metric": METRIC, "values": values}]}}  # fmt: skip
    if warnings_:
        env["warnings"] = warnings_
    return env


class _Server(http.server.BaseHTTPRequestHandler):
    """``/api/v1/label/__name__/values``: the one metric; ``/api/v1/query``: a count of 1 series;
    ``/api/v1/query_range``: ``range_body`` (bytes) with ``range_headers``."""

    range_body: bytes = b""
    range_headers: dict = {}
    asked: list = []

    def _send(self, body: bytes, headers: dict | None = None, code: int = 200):
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802 (http.server API)
        self._send(json.dumps({"status": "success", "data": [METRIC["__name__"]]}).encode())

    def do_POST(self):  # noqa: N802 (http.server API)
        form = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
        if self.path.endswith("/query_range"):
            type(self).asked.append(form)
            self._send(type(self).range_body, type(self).range_headers)
        else:
            v = {"status": "success",
                 "data": {"resultType": "vector", "result": [{"metric": {}, "value": [T0, "1"]}]}}  # fmt: skip
            self._send(json.dumps(v).encode())

    def log_message(self, *a):
        pass


@pytest.fixture
def server():
    def make(body: bytes, headers: dict | None = None) -> str:
        h = type("S", (_Server,), {"range_body": body, "range_headers": headers or {}, "asked": []})
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), h)
        th = threading.Thread(target=srv.serve_forever, daemon=True)
        th.start()
        running.append((srv, th))
        return f"http://127.0.0.1:{srv.server_address[1]}"

    running: list = []
    yield make
    for srv, th in running:
        srv.shutdown()
        srv.server_close()
        th.join(5)


def fetch(url: str, **kw):
    src = promsource.PrometheusSource(url, max_attempts=1, **kw)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        f = src.fetch(T0, T0 + 20, fields=[METRIC["__name__"]], step_s=1.0, exact=False)
    return src, f, [str(x.message) for x in w if issubclass(x.category, DataWarning)]


def test_saved_partial_response_is_flagged(tmp_path):
    # a saved Thanos answer: 3 samples and a "partial response" warning: read, and flagged
    p = tmp_path / "thanos.json"
    env = matrix([[T0 + i, "50"] for i in range(3)], ["partial response: store eu-1 unavailable"])
    p.write_text(json.dumps(env))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = dcgm.read_prometheus_api_reading(p)
    assert r.frame().height == 3
    q = {row["check"]: row for row in r.quality.iter_rows(named=True)}["partial_response"]
    assert q["action"] == "flagged" and "store eu-1 unavailable" in q["detail"]
    assert any(str(p) in str(x.message) and "partial_response" in str(x.message) for x in w)


def test_live_partial_response_is_flagged(server):
    # 10 of the 21 asked points, with a warning: the 10 are kept and the source's quality says so
    url = server(
        json.dumps(matrix([[T0 + i, "50"] for i in range(10)], ["partial response"])).encode()
    )
    src, f, msgs = fetch(url)
    assert f.height == 10
    q = src.quality()
    assert q.filter(q["check"] == "partial_response").height == 1
    assert any(url in m and "partial_response" in m for m in msgs)


def test_server_that_ignores_step_is_bounded_and_flagged(server):
    # asked: [T0, T0 + 20 s] at 1 s = 21 points. The server sends a point every 1 ms: 20,001.
    # One point per 1 s step is kept (the first of each: T0 + 0, 1, ..., 20 s): 21 kept,
    # 20,001 - 21 = 19,980 left out.
    vals = [[round(T0 + k / 1000, 3), "50"] for k in range(20_001)]
    url = server(json.dumps(matrix(vals)).encode())
    src, f, msgs = fetch(url)
    assert f.height == 21
    assert [t.timestamp() for t in f.sort("timestamp")["timestamp"]] == [T0 + i for i in range(21)]
    q = src.quality().filter(pl.col("check") == "step_ignored").row(0, named=True)
    assert (q["n_series"], q["n_samples"], q["action"]) == (1, 19_980, "excluded")
    assert any("step_ignored" in m and "21 asked" in m for m in msgs)


def test_gzip_bomb_is_refused_without_inflating_it(server):
    # 64 MiB of zeros gzip to ~64 KiB; with a 1 MiB bound the body is refused once 1 MiB is inflated:
    # the Python allocations stay a few MiB (inflating it whole would take 64 MiB)
    bomb = gzip.compress(b"0" * (64 * 2**20), compresslevel=9)
    url = server(bomb, {"Content-Encoding": "gzip"})
    src = promsource.PrometheusSource(url, max_attempts=1, max_response_bytes=2**20)
    tracemalloc.start()
    try:
        with pytest.raises(promsource.PrometheusQueryError) as e:
            src.query_range("DCGM_FI_DEV_GPU_UTIL", T0, T0 + 20, 1.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20
    msg = str(e.value)
    assert e.value.error_type == "too_large" and "inflated body" in msg and "1,048,576" in msg
    assert url in msg and "DCGM_FI_DEV_GPU_UTIL" in msg


def test_body_larger_than_the_bound_is_refused(server):
    # 100,000 points of 20 bytes: 2 MB of JSON, a 1 MiB bound: refused before it is decoded
    vals = [[T0 + i, "50"] for i in range(100_000)]
    body = json.dumps(matrix(vals)).encode()
    assert len(body) > 2**20
    url = server(body)
    src = promsource.PrometheusSource(url, max_attempts=1, max_response_bytes=2**20)
    with pytest.raises(
        promsource.PrometheusQueryError, match=r"the body of the response is larger"
    ):
        src.query_range("up", T0, T0 + 20, 1.0)


def test_a_gzip_body_within_the_bound_reads(server):
    body = gzip.compress(json.dumps(matrix([[T0 + i, "50"] for i in range(21)])).encode())
    url = server(body, {"Content-Encoding": "gzip"})
    _, f, _ = fetch(url)
    assert f.height == 21


def test_errors_name_the_server_and_the_query(server):
    # a malformed sample in a live answer: the error names the server and the query, not <json>
    url = server(json.dumps(matrix([[T0, "50"], ["x", "y"]])).encode())
    with pytest.raises(dcgm.DcgmFormatError) as e:
        fetch(url)
    msg = str(e.value)
    assert (
        "<json>" not in msg
        and url in msg
        and "query_range" in msg
        and "DCGM_FI_DEV_GPU_UTIL" in msg
    )
    # an error envelope in a 200: the PrometheusQueryError names the server too
    url2 = server(
        json.dumps({"status": "error", "errorType": "bad_data", "error": "nope"}).encode()
    )
    with pytest.raises(promsource.PrometheusQueryError) as e2:
        fetch(url2)
    assert f"Prometheus {url2}/api/v1/query_range" in str(e2.value)


def test_a_success_without_a_result_names_the_server_and_query():
    # the count query answers {"status": "success", "data": {}}: one PrometheusQueryError naming
    # the server and the query, never a KeyError
    class NoResult(_Server):
        def do_POST(self):  # noqa: N802 (http.server API)
            self.rfile.read(int(self.headers["Content-Length"]))
            self._send(json.dumps({"status": "success", "data": {}}).encode())

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NoResult)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}"
        with pytest.raises(promsource.PrometheusQueryError) as e:
            fetch(url)
    finally:
        srv.shutdown()
        srv.server_close()
    msg = str(e.value)
    assert e.value.error_type == "bad_response" and f"Prometheus {url}/api/v1/query" in msg
    assert "count_over_time" in msg and "KeyError" in msg
