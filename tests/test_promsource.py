"""trainperf.promsource against a REAL Prometheus server holding backfilled synthetic telemetry,
and its retry / error handling against a fake HTTP server.

The server fixture needs ``prometheus`` and ``promtool`` (Debian: ``apt-get install prometheus``;
.ci/run installs it); without them those tests are skipped with that reason.
"""

from __future__ import annotations

import datetime as dt
import http.server
import json
import socket
import threading

import papermill as pm
import polars as pl
import promserver
import pytest
from helpers import ROOT
from polars.testing import assert_frame_equal

from trainperf import dcgm, promsource, telemetry
from trainperf.markup import md_text
from trainperf.synthetic import telemetry as synthetic

OLD_HOST = "oldnode-1"  # a host exported with dcgm-exporter's old `Hostname` label spelling
OLD_JOB = "777"


def _phases() -> pl.DataFrame:
    """The bundled Eos run's first ~20 minutes of phases (init + 5 blocks and evaluations)."""
    ph = synthetic.default_phases()
    return ph.filter(pl.col("end") <= ph["start"].min() + dt.timedelta(minutes=20))


CFG = synthetic.SyntheticConfig(n_nodes=4, job_nodes=3, interval_s=10.0)


def _old_spelling_lines(phases: pl.DataFrame) -> tuple[list[str], pl.DataFrame]:
    """One tensor-activity series labelled ``Hostname=`` (pre-2026 dcgm-exporter), 10-s samples."""
    t0 = int(phases["start"].min().timestamp()) // 10 * 10
    t1 = int(phases["end"].max().timestamp())
    lab = f'gpu="0",UUID="GPU-old-0",Hostname="{OLD_HOST}",hpc_job="{OLD_JOB}",synthetic="true"'
    lines, rows = [], []
    for i, t in enumerate(range(t0, t1, 10)):
        v = round(0.3 + 0.001 * (i % 50), 6)
        lines.append(f"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{lab}}} {v:.6f} {t}.000\n")
        rows.append((t, v))
    frame = pl.DataFrame(
        {
            "timestamp": [dt.datetime.fromtimestamp(t, dt.UTC) for t, _ in rows],
            "value": [v for _, v in rows],
        }
    )
    return lines, frame


@pytest.fixture(scope="module")
def prom(tmp_path_factory):
    """(url, phases, files frame, old-spelling frame): a real server on 127.0.0.1, stopped after."""
    missing = promserver.binaries_missing()
    if missing:
        pytest.skip(
            f"{' and '.join(missing)} not on PATH: install the Debian package 'prometheus' "
            "(apt-get install -y prometheus; .ci/run does)"
        )
    tmp = tmp_path_factory.mktemp("prom")
    ph = _phases()
    om = tmp / "data.om"
    promserver.write_openmetrics(CFG, ph, om)
    extra, old = _old_spelling_lines(ph)
    text = om.read_text()
    assert text.endswith("# EOF\n")
    om.write_text(text[: -len("# EOF\n")] + "".join(extra) + "# EOF\n")
    server = promserver.LocalPrometheus.from_openmetrics(om, tmp / "server")
    server.start()
    files = pl.concat(list(synthetic.iter_frames(CFG, ph)))
    try:
        yield server.url, ph, files, old
    finally:
        proc = server.proc
        server.stop()
        assert proc is None or proc.poll() is not None  # no process left behind


def _window(ph: pl.DataFrame) -> tuple[dt.datetime, dt.datetime]:
    # inside the data (which has 120-s margins): no look-back question at the edges
    return ph["start"].min(), ph["end"].max()


def _in(frame: pl.DataFrame, s, e) -> pl.DataFrame:
    return frame.filter((pl.col("timestamp") >= s) & (pl.col("timestamp") <= e))


KEY = ["hostname", "gpu", "field", "labels", "timestamp"]


# --------------------------------------------------------------------------------------
# raw fetch
# --------------------------------------------------------------------------------------


def test_fetch_returns_exactly_the_stored_samples(prom):
    url, ph, files, _ = prom
    src = promsource.PrometheusSource(url)
    s, e = _window(ph)
    got = src.fetch(s, e, hostnames=synthetic.hostnames(CFG))
    assert got.schema == pl.Schema(dcgm.SCHEMA)
    want = _in(files, s, e)
    assert got.height == want.height > 0
    assert got.sort(KEY).equals(want.sort(KEY))
    st = src.stats
    assert st.requests > 0 and st.retries == 0
    assert 0 < st.bytes_received < st.bytes_decoded  # gzip on the wire


