"""Traces written by torch.profiler on the CPU: the smoke benchmark's schedule and multi-rank runs.

``trainperf.capture.parallel`` runs a tiny GPT with 4 gloo ranks (tensor x pipeline x data parallel);
its traces test the communication analyses: collective counts per step are derived by hand from the
layout, times and shares are recomputed here from the raw JSON.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import warnings

import polars as pl
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch)")

from trainperf import mlperf, trace  # noqa: E402
from trainperf.capture import parallel, smoke  # noqa: E402

GLOO_KIND = {"gloo:all_reduce": "AllReduce", "gloo:send": "SendRecv", "gloo:recv": "SendRecv"}


#: A launcher with torchrun's rank environment (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
#: MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RUN_ID) that imports torch, its compiler (which
#: torch.optim imports on the first optimizer) and the capture module once, then forks one process
#: per rank, each running ``trainperf.capture.parallel.main``: under torchrun every rank imports
#: them itself, about 4.5 s of CPU per process, most of such a run. The capture's own launch by
#: torchrun is run by tests/test_smoke.py (``test_module_runs_under_torchrun``).
_FORK_RANKS = r"""
import os, socket, sys, traceback, uuid
import torch, torch._dynamo, torch.distributed, torch.profiler
from trainperf.capture import parallel
n, argv = int(sys.argv[1]), sys.argv[2:]
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
env = dict(WORLD_SIZE=str(n), LOCAL_WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1",
           MASTER_PORT=str(port), TORCHELASTIC_RUN_ID=uuid.uuid4().hex, GROUP_RANK="0")
sys.stdout.flush(), sys.stderr.flush()
pids = []
for rank in range(n):
    pid = os.fork()
    if pid == 0:
        os.environ.update(env, RANK=str(rank), LOCAL_RANK=str(rank), ROLE_RANK=str(rank))
        code = 1
        try:
            code = parallel.main(argv)
        except BaseException:
            traceback.print_exc()
        sys.stdout.flush(), sys.stderr.flush()
        os._exit(code)
    pids.append(pid)
codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]
sys.exit(1 if any(codes) else 0)
"""


def _parallel_run(out, *args, n=4):
    """``trainperf.capture.parallel`` on ``n`` gloo ranks (:data:`_FORK_RANKS`) into ``out``."""
    argv = ["--device", "cpu", "--preset", "tiny", "--steps", "4",
           "--micro-batches", "2", "--out-dir", str(out / "gpt_smoke"), "--profile-dir", str(out / "trace"),
           "--profile-skip", "1", "--profile-warmup", "0", "--profile-active", "2", *args]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-c", _FORK_RANKS, str(n), *argv]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-4000:]
    return out


@pytest.fixture(scope="module")
def tp2pp2(tmp_path_factory):
    return _parallel_run(tmp_path_factory.mktemp("tp2pp2"), "--tp", "2", "--pp", "2")


@pytest.fixture(scope="module")
def pp2dp2(tmp_path_factory):
    return _parallel_run(tmp_path_factory.mktemp("pp2dp2"), "--tp", "1", "--pp", "2", "--dp", "2")


def _read(folder):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", trace.TraceWarning)  # CPU traces: no GPU activity (flagged)
        return trace.read_traces(folder)


def _raw(path):
    with gzip.open(path, "rt") as fh:
        return json.load(fh)


def _raw_gloo_by_step(doc):
    """{(step, kind): (count, summed us)} of the raw gloo:* events starting in a ProfilerStep span."""
    steps = [(int(e["name"].split("#")[1]), e["ts"], e["ts"] + e["dur"]) for e in doc["traceEvents"]
             if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep")]  # fmt: skip
    out: dict = {}
    for e in doc["traceEvents"]:
        kind = GLOO_KIND.get(e.get("name"))
        if e.get("ph") != "X" or kind is None:
            continue
        step = next((n for n, a, b in steps if a <= e["ts"] <= b), None)
        if step is None:
            continue
        c, t = out.get((step, kind), (0, 0.0))
        out[(step, kind)] = (c + 1, t + e["dur"])
    return out


def test_layout_by_hand():
    lay = parallel.Layout(tp=2, pp=2, dp=2, rank=5)  # 5 = pp 1 x (2 x 2) + dp 0 x 2 + tp 1
    assert (lay.tp_rank, lay.dp_rank, lay.pp_rank) == (1, 0, 1)
    assert lay.tp_groups() == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert lay.dp_groups() == [[0, 2], [1, 3], [4, 6], [5, 7]]
    assert (lay.peer(-1), lay.peer(+1)) == (1, None)
    assert [parallel.auto_layout(n) for n in (1, 2, 4, 8, 6, 3)] == [
        (1, 1, 1),
        (1, 2, 1),
        (2, 2, 1),
        (2, 2, 2),
        (2, 3, 1),
        (1, 3, 1),
    ]


def test_nvlink_multicast_forced_off(monkeypatch):
    for k in parallel.NVLS_OFF:
        monkeypatch.setenv(k, "1" if k == "NCCL_NVLS_ENABLE" else "0")
    assert parallel.main([]) == 2  # no --steps: usage error, but the environment is set first
    assert {k: os.environ[k] for k in parallel.NVLS_OFF} == {
        "NCCL_NVLS_ENABLE": "0",
        "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
        "NVSHMEM_DISABLE_NVLS": "1",
    }


def test_parallel_run_logs_and_traces(tp2pp2):
    res = mlperf.load_results(tp2pp2 / "gpt_smoke" / "result_0.txt")
    assert res.warnings == [] and res.runs["status"][0] == "success"
    ev = {k: json.loads(v) for k, v in res.events.select("key", "value").iter_rows()}
    assert ev["parallel_layout"] == {"tp": 2, "pp": 2, "dp": 1, "micro_batches": 2}
    # tiny: l=2, h=64, V=256 (padded 256), s=32, untied head: 2 x (12h^2 + 13h) + (V + s)h + 2h + Vh
    assert (
        ev["model_param_count"] == 2 * (12 * 64**2 + 13 * 64) + (256 + 32) * 64 + 2 * 64 + 256 * 64
    )
    assert ev["global_batch_size"] == 4 * 2  # micro-batch 4 x 2 micro-batches x dp 1
    ts = _read(tp2pp2 / "trace")
    assert ts.ranks["rank"].to_list() == [0, 1, 2, 3] and ts.consistent
    assert set(ts.ranks["world_size"]) == {4} and set(ts.ranks["backend"]) == {"gloo"}
    assert set(ts.ranks["status"]) == {"no_gpu_activity"}
    assert set(ts.ranks["run_id"]) == {
        json.loads(res.events.filter(pl.col("key") == "profiler_trace")["metadata"][0])["run_id"]
    }
    meta = {r: m["trainperf"] for r, m in ts.meta.items()}
    assert [(m["tp_rank"], m["pp_rank"]) for m in meta.values()] == [(0, 0), (1, 0), (0, 1), (1, 1)]
    # ProfilerStep#1 and #2: skip 1, warm-up 0, active 2
    assert (
        ts.steps.group_by("rank").agg(pl.col("step").sort()).sort("rank")["step"].to_list()
        == [[1, 2]] * 4
    )


def test_collective_counts_per_step_by_hand(tp2pp2):
    cb = trace.collective_breakdown(_read(tp2pp2 / "trace"), by_step=True)
    got = {(r["rank"], r["step"], r["collective"]): r["n_calls"] for r in cb.iter_rows(named=True)}
    m, blocks = 2, 1  # micro-batches; blocks per stage (2 layers / pp 2)
    # every block: 2 all-reduces forward (g after attention and MLP), 2 backward (f before them)
    stage0 = m * blocks * 4 + 1  # + the step's stop/loss all-reduce over all ranks
    # last stage also: vocab-parallel cross-entropy (max, then [sum exp, target]) forward, and f
    # before the head in the backward: 3 per micro-batch
    stage1 = m * blocks * 4 + m * 3 + 1
    sendrecv = 2 * m  # activations forward and gradients backward, one per micro-batch each way
    for rank, allreduce in [(0, stage0), (1, stage0), (2, stage1), (3, stage1)]:
        for step in (1, 2):
            assert got[(rank, step, "AllReduce")] == allreduce, (rank, step)
            assert got[(rank, step, "SendRecv")] == sendrecv, (rank, step)
    assert {k[2] for k in got} == {"AllReduce", "SendRecv"}


def test_collective_times_and_shares_from_raw(tp2pp2):
    ts = _read(tp2pp2 / "trace")
    cb = trace.collective_breakdown(ts, by_step=True)
    for rank, path in ts.files.items():
        raw = _raw_gloo_by_step(_raw(path))
        rows = cb.filter(pl.col("rank") == rank)
        assert {
            (r["step"], r["collective"]): (r["n_calls"], r["time_s"])
            for r in rows.iter_rows(named=True)
        } == {k: (c, pytest.approx(t / 1e6, rel=1e-9)) for k, (c, t) in raw.items()}
        for step in (1, 2):
            tot = sum(t for (s, _), (_, t) in raw.items() if s == step)
            share = rows.filter((pl.col("step") == step) & (pl.col("collective") == "SendRecv"))[
                "share"
            ][0]
            assert share == pytest.approx(raw[(step, "SendRecv")][1] / tot, rel=1e-9)
    assert (cb["source"] == "gloo_ops").all()


def test_data_parallel_gradient_allreduce_by_hand(pp2dp2):
    ts = _read(pp2dp2 / "trace")
    assert ts.consistent
    cb = trace.collective_breakdown(ts, by_step=True)
    got = {(r["rank"], r["step"], r["collective"]): r["n_calls"] for r in cb.iter_rows(named=True)}
    # tp 1: no tensor-parallel all-reduce; per step: 1 flat gradient all-reduce over dp + 1 stop flag
    for rank in range(4):
        for step in (1, 2):
            assert got[(rank, step, "AllReduce")] == 2
            assert got[(rank, step, "SendRecv")] == 4  # 2 micro-batches, forward and backward


def test_smoke_profiler_schedule(tmp_path):
    out = tmp_path / "gpt_smoke"
    argv = ["--preset", "tiny", "--steps", "9", "--eval-every", "4", "--device", "cpu", "--out-dir", str(out),
            "--profile-dir", str(tmp_path / "trace"), "--profile-skip", "3", "--profile-warmup", "1", "--profile-active", "3"]  # fmt: skip
    assert smoke.main(argv) == 0
    path = tmp_path / "trace" / "rank0.pt.trace.json.gz"
    doc = _raw(path)
    # skip 3, warm up 1, record 3: iterations 4, 5, 6 (0-based) are ProfilerStep#4..#6
    names = sorted(
        e["name"]
        for e in doc["traceEvents"]
        if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep")
    )
    assert names == ["ProfilerStep#4", "ProfilerStep#5", "ProfilerStep#6"]
    assert {k: doc["trainperf"][k] for k in ("rank", "skip_first", "warmup", "active", "world_size")} == {
        "rank": 0, "skip_first": 3, "warmup": 1, "active": 3, "world_size": 1}  # fmt: skip
    res = mlperf.load_results(out / "result_0.txt")
    assert res.warnings == []
    assert (
        json.loads(res.events.filter(pl.col("key") == "profiler_trace")["metadata"][0])["run_id"]
        == doc["trainperf"]["run_id"]
    )
    stats = {}
    for line in (out / "result_0.txt").read_text().splitlines():
        if '"key": "tracked_stats"' in line:
            e = json.loads(line.split(":::MLLOG ", 1)[1])
            stats[e["metadata"]["step"]] = e["value"]["train_step_timing in s"]
    ml = trace.match_log(_read(tmp_path / "trace"), res)
    # iteration N (0-based) logs tokens (N + 1) x 4 sequences x 32 tokens, inside ProfilerStep#N
    assert ml["log_tokens"].to_list() == [(n + 1) * 128 for n in (4, 5, 6)]
    assert ml["log_step_time_s"].to_list() == pytest.approx(
        [stats[(n + 1) * 128] for n in (4, 5, 6)]
    )


def test_traces_of_different_runs_are_flagged(tp2pp2, tmp_path):
    argv = ["--preset", "tiny", "--steps", "4", "--device", "cpu", "--out-dir", str(tmp_path / "s"),
            "--profile-dir", str(tmp_path / "t"), "--profile-skip", "1", "--profile-warmup", "1", "--profile-active", "2"]  # fmt: skip
    assert smoke.main(argv) == 0
    files = [tmp_path / "t" / "rank0.pt.trace.json.gz"] + [
        tp2pp2 / "trace" / f"rank{r}.pt.trace.json.gz" for r in (1, 2, 3)
    ]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ts = trace.read_traces(files)
    assert any(
        "mixed_runs" in str(w.message) and issubclass(w.category, trace.TraceWarning) for w in seen
    )
    assert not ts.consistent
    details = " ".join(ts.quality.filter(pl.col("check") == "mixed_runs")["detail"])
    assert "different trainperf run ids" in details and "world_size" in details


def test_local_param_count_matches_the_model(tp2pp2):
    ts = _read(tp2pp2 / "trace")
    cfg = smoke.PRESETS["tiny"]  # l=2, h=64, V=256, s=32; tp 2, pp 2: one block per stage
    # a block's slice: QKV 96x64+96, attention out 64x32+64, MLP in 128x64+128, MLP out 64x128+64,
    # two LayerNorms 4x64: 25,184; stage 0 adds (256+32)x64 embeddings, stage 1 2x64 + 128x64 head
    by_hand = {
        0: 25_184 + 18_432,
        1: 25_184 + 18_432,
        2: 25_184 + 128 + 8_192,
        3: 25_184 + 128 + 8_192,
    }
    for rank, m in ts.meta.items():
        lay = parallel.Layout(2, 2, 1, rank)
        assert (
            m["trainperf"]["local_params"] == parallel.local_param_count(cfg, lay) == by_hand[rank]
        )


def test_traffic_per_step_by_hand():
    cfg = smoke.PRESETS["1.3b"]  # h 2048, 24 layers, micro-batch 8 x 2048
    t = parallel.traffic_per_step(cfg, tp=2, pp=2, dp=2, micro_batches=8)
    a = 8 * 2048 * 2048  # activations of one micro-batch
    row = {(r["rank"], r["parallelism"]): r["bytes_sent"] for r in t.iter_rows(named=True)}
    # rank 0 (stage 0): 12 blocks x (2 bf16 + 2 fp32 all-reduces of A) per micro-batch, ring over 2
    assert row[(0, "tp")] == 8 * 12 * (2 * a * 2 + 2 * a * 4) * 1.0
    # pipeline: stage 0 only sends activations forward; the last stage only gradients back
    assert row[(0, "pp")] == row[(4, "pp")] == 8 * a * 2
    # data parallel: the stage's fp32 gradients, ring over 2 -> 1 x their size
    assert row[(0, "dp")] == 4 * parallel.local_param_count(cfg, parallel.Layout(2, 2, 2, 0))
    # the last stage's head: one more fp32 all-reduce of A and the cross-entropy's 3 b s fp32
    assert row[(4, "tp")] - row[(0, "tp")] == 8 * (a * 4 + 3 * 8 * 2048 * 4)
    assert set(t["rank"]) == set(range(8))
