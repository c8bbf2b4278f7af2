"""trainperf.reliability: taxonomy, rates, MTTF, ETTR and the telemetry join on small hand-made
fixtures, every expected value computed by hand in the test (or taken from a published table)."""

from __future__ import annotations

import builtins
import datetime as dt
import math
import warnings

import polars as pl
import pytest

from trainperf import dcgm, slurm
from trainperf import reliability as rl
from trainperf.errors import InputError
from trainperf.report import charts
from trainperf.synthetic.slurm_failures import INCIDENT_CAUSES, failure_events

T0 = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
H = dt.timedelta(hours=1)


def _job(
    jid, state, start_h, end_h, nodes, *, exit_code=0, elapsed_s=None, gpus_per_node=8, line=None
):
    start = None if start_h is None else T0 + start_h * H
    end = None if end_h is None else T0 + end_h * H
    if elapsed_s is None:
        elapsed_s = (
            int((end_h - start_h) * 3600) if start_h is not None and end_h is not None else 0
        )
    return {
        "JobID": jid,
        "User": "u1",
        "JobName": f"name-{jid}",
        "state": state,
        "exit_code": exit_code,
        "start": start,
        "end": end,
        "elapsed_s": elapsed_s,
        "n_nodes": len(nodes),
        "nodes": nodes,
        "n_gpus": len(nodes) * gpus_per_node,
        "gpu_hours": len(nodes) * gpus_per_node * elapsed_s / 3600,
        "source_line": line,
    }


_SCHEMA = {
    "JobID": pl.String,
    "User": pl.String,
    "JobName": pl.String,
    "state": pl.String,
    "exit_code": pl.Int64,
    "start": pl.Datetime("us", "UTC"),
    "end": pl.Datetime("us", "UTC"),
    "elapsed_s": pl.Int64,
    "n_nodes": pl.Int64,
    "nodes": pl.List(pl.String),
    "n_gpus": pl.Int64,
    "gpu_hours": pl.Float64,
    "source_line": pl.Int64,
}


def _frame(rows):
    return pl.DataFrame(rows, schema=_SCHEMA)


def _dcgm_rows(host, gpu, field_id, field, values, t0, job=None):
    return [
        {
            "timestamp": t0 + dt.timedelta(minutes=i),
            "hostname": host,
            "gpu": gpu,
            "uuid": f"GPU-{host}-{gpu}",
            "entity": "GPU",
            "entity_id": gpu,
            "field_id": field_id,
            "field": field,
            "value": float(v),
            "job_id": job,
            "labels": "{}",
        }
        for i, v in enumerate(values)
    ]


# ----------------------------------------------------------------------------- taxonomy


@pytest.fixture
def taxonomy_case():
    jobs = _frame(
        [
            _job("1", "COMPLETED", 0, 10, ["n01"]),
            _job("2", "FAILED", 0, 1, ["n02"], exit_code=1),
            _job("3", "OUT_OF_MEMORY", 0, 1, ["n03"], exit_code=None),
            _job("4", "NODE_FAIL", 0, 5, ["n04", "n05"], exit_code=None),
            _job("5", "FAILED", 10, 12, ["n06", "n07"], exit_code=1),  # node event on n07
            _job("6", "CANCELLED", 10, 12, ["n08"]),  # XID 79 on n08 just after End (grace)
            _job("7", "FAILED", 10, 12, ["n09"], exit_code=1),  # XID 13: an application error
            _job("8", "TIMEOUT", 0, 24, ["n10"]),
            _job("9", "CANCELLED", 0, 2, ["n11"]),
            _job("10", "REQUEUED", 0, 3, ["n12"]),  # first attempt of a requeued job
            _job("10", "COMPLETED", 4, 8, ["n12"]),  # its second attempt
            _job("11", "COMPLETED", 20, 30, ["n13"]),  # XID 79 inside, but it completed
            _job("12", "FAILED", 0, None, ["n14"], exit_code=1, elapsed_s=3600, line=41),  # no End
            _job("13", "FAILED", 0, 1, ["n15"], exit_code=1, elapsed_s=-5, line=42),  # negative
            _job("14", "RUNNING", 0, None, ["n16"], elapsed_s=60),  # not finished
        ]
    )
    node_events = rl.node_events_frame(
        [
            {
                "hostname": "n07",
                "start": T0 + 11.5 * H,
                "end": None,
                "state": "DRAIN",
                "reason": "Kill task failed",
            }
        ]
    )
    tele = pl.DataFrame(
        _dcgm_rows(
            "n08",
            0,
            230,
            "DCGM_FI_DEV_XID_ERRORS",
            [0, 79, 79],
            T0 + 12 * H - dt.timedelta(minutes=1),
        )
        + _dcgm_rows("n09", 3, 230, "DCGM_FI_DEV_XID_ERRORS", [0, 13], T0 + 11 * H)
        + _dcgm_rows("n13", 1, 230, "DCGM_FI_DEV_XID_ERRORS", [0, 79], T0 + 25 * H)
        + _dcgm_rows("n99", 2, 230, "DCGM_FI_DEV_XID_ERRORS", [0, 48], T0 + 5 * H),  # no job on n99
        schema=dcgm.SCHEMA,
    )
    return jobs, node_events, rl.gpu_events(tele)


