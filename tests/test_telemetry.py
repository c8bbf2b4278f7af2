"""trainperf.telemetry on hand-made frames whose answers are known by hand."""

from __future__ import annotations

import datetime as dt
import json

import polars as pl
import pytest
from helpers import mllog

from trainperf import dcgm, project_root, telemetry
from trainperf.synthetic import telemetry as synthetic

T0 = dt.datetime(2024, 10, 2, 19, 0, 0, tzinfo=dt.UTC)


def ts(s: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=s)


def phases_frame() -> pl.DataFrame:
    """init [0,10) train_01 [10,20) eval_01 [20,25) train_02 [25,35)."""
    rows = [
        ("init", "init", 0, 0, 10),
        ("train_01", "train", 1, 10, 20),
        ("eval_01", "eval", 1, 20, 25),
        ("train_02", "train", 2, 25, 35),
    ]
    return pl.DataFrame(
        {
            "phase": [r[0] for r in rows],
            "kind": [r[1] for r in rows],
            "index": [r[2] for r in rows],
            "start": [ts(r[3]) for r in rows],
            "end": [ts(r[4]) for r in rows],
            "duration_s": [float(r[4] - r[3]) for r in rows],
        },
        schema=telemetry.PHASE_SCHEMA,
    )


def frame(rows: list[tuple]) -> pl.DataFrame:
    """rows: (t_s, host, gpu, field_id or metric name, value, job, labels dict)."""
    out = []
    for t, host, gpu, f, v, job, labels in rows:
        fid = f if isinstance(f, int) else None
        name = dcgm.FIELDS[f].name if fid is not None else f
        out.append(
            {
                "timestamp": ts(t),
                "hostname": host,
                "gpu": gpu,
                "uuid": None if gpu is None else f"GPU-{host}-{gpu}",
                "entity": "GPU",
                "entity_id": gpu,
                "field_id": fid,
                "field": name,
                "value": float(v),
                "job_id": job,
                "labels": json.dumps(labels or {}, separators=(",", ":")),
            }
        )
    return pl.DataFrame(out, schema=dcgm.SCHEMA)


# tensor activity of one GPU: init 0.0, 0.02 | train_01 0.4, 0.5 | eval 0.2 | train_02 0.44, 0.46 | after
TENSOR = [(0, 0.0), (5, 0.02), (10, 0.4), (15, 0.5), (20, 0.2), (25, 0.44), (30, 0.46), (35, 0.9)]


def tensor_frame() -> pl.DataFrame:
    return frame([(t, "h1", 0, 1004, v, "77", None) for t, v in TENSOR])


# ---------------------------------------------------------------------------------------
# phases
# ---------------------------------------------------------------------------------------


def test_phases_from_log(tmp_path):
    t = 1_700_000_000_000
    lines = [
        mllog("init_start", None, t, event_type="INTERVAL_START"),
        mllog("init_start", None, t + 5, event_type="INTERVAL_START"),  # a second rank
        mllog("init_stop", None, t + 60_000, event_type="INTERVAL_END"),
        mllog("run_start", None, t + 60_001, event_type="INTERVAL_START"),
    ]
    for i in range(2):
        s = t + 61_000 + i * 130_000
        md = {"first_epoch_num": i * 100, "epoch_count": 100}
        lines += [
            mllog("block_start", None, s, md, "INTERVAL_START"),
            mllog("block_start", None, s + 3, md, "INTERVAL_START"),
            mllog("block_stop", None, s + 120_000, md, "INTERVAL_END"),
            mllog("eval_start", None, s + 120_001, {"epoch_num": (i + 1) * 100}, "INTERVAL_START"),
            mllog("eval_stop", None, s + 129_000, {"epoch_num": (i + 1) * 100}, "INTERVAL_END"),
        ]
    p = tmp_path / "result_0.txt"
    p.write_text("\n".join(lines) + "\n")
    ph = telemetry.phases_from_log(p)
    assert ph.schema == pl.Schema(telemetry.PHASE_SCHEMA)
    assert ph["phase"].to_list() == ["init", "train_01", "eval_01", "train_02", "eval_02"]
    assert ph["kind"].to_list() == ["init", "train", "eval", "train", "eval"]
    assert ph["index"].to_list() == [0, 1, 1, 2, 2]
    assert ph["duration_s"].to_list() == pytest.approx([60.0, 120.0, 8.999, 120.0, 8.999])
    base = dt.datetime.fromtimestamp(t / 1000, tz=dt.UTC)
    assert ph["start"][0] == base  # earliest rank
    assert ph["start"][1] == base + dt.timedelta(milliseconds=61_000)


