"""Like for like with the MLPerf record (issue 36, part 2): reference kinds, bounds, rank, the
leave-one-out interpolation error, and the comparison of real logs without a pinned reference.

The synthetic records below are small enough that every expected value is computed by hand in the
test (the power law through two points: T(n) = T_lo (n/lo)^b, b = ln(T_hi/T_lo) / ln(hi/lo))."""

from __future__ import annotations

import json
import math
import shutil
import warnings

import polars as pl
import pytest
import yaml
from helpers import MLPERF

from trainperf.compare import COMPARISON_SCHEMA, cluster_comparison, comparison_summary
from trainperf.compare.interpolation_error import leave_one_out, max_interpolation_error
from trainperf.compare.like_for_like import record_rank, record_reference
from trainperf.config import load_config
from trainperf.config.plan import config_values
from trainperf.errors import ConfigError
from trainperf.markup import md_text
from trainperf.record import RECORD_SCHEMA, read_record
from trainperf.report import cli


def _rec(rows: list[tuple]) -> pl.DataFrame:
    """(round, submitter, system, accelerator, n_gpus, score_min[, sha]) -> a record frame."""
    out = []
    for r in rows:
        row = dict.fromkeys(RECORD_SCHEMA)
        row.update(round=r[0], submitter=r[1], system=r[2], accelerator=r[3], n_gpus=r[4],
                   score_min=r[5], benchmark="llama2_70b_lora", folder=f"{r[1]}/results/{r[2]}/x",
                   division="closed", logs_sha256=r[6] if len(r) > 6 else f"sha-{r[2]}")  # fmt: skip
        out.append(row)
    return pl.DataFrame(out, schema=RECORD_SCHEMA)


def test_measured_same_accelerator_same_count_newest_round_best():
    rec = _rec([("v5.0", "A", "a64", "H100 SXM", 64, 5.0), ("v5.1", "B", "b64", "H100 SXM", 64, 6.0),
                ("v5.1", "C", "c64", "H100 SXM", 64, 5.5), ("v5.1", "D", "d64", "B200", 64, 2.0)])  # fmt: skip
    r = record_reference("llama2_70b_lora", "H100 SXM", 64, 6.6, rec)
    # newest round with a 64-GPU H100 result is v5.1; its best is C's 5.5 min; 6.6 / 5.5 = 1.2
    assert (r["reference_kind"], r["reference_submitter"], r["reference_round"]) == (
        "measured", "C", "v5.1")  # fmt: skip
    assert r["reference_accelerator"] == "H100 SXM"
    assert r["ratio"] == pytest.approx(1.2) and r["ratio_low"] == r["ratio_high"] == r["ratio"]


def test_interpolated_within_4x_with_both_bounds():
    rec = _rec([("v5.1", "A", "a8", "GB300", 8, 10.0), ("v5.1", "A", "a16", "GB300", 16, 6.0),
                ("v5.1", "A", "a72", "GB300", 72, 2.0)])  # fmt: skip
    r = record_reference("llama2_70b_lora", "GB300", 12, 8.0, rec)
    b = math.log(6.0 / 10.0) / math.log(16 / 8)
    t12 = 10.0 * (12 / 8) ** b  # 7.65 min
    assert r["reference_kind"] == "interpolated"
    assert r["reference_min"] == pytest.approx(t12)
    assert r["ratio"] == pytest.approx(8.0 / t12)
    # bounds: (12 x 8) / (8 x 10) = 1.2 and (12 x 8) / (16 x 6) = 1.0
    assert (r["ratio_low"], r["ratio_high"]) == (pytest.approx(1.0), pytest.approx(1.2))


def test_wider_gap_gives_bounds_only_never_a_point():
    rec = _rec([("v5.1", "A", "a8", "GB300", 8, 10.0), ("v5.1", "A", "a72", "GB300", 72, 2.0)])
    r = record_reference("llama2_70b_lora", "GB300", 16, 5.0, rec)
    assert r["reference_kind"] == "bounds" and r["reference_min"] is None and "ratio" not in r
    # 72 / 8 = 9x apart. Bounds: (16 x 5) / (72 x 2) = 0.556 (below), (16 x 5) / (8 x 10) = 1.0
    assert r["ratio_low"] == pytest.approx(80 / 144) and r["ratio_high"] == pytest.approx(1.0)
    one = record_reference("llama2_70b_lora", "GB300", 128, 1.0, rec)
    # beyond the largest measured scale: an upper bound only, (128 x 1) / (72 x 2)
    assert one["reference_kind"] == "bounds" and one.get("ratio_low") is None
    assert one["ratio_high"] == pytest.approx(128 / 144)