def test_each_rule_gives_its_class(taxonomy_case):
    jobs, ne, ev = taxonomy_case
    c = rl.classify(jobs, node_events=ne, gpu_events=ev)
    got = [(r["JobID"], r["failure_class"], r["rule_id"]) for r in c.iter_rows(named=True)]
    assert got == [
        ("1", "completed", "completed"),
        ("2", "user_failure", "user_exit"),
        ("3", "user_failure", "user_oom"),
        ("4", "infra_failure", "infra_state"),
        ("5", "infra_failure", "infra_node_event"),
        ("6", "infra_failure", "infra_gpu_event"),
        ("7", "user_failure", "user_exit"),  # XID 13 is no infrastructure evidence
        ("8", "timeout", "timeout"),
        ("9", "cancelled", "cancelled"),
        ("10", "requeued", "requeued"),
        ("10", "completed", "completed"),
        ("11", "completed", "completed"),
        ("12", None, "damage_no_end"),
        ("13", None, "damage_negative_elapsed"),
        ("14", None, "not_finished"),
    ]
    row = {r["JobID"]: r for r in c.iter_rows(named=True)}
    assert row["5"]["node_event"] == "DRAIN: Kill task failed"
    assert row["6"]["gpu_event"] == "XID 79 GPU has fallen off the bus"
    assert row["11"]["infra_event_in_window"] is True and row["1"]["infra_event_in_window"] is False
    attempts = c.filter(pl.col("JobID") == "10").select("attempt", "requeued").rows()
    assert attempts == [(1, True), (2, False)]
    assert row["12"]["reliability_flags"] == ["no_end"]
    assert row["13"]["reliability_flags"] == ["negative_elapsed"]
    assert row["14"]["reliability_flags"] == []


def test_grace_window_decides_an_event_after_the_end(taxonomy_case):
    jobs, ne, ev = taxonomy_case
    # XID 79 on n08 is first seen at End (12:00): inside [Start, End + 0 s] too; move it 2 min later
    later = ev.with_columns(
        pl.when(pl.col("hostname") == "n08")
        .then(pl.col("timestamp") + dt.timedelta(minutes=2))
        .otherwise(pl.col("timestamp"))
        .alias("timestamp")
    )

    def cls(grace_s):
        c = rl.classify(jobs, gpu_events=later, grace_s=grace_s)
        return c.filter(pl.col("JobID") == "6")["rule_id"][0]

    assert cls(300) == "infra_gpu_event"  # 2 min after End: inside 5 min of grace
    assert cls(60) == "cancelled"  # outside 1 min


def test_damage_gives_quality_rows_and_warnings_not_numbers(taxonomy_case):
    jobs, ne, ev = taxonomy_case
    c = rl.classify(jobs, node_events=ne, gpu_events=ev)
    with pytest.warns(rl.ReliabilityWarning) as rec:
        q = rl.classification_quality(c, "sacct.txt")
    msgs = [str(w.message) for w in rec]
    assert msgs[0].startswith("sacct.txt:41: 1 record(s) with a final state but no End time")
    assert msgs[1].startswith("sacct.txt:42: 1 record(s) with negative elapsed time")
    assert q.select("check", "action", "n_samples", "first_line").rows() == [
        ("no_end", "excluded", 1, 41),
        ("negative_elapsed", "excluded", 1, 42),
    ]
    # the damaged records are in no rate: 12 classified records (job 10 twice), jobs 12-14 left out
    by = rl.failure_rate_by_size(c)
    assert by["n_jobs"].sum() == 12


