"""Write the SYNTHETIC damage fixtures of issue 15 in this folder (hand-made, not produced by Slurm).

Run: ``python tests/data/slurm/synthetic/make_damage_fixtures.py``. Built with the helpers of
``make_json_fixtures.py`` (same job shapes per release).

``json_job_resources.json`` (Slurm 24.11 shape, data_parser v0.0.42; job_resources shapes from the
REST API schemas v0.0.39-v0.0.43, https://slurm.schedmd.com/rest_api.html):
  300  no top-level ``nodes``; ``job_resources.nodes`` = {count 4, list "gpu[001-004]", allocation}.
  301  ``nodes`` ""; ``job_resources.nodes`` = "gpu[005-006]" (the v0.0.39/40 string form).
  302  ``nodes`` "None assigned"; only ``job_resources.allocated_nodes`` [{nodename gpu007},
       {nodename gpu009}] (v0.0.39/40).
  303  started, ``allocation_nodes`` 4, no node names anywhere.
  304  ``nodes`` "gpu[011-012]" and job_resources agreeing: nothing to correct.

``json_damage_22_05.json`` (Slurm 22.05 shape, dbv0.0.38):
  400  OUT_OF_MEMORY with exit_code {"status": "SUCCESS", "return_code": 0}.
  401  NODE_FAIL with {"status": "SUCCESS", "return_code": 0}.
  402  FAILED with {"status": "SUCCESS", "return_code": 0}.
  403  COMPLETED, exit 0: untouched.
  404  OUT_OF_MEMORY with {"status": "SIGNALED", "signal": {"signal_id": 125}}: kept as 0:125.
  405  COMPLETED, name b"caf\\xe9-\\x82\\xa0" (Latin-1 and Shift_JIS bytes, written raw: not UTF-8).

``parsable2_non_utf8.txt``: two jobs; job 501's JobName is b"caf\\xe9" (line 3), job 502's
b"\\x82\\xa0\\x82\\xa2" (line 4); job 500 (line 2) is clean.

``parsable2_damaged_lines.txt``: six jobs, three of them damaged: line 3 (job 601) has the Elapsed
``1:75:00`` (minutes 75), line 5 (job 603) is cut off after State, line 6 (job 604) has the Start
``2024-13-01T00:00:00`` (month 13).
"""

from __future__ import annotations

import json
from pathlib import Path

from make_json_fixtures import T0, exit_code, job, meta

HERE = Path(__file__).parent


def job_resources_doc() -> dict:
    v = "24.11"
    s, e = T0 + 3600, T0 + 7200
    jobs = [
        job(v, 300, "jr-object", "alice", "COMPLETED", 0, s, e, 60, None, 4, 32, None, [], None),
        job(v, 301, "jr-string", "alice", "COMPLETED", 0, s, e, 60, "", 2, 16, None, [], None),
        job(
            v,
            302,
            "jr-alloc",
            "bob",
            "COMPLETED",
            0,
            s,
            e,
            60,
            "None assigned",
            2,
            16,
            None,
            [],
            None,
        ),
        job(v, 303, "jr-none", "bob", "FAILED", 1, s, e, 60, "", 4, 32, None, [], None),
        job(
            v,
            304,
            "jr-both",
            "carol",
            "COMPLETED",
            0,
            s,
            e,
            60,
            "gpu[011-012]",
            2,
            16,
            None,
            [],
            None,
        ),
    ]
    del jobs[0]["nodes"]
    jobs[0]["job_resources"] = {
        "select_type": ["CR_CPU"],
        "nodes": {
            "count": 4,
            "select_type": ["AVAILABLE"],
            "list": "gpu[001-004]",
            "whole": True,
            "allocation": [
                {"index": i, "name": f"gpu00{i + 1}", "cpus": {"count": 32}} for i in range(4)
            ],
        },
        "cpus": 128,
        "threads_per_core": {"set": True, "infinite": False, "number": 1},
    }
    jobs[1]["job_resources"] = {
        "nodes": "gpu[005-006]",
        "allocated_hosts": 2,
        "allocated_cores": 64,
    }
    jobs[2]["job_resources"] = {
        "allocated_hosts": 2,
        "allocated_nodes": [{"nodename": "gpu007", "cpus": 32}, {"nodename": "gpu009", "cpus": 32}],
    }
    jobs[3]["job_resources"] = None
    jobs[4]["job_resources"] = {"nodes": {"count": 2, "list": "gpu[011-012]"}}
    return {"meta": meta(v), "errors": [], "warnings": [], "jobs": jobs}


def damage_22_05_doc() -> dict:
    v = "22.05"
    s, e = T0 + 3600, T0 + 7200
    rows = [
        (400, "oom", "OUT_OF_MEMORY"),
        (401, "nodefail", "NODE_FAIL"),
        (402, "fail", "FAILED"),
        (403, "ok", "COMPLETED"),
        (404, "oom-signal", "OUT_OF_MEMORY"),
        (405, "NAME_PLACEHOLDER", "COMPLETED"),
    ]
    jobs = []
    for k, (jid, name, st) in enumerate(rows):
        node = f"gpu{20 + k:03d}"
        jobs.append(job(v, jid, name, "dave", st, 0, s, e, 60, node, 1, 8, None, [], None))
    jobs[4]["exit_code"] = {"status": "SIGNALED", "return_code": None, "signal": {"signal_id": 125}}
    assert jobs[0]["exit_code"] == exit_code(0, v) == {"status": "SUCCESS", "return_code": 0}
    return {"meta": meta(v), "errors": [], "warnings": [], "jobs": jobs}


PARSABLE_HEAD = (
    "JobID|JobIDRaw|State|ExitCode|Start|End|Elapsed|NNodes|NodeList|AllocTRES|JobName\n"
)


def line(jid: int, name: str, elapsed: str = "01:00:00", start: str = "2024-06-01T00:00:00") -> str:
    return f"{jid}|{jid}|COMPLETED|0:0|{start}|2024-06-01T01:00:00|{elapsed}|1|gpu001|gres/gpu=8,node=1|{name}\n"


if __name__ == "__main__":
    (HERE / "json_job_resources.json").write_text(json.dumps(job_resources_doc(), indent=1) + "\n")
    text = json.dumps(damage_22_05_doc(), indent=1) + "\n"
    raw = text.encode("utf-8").replace(b"NAME_PLACEHOLDER", b"caf\xe9-\x82\xa0")
    (HERE / "json_damage_22_05.json").write_bytes(raw)
    (HERE / "parsable2_non_utf8.txt").write_bytes(
        (PARSABLE_HEAD + line(500, "clean")).encode()
        + line(501, "@1@").encode().replace(b"@1@", b"caf\xe9")
        + line(502, "@2@").encode().replace(b"@2@", b"\x82\xa0\x82\xa2")
    )
    damaged = (
        PARSABLE_HEAD
        + line(600, "a")
        + line(601, "b", elapsed="1:75:00")
        + line(602, "c")
        + "603|603|COMPLETED\n"
        + line(604, "e", start="2024-13-01T00:00:00")
        + line(605, "f")
    )
    (HERE / "parsable2_damaged_lines.txt").write_text(damaged)
    print("wrote the damage fixtures in", HERE)
