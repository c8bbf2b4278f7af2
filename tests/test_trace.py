"""trainperf.trace: the Kineto reader, its checks, and the analyses.

Expected values come from hand-built traces (computed by hand in the comments) and, for the bundled
H200 capture, from the raw JSON, log and telemetry files read here with json/gzip, never from the
code under test. HolisticTraceAnalysis, where installed, is the peer of the whole-trace analyses.
"""

from __future__ import annotations

import gzip
import json
import warnings

import polars as pl
import pytest
from helpers import DATA

from trainperf import dcgm, mlperf, trace
from trainperf.trace import hta
from trainperf.trace import read as trace_read

BASE = 1_700_000_000_000_000_000  # baseTimeNanoseconds of the hand-built traces
CAPTURE = DATA / "traces" / "h200_1gpu_1.3b_20261201T0923Z"
REAL = CAPTURE / "trace" / "rank0.pt.trace.json.gz"


def kineto(path, events, **meta):
    """Write a Kineto-style trace: top-level metadata, then traceEvents (one event per line)."""
    doc = {"schemaVersion": 1, "baseTimeNanoseconds": BASE, **meta, "traceEvents": events}
    text = json.dumps(doc, indent=0)
    if str(path).endswith(".gz"):
        with gzip.open(path, "wt") as fh:
            fh.write(text)
    else:
        path.write_text(text)
    return path


def step_ev(n, ts, dur, cat="user_annotation"):
    return {
        "ph": "X",
        "cat": cat,
        "name": f"ProfilerStep#{n}",
        "pid": 1,
        "tid": 1,
        "ts": ts,
        "dur": dur,
    }


def launch(corr, ts):
    return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
            "ts": ts, "dur": 0.5, "args": {"correlation": corr}}  # fmt: skip


def gpu(name, ts, dur, stream, corr, cat="kernel"):
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
            "args": {"device": 0, "stream": stream, "correlation": corr}}  # fmt: skip


def two_step_events():
    """Two profiler steps on one GPU with compute, NCCL and a memset (times in us).

    Step 0 (CPU 0-30): A compute [2,12) s7; B GEMM [8,14) s8; C AllReduce [10,20) s9; M memset
    [22,23) s7. Step 1 (CPU 30-60): D compute [32,40) s7; E SendRecv [36,44) s9; F SendRecv
    [45,47) s9. Every launch is 1 us before ProfilerStep's ... inside its step.
    """
    return [
        step_ev(0, 0, 30),
        step_ev(1, 30, 30),
        launch(1, 1), launch(2, 2), launch(3, 3), launch(4, 4),
        launch(5, 31), launch(6, 32), launch(7, 33),
        gpu("void at::native::vectorized_elementwise_kernel<4>(int)", 2, 10, 7, 1),
        gpu("sm90_xmma_gemm_bf16bf16_bf16f32", 8, 6, 8, 2),
        gpu("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 10, 10, 9, 3),
        gpu("Memset (Device)", 22, 1, 7, 4, cat="gpu_memset"),
        gpu("void at::native::reduce_kernel<512, 1>(int)", 32, 8, 7, 5),
        gpu("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", 36, 8, 9, 6),
        gpu("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", 45, 2, 9, 7),
    ]  # fmt: skip


@pytest.fixture
def two_steps(tmp_path):
    return kineto(
        tmp_path / "rank0.json", two_step_events(), distributedInfo={"rank": 0, "world_size": 1}
    )


# --------------------------------------------------------------------------------------------
# Names and categories
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, kind",
    [
        ("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "SendRecv"),
        ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)", "SendRecv"),
        ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "AllReduce"),
        ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(x)", "ReduceScatter"),
        ("ncclDevKernel_AllGather_RING_LL(x)", "AllGather"),
        ("ncclDevKernel_Broadcast_RING_LL(x)", "Broadcast"),
        ("ncclDevKernel_Generic_1(x)", "Other"),
        ("gloo:all_reduce", "AllReduce"),
        ("gloo:send", "SendRecv"),
        ("gloo:recv", "SendRecv"),
        ("nccl:send 0->1", "SendRecv"),
        ("nccl:_all_gather_base", "AllGather"),
        ("nccl:_reduce_scatter_base", "ReduceScatter"),
        ("c10d::allreduce_", "AllReduce"),
        ("c10d::_allgather_base_", "AllGather"),
        ("reduce_scatter_tensor_coalesced", "ReduceScatter"),
        ("all_gather_into_tensor", "AllGather"),
        ("aten::mm", None),
    ],
)
def test_collective_kind(name, kind):
    assert trace.collective_kind(name) == kind