def test_scrape_interval_is_measured(prom):
    url, ph, _, _ = prom
    src = promsource.PrometheusSource(url)
    s, e = _window(ph)
    sels = src._selectors("DCGM_FI_DEV_POWER_USAGE", None)
    assert src.scrape_interval(sels, s, e) == 10.0


def test_chunking_gives_the_same_frame(prom):
    url, ph, _, _ = prom
    s, e = _window(ph)
    one = promsource.PrometheusSource(url)
    a = one.fetch(s, e, fields=[1004, "node_network_receive_bytes_total"])
    small = promsource.PrometheusSource(url, max_points_per_series=17, max_points_per_request=300)
    b = small.fetch(s, e, fields=[1004, "node_network_receive_bytes_total"])
    assert small.stats.requests > one.stats.requests + 20  # many more range queries
    assert a.height > 0 and a.sort(KEY).equals(b.sort(KEY))


def test_point_budget_coarsens_the_step(prom):
    url, ph, _, _ = prom
    src = promsource.PrometheusSource(url)
    s, e = _window(ph)
    got = src.fetch(s, e, fields=[155], hostnames=["gpu001"], max_points=20)
    per_series = got.group_by("gpu").len()["len"]
    assert per_series.max() <= 20 and per_series.min() >= 18
    # each point is a stored sample (the latest within its step), never a repeat
    full = src.fetch(s, e, fields=[155], hostnames=["gpu001"])
    # (stamped at the step time: the latest stored sample at or before it)
    joined = got.sort("timestamp").join_asof(
        full.sort("timestamp"),
        on="timestamp",
        by="gpu",
        strategy="backward",
        suffix="_f",
        check_sortedness=False,
    )
    assert joined["value_f"].null_count() == 0
    assert (joined["value"] == joined["value_f"]).all()


def test_job_selection_and_both_host_spellings(prom):
    url, ph, files, old = prom
    src = promsource.PrometheusSource(url)
    s, e = _window(ph)
    assert src.job_hostnames(CFG.job_id, s, e) == synthetic.job_hostnames(CFG)
    assert src.job_hostnames(OLD_JOB, s, e) == [OLD_HOST]
    got = src.fetch(s, e, fields=[1004], hostnames=[OLD_HOST, "gpu004"])
    assert set(got["hostname"].unique()) == {OLD_HOST, "gpu004"}
    mine = got.filter(pl.col("hostname") == OLD_HOST).sort("timestamp")
    assert mine["value"].to_list() == _in(old, s, e)["value"].to_list()
    # job -> its hosts -> every series of them (GPU and NIC), as telemetry.select_job does
    job = src.fetch(s, e, fields=[1004, "node_network_transmit_bytes_total"], job_id=CFG.job_id)
    want = (
        telemetry.select_job(files, job_id=CFG.job_id, start=s, end=e)
        .filter(pl.col("field").is_in(["DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", telemetry.NIC_TX]))
        .collect()
    )
    assert job.sort(KEY).equals(want.sort(KEY))
    with pytest.raises(ValueError, match="not found"):
        src.fetch(s, e, fields=[1004], job_id="no-such-job")


def test_analysis_on_fetched_frame_equals_files(prom):
    url, ph, files, _ = prom
    src = promsource.PrometheusSource(url)
    s, e = _window(ph)
    raw = src.fetch(s, e, hostnames=synthetic.hostnames(CFG))
    a = telemetry.link_throughput(files, ph)
    b = telemetry.link_throughput(raw, ph)
    # same samples, so equal up to floating-point summation order (the analysis batches by host)
    assert a.height == 4 * 8
    assert_frame_equal(a, b, rel_tol=1e-12, abs_tol=0.0)
    ka = telemetry.phase_stats(files, ph, level="kind")
    kb = telemetry.phase_stats(raw, ph, level="kind")
    assert_frame_equal(ka, kb, rel_tol=1e-12, abs_tol=0.0)


# --------------------------------------------------------------------------------------
# push-down
# --------------------------------------------------------------------------------------


def _close(a: pl.Series, b: pl.Series, rel: float = 1e-12) -> bool:
    return bool(((a - b).abs() <= rel * a.abs().clip(lower_bound=1.0)).all())


def test_phase_stats_pushdown_equals_files(prom):
    url, ph, files, _ = prom
    src = promsource.PrometheusSource(url)
    hosts = synthetic.hostnames(CFG)
    want = telemetry.phase_stats(files, ph, level="gpu")
    got = src.phase_stats(ph, level="gpu", hostnames=hosts)
    assert got.columns == want.columns and got.schema == want.schema
    keys = ["phase", "kind", "index", "hostname", "gpu", "metric", "unit", "n"]
    assert got.select(keys).equals(want.select(keys))
    for c in ("mean", "p05", "p25", "p50", "p75", "p95"):
        assert _close(want[c], got[c]), c
    assert got.height > 0