def test_phases_from_bundled_log():
    ph = telemetry.phases_from_log(project_root() / synthetic.DEFAULT_LOG)
    counts = dict(ph.group_by("kind").len().iter_rows())
    assert counts == {"init": 1, "train": 24, "eval": 24}
    # non-overlapping, in time order
    assert (ph["start"].shift(-1).drop_nulls() >= ph["end"].head(ph.height - 1)).all()


def test_shift_phases():
    ph = telemetry.shift_phases(phases_frame(), "2030-01-01T00:00:00Z")
    assert ph["start"][0] == dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
    assert ph["duration_s"].to_list() == phases_frame()["duration_s"].to_list()
    assert (ph["end"] - ph["start"]).to_list() == (
        phases_frame()["end"] - phases_frame()["start"]
    ).to_list()


def test_with_phases_boundaries():
    got = telemetry.with_phases(tensor_frame(), phases_frame()).collect()
    # t=35 is at the end of the last phase: outside (half-open intervals)
    assert got["phase"].to_list() == [
        "init",
        "init",
        "train_01",
        "train_01",
        "eval_01",
        "train_02",
        "train_02",
    ]
    kept = telemetry.with_phases(tensor_frame(), phases_frame(), keep_outside=True).collect()
    assert kept.height == len(TENSOR) and kept["phase"][-1] is None


# ---------------------------------------------------------------------------------------
# per-phase statistics
# ---------------------------------------------------------------------------------------


def test_phase_stats_means_by_hand():
    ph = phases_frame()
    k = telemetry.phase_stats(tensor_frame(), ph, level="kind")
    means = dict(k.select("kind", "mean").iter_rows())
    assert means["init"] == pytest.approx(0.01)
    assert means["train"] == pytest.approx((0.4 + 0.5 + 0.44 + 0.46) / 4)
    assert means["eval"] == pytest.approx(0.2)
    assert k["kind"].to_list() == ["init", "train", "eval"]
    assert k["unit"].unique().to_list() == ["ratio"]
    p = telemetry.phase_stats(tensor_frame(), ph, level="phase")
    assert dict(p.select("phase", "n").iter_rows()) == {
        "init": 2,
        "train_01": 2,
        "eval_01": 1,
        "train_02": 2,
    }
    tr1 = p.filter(pl.col("phase") == "train_01").row(0, named=True)
    assert tr1["mean"] == pytest.approx(0.45)
    assert tr1["p50"] == pytest.approx(0.45)  # linear interpolation of 0.4, 0.5
    assert tr1["p05"] == pytest.approx(0.4 + 0.05 * 0.1)
    g = telemetry.phase_stats(tensor_frame(), ph, level="gpu")
    assert {"hostname", "gpu", "p95"} <= set(g.columns)
    with pytest.raises(ValueError):
        telemetry.phase_stats(tensor_frame(), ph, level="node")


