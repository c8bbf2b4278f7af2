"""Smoke benchmark on CPU (tiny preset): the MLPerf log it writes loads with trainperf.mlperf."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch)")

from trainperf import flops, mlperf  # noqa: E402
from trainperf.capture import smoke  # noqa: E402


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("smoke") / "gpt_smoke"
    argv = ["--preset", "tiny", "--steps", "7", "--eval-every", "3", "--device", "cpu"]
    assert smoke.main([*argv, "--out-dir", str(out)]) == 0
    return out / "result_0.txt"


def test_log_loads_as_a_successful_run(smoke_run):
    res = mlperf.load_results(smoke_run)
    assert res.warnings == []
    (run,) = res.runs.to_dicts()
    assert run["status"] == "success"
    assert run["benchmark"] == "gpt_smoke"
    assert run["time_to_train_min"] > 0
    assert run["global_batch_size"] == 4
    assert run["max_sequence_length"] == 32
    assert run["seed"] == 1234
    assert run["n_accelerators"] == 1  # from the :::SYSJSON line
    assert run["framework"].startswith("PyTorch ")
    assert run["n_evals"] == 3  # blocks of 3, 3 and 1 steps
    assert run["eval_value"] == pytest.approx(math.log(256), abs=0.3)  # random tokens


def test_step_times_and_token_counts(smoke_run):
    res = mlperf.load_results(smoke_run)
    st = mlperf.step_times(res.events)
    assert st.height == 7
    assert st["step"].to_list() == [128 * k for k in range(1, 8)]  # tokens: 4 x 32 per step
    assert (st["step_time_s"] > 0).all()
    ev = res.events
    blocks = [json.loads(m) for m in ev.filter(ev["key"] == "block_start")["metadata"]]
    assert [(b["first_epoch_num"], b["epoch_count"]) for b in blocks] == [
        (0, 384),
        (384, 384),
        (768, 384),
    ]
    evals = [
        json.loads(m)["epoch_num"] for m in ev.filter(ev["key"] == "eval_accuracy")["metadata"]
    ]
    assert evals == [384, 768, 896]


def test_model_spec_and_flops_are_logged_and_consistent(smoke_run):
    res = mlperf.load_results(smoke_run)
    ev = res.events

    def value(key):
        (v,) = ev.filter(ev["key"] == key)["value"].to_list()
        return json.loads(v)

    spec = flops.ModelSpec(**value("model_spec"))
    assert spec == smoke.model_spec(smoke.PRESETS["tiny"])
    # the torch model has exactly the parameters the FLOP module counts (padded vocabulary)
    assert value("model_param_count") == flops.param_count(spec, vocab="padded")
    assert value("model_flops_per_token") == pytest.approx(flops.narayanan_flops_per_token(spec))
    assert value("model_flops_per_token") == pytest.approx(flops.model_flops_per_token(spec))
    assert value("model_flops_per_token_causal") == pytest.approx(
        flops.model_flops_per_token(spec, causal=True)
    )


@pytest.mark.parametrize("name", ["gpt2-medium", "1.3b"])
def test_large_presets_have_the_advertised_size(name):
    spec = smoke.model_spec(smoke.PRESETS[name])
    n = flops.param_count(spec, vocab="padded")
    assert n == pytest.approx({"gpt2-medium": 354.8e6, "1.3b": 1.315e9}[name], rel=0.01)


def test_cli_errors(tmp_path, capsys, smoke_run):
    assert smoke.main(["--preset", "tiny"]) == 2  # neither --steps nor --minutes
    assert smoke.main(["--steps", "1", "--eval-every", "0"]) == 2
    # an existing result file is not overwritten without --overwrite
    rc = smoke.main(["--steps", "1", "--device", "cpu", "--out-dir", str(smoke_run.parent)])
    assert rc == 1
    assert "exists" in capsys.readouterr().err


def test_module_runs_under_torchrun(tmp_path):
    # as a script, launched the way the docstring says (torchrun --standalone): the one test that
    # runs torchrun itself (test_trace_torch's ranks get its environment from a forking launcher)
    out = tmp_path / "gpt_smoke"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=1",
           "-m", "trainperf.capture.smoke", "--steps", "2", "--device", "cpu"]  # fmt: skip
    p = subprocess.run([*cmd, "--out-dir", str(out)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "parameters; model FLOPs/token" in p.stdout
    assert mlperf.load_results(out).runs["status"].to_list() == ["success"]
