"""Damaged DCGM telemetry, round 4 (issue 40): device fields repeated on every MIG instance row count
once per physical GPU; a cumulative counter that dips back to about its old level is a flagged
non-monotonic series, not a reset; XIDs exported only as ``DCGM_EXP_XID_ERRORS_COUNT`` are GPU events.
Every expected value is worked out by hand in the test."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from helpers import quality_by_check, read_exposition_warned

from trainperf import dcgm
from trainperf.reliability import gpu_event_rows, gpu_events

T0_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z in epoch ms
STEP_MS = 30_000


def line(
    field: str, value: float, i: int, *, gpu: int = 0, uuid: str = "GPU-a", extra: str = ""
) -> str:
    return (
        f'{field}{{gpu="{gpu}",UUID="{uuid}",Hostname="n1"{extra}}} {value} {T0_MS + STEP_MS * i}'
    )


def write(tmp_path: Path, name: str, lines: list[str]) -> Path:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def mig(k: int) -> str:
    return f',GPU_I_PROFILE="1g.10gb",GPU_I_ID="{k}"'


def test_mig_instances_count_device_events_and_energy_once_per_gpu(tmp_path):
    # GPU-a has 3 MIG instances (GPU_I_ID 1, 2, 3); dcgm-exporter repeats its device fields on each.
    # At sample 1 one XID 79 and one double-bit ECC error happen on the GPU: one XID event and one
    # ECC event (code = increase 1), not 3 + 3. Energy reads 1,000,000 / 1,600,000 / 2,500,000 mJ
    # on each instance row: the GPU used 2,500,000 - 1,000,000 = 1,500,000 mJ, not 4,500,000.
    lines = []
    energy = [1_000_000, 1_600_000, 2_500_000]
    for i in range(3):
        for k in (1, 2, 3):
            lines.append(line("DCGM_FI_DEV_XID_ERRORS", 0 if i == 0 else 79, i, extra=mig(k)))
            lines.append(line("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", 0 if i == 0 else 1, i, extra=mig(k)))
            lines.append(line("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", energy[i], i, extra=mig(k)))
    r, _ = read_exposition_warned(write(tmp_path, "mig.prom", lines))
    frame = r.frame()
    ev = gpu_events(frame)
    assert ev.select("kind", "code", "gpu").sort("kind").rows() == [
        ("ecc_dbe", 1, 0),
        ("xid", 79, 0),
    ]
    inc = dcgm.counter_increase(frame, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
    per_gpu = inc.group_by("hostname", "gpu").agg(pl.col("increase").sum())
    assert per_gpu.rows() == [("n1", 0, 1_500_000.0)]
    assert len(dcgm.xid_events(frame)) == 1
    # the reader still flags the instance rows (the per-GPU statistics leave them out)
    assert quality_by_check(r)["mig_instance"]["action"] == "flagged"


def test_mig_jobs_of_the_instances_are_joined_on_the_gpu_event(tmp_path):
    # instances 1 and 2 run Slurm jobs 7 and 5; the GPU's XID 48 belongs to both: one event, job "5,7"
    lines = [
        line("DCGM_FI_DEV_XID_ERRORS", v, i, extra=mig(k) + f',hpc_job="{j}"')
        for i, v in enumerate([0, 48])
        for k, j in ((1, 7), (2, 5))
    ]
    r, _ = read_exposition_warned(write(tmp_path, "jobs.prom", lines))
    ev = gpu_events(r.frame())
    assert ev.select("code", "job_id").rows() == [(48, "5,7")]


def test_aggregate_ecc_dip_is_flagged_not_two_events(tmp_path):
    # the lifetime (aggregate) double-bit count reads 5, 5, 4, 5, 5: it cannot reset, so the 4 is a
    # dip: no ECC event at all (the old reset rule gave 4, then 1), one counter_dip flag at line 3
    lines = [line("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", v, i) for i, v in enumerate([5, 5, 4, 5, 5])]
    r, msgs = read_exposition_warned(write(tmp_path, "agg.prom", lines))
    assert gpu_events(r.frame()).height == 0
    q = quality_by_check(r)["counter_dip"]
    assert (q["action"], q["first_line"], q["n_samples"]) == ("flagged", 3, 1)
    assert any("agg.prom:3" in m and "counter_dip" in m for m in msgs)


def test_energy_dip_is_not_a_reset_but_a_real_reset_is(tmp_path):
    # GPU 0: 900,000 / 1,200,000 / 1,199,999 (a 1 mJ dip) / 1,500,000 mJ: used 1,500,000 - 900,000
    #   = 600,000 mJ (the old rule counted the dip as a reset: + 1,199,999 mJ)
    # GPU 1: 900,000 / 1,200,000 / 2,000 (rebooted: below half of 1,200,000) / 302,000 mJ:
    #   300,000 + 2,000 (counted from 0) + 300,000 = 602,000 mJ, and no dip flag for it
    e = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
    lines = [line(e, v, i, gpu=0) for i, v in enumerate([900_000, 1_200_000, 1_199_999, 1_500_000])]
    lines += [
        line(e, v, i, gpu=1, uuid="GPU-b")
        for i, v in enumerate([900_000, 1_200_000, 2_000, 302_000])
    ]
    r, msgs = read_exposition_warned(write(tmp_path, "energy.prom", lines))
    inc = dcgm.counter_increase(r.frame(), e)
    per_gpu = dict(inc.group_by("gpu").agg(pl.col("increase").sum()).rows())
    assert per_gpu == {0: 600_000.0, 1: 602_000.0}
    q = quality_by_check(r)["counter_dip"]
    assert (q["first_line"], q["n_series"], q["n_samples"]) == (3, 1, 1)
    assert any("energy.prom:3" in m for m in msgs)


def test_volatile_ecc_reset_still_counts_from_zero(tmp_path):
    # the volatile count 3, 3, 0, 1 (driver reload, then one new error): one event of 1 at sample 3
    lines = [line("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", v, i) for i, v in enumerate([3, 3, 0, 1])]
    r, _ = read_exposition_warned(write(tmp_path, "vol.prom", lines))
    ev = gpu_events(r.frame())
    assert ev.select("kind", "code").rows() == [("ecc_dbe", 1)]
    assert "counter_dip" not in quality_by_check(r)


def test_xid_errors_count_counter_gives_gpu_events(tmp_path):
    # only the newer exporter counter: xid 79 on GPU 0 counts 0, 1, 1, 0 (one XID, then the window
    # forgets it): one event at sample 1; xid 13 on GPU 1 counts 0, 0, 2: one event at sample 2
    # (an application XID: infra false in NVIDIA's catalogue)
    c = "DCGM_EXP_XID_ERRORS_COUNT"
    w = ',window_size_in_ms="300000"'
    lines = [line(c, v, i, extra=',xid="79"' + w) for i, v in enumerate([0, 1, 1, 0])]
    lines += [
        line(c, v, i, gpu=1, uuid="GPU-b", extra=',xid="13"' + w) for i, v in enumerate([0, 0, 2])
    ]
    r, _ = read_exposition_warned(write(tmp_path, "xidcount.prom", lines))
    ev = gpu_events(r.frame()).sort("gpu")
    t = [ts.timestamp() * 1000 for ts in ev["timestamp"]]
    assert ev.select("gpu", "kind", "code", "infra").rows() == [
        (0, "xid", 79, True),
        (1, "xid", 13, False),
    ]
    assert t == [T0_MS + STEP_MS, T0_MS + 2 * STEP_MS]


def test_xid_count_is_not_added_to_the_gauge_of_the_same_gpu(tmp_path):
    # GPU 0 exports both the 230 gauge (0, 79) and the counter (0, 1) for the same XID: one event
    lines = [line("DCGM_FI_DEV_XID_ERRORS", v, i) for i, v in enumerate([0, 79])]
    lines += [
        line("DCGM_EXP_XID_ERRORS_COUNT", v, i, extra=',xid="79"') for i, v in enumerate([0, 1])
    ]
    r, _ = read_exposition_warned(write(tmp_path, "both.prom", lines))
    assert gpu_events(r.frame()).select("code").rows() == [(79,)]


def test_gpu_label_beyond_int32_is_flagged_not_dropped(tmp_path):
    # gpu="4294967297" (2^32 + 1) cannot be a GPU index: the series is kept (its 200 W sample is in
    # the frame), its gpu is null, the label stays in labels, and check bad_gpu_label names line 2
    lines = [
        line("DCGM_FI_DEV_POWER_USAGE", 100, 0, gpu=0),
        line("DCGM_FI_DEV_POWER_USAGE", 200, 0, gpu=2**32 + 1, uuid="GPU-b"),
    ]
    r, msgs = read_exposition_warned(write(tmp_path, "gpu.prom", lines))
    f = r.frame().sort("value")
    assert f.select("gpu", "value").rows() == [(0, 100.0), (None, 200.0)]
    assert '"gpu":"4294967297"' in f["labels"][1]
    q = quality_by_check(r)["bad_gpu_label"]
    assert (q["action"], q["n_series"], q["first_line"]) == ("flagged", 1, 2)
    assert any("gpu.prom:2" in m and "bad_gpu_label" in m for m in msgs)


def test_huge_gpu_i_id_stays_a_mig_instance(tmp_path):
    # GPU_I_ID="99999999999" is no instance id, but the row is still a MIG slice: entity GPU-I with
    # no id (before: a whole-GPU row of GPU 0), check bad_instance_id at line 1
    lines = [line("DCGM_FI_DEV_POWER_USAGE", 100, 0, extra=mig(99_999_999_999))]
    r, msgs = read_exposition_warned(write(tmp_path, "gi.prom", lines))
    f = r.frame()
    assert f.select("gpu", "entity", "entity_id").rows() == [(0, "GPU-I", None)]
    q = quality_by_check(r)["bad_instance_id"]
    assert (q["action"], q["n_series"], q["first_line"]) == ("corrected", 1, 1)
    assert "mig_instance" in quality_by_check(r)


def test_the_reliability_filter_keeps_the_xid_counter(tmp_path):
    # the reliability notebook reads only the rows gpu_events uses: the exporter's XID counter
    # (no DCGM field id) is among them, a power sample is not
    c = "DCGM_EXP_XID_ERRORS_COUNT"
    lines = [line(c, v, i, extra=',xid="79"') for i, v in enumerate([0, 1])]
    lines.append(line("DCGM_FI_DEV_POWER_USAGE", 300, 0))
    r, _ = read_exposition_warned(write(tmp_path, "filter.prom", lines))
    kept = r.frame().filter(gpu_event_rows())
    assert kept["field"].unique().to_list() == [c]
    assert gpu_events(kept).select("code").rows() == [(79,)]