def test_an_event_outside_every_job_is_flagged(taxonomy_case):
    jobs, ne, ev = taxonomy_case
    c = rl.classify(jobs, node_events=ne, gpu_events=ev)
    m = rl.events_vs_jobs(ev, c, window_h=1.0)
    out = m.filter(pl.col("hostname") == "n99").row(0, named=True)
    assert (
        out["outside_job"] is True and out["JobID"] is None and out["failed_within_window"] is False
    )
    with pytest.warns(rl.ReliabilityWarning, match="1 infrastructure GPU event"):
        q = rl.event_quality(m, "dcgm.prom")
    assert q.select("check", "action", "n_samples").rows() == [("outside_job", "flagged", 1)]
    # XID 79 on n08 at 12:00, job 6 ended (infra failure) at 12:00: failed 0 min after the event
    n08 = m.filter(pl.col("hostname") == "n08").row(0, named=True)
    assert (
        n08["JobID"] == "6"
        and n08["failed_within_window"] is True
        and n08["minutes_to_failure"] == 0.0
    )
    # XID 13 on n09 at 11:01, job 7 (user failure) ended at 12:00: 59 min, inside the hour
    n09 = m.filter(pl.col("hostname") == "n09").row(0, named=True)
    assert n09["failed_within_window"] is True and n09["minutes_to_failure"] == 59.0
    # XID 79 on n13 at 25:01, job 11 completed at 30:00: nothing failed after it
    assert m.filter(pl.col("hostname") == "n13")["failed_within_window"].to_list() == [False]
    per = rl.events_per_node(m)
    assert per.filter(pl.col("hostname") == "n99").select(
        "n_events", "n_infra", "n_outside_job"
    ).rows() == [(1, 1, 1)]


def test_job_label_matches_an_event_without_the_node():
    jobs = _frame([_job("77", "FAILED", 0, 2, ["a01"], exit_code=1)])
    # the event's host is not in the job's node list, but the exporter's job label names the job
    tele = pl.DataFrame(
        _dcgm_rows("other", 0, 230, "DCGM_FI_DEV_XID_ERRORS", [0, 95], T0 + 1 * H, job="77"),
        schema=dcgm.SCHEMA,
    )
    c = rl.classify(jobs, gpu_events=rl.gpu_events(tele))
    assert c["rule_id"].to_list() == ["infra_gpu_event"]


def test_rule_table_and_code_name_the_same_rules_with_sources():
    rules = rl.taxonomy_rules()
    assert set(rules["rule_id"]) == set(rl.RULES)
    # every rule has a name for a reader's table, and no two the same
    assert rules["rule_name"].null_count() == 0 and rules["rule_name"].n_unique() == rules.height
    assert rules["precedence"].to_list() == sorted(rules["precedence"].to_list())
    assert rules["source"].null_count() == 0 and all(s.strip() for s in rules["source"])
    assert set(rules["failure_class"].drop_nulls()) <= set(rl.FAILURE_CLASSES)
    xids = rl.xid_catalogue()
    assert (
        xids.filter(pl.col("xid").is_in([13, 31, 43]))["counts_as_infra"].to_list() == [False] * 3
    )
    assert xids.filter(pl.col("xid").is_in([48, 79, 95]))["counts_as_infra"].to_list() == [True] * 3


# ----------------------------------------------------------------------------- events


