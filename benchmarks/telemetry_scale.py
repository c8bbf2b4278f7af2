"""Benchmark: cluster-scale telemetry analysis, from files and from a Prometheus server.

(a) File path: :mod:`trainperf.synthetic.telemetry` generator -> partitioned Parquet store
(:func:`trainperf.dcgm.write_parquet_partitioned`) -> lazy analysis of the store
(:func:`trainperf.telemetry.phase_stats` at GPU level + :func:`trainperf.telemetry.link_throughput`
of the training blocks), at 1x, 4x and 16x a base size.

* **1x** = the default synthetic cluster (100 nodes x 8 GPUs = 800 GPUs, 64 of the nodes in the job,
  NIC counters on 8 rails) during one MLPerf GPT-3 run of the bundled Eos log (54 min of phases
  + 2 min of margins), sampled every 10 s: 3.9 M rows, 17 MB of Parquet.
* **kx** = k copies of that run back to back (the phases of the log tiled in time, each copy's
  phases renamed ``r02_train_01``...), so the data *and* the phase-attributed samples grow k-fold:
  16x = 62 M rows, about 15 h of cluster time. Scaling in time (not nodes) is the case the
  colleague measured (800 GPUs x 24 h: 6.3 GB peak).
* **idle** (optional, ``--idle``): the largest size's duration but one run only, the rest idle
  (``margin_s``): the phases cover 6 % of the store, so the time window of the phases should
  prune most of the scan.

Generation and analysis each run in a fresh subprocess; the peak memory is that process'
``resource.getrusage(RUSAGE_SELF).ru_maxrss`` (interpreter + imports included; the bare imports
are about 70 MB). Target: analysis peak < 2 GB at 16x, time linear in size.

(b) Prometheus path, at 1x by default (``--prom-size``): the same generator writes OpenMetrics
text, ``promtool tsdb create-blocks-from openmetrics`` backfills a TSDB, ``prometheus`` serves it
on 127.0.0.1, and :class:`trainperf.promsource.PrometheusSource` fetches the activity fields
(raw ``query_range`` at the native 10 s step, chunked) versus the same statistics pushed down
as PromQL (``avg_over_time``/``quantile_over_time`` per GPU and phase). Bytes are those on the
wire (gzip, as Prometheus sends them) and after decompression. Skipped with a message when
``prometheus``/``promtool`` are not on PATH (Debian: ``apt-get install prometheus``).

Usage::

    python benchmarks/telemetry_scale.py               # 1x, 4x, 16x + Prometheus at 1x
    python benchmarks/telemetry_scale.py --quick       # smoke: 10 nodes, 1x and 2x, small Prometheus
    python benchmarks/telemetry_scale.py --sizes 1 4 --no-prom --json out.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import polars as pl

from trainperf import promsource, telemetry
from trainperf.synthetic import telemetry as synthetic

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import promserver  # noqa: E402  tests/promserver.py, the suite's Prometheus server

CHILD = r"""
import json, resource, sys, time
import polars as pl
from trainperf import dcgm, telemetry

from trainperf.synthetic import telemetry as synthetic
mode, store, k, nodes, idle = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
sys.path.insert(0, sys.argv[6])
hosts = int(sys.argv[7])  # > 0: only the first `hosts` hosts of the cluster (a partial store)
from telemetry_scale import tiled_phases, config

base = synthetic.default_phases()
ph = base if idle else tiled_phases(base, k)
cfg = config(nodes, base, k, idle)
out = {"mode": mode, "k": k, "idle": idle}
def cpu():  # this process' CPU seconds, every thread (load on a shared machine barely moves it)
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
t, c = time.perf_counter(), cpu()
if mode == "generate" and hosts:  # the first hosts' frames of the whole cluster's generator
    import pathlib
    pathlib.Path(store).mkdir(parents=True, exist_ok=True)
    files, seen = [], set()
    for frame in synthetic.iter_frames(cfg, ph):
        seen.add(frame["hostname"][0])
        if len(seen) > hosts:
            break
        files += dcgm.write_parquet_partitioned(frame, store)
    files = sorted(set(files))
    out["files"] = len(files)
    out["parquet_bytes"] = sum(p.stat().st_size for p in files)
    out["rows"] = dcgm.scan_parquet(store).select(pl.len()).collect().item()