def test_pushdown_moves_fewer_bytes_than_raw(prom):
    url, ph, _, _ = prom
    src = promsource.PrometheusSource(url)
    s, e = _window(ph)
    ids = [f for f, _ in telemetry.ACTIVITY_FIELDS.values()]
    src.fetch(s, e, fields=ids)
    raw = src.stats.bytes_received
    src.reset_stats()
    node = src.window_stats(s, e, fields=ids, level="node")
    job = src.job_means(s, e, job_id=CFG.job_id, fields=ids)
    assert node.height == 4 * 5 + 1 and job.height == 5  # + the old-spelling host (1 field)
    assert src.stats.bytes_received * 5 < raw


def test_window_stats_gpu_and_node(prom):
    url, ph, files, _ = prom
    src = promsource.PrometheusSource(url)
    train = ph.filter(pl.col("kind") == "train").row(0, named=True)
    s, e = train["start"], train["end"]
    win = files.filter(
        (pl.col("timestamp") >= s)
        & (pl.col("timestamp") < e)  # half-open, like the phases
        & (pl.col("field_id") == 155)
    )
    gpu = src.window_stats(s, e, fields=[155], level="gpu").filter(pl.col("hostname") != OLD_HOST)
    want = (
        win.group_by("hostname", "gpu")
        .agg(
            pl.len().alias("n"),
            pl.col("value").mean().alias("mean"),
            pl.col("value").min().alias("min"),
            pl.col("value").max().alias("max"),
            pl.col("value").quantile(0.95, "linear").alias("p95"),
        )
        .sort("hostname", "gpu")
    )
    assert gpu.height == 32 and (gpu["n_series"] == 1).all()
    assert gpu["n"].to_list() == want["n"].to_list()
    for c in ("mean", "min", "max", "p95"):
        assert _close(want[c], gpu[c]), c
    node = src.window_stats(s, e, fields=[155], level="node")
    wn = (
        win.group_by("hostname")
        .agg(
            pl.len().alias("n"),
            pl.col("value").mean().alias("mean"),
            pl.col("value").max().alias("max"),
        )
        .sort("hostname")
    )
    assert node["hostname"].to_list() == wn["hostname"].to_list()
    assert node["n"].to_list() == wn["n"].to_list()
    assert _close(wn["mean"], node["mean"]) and _close(wn["max"], node["max"])
    # spread over the node's GPUs of the per-GPU means
    g1 = want.filter(pl.col("hostname") == "gpu001")["mean"]
    assert node.filter(pl.col("hostname") == "gpu001")["gpu_mean_p50"].item() == pytest.approx(
        g1.quantile(0.5, "linear"), rel=1e-12
    )


def test_job_means_by_node_list(prom):
    url, ph, files, old = prom
    src = promsource.PrometheusSource(url)
    s, e = _window(ph)
    got = src.job_means(s, e, hostnames="gpu[001-003]", fields=[1004, 155])
    jw = files.filter(
        pl.col("hostname").is_in(synthetic.job_hostnames(CFG))
        & (pl.col("timestamp") >= s)
        & (pl.col("timestamp") < e)
    )
    for fid in (1004, 155):
        r = got.filter(pl.col("field_id") == fid).row(0, named=True)
        v = jw.filter(pl.col("field_id") == fid)["value"]
        assert (r["n_nodes"], r["n_series"], r["n"]) == (3, 24, v.len())
        assert r["mean"] == pytest.approx(v.mean(), rel=1e-12)
    by_job = src.job_means(s, e, job_id=CFG.job_id, fields=[1004, 155])
    assert by_job.equals(got)
    # the old `Hostname` spelling is matched too
    o = src.job_means(s, e, job_id=OLD_JOB, fields=[1004]).row(0, named=True)
    ow = old.filter((pl.col("timestamp") >= s) & (pl.col("timestamp") < e))["value"]
    assert o["n_nodes"] == 1 and o["mean"] == pytest.approx(ow.mean(), rel=1e-12)


# --------------------------------------------------------------------------------------
# errors and retries
# --------------------------------------------------------------------------------------


def test_4xx_error_names_the_query(prom):
    url, ph, _, _ = prom
    src = promsource.PrometheusSource(url)
    with pytest.raises(promsource.PrometheusQueryError) as ei:
        src.query("sum(DCGM_FI_DEV_POWER_USAGE", ph["end"].max())
    err = ei.value
    assert err.status == 400 and err.error_type == "bad_data"
    assert "sum(DCGM_FI_DEV_POWER_USAGE" in str(err) and "parse error" in str(err)
    assert src.stats.requests == 1  # 4xx is not retried
    s, e = _window(ph)
    with pytest.raises(promsource.PrometheusQueryError, match="11,000 points"):
        src.query_range("DCGM_FI_DEV_POWER_USAGE", s, e, 0.01)