def test_gpu_events_from_dcgm_fields():
    t = T0
    tele = pl.DataFrame(
        _dcgm_rows("g1", 0, 230, "DCGM_FI_DEV_XID_ERRORS", [0, 79, 79, 0], t)
        + _dcgm_rows("g1", 1, 311, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", [3, 3, 4], t)
        + _dcgm_rows("g1", 2, 395, "DCGM_FI_DEV_ROW_REMAP_FAILURE", [0, 1, 1], t)
        + _dcgm_rows("g1", 3, 112, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", [0, 0x40 | 0x1, 0x40, 0], t)
        + _dcgm_rows(
            "g1", 4, 112, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", [0, 0x1, 0x1], t
        ),  # idle only
        schema=dcgm.SCHEMA,
    )
    ev = rl.gpu_events(tele)
    got = ev.select("gpu", "kind", "code", "detail", "infra").sort("gpu").rows()
    assert got == [
        (0, "xid", 79, "GPU has fallen off the bus", True),
        (1, "ecc_dbe", 1, "uncorrectable (double-bit) ECC errors", True),  # 3 -> 4
        (2, "row_remap_failure", 1, "row remapping failed", True),
        (3, "throttle", 64, "HW_THERMAL_SLOWDOWN", False),  # the idle bit is not a throttle
    ]
    assert ev.filter(pl.col("gpu") == 0)["timestamp"][0] == t + dt.timedelta(minutes=1)
    assert rl.gpu_events(pl.DataFrame(schema=dcgm.SCHEMA)).height == 0


def test_read_node_events(tmp_path):
    p = tmp_path / "events.txt"
    p.write_text(
        "NodeName|TimeStart|TimeEnd|State|Reason\n"
        "gpu001|1735689600|1735693200|DOWN|Not responding\n"
        "gpu002|2025-01-01T02:00:00|Unknown|DRAIN|XID 79\n"
        "gpu003|1735689600|DOWN\n"  # a field missing
        "|1735689600|1735693200|DOWN|cluster event\n"  # no node: a cluster-wide row
    )
    with pytest.warns(rl.ReliabilityWarning, match=r"events.txt:4: 1 node-event line"):
        ev, q = rl.read_node_events(p, tz="UTC")
    assert ev.rows() == [
        ("gpu001", T0, T0 + H, "DOWN", "Not responding"),
        ("gpu002", T0 + 2 * H, None, "DRAIN", "XID 79"),
    ]
    assert q.select("check", "action", "n_lines", "first_line").rows() == [
        ("bad_line", "excluded", 1, 4)
    ]


# ----------------------------------------------------------------------------- rates


def test_garwood_interval_matches_the_published_table():
    # exact Poisson 95 % limits, e.g. Garwood (1936) / the tables in Ulm (1990), Am J Epidemiol 131
    assert rl.garwood_interval(0) == pytest.approx((0.0, 3.689), abs=5e-4)
    assert rl.garwood_interval(1) == pytest.approx((0.0253, 5.572), abs=5e-4)
    assert rl.garwood_interval(2) == pytest.approx((0.2422, 7.225), abs=5e-4)
    assert rl.garwood_interval(10) == pytest.approx((4.795, 18.39), abs=5e-3)
    with pytest.raises(ValueError, match="k >= 0"):
        rl.garwood_interval(-1)


def test_garwood_without_scipy_uses_the_definition(monkeypatch):
    real = builtins.__import__

    def no_scipy(name, *a, **k):
        if name.startswith("scipy"):
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_scipy)
    assert rl.garwood_interval(2) == pytest.approx((0.2422, 7.2247), abs=5e-4)
    assert rl.garwood_interval(0) == pytest.approx((0.0, 3.6889), abs=5e-4)


@pytest.fixture
def rate_case():
    # four 1-node jobs of one day (one infra, one user failure), two 4-node jobs of half a day
    # (one infra failure)
    jobs = _frame(
        [
            _job("1", "COMPLETED", 0, 24, ["a"]),
            _job("2", "COMPLETED", 0, 24, ["b"]),
            _job("3", "NODE_FAIL", 0, 24, ["c"], exit_code=None),
            _job("4", "FAILED", 0, 24, ["d"], exit_code=2),
            _job("5", "NODE_FAIL", 0, 12, ["e", "f", "g", "h"], exit_code=None),
            _job("6", "COMPLETED", 0, 12, ["i", "j", "k", "l"]),
        ]
    )
    return rl.classify(jobs)


def test_failure_rate_by_size(rate_case):
    r = rl.failure_rate_by_size(rate_case)
    one = r.filter(pl.col("size_bin") == "1-8").row(0, named=True)
    assert (one["n_jobs"], one["n_failed"], one["n_infra_failure"], one["n_user_failure"]) == (
        4,
        2,
        1,
        1,
    )
    assert one["failure_rate"] == 0.5
    # Clopper-Pearson 2 of 4 at 95 %: (0.0676, 0.9324) (published binomial tables)
    assert (one["failure_rate_lo"], one["failure_rate_hi"]) == pytest.approx(
        (0.0676, 0.9324), abs=5e-4
    )
    four = r.filter(pl.col("size_bin") == "17-32").row(0, named=True)  # 4 nodes x 8 = 32 GPUs
    assert (four["n_jobs"], four["n_failed"], four["infra_failure_rate"]) == (2, 1, 0.5)


def test_infra_failure_rate_per_1000_gpu_and_node_days(rate_case):
    r = {row["unit"]: row for row in rl.infra_failure_rate(rate_case).iter_rows(named=True)}
    # node-days: 4 x 1 node x 1 d + 2 x 4 nodes x 0.5 d = 8; GPU-days: 8 x 8 = 64; 2 failures
    n, g = r["node-days"], r["GPU-days"]
    assert (n["n_failures"], n["exposure"], g["exposure"]) == (2, 8.0, 64.0)
    assert n["rate_per_1000"] == pytest.approx(1000 * 2 / 8)  # 250
    assert g["rate_per_1000"] == pytest.approx(1000 * 2 / 64)  # 31.25
    # Garwood k = 2: (0.2422, 7.2247) expected failures, over 8 node-days
    assert n["rate_lo_per_1000"] == pytest.approx(1000 * 0.24224 / 8, rel=1e-3)  # 30.28
    assert n["rate_hi_per_1000"] == pytest.approx(1000 * 7.22470 / 8, rel=1e-3)  # 903.1
    assert n["mttf_h"] == pytest.approx(8 * 24 / 2)  # 96 h per node
    assert g["mttf_h"] == pytest.approx(64 * 24 / 2)  # 768 h per GPU
    assert n["mttf_lo_h"] == pytest.approx(8 * 24 / 7.22470, rel=1e-3)


def test_no_failure_gives_an_upper_bound_and_no_mttf():
    c = rl.classify(_frame([_job("1", "COMPLETED", 0, 24, ["a"])]))
    n = rl.infra_failure_rate(c).filter(pl.col("unit") == "node-days").row(0, named=True)
    assert n["rate_per_1000"] == 0.0 and n["mttf_h"] is None
    assert n["rate_hi_per_1000"] == pytest.approx(1000 * 3.6889 / 1.0, rel=1e-3)


def test_mttf_by_size_against_the_independence_projection(rate_case):
    m = rl.mttf_by_size(rate_case, min_failures=1)
    one = m.filter(pl.col("size_bin") == "1").row(0, named=True)
    four = m.filter(pl.col("size_bin") == "3-4").row(0, named=True)
    # MTTF per node 96 h (above). 1 node: 96 job-hours, 1 failure; 4 nodes: 24 job-hours, 96 node-hours
    assert (one["job_hours"], one["node_hours"], one["measured_mttf_h"]) == (96.0, 96.0, 96.0)
    assert one["projected_mttf_h"] == pytest.approx(96.0)
    assert (four["job_hours"], four["node_hours"], four["mean_nodes"]) == (24.0, 96.0, 4.0)
    assert four["projected_mttf_h"] == pytest.approx(96.0 / 4)  # MTTF_node / N
    assert four["measured_mttf_h"] == pytest.approx(24.0)
    assert four["expected_failures"] == pytest.approx(96.0 / 96.0)
    # with the default of three failures neither bin has enough: counts stay, the MTTF does not
    d = rl.mttf_by_size(rate_case)
    assert d["enough"].to_list() == [False, False] and d["measured_mttf_h"].null_count() == 2
    p = rl.projected_mttf(96.0, [1, 4, 128])
    assert p.rows() == [(1, 8, 96.0), (4, 32, 24.0), (128, 1024, 0.75)]
    with pytest.raises(ValueError):
        rl.projected_mttf(0.0, [1])


# ----------------------------------------------------------------------------- goodput


def test_expected_ettr_by_hand():
    # 24 nodes at 0.01 failures per node-day: lambda = 0.24 / day = 0.01 / h
    # dt = 2 h, u0 = 0.5 h, c = 0.1 h: (1 - 0.01 x (0.5 + 1)) / (1 + 0.1 / 2) = 0.985 / 1.05
    assert rl.expected_ettr(24, 0.01, 2.0, 0.5, 0.1) == pytest.approx(0.985 / 1.05)
    assert rl.expected_ettr(24, 0.0, 2.0, 0.5, 0.0) == 1.0
    assert rl.expected_ettr(24, 100.0, 2.0, 0.5, 0.0) == 0.0  # clipped, never negative
    assert rl.young_interval(24, 0.01, 0.1) == pytest.approx(math.sqrt(2 * 0.1 / 0.01))  # 4.47 h
    assert rl.young_interval(24, 0.0, 0.1) is None
    with pytest.raises(ValueError):
        rl.expected_ettr(24, 0.01, 0.0)


def test_ettr_curve_marks_the_best_interval():
    c = rl.ettr_curve(0.01, [24], [1.0, 4.0, 16.0], restart_overhead_h=0.5, checkpoint_write_h=0.1)
    assert c["ettr"].to_list() == pytest.approx(
        [
            (1 - 0.01 * (0.5 + 0.5)) / (1 + 0.1),
            (1 - 0.01 * (0.5 + 2.0)) / (1 + 0.025),
            (1 - 0.01 * (0.5 + 8.0)) / (1 + 0.00625),
        ]
    )
    assert c["optimal"].to_list() == [False, True, False]  # Young: 4.47 h, nearest grid point 4 h
    best = max(range(3), key=lambda i: c["ettr"][i])
    assert best == 1


def test_measured_ettr_of_a_requeued_run():
    jobs = _frame(
        [
            _job("7", "NODE_FAIL", 0, 10, ["a", "b"], exit_code=None),
            _job("7", "COMPLETED", 11, 30, ["a", "c"]),
            _job("8", "COMPLETED", 0, 2, ["d"]),  # short: not a long run
        ]
    )
    c = rl.classify(jobs)
    r = rl.measured_ettr(
        c, failures_per_node_day=0.01, min_wall_h=24, checkpoint_interval_h=1.0,
        restart_overhead_h=0.5, checkpoint_write_h=0.0,
    )  # fmt: skip
    (row,) = r.rows(named=True)
    # wall 30 h, run 29 h, one interruption losing 0.5 + 1/2 = 1 h: 28 / 30
    assert (row["run_id"], row["n_attempts"], row["n_interruptions"]) == ("7", 2, 1)
    assert (row["wall_h"], row["allocated_h"], row["gap_h"], row["lost_h"]) == (
        30.0,
        29.0,
        1.0,
        1.0,
    )
    assert row["ettr"] == pytest.approx(28 / 30)
    assert row["expected_ettr"] == pytest.approx(1 - 2 * 0.01 / 24 * (0.5 + 0.5))
    # a 1-minute blocking save per 1-hour interval stalls 1/61 of the remaining 28 h
    r2 = rl.measured_ettr(
        c,
        min_wall_h=24,
        checkpoint_interval_h=1.0,
        restart_overhead_h=0.5,
        checkpoint_write_h=1 / 60,
    )
    assert r2["ettr"][0] == pytest.approx(28 * 60 / 61 / 30)
    assert r2["expected_ettr"][0] is None


def test_resubmission_after_an_interruption_joins_the_run():
    jobs = _frame(
        [
            _job("20", "TIMEOUT", 0, 20, ["a"]),
            _job("21", "COMPLETED", 22, 40, ["a"]),  # resubmitted 2 h later (same user and name)
        ]
    ).with_columns(JobName=pl.lit("pretrain"))
    runs = rl.training_runs(rl.classify(jobs), max_gap_h=12)
    assert runs.select("JobID", "run_id", "attempt_in_run").rows() == [
        ("20", "20", 1),
        ("21", "20", 2),
    ]
    assert rl.training_runs(rl.classify(jobs), max_gap_h=1)["run_id"].to_list() == ["20", "21"]


# ----------------------------------------------------------------------------- synthetic


def test_synthetic_failures_follow_the_published_quarter():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", slurm.SacctWarning)
        jobs = slurm.read_sacct("data/slurm/synthetic/sacct_parsable2.txt").jobs
    ne, tele, inc = failure_events(jobs)
    # SAKURAONE, first quarter of 2025: 21 incidents, by cause 9/4/1/5/1/1
    assert inc.height == ne.height == 21
    assert dict(inc.group_by("cause").len().rows()) == {c: n for c, n, _, _ in INCIDENT_CAUSES}
    assert inc["time"].dt.year().unique().to_list() == [2025] and inc["time"].dt.month().max() <= 3
    # every NODE_FAIL job of the dump got an incident
    nf = set(jobs.filter(pl.col("state") == "NODE_FAIL")["JobID"])
    assert nf <= set(inc["JobID"].drop_nulls())
    c = rl.classify(jobs, node_events=ne, gpu_events=rl.gpu_events(tele))
    assert (c["failure_class"].cast(pl.String) == "infra_failure").sum() == len(nf) + 3
    assert set(tele["labels"].unique()) == {'{"synthetic": "true"}'}


# ----------------------------------------------------------------------------- charts


def test_reliability_charts_in_japanese(rate_case):
    specs = [
        charts.reliability_failure_rate_by_size(rl.failure_rate_by_size(rate_case), synthetic=True),
        charts.reliability_mttf(
            rl.projected_mttf(96.0, [1, 2, 4]), rl.mttf_by_size(rate_case, min_failures=1)
        ),
        charts.reliability_ettr_curve(rl.ettr_curve(0.01, [1, 32])),
    ]
    ja = [charts.localize(s.to_dict(), "ja") for s in specs]
    assert ja[0]["title"] == "ジョブ規模別の失敗ジョブ (合成データ)"
    assert ja[1]["title"] == "ジョブ規模別の平均故障間隔 (MTTF)"
    assert ja[2]["title"]["text"] == "チェックポイント間隔と期待 ETTR"
    text = str(ja)
    for en in (
        "user failure",
        "projected: MTTF per node / nodes",
        "checkpoint interval (hours, log scale)",
    ):
        assert en not in text


def test_node_events_without_a_header_are_refused_in_one_line(tmp_path):
    p = tmp_path / "events.txt"
    p.write_text("gpu001|1735689600|1735693200|DOWN|Not responding\n")
    with pytest.raises(InputError, match=r"events.txt, line 1: expected a header with NodeName"):
        rl.read_node_events(p)
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    ev, q = rl.read_node_events(empty)
    assert ev.height == 0 and q.height == 0


def test_no_events_and_no_jobs_give_empty_frames_not_errors():
    c = rl.classify(_frame([]))
    assert c.height == 0
    m = rl.events_vs_jobs(pl.DataFrame(schema=rl.GPU_EVENT_SCHEMA), c)
    assert m.height == 0 and rl.events_per_node(m).height == 0 and rl.event_quality(m).height == 0
    assert rl.failure_rate_by_size(c).height == 0
    r = rl.infra_failure_rate(c)
    assert r["rate_per_1000"].to_list() == [None, None]
    assert rl.measured_ettr(c).height == 0


def test_every_failure_class_has_a_readers_name():
    # a class added to the taxonomy without a name would show its id in the book's tables
    assert list(rl.FAILURE_CLASS_NAMES) == list(rl.FAILURE_CLASSES)
    assert rl.FAILURE_CLASS_NAMES["infra_failure"] == "Infrastructure failure"
    assert all(n[0].isupper() and "_" not in n for n in rl.FAILURE_CLASS_NAMES.values())


def test_projections_stop_at_the_clusters_size():
    # a review found MTTF and ETTR projected to 128-node jobs on a 100-node cluster
    assert rl.job_sizes(100) == [1, 2, 4, 8, 16, 32, 64, 100]
    assert rl.job_sizes(64) == [1, 2, 4, 8, 16, 32, 64]
    assert rl.job_sizes(1) == [1]
    with pytest.raises(ValueError, match="0 nodes"):
        rl.job_sizes(0)