def test_cross_generation_nearest_generation_labelled():
    rec = _rec([("v5.1", "A", "h", "H100 SXM", 8, 30.0), ("v5.1", "B", "g", "GB300", 8, 6.0),
                ("v5.1", "C", "m", "MI355X", 8, 10.0)])  # fmt: skip
    # B300 (2025, NVIDIA): GB300 and MI355X are both 2025; the same vendor wins
    r = record_reference("llama2_70b_lora", "B300", 8, 7.5, rec)
    assert (r["reference_kind"], r["reference_accelerator"]) == ("cross-generation", "GB300")
    assert r["ratio"] == pytest.approx(7.5 / 6.0)
    assert record_reference("llama2_70b_lora", "B300", 16, 7.5, rec)["reference_kind"] == "none"
    row = dict.fromkeys(COMPARISON_SCHEMA) | r
    row.update(evaluated_system="Lab", benchmark="llama2_70b_lora", n_gpus=8, evaluated_min=7.5)
    words = comparison_summary(pl.DataFrame([row], schema=COMPARISON_SCHEMA))
    assert "cross-generation" in words and "GB300" in words and "1.25x" in words


def test_rank_by_gpu_minutes_in_the_band_counted_once():
    rec = _rec([("v5.1", "A", "a", "GB300", 8, 10.0),   # 80 GPU-min
                ("v5.1", "B", "b", "B200", 16, 4.0),    # 64
                ("v5.1", "C", "c", "H100 SXM", 4, 30.0),  # 120
                ("v5.1", "D", "d", "H100 SXM", 32, 3.0),  # 96, outside 4..16
                ("v5.0", "E", "e", "B200", 8, 1.0),     # another round
                ("v5.1", "F", "f", "GB300", 8, 9.0, "own")])  # the evaluated logs themselves  # fmt: skip
    # n = 8: band 4..16 in v5.1 without "own": A 80, B 64, C 120; the evaluated 9 x 8 = 72 -> 2nd of 4
    r = record_rank("llama2_70b_lora", "v5.1", 8, 9.0, rec, exclude_sha="own")
    assert (r["record_rank"], r["record_peers"]) == (2, 4)
    assert r["record_best"] == "v5.1 B b (16 GPUs)" and r["record_best_gpu_min"] == 64.0
    ref = record_reference("llama2_70b_lora", "GB300", 8, 9.0, rec, exclude_sha="own")
    assert ref["reference_system"] == "a"  # not its own published row


def test_leave_one_out_by_hand():
    rec = _rec([("v5.1", "A", "a8", "GB300", 8, 10.0), ("v5.1", "A", "a16", "GB300", 16, 6.0),
                ("v5.1", "A", "a32", "GB300", 32, 3.5), ("v5.1", "A", "a256", "GB300", 256, 1.0)])  # fmt: skip
    loo = leave_one_out(rec)
    assert loo["n_gpus"].to_list() == [16, 32]
    # 16 from 8 and 32: 10 (16/8)^b, b = ln(3.5/10)/ln 4 -> 5.916; error 5.916/6 - 1
    t16 = 10 * 2 ** (math.log(0.35) / math.log(4))
    assert loo["error"][0] == pytest.approx(t16 / 6 - 1)
    # 32 from 16 and 256 (16x apart) is left out with max_gap 4
    assert leave_one_out(rec, 4)["n_gpus"].to_list() == [16]
    assert max_interpolation_error(rec, "llama2_70b_lora") == pytest.approx(abs(t16 / 6 - 1))


def test_record_loo_over_wide_gaps_reproduces_the_issue():
    # issue 36: on NVIDIA's own v5.1 LoRA series, the chord through 8 and 512 GPUs overestimates the
    # measured 72-GPU time by 18 % (GB300) and 33 % (GB200), the issue's hand computation
    rec = read_record().filter(pl.col("benchmark") == "llama2_70b_lora")
    loo = leave_one_out(rec).filter(
        (pl.col("round") == "v5.1") & (pl.col("submitter") == "NVIDIA") & (pl.col("n_gpus") == 72)
        & (pl.col("low_n_gpus") == 8) & (pl.col("high_n_gpus") == 512)
    )  # fmt: skip
    errs = sorted(round(e, 2) for e in loo["error"].to_list())
    assert errs == [0.18, 0.33]


