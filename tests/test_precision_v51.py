"""A v5.1-style result (GB300, Llama 3.1 8B; NVIDIA's v5.1 log keys) read end to end: model TFLOP/s
and MFU at the run's own precision, read from the log's configuration dump; the config fills a gap
or is overridden with a note; an unknown precision prints no MFU as if it were BF16.

The logs are written here (raw MLCommons logs are not bundled): the MLLOG lines copy the keys and
shapes of mlcommons/training_results_v5.1 NVIDIA/results/theia_ngpu8_ngc25.09_nemo/llama31_8b
(``train_step_time`` in ``tracked_stats``, ``samples_count`` progress) and the configuration lines
those of Dell's 1xXE9780x8B300-SXM-270GB llama31_8b logs (``fp8='hybrid'``, ``fp4=None``)."""

from __future__ import annotations

import json

import pytest

from trainperf import mlperf
from trainperf.flops import GPT_OSS_20B, moe_flops_per_token
from trainperf.mlperf.precision import precision_from_log

F_TOK = 57_912_852_480  # Llama 3.1 8B per token (tests/test_moe_models.py by hand)


def _line(t, key, value=None, **meta):
    ev = {"namespace": "", "time_ms": t, "event_type": "POINT_IN_TIME", "key": key,
          "value": value, "metadata": {"file": "x.py", "lineno": 1, **meta}}  # fmt: skip
    return ":::MLLOG " + json.dumps(ev)


def _log(config_lines: list[str], step_s: float = 0.4, seed: int = 1) -> str:
    t0 = 1_759_906_600_000 + seed * 3_600_000  # each run its own start: byte copies are not runs
    lines = [
        _line(t0, "submission_benchmark", "llama31_8b"),
        _line(t0, "submission_org", "X"),
        _line(t0, "submission_division", "closed"),
        _line(t0, "submission_status", "onprem"),
        _line(t0, "submission_platform", "2xGB300"),
        _line(t0, "cache_clear", True),
        _line(t0, "init_start"),
        *config_lines,
        _line(t0 + 1000, "global_batch_size", 16),
        _line(t0 + 1000, "max_sequence_length", 8192),
        _line(t0 + 1000, "seed", seed),
        _line(t0 + 2000, "init_stop"),
        _line(t0 + 2000, "run_start"),
        _line(t0 + 2000, "block_start", samples_count=12288, step=0),
    ]
    t = t0 + 2000
    for step in range(31, 768, 32):
        t += int(32 * step_s * 1000)
        lines.append(_line(t, "tracked_stats", {"train_step_time": step_s}, step=float(step)))
    lines += [
        _line(t, "block_stop", samples_count=12288, step=768),
        _line(t + 5000, "eval_accuracy", 3.29, samples_count=12288),
        _line(t + 6000, "run_stop", status="success", samples_count=12288),
    ]
    return "\n".join(lines) + "\n"


def _folder(tmp_path, config_lines):
    sysdir = tmp_path / "X" / "systems"
    sysdir.mkdir(parents=True)
    (sysdir / "gb300_n2.json").write_text(json.dumps({
        "submitter": "X", "system_name": "GB300 NVL72 (2 trays)", "number_of_nodes": "2",
        "accelerators_per_node": "4", "accelerator_model_name": "NVIDIA Blackwell Ultra GPU (GB300)",
        "framework": "NeMo"}))  # fmt: skip
    res = tmp_path / "X" / "results" / "gb300_n2" / "llama31_8b"
    res.mkdir(parents=True)
    for i in range(3):
        (res / f"result_{i}.txt").write_text(_log(config_lines, seed=i + 1))
    return tmp_path


def _thr(tmp_path, config_lines, **kw):
    results = mlperf.load_results(_folder(tmp_path, config_lines))
    t = mlperf.throughput(results, **kw)
    assert t.height == 3
    return t.row(0, named=True)


def test_fp8_from_the_config_dump_gives_mfu_at_the_fp8_peak(tmp_path):
    r = _thr(
        tmp_path,
        ["0: TransformerConfig(bf16=True, fp8='hybrid', fp8_recipe='tensorwise', fp4=None)"],
    )
    # by hand: 16 sequences / (0.4 s x 8 GPUs) = 5 sequences/s/GPU; x 8192 tokens x F_tok
    assert r["samples_per_s_per_gpu_step"] == pytest.approx(5.0)
    tflops = 5.0 * 8192 * F_TOK / 1e12  # 2,372.1 TFLOP/s per GPU
    assert r["model_tflops_per_gpu_step"] == pytest.approx(tflops)
    assert r["precision"] == "fp8" and "fp8='hybrid'" in r["precision_source"]
    # GB300 FP8 dense 720 PFLOPS sparse per 72 GPUs / 2 = 5,000 TFLOP/s
    assert r["mfu_step"] == pytest.approx(tflops / 5000)
    assert r["mfu_peak"] == "FP8 dense 5000 TFLOP/s"
    assert r["mfu_fp4_dense_step"] == pytest.approx(tflops / 15000)


