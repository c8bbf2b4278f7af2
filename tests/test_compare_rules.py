"""The comparison's rules (issue 24), each on a small fixture made from the bundled Eos logs:
round choice (same round, else the nearest, said), equal GPU count (a copy re-labelled as 4 GPUs a
node), power-law interpolation with its measured bounds, extrapolation as a bound, an accelerator
described in the config, memory prose per accelerator, the shell-traced SYSJSON line, Quarto for
any ``--out`` (a fake ``quarto`` on PATH) and ``trainperf compare``.

Expected values: the bundled logs' published scores (MLPerf Training v3.1/v4.1 results tables,
``data/mlperf/SOURCES.md``: Eos v4.1 GPT-3 256 GPUs 96.664 min, 512 GPUs 49.795 min; LoRA 8 GPUs
27.928 min, 64 GPUs 4.573 min; v3.1 GPT-3 768 GPUs 40.626 min) and the arithmetic in each test."""

from __future__ import annotations

import doctest
import json
import math
import os
import shutil
import stat
import warnings
from pathlib import Path

import polars as pl
import pytest
import yaml
from helpers import MLPERF, ROOT

from trainperf import compare, flops
from trainperf.compare import evaluated, ratios
from trainperf.config import parse_config, report_overrides
from trainperf.errors import ConfigError
from trainperf.flops import memory
from trainperf.mlperf import load_results
from trainperf.report import book_build, charts, cli, job
from trainperf.report.book_words import logs_flags
from trainperf.report.charts.eos import KIND_LABELS
from trainperf.report.charts.theme import _log_encoding, log_ticks
from trainperf.report.compare_cli import config_comparison
from trainperf.report.job import _comparison_line

EOS_N32 = MLPERF / "v4.1" / "NVIDIA"
N32_SYSTEM = "eos_n32_ngc24.09_nemo"
N64_SYSTEM = "eos_n64_ngc24.09_nemo"
T256, T512 = 96.664483, 49.795133  # Eos v4.1 GPT-3 scores (min), as the bundled logs give them
T8, T64 = 27.928383, 4.573167  # Eos v4.1 LoRA scores (min)


