"""Throughput from real logs of another submitter (fresh-user trial, issue 24).

Fixtures: tests/data/trial/SOURCES.md (repo, commit, sha256, licence).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from trainperf.compare import (
    cluster_comparison,
    comparison_summary,
    reference_round_for,
    side_from_results,
)
from trainperf.mlperf import load_results, throughput
from trainperf.report import cli

TRIAL = Path(__file__).parent / "data" / "trial"
HABANA = TRIAL / "v3.1" / "Intel-HabanaLabs"


@pytest.fixture(scope="module")
def habana():
    return load_results(HABANA)


def test_block_spanning_evaluations_gives_no_step_throughput(habana):
    # The log's only block: block_start at 0 with epoch_count 50,331,648 (one evaluation
    # interval), block_stop at run_stop; 24 evaluations (epoch_num 50,331,648 ... 1,207,959,552)
    # lie inside it. Tokens of the block over its duration were 50,331,648 / 9,215.017 s / 384
    # = 14.2 tokens/s/GPU, 24x too low: no step-level figure may come from such a block.
    t = throughput(habana).row(0, named=True)
    assert t["step_source"] is None
    assert t["tokens_per_s_per_gpu_step"] is None
    assert "holds 23 evaluations beyond its end" in t["note"]
    # End to end: run_start 1696546892494 -> run_stop 1696556107511 ms = 9,215,017 ms
    # = 153.58362 min; tokens to converge = the last eval's epoch_num 1,207,959,552;
    # 1,207,959,552 / (9,215.017 s x 384 GPUs) = 341.37 tokens/s/GPU.
    assert t["tokens_per_s_per_gpu_e2e"] == pytest.approx(
        1_207_959_552 / (9215.017 * 384), rel=1e-6
    )


def test_comparison_side_uses_end_to_end_basis(habana):
    side = side_from_results(habana, "Gaudi2", gpus_per_node=8, keep_unscored=True).row(
        0, named=True
    )
    assert side["n_gpus"] == 384
    assert side["throughput_basis"] == "e2e"
    assert side["tokens_per_s_per_gpu"] == pytest.approx(341.37, abs=0.01)


def test_a_damaged_run_of_the_user_is_named_in_the_comparison(tmp_path, capsys):
    # The user's folder: a copy of Eos v3.1 eos_n64 GPT-3 (512 GPUs) whose result_2.txt was cut
    # off at 1 kB (before run_start), as a copy interrupted mid-transfer leaves it.

    src = Path(__file__).parents[1] / "data" / "mlperf" / "v3.1" / "NVIDIA"
    res = tmp_path / "v3.1" / "Lab" / "results" / "lab_512" / "gpt3"
    res.mkdir(parents=True)
    for name in ("result_0.txt", "result_1.txt"):
        shutil.copyfile(src / "results" / "eos_n64_ngc23.09_nemo" / "gpt3" / name, res / name)
    full = (src / "results" / "eos_n64_ngc23.09_nemo" / "gpt3" / "result_2.txt").read_bytes()
    (res / "result_2.txt").write_bytes(full[:1000])
    (tmp_path / "v3.1" / "Lab" / "systems").mkdir()
    shutil.copyfile(src / "systems" / "eos_n64_ngc23.09_nemo.json",
                    tmp_path / "v3.1" / "Lab" / "systems" / "lab_512.json")  # fmt: skip
    cfg = tmp_path / "lab.yaml"
    # Eos pinned (without `reference:` the comparison is like for like with the MLPerf record)
    cfg.write_text(yaml.safe_dump({"name": "Lab", "accelerator": "H100 SXM", "gpus_per_node": 8,
                                   "mlperf": str(tmp_path), "reference": {"name": "Eos"}}),
                   encoding="utf-8")  # fmt: skip
    assert cli.main(["compare", "--config", str(cfg), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (row,) = doc["rows"]
    # run_start -> run_stop: result_0 58.2469 min, result_1 58.3529 min (mlperf-logging's
    # summarizer on the full folder: 58.2469, 58.3529, 58.3019 for result_2). The damaged run
    # counts as the dropped slowest: drop the fastest (58.2469), the mean of the rest is 58.3529.
    # Reference Eos v3.1 at 512 GPUs: 58.30195 (olympic mean of all three), ratio 1.00087.
    assert row["evaluated_runs"] == 2
    assert row["evaluated_min"] == pytest.approx(58.3529, abs=1e-4)
    assert row["ratio"] == pytest.approx(58.3529 / 58.30195, abs=1e-4)
    expected = "1 of 3 runs failed or damaged, counted as the dropped slowest by the MLPerf rules"
    assert row["note"].startswith(expected)
    assert doc["warnings"] == [f"GPT-3 175B at 512 GPUs: {row['note']}"]
    assert cli.main(["compare", "--config", str(cfg)]) == 0
    assert f"note: GPT-3 175B at 512 GPUs: {expected}" in capsys.readouterr().err


def test_unknown_round_says_how_to_give_it():
    # A flat folder of result_*.txt (e.g. Nebius's v5.1 405B files copied without their tree)
    # has no round; the note must tell the user how to give one, not only that it is missing.

    pick, why = reference_round_for(None, ["v4.1", "v5.0"])
    assert pick == "v5.0"
    assert why == (
        "round of the evaluated logs unknown (no folder named like v5.0 or training_results_v5.0 "
        "above them); the reference's newest round v5.0"
    )


def test_reference_of_4_gpus_a_node_keeps_its_own_node_count(tmp_path):
    # A reference whose nodes hold 4 GPUs (GB200 systems such as IBM+CoreWeave+NVIDIA's v5.0
    # carina_ngpu1024: 256 nodes x 4): here the Eos v5.0 405B logs relabelled as 128 nodes x 4
    # GPUs. reference_n_nodes must be 512 / 4 = 128 (its system description), not 512 / 8 = 64.

    src = Path(__file__).parents[1] / "data" / "mlperf" / "v5.0" / "NVIDIA"
    root = tmp_path / "v5.0" / "Lab4"
    res = root / "results" / "lab4_512" / "llama31_405b"
    res.mkdir(parents=True)
    for f in (src / "results" / "eos-dfw_n64_ngc25.01_nemo" / "llama31_405b").iterdir():
        shutil.copyfile(f, res / f.name)
    desc = json.loads((src / "systems" / "eos-dfw_n64_ngc25.01_nemo.json").read_text())
    desc["number_of_nodes"], desc["accelerators_per_node"] = "128", "4"
    (root / "systems").mkdir()
    (root / "systems" / "lab4_512.json").write_text(json.dumps(desc))
    frame = cluster_comparison(
        "Lab", 4, "H100 SXM", tmp_path, mlperf=tmp_path, reference_name="Lab4", warn=False
    )
    (row,) = frame.to_dicts()
    assert row["n_gpus"] == 512 and row["n_nodes"] == 128
    assert row["reference_kind"] == "measured" and row["reference_n_gpus"] == 512
    assert row["reference_n_nodes"] == 128
    assert row["ratio"] == 1.0


def test_a_round_asked_for_but_missing_is_named_as_asked():
    # config reference.round v5.0 for GPT-3 175B, which the Eos logs have in v3.1, v4.0 and v4.1;
    # the evaluated result is v3.1 (e.g. Azure's 10,752-GPU run): its own round is compared, and
    # the note must not call v3.1 the round "nearest" to v5.0 (v4.1 is).

    assert reference_round_for("v3.1", ["v3.1", "v4.0", "v4.1"], "v5.0") == (
        "v3.1",
        "no result of the reference in v5.0 (asked for); the evaluated round v3.1",
    )
    assert reference_round_for("v5.0", ["v3.1", "v4.1"], "v3.5") == (
        "v4.1",
        "no result of the reference in v3.5 (asked for); nearest round v4.1 to the evaluated "
        "round v5.0",
    )


def test_an_estimate_names_a_measured_run_at_that_count_in_another_round(tmp_path):
    # Trial case: Azure's v3.1 GPT-3 at 10,752 GPUs is compared with Eos v3.1 extrapolated 14x
    # from 768 GPUs, while Eos measured 10,752 GPUs in v4.0. Fixture: Eos v3.1 eos_n96 (768 GPUs)
    # relabelled as a v4.1 result of "Lab": Eos v4.1 has 256 and 512 GPUs, so the reference is
    # extrapolated from 512: 49.7951 x 512 / 768 = 33.1967 min, ratio 40.6264 / 33.1967 = 1.2238;
    # Eos measured 768 GPUs in v3.1 (the same logs): 40.6264 min, ratio against it exactly 1.

    data = Path(__file__).parents[1] / "data" / "mlperf"
    src = data / "v3.1" / "NVIDIA"
    root = tmp_path / "v4.1" / "Lab"
    res = root / "results" / "lab_768" / "gpt3"
    res.mkdir(parents=True)
    for f in (src / "results" / "eos_n96_ngc23.09_nemo" / "gpt3").iterdir():
        shutil.copyfile(f, res / f.name)
    (root / "systems").mkdir()
    shutil.copyfile(
        src / "systems" / "eos_n96_ngc23.09_nemo.json", root / "systems" / "lab_768.json"
    )
    frame = cluster_comparison("Lab", 8, "H100 SXM", data, mlperf=tmp_path, warn=False)
    (row,) = frame.to_dicts()
    assert row["reference_round"] == "v4.1" and row["reference_kind"] == "extrapolated"
    assert row["reference_min"] == pytest.approx(49.7951 * 512 / 768, abs=1e-3)
    assert row["ratio"] == pytest.approx(40.6264 / (49.7951 * 512 / 768), abs=1e-4)
    assert row["reference_other_round"] == "v3.1"
    assert row["reference_other_round_min"] == pytest.approx(40.6264, abs=1e-4)
    assert row["ratio_other_round"] == 1.0
    assert "(GPT-3 175B; Eos measured 768 GPUs in v3.1: 1.00x against that run)" in (
        comparison_summary(frame)
    )