@pytest.fixture
def user_logs(tmp_path):
    """The bundled v4.1 Eos 8-node LoRA folder as a user's logs (byte for byte a published result)."""
    root = tmp_path / "training_results_v4.1" / "NVIDIA"
    shutil.copytree(MLPERF / "v4.1/NVIDIA/results/eos_n8_ngc24.09_nemo",
                    root / "results/eos_n8_ngc24.09_nemo")  # fmt: skip
    (root / "systems").mkdir()
    shutil.copy(MLPERF / "v4.1/NVIDIA/systems/eos_n8_ngc24.09_nemo.json", root / "systems")
    return tmp_path / "training_results_v4.1"


def test_real_logs_like_for_like_without_a_pinned_reference(user_logs):
    rec = read_record()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = cluster_comparison("Lab", 8, "H100 SXM", str(MLPERF), mlperf=str(user_logs),
                               record=rec, like_for_like=True)  # fmt: skip
    r = c.row(0, named=True)
    assert r["published_as"] == "v4.1 NVIDIA eos_n8_ngc24.09_nemo"
    # expected: the best other H100 SXM LoRA result at 64 GPUs of the newest round having one
    others = rec.filter(
        (pl.col("benchmark") == "llama2_70b_lora") & (pl.col("accelerator") == "H100 SXM")
        & (pl.col("n_gpus") == 64) & pl.col("score_min").is_not_null()
        & (pl.col("system") != "eos_n8_ngc24.09_nemo")
    )  # fmt: skip
    newest = max(others["round"].to_list(), key=lambda v: tuple(map(int, v[1:].split("."))))
    best = others.filter(pl.col("round") == newest).sort("score_min").row(0, named=True)
    assert (r["reference_kind"], r["reference_round"], r["reference_system"]) == (
        "measured", newest, best["system"])  # fmt: skip
    assert r["ratio"] == pytest.approx(r["evaluated_min"] / best["score_min"])
    assert r["record_rank"] >= 1 and r["record_peers"] >= r["record_rank"]
    words = comparison_summary(c)
    assert "published result v4.1 NVIDIA eos_n8_ngc24.09_nemo" in words and "ranks" in words
    # the systems JSON of the user's folder on the like-for-like path too (issue 36, trial item 2):
    # eos_n8_ngc24.09_nemo.json names 2x Xeon Platinum 8480C hosts and 8 GPUs per NVLink domain
    assert r["evaluated_system_json"].endswith("eos_n8_ngc24.09_nemo.json")
    assert "8480C" in r["evaluated_host_processors"]
    assert r["evaluated_scaleup_domain"] == 8
    # and the reference's own system description beside it: the record's copy of that result's
    # systems JSON (its host_interconnect and accelerator_interconnect columns)
    assert r["reference_host_networking"] == best["host_interconnect"]
    assert r["reference_accelerator_interconnect"] == best["accelerator_interconnect"]
    assert best["host_interconnect"] and best["accelerator_interconnect"]