elif mode == "generate":
    files = synthetic.write_parquet(cfg, ph, store)
    out["files"] = len(files)
    out["parquet_bytes"] = sum(p.stat().st_size for p in files)
    out["rows"] = dcgm.scan_parquet(store).select(pl.len()).collect().item()
elif mode in ("analyse", "analyse_stats", "analyse_link"):
    lf = dcgm.scan_parquet(store)
    st = telemetry.phase_stats(lf, ph, level="gpu") if mode != "analyse_link" else None
    lt = telemetry.link_throughput(lf, ph, kind="train") if mode != "analyse_stats" else None
elif mode == "analyse_sink":  # the per-GPU result written to Parquet, batch by batch
    import os, tempfile
    lf = dcgm.scan_parquet(store)
    fd, dest = tempfile.mkstemp(suffix=".parquet", prefix="phase_stats_")
    os.close(fd)
    telemetry.write_phase_stats(lf, ph, dest)
    lt = telemetry.link_throughput(lf, ph, kind="train")
    out["seconds_before_check"] = time.perf_counter() - t
    out["cpu_before_check"] = cpu() - c
    out["phase_stats_rows"] = pl.scan_parquet(dest).select(pl.len()).collect().item()
    out["phase_stats_file_mb"] = os.path.getsize(dest) / 1e6
    out["link_rows"] = lt.height
    os.unlink(dest)
if mode in ("analyse_stats", "analyse_link"):
    out["rows"] = (st if st is not None else lt).height
elif mode == "analyse":
    out["phase_stats_rows"] = st.height
    out["phase_stats_mb"] = st.estimated_size() / 1e6
    # its resident floor: every String value is a 16-byte view (estimated_size counts the string
    # bytes only), a Categorical one a 4-byte code (UInt32), every number its width; validity
    # bitmaps, buffers of long strings and the category tables on top
    def width(t):
        return 16 if t == pl.String else 8 if t in (pl.Float64, pl.Int64, pl.UInt64) else 4
    out["phase_stats_resident_mb"] = st.height * sum(width(t) for t in st.dtypes) / 1e6
    out["link_rows"] = lt.height
    out["tensor_train_mean"] = st.filter(
        (pl.col("kind") == "train") & (pl.col("metric") == "tensor_active")
    )["mean"].mean()
    out["nic_mean_Bps"] = lt["nic_Bps"].mean()
    out["nvlink_mean_Bps"] = lt["nvlink_Bps"].mean()
elif mode == "baseline":
    pass
out["seconds"] = out.pop("seconds_before_check", time.perf_counter() - t)
out["cpu_s"] = out.pop("cpu_before_check", cpu() - c)
# VmHWM is this process' own peak; ru_maxrss would carry the parent's RSS over fork + exec on Linux
try:
    hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0].split()[1]
    out["peak_rss"] = int(hwm) * 1024
