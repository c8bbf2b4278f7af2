"""trainperf.synthetic.telemetry: formats the readers accept, configured values, determinism; the notebook."""

from __future__ import annotations

import datetime as dt
import json

import polars as pl
import pytest

from trainperf import dcgm, telemetry
from trainperf.synthetic import telemetry as synthetic

T0 = dt.datetime(2024, 10, 2, 19, 0, 0, tzinfo=dt.UTC)


def short_phases() -> pl.DataFrame:
    """init 120 s, train 300 s, eval 60 s, train 300 s (starting at T0)."""
    spans = [("init", "init", 0, 120), ("train_01", "train", 1, 300)]
    spans += [("eval_01", "eval", 1, 60), ("train_02", "train", 2, 300)]
    rows, t = [], T0
    for name, kind, idx, d in spans:
        rows.append((name, kind, idx, t, t + dt.timedelta(seconds=d), float(d)))
        t += dt.timedelta(seconds=d)
    return pl.DataFrame(rows, schema=telemetry.PHASE_SCHEMA, orient="row")


SMALL = synthetic.SyntheticConfig(n_nodes=3, job_nodes=2, interval_s=10.0, seed=3, margin_s=60)


@pytest.fixture(scope="module")
def expo(tmp_path_factory):
    p = tmp_path_factory.mktemp("syn") / "dcgm.prom"
    synthetic.write_exposition(SMALL, short_phases(), p)
    return p


@pytest.fixture(scope="module")
def expo_frame(expo):
    return dcgm.read_exposition(expo)


def test_exposition_loads_with_reader(expo, expo_frame):
    f = expo_frame
    assert f.schema == pl.Schema(dcgm.SCHEMA)
    assert sorted(f["hostname"].unique()) == ["gpu001", "gpu002", "gpu003"]
    gpu = f.filter(pl.col("gpu").is_not_null())
    assert gpu.select(pl.struct("hostname", "gpu").n_unique()).item() == 24
    want = {
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "DCGM_FI_PROF_SM_ACTIVE",
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_SM_CLOCK",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        "DCGM_FI_PROF_PCIE_RX_BYTES",
        "DCGM_FI_PROF_NVLINK_TX_BYTES",
        "DCGM_FI_PROF_NVLINK_RX_BYTES",
    }
    assert want <= set(gpu["field"].unique())
    assert set(f.filter(pl.col("field_id").is_null())["field"].unique()) == {
        telemetry.NIC_TX,
        telemetry.NIC_RX,
    }
    # Slurm job label on the job's nodes only; synthetic label on every series
    jobs = f.filter(pl.col("job_id").is_not_null())
    assert sorted(jobs["hostname"].unique()) == ["gpu001", "gpu002"]
    assert jobs["job_id"].unique().to_list() == ["424242"]
    assert f["labels"].str.contains('"synthetic":"true"', literal=True).all()
    assert telemetry.is_synthetic(f)
    # one scrape every 10 s with the same timestamps for all series
    n_ts = f["timestamp"].n_unique()
    assert f.group_by("hostname", "gpu", "field", "labels").len()["len"].unique().to_list() == [
        n_ts
    ]
    assert expo.read_text().startswith("# SYNTHETIC")


def test_configured_imbalance_and_activity(expo_frame):
    ph = short_phases()
    link = telemetry.link_throughput(expo_frame, ph, kind="train")
    job = link.filter(pl.col("hostname").is_in(["gpu001", "gpu002"]))
    slow = job.filter(pl.col("rail").is_in(list(SMALL.slow_rails)))
    fast = job.filter(~pl.col("rail").is_in(list(SMALL.slow_rails)))
    assert slow["nic_Bps"].to_list() == pytest.approx([8.0e9] * 4, rel=0.02)
    assert fast["nic_Bps"].to_list() == pytest.approx([18.9e9] * 12, rel=0.02)
    ratio = 8.0 / 18.9
    assert slow["pcie_Bps"].to_list() == pytest.approx([17.4e9 * ratio] * 4, rel=0.02)
    assert fast["nvlink_Bps"].to_list() == pytest.approx([114.5e9] * 12, rel=0.02)
    flagged = telemetry.rail_imbalance(link)
    assert flagged.select("hostname", "rail").rows() == [
        ("gpu001", 2),
        ("gpu001", 5),
        ("gpu002", 2),
        ("gpu002", 5),
    ]
    # gpu003 is outside the job: idle, no phases of its own
    stats = telemetry.phase_stats(
        telemetry.select_job(expo_frame, job_id="424242"), ph, level="kind"
    )
    tensor = dict(
        stats.filter(pl.col("metric") == "tensor_active").select("kind", "mean").iter_rows()
    )
    assert tensor["train"] == pytest.approx(0.45, abs=0.01)
    assert 0.05 < tensor["eval"] < 0.3
    assert tensor["init"] < 0.01
    clock = stats.filter(pl.col("metric") == "sm_clock")
    assert clock["unit"].to_list() == ["MHz"] * 3
    idle = expo_frame.filter(
        (pl.col("hostname") == "gpu003") & (pl.col("field") == "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")
    )
    assert idle["value"].max() == 0.0


