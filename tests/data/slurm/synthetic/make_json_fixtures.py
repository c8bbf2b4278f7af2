"""Write the SYNTHETIC ``sacct --json`` fixtures ``json_<version>.json`` in this folder.

The same three jobs are written in the shape of each Slurm release, following the real outputs of Slurm 21.08-25.05 in mila-iqia/SARC
(``tests/functional/jobs/sacct_outputs/slurm_{21_8_8,22_5_9,23_2_6,23_11_5}.json``,
``tests/data/sacct/*.json``) and Slurm's own 22.05.8 output in ../real/. Run: ``python tests/data/slurm/synthetic/make_json_fixtures.py``.

Jobs (values the tests check by hand):
  200 pretrain  COMPLETED, 4 nodes gpu[001-004], 32 GPUs recorded as gres/gpu=32 AND gres/gpu:h100=32,
                submit 1717200000 (2024-06-01T00:00Z), start +3600, end +10800, elapsed 7200 s,
                limit 1440 min; steps batch (1.5 s CPU) and 0 (elapsed 7180 s, 4 nodes).
  201 cancelled CANCELLED by user bob before it started: start unset (0 / NO_VAL / {set:false}),
                unlimited limit, nodes "None assigned", no TRES.
  210 (209_7)   array task 7 of array 209, FAILED with exit code 2, 1 node gpu010, 8 GPUs, limit 60 min.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
T0 = 1717200000  # 2024-06-01T00:00:00Z


def obj(number, *, set_=True, infinite=False):
    return {"set": set_, "infinite": infinite, "number": number}


def tres(items, version):
    out = []
    for typ, name, tid, count in items:
        if version in ("21.08", "22.05"):
            nm = name  # null for cpu/mem/node
        else:
            nm = name or ""
        d = {"type": typ, "name": nm, "id": tid, "count": count}
        if version == "25.05":
            d.update({"task": None, "node": None})
        out.append(d)
    return out


def job_tres(gpus, nodes, cpus, version):
    items = [("cpu", None, 1, cpus), ("mem", None, 2, 64000 * nodes), ("node", None, 4, nodes)]
    items += [
        ("billing", None, 5, cpus),
        ("gres", "gpu", 1001, gpus),
        ("gres", "gpu:h100", 1002, gpus),
    ]
    return tres(items, version)


def exit_code(rc, version, signal=0):
    status = "SUCCESS" if rc == 0 and signal == 0 else ("SIGNALED" if signal else "FAILED")
    if version in ("21.08", "22.05", "23.02"):
        return {"status": status, "return_code": rc}
    return {
        "status": [status],
        "return_code": obj(rc),
        "signal": {"id": obj(signal, set_=bool(signal)), "name": ""},
    }


def state(s, version):
    return {"current": s if version in ("21.08", "22.05", "23.02") else [s], "reason": "None"}


def step(job_id, sid, name, start, end, nodes, count, gpus, cpu_us, version):
    t_start, t_end = start, end
    if version in ("24.11", "25.05"):
        t_start, t_end = obj(start), obj(end)
    if version in ("21.08", "22.05"):
        step_obj = {"job_id": job_id, "het": {"component": None}, "id": sid, "name": name}
    elif version == "23.02":
        step_obj = {
            "id": {"job_id": job_id, "step_het_component": 4294967294, "step_id": str(sid)},
            "name": name,
        }
    else:
        step_obj = {"id": f"{job_id}.{sid}", "name": name}
    node_obj = {"count": count, "range": nodes}
    if version not in ("21.08",):
        node_obj["list"] = [nodes] if count == 1 else [f"gpu00{i}" for i in range(1, count + 1)]
    return {
        "time": {
            "elapsed": end - start,
            "start": t_start,
            "end": t_end,
            "suspended": 0,
            "total": {"seconds": cpu_us // 1_000_000, "microseconds": cpu_us % 1_000_000},
            "user": {"seconds": cpu_us // 1_000_000, "microseconds": cpu_us % 1_000_000},
            "system": {"seconds": 0, "microseconds": 0},
        },
        "exit_code": exit_code(0, version),
        "nodes": node_obj,
        "tasks": {"count": count},
        "state": "COMPLETED" if version in ("21.08", "22.05", "23.02") else ["COMPLETED"],
        "step": step_obj,
        "tres": {
            "requested": {"max": [], "min": [], "average": [], "total": []},
            "consumed": {"max": [], "min": [], "average": [], "total": []},
            "allocated": job_tres(gpus, count, 32 * count, version),
        },
        "kill_request_user": None if version in ("21.08", "22.05") else "",
    }


def job(
    version, job_id, name, user, st, rc, start, end, limit, nodes, n_nodes, gpus, array, steps, kill
):
    old = version in ("21.08", "22.05")
    elapsed = (end - start) if start is not None else 0
    if start is None:  # never started: the unset epoch of the version
        start = {"21.08": 0, "22.05": 0, "23.02": 0, "23.11": 4294967294}.get(version, 0)
    if limit == "unlimited":
        limit_v = {"21.08": 4294967295, "22.05": None}.get(version, obj(0, infinite=True))
    else:
        limit_v = limit if old else obj(limit)
    task_id = array[1] if array else None
    if not old:
        task_id = obj(task_id if task_id is not None else 0, set_=task_id is not None)
    comment = (
        {"administrator": None, "job": None, "system": None}
        if old
        else {"administrator": "", "job": "", "system": ""}
    )
    if version == "24.11":
        comment = None  # 24.11: non-required empty objects are dumped as null
    return {
        "account": "llm",
        "comment": comment,
        "allocation_nodes": n_nodes,
        "array": {
            "job_id": array[0] if array else (job_id if version == "25.05" else 0),
            "limits": {"max": {"running": {"tasks": 0}}},
            "task_id": task_id,
            "task": None if old else "",
        },
        "association": {
            "account": "llm",
            "cluster": "synth",
            "partition": None if old else "",
            "user": user,
        },
        "cluster": "synth",
        "derived_exit_code": exit_code(0, version),
        "exit_code": exit_code(rc, version),
        "time": {
            "elapsed": elapsed,
            "eligible": T0,
            "end": end,
            "start": start,
            "submission": T0,
            "suspended": 0,
            "limit": limit_v,
            "total": {"seconds": 0, "microseconds": 0},
            "user": {"seconds": 0, "microseconds": 0},
            "system": {"seconds": 0, "microseconds": 0},
        },
        "flags": ["STARTED_ON_SCHEDULE"],
        "group": user,
        "het": {"job_id": 0, "job_offset": None if old else obj(0, set_=False)},
        "job_id": job_id,
        "name": name,
        "nodes": nodes,
        "partition": "gpu",
        "priority": 1000 if old else obj(1000),
        "qos": "normal",
        "kill_request_user": kill if kill else (None if old else ""),
        "state": state(st, version),
        "steps": steps,
        "tres": {
            "allocated": job_tres(gpus, n_nodes, 32 * n_nodes, version) if n_nodes else [],
            "requested": job_tres(gpus, max(n_nodes, 1), 32 * max(n_nodes, 1), version),
        },
        "user": user,
        "wckey": {"wckey": "", "flags": []},
    }


def meta(version):
    major, minor = version.split(".")
    if version in ("21.08", "22.05"):
        dbv = {"21.08": "0.0.37", "22.05": "0.0.38"}[version]
        return {
            "plugin": {"type": f"openapi/dbv{dbv}", "name": f"Slurm OpenAPI DB v{dbv}"},
            "Slurm": {
                "version": {"major": int(major), "micro": 1, "minor": int(minor)},
                "release": f"{version}.1",
            },
        }
    if version == "23.02":
        return {
            "plugins": {
                "data_parser": "data_parser/v0.0.39",
                "accounting_storage": "accounting_storage/slurmdbd",
            },
            "command": ["sacct", "--json"],
            "Slurm": {"version": {"major": 23, "micro": 1, "minor": 2}, "release": "23.02.1"},
        }
    parser = {"23.11": "v0.0.40", "24.11": "v0.0.42", "25.05": "v0.0.43"}[version]
    return {
        "plugin": {
            "type": "",
            "name": "",
            "data_parser": f"data_parser/{parser}",
            "accounting_storage": "accounting_storage/slurmdbd",
        },
        "client": {"source": "/dev/pts/0", "user": "synth", "group": "synth"},
        "command": ["sacct", "--json"],
        "slurm": {
            "version": {"major": major, "micro": "1", "minor": minor.lstrip("0")},
            "release": f"{version}.1",
            "cluster": "synth",
        },
    }


def document(version):
    a_start, a_end = T0 + 3600, T0 + 10800
    steps_a = [
        step(200, "batch", "batch", a_start, a_end, "gpu001", 1, 8, 1_500_000, version),
        step(
            200,
            0,
            "python",
            a_start + 10,
            a_end - 10,
            "gpu[001-004]",
            4,
            32,
            3_600_000_000,
            version,
        ),
    ]
    jobs = [
        job(
            version,
            200,
            "pretrain",
            "alice",
            "COMPLETED",
            0,
            a_start,
            a_end,
            1440,
            "gpu[001-004]",
            4,
            32,
            None,
            steps_a,
            None,
        ),
        job(
            version,
            201,
            "cancelled",
            "bob",
            "CANCELLED",
            0,
            None,
            T0 + 1000,
            "unlimited",
            "None assigned",
            0,
            8,
            None,
            [],
            "bob",
        ),
        job(
            version,
            210,
            "sweep",
            "carol",
            "FAILED",
            2,
            a_start,
            a_start + 3600,
            60,
            "gpu010",
            1,
            8,
            (209, 7),
            [],
            None,
        ),
    ]
    return {"meta": meta(version), "errors": [], "warnings": [], "jobs": jobs}


if __name__ == "__main__":
    for v in ("21.08", "22.05", "23.02", "23.11", "24.11", "25.05"):
        path = HERE / f"json_{v.replace('.', '_')}.json"
        path.write_text(json.dumps(document(v), indent=1) + "\n")
        print("wrote", path)