@pytest.mark.parametrize(
    "name, kind, category",
    [
        ("ncclDevKernel_SendRecv(x)", "kernel", "communication"),
        ("Memcpy DtoH (Device -> Pinned)", "memcpy", "memory"),
        ("Memset (Device)", "memset", "memory"),
        ("nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_NTN", "kernel", "compute"),
        (
            "void cudaDeviceSync_kernel()",
            "kernel",
            "other",
        ),  # HTA: names with 'Sync' are not compute
    ],
)
def test_kernel_category(name, kind, category):
    assert trace.kernel_category(name, kind) == category


def test_kernel_category_agrees_with_hta():
    utils = pytest.importorskip(
        "hta.utils.utils",
        reason="HolisticTraceAnalysis not installed (pip install 'trainperf[trace]')",
    )
    names = ["ncclDevKernel_SendRecv(x)", "Memcpy HtoD (Pageable -> Device)", "Memset (Device)",
             "nvjet_sm90_tst_128x256", "void foo_Sync_kernel()", "dma_copy"]  # fmt: skip
    hta_map = {
        "COMMUNICATION": "communication",
        "MEMORY": "memory",
        "COMPUTATION": "compute",
        "OTHER": "other",
    }
    for n in names:
        assert trace.kernel_category(n) == hta_map[utils.get_kernel_type(n)], n


def test_short_kernel_name():
    assert (
        trace.short_kernel_name("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<4>, float>(int)")
        == "at::native::multi_tensor_apply_kernel"
    )  # fmt: skip
    assert trace.short_kernel_name("nvjet_sm90_tst_128x256") == "nvjet_sm90_tst_128x256"


# --------------------------------------------------------------------------------------------
# Hand-built traces: frames and the time split
# --------------------------------------------------------------------------------------------


def test_reader_frames(two_steps):
    ts = trace.read_trace(two_steps)
    assert ts.quality.height == 0 and ts.consistent
    assert ts.kernels.schema == pl.Schema(trace_read.KERNEL_SCHEMA)
    assert ts.steps.schema == pl.Schema(trace_read.STEP_SCHEMA)
    assert ts.cpu_comms.schema == pl.Schema(trace_read.CPU_COMM_SCHEMA)
    k = ts.kernels.sort("start_ns")
    assert k["start_ns"].to_list()[:2] == [BASE + 2000, BASE + 8000]  # base + ts x 1000
    assert k["category"].to_list() == [
        "compute",
        "compute",
        "communication",
        "memory",
        "compute",
        "communication",
        "communication",
    ]
    assert k["matmul"].to_list() == [False, True, False, False, False, False, False]
    assert k["collective"].to_list() == [
        None,
        None,
        "AllReduce",
        None,
        None,
        "SendRecv",
        "SendRecv",
    ]
    assert k["step"].to_list() == [0, 0, 0, 0, 1, 1, 1]  # by the launch call's CPU step
    assert k["launch_ns"].to_list()[0] == BASE + 1000
    st = ts.steps.sort("step")
    # step 0: first kernel at 2, next step's first at 32; step 1: 32 .. last end 47
    assert st["gpu_start_ns"].to_list() == [BASE + 2000, BASE + 32000]
    assert st["gpu_end_ns"].to_list() == [BASE + 32000, BASE + 47000]
    assert st["complete"].to_list() == [True, False]
    assert st["n_kernels"].to_list() == [4, 3]