def test_energy_counter_matches_power(expo_frame):
    inc = dcgm.counter_increase(expo_frame, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION").drop_nulls(
        "increase"
    )
    assert (inc["increase"] >= 0).all()
    power = expo_frame.filter(pl.col("field") == "DCGM_FI_DEV_POWER_USAGE").select(
        "hostname", "gpu", "timestamp", "value"
    )
    j = inc.join(power, on=["hostname", "gpu", "timestamp"])
    # mJ over 10 s = W x 10 x 1000 (rounded to whole mJ)
    assert (j["increase"] - j["value"] * 10_000).abs().max() <= 1.0


def test_parquet_equals_exposition(tmp_path, expo_frame):
    synthetic.write_parquet(SMALL, short_phases(), tmp_path / "store", flush_rows=10_000)
    pq = dcgm.scan_parquet(tmp_path / "store").collect()
    key = ["hostname", "gpu", "field", "labels", "timestamp"]
    assert pq.sort(key).equals(expo_frame.sort(key))
    meta = json.loads((tmp_path / "store" / "SYNTHETIC.json").read_text())
    assert "SYNTHETIC" in meta["note"] and meta["n_nodes"] == 3


def test_deterministic_with_seed(tmp_path, expo):
    again = tmp_path / "again.prom"
    synthetic.write_exposition(SMALL, short_phases(), again)
    assert again.read_bytes() == expo.read_bytes()
    other = tmp_path / "other.prom"
    cfg = synthetic.SyntheticConfig(n_nodes=3, job_nodes=2, interval_s=10.0, seed=4, margin_s=60)
    synthetic.write_exposition(cfg, short_phases(), other)
    assert other.read_bytes() != expo.read_bytes()


def test_streaming_chunks_are_per_host_and_bounded():
    cfg = synthetic.SyntheticConfig(n_nodes=2, job_nodes=1, interval_s=1.0, margin_s=0)
    per_block = (12 * 8 + 2 * 8) * synthetic.BLOCK_SCRAPES  # series x scrapes of one block
    frames = synthetic.iter_frames(cfg, short_phases(), flush_rows=per_block)
    assert not isinstance(frames, list)  # a generator: nothing is held beyond one chunk
    sizes, hosts = [], []
    for f in frames:
        assert f["hostname"].n_unique() == 1
        sizes.append(f.height)
        hosts.append(f["hostname"][0])
    assert max(sizes) <= per_block
    assert hosts[0] == "gpu001" and hosts[-1] == "gpu002"
    assert sum(sizes) == 2 * (12 * 8 + 2 * 8) * synthetic.scrape_times(cfg, short_phases()).size


def test_time_shift_and_bundled_log_phases():
    ph = synthetic.default_phases()
    cfg = synthetic.SyntheticConfig(start="2030-01-01T00:00:00Z", margin_s=0, interval_s=60)
    t = synthetic.scrape_times(cfg, ph)
    assert t[0] == dt.datetime(2030, 1, 1, tzinfo=dt.UTC).timestamp()
    assert t[-1] - t[0] <= (ph["end"].max() - ph["start"].min()).total_seconds()


