"""The real GPU capture (data/telemetry) and the MFU / all-reduce cross-checks of trainperf.telemetry."""

from __future__ import annotations

import json

import polars as pl
import pytest
from helpers import DATA, mllog

from trainperf import dcgm, mlperf, telemetry

CAPTURE_1 = DATA / "telemetry" / "h200_1gpu_1.3b_20261129T1852Z"
CAPTURE_2 = DATA / "telemetry" / "h200_2gpu_1.3b_20261129T1852Z"
T0 = 1_700_000_000_000  # ms


def _log(tmp_path, n_gpus=2):
    sysjson = {
        "number_of_nodes": "1",
        "accelerators_per_node": str(n_gpus),
        "accelerator_model_name": "NVIDIA H200",
    }
    lines = [
        ":::SYSJSON " + json.dumps(sysjson),
        mllog("submission_benchmark", "gpt_smoke", T0 - 5000),
        mllog("global_batch_size", 8, T0 - 5000),
        mllog("max_sequence_length", 2048, T0 - 5000),
        mllog("model_flops_per_token", 1e10, T0 - 5000),
        mllog("model_param_count", 1_000_000_000, T0 - 5000),
        mllog("run_start", None, T0, event_type="INTERVAL_START"),
        mllog(
            "block_start", None, T0, {"first_epoch_num": 0, "epoch_count": 163840}, "INTERVAL_START"
        ),
    ]
    for i in range(1, 11):
        lines.append(
            mllog(
                "tracked_stats", {"train_step_timing in s": 0.5}, T0 + i * 500, {"step": 16384 * i}
            )
        )
    lines += [
        mllog(
            "block_stop",
            None,
            T0 + 60_000,
            {"first_epoch_num": 0, "epoch_count": 163840},
            "INTERVAL_END",
        ),
        mllog("eval_accuracy", 10.0, T0 + 61_000, {"epoch_num": 163840}),
        mllog("run_stop", None, T0 + 62_000, {"status": "success"}, "INTERVAL_END"),
    ]
    p = tmp_path / "gpt_smoke" / "result_0.txt"
    p.parent.mkdir(parents=True)
    p.write_text("\n".join(lines) + "\n")
    return mlperf.load_results(p)


def _expo(tmp_path, samples):
    """samples: (field, gpu, value, ms) -> a dcgm-exporter exposition file with per-sample timestamps."""
    text = "".join(
        f'{f}{{gpu="{g}",UUID="GPU-{g}",device="nvidia{g}",modelName="NVIDIA H200",Hostname="h1"}} {v} {ms}\n'
        for f, g, v, ms in samples
    )
    p = tmp_path / "t.prom"
    p.write_text(text)
    return dcgm.read_exposition(p)


def test_mfu_cross_check_by_hand(tmp_path):
    res = _log(tmp_path)
    samples = [
        ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", g, v, T0 + dt)
        for g in (0, 1)
        for v, dt in ((0.2, 10_000), (0.3, 20_000))
    ]
    samples += [
        ("DCGM_FI_DEV_SM_CLOCK", g, 1464, T0 + dt) for g in (0, 1) for dt in (10_000, 20_000)
    ]
    samples += [
        ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 0, 0.9, T0 - 30_000)
    ]  # before the block: excluded
    out = telemetry.mfu_cross_check(_expo(tmp_path, samples), res)
    assert out["gpu"].to_list() == [0, 1]
    r = out.row(0, named=True)
    # tokens/s/GPU = 8 x 2048 / (0.5 s x 2 GPUs) = 16384; x 1e10 FLOP/token = 163.84 TFLOP/s
    assert r["model_tflops_per_gpu"] == pytest.approx(163.84)
    assert r["mfu"] == pytest.approx(163.84 / 989.4)  # H200 dense BF16 peak 989.4 TFLOP/s
    assert r["tensor_active_mean"] == pytest.approx(
        0.25
    )  # (0.2 + 0.3) / 2, the 0.9 outside the block left out
    assert r["tensor_estimate_tflops"] == pytest.approx(0.25 * 989.4)  # 247.35
    assert r["tensor_estimate_clock_adjusted_tflops"] == pytest.approx(
        0.25 * 989.4 * 1464 / 1830
    )  # 197.88
    assert r["estimate_over_model"] == pytest.approx(247.35 / 163.84)


def test_allreduce_check_by_hand(tmp_path):
    res = _log(tmp_path)
    samples = [
        ("DCGM_FI_PROF_NVLINK_TX_BYTES", g, v, T0 + dt)
        for g in (0, 1)
        for v, dt in ((7.6e9, 10_000), (8.4e9, 20_000))
    ]
    samples += [("DCGM_FI_PROF_NVLINK_RX_BYTES", g, 8e9, T0 + 10_000) for g in (0, 1)]
    out = telemetry.allreduce_check(_expo(tmp_path, samples), res)
    # ring all-reduce: 2(n-1)/n x 1e9 params x 4 B / 0.5 s = 2*1/2 * 4e9 / 0.5 = 8e9 B/s = 8 GB/s
    assert out["expected_tx_GBps"].to_list() == pytest.approx([8.0, 8.0])
    assert out["measured_tx_GBps"].to_list() == pytest.approx([8.0, 8.0])  # (7.6 + 8.4) / 2
    assert out["measured_over_expected"].to_list() == pytest.approx([1.0, 1.0])


def test_one_gpu_has_no_allreduce(tmp_path):
    with pytest.raises(ValueError, match="one-GPU run"):
        telemetry.allreduce_check(
            _expo(tmp_path, [("DCGM_FI_PROF_NVLINK_TX_BYTES", 0, 1.0, T0)]),
            _log(tmp_path, n_gpus=1),
        )


@pytest.mark.parametrize("capture,n_gpus", [(CAPTURE_1, 1), (CAPTURE_2, 2)])
def test_real_capture_loads(capture, n_gpus):
    res = mlperf.load_results(capture / "gpt_smoke" / "result_0.txt")
    run = res.runs.row(0, named=True)
    assert (
        run["status"] == "success"
        and run["n_accelerators"] == n_gpus
        and run["accelerator_model"] == "NVIDIA H200"
    )
    assert run["time_to_train_min"] > 2.5 and res.warnings == []
    t = dcgm.read_exposition(capture / "telemetry.prom")
    fields = set(t["field"].unique().to_list())
    assert {
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "DCGM_FI_PROF_SM_ACTIVE",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_SM_CLOCK",
    } <= fields
    assert sorted(t["gpu"].unique().to_list()) == list(range(n_gpus))
    # 1 s sampling over a run of about 3 minutes
    per_gpu = t.filter(pl.col("field") == "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE").group_by("gpu").len()
    assert per_gpu["len"].min() > 150
    # the collector's versions file names the GPU and driver
    assert "NVIDIA H200" in (capture / "versions.txt").read_text()