def test_step_breakdown_by_hand(two_steps):
    sb = trace.step_breakdown(trace.read_trace(two_steps)).sort("step")
    s0, s1 = sb.row(0, named=True), sb.row(1, named=True)
    us = 1e-6
    # step 0, span [2,32) = 30: busy [2,20)+[22,23) = 19, idle 11; compute [2,14) = 12;
    # comm [10,20) = 10; overlap [10,14) = 4; exposed comm 6; memset 1 (alone); GEMM [8,14) = 6
    for key, want in [("span_s", 30), ("busy_s", 19), ("idle_s", 11), ("compute_s", 12), ("communication_s", 10),
                      ("overlap_s", 4), ("comm_exposed_s", 6), ("memory_s", 1), ("memory_exposed_s", 1), ("matmul_s", 6)]:  # fmt: skip
        assert s0[key] == pytest.approx(want * us), key
    assert s0["comm_comp_overlap"] == pytest.approx(0.4)
    assert s0["idle_share"] == pytest.approx(11 / 30)
    parts = [
        "compute_share",
        "comm_exposed_share",
        "memory_exposed_share",
        "other_exposed_share",
        "idle_share",
    ]
    assert sum(s0[p] for p in parts) == pytest.approx(1.0)
    # step 1, span [32,47) = 15: compute [32,40) = 8; comm [36,44)+[45,47) = 10; overlap [36,40) = 4
    assert s1["span_s"] == pytest.approx(15 * us) and s1["compute_s"] == pytest.approx(8 * us)
    assert s1["communication_s"] == pytest.approx(10 * us) and s1[
        "comm_comp_overlap"
    ] == pytest.approx(0.4)
    assert s1["idle_s"] == pytest.approx(1 * us)  # [44,45)


def test_whole_trace_analyses_by_hand(two_steps):
    ts = trace.read_trace(two_steps)
    # HTA's rule drops kernels launched in the last step (launches at 31-33 >= its start 30):
    # span [2,23) = 21 us, busy 19, idle 2, compute 12, non-compute 7
    tb = trace.temporal_breakdown(ts, engine="frames").row(0, named=True)
    assert tb["kernel_time_s"] == pytest.approx(21e-6) and tb["idle_s"] == pytest.approx(2e-6)
    assert tb["compute_s"] == pytest.approx(12e-6) and tb["non_compute_s"] == pytest.approx(7e-6)
    ov = trace.comm_comp_overlap(ts, engine="frames").row(0, named=True)
    assert ov["comm_comp_overlap"] == pytest.approx(0.4) and ov["communication_s"] == pytest.approx(
        10e-6
    )
    kt = {
        r["kernel_type"]: r["time_s"]
        for r in trace.kernel_type_breakdown(ts, engine="frames").iter_rows(named=True)
    }
    # [2,10) compute only = 8, [10,14) both = 4, [14,20) comm only = 6, [22,23) memory = 1
    assert kt == pytest.approx(
        {
            "COMPUTATION": 8e-6,
            "COMPUTATION overlapping COMMUNICATION": 4e-6,
            "COMMUNICATION": 6e-6,
            "MEMORY": 1e-6,
        }
    )
    idle = trace.idle_breakdown(ts, engine="frames")
    # stream 7: A ends 12, memset at 22 launched at 4 (< 12): gap 10 us >= 30? no: kernel_wait
    s7 = {
        r["idle_category"]: r["idle_s"]
        for r in idle.filter(pl.col("stream") == 7).iter_rows(named=True)
    }
    assert s7 == pytest.approx({"host_wait": 0.0, "kernel_wait": 10e-6, "other": 0.0})


def test_collective_breakdown_by_hand(two_steps):
    cb = trace.collective_breakdown(trace.read_trace(two_steps))
    got = {
        r["collective"]: (r["n_calls"], r["time_s"], r["share"]) for r in cb.iter_rows(named=True)
    }
    # AllReduce 10 us (1 call); SendRecv 8 + 2 = 10 us (2 calls): half of the 20 us each
    assert got == {
        "AllReduce": (1, pytest.approx(10e-6), pytest.approx(0.5)),
        "SendRecv": (2, pytest.approx(10e-6), pytest.approx(0.5)),
    }
    by_step = trace.collective_breakdown(trace.read_trace(two_steps), by_step=True)
    assert by_step.filter(pl.col("step") == 1)["collective"].to_list() == ["SendRecv"]


def test_top_kernels_by_hand(two_steps):
    tk = trace.top_kernels(trace.read_trace(two_steps), n=2)
    # total 10+6+10+1+8+8+2 = 45 us; SendRecv 10 us and AllReduce 10 us, then A 10 us
    assert tk.height == 2 and tk["time_s"].to_list() == pytest.approx([10e-6, 10e-6])
    assert tk["share"].to_list() == pytest.approx([10 / 45, 10 / 45])


# --------------------------------------------------------------------------------------------
# Damaged input
# --------------------------------------------------------------------------------------------


