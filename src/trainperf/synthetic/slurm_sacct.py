"""SYNTHETIC sacct output: a job history (:mod:`trainperf.synthetic.slurm_history`) as real sacct writes it.

* ``sacct --parsable2`` text with a header (:func:`format_parsable2`, fields :data:`PARSABLE2_FIELDS`;
  JobName is last so that a ``|`` in a name can be recovered);
* ``sacct --json`` in the shape of Slurm 22.05 (openapi/dbv0.0.38) (:func:`format_json`), modelled on
  the real 22.05.8 output in ``tests/data/slurm/real/sacct.json``; unlike that real output, failed
  jobs carry their true return code.

The formats follow https://slurm.schedmd.com/sacct.html; the command line each stands for is in
:mod:`trainperf.synthetic.slurm`.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import hostlist

from trainperf.synthetic.slurm_history import (
    ACCOUNT,
    CLUSTER,
    CPUS_PER_NODE,
    GPUS_PER_NODE,
    MEM_PER_NODE_G,
    SLURM_RELEASE,
    SynthJob,
    SynthStep,
)

__all__ = ["PARSABLE2_FIELDS", "format_json", "format_parsable2", "write_json", "write_parsable2"]

#: ``-o`` field list of the parsable2 dump (JobName last: a ``|`` in a name stays recoverable).
PARSABLE2_FIELDS: tuple[str, ...] = (
    "JobID",
    "JobIDRaw",
    "User",
    "Account",
    "Partition",
    "State",
    "ExitCode",
    "Submit",
    "Start",
    "End",
    "Elapsed",
    "Timelimit",
    "NNodes",
    "NCPUS",
    "NodeList",
    "AllocTRES",
    "ReqTRES",
    "JobName",
)


# ------------------------------------------------------------------------------------------------
# sacct --parsable2
# ------------------------------------------------------------------------------------------------


def _iso(t: int | None) -> str:
    if t is None:
        return "None"
    return _dt.datetime.fromtimestamp(t, tz=_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _dur(seconds: int | None) -> str:
    """``secs2time_str``: ``D-HH:MM:SS`` from one day on, else ``HH:MM:SS``; None → UNLIMITED."""
    if seconds is None:
        return "UNLIMITED"
    d, r = divmod(int(seconds), 86400)
    h, r = divmod(r, 3600)
    m, s = divmod(r, 60)
    return f"{d}-{h:02d}:{m:02d}:{s:02d}" if d else f"{h:02d}:{m:02d}:{s:02d}"


def _tres(n_nodes: int, *, billing: bool, mem: bool = True) -> str:
    g = n_nodes * GPUS_PER_NODE
    parts = []
    if billing:
        parts.append(f"billing={n_nodes * CPUS_PER_NODE}")
    parts.append(f"cpu={n_nodes * CPUS_PER_NODE}")
    parts += [f"gres/gpu:h100={g}", f"gres/gpu={g}"]
    if mem:
        parts.append(f"mem={n_nodes * MEM_PER_NODE_G}G")
    parts.append(f"node={n_nodes}")
    return ",".join(parts)


def _hostlist(nodes: Sequence[str]) -> str:
    return hostlist.collect_hostlist(list(nodes)) if nodes else "None assigned"


def format_parsable2(jobs: Sequence[SynthJob]) -> str:
    """``sacct --parsable2`` text (header + one line per job and step) for :data:`PARSABLE2_FIELDS`."""
    lines = ["|".join(PARSABLE2_FIELDS)]
    for j in jobs:
        state = j.state
        if j.cancelled_by is not None:
            state = f"CANCELLED by {j.cancelled_by[1]}"
        started = j.start is not None
        lines.append(
            "|".join(
                [
                    j.job_id_text,
                    str(j.job_id),
                    j.user,
                    ACCOUNT,
                    j.partition,
                    state,
                    f"{j.exit_code}:{j.signal}",
                    _iso(j.submit),
                    _iso(j.start),
                    _iso(j.end),
                    _dur(j.elapsed_s),
                    _dur(j.timelimit_s),
                    str(j.n_nodes),
                    str(j.n_nodes * CPUS_PER_NODE),
                    _hostlist(j.nodes),
                    _tres(j.n_nodes, billing=True) if started else "",
                    _tres(j.n_nodes, billing=True),
                    j.name,
                ]
            )
        )
        for s in j.steps:
            n = len(s.nodes)
            lines.append(
                "|".join(
                    [
                        f"{j.job_id_text}.{s.step}",
                        f"{j.job_id}.{s.step}",
                        "",
                        "",
                        "",
                        s.state,
                        f"{s.exit_code}:{s.signal}",
                        _iso(s.start),
                        _iso(s.start),
                        _iso(s.end),
                        _dur(s.end - s.start),
                        "",
                        str(n),
                        str(n * CPUS_PER_NODE),
                        _hostlist(s.nodes),
                        _tres(n, billing=False),
                        "",
                        s.name,
                    ]
                )
            )
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------
# sacct --json, Slurm 22.05 (openapi/dbv0.0.38)
# ------------------------------------------------------------------------------------------------


def _json_tres(n_nodes: int, *, billing: bool) -> list[dict[str, Any]]:
    g = n_nodes * GPUS_PER_NODE
    items = [
        {"type": "cpu", "name": None, "id": 1, "count": n_nodes * CPUS_PER_NODE},
        {"type": "mem", "name": None, "id": 2, "count": n_nodes * MEM_PER_NODE_G * 1024},
        {"type": "energy", "name": None, "id": 3, "count": None},
        {"type": "node", "name": None, "id": 4, "count": n_nodes},
    ]
    if billing:
        items.append({"type": "billing", "name": None, "id": 5, "count": n_nodes * CPUS_PER_NODE})
    items += [
        {"type": "gres", "name": "gpu", "id": 1001, "count": g},
        {"type": "gres", "name": "gpu:h100", "id": 1002, "count": g},
    ]
    return items


def _json_exit(rc: int, sig: int) -> dict[str, Any]:
    if sig:
        return {"status": "SIGNALED", "return_code": None, "signal": {"signal_id": sig, "name": ""}}
    return {"status": "SUCCESS" if rc == 0 else "FAILED", "return_code": rc}


def _json_step(j: SynthJob, s: SynthStep) -> dict[str, Any]:
    n = len(s.nodes)
    sid: str | int = int(s.step) if s.step.isdigit() else s.step
    return {
        "nodes": {"list": list(s.nodes), "count": n, "range": _hostlist(s.nodes)},
        "tres": {"allocated": [t for t in _json_tres(n, billing=False) if t["type"] != "energy"]},
        "time": {"elapsed": s.end - s.start, "end": s.end, "start": s.start, "suspended": 0},
        "exit_code": _json_exit(s.exit_code, s.signal),
        "tasks": {"count": n},
        "kill_request_user": None,
        "state": s.state,
        "step": {"job_id": j.job_id, "het": {"component": None}, "id": sid, "name": s.name},
    }


def _json_job(j: SynthJob) -> dict[str, Any]:
    started = j.start is not None
    zero = {"seconds": 0, "microseconds": 0}
    return {
        "account": ACCOUNT,
        "comment": {"administrator": None, "job": None, "system": None},
        "allocation_nodes": j.n_nodes if started else 0,
        "array": {
            "job_id": j.array_id or 0,
            "limits": {"max": {"running": {"tasks": 0}}},
            "task": None,
            "task_id": j.array_task,
        },
        "association": {"account": ACCOUNT, "cluster": CLUSTER, "partition": None, "user": j.user},
        "cluster": CLUSTER,
        "constraints": "",
        "container": None,
        "derived_exit_code": {"status": "SUCCESS", "return_code": 0},
        "time": {
            "elapsed": j.elapsed_s,
            "eligible": j.submit,
            "end": j.end,
            "start": j.start if started else 0,
            "submission": j.submit,
            "suspended": 0,
            "system": zero,
            "limit": j.timelimit_s // 60 if j.timelimit_s is not None else None,
            "total": zero,
            "user": zero,
        },
        "exit_code": _json_exit(j.exit_code, j.signal),
        "flags": ["STARTED_ON_SCHEDULE"] if started else [],
        "group": j.user,
        "het": {"job_id": 0, "job_offset": None},
        "job_id": j.job_id,
        "name": j.name,
        "mcs": {"label": ""},
        "nodes": _hostlist(j.nodes),
        "partition": j.partition,
        "priority": 4294901000 - j.job_id % 100000,
        "qos": "normal",
        "required": {"CPUs": j.n_nodes * CPUS_PER_NODE, "memory": 0},
        "kill_request_user": j.cancelled_by[0] if j.cancelled_by else None,
        "reservation": {"id": 0, "name": 0},
        "state": {"current": j.state, "reason": "None"},
        "steps": [_json_step(j, s) for s in j.steps],
        "tres": {
            "allocated": _json_tres(j.n_nodes, billing=True) if started else [],
            "requested": _json_tres(j.n_nodes, billing=True),
        },
        "user": j.user,
        "wckey": {"wckey": "", "flags": []},
        "working_directory": f"/home/{j.user}",
    }


def format_json(jobs: Sequence[SynthJob]) -> str:
    """``sacct --json`` text in the Slurm 22.05 (openapi/dbv0.0.38) shape, one job per line."""
    major, minor, micro = (int(x) for x in SLURM_RELEASE.split("."))
    meta = {
        "plugin": {"type": "openapi/dbv0.0.38", "name": "Slurm OpenAPI DB v0.0.38"},
        "Slurm": {
            "version": {"major": major, "micro": micro, "minor": minor},
            "release": SLURM_RELEASE,
        },
    }
    body = ",\n".join(
        "  " + json.dumps(_json_job(j), ensure_ascii=False, separators=(",", ":")) for j in jobs
    )
    head = json.dumps(meta, separators=(",", ":"))
    return f'{{\n "meta": {head},\n "errors": [],\n "jobs": [\n{body}\n ]\n}}\n'


def write_parsable2(jobs: Sequence[SynthJob], path: str | Path) -> Path:
    """Write :func:`format_parsable2` to ``path`` (UTF-8, ``\\n`` line ends)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(format_parsable2(jobs).encode("utf-8"))
    return p


def write_json(jobs: Sequence[SynthJob], path: str | Path) -> Path:
    """Write :func:`format_json` to ``path`` (UTF-8)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(format_json(jobs).encode("utf-8"))
    return p