def test_logs_without_a_round_folder_take_the_round_of_the_published_result(tmp_path):
    # the same bundled v4.1 Eos LoRA folder, copied flat (no training_results_v4.1 above it): its
    # round is not in its path, but its logs are byte for byte the record's v4.1 result
    flat = tmp_path / "logs"
    shutil.copytree(
        MLPERF / "v4.1/NVIDIA/results/eos_n8_ngc24.09_nemo", flat / "results/eos_n8_ngc24.09_nemo"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = cluster_comparison("Lab", 8, "H100 SXM", str(MLPERF), mlperf=str(flat),
                               record=read_record(), like_for_like=True)  # fmt: skip
    r = c.row(0, named=True)
    assert r["published_as"] == "v4.1 NVIDIA eos_n8_ngc24.09_nemo"
    assert r["evaluated_round"] == "v4.1"


def test_a_pinned_reference_of_logs_shows_its_systems_json(user_logs):
    # the reference's systems/<result>.json in its folder of logs, read here by hand
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = cluster_comparison("Lab", 8, "H100 SXM", str(MLPERF), mlperf=str(user_logs),
                               record=read_record(), like_for_like=False)  # fmt: skip
    r = c.row(0, named=True)
    [path] = list(MLPERF.glob(f"*/NVIDIA/systems/{r['reference_result']}.json"))
    desc = json.loads(path.read_text())
    assert r["reference_accelerator_interconnect"] == desc["accelerator_interconnect"]
    assert desc["host_networking"] in r["reference_host_networking"]


def test_a_pinned_reference_keeps_eos_and_adds_the_rank(user_logs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = cluster_comparison("Lab", 8, "H100 SXM", str(MLPERF), mlperf=str(user_logs),
                               record=read_record(), like_for_like=False)  # fmt: skip
    r = c.row(0, named=True)
    assert r["reference_system"] == "Eos" and r["reference_accelerator"] is None
    assert r["record_rank"] is not None and r["published_as"] is not None


def test_trainperf_compare_without_reference_is_like_for_like(user_logs, tmp_path, capsys):
    cfg = tmp_path / "lab.yaml"
    cfg.write_text(yaml.safe_dump({"name": "Lab", "accelerator": "H100 SXM", "gpus_per_node": 8,
                                   "mlperf": str(user_logs)}), encoding="utf-8")  # fmt: skip
    assert load_config(cfg).reference.pinned is False
    assert cli.main(["compare", "--config", str(cfg), "--format", "csv"]) == 0
    frame = pl.read_csv(capsys.readouterr().out.encode())
    r = frame.row(0, named=True)
    assert r["reference_kind"] == "measured" and r["reference_accelerator"] == "H100 SXM"
    assert r["published_as"] == "v4.1 NVIDIA eos_n8_ngc24.09_nemo" and r["record_rank"] >= 1
    pinned = tmp_path / "pinned.yaml"
    pinned.write_text(cfg.read_text() + "reference:\n  name: Eos\n", encoding="utf-8")
    assert load_config(pinned).reference.pinned is True


def test_a_reference_pinned_to_record_results(user_logs, tmp_path, capsys):
    cfg = tmp_path / "pin.yaml"
    body = {"name": "Lab", "accelerator": "H100 SXM", "gpus_per_node": 8, "mlperf": str(user_logs),
            "reference": {"name": "NVIDIA v4.1", "submitter": "nvidia", "round": "v4.1"}}  # fmt: skip
    cfg.write_text(yaml.safe_dump(body), encoding="utf-8")
    ref = load_config(cfg).reference
    assert ref.from_record and ref.pinned
    assert cli.main(["compare", "--config", str(cfg), "--format", "csv"]) == 0
    r = pl.read_csv(capsys.readouterr().out.encode()).row(0, named=True)
    # NVIDIA's v4.1 LoRA results other than these very logs (published_as, left out)
    pinned = read_record().filter(
        (pl.col("round") == "v4.1") & (pl.col("submitter") == "NVIDIA")
        & (pl.col("benchmark") == "llama2_70b_lora") & (pl.col("system") != "eos_n8_ngc24.09_nemo")
    )  # fmt: skip
    assert (r["reference_submitter"], r["reference_round"]) == ("NVIDIA", "v4.1")
    assert set(r["reference_system"].split(" .. ")) <= set(pinned["system"].to_list())
    assert r["published_as"] == "v4.1 NVIDIA eos_n8_ngc24.09_nemo"
    body["reference"] = {"submitter": "Nobody Inc"}
    cfg.write_text(yaml.safe_dump(body), encoding="utf-8")
    with pytest.raises(
        ConfigError,
        match=r"no result of the MLPerf record \(data/reference/mlperf_record.csv\) has submitter .Nobody Inc.",
    ):
        load_config(cfg)
    body["reference"] = {"submitter": "NVIDIA", "mlperf": str(user_logs)}
    cfg.write_text(yaml.safe_dump(body), encoding="utf-8")
    with pytest.raises(ConfigError, match="not both"):
        load_config(cfg)


def test_the_book_names_the_record_not_eos_without_a_reference(user_logs, tmp_path):
    cfg = tmp_path / "lab.yaml"
    body = {"name": "Lab", "accelerator": "H100 SXM", "gpus_per_node": 8, "mlperf": str(user_logs)}
    cfg.write_text(yaml.safe_dump(body), encoding="utf-8")
    shown = config_values(load_config(cfg))["config"]
    # as the book's Markdown shows the text (trainperf.markup.md_text escapes its punctuation)
    assert shown["reference"] == md_text("the MLPerf record, like for like")
    body["reference"] = {"name": "Eos"}
    cfg.write_text(yaml.safe_dump(body), encoding="utf-8")
    assert config_values(load_config(cfg))["config"]["reference"] == "Eos"