def test_unknown_precision_prints_no_mfu_and_says_bf16_is_impossible(tmp_path):
    r = _thr(
        tmp_path,
        [],
    )
    assert r["precision"] is None and r["mfu_step"] is None
    # 2,372 < 2,500: below the BF16 peak, so nothing rules BF16 out; each column names its peak
    assert "mfu_bf16_dense_* against BF16 dense 2500 TFLOP/s" in r["note"]
    assert "above the BF16 dense peak" not in r["note"]


def test_above_the_bf16_peak_the_note_rules_bf16_out(tmp_path):
    (tmp_path / "a").mkdir()
    results = mlperf.load_results(_folder(tmp_path / "a", []))
    # a faster step: 16 / (0.3 x 8) x 8192 x F_TOK = 3,162.8 TFLOP/s > 2,500 (BF16 dense)
    for i, f in enumerate(sorted(results.runs["result_file"])):
        with open(f, "w") as fh:
            fh.write(_log([], step_s=0.3, seed=i + 1))
    r = mlperf.throughput(mlperf.load_results(tmp_path / "a")).row(0, named=True)
    assert r["model_tflops_per_gpu_step"] == pytest.approx(16 / 2.4 * 8192 * F_TOK / 1e12)
    assert r["mfu_step"] is None
    assert "is above the BF16 dense peak: the run computed in FP8 or FP4, not BF16" in r["note"]


def test_config_fills_a_gap_and_the_log_overrides_the_config(tmp_path):
    (tmp_path / "gap").mkdir()
    (tmp_path / "both").mkdir()
    gap = mlperf.throughput(mlperf.load_results(_folder(tmp_path / "gap", [])), precision="bf16")
    r = gap.row(0, named=True)
    assert r["precision"] == "bf16" and r["precision_source"] == "config"
    assert r["mfu_step"] == pytest.approx(r["model_tflops_per_gpu_step"] / 2500)
    both = mlperf.throughput(
        mlperf.load_results(_folder(tmp_path / "both", ["  fp8: true"])), precision="bf16"
    ).row(0, named=True)
    assert both["precision"] == "fp8"
    assert "the config says bf16 but the log says fp8" in both["note"]


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (["fp8: true"], "fp8"),  # Oracle v4.1 GPT-3 logs, line 6765
        (["fp8='hybrid', fp4=None, bf16=True"], "fp8"),  # Megatron args (Dell v5.1)
        (["fp8=None, fp4='nvfp4', bf16=True"], "fp4"),
        (["fp8: null", "bf16: true"], "bf16"),
        (["fp8_recipe='tensorwise', keep_fp8_transpose_cache=False"], None),  # no setting
        (['{"key": "lowest_numerical_precision_in_linear", "value": "nvfp4"}', "fp8: true"], "fp4"),
        ([], None),
    ],
)
def test_precision_settings(tmp_path, lines, expected):
    f = tmp_path / "result_0.txt"
    f.write_text("\n".join(["x", *lines, "y"]) + "\n")
    prec, src = precision_from_log(f)
    assert prec == expected
    assert (src is None) == (expected is None)
    assert precision_from_log(tmp_path / "missing.txt") == (None, None)


@pytest.mark.parametrize(
    ("bench", "seq", "per_token"),
    [
        # tests/test_moe_models.py by hand: active experts only, dense attention
        ("gpt_oss_20b", 8192, None),
        ("deepseekv3_671b", 4096, 281_108_152_320),
    ],
)
def test_the_v60_moe_benchmarks_get_model_tflops_from_their_logs(tmp_path, bench, seq, per_token):
    per_token = per_token or moe_flops_per_token(GPT_OSS_20B)
    root = _folder(tmp_path, ["fp8: true"])
    for f in root.rglob("result_*.txt"):
        text = (
            f.read_text()
            .replace('"llama31_8b"', f'"{bench}"')
            .replace(
                '"max_sequence_length", "value": 8192', f'"max_sequence_length", "value": {seq}'
            )
        )
        new = f.parents[1] / bench / f.name
        new.parent.mkdir(exist_ok=True)
        new.write_text(text)
        f.unlink()
    r = mlperf.throughput(mlperf.load_results(root)).row(0, named=True)
    assert r["benchmark"] == bench
    # 16 sequences / (0.4 s x 8 GPUs) = 5 sequences/s/GPU of `seq` tokens
    assert r["model_tflops_per_gpu_step"] == pytest.approx(5.0 * seq * per_token / 1e12)
    assert r["mfu_step"] == pytest.approx(r["model_tflops_per_gpu_step"] / 5000)