class _Fake(http.server.BaseHTTPRequestHandler):
    """Answers 503 for the first ``fail`` requests, then a valid vector envelope."""

    fail = 2
    seen: list[str] = []

    def do_POST(self):  # noqa: N802 (http.server API)
        n = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(n)
        type(self).seen.append(self.path)
        if len(type(self).seen) <= type(self).fail:
            body = json.dumps(
                {"status": "error", "errorType": "unavailable", "error": "try later"}
            ).encode()
            self.send_response(503)
        else:
            body = json.dumps(
                {
                    "status": "success",
                    "data": {
                        "resultType": "vector",
                        "result": [
                            {
                                "metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0"},
                                "value": [1.0, "42"],
                            }
                        ],
                    },
                }
            ).encode()
            self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


@pytest.fixture
def fake():
    def make(fail: int):
        handler = type("H", (_Fake,), {"fail": fail, "seen": []})
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        th = threading.Thread(target=srv.serve_forever, daemon=True)
        th.start()
        servers.append((srv, th))
        return f"http://127.0.0.1:{srv.server_address[1]}", handler

    servers: list = []
    yield make
    for srv, th in servers:
        srv.shutdown()
        srv.server_close()
        th.join(5)


@pytest.mark.filterwarnings(
    "ignore:.*sample times outside.*:trainperf.dcgm.fields.DcgmWarning"
)  # the fake server's 1 s times
def test_retries_on_5xx_then_succeeds(fake):
    url, h = fake(fail=2)
    src = promsource.PrometheusSource(url, max_attempts=4, backoff_s=0.01)
    doc = src.query("DCGM_FI_DEV_GPU_UTIL", 1.0)
    assert dcgm.read_prometheus_api(doc)["value"].to_list() == [42.0]
    assert len(h.seen) == 3 and src.stats.requests == 3 and src.stats.retries == 2


def test_gives_up_after_max_attempts(fake):
    url, h = fake(fail=10**6)
    src = promsource.PrometheusSource(url, max_attempts=3, backoff_s=0.01)
    with pytest.raises(promsource.PrometheusUnavailableError) as ei:
        src.query("up", 1.0)
    assert len(h.seen) == 3
    assert ei.value.status == 503 and "after 3 attempts" in str(ei.value)
    assert "try later" in str(ei.value) and "query: up" in str(ei.value)


def test_refused_connection_is_retried_then_reported(fake):
    url, _ = fake(fail=0)
    port = int(url.rsplit(":", 1)[1])
    dead = f"http://127.0.0.1:{port}"
    # find a port nobody listens on: bind, note it, close
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    src = promsource.PrometheusSource(dead, max_attempts=2, backoff_s=0.01, timeout_s=2)
    with pytest.raises(promsource.PrometheusUnavailableError, match="no response after 2"):
        src.query("up", 1.0)
    assert src.stats.requests == 2


def test_is_url():
    assert promsource.is_url("http://127.0.0.1:9090") and promsource.is_url(" HTTPS://x")
    assert not promsource.is_url("data/x.prom") and not promsource.is_url(None)
    with pytest.raises(ValueError, match="not an http"):
        promsource.PrometheusSource("data/x.prom")


@pytest.mark.slow
def test_telemetry_notebook_runs_from_the_prometheus_server(prom, tmp_path):
    """The telemetry chapter's notebook with a Prometheus URL as its source (the cluster-scale path)."""
    url, ph, files, old = prom
    out = tmp_path / "telemetry.ipynb"
    pm.execute_notebook(
        str(ROOT / "notebooks" / "telemetry.ipynb"),
        str(out),
        parameters={
            "telemetry_source": url,
            "figures_dir": "",
            "scratch_dir": str(tmp_path / "scratch"),
        },
        cwd=str(ROOT / "notebooks"),
        kernel_name="python3",
        progress_bar=False,
    )
    text = out.read_text()
    # more than one job label in the data (the old-spelling series has none): every host is analysed
    n_hosts = (
        files["hostname"].n_unique() + 1
    )  # plus OLD_HOST, the old-spelling series of another job
    shown = "".join(
        "".join(o["data"]["text/markdown"])
        for c in json.loads(text)["cells"]
        for o in c.get("outputs", [])
        if "text/markdown" in o.get("data", {})
    )
    assert f"Telemetry: {md_text(f'Prometheus {url}')}" in shown  # the source as text, never markup
    assert f"{n_hosts} hosts analysed" in text
    assert "tbl-telemetry-rails" in text and '"ename"' not in text
