"""sacct --json job records missing ``time``, ``state`` or ``tres`` (trial B F7): the job is kept,
the values those objects give are empty (unknown) and a flagged row names the file and the job id."""

from __future__ import annotations

import json
import warnings

import pytest

from trainperf import slurm

GPU8 = {"allocated": [{"type": "gres", "name": "gpu", "count": 8}]}
TIME = {
    "elapsed": 3600,
    "start": {"set": True, "number": 1717200000},
    "end": {"set": True, "number": 1717203600},
    "submission": {"set": True, "number": 1717200000},
}


def job(jid, **drop):
    j = {
        "job_id": jid,
        "name": f"j{jid}",
        "state": {"current": ["COMPLETED"]},
        "time": TIME,
        "tres": GPU8,
        "allocation_nodes": 1,
        "nodes": "n1",
        "steps": [],
    }
    for k in drop:
        j.pop(k)
    return j


@pytest.mark.parametrize(
    ("missing", "col"), [("time", "elapsed_s"), ("state", "state"), ("tres", "n_gpus")]
)
def test_job_record_without_an_object_is_flagged(tmp_path, missing, col):
    doc = {
        "meta": {"slurm": {"version": {"major": "23", "minor": "11", "micro": "4"}}},
        "jobs": [job(101), job(102, **{missing: None})],
    }
    p = tmp_path / "sacct.json"
    p.write_text(json.dumps(doc))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        d = slurm.read_sacct_dumps([p])
    jobs = {r["JobID"]: r for r in d.jobs.iter_rows(named=True)}
    # job 101 whole: 8 GPUs x 3600 s = 8.0 GPU-hours, COMPLETED; job 102 kept, its value unknown
    assert jobs["101"]["gpu_hours"] == pytest.approx(8.0) and jobs["101"]["state"] == "COMPLETED"
    assert jobs["102"][col] is None
    assert f"missing_{missing}" in jobs["102"]["data_flags"]
    q = d.quality.filter(d.quality["check"] == f"missing_{missing}").row(0, named=True)
    assert q["action"] == "flagged" and q["source"] == str(p) and "(102)" in q["detail"]
    assert any(str(p) in str(x.message) and "102" in str(x.message) for x in w)