def test_phase_stats_gpu_level_text_columns_are_categorical():
    """level="gpu": phase, kind, hostname, metric, unit Categorical (4-byte codes: the per-GPU
    result has millions of rows at cluster scale); the same values as strings; usable as before
    in filters, sorts and joins with Categorical keys; the small levels keep String."""
    ph = phases_frame()
    g = telemetry.phase_stats(tensor_frame(), ph, level="gpu")
    cat = ["phase", "kind", "hostname", "metric", "unit"]
    assert list(telemetry.GPU_STATS_CATEGORICAL) == cat
    assert all(g.schema[c] == pl.Categorical() for c in cat)
    assert g.schema["index"] == pl.Int32 and g.schema["gpu"] == pl.Int32
    # tensor_frame: one GPU (h1, 0), two samples per phase but one in eval (see the by-hand test)
    assert g["phase"].to_list() == ["init", "train_01", "train_02", "eval_01"]
    assert g["kind"].to_list() == ["init", "train", "train", "eval"]
    assert set(g["hostname"].to_list()) == {"h1"} and set(g["metric"].to_list()) == {
        "tensor_active"
    }
    assert g.filter(pl.col("kind") == "train")["n"].to_list() == [2, 2]
    assert g.filter(pl.col("phase").is_in(["eval_01", "nope"]))["mean"].to_list() == [
        pytest.approx(0.2)
    ]
    other = pl.DataFrame({"hostname": ["h1"], "rack": ["r1"]}).with_columns(
        pl.col("hostname").cast(pl.Categorical)
    )
    assert g.join(other, on="hostname")["rack"].to_list() == ["r1"] * 4
    for level in ("phase", "kind"):
        s = telemetry.phase_stats(tensor_frame(), ph, level=level)
        assert all(s.schema[c] == pl.String for c in cat if c in s.columns), level


def test_phase_stats_lazy_parquet_equals_eager(tmp_path):
    rows = [
        (t, h, g, 1004, v + 0.01 * g, "77", None)
        for t, v in TENSOR
        for h in ("h1", "h2")
        for g in (0, 1)
    ]
    rows += [(t, "h1", 0, 155, 300 + t, "77", None) for t, _ in TENSOR]
    f = frame(rows)
    dcgm.write_parquet_partitioned(f, tmp_path / "store")
    lazy = dcgm.scan_parquet(tmp_path / "store")
    assert isinstance(lazy, pl.LazyFrame)
    a = telemetry.phase_stats(f, phases_frame(), level="gpu")
    b = telemetry.phase_stats(lazy, phases_frame(), level="gpu")
    assert a.equals(b)
    power = telemetry.phase_stats(lazy, phases_frame(), level="kind").filter(
        pl.col("metric") == "power"
    )
    assert dict(power.select("kind", "mean").iter_rows()) == {
        "init": pytest.approx(302.5),
        "train": pytest.approx(300 + (10 + 15 + 25 + 30) / 4),
        "eval": pytest.approx(320.0),
    }
    assert power["unit"].unique().to_list() == ["W"]


def test_timeline_and_heatmap():
    f = frame(
        [(t, h, g, 1004, v, None, None) for t, v in TENSOR for h in ("h1", "h2") for g in (0, 1)]
    )
    tl = telemetry.activity_timeline(f, every="10s")
    assert tl["timestamp"].to_list() == [ts(0), ts(10), ts(20), ts(30)]
    assert tl["n_gpus"].to_list() == [4, 4, 4, 4]
    assert tl["mean"].to_list() == pytest.approx([0.01, 0.45, 0.32, 0.68])
    hm = telemetry.gpu_heatmap(f, every="10s")
    assert hm.height == 4 * 4 and hm["row"][0] == "h1/0"
    assert hm.filter((pl.col("row") == "h2/1") & (pl.col("timestamp") == ts(10)))[
        "value"
    ].item() == (pytest.approx(0.45))
    node = telemetry.gpu_heatmap(f, every="10s", per="node")
    assert node.height == 2 * 4 and node["gpu"].null_count() == node.height


# ---------------------------------------------------------------------------------------
# FLOP/s
# ---------------------------------------------------------------------------------------