def test_excluded_fields_reported_missing(tmp_path):
    cfg = synthetic.SyntheticConfig(
        n_nodes=1,
        job_nodes=1,
        interval_s=30,
        margin_s=0,
        exclude_fields=("DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_NVLINK_TX_BYTES"),
        nic=False,
    )
    p = synthetic.write_exposition(cfg, short_phases(), tmp_path / "x.prom.gz")
    f = dcgm.read_exposition(p)
    assert "DCGM_FI_PROF_SM_ACTIVE" not in set(f["field"])
    u = telemetry.unavailable(f)
    reasons = dict(u.select("wanted", "reason").iter_rows())
    assert reasons == {
        "sm_active": "off_by_default",
        "nvlink_bytes": "off_by_default",
        "nic_bytes": "not_exported",
    }


def test_config_validation():
    with pytest.raises(ValueError):
        synthetic.SyntheticConfig(slow_rails=(8,))
    with pytest.raises(ValueError):
        synthetic.SyntheticConfig(n_nodes=2, job_nodes=3)
    with pytest.raises(ValueError):
        synthetic.SyntheticConfig(exclude_fields=("NOT_A_FIELD",))


@pytest.mark.slow
def test_notebook_runs_on_synthetic_default(main_job):
    # the main job executes telemetry.ipynb on its default input, the synthetic default
    # (conftest.main_job, which also asks for its results_path): read that run
    tmp, summary = main_job
    assert "telemetry" in summary.executed
    params = json.loads((tmp / "out" / "notebooks" / "telemetry.ipynb").read_text())["metadata"][
        "papermill"
    ]["parameters"]
    assert params.get("telemetry_source", "") == ""  # nothing given: the synthetic default
    out = tmp / "out" / "notebooks" / "telemetry.ipynb"
    figs = tmp / "figures"
    nb = json.loads(out.read_text())
    labels = set()
    for c in nb["cells"]:
        if c["cell_type"] != "code":
            continue
        src = "".join(c["source"])
        assert not [o for o in c["outputs"] if o["output_type"] == "error"], src
        for line in src.splitlines():
            if line.startswith("#| label:"):
                labels.add(line.split(":", 1)[1].strip())
                assert c["outputs"], f"{line} has no output"
    assert {
        "tbl-telemetry-phases",
        "tbl-telemetry-unavailable",
        "tbl-telemetry-phase-stats",
        "tbl-telemetry-tflops",
        "tbl-telemetry-rails",
        "tbl-telemetry-flagged",
        "fig-telemetry-tensor-activity",
        "fig-telemetry-heatmap",
        "fig-telemetry-phase-distributions",
        "fig-telemetry-rail-throughput",
    } <= labels
    for name in (
        "telemetry_tensor_activity",
        "telemetry_heatmap",
        "telemetry_phase_distributions",
        "telemetry_rail_throughput",
    ):
        for ext in ("svg", "png", "pdf"):
            assert (figs / f"{name}.{ext}").stat().st_size > 0
        assert "SYNTHETIC" in (figs / f"{name}.svg").read_text()
    rails = pl.read_parquet(tmp / "out" / "scratch" / "rails.parquet")
    assert rails["synthetic"].all() and rails.height == 64 * 8
    flagged = telemetry.rail_imbalance(rails)
    assert sorted(set(flagged["rail"])) == [2, 5] and flagged.height == 2 * 64


def test_store_reused_when_config_and_generator_unchanged(tmp_path):
    ph = synthetic.default_phases()
    cfg = synthetic.SyntheticConfig(n_nodes=2, job_nodes=1, interval_s=120.0)
    store = tmp_path / "s"
    said: list[str] = []
    assert synthetic.ensure_parquet(cfg, ph, store, progress=said.append) is False
    files = sorted(store.rglob("*.parquet"))
    mtimes = [p.stat().st_mtime_ns for p in files]
    assert synthetic.ensure_parquet(cfg, ph, store, progress=said.append) is True
    assert "generating" in said[0] and "reusing" in said[1]
    assert [p.stat().st_mtime_ns for p in sorted(store.rglob("*.parquet"))] == mtimes  # untouched
    # another configuration: regenerated
    cfg2 = synthetic.SyntheticConfig(n_nodes=2, job_nodes=1, interval_s=120.0, seed=1)
    assert synthetic.ensure_parquet(cfg2, ph, store, progress=said.append) is False
    # a store whose key file is missing (a killed generation) is never reused
    (store / synthetic.KEY_FILE).unlink()
    assert synthetic.ensure_parquet(cfg2, ph, store, progress=None) is False
