"""SYNTHETIC Slurm job history: the cluster, the calibration to published marginals, the generator.

Nothing here comes from a real cluster. A seeded ten-month job history (2024-06-01 to 2025-03-31,
UTC) of a 100-node x 8-GPU cluster whose marginals are set to the SAKURAONE workload study's
published ones (:data:`CALIBRATION_TARGETS`), scheduled on 100 nodes without overlaps
(:func:`generate_jobs`). Written as sacct output by :mod:`trainperf.synthetic.slurm_sacct`; the
whole story, with sources, in :mod:`trainperf.synthetic.slurm`.

Calibration (exact by construction, not by sampling): job counts per (size bin, final state) are fixed
(:data:`JOB_COUNTS`), GPU-hours per cell are fixed shares of a total (:data:`GPU_HOUR_SHARES`), and
within each cell log-normal run times are scaled so that the cell's GPU-hours hit the target; 8 of
the 59 jobs of 17-32 nodes run longer than a week. The per-job values (sizes within a bin, run times,
submit times, users, names, node lists) are random, from ``numpy.random.default_rng(seed)``.
Test-only hostile job names (:data:`HOSTILE_NAMES`, :data:`XSS_NAME`) are given only on request
(``generate_jobs(probe_names=True)``), never in the bundled demo dumps.
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass, field

import numpy as np

from trainperf.jobs import published_marginals

__all__ = [
    "ACCOUNT",
    "CALIBRATION_TARGETS",
    "CLUSTER",
    "CLUSTER_NODES",
    "CPUS_PER_NODE",
    "GPUS_PER_NODE",
    "GPU_HOUR_SHARES",
    "HOSTILE_NAMES",
    "JOB_COUNTS",
    "MEM_PER_NODE_G",
    "N_JOBS",
    "PERIOD_END",
    "PERIOD_START",
    "SEED",
    "SLURM_RELEASE",
    "USERS",
    "XSS_NAME",
    "SynthJob",
    "SynthStep",
    "generate_jobs",
]

SEED = 20240601
N_JOBS = 2000
CLUSTER_NODES = 100
GPUS_PER_NODE = 8
CPUS_PER_NODE = (
    120  # 2 x Xeon Platinum 8580 (60 cores each; data/reference/systems.csv), one CPU per core
)
MEM_PER_NODE_G = 1450  # RealMemory of a 1.5 TB node, in G as sacct prints it
PERIOD_START = _dt.datetime(2024, 6, 1, tzinfo=_dt.UTC)
PERIOD_END = _dt.datetime(2025, 4, 1, tzinfo=_dt.UTC)  # exclusive
TOTAL_GPU_HOURS = 1_200_000.0  # chosen so that the schedule fits the cluster (about 20 % occupancy)
SLURM_RELEASE = "22.05.9"
CLUSTER = "synthone"
NODE_FMT = "gpu{:03d}"

#: The cluster whose published workload marginals the generator reproduces.
CALIBRATED_TO = "SAKURAONE"

#: Its published marginals (shares 0-1, ``data/reference/workload_marginals.csv``: the SAKURAONE
#: paper, arXiv 2604.13600 section 4.1), keyed by the metric names of
#: :func:`trainperf.jobs.workload_marginals`.
CALIBRATION_TARGETS: dict[str, float] = published_marginals(CALIBRATED_TO)

_BINS = ("1", "2", "3-4", "5-16", "17-32", ">32")
_STATES = ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL")

#: Job counts per (size bin, final state); rows add up to the size marginals (1 node: 1538 = 76.9 %
#: of 2000; <= 4 nodes: 1728 = 86.4 %; >= 17 nodes: 66 = 3.3 %), columns to the state marginals
#: (FAILED: 338 = 16.9 %). Split of the unpublished cells: our choice.
JOB_COUNTS: dict[str, dict[str, int]] = {
    #        COMPLETED CANCELLED FAILED TIMEOUT OOM NODE_FAIL
    "1": dict(zip(_STATES, (900, 300, 270, 35, 30, 3), strict=True)),
    "2": dict(zip(_STATES, (60, 15, 15, 3, 2, 0), strict=True)),
    "3-4": dict(zip(_STATES, (55, 18, 16, 4, 2, 0), strict=True)),
    "5-16": dict(zip(_STATES, (120, 40, 30, 12, 4, 0), strict=True)),
    "17-32": dict(zip(_STATES, (12, 24, 6, 6, 2, 9), strict=True)),
    ">32": dict(zip(_STATES, (3, 3, 1, 0, 0, 0), strict=True)),
}

#: GPU-hour shares in percent per (size bin, final state); rows add up to the size marginals
#: (1 node 1.8, <= 4 nodes 4.6, >= 17 nodes 73.3), columns to the state marginals (CANCELLED 73.5,
#: FAILED 0.3). ``"CANCELLED_LONG"`` is the part of the 17-32-node CANCELLED cell held by the 8 jobs
#: longer than a week.
GPU_HOUR_SHARES: dict[str, dict[str, float]] = {
    "1": dict(zip(_STATES, (0.84, 0.72, 0.06, 0.05, 0.03, 0.10), strict=True)),
    "2": dict(zip(_STATES, (0.47, 0.40, 0.02, 0.10, 0.01, 0.0), strict=True)),
    "3-4": dict(zip(_STATES, (0.80, 0.70, 0.03, 0.25, 0.02, 0.0), strict=True)),
    "5-16": dict(zip(_STATES, (7.80, 12.00, 0.10, 2.10, 0.10, 0.0), strict=True)),
    "17-32": {
        **dict(zip(_STATES, (8.00, 22.48, 0.08, 3.00, 0.04, 1.40), strict=True)),
        "CANCELLED_LONG": 36.00,
    },
    ">32": dict(zip(_STATES, (1.09, 1.20, 0.01, 0.0, 0.0, 0.0), strict=True)),
}
_N_LONG = 8  # 17-32-node jobs longer than a week: 8 / 59 = 13.6 %
_NEVER_STARTED = {"1": 4, "2": 1}  # CANCELLED while pending (0 GPU-hours)

#: The longest job's name with ``probe_names`` (an HTML-injection probe: reports must show it as text).
XSS_NAME = "<img src=x onerror=alert(1)>"
#: Other hostile names given to random small jobs with ``probe_names``.
HOSTILE_NAMES: tuple[str, ...] = (
    "pipe|in|name",
    "eval|ckpt-1000",
    '"quoted name"',
    "it's a 'quote'",
    "a&b <b>bold</b>",
    '<script>alert("x")</script>',
    "日本語のジョブ名",
    "name  with  spaces",
    "=cmd|' /C calc'!A0",
    "%s %n {0} $(rm -rf /)",
)

USERS = tuple((f"user{i:02d}", 10000 + i) for i in range(1, 13))
ACCOUNT = "medllm"

# node counts within each bin and their weights
_SIZES = {
    "1": ((1,), (1.0,)),
    "2": ((2,), (1.0,)),
    "3-4": ((3, 4), (0.2, 0.8)),
    "5-16": ((5, 6, 8, 10, 12, 16), (0.03, 0.07, 0.4, 0.05, 0.15, 0.3)),
    "17-32": ((20, 24, 28, 32), (0.1, 0.3, 0.1, 0.5)),
    ">32": ((48, 64, 96), (0.2, 0.5, 0.3)),
}
# log-normal shape (sigma) and run-time bounds (s) per bin
_SIGMA = {"1": 1.3, "2": 1.1, "3-4": 1.1, "5-16": 1.0, "17-32": 0.8, ">32": 0.5}
_MAX_S = {"1": 3 * 86400, "2": 4 * 86400, "3-4": 4 * 86400, "5-16": 6 * 86400, "17-32": 6.5 * 86400}
_MAX_S[">32"] = 2 * 86400
_MIN_S = 20.0
_LONG_RANGE_S = (7.3 * 86400, 18 * 86400)


def _d(y: int, m: int, d: int) -> _dt.datetime:
    return _dt.datetime(y, m, d, tzinfo=_dt.UTC)


# submit-time windows per bin: (from, to, weight); the 17-32 phase is mid-Jan to early Mar 2025,
# 3-16 nodes take over from mid-Feb (fine-tuning), >32 nodes are benchmark runs in autumn 2024
_MONTHS = (
    [(_d(2024, m, 1), _d(2024 + (m == 12), m % 12 + 1, 1)) for m in range(6, 13)]
    + [(_d(2025, m, 1), _d(2025, m + 1, 1)) for m in range(1, 3)]
    + [(_d(2025, 3, 1), _d(2025, 3, 29))]
)
_SMALL_WEIGHTS = (0.04, 0.06, 0.08, 0.09, 0.10, 0.11, 0.12, 0.14, 0.13, 0.13)
_WINDOWS: dict[str, list[tuple[_dt.datetime, _dt.datetime, float]]] = {
    "1": [(a, b, w) for (a, b), w in zip(_MONTHS, _SMALL_WEIGHTS, strict=True)],
    "2": [(a, b, w) for (a, b), w in zip(_MONTHS, _SMALL_WEIGHTS, strict=True)],
    "3-4": [(a, b, w) for (a, b), w in zip(_MONTHS, _SMALL_WEIGHTS, strict=True)],
    "5-16": [(_d(2024, 7, 1), _d(2025, 2, 10), 0.25), (_d(2025, 2, 15), _d(2025, 3, 22), 0.75)],
    "17-32": [(_d(2024, 12, 5), _d(2025, 1, 10), 0.2), (_d(2025, 1, 12), _d(2025, 3, 5), 0.8)],
    ">32": [(_d(2024, 10, 1), _d(2024, 11, 30), 1.0)],
}
_LONG_WINDOW = (_d(2024, 12, 10), _d(2025, 2, 12))
_NODE_FAIL_WINDOW = (_d(2025, 1, 5), _d(2025, 3, 25))  # the paper's 21 failures are Jan-Mar 2025

_LIMIT_LADDER_S = (
    1800,
    3600,
    2 * 3600,
    4 * 3600,
    8 * 3600,
    12 * 3600,
    86400,
    2 * 86400,
    3 * 86400,
    7 * 86400,
    14 * 86400,
    21 * 86400,
    30 * 86400,
)

_NAMES = {
    "1": (
        "preprocess",
        "tokenize",
        "eval-medqa",
        "jupyter",
        "debug",
        "ckpt-convert",
        "sft-lora-test",
    ),
    "2": ("sft-lora", "eval-70b", "debug-2n", "nccl-tests"),
    "3-4": ("sft-lora", "eval-70b", "nccl-tests", "sft-ehr-icd"),
    "5-16": ("sft-ehr-icd", "sft-llama3.1-70b", "sft-qwen2.5-72b", "dpo-70b"),
    "17-32": ("cpt-llama3.1-70b", "cpt-qwen2.5-72b", "cpt-resume"),
    ">32": ("mlperf-gpt3-175b", "hpl", "nccl-allreduce-all"),
}


@dataclass
class SynthStep:
    """One job step as sacct records it (``step`` is ``batch``, ``extern``, ``0``, ``1``)."""

    step: str
    name: str
    state: str
    exit_code: int
    signal: int
    start: int  # epoch s
    end: int  # epoch s
    nodes: list[str]


@dataclass
class SynthJob:
    """One synthetic job record (a plain job or an array task).

    Times are epoch seconds (UTC); ``start``/``end`` of a job cancelled while pending: ``start`` is
    None. ``timelimit_s`` None means UNLIMITED. ``gpu_hours`` = ``n_nodes * 8 * elapsed / 3600``.
    """

    size_bin: str
    state: str
    n_nodes: int
    duration_s: float
    long: bool = False
    submit: int = 0
    start: int | None = None
    end: int = 0
    nodes: list[str] = field(default_factory=list)
    job_id: int = 0  # JobIDRaw
    array_id: int | None = None
    array_task: int | None = None
    name: str = ""
    user: str = ""
    uid: int = 0
    cancelled_by: tuple[str, int] | None = None
    exit_code: int = 0
    signal: int = 0
    timelimit_s: int | None = None
    partition: str = "gpu"
    steps: list[SynthStep] = field(default_factory=list)

    @property
    def elapsed_s(self) -> int:
        return 0 if self.start is None else self.end - self.start

    @property
    def n_gpus(self) -> int:
        return self.n_nodes * GPUS_PER_NODE

    @property
    def job_id_text(self) -> str:
        if self.array_id is not None:
            return f"{self.array_id}_{self.array_task}"
        return str(self.job_id)


# ------------------------------------------------------------------------------------------------
# generation
# ------------------------------------------------------------------------------------------------


def _scale_to_total(shape: np.ndarray, gpus: np.ndarray, target_gh: float, lo: float, hi: float):
    """Run times ``clip(c * shape, lo, hi)`` (s) with ``sum(gpus * t) / 3600 == target_gh``.

    ``c`` by bisection on a log scale. Raises ValueError when the target is out of reach.
    """
    if len(shape) == 0:
        if target_gh > 0:
            raise ValueError("GPU-hours for a cell without jobs")
        return shape

    def total(c: float) -> float:
        return float(np.sum(gpus * np.clip(c * shape, lo, hi)) / 3600.0)

    if not total(0.0) <= target_gh <= total(1e12):
        raise ValueError(f"target {target_gh:.1f} GPU-h out of reach within [{lo}, {hi}] s")
    a, b = 1e-9, 1e12
    for _ in range(200):
        m = math.sqrt(a * b)
        if total(m) < target_gh:
            a = m
        else:
            b = m
    return np.clip(b * shape, lo, hi)


def _sample_times(rng: np.random.Generator, n: int, windows) -> np.ndarray:
    weights = np.array([w for _, _, w in windows], dtype=float)
    idx = rng.choice(len(windows), size=n, p=weights / weights.sum())
    out = np.empty(n)
    for k, (a, b, _) in enumerate(windows):
        sel = idx == k
        out[sel] = rng.uniform(a.timestamp(), b.timestamp(), size=int(sel.sum()))
    return out


def _cells(rng: np.random.Generator) -> list[SynthJob]:
    jobs: list[SynthJob] = []
    for b in _BINS:
        sizes, weights = _SIZES[b]
        for st in _STATES:
            n = JOB_COUNTS[b][st]
            if n == 0:
                continue
            share = GPU_HOUR_SHARES[b][st]
            n_never = _NEVER_STARTED.get(b, 0) if st == "CANCELLED" else 0
            n_long = _N_LONG if (b == "17-32" and st == "CANCELLED") else 0
            groups = [("long", n_long, GPU_HOUR_SHARES[b].get("CANCELLED_LONG", 0.0))]
            groups.append(("run", n - n_long - n_never, share))
            for kind, k, sh in groups:
                if k == 0:
                    continue
                if kind == "long":
                    nodes = rng.choice((24, 28, 32), size=k, p=(0.3, 0.2, 0.5))
                    lo, hi = _LONG_RANGE_S
                else:
                    nodes = rng.choice(sizes, size=k, p=weights)
                    lo, hi = _MIN_S, _MAX_S[b]
                shape = rng.lognormal(0.0, _SIGMA[b] if kind == "run" else 0.25, size=k)
                dur = _scale_to_total(
                    shape, nodes * GPUS_PER_NODE, sh / 100.0 * TOTAL_GPU_HOURS, lo, hi
                )
                for nn, d in zip(nodes, dur, strict=True):
                    jobs.append(SynthJob(b, st, int(nn), float(d), long=kind == "long"))
            for _ in range(n_never):
                nn = int(rng.choice(sizes, p=weights))
                jobs.append(SynthJob(b, st, nn, 0.0))
    return jobs


def _assign_submit_times(rng: np.random.Generator, jobs: list[SynthJob]) -> None:
    for b in _BINS:
        sel = [j for j in jobs if j.size_bin == b and not j.long and j.state != "NODE_FAIL"]
        for j, t in zip(sel, _sample_times(rng, len(sel), _WINDOWS[b]), strict=True):
            j.submit = int(t)
    longs = [j for j in jobs if j.long]
    a, b_ = _LONG_WINDOW
    # staggered starts of the long pre-training runs
    for k, j in enumerate(longs):
        j.submit = int(
            a.timestamp() + (b_ - a).total_seconds() * (k + rng.uniform(0, 0.8)) / len(longs)
        )
    nf = [j for j in jobs if j.state == "NODE_FAIL"]
    for j, t in zip(nf, _sample_times(rng, len(nf), [(*_NODE_FAIL_WINDOW, 1.0)]), strict=True):
        j.submit = int(t)


def _make_arrays(rng: np.random.Generator, jobs: list[SynthJob]) -> list[list[SynthJob]]:
    """Group some 1-node jobs into arrays (same submit time); returns submission units."""
    small = [j for j in jobs if j.size_bin == "1" and j.state in ("COMPLETED", "FAILED")]
    rng.shuffle(small)
    used: set[int] = set()
    units: list[list[SynthJob]] = []
    pos = 0
    for _ in range(25):
        k = int(rng.integers(3, 13))
        group = small[pos : pos + k]
        pos += k
        t0 = group[0].submit
        for j in group:
            j.submit = t0
            used.add(id(j))
        units.append(group)
    units += [[j] for j in jobs if id(j) not in used]
    units.sort(key=lambda u: (u[0].submit, u[0].size_bin))
    return units


def _schedule(rng: np.random.Generator, units: list[list[SynthJob]]) -> None:
    """Place jobs on nodes in submission order: each node runs one job at a time (exclusive nodes)."""
    free_at = np.full(CLUSTER_NODES, PERIOD_START.timestamp())
    for unit in units:
        for j in unit:
            if j.duration_s == 0.0:  # cancelled while pending
                j.start = None
                j.end = j.submit + int(rng.integers(30, 6 * 3600))
                continue
            order = np.argsort(free_at, kind="stable")
            t = max(float(j.submit), float(free_at[order[j.n_nodes - 1]]))
            t += float(rng.integers(1, 30))  # scheduling latency
            eligible = np.flatnonzero(free_at <= t)
            # prefer a contiguous block of free nodes, else the lowest-numbered free ones
            chosen = None
            free_mask = np.zeros(CLUSTER_NODES, bool)
            free_mask[eligible] = True
            run = 0
            for i in range(CLUSTER_NODES):
                run = run + 1 if free_mask[i] else 0
                if run == j.n_nodes:
                    chosen = np.arange(i - j.n_nodes + 1, i + 1)
                    break
            if chosen is None:
                chosen = eligible[: j.n_nodes]
            j.start = int(t)
            j.end = j.start + int(round(j.duration_s))
            free_at[chosen] = j.end
            j.nodes = [NODE_FMT.format(i + 1) for i in sorted(chosen)]


def _limit_for(rng: np.random.Generator, elapsed: int) -> int | None:
    if rng.random() < 0.04:
        return None  # UNLIMITED
    for k, lim in enumerate(_LIMIT_LADDER_S):
        if lim >= elapsed * 1.05 + 60:
            if rng.random() < 0.3 and k + 1 < len(_LIMIT_LADDER_S):
                return _LIMIT_LADDER_S[k + 1]
            return lim
    return None


def _finish_records(rng: np.random.Generator, units: list[list[SynthJob]]) -> None:
    """Ids, names, users, limits, exit codes and steps."""
    next_id = 100001
    user_w = np.array([3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 0.5, 0.5])
    user_w /= user_w.sum()
    for unit in units:
        ui = int(rng.choice(len(USERS), p=user_w))
        if len(unit) > 1:  # array: the last task keeps the array id (as in real Slurm 22.05 output)
            array_id = next_id
            next_id += len(unit)
            name = str(rng.choice(("eval-medqa", "sweep-lr", "tokenize-shard")))
            for t, j in enumerate(unit):
                j.array_id, j.array_task = array_id, t
                j.job_id = array_id if t == len(unit) - 1 else array_id + 1 + t
                j.name = name
        else:
            j = unit[0]
            j.job_id = next_id
            next_id += 1
            j.name = str(rng.choice(_NAMES[j.size_bin]))
        for j in unit:
            j.user, j.uid = USERS[ui]
            _finish_job(rng, j)


def _finish_job(rng: np.random.Generator, j: SynthJob) -> None:
    el = j.elapsed_s
    if j.state == "TIMEOUT":
        # elapsed = limit + the kill delay (up to a minute); the end stays where it was scheduled
        j.timelimit_s = max(60, (el - int(rng.integers(1, 60))) // 60 * 60)
    else:
        j.timelimit_s = _limit_for(rng, el)
    if j.timelimit_s is not None and j.timelimit_s <= 3600 and j.n_nodes == 1:
        j.partition = "debug"
    if j.state == "FAILED":
        j.exit_code = int(rng.choice((1, 1, 1, 2, 127, 134)))
    elif j.state == "OUT_OF_MEMORY":
        j.exit_code, j.signal = 0, 125
    if j.state == "CANCELLED":
        j.cancelled_by = ("root", 0) if rng.random() < 0.05 else (j.user, j.uid)
    if j.start is None:
        return
    # steps: .batch on the first node, .extern on all, .0 (and sometimes .1) srun on all nodes
    step_state, step_rc, step_sig = {
        "COMPLETED": ("COMPLETED", 0, 0),
        "FAILED": ("FAILED", j.exit_code, 0),
        "CANCELLED": ("CANCELLED", 0, 15),
        "TIMEOUT": ("CANCELLED", 0, 15),
        "OUT_OF_MEMORY": ("OUT_OF_MEMORY", 0, 125),
        "NODE_FAIL": ("NODE_FAIL", 0, 0),
    }[j.state]
    s, e = j.start, j.end
    steps = [
        SynthStep("batch", "batch", step_state, step_rc, step_sig, s, e, j.nodes[:1]),
        SynthStep("extern", "extern", "COMPLETED", 0, 0, s, e, list(j.nodes)),
    ]
    main_name = str(rng.choice(("python", "torchrun", "bash")))
    s0 = min(e, s + int(rng.integers(2, 40)))
    e0 = max(s0, e - int(rng.integers(0, 8)))
    if rng.random() < 0.2 and e0 - s0 > 60:
        prep_end = s0 + int(rng.integers(3, 20))
        steps.append(SynthStep("0", "nvidia-smi", "COMPLETED", 0, 0, s0, prep_end, list(j.nodes)))
        steps.append(
            SynthStep(
                "1", main_name, step_state, step_rc, step_sig, prep_end + 1, e0, list(j.nodes)
            )
        )
    else:
        steps.append(
            SynthStep("0", main_name, step_state, step_rc, step_sig, s0, e0, list(j.nodes))
        )
    j.steps = steps


def generate_jobs(seed: int = SEED, probe_names: bool = False) -> list[SynthJob]:
    """The synthetic job history, sorted by JobIDRaw order of submission (deterministic for a seed).

    Args:
        seed: random seed.
        probe_names: give the test-only job names (tests of escaping and delimiters): the
            longest job is named :data:`XSS_NAME`, ten random small jobs :data:`HOSTILE_NAMES`.
            The bundled demo dumps have none of them (a reader of the demo book would take a
            probe string for data); every other field is the same either way.

    Returns:
        :class:`SynthJob` records with their steps; job counts and GPU-hours per (size bin, state)
        as in :data:`JOB_COUNTS` and :data:`GPU_HOUR_SHARES` x ``TOTAL_GPU_HOURS``.

    Raises:
        ValueError: when a cell's GPU-hours cannot be reached within its run-time bounds (a broken
            calibration table).
    """
    rng = np.random.default_rng(seed)
    jobs = _cells(rng)
    _assign_submit_times(rng, jobs)
    units = _make_arrays(rng, jobs)
    _schedule(rng, units)
    _finish_records(rng, units)
    if probe_names:  # test-only names, drawn last so that no other field depends on them
        _probe_names(rng, jobs)
    jobs.sort(key=lambda j: (j.array_id if j.array_id is not None else j.job_id, j.array_task or 0))
    return jobs


def _probe_names(rng, jobs: list[SynthJob]) -> None:
    longest = max(jobs, key=lambda j: (j.elapsed_s, -j.job_id))
    longest.name = XSS_NAME
    plain = [j for j in jobs if j.array_id is None and j is not longest and j.n_nodes <= 2]
    picks = rng.choice(len(plain), size=len(HOSTILE_NAMES), replace=False)
    for k, name in zip(picks, HOSTILE_NAMES, strict=True):
        plain[int(k)].name = name