def test_tflops_from_tensor_active():
    assert telemetry.tflops_from_tensor_active(0.45, "H100 SXM", "fp8") == pytest.approx(
        0.45 * 1978.9
    )
    assert telemetry.tflops_from_tensor_active(0.45, "H100 SXM", "bf16") == pytest.approx(
        0.45 * 989.4
    )
    with pytest.raises(ValueError):
        telemetry.tflops_from_tensor_active(1.5)
    with pytest.raises(ValueError):
        telemetry.tflops_from_tensor_active(0.5, "A100 SXM", "fp8")  # no FP8 peak


def test_achieved_tflops_and_comparison():
    a = telemetry.achieved_tflops(tensor_frame(), phases_frame(), "H100 SXM")
    train = {r["precision"]: r for r in a.filter(pl.col("kind") == "train").iter_rows(named=True)}
    assert train["fp8"]["achieved_tflops"] == pytest.approx(0.45 * 1978.9)
    assert train["bf16"]["achieved_tflops"] == pytest.approx(0.45 * 989.4)
    assert train["fp8"]["peak_tflops"] == pytest.approx(1978.9)
    c = telemetry.tflops_comparison(a, project_root() / synthetic.DEFAULT_LOG, synthetic=True)
    assert set(c["source"]) == {"telemetry (synthetic)", "MLPerf log"}
    tel = c.filter(pl.col("source") == "telemetry (synthetic)")
    assert tel.height == 2 and tel["fraction_of_peak"].to_list() == pytest.approx([0.45, 0.45])
    log = c.filter(pl.col("source") == "MLPerf log")
    assert log.height == 4 and (log["tflops_per_gpu"] > 0).all()


# ---------------------------------------------------------------------------------------
# network
# ---------------------------------------------------------------------------------------


def test_nic_throughput_reset_aware_and_rail_order():
    rows = []
    # ens2np0: 1000, 2000, 500 (reset), 1500 bytes at 0,10,20,30 s -> 100, 50, 100 B/s
    for t, v in [(0, 1000), (10, 2000), (20, 500), (30, 1500)]:
        rows.append((t, "h1", None, telemetry.NIC_TX, v, None, {"device": "ens2np0"}))
        rows.append((t, "h1", None, telemetry.NIC_RX, 2 * v, None, {"device": "ens2np0"}))
        rows.append((t, "h1", None, telemetry.NIC_TX, 10 * t, None, {"device": "ens10np0"}))
    nic = telemetry.nic_throughput(frame(rows))
    r0 = nic.filter(pl.col("device") == "ens2np0")
    assert r0["rail"].unique().to_list() == [0]  # natural sort: ens2 before ens10
    assert r0["tx_Bps"].to_list() == pytest.approx([100.0, 50.0, 100.0])
    assert r0["bytes_per_s"].to_list() == pytest.approx([300.0, 150.0, 300.0])
    r1 = nic.filter(pl.col("device") == "ens10np0")
    assert r1["rail"].unique().to_list() == [1]
    assert r1["bytes_per_s"].to_list() == pytest.approx([10.0, 10.0, 10.0])
    mapped = telemetry.nic_throughput(frame(rows), {"ens10np0": 7})
    assert mapped["rail"].unique().to_list() == [7]


def test_link_throughput_train_mean():
    rows = []
    for t, _ in TENSOR:
        for g in (0, 1):
            scale = 2.0 if t in (10, 15, 25, 30) else 0.1  # training vs other phases
            rows.append((t, "h1", g, 1009, scale * (g + 1), None, None))
            rows.append((t, "h1", g, 1010, scale * (g + 1), None, None))
            rows.append((t, "h1", g, 449, scale * 3, None, None))  # MB/s
    link = telemetry.link_throughput(frame(rows), phases_frame(), kind="train")
    assert link["rail"].to_list() == [0, 1]
    assert link["pcie_Bps"].to_list() == pytest.approx([4.0, 8.0])
    assert link["nvlink_Bps"].to_list() == pytest.approx([6e6, 6e6])
    assert link["nic_Bps"].null_count() == 2
    mx = telemetry.link_throughput(frame(rows), None, kind=None, stat="max")
    assert mx["pcie_Bps"].to_list() == pytest.approx([4.0, 8.0])


