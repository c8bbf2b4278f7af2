"""SYNTHETIC failure events for the SYNTHETIC sacct history: node down/drain events and DCGM errors.

Nothing here comes from a real cluster. The bundled accounting history
(:mod:`trainperf.synthetic.slurm`) has job end states but no node events and no GPU telemetry; the
reliability section needs both to show the taxonomy's evidence rules and the telemetry join. This
module derives them, seeded, from the jobs of the dump:

* **Infrastructure failures, calibrated to a published rate**: 21 incidents between 2025-01-01
  and 2025-03-31 (published: 13 in January, 5 in February, 3 in March; the bundled dump's NODE_FAIL
  jobs, which each take one, put 12 / 6 / 3 here: the quarter's total is exact, the monthly split
  as close as those jobs allow), split by cause as published for
  SAKURAONE's first three months of operation: 9 GPU, 4 NVLink/NVSwitch/PCIe switch, 1
  NIC/transceiver, 5 interconnect switch, 1 storage switch, 1 misconfiguration (Konishi, Tsubouchi,
  Tsuruta, "SAKURAONE: An Open Ethernet-Based AI HPC System and Its Observed Workload Dynamics in a
  Single-Tenant LLM Development Environment", MLSys 2026, arXiv 2604.13600, section 4.3, as relayed
  by a third-party summary; not checked against the paper). Each incident is a node event
  (``DOWN`` for GPU and NVLink causes, ``DRAIN`` otherwise) on one node, lasting 1 h (10 of the 21,
  "cleared by a reboot"), 72 h (3, "hardware replaced by the vendor") or 8 h (the rest). The
  dump's NODE_FAIL jobs take an incident each, placed a few minutes before their end on one of
  their nodes; three FAILED multi-node jobs of the period take one each (the telemetry join then
  reclassifies them as infrastructure failures); the rest fall on nodes running no job.
* **DCGM evidence** for the GPU and NVLink causes, as the DCGM exporter would show it on the
  incident's GPU: ``DCGM_FI_DEV_XID_ERRORS`` (79 fallen off the bus, 48 double-bit ECC with a
  ``DCGM_FI_DEV_ECC_DBE_VOL_TOTAL`` increase, 94/95 contained/uncontained ECC, 64 with
  ``DCGM_FI_DEV_ROW_REMAP_FAILURE`` = 1, 119 GSP timeout; 74 NVLink), job label ``hpc_job`` set
  when a job ran there.
* **Events that are not infrastructure failures**: application XIDs (13, 31, 43, NVIDIA's XID
  catalogue: typically a user program's fault) just before the end of 10 FAILED jobs, XID 63
  (a row-remap recorded, informational) on 3 COMPLETED jobs, and 30 clock-throttle episodes
  (``DCGM_FI_DEV_CLOCKS_EVENT_REASONS`` with HW thermal / power-brake bits) during long jobs.

Every table and figure built from these says "SYNTHETIC".
"""

from __future__ import annotations

import datetime as _dt
import json
from typing import NamedTuple

import numpy as np
import polars as pl

from trainperf import dcgm
from trainperf.reliability import NODE_EVENT_SCHEMA

__all__ = ["INCIDENT_CAUSES", "INCIDENTS_PER_MONTH", "SEED", "IncidentCause", "failure_events"]

SEED = 20250101
#: Published incidents per month of SAKURAONE's first quarter (January 2025 is burn-in).
INCIDENTS_PER_MONTH: dict[int, int] = {1: 13, 2: 5, 3: 3}


class IncidentCause(NamedTuple):
    """One row of :data:`INCIDENT_CAUSES`."""

    cause: str
    n: int  # published incidents of this cause
    state: str  # the Slurm node state the events set: DOWN or DRAIN
    xids: tuple[int, ...]  # the XID code of each incident, for the telemetry (none: no GPU XID)


#: Published incidents by cause, with the node-event state and the XID codes used for the telemetry.
INCIDENT_CAUSES: tuple[IncidentCause, ...] = (
    IncidentCause("GPU", 9, "DOWN", (79, 48, 79, 94, 95, 64, 79, 119, 48)),
    IncidentCause("NVLink/NVSwitch/PCIe switch", 4, "DOWN", (74, 74, 74, 74)),
    IncidentCause("NIC/transceiver", 1, "DRAIN", ()),
    IncidentCause("interconnect switch", 5, "DRAIN", ()),
    IncidentCause("storage switch", 1, "DRAIN", ()),
    IncidentCause("misconfiguration", 1, "DRAIN", ()),
)
_XID_NAME = {
    13: "Graphics Engine Exception",
    31: "GPU memory page fault",
    43: "GPU stopped processing",
    48: "Double Bit ECC Error",
    63: "row remapping recording event",
    64: "row remapping failure",
    74: "NVLink error",
    79: "GPU has fallen off the bus",
    94: "Contained ECC error",
    95: "Uncontained ECC error",
    119: "GSP RPC timeout",
}
_YEAR = 2025