def _copy(tmp_path: Path, round_: str, system: str, source: str, bench: str = "gpt3",
          per_node: int | None = None) -> Path:  # fmt: skip
    """A byte copy of one Eos results folder under another system name and round folder; with
    ``per_node`` its system description says that many GPUs a node (same GPU count)."""
    src_round = "v4.1"
    root = tmp_path / f"training_results_{round_}"
    res = root / "Copycat" / "results" / system / bench
    res.mkdir(parents=True)
    for f in sorted(
        (MLPERF / src_round / "NVIDIA" / "results" / source / bench).glob("result_*.txt")
    ):
        shutil.copyfile(f, res / f.name)
    desc = json.loads((MLPERF / src_round / "NVIDIA" / "systems" / f"{source}.json").read_text())
    if per_node:
        gpus = int(desc["number_of_nodes"]) * int(desc["accelerators_per_node"])
        desc["accelerators_per_node"], desc["number_of_nodes"] = (
            str(per_node),
            str(gpus // per_node),
        )
    (root / "Copycat" / "systems").mkdir()
    (root / "Copycat" / "systems" / f"{system}.json").write_text(json.dumps(desc))
    return root


def _side(
    system: str, bench: str, n_gpus: int, minutes: float, round_: str = "v4.1"
) -> pl.DataFrame:
    row = dict.fromkeys(compare.SIDE_SCHEMA)
    row.update(system=system, result=system.lower(), source="logs", round=round_, benchmark=bench,
               n_nodes=max(1, n_gpus // 8), n_gpus=n_gpus, time_to_train_min=minutes, n_runs=3)  # fmt: skip
    return pl.DataFrame([row], schema=compare.SIDE_SCHEMA)


@pytest.fixture(scope="module")
def eos():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # data/mlperf bundles Oracle's GPT-3 beside Eos: the reference is Eos's folders only
        return compare.reference_side(load_results(MLPERF), "Eos", 8, "fp8")


# --------------------------------------------------------------------------- round choice


def test_round_choice_same_round_else_nearest_with_the_reason():
    assert compare.reference_round_for("v4.1", ["v3.1", "v4.0", "v4.1"]) == ("v4.1", None)
    # v5.0 is 0.9 from v4.1 and 1.0 from v4.0: v4.1, said
    got = compare.reference_round_for("v5.0", ["v3.1", "v4.0", "v4.1"])
    assert got == ("v4.1", "no result of the reference in v5.0; nearest round v4.1")
    # equally near (v4.0 between v3.1... no: v3.5 is 0.4 from both v3.1 and v3.9): the newer
    assert compare.reference_round_for("v3.5", ["v3.1", "v3.9"])[0] == "v3.9"
    # a requested round the reference has wins; an unknown round takes the newest, said
    assert compare.reference_round_for("v4.1", ["v3.1", "v4.1"], "v3.1") == ("v3.1", None)
    assert compare.reference_round_for(None, ["v3.1", "v4.1"])[0] == "v4.1"
    assert compare.reference_round_for("v4.1", []) == (None, None)


def test_a_v41_result_is_compared_with_v41_not_the_measured_v31_at_its_scale(eos):
    # 768 GPUs GPT-3 in v4.1: Eos v3.1 has a 768-GPU run (40.626 min), but v4.1 is the same round:
    # beyond v4.1's largest scale (512 GPUs), perfect scaling 49.795 x 512/768 = 33.197 min,
    # ratio 40.0/33.197 = 1.2050, an upper bound (Eos cannot scale better than perfectly)
    (r,) = compare.log_comparison(_side("A", "gpt3", 768, 40.0), eos).rows(named=True)
    assert (r["reference_round"], r["reference_kind"]) == ("v4.1", "extrapolated")
    assert r["reference_round_note"] is None
    assert r["reference_min"] == pytest.approx(T512 * 512 / 768)
    assert r["ratio"] == pytest.approx(40.0 / (T512 * 512 / 768)) == pytest.approx(1.2050, abs=1e-4)
    assert (r["ratio_low"], r["ratio_high"]) == (None, r["ratio"])


def test_a_round_the_reference_lacks_takes_the_nearest_and_the_book_says_so(tmp_path):
    # the Eos v4.1 256-GPU logs copied as a "v5.0" result: Eos has no GPT-3 in v5.0, the nearest
    # is v4.1 (NeMo 24.09), measured at 256 GPUs, the same logs: ratio 1
    logs = _copy(tmp_path, "v5.0", "copy_n32", N32_SYSTEM)
    with pytest.warns(compare.ComparisonWarning, match="v5.0 .* compared with Eos v4.1"):
        frame = compare.cluster_comparison("Copycat", 8, "H100 SXM", MLPERF, mlperf=logs)
    (r,) = frame.rows(named=True)
    assert (r["evaluated_round"], r["reference_round"], r["reference_kind"]) == (
        "v5.0",
        "v4.1",
        "measured",
    )
    assert r["ratio"] == pytest.approx(1.0, abs=1e-12)
    assert r["reference_round_note"] == "no result of the reference in v5.0; nearest round v4.1"
    text = compare.comparison_summary(frame)
    assert "Copycat v5.0 (NVIDIA NeMo Framework Release 24.09) compared with Eos v4.1 " in text
    assert "no result of the reference in v5.0; nearest round v4.1." in text


# --------------------------------------------------------------------------- equal GPU count


def test_four_gpus_a_node_compares_at_equal_gpu_count_not_equal_nodes(tmp_path):
    # the 512-GPU Eos v4.1 logs re-labelled as 128 nodes x 4 GPUs: compared with Eos at 512 GPUs
    # (64 of its nodes), not at 128 nodes; same logs, so ratio = time_ratio = 1
    logs = _copy(tmp_path, "v4.1", "copy_4pn", N64_SYSTEM, per_node=4)
    frame = compare.cluster_comparison("Quad", 4, "H100 SXM", MLPERF, mlperf=logs)
    (r,) = frame.rows(named=True)
    assert (r["n_nodes"], r["n_gpus"], r["reference_n_gpus"]) == (128, 512, 512)
    assert (r["reference_kind"], r["reference_n_nodes"]) == ("measured", 64)
    assert r["ratio"] == pytest.approx(1.0, abs=1e-12) and r["time_ratio"] == r["ratio"]
    assert compare.comparison_summary(frame).startswith(
        "Quad needs 1.00x the GPU time of Eos v4.1 at 512 GPUs (GPT-3 175B)"
    )


def test_ratio_is_the_gpu_time_ratio_and_equals_the_time_ratio_at_equal_counts(eos):
    # 256 GPUs, 110 min against Eos 256 GPUs 96.664 min: (256 x 110)/(256 x 96.664) = 1.13795
    (r,) = compare.log_comparison(_side("A", "gpt3", 256, 110.0), eos).rows(named=True)
    assert r["ratio"] == pytest.approx(110.0 / T256) == pytest.approx(1.13795, abs=1e-5)
    assert r["time_ratio"] == pytest.approx(r["ratio"])
    assert r["ratio_low"] == r["ratio_high"] == r["ratio"]
    assert compare.gpu_time_ratio(16, 10.0, 32, 5.0) == 1.0  # 160 GPU-min each


# --------------------------------------------------------------------------- interpolation


def test_between_two_measured_scales_one_power_law_estimate_with_both_bounds(eos):
    # LoRA at 32 GPUs, 10 min; Eos v4.1 measured 8 GPUs 27.928 min and 64 GPUs 4.573 min.
    # b = ln(4.573167/27.928383)/ln(8) = -0.87016; T(32) = 27.928383 x 4^b = 27.928383 x 0.29931 = 8.3591 min
    b = math.log(T64 / T8) / math.log(8)
    assert b == pytest.approx(-0.87016, abs=1e-5)
    t32 = T8 * 4**b
    assert t32 == pytest.approx(8.3591, abs=1e-4)
    (r,) = compare.log_comparison(_side("L", "llama2_70b_lora", 32, 10.0), eos).rows(named=True)
    assert r["reference_kind"] == "interpolated" and r["reference_n_gpus"] == 32
    assert r["reference_min"] == pytest.approx(t32, rel=1e-6)
    assert r["ratio"] == pytest.approx(10.0 / 8.3591, abs=1e-4)  # 1.1963
    # bounds: 320 GPU-min against each neighbour's own GPU time, 8 x 27.928 = 223.43 and
    # 64 x 4.573 = 292.68 GPU-min: 1.4322 and 1.0933
    assert r["ratio_high"] == pytest.approx(320 / (8 * T8)) == pytest.approx(1.4322, abs=1e-4)
    assert r["ratio_low"] == pytest.approx(320 / (64 * T64)) == pytest.approx(1.0933, abs=1e-4)
    assert (r["reference_low_n_gpus"], r["reference_high_n_gpus"]) == (8, 64)
    text = compare.comparison_summary(
        compare.log_comparison(_side("L", "llama2_70b_lora", 32, 10.0), eos)
    )
    assert text == (
        "L needs 1.20x (reference interpolated between its 8- and 64-GPU runs; bounds 1.09x to "
        "1.43x) the GPU time of Eos v4.1 at 32 GPUs (Llama 2 70B LoRA)."
    )


def test_below_the_smallest_scale_the_extrapolation_is_a_lower_bound(eos):
    # GPT-3 at 128 GPUs, 200 min: Eos v4.1's smallest is 256 GPUs, 96.664 x 256/128 = 193.33 min,
    # ratio 200/193.33 = 1.0345 at least (Eos at 128 GPUs needs at most its 256-GPU GPU time)
    (r,) = compare.log_comparison(_side("A", "gpt3", 128, 200.0), eos).rows(named=True)
    assert r["reference_kind"] == "extrapolated"
    assert r["ratio"] == pytest.approx(200.0 / (T256 * 2)) == pytest.approx(1.0345, abs=1e-4)
    assert (r["ratio_low"], r["ratio_high"]) == (r["ratio"], None)
    assert "at least 1.03x" in compare.comparison_summary(
        compare.log_comparison(_side("A", "gpt3", 128, 200.0), eos)
    )


def test_a_benchmark_the_reference_never_ran_says_so(eos):
    (r,) = compare.log_comparison(_side("A", "bert", 64, 5.0), eos).rows(named=True)
    assert r["reference_kind"] == "none" and r["ratio"] is None
    assert compare.comparison_summary(compare.log_comparison(_side("A", "bert", 64, 5.0), eos)) == (
        "No reference at this benchmark at 64 GPUs (BERT-Large): Eos has no result of it."
    )


# --------------------------------------------------------------------------- throughput, accelerator


def test_lora_throughput_and_mfu_are_end_to_end_and_labelled(eos):
    # Eos v4.1 LoRA at 8 GPUs: no step timing in the logs; e2e = samples x 8192 / (T x 60 x 8)
    r = eos.filter((pl.col("benchmark") == "llama2_70b_lora") & (pl.col("n_gpus") == 8)).row(
        0, named=True
    )
    assert r["throughput_basis"] == "e2e" and r["tokens_per_s_per_gpu"] > 0
    f_tok = flops.lora_flops_per_token(flops.LLAMA2_70B, 16)
    assert r["model_tflops_per_gpu"] == pytest.approx(r["tokens_per_s_per_gpu"] * f_tok / 1e12)
    assert r["mfu_fp8"] == pytest.approx(r["model_tflops_per_gpu"] / 1978.9)


def test_llama31_405b_flops_from_the_published_shape():
    # arXiv:2407.21783 Table 3: 126 layers, d 16384, FFN 53248, 128 heads, 8 KV heads, vocab 128256
    spec = flops.LLAMA31_405B
    # per layer: attention q,o 2 x 16384^2 + k,v 2 x 16384 x 1024; MLP 3 x 16384 x 53248;
    # 2 RMSNorm weights; embeddings in and out 2 x 128256 x 16384; final norm 16384
    per_layer = 2 * 16384**2 + 2 * 16384 * 1024 + 3 * 16384 * 53248 + 2 * 16384
    n = 126 * per_layer + 2 * 128256 * 16384 + 16384
    assert flops.param_count(spec) == n == 405_853_388_800
    assert flops.model_flops_per_token(spec) > 6 * n  # 6N plus the attention scores


def test_an_accelerator_described_in_the_config_feeds_mfu_and_memory(tmp_path):
    logs = _copy(tmp_path, "v4.1", "copy_n32", N32_SYSTEM)
    # a part not in data/reference/accelerators.csv, so every figure must come from here; the
    # figures of an MI355X: AMD's datasheet, 288 GB HBM3E; dense peaks = 256 CUs x 2.4 GHz x 4,096
    # (BF16) / 8,192 (FP8) FLOP/clock/CU (8 XCDs x 32 CUs, 8,192 FP8 FLOP/clock/CU: AMD at ISSCC
    # 2026; 2.4 GHz peak clock: AMD at Hot Chips 2025) = 2,516.6 / 5,033.2 TFLOP/s
    assert "Acme X1" not in (ROOT / "data" / "reference" / "accelerators.csv").read_text()
    acc = {"name": "Acme X1", "memory_gb": 288, "bf16_dense_tflops": 2516.6,
           "fp8_dense_tflops": 5033.2, "source": "https://www.amd.com/en/products/accelerators/instinct/mi350/mi355x.html"}  # fmt: skip
    assert 256 * 2.4e9 * 4096 / 1e12 == pytest.approx(2516.6, abs=0.05)
    assert 256 * 2.4e9 * 8192 / 1e12 == pytest.approx(5033.2, abs=0.05)
    cfg = parse_config(
        {"name": "X", "accelerator": acc, "gpus_per_node": 8, "mlperf": str(logs)}, tmp_path
    )
    assert cfg.accelerator == "Acme X1" and cfg.gpu_memory_gb == 288
    (r,) = config_comparison(cfg).rows(named=True)
    assert r["evaluated_mfu_bf16"] == pytest.approx(r["evaluated_model_tflops_per_gpu"] / 2516.6)
    assert r["evaluated_mfu_fp8"] == pytest.approx(r["evaluated_model_tflops_per_gpu"] / 5033.2)
    assert report_overrides(cfg).overrides["memory_model"]["gpu_memory_gb"] == 288
    with pytest.raises(ConfigError, match="accelerator.source: required key missing"):
        parse_config({"name": "X", "accelerator": {k: v for k, v in acc.items() if k != "source"},
                      "gpus_per_node": 8}, tmp_path)  # fmt: skip


@pytest.mark.parametrize(
    ("accelerator", "gb", "per_node", "expected"),
    [
        # GPT-3 175B at 18 B/param; per node 8 x 80 = 640 GB: ceil(3.14/0.64) = 5
        ("H100 SXM", 80, 8, "do not fit the 2.56 TB of 4 nodes of 8 H100 SXM (80 GB each): GPT-3 175B needs at least 5 nodes (3.20 TB)"),
        # 8 x 192 = 1536 GB: ceil(3.14/1.536) = 3; 2 nodes hold 3.07 TB
        ("MI300X", 192, 8, "do not fit the 3.07 TB of 2 nodes of 8 MI300X (192 GB each): GPT-3 175B needs at least 3 nodes (4.61 TB)"),
        # 8 x 141 = 1128 GB: ceil(3.14/1.128) = 3
        ("H200", 141, 8, "do not fit the 2.26 TB of 2 nodes of 8 H200 (141 GB each): GPT-3 175B needs at least 3 nodes (3.38 TB)"),
    ],
)  # fmt: skip
def test_memory_prose_follows_the_accelerators_memory(accelerator, gb, per_node, expected):
    got = flops.model_state_fit_sentence("GPT-3 175B", 3.14e12, gb * 1e9, per_node, accelerator)
    assert got == f"3.14 TB of model state {expected} before any activation"


# --------------------------------------------------------------------------- robustness


def test_a_shell_traced_sysjson_line_does_not_lose_the_gpu_count(tmp_path):
    # a flat folder of result_*.txt whose first SYSJSON line is `+ echo ':::SYSJSON {...}'`
    # (Oracle v4.1 logs): the real line after it gives 32 nodes x 8 = 256 GPUs
    desc = json.loads((EOS_N32 / "systems" / f"{N32_SYSTEM}.json").read_text())
    body = json.dumps(desc)
    src = (EOS_N32 / "results" / N32_SYSTEM / "gpt3" / "result_0.txt").read_text()
    (tmp_path / "result_0.txt").write_text(f"+ echo ':::SYSJSON {body}'\n:::SYSJSON {body}\n{src}")
    runs = load_results(tmp_path).runs
    assert runs["n_accelerators"].to_list() == [256]


def test_doctests_of_the_formulas():
    for mod in (ratios, evaluated, memory):
        res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
        assert res.attempted > 0 and res.failed == 0, mod.__name__


# --------------------------------------------------------------------------- command line, Quarto


def _cfg(tmp_path: Path, logs: Path) -> Path:
    p = tmp_path / "my.yaml"
    # Eos pinned: without `reference:` the comparison is like for like with the MLPerf record
    p.write_text(yaml.safe_dump({"name": "Lab 7", "accelerator": "H100 SXM", "gpus_per_node": 4,
                                 "mlperf": str(logs), "reference": {"name": "Eos"}}),
                 encoding="utf-8")  # fmt: skip
    return p


def test_trainperf_compare_prints_the_comparison_without_the_book(tmp_path, capsys):
    cfg = _cfg(tmp_path, _copy(tmp_path, "v4.1", "copy_4pn", N64_SYSTEM, per_node=4))
    assert cli.main(["compare", "--config", str(cfg), "--format", "csv"]) == 0
    frame = pl.read_csv(capsys.readouterr().out.encode())
    assert frame.columns == list(compare.COMPARISON_SCHEMA)
    assert frame["ratio"].to_list() == pytest.approx([1.0]) and frame["reference_n_gpus"][0] == 512
    assert cli.main(["compare", "--config", str(cfg)]) == 0
    out = capsys.readouterr().out
    assert "Lab 7 needs 1.00x the GPU time of Eos v4.1 at 512 GPUs" in out
    assert cli.main(["compare", "--config", str(cfg), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["warnings"] == [] and doc["rows"][0]["reference_kind"] == "measured"
    assert not (tmp_path / "comparison.csv").exists()


def test_quarto_renders_a_staged_book_for_any_out(tmp_path, monkeypatch):
    # a fake quarto that records its arguments and folder; the book must be rendered from a
    # staged copy that links this run's outputs, with the cluster's name in its title
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "quarto"
    fake.write_text(
        '#!/bin/sh\necho "$PWD $*" >> "$QUARTO_LOG"\nmkdir -p _book && echo "<html></html>" > _book/index.html\n'
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("QUARTO_LOG", str(tmp_path / "quarto.log"))
    out, figures = tmp_path / "mybook", tmp_path / "figs"
    (out / "notebooks").mkdir(parents=True)
    figures.mkdir()

    class Cfg:
        name = "Lab 7"
        language = "en"

        @staticmethod
        def inputs():  # the config's given-input flags (config.schema.Config.inputs)
            return {"mlperf": True}

    got = book_build.build_book(ROOT, out, figures, Cfg, {}, None, lambda _: None)
    stage = out / "quarto"
    assert got["quarto"] is True and got["site"] == str(stage / "_book" / "index.html")
    (line,) = (tmp_path / "quarto.log").read_text().splitlines()
    assert line == f"{stage.resolve()} render"
    # _output holds links to out's entries (issue 38: the appendix pages are copies inside it)
    assert (stage / "_output" / "notebooks").resolve() == (out / "notebooks").resolve()
    assert (stage / "figures").resolve() == figures.resolve()
    project = yaml.safe_load((stage / "_quarto.yml").read_text())
    # the title is Markdown text (issue 40: a config's name never forms markup): ":" escaped
    assert project["book"]["title"] == "Lab 7\\: LLM training performance"
    assert (stage / "chapters" / "summary.qmd").is_file() and (stage / "index.qmd").is_file()
    assert "/.quarto/" in (stage / ".gitignore").read_text()
    assert (
        not (ROOT / "_book" / "index.html").exists()
        or (ROOT / "_book").stat().st_mtime < fake.stat().st_mtime
    )


def test_the_comparison_figure_shows_the_estimate_and_its_bounds_from_zero(eos):
    frame = compare.log_comparison(_side("L", "llama2_70b_lora", 32, 10.0), eos)
    spec = charts.comparison_ratio_by_gpus(frame).to_dict()
    (panel,) = spec["hconcat"]
    one, bars, *_, points = panel["layer"]  # between them: an extrapolation's arrows, labels
    assert points["encoding"]["y"]["scale"]["domain"][0] == 0.0  # honest baseline
    # the bar spans the two bounds (1.0933 .. 1.4322, test above), the point the estimate
    (row,) = spec["datasets"][bars["data"]["name"]]
    assert row["lo"] == pytest.approx(320 / (64 * T64)) and row["hi"] == pytest.approx(
        320 / (8 * T8)
    )
    assert row["kind_label"] == KIND_LABELS["interpolated"]


def test_reference_batch_runs_are_shared_by_every_out_and_keyed_by_their_inputs(tmp_path):
    cache = tmp_path / "cache"

    def folder(out, ref=MLPERF):
        plan = job.plan_report(ROOT, out, out / "figures", job.NOTEBOOKS, batch_cache=cache,
                               reference_mlperf=ref)  # fmt: skip
        ((_, grid),) = plan.batches
        return grid.output

    a, b = folder(tmp_path / "book1"), folder(tmp_path / "book2")
    assert a == b and a.parent == cache and a.name.startswith("mlperf_systems-")
    # other reference logs (one folder of the Eos logs): another fingerprint, another folder
    other = _copy(tmp_path, "v4.1", "copy_n32", N32_SYSTEM)
    assert folder(tmp_path / "book3", other) != a


def test_a_narrow_log_axis_gets_several_ticks():
    # three runs of 19.2-20.1 min (Oracle v4.1 GPT-3), padded x1.25: 15.36-25.13 min; the 1-2-5
    # ticks there are 20 alone; evenly spaced in log space, 2 digits: 17, 20, 22, 25
    assert log_ticks(19.2 / 1.25, 20.1 * 1.25) == [20.0]
    assert _log_encoding([19.2, 19.7, 20.1], 1.25, 8)["axis"].values == [17.0, 20.0, 22.0, 25.0]


def test_gpt3_prose_only_where_gpt3_logs_are_read(eos):
    # a LoRA-only user (Dell's 16 GB200 LoRA, say): no GPT-3 sentence; the demo (no mlperf:,
    # the bundled Eos logs shown): all
    class Cfg:
        mlperf = "/some/logs"

    lora = compare.log_comparison(_side("D", "llama2_70b_lora", 16, 6.24), eos)
    assert logs_flags(Cfg, lora) == {
        "logs_gpt3": False,
        "logs_llama2_70b_lora": True,
        "logs_llama31_405b": False,
    }
    Cfg.mlperf = None
    assert set(logs_flags(Cfg, lora).values()) == {True}
    summary = (ROOT / "chapters" / "summary.qmd").read_text(encoding="utf-8")
    block = summary.split("* **The rules fix what decides convergence.**")[0].rsplit(":::", 1)[1]
    assert 'when-meta="values.inputs.logs_gpt3"' in block


def test_one_comparison_is_one_row_in_the_log_line(eos):
    class Cfg:
        mlperf = "/x"
        published = None

    one = compare.log_comparison(_side("A", "gpt3", 256, 100.0), eos)
    assert _comparison_line(one, Cfg) == "1 row"
    two = pl.concat([one, compare.log_comparison(_side("A", "gpt3", 512, 50.0), eos)])
    assert _comparison_line(two, Cfg) == "2 rows"