def test_truncated_json_names_file_and_line(tmp_path, two_steps):
    text = two_steps.read_text()
    bad = tmp_path / "cut.json"
    bad.write_text(text[: len(text) // 2])
    with pytest.raises(trace.TraceFormatError, match=r"cut\.json:\d+: truncated") as exc:
        trace.read_trace(bad)
    assert exc.value.line == text[: len(text) // 2].rstrip().count("\n") + 1  # the last line


def test_truncated_gzip(tmp_path, two_steps):
    gz = kineto(tmp_path / "t.json.gz", two_step_events())
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gz.read_bytes()[:-20])
    with pytest.raises(trace.TraceFormatError, match="damaged or truncated gzip"):
        trace.read_trace(cut)


@pytest.mark.parametrize("content", ["[1, 2, 3]", '{"schemaVersion": 1}', "\x00\x01binary"])
def test_not_a_trace(tmp_path, content):
    p = tmp_path / "x.json"
    p.write_text(content)
    with pytest.raises(trace.TraceFormatError):
        trace.read_trace(p)


def test_one_bad_file_costs_no_other(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    kineto(d / "rank0.json", two_step_events(), distributedInfo={"rank": 0, "world_size": 2})
    good = json.dumps(
        {"distributedInfo": {"rank": 1, "world_size": 2}, "traceEvents": two_step_events()}
    )
    (d / "rank1.json").write_text(good[:200])
    with pytest.warns(trace.TraceWarning, match=r"rank1\.json:\d+: .*truncated"):
        ts = trace.read_traces(d)
    assert ts.ranks.filter(pl.col("status") == "error")["file"].to_list() == [str(d / "rank1.json")]
    assert ts.kernels["rank"].unique().to_list() == [0]
    q = ts.quality.filter(pl.col("check") == "read").row(0, named=True)
    assert q["action"] == "parse_error" and q["first_line"] is not None


def test_cpu_only_trace_is_flagged(tmp_path):
    p = kineto(tmp_path / "cpu.json", [step_ev(0, 0, 10), step_ev(1, 10, 10),
               {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 5}])  # fmt: skip
    with pytest.warns(trace.TraceWarning, match="no GPU kernels"):
        ts = trace.read_trace(p)
    assert ts.ranks["status"].to_list() == ["no_gpu_activity"]
    assert trace.step_breakdown(ts).height == 0
    assert trace.temporal_breakdown(ts, engine="auto")["engine"].to_list() == []


def test_duplicates_and_bad_durations(tmp_path):
    ev = two_step_events()
    ev.append(dict(ev[9]))  # A again
    ev.append(gpu("void broken_kernel()", 50, -3, 7, 99))
    p = kineto(tmp_path / "rank0.json", ev)
    with pytest.warns(trace.TraceWarning):
        ts = trace.read_trace(p)
    checks = dict(zip(ts.quality["check"], ts.quality["n_samples"], strict=True))
    assert checks == {"bad_duration": 1, "duplicate_events": 1}
    assert ts.kernels.height == 7  # the seven good activities, once each


def test_stream_overlap_is_flagged(tmp_path):
    ev = two_step_events() + [gpu("void late_kernel()", 5, 3, 7, 50)]  # inside A [2,12) on stream 7
    with pytest.warns(trace.TraceWarning, match="same stream"):
        ts = trace.read_trace(kineto(tmp_path / "r.json", ev))
    assert ts.quality["check"].to_list() == ["stream_overlap"]


def test_relative_clock_without_base_is_flagged(tmp_path):
    doc = {"traceEvents": two_step_events()}
    p = tmp_path / "old.json"
    p.write_text(json.dumps(doc))
    with pytest.warns(trace.TraceWarning, match="cannot be matched"):
        ts = trace.read_trace(p)
    assert "clock" in ts.quality["check"].to_list()


def _rank_file(d, rank, run_id="run-a", world=2, shift_us=0):
    ev = [dict(e, ts=e["ts"] + shift_us) for e in two_step_events()]
    return kineto(d / f"rank{rank}.json", ev, distributedInfo={"rank": rank, "world_size": world},
                  trainperf={"run_id": run_id, "rank": rank})  # fmt: skip


def test_ranks_of_one_run_are_consistent(tmp_path):
    _rank_file(tmp_path, 0)
    _rank_file(tmp_path, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ts = trace.read_traces(tmp_path)
    assert ts.consistent and ts.ranks["rank"].to_list() == [0, 1]
    assert ts.kernels.group_by("rank").len().sort("rank")["len"].to_list() == [7, 7]


@pytest.mark.parametrize(
    "kw, pattern",
    [
        ({"run_id": "run-b"}, "different trainperf run ids"),
        ({"world": 4}, "disagree on world_size"),
        ({"shift_us": 3_600_000_000}, "do not overlap in time"),
    ],
)
def test_mixed_runs_are_flagged(tmp_path, kw, pattern):
    _rank_file(tmp_path, 0)
    _rank_file(tmp_path, 1, **kw)
    with pytest.warns(trace.TraceWarning, match=pattern):
        ts = trace.read_traces(tmp_path)
    assert not ts.consistent


def test_duplicate_rank_is_excluded(tmp_path):
    _rank_file(tmp_path, 0)
    d2 = tmp_path / "b"
    d2.mkdir()
    dup = _rank_file(d2, 0)
    with pytest.warns(trace.TraceWarning, match="rank 0 already read"):
        ts = trace.read_traces([tmp_path / "rank0.json", dup])
    assert ts.ranks["status"].to_list() == ["ok", "excluded"]
    assert ts.kernels.height == 7


# --------------------------------------------------------------------------------------------
# The bundled H200 capture, against its raw files
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def raw():
    with gzip.open(REAL, "rt") as fh:
        return json.load(fh)


@pytest.fixture(scope="module")
def real():
    return trace.read_traces(REAL.parent)


def _raw_gpu(raw):
    return [
        e
        for e in raw["traceEvents"]
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
    ]


def test_real_trace_reads_clean(real, raw):
    assert real.quality.height == 0
    r = real.ranks.row(0, named=True)
    assert (
        r["status"] == "ok"
        and r["device_name"] == raw["deviceProperties"][0]["name"] == "NVIDIA H200"
    )
    assert r["n_events"] == len(raw["traceEvents"])
    assert r["run_id"] == raw["trainperf"]["run_id"]


def test_real_kernel_sums_by_category_from_raw(real, raw):
    want: dict[str, float] = {}
    for e in _raw_gpu(raw):
        cat = (
            "memory"
            if e["cat"] != "kernel"
            else ("communication" if e["name"].startswith("nccl") else "compute")
        )
        want[cat] = want.get(cat, 0.0) + e["dur"]  # us
    got = {
        c: s / 1000
        for c, s in real.kernels.group_by("category").agg(pl.col("dur_ns").sum()).iter_rows()
    }
    assert set(got) == set(want) == {"compute", "memory"}
    for c in want:
        assert got[c] == pytest.approx(want[c], rel=1e-9), c


def test_real_steps_from_raw(real, raw):
    cpu = sorted((int(e["name"].split("#")[1]), e["ts"], e["dur"]) for e in raw["traceEvents"]
                 if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep"))  # fmt: skip
    base = raw["baseTimeNanoseconds"]
    st = real.steps.sort("step")
    assert st["step"].to_list() == [n for n, _, _ in cpu] == list(range(252, 260))
    assert st["cpu_start_ns"].to_list() == [base + round(ts * 1000) for _, ts, _ in cpu]
    # each kernel's step: the CPU step holding its cudaLaunchKernel/cuLaunchKernelEx (by correlation)
    launch = {e["args"]["correlation"]: e["ts"] for e in raw["traceEvents"]
              if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}  # fmt: skip
    counts = {n: 0 for n, _, _ in cpu}
    for e in _raw_gpu(raw):
        t = launch[e["args"]["correlation"]]
        for n, s, d in cpu:
            if s <= t <= s + d:
                counts[n] += 1
    assert st["n_kernels"].to_list() == [counts[n] for n, _, _ in cpu]


def _union_us(intervals, a, b):
    """Length of the union of [s, e) clipped to [a, b): a plain sort-and-merge, in us."""
    tot, cur_s, cur_e = 0.0, None, None
    for s, e in sorted((max(s, a), min(e, b)) for s, e in intervals if e > a and s < b):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                tot += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return tot + ((cur_e - cur_s) if cur_e is not None else 0.0)


def test_real_step_split_from_raw(real, raw):
    kern = [(e["ts"], e["ts"] + e["dur"], e["cat"], e["name"]) for e in _raw_gpu(raw)]
    firsts = {}
    launch = {
        e["args"]["correlation"]: e["ts"]
        for e in raw["traceEvents"]
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})
    }
    cpu = {
        int(e["name"].split("#")[1]): (e["ts"], e["ts"] + e["dur"])
        for e in raw["traceEvents"]
        if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep")
    }
    for e in _raw_gpu(raw):
        t = launch[e["args"]["correlation"]]
        n = next(n for n, (s, f) in cpu.items() if s <= t <= f)
        firsts[n] = min(firsts.get(n, float("inf")), e["ts"])
    sb = trace.step_breakdown(real).sort("step")
    for row in sb.filter(pl.col("complete")).iter_rows(named=True):
        a, b = firsts[row["step"]], firsts[row["step"] + 1]
        busy = _union_us([(s, e) for s, e, _, _ in kern], a, b)
        comp = _union_us([(s, e) for s, e, c, _ in kern if c == "kernel"], a, b)
        # raw ts are float us near 5.26e12 (1 ULP ~ 1 ns) and the reader rounds to whole ns:
        # ~2000 interval ends per step may differ by a few ns in total
        assert row["span_s"] * 1e6 == pytest.approx(b - a, abs=2e-3)
        assert row["busy_s"] * 1e6 == pytest.approx(busy, abs=0.5)
        assert row["compute_s"] * 1e6 == pytest.approx(comp, abs=0.5)
    assert (sb["communication_s"] == 0).all()


def test_real_steps_match_the_log(real):
    # the log's tracked_stats, read here as raw JSON: tokens = (step + 1) x 8 x 2048 for ProfilerStep#step
    stats = {}
    for line in (CAPTURE / "gpt_smoke" / "result_0.txt").read_text().splitlines():
        if '"key": "tracked_stats"' in line:
            ev = json.loads(line.split(":::MLLOG ", 1)[1])
            stats[ev["metadata"]["step"]] = ev["value"]["train_step_timing in s"]
    ml = trace.match_log(real, CAPTURE / "gpt_smoke" / "result_0.txt")
    for r in ml.iter_rows(named=True):
        tokens = (r["step"] + 1) * 8 * 2048
        assert r["log_tokens"] == tokens and r["log_step_time_s"] == pytest.approx(stats[tokens])
        assert r["phase"] == "train_06"  # steps 253..260 lie in the 6th block of 50 steps
        # model FLOP/s over the GPU span: logged 9.0739e9 FLOP/token x 16384 tokens / span
        assert r["model_tflops_per_gpu"] == pytest.approx(
            9.0739e9 * 16384 / r["span_s"] / 1e12, rel=1e-4
        )
        assert r["mfu"] == pytest.approx(
            r["model_tflops_per_gpu"] / 989.4, rel=1e-3
        )  # H200 dense BF16


def _raw_prom(field):
    """(epoch ms, value) of a field in the capture's exposition text, parsed here."""
    out = []
    with gzip.open(CAPTURE / "telemetry.prom.gz", "rt") as fh:
        for line in fh:
            if line.startswith(field + "{"):
                value, ms = line.rsplit(" ", 2)[-2:]
                out.append((int(ms), float(value)))
    return out


def test_real_telemetry_windows_from_raw(real):
    tel = dcgm.read_exposition(CAPTURE / "telemetry.prom.gz")
    mt = trace.match_telemetry(real, tel)
    a, b = real.kernels["start_ns"].min(), real.kernels["end_ns"].max()
    raw_t = [
        (ms, v)
        for ms, v in _raw_prom("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")
        if a <= (ms - 500) * 1_000_000 and ms * 1_000_000 <= b
    ]
    assert mt.height == len(raw_t) == 3  # 0.5 s samples wholly inside the 2.37 s traced span
    assert mt["tensor_active"].to_list() == pytest.approx([v for _, v in raw_t])
    assert (mt["window_s"] == 0.5).all()
    # the trace's busy share over one window, recomputed from the raw events
    with gzip.open(REAL, "rt") as fh:
        rawj = json.load(fh)
    base = rawj["baseTimeNanoseconds"]
    ms, _ = raw_t[0]
    w0, w1 = (ms * 1_000_000 - 500_000_000 - base) / 1000, (ms * 1_000_000 - base) / 1000
    busy = _union_us([(e["ts"], e["ts"] + e["dur"]) for e in _raw_gpu(rawj)], w0, w1)
    assert mt["busy_share"][0] == pytest.approx(busy / 500_000, abs=1e-6)


def test_real_steps_with_telemetry(real):
    st = trace.steps_with_telemetry(real, dcgm.read_exposition(CAPTURE / "telemetry.prom.gz"))
    assert (st["telemetry_coverage"] == 1.0).all()  # 0.5 s samples cover every 0.3 s step
    assert (
        st["tensor_active"].is_between(0.5, 0.65).all()
        and st["gr_engine_active"].is_between(0.95, 1.0).all()
    )


def test_real_capture_log_and_profiler_metadata_agree(raw):
    r = mlperf.load_results(CAPTURE / "gpt_smoke" / "result_0.txt")
    assert r.warnings == [] and r.runs["status"][0] == "success"
    ev = r.events.filter(pl.col("key") == "profiler_trace")
    meta = json.loads(ev["metadata"][0])
    assert meta["run_id"] == raw["trainperf"]["run_id"]
    assert (meta["skip_first"], meta["warmup"], meta["active"]) == (250, 2, 8)
    # schedule: skip 250, warm up 2 -> the 8 recorded steps are ProfilerStep#252..#259
    names = {e["name"] for e in raw["traceEvents"] if e.get("cat") == "user_annotation"}
    assert {f"ProfilerStep#{n}" for n in range(252, 260)} <= names


# --------------------------------------------------------------------------------------------
# HolisticTraceAnalysis as the peer of the whole-trace analyses
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def with_hta(real):
    pytest.importorskip(
        "hta", reason="HolisticTraceAnalysis not installed (pip install 'trainperf[trace]')"
    )
    return real


def test_temporal_breakdown_equals_hta(with_hta):
    a = trace.temporal_breakdown(with_hta, engine="frames").row(0, named=True)
    b = trace.temporal_breakdown(with_hta, engine="hta").row(0, named=True)
    assert b["engine"] == "hta"
    for k in ("kernel_time_s", "idle_s", "compute_s", "non_compute_s"):
        assert a[k] == pytest.approx(b[k], abs=1e-8), k  # float us (HTA) against whole ns


def test_idle_breakdown_equals_hta(with_hta):
    a = trace.idle_breakdown(with_hta, engine="frames")
    b = trace.idle_breakdown(with_hta, engine="hta")
    assert a["idle_category"].to_list() == b["idle_category"].to_list()
    # HTA sums float us, we whole ns: a few ns apart over ~3000 gaps
    assert a["idle_s"].to_list() == pytest.approx(b["idle_s"].to_list(), abs=1e-8)


def test_kernel_type_breakdown_close_to_hta(with_hta):
    a = dict(
        trace.kernel_type_breakdown(with_hta, engine="frames")
        .select("kernel_type", "time_s")
        .iter_rows()
    )
    b = dict(
        trace.kernel_type_breakdown(with_hta, engine="hta")
        .select("kernel_type", "time_s")
        .iter_rows()
    )
    assert set(a) == set(b) == {"COMPUTATION", "MEMORY"}
    # HTA truncates each piece to whole us: at most 1 us per piece below ours
    assert 0 <= a["COMPUTATION"] - b["COMPUTATION"] <= 0.005 * a["COMPUTATION"]


def test_overlap_without_communication_is_null_in_both(with_hta):
    for engine in ("frames", "hta"):
        assert trace.comm_comp_overlap(with_hta, engine=engine)["comm_comp_overlap"].to_list() == [
            None
        ]


def test_hta_engine_on_hand_built_nccl_trace(two_steps):
    pytest.importorskip(
        "hta", reason="HolisticTraceAnalysis not installed (pip install 'trainperf[trace]')"
    )
    ts = trace.read_trace(two_steps)
    a = trace.temporal_breakdown(ts, engine="frames").row(0, named=True)
    b = trace.temporal_breakdown(ts, engine="hta").row(0, named=True)
    assert b["kernel_time_s"] == pytest.approx(a["kernel_time_s"]) and b["idle_s"] == pytest.approx(
        a["idle_s"]
    )
    assert trace.comm_comp_overlap(ts, engine="hta")["comm_comp_overlap"][0] == pytest.approx(0.4)


def test_engine_hta_without_hta_says_how_to_install(monkeypatch, two_steps):
    monkeypatch.setattr(hta, "available", lambda: False)
    ts = trace.read_trace(two_steps)
    with pytest.raises(ImportError, match=r"trainperf\[trace\]"):
        trace.temporal_breakdown(ts, engine="hta")
    assert trace.temporal_breakdown(ts, engine="auto")["engine"].to_list() == ["frames"]