def _dcgm_rows(
    host: str,
    gpu: int,
    t: _dt.datetime,
    field_id: int,
    field: str,
    values: list[float],
    job: str | None,
) -> list[dict]:
    """One series' samples, a minute apart, the first a minute before ``t``."""
    return [
        {
            "timestamp": t + _dt.timedelta(seconds=60 * (i - 1)),
            "hostname": host,
            "gpu": gpu,
            "uuid": f"GPU-synthetic-{host}-{gpu}",
            "entity": "GPU",
            "entity_id": gpu,
            "field_id": field_id,
            "field": field,
            "value": float(v),
            "job_id": job,
            "labels": json.dumps({"synthetic": "true"}),
        }
        for i, v in enumerate(values)
    ]


def _xid_rows(host: str, gpu: int, t: _dt.datetime, xid: int, job: str | None) -> list[dict]:
    rows = _dcgm_rows(host, gpu, t, 230, "DCGM_FI_DEV_XID_ERRORS", [0, xid, xid, 0], job)
    if xid == 48:
        rows += _dcgm_rows(host, gpu, t, 311, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", [0, 1, 1], job)
    if xid == 64:
        rows += _dcgm_rows(host, gpu, t, 395, "DCGM_FI_DEV_ROW_REMAP_FAILURE", [0, 1, 1], job)
    return rows


def failure_events(
    jobs: pl.DataFrame, *, seed: int = SEED
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """SYNTHETIC node events, DCGM error samples and the incident list for a synthetic dump.

    Args:
        jobs: the ``jobs`` frame of the bundled synthetic dump (``trainperf.slurm`` reader).

    Returns:
        ``(node_events, dcgm, incidents)``: node events with
        :data:`trainperf.reliability.NODE_EVENT_SCHEMA`; DCGM samples with
        :data:`trainperf.dcgm.SCHEMA`; the incidents (``time``, ``hostname``, ``cause``, ``xid``,
        ``JobID`` hit or null, ``repair_h``), the calibration's ground truth.
    """

    rng = np.random.default_rng(seed)
    ran = jobs.filter(pl.col("start").is_not_null() & pl.col("end").is_not_null()).sort("start")
    hosts = sorted({h for ns in ran.get_column("nodes").to_list() for h in (ns or [])})
    # incident slots per month, NODE_FAIL jobs first
    nf = ran.filter((pl.col("state") == "NODE_FAIL") & (pl.col("end").dt.year() == _YEAR))
    failed = ran.filter(
        (pl.col("state") == "FAILED")
        & (pl.col("n_nodes") >= 2)
        & (pl.col("end").dt.year() == _YEAR)
        & (pl.col("end").dt.month() <= 3)
    )
    slots: list[tuple[_dt.datetime, str, str | None]] = []  # (time, host, JobID)
    left = dict(INCIDENTS_PER_MONTH)
    for j in nf.iter_rows(named=True):
        t = j["end"] - _dt.timedelta(seconds=int(rng.integers(60, 300)))
        slots.append((t, j["nodes"][int(rng.integers(len(j["nodes"])))], j["JobID"]))
        left[t.month] = left.get(t.month, 0) - 1
    n_failed_hits = 0
    for j in failed.sample(fraction=1.0, shuffle=True, seed=seed).iter_rows(named=True):
        m = j["end"].month
        if n_failed_hits == 3 or left.get(m, 0) <= 0:
            continue
        t = j["end"] - _dt.timedelta(seconds=int(rng.integers(60, 600)))
        slots.append((t, j["nodes"][int(rng.integers(len(j["nodes"])))], j["JobID"]))
        left[m] -= 1
        n_failed_hits += 1
    busy = ran.select("nodes", "start", "end").explode("nodes")
    # the rest on nodes running no job, so that the quarter has the published total exactly
    deficit = sum(INCIDENTS_PER_MONTH.values()) - len(slots)
    for m, k in sorted(left.items()):
        k = min(max(k, 0), deficit)
        deficit -= k
        for _ in range(k):
            for _try in range(200):
                day = int(rng.integers(1, 28))
                t = _dt.datetime(
                    _YEAR, m, day, int(rng.integers(24)), int(rng.integers(60)), tzinfo=_dt.UTC
                )
                h = hosts[int(rng.integers(len(hosts)))]
                clash = busy.filter(
                    (pl.col("nodes") == h) & (pl.col("start") <= t) & (pl.col("end") >= t)
                ).height
                if not clash:
                    slots.append((t, h, None))
                    break
    slots.sort()
    causes = [(c, st, x) for c, n, st, xs in INCIDENT_CAUSES for x in (list(xs) or [None] * n)]
    # GPU/NVLink causes to the incidents that hit jobs first (hardware is what kills jobs), in time order
    hw = [c for c in causes if c[2] is not None]
    other = [c for c in causes if c[2] is None]
    rng.shuffle(hw)
    rng.shuffle(other)
    n = len(slots)
    on_job = [i for i, s in enumerate(slots) if s[2] is not None]
    off_job = [i for i, s in enumerate(slots) if s[2] is None]
    order = on_job + off_job
    pool = (hw + other)[:n]
    repairs = [1.0] * 10 + [72.0] * 3 + [8.0] * max(n - 13, 0)
    rng.shuffle(repairs)
    inc_rows, node_rows, dcgm_rows = [], [], []
    for k, i in enumerate(order):
        t, h, job = slots[i]
        cause, st, xid = pool[k] if k < len(pool) else ("interconnect switch", "DRAIN", None)
        rep = repairs[k] if k < len(repairs) else 8.0
        gpu = int(rng.integers(8))
        reason = f"XID {xid} {_XID_NAME[xid]}" if xid is not None else cause
        inc_rows.append(
            {"time": t, "hostname": h, "cause": cause, "xid": xid, "JobID": job, "repair_h": rep}
        )
        node_rows.append(
            {
                "hostname": h,
                "start": t + _dt.timedelta(seconds=30),
                "end": t + _dt.timedelta(hours=rep),
                "state": st,
                "reason": reason,
            }
        )
        if xid is not None:
            dcgm_rows += _xid_rows(h, gpu, t, xid, job)
    # events that are not infrastructure failures
    user_failed = ran.filter(pl.col("state") == "FAILED").sample(10, seed=seed + 1)
    for j in user_failed.iter_rows(named=True):
        t = j["end"] - _dt.timedelta(seconds=int(rng.integers(10, 60)))
        xid = int(rng.choice([13, 31, 43]))
        dcgm_rows += _xid_rows(j["nodes"][0], int(rng.integers(8)), t, xid, j["JobID"])
    done = ran.filter((pl.col("state") == "COMPLETED") & (pl.col("elapsed_s") > 3 * 3600)).sample(
        3, seed=seed + 2
    )
    for j in done.iter_rows(named=True):
        t = j["start"] + _dt.timedelta(seconds=int(j["elapsed_s"] // 2))
        dcgm_rows += _xid_rows(j["nodes"][0], int(rng.integers(8)), t, 63, j["JobID"])
    long_jobs = ran.filter(pl.col("elapsed_s") > 86400)
    for _ in range(30):
        j = long_jobs.row(int(rng.integers(long_jobs.height)), named=True)
        t = j["start"] + _dt.timedelta(seconds=int(rng.integers(3600, int(j["elapsed_s"]) - 600)))
        mask = int(rng.choice([0x40, 0x80, 0x40 | 0x20]))
        h = j["nodes"][int(rng.integers(len(j["nodes"])))]
        dcgm_rows += _dcgm_rows(
            h,
            int(rng.integers(8)),
            t,
            112,
            "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
            [0, mask, mask, 0],
            j["JobID"],
        )
    node_events = pl.DataFrame(node_rows, schema=NODE_EVENT_SCHEMA).sort("start")
    tele = pl.DataFrame(dcgm_rows, schema=dcgm.SCHEMA).sort(
        "hostname", "gpu", "field_id", "timestamp"
    )
    incidents = pl.DataFrame(
        inc_rows,
        schema={
            "time": pl.Datetime("us", "UTC"),
            "hostname": pl.String,
            "cause": pl.String,
            "xid": pl.Int64,
            "JobID": pl.String,
            "repair_h": pl.Float64,
        },
    ).sort("time")
    return node_events, tele, incidents