except (OSError, IndexError):
    out["peak_rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps(out))
"""


def tiled_phases(phases, k: int):
    """k copies of the run's phases back to back (gap = the run's own margin), renamed per copy."""
    if k == 1:
        return phases
    span = phases["end"].max() - phases["start"].min() + dt.timedelta(seconds=60)
    parts = []
    for i in range(k):
        p = phases.with_columns(pl.col("start") + span * i, pl.col("end") + span * i)
        if i:
            p = p.with_columns((pl.lit(f"r{i + 1:02d}_") + pl.col("phase")).alias("phase"))
        parts.append(p)
    return pl.concat(parts)


def config(nodes: int, base, k: int, idle: bool):
    """The synthetic configuration of one size (``idle``: one run, idle margins to k runs' length)."""
    if not idle:
        return synthetic.SyntheticConfig(n_nodes=nodes, job_nodes=min(64, nodes))
    span = (base["end"].max() - base["start"].min()).total_seconds() + 60
    return synthetic.SyntheticConfig(
        n_nodes=nodes, job_nodes=min(64, nodes), margin_s=120.0 + span * (k - 1) / 2
    )


def run_child(
    mode: str, store: Path, k: int, nodes: int, idle: bool = False, hosts: int = 0
) -> dict:
    """One mode of :data:`CHILD` in a fresh interpreter; ``hosts`` > 0: only the first ``hosts``
    hosts of the ``nodes``-node cluster (their samples are those of the whole cluster's store)."""
    env = dict(os.environ, POLARS_MAX_THREADS=os.environ.get("POLARS_MAX_THREADS", ""))
    if not env["POLARS_MAX_THREADS"]:
        env.pop("POLARS_MAX_THREADS")
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            CHILD,
            mode,
            str(store),
            str(k),
            str(nodes),
            "1" if idle else "0",
            str(Path(__file__).resolve().parent),
            str(hosts),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
    )
    if r.returncode:
        raise RuntimeError(f"{mode} k={k} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------------------
# (a) files
# --------------------------------------------------------------------------------------


STORES_ENV = "TRAINPERF_BENCH_STORES"
"""Environment variable naming a folder where the generated stores are kept and reused."""

JOBS_ENV = "TRAINPERF_BENCH_JOBS"
"""Environment variable: how many sizes (and of a size its in-memory and Parquet-writing
analyses) run side by side, each in its own child process (default 1: one after the other).
CPU seconds and peak memory are each child's own either way; on a shared machine side by side
takes this run a larger share of the cores, so the wall times shorten."""


def _store_key(k: int, nodes: int, idle: bool, hosts: int = 0) -> str:
    """:func:`trainperf.synthetic.telemetry.store_key` of one size: configuration, phases,
    generator source, field table and polars version (and the host count of a partial store)."""
    base = synthetic.default_phases()
    key = synthetic.store_key(config(nodes, base, k, idle), base if idle else tiled_phases(base, k))
    return key + (f" first {hosts} hosts" if hosts else "")


def _generated(store: Path, k: int, nodes: int, idle: bool, keep: bool, hosts: int = 0) -> dict:
    """Generate the store of one size in a child process; with ``keep``, reuse the one already
    in ``store`` when its key (written last, after its row count) matches. ``hosts`` > 0: only
    the first ``hosts`` hosts."""
    key_file, info = store / "BENCH.key", store / "BENCH.json"
    key = _store_key(k, nodes, idle, hosts) if keep else None
    if keep and key_file.is_file() and key_file.read_text() == key and info.is_file():
        return {**json.loads(info.read_text()), "reused": True}
    shutil.rmtree(store, ignore_errors=True)
    g = run_child("generate", store, k, nodes, idle, hosts)
    if keep:
        info.write_text(json.dumps(g))
        key_file.write_text(key)
    return {**g, "reused": False}


def bench_files(
    sizes: list[int],
    nodes: int,
    tmp: Path,
    idle: bool,
    keep: Path | None = None,
    sink_from: int | None = None,
    sink_only_from: int | None = None,
    hosts_at: dict[int, int] | None = None,
) -> list[dict]:
    """Generate (or, with ``keep``, reuse from that folder) and analyse each size.

    ``keep`` defaults to the folder named by ``TRAINPERF_BENCH_STORES``; stores there are not
    deleted (a 64x store takes about 9 minutes to generate on 2 cores and 1 GB of disk).
    ``sink_from``: sizes from this one on are also analysed with the per-GPU result written to
    Parquet (``telemetry.write_phase_stats``), its figures under ``"sink"``; from
    ``sink_only_from`` on only that way (no in-memory result: at 256x it alone is about 4 GB).
    ``hosts_at``: size -> the number of the cluster's first hosts generated and analysed at that
    size (a partial store; ``row["hosts"]``), where the whole store would take too long."""
    if keep is None and os.environ.get(STORES_ENV):
        keep = Path(os.environ[STORES_ENV])
    jobs = max(1, int(os.environ.get(JOBS_ENV) or 1))
    cases = [(k, False) for k in sizes] + ([(max(sizes), True)] if idle else [])

    def one(k: int, is_idle: bool) -> dict:
        hosts = (hosts_at or {}).get(k, 0) if not is_idle else 0
        name = f"store_{k}{'_idle' if is_idle else ''}{f'_first{hosts}' if hosts else ''}"
        store = (keep / f"{name}_{nodes}n") if keep else tmp / name
        g = _generated(store, k, nodes, is_idle, keep is not None, hosts)
        sink_only = sink_only_from is not None and k >= sink_only_from and not is_idle
        also_sink = sink_from is not None and k >= sink_from and not is_idle and not sink_only
        row = {"size": f"{k}x" + (" idle" if is_idle else ""), "k": k, "idle": is_idle, **g}
        row["hosts"] = hosts
        row["sink_only"] = sink_only
        row["generate_s"] = g["seconds"]
        row["generate_peak_rss"] = g["peak_rss"]
        modes = (
            ["analyse_sink"] if sink_only else ["analyse"] + (["analyse_sink"] if also_sink else [])
        )
        with ThreadPoolExecutor(max_workers=min(jobs, len(modes))) as pool:  # each a child process
            got = list(pool.map(lambda m: run_child(m, store, k, nodes, is_idle, hosts), modes))
        a = got[0]
        if sink_only or also_sink:
            row["sink"] = got[-1]
        row["analyse_s"] = a["seconds"]
        row["analyse_cpu_s"] = a["cpu_s"]
        row["analyse_peak_rss"] = a["peak_rss"]
        row["result"] = {k2: a[k2] for k2 in a if k2 not in ("mode", "k", "idle", "cpu_s")}
        if also_sink:
            print(
                f"  {row['size']:<9} write_phase_stats: analyse {row['sink']['seconds']:7.1f} s "
                f"{row['sink']['peak_rss'] / 1e6:7.0f} MB, {row['sink']['cpu_s']:.1f} s CPU",
                flush=True,
            )
        print(
            f"  {row['size']:<9} rows {g['rows']:>12,}  generate {g['seconds']:7.1f} s "
            f"{g['peak_rss'] / 1e6:7.0f} MB   analyse {a['seconds']:7.1f} s "
            f"{a['peak_rss'] / 1e6:7.0f} MB, {a['cpu_s']:.1f} s CPU"
            + ("  (store reused)" if g["reused"] else ""),
            flush=True,
        )
        if keep is None:
            shutil.rmtree(store)
        return row

    if jobs == 1:
        return [one(k, i) for k, i in cases]
    # sizes side by side (largest first), each size's children in their own processes: CPU
    # seconds and peaks are each child's own; only wall time shows the neighbours
    order = sorted(range(len(cases)), key=lambda i: -cases[i][0])
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {i: pool.submit(one, *cases[i]) for i in order}
        return [futures[i].result() for i in range(len(cases))]


# --------------------------------------------------------------------------------------
# (b) Prometheus
# --------------------------------------------------------------------------------------


def bench_prometheus(nodes: int, tmp: Path) -> dict | None:
    """Backfill one size into a TSDB, serve it on loopback, compare raw vs pushed-down bytes."""
    if shutil.which("prometheus") is None or shutil.which("promtool") is None:
        print(
            "  skipped: prometheus/promtool not on PATH (Debian: apt-get install -y prometheus)",
            flush=True,
        )
        return None
    base = synthetic.default_phases()
    cfg = synthetic.SyntheticConfig(n_nodes=nodes, job_nodes=min(64, nodes))
    t = time.perf_counter()
    om = tmp / "data.om"
    n = promserver.write_openmetrics(cfg, base, om)
    t_om = time.perf_counter() - t
    t = time.perf_counter()
    server = promserver.LocalPrometheus.from_openmetrics(om, tmp / "prom")
    t_fill = time.perf_counter() - t
    out: dict = {"nodes": nodes, "samples": n, "openmetrics_bytes": om.stat().st_size}
    try:
        with server:
            src = promsource.PrometheusSource(server.url)
            fields = telemetry.ACTIVITY_FIELDS
            start, end = base["start"].min(), base["end"].max()
            # raw: every sample of the activity fields in the run's window, native step
            t = time.perf_counter()
            raw = src.fetch(start, end, fields=[f for f, _ in fields.values()])
            st_raw = telemetry.phase_stats(raw, base, level="gpu")
            out["raw"] = {
                "seconds": time.perf_counter() - t,
                "rows": raw.height,
                **src.stats.as_dict(),
            }
            del raw
            src.reset_stats()
            t = time.perf_counter()
            st_push = src.phase_stats(base, level="gpu", fields=fields)
            out["pushdown"] = {
                "seconds": time.perf_counter() - t,
                "rows": st_push.height,
                **src.stats.as_dict(),
            }
            src.reset_stats()
            t = time.perf_counter()
            ids = [f for f, _ in fields.values()]
            nd = src.window_stats(start, end, fields=ids, level="node")
            jm = src.job_means(start, end, job_id=cfg.job_id, fields=ids)
            out["pushdown_run"] = {
                "seconds": time.perf_counter() - t,
                "rows": nd.height + jm.height,
                **src.stats.as_dict(),
            }
            j = st_raw.join(
                st_push, on=["phase", "hostname", "gpu", "metric"], how="inner", suffix="_p"
            )
            out["max_abs_diff_mean"] = j.select(
                (pl.col("mean") - pl.col("mean_p")).abs().max()
            ).item()
            out["max_abs_diff_p50"] = j.select((pl.col("p50") - pl.col("p50_p")).abs().max()).item()
            out["rows_compared"] = j.height
    finally:
        server.stop()
    out["openmetrics_s"] = t_om
    out["backfill_start_s"] = t_fill
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 16], help="multiples of 1x")
    ap.add_argument("--nodes", type=int, default=100, help="nodes of 1x (8 GPUs each)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 10 nodes, sizes 1 2")
    ap.add_argument("--idle", action="store_true", help="also the largest size with one run")
    ap.add_argument("--no-prom", action="store_true", help="skip the Prometheus part")
    ap.add_argument("--prom-nodes", type=int, default=None, help="nodes for (b); default --nodes")
    ap.add_argument("--json", type=Path, help="also write the results here")
    a = ap.parse_args(argv)
    if a.quick:
        a.sizes, a.nodes = [1, 2], 10
    tmp = Path(tempfile.mkdtemp(prefix="telemetry_scale_"))
    res: dict = {"sizes": a.sizes, "nodes": a.nodes, "cpus": os.cpu_count()}
    try:
        base = run_child("baseline", tmp / "none", 1, a.nodes)
        res["baseline_peak_rss"] = base["peak_rss"]
        print(f"(a) files: 1x = {a.nodes} nodes x 8 GPUs, one MLPerf run at 10 s", flush=True)
        res["files"] = bench_files(a.sizes, a.nodes, tmp, a.idle)
        if not a.no_prom:
            pn = a.prom_nodes or a.nodes
            print(f"(b) Prometheus: {pn} nodes x 8 GPUs, one run", flush=True)
            res["prometheus"] = bench_prometheus(pn, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report(res)
    if a.json:
        a.json.write_text(json.dumps(res, indent=1, default=str))
    return res


def report(res: dict) -> None:
    f = res["files"]
    print(
        f"\n(a) file path (peak RSS includes ~{res['baseline_peak_rss'] / 1e6:.0f} MB: interpreter, imports, the log's phases)"
    )
    hdr = f"{'size':<9}{'rows':>13}{'Parquet MB':>12}{'gen s':>8}{'analyse s':>11}{'s / M rows':>11}{'peak MB':>9}"
    print(hdr)
    for r in f:
        print(
            f"{r['size']:<9}{r['rows']:>13,}{r['parquet_bytes'] / 1e6:>12.0f}{r['generate_s']:>8.1f}"
            f"{r['analyse_s']:>11.1f}{r['analyse_s'] / (r['rows'] / 1e6):>11.2f}"
            f"{r['analyse_peak_rss'] / 1e6:>9.0f}"
        )
    p = res.get("prometheus")
    if p:
        print(
            f"\n(b) Prometheus, {p['nodes']} nodes x 8 GPUs, one run, "
            f"{p['samples']:,} samples backfilled"
        )
        print(f"{'query':<56}{'requests':>9}{'wire MB':>10}{'JSON MB':>10}{'rows':>10}{'s':>8}")
        labels = {
            "raw": "raw query_range (10 s step) + phase_stats on the frame",
            "pushdown": "PromQL per GPU x phase (49 windows)",
            "pushdown_run": "PromQL per node + job over the run",
        }
        for k in ("raw", "pushdown", "pushdown_run"):
            q = p[k]
            print(
                f"{labels[k]:<56}{q['requests']:>9}{q['bytes_received'] / 1e6:>10.2f}"
                f"{q['bytes_decoded'] / 1e6:>10.2f}{q['rows']:>10,}{q['seconds']:>8.1f}"
            )
        r1 = p["raw"]["bytes_received"] / max(p["pushdown"]["bytes_received"], 1)
        r2 = p["raw"]["bytes_received"] / max(p["pushdown_run"]["bytes_received"], 1)
        print(
            f"wire bytes raw / push-down: {r1:.1f}x (per GPU x phase), {r2:.0f}x (per node + job "
            f"over the run); per-GPU x phase stats agree "
            f"within {p['max_abs_diff_mean']:.2g} (mean), {p['max_abs_diff_p50']:.2g} (p50) "
            f"over {p['rows_compared']:,} rows"
        )
    elif "prometheus" in res:
        print("\n(b) Prometheus: skipped (apt-get install -y prometheus)")


if __name__ == "__main__":
    main()
