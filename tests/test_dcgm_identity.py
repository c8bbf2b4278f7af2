"""The rewritten DCGM readers give exactly the frames of the old implementation (tests/dcgm_reference.py,
trainperf.dcgm before the rewrite) on the bundled fixtures and on the real H200 captures."""

from __future__ import annotations

import datetime as dt
import warnings
from pathlib import Path

import pytest
from dcgm_reference import read_csv_long as old_csv_long
from dcgm_reference import read_dmon as old_dmon
from dcgm_reference import read_exposition as old_exposition
from dcgm_reference import read_grafana_csv as old_grafana
from dcgm_reference import read_prometheus_api as old_api

from trainperf import dcgm
from trainperf.synthetic import telemetry as synthetic

D = Path(__file__).parent / "data" / "dcgm"
REAL = Path(__file__).resolve().parents[1] / "data" / "telemetry"
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

FIXTURES = [
    "scrape_single.prom",
    "archive_mixed_hostname.prom",
    "per_sample_ts.prom",
    "xid_hour.prom",
    "nvlink_two_fields.prom",
    "no_prof_host.prom",
]
CAPTURES = sorted(str(p.relative_to(REAL)) for p in REAL.glob("h200_*/*.prom"))


def test_real_captures_are_there():
    assert len(CAPTURES) == 4  # 2 captures x (idle.prom, telemetry.prom)


@pytest.mark.parametrize("name", FIXTURES)
def test_exposition_fixtures_identical(name):
    new = dcgm.read_exposition(D / name, timestamp=T0)
    old = old_exposition(D / name, timestamp=T0)
    assert new.equals(old), name


@pytest.mark.parametrize("name", CAPTURES)
def test_exposition_real_captures_identical_and_clean(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a real capture must not trip a damage check
        r = dcgm.read_exposition_reading(REAL / name)
    old = old_exposition(REAL / name)
    assert r.frame().equals(old), name
    # only DCGM's documented blanks may be noted on a healthy capture
    assert set(r.quality["check"].to_list()) <= {"blank_value"}


@pytest.mark.filterwarnings(
    "ignore:.*NaN or \\+-Inf values.*:trainperf.dcgm.fields.DcgmWarning"
)  # api_matrix.json holds a NaN
def test_other_readers_identical_on_fixtures():
    assert dcgm.read_prometheus_api(D / "api_vector.json").equals(old_api(D / "api_vector.json"))
    assert dcgm.read_prometheus_api(D / "api_matrix.json").equals(old_api(D / "api_matrix.json"))
    assert dcgm.read_csv_long(D / "long.csv").equals(old_csv_long(D / "long.csv"))
    assert dcgm.read_grafana_csv(D / "grafana_wide.csv").equals(old_grafana(D / "grafana_wide.csv"))
    a = dcgm.read_dmon(D / "dmon_untimed.txt", hostname="n1", start=T0, interval=1)
    b = old_dmon(D / "dmon_untimed.txt", hostname="n1", start=T0, interval=1)
    assert a.equals(b)
    assert dcgm.read_dmon(D / "dmon_timed.txt", hostname="n1").equals(
        old_dmon(D / "dmon_timed.txt", hostname="n1")
    )


def test_synthetic_archive_identical(tmp_path):
    cfg = synthetic.SyntheticConfig(n_nodes=2, job_nodes=1, interval_s=60.0)
    p = tmp_path / "syn.prom"
    synthetic.write_exposition(cfg, synthetic.default_phases(), p)
    new = dcgm.read_exposition(p)
    assert new.height > 1000 and new.equals(old_exposition(p))


def test_engines_agree_on_real_capture():
    p = REAL / CAPTURES[0]
    a = dcgm.read_exposition(p)
    b = dcgm.read_exposition(p, engine="prometheus_client")
    key = ["hostname", "gpu", "field_id", "entity", "timestamp"]
    assert a.sort(key).equals(b.sort(key))