def test_rail_imbalance_flags_exactly_below_half_median():
    h1 = [10, 10, 10, 10, 10, 10, 4.9, 5.0]  # median 10: 4.9 flagged, 5.0 (= half) not
    h2 = [2, 2, 2, 2, 0.9, 1.0, 1.1, 2]  # sorted 0.9 1.0 1.1 2 2 2 2 2 -> median 2: only 0.9
    link = pl.DataFrame(
        {
            "hostname": ["h1"] * 8 + ["h2"] * 8,
            "rail": list(range(8)) * 2,
            "nic_Bps": [float(x) for x in h1 + h2],
        },
        schema={"hostname": pl.String, "rail": pl.Int32, "nic_Bps": pl.Float64},
    )
    f = telemetry.rail_imbalance(link)
    assert f.select("hostname", "rail", "value", "node_median").rows() == [
        ("h1", 6, 4.9, 10.0),
        ("h2", 4, 0.9, 2.0),
    ]
    assert f["ratio"].to_list() == pytest.approx([0.49, 0.45])
    assert telemetry.rail_imbalance(link, threshold=0.3).height == 0
    s = telemetry.imbalance_summary(link.with_columns(pl.lit(None, pl.Float64).alias("pcie_Bps")))
    assert s.select("source", "rail", "n_flagged_nodes", "n_nodes").rows() == [
        ("NIC", 4, 1, 2),
        ("NIC", 6, 1, 2),
    ]


# ---------------------------------------------------------------------------------------
# jobs, selection, what is missing
# ---------------------------------------------------------------------------------------


def test_jobs_and_select_job():
    rows = [(0, "h1", 0, 1004, 0.1, "77", None), (0, "h2", 0, 1004, 0.2, "77", None)]
    rows += [
        (0, "h3", 0, 1004, 0.3, "88", None),
        (0, "h2", None, telemetry.NIC_TX, 1, None, {"device": "e"}),
    ]
    rows += [(100, "h1", 0, 1004, 0.1, "77", None)]
    f = frame(rows)
    j = telemetry.jobs_in(f)
    assert j.select("job_id", "n_hosts", "n_gpus").rows() == [("77", 2, 2), ("88", 1, 1)]
    sel = telemetry.select_job(f, job_id="77").collect()
    assert sorted(sel["hostname"].unique()) == ["h1", "h2"]
    assert (
        sel.filter(pl.col("field") == telemetry.NIC_TX).height == 1
    )  # NIC rows of the job's nodes
    w = telemetry.select_job(f, hostnames="h[1-2]", end=ts(50)).collect()
    assert w.height == 3
    with pytest.raises(ValueError, match="not found"):
        telemetry.select_job(f, job_id="99")


def test_unavailable_reasons_and_synthetic_flag():
    rows = [(0, "h1", 0, fid, 0.5, None, {"synthetic": "true"}) for fid in (1004, 1005, 155, 100)]
    u = telemetry.unavailable(frame(rows))
    reasons = {r["wanted"]: r["reason"] for r in u.iter_rows(named=True)}
    assert reasons["sm_active"] == "off_by_default"
    assert reasons["nvlink_bytes"] == "off_by_default"
    assert reasons["gpu_util"] == "not_exported"
    assert reasons["nic_bytes"] == "not_exported"
    assert "tensor_active" not in reasons and "power" not in reasons and "energy" not in reasons
    assert u["n_hosts"].unique().to_list() == [1]
    assert telemetry.is_synthetic(frame(rows))
    assert not telemetry.is_synthetic(tensor_frame())
