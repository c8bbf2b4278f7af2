"""trainperf.reliability on real Slurm output: the jobs of scripts/slurm_fixtures_reliability.sh
(tests/data/slurm/real/reliability/README.md says what each job was and how Slurm ended it)."""

from __future__ import annotations

import datetime as dt
import json
import warnings
from pathlib import Path

import polars as pl
import pytest

from trainperf import reliability as rl
from trainperf import slurm

DATA = Path(__file__).parent / "data" / "slurm" / "real" / "reliability"
JOBS = json.loads((DATA / "jobs.json").read_text())


def _read(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", slurm.SacctWarning)  # NODE_FAIL 0:0: exit code unknown
        return slurm.read_sacct(DATA / name, tz="UTC")


@pytest.mark.parametrize("dump", ["sacct_parsable2.txt", "sacct.json"])
def test_real_jobs_get_the_class_of_how_they_ended(dump):
    d = _read(dump)
    ne, q = rl.read_node_events(DATA / "node_events.txt")
    assert q.height == 0
    c = rl.classify(d.jobs, node_events=ne).sort("JobID", "attempt")
    got = {
        (r["JobID"], r["attempt"]): (r["failure_class"], r["requeued"])
        for r in c.iter_rows(named=True)
    }
    j = {k: str(v) for k, v in JOBS.items() if k != "slurm_version"}
    assert got == {
        (j["completed"], 1): ("completed", False),
        (j["failed"], 1): ("user_failure", False),
        (j["timeout"], 1): ("timeout", False),
        (j["cancelled"], 1): ("cancelled", False),
        (j["requeued"], 1): ("requeued", True),  # State REQUEUED (scontrol requeue)
        (j["requeued"], 2): ("completed", False),
        (j["node_fail_requeued"], 1): ("infra_failure", True),  # NODE_FAIL, then requeued
        (j["node_fail_requeued"], 2): ("completed", False),
    }


def test_the_node_event_of_sacctmgr_marks_the_killed_step():
    d = _read("sacct_parsable2.txt")
    ne, _ = rl.read_node_events(DATA / "node_events.txt")
    # sacctmgr show event: localhost DOWN "fixture-node-failure" at the end of the first attempt
    assert ne.select("hostname", "state", "reason").rows() == [
        ("localhost", "DOWN", "fixture-node-failure")
    ]
    nf = str(JOBS["node_fail_requeued"])
    steps = rl.classify(d.steps, node_events=ne)
    first_batch = steps.filter(pl.col("JobID") == f"{nf}.batch").sort("start").row(0, named=True)
    # the .batch step of the killed attempt is CANCELLED in sacct: the node event makes it infra
    assert first_batch["state"] == "CANCELLED"
    assert (first_batch["failure_class"], first_batch["rule_id"]) == (
        "infra_failure",
        "infra_node_event",
    )
    assert first_batch["node_event"] == "DOWN: fixture-node-failure"
    # the node came back before the second attempt started: no evidence against it
    second = steps.filter(pl.col("JobID") == f"{nf}.batch").sort("start").row(1, named=True)
    assert second["failure_class"] == "completed" and second["node_event"] is None


def test_measured_ettr_of_the_real_requeued_run():
    d = _read("sacct_parsable2.txt")
    c = rl.classify(d.jobs)
    nf = str(JOBS["node_fail_requeued"])
    att = c.filter(pl.col("JobID") == nf).sort("start")
    first, second = att.rows(named=True)
    # hand computation from the dump: wall = last End - first Start, run = the two Elapsed values
    wall_s = (second["end"] - first["start"]).total_seconds()
    run_s = first["elapsed_s"] + second["elapsed_s"]
    r = rl.measured_ettr(
        c,
        min_wall_h=0,
        checkpoint_interval_h=2 / 3600,
        restart_overhead_h=0.0,
        checkpoint_write_h=0.0,
    ).filter(pl.col("run_id") == nf)
    (row,) = r.rows(named=True)
    assert (row["n_attempts"], row["n_interruptions"]) == (2, 1)
    assert row["wall_h"] == pytest.approx(wall_s / 3600)
    # one interruption losing half a 2-second checkpoint interval: (run - 1 s) / wall
    assert row["ettr"] == pytest.approx((run_s - 1) / wall_s)
    assert first["start"] < second["start"] and isinstance(first["start"], dt.datetime)
