"""The rewritten per-phase statistics equal the old implementation (tests/telemetry_reference.py) on a
synthetic store, in one batch and in host batches."""

from __future__ import annotations

import telemetry_reference as old

from trainperf import dcgm, telemetry
from trainperf.synthetic import telemetry as synthetic
from trainperf.telemetry import _common


def test_phase_stats_and_links_identical_to_old(tmp_path, monkeypatch):
    cfg = synthetic.SyntheticConfig(n_nodes=6, job_nodes=4, interval_s=30.0)
    ph = synthetic.default_phases()
    synthetic.write_parquet(cfg, ph, tmp_path / "s")
    lf = dcgm.scan_parquet(tmp_path / "s")
    key = ["phase", "hostname", "gpu", "metric"]
    for level in ("gpu", "phase", "kind"):
        a = telemetry.phase_stats(lf, ph, level=level)
        b = old.phase_stats(lf, ph, level=level)
        k = [c for c in key if c in a.columns]
        assert a.height > 0 and a.sort(k).equals(b.sort(k)), level
    lt = telemetry.link_throughput(lf, ph, kind="train")
    assert lt.equals(old.link_throughput(lf, ph, kind="train"))
    one = telemetry.phase_stats(lf, ph, level="gpu")
    monkeypatch.setattr(_common, "BATCH_ROWS", 20_000)  # several host batches
    assert len(_common._host_batches(lf)) > 1
    assert telemetry.phase_stats(lf, ph, level="gpu").equals(one)
