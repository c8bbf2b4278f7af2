"""A user's own cluster (issue 24, what was left): a real llama31_405b log set relabelled as a
fictional submitter and compared through a config; the demo's quoted ratio as config data
(``published.quoted_ratio``), not a library or notebook default.

Expected values: the bundled Eos v5.0 Llama 3.1 405B logs (``data/mlperf/SOURCES.md``,
``mlcommons/training_results_v5.0``) copied byte for byte are the same runs, so their score, and
the ratio against Eos at the same round and GPU count, is exactly 1 (by hand: (512·T)/(512·T))."""

from __future__ import annotations

import ast
import inspect
import json
import re
import shutil
import stat
import warnings
from pathlib import Path

import papermill as pm
import polars as pl
import pytest
import yaml
from helpers import MLPERF, ROOT
from IPython.display import Markdown

from trainperf import compare, flops, jobs, mlperf
from trainperf.config import load_config, report_overrides
from trainperf.errors import ConfigError
from trainperf.markup import md_text
from trainperf.report import book_build, book_words, charts, cli, job, parts
from trainperf.report import demo as demo_mod
from trainperf.report import job as report
from trainperf.report.charts.fonts import LANGS_ENV
from trainperf.report.display import Col
from trainperf.report.display import table as show_table
from trainperf.report.preview.book import book_structure
from trainperf.report.preview.pages import _conditional_content, chapter_markdown
from trainperf.report.values import reference_mfu_values
from trainperf.synthetic.slurm_history import CALIBRATION_TARGETS
from trainperf.tables import read_table

EOS_405B = "eos-dfw_n64_ngc25.01_nemo"  # v5.0, 64 nodes x 8 H100 = 512 GPUs


def _relabelled_405b(tmp_path: Path) -> Path:
    """Eos v5.0 llama31_405b at 512 GPUs as 'Fictional Labs' (results, scaling.json, system)."""
    root = tmp_path / "training_results_v5.0"
    src = MLPERF / "v5.0" / "NVIDIA"
    res = root / "Fictional Labs" / "results" / "fl_h100_512" / "llama31_405b"
    res.mkdir(parents=True)
    for f in sorted((src / "results" / EOS_405B / "llama31_405b").iterdir()):
        shutil.copyfile(f, res / f.name)  # result_*.txt and scaling.json
    desc = json.loads((src / "systems" / f"{EOS_405B}.json").read_text())
    desc["submitter"], desc["system_name"] = "Fictional Labs", "FL H100 512"
    (root / "Fictional Labs" / "systems").mkdir()
    (root / "Fictional Labs" / "systems" / "fl_h100_512.json").write_text(json.dumps(desc))
    return root


def test_a_relabelled_copy_of_the_eos_405b_logs_compares_at_exactly_one(tmp_path, capsys):
    logs = _relabelled_405b(tmp_path)
    cfg = tmp_path / "fl.yaml"
    # Eos pinned: without `reference:` these logs (byte for byte Eos's) would be named as Eos's
    # published result and left out of their own like-for-like reference (test_like_for_like.py)
    cfg.write_text(yaml.safe_dump({"name": "Fictional Labs", "accelerator": "H100 SXM",
                                   "gpus_per_node": 8, "mlperf": str(logs),
                                   "reference": {"name": "Eos"}}), encoding="utf-8")  # fmt: skip
    assert cli.main(["compare", "--config", str(cfg), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (row,) = doc["rows"]
    assert doc["warnings"] == []
    assert row["benchmark"] == "llama31_405b" and row["n_gpus"] == 512
    # same round (v5.0, the folder name), same GPU count, measured: identical logs give 1.000
    assert row["reference_round"] == "v5.0" and row["reference_n_gpus"] == 512
    assert row["reference_kind"] == "measured" and row["reference_result"] == EOS_405B
    assert row["evaluated_min"] == row["reference_min"]
    assert f"{row['ratio']:.3f}" == "1.000" and f"{row['time_ratio']:.3f}" == "1.000"
    assert row["ratio"] == 1.0  # the same numbers divided: exactly one


# --------------------------------------------------------------------------- the quoted ratio


def _config(tmp_path: Path, published: dict | None) -> Path:
    rows = tmp_path / "rows.csv"
    shutil.copyfile(ROOT / "data" / "reference" / "published_results.csv", rows)
    data = {"name": "SAKURAONE", "accelerator": "H100 SXM", "gpus_per_node": 8}
    if published is not None:
        data["published"] = {"path": "rows.csv", **published}
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(data), encoding="utf-8")
    return p


def test_the_quoted_ratio_is_config_data_passed_to_the_notebook(tmp_path):
    cfg = load_config(_config(tmp_path, {"quoted_ratio": 1.15}))
    assert cfg.published.quoted_ratio == 1.15 and cfg.inputs()["quoted_ratio"] is True
    assert report_overrides(cfg).overrides["eos_comparison"]["talk_ratio"] == 1.15
    # published rows without a quoted ratio: None reaches the notebook, the flag is off
    cfg = load_config(_config(tmp_path, {}))
    assert cfg.published.quoted_ratio is None and cfg.inputs()["quoted_ratio"] is False
    assert report_overrides(cfg).overrides["eos_comparison"]["talk_ratio"] is None


def test_the_demo_config_gives_the_talks_ratio_and_nothing_else_does():
    # 1.28: the SAKURAONE talk's quoted per-GPU gap (Cloud Operator Days Tokyo 2025)
    demo = load_config(ROOT / "configs" / "sakuraone.yaml")
    assert demo.published.quoted_ratio == 1.28
    assert report_overrides(demo).overrides["eos_comparison"]["talk_ratio"] == 1.28


@pytest.mark.parametrize("bad", [0, -1.2, "fast", True])
def test_a_bad_quoted_ratio_is_refused_in_one_line(tmp_path, bad):
    with pytest.raises(
        ConfigError, match=r"c\.yaml: published\.quoted_ratio: expected a number > 0"
    ):
        load_config(_config(tmp_path, {"quoted_ratio": bad}))


def test_the_notebook_and_library_carry_no_case_study_defaults():
    nb = json.loads((ROOT / "notebooks" / "eos_comparison.ipynb").read_text())
    (params,) = [c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", [])]
    tree = ast.parse("".join(params["source"]))
    values = {t.targets[0].id: ast.literal_eval(t.value) for t in tree.body}
    assert values["evaluated"] == "evaluated" and values["talk_ratio"] is None
    assert values["published_given"] is False
    for fn in (compare.paper_comparison_table, compare.talk_ratio_placement,
               compare.ratio_candidates):  # fmt: skip
        sig = inspect.signature(fn)
        for name in ("evaluated", "ratio", "quoted"):
            if name in sig.parameters:
                assert sig.parameters[name].default is inspect.Parameter.empty, (fn, name)
    assert "SAKURAONE" not in json.dumps(params["source"])


# --------------------------------------------------------------------------- workload marginals


def test_published_marginals_are_data_with_their_source_not_a_library_default(tmp_path):
    # the SAKURAONE paper, section 4.1 (as relayed): 73.5 % of GPU-hours CANCELLED, 16.9 % of jobs
    # FAILED, 76.9 % of jobs on one node
    m = jobs.published_marginals("SAKURAONE")
    assert (m["cancelled_gpu_hours_share"], m["failed_job_share"], m["nodes_1_job_share"]) == (
        0.735, 0.169, 0.769)  # fmt: skip
    assert list(m) == list(jobs.MARGINAL_METRICS) and CALIBRATION_TARGETS == m
    table = read_table("workload_marginals")
    assert table["source"].str.contains("arXiv:2604.13600").all()
    assert not hasattr(jobs, "SAKURAONE_MARGINALS")
    with pytest.raises(ValueError, match="no published shares of 'Lab 7'"):
        jobs.published_marginals("Lab 7")
    bad = tmp_path / "m.csv"
    bad.write_text("system,metric,share,source\nLab 7,failed_job_share,16.9,x\n")
    with pytest.raises(ValueError, match=r"failed_job_share share 16\.9 is not within 0-1"):
        jobs.published_marginals("Lab 7", bad)


def test_the_papers_table_is_a_data_file_with_its_source():
    # arXiv 2604.13600 Table 12 (as relayed): ratios 1.09, 1.17, 1.26 (GPT-3 32/64/96 nodes), 1.02
    # and 1.05 (LoRA 1/8 nodes); each ratio is its minutes' quotient to two decimals
    got = [(r["benchmark"], r["n_nodes"], r["paper_ratio"]) for r in compare.PAPER_TABLE]
    assert got == [("gpt3", 32, 1.09), ("gpt3", 64, 1.17), ("gpt3", 96, 1.26),
                   ("llama2_70b_lora", 1, 1.02), ("llama2_70b_lora", 8, 1.05)]  # fmt: skip
    for r in compare.PAPER_TABLE:
        assert round(r["paper_evaluated_min"] / r["paper_reference_min"], 2) == r["paper_ratio"]
    assert read_table("paper_comparison")["source"].str.contains("arXiv:2604.13600").all()


# --------------------------------------------------------------------------- log file names


def _cell(nb: str, label: str) -> str:
    doc = json.loads((ROOT / "notebooks" / nb).read_text())
    return next(
        "".join(c["source"]) for c in doc["cells"] if f"#| label: {label}" in "".join(c["source"])
    )


def _throughput_table(folder: Path) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        thr = mlperf.runs_with_throughput(mlperf.load_results(folder))
    ns = {"pl": pl, "thr": thr, "mfu_cols": ["bf16", "fp8"], "reference_logs": True}
    src = _cell("eos_comparison.ipynb", "tbl-eos-throughput")
    tree = ast.parse(src)
    last = tree.body.pop()  # the show_table(...) expression: its value is the table
    exec(compile(tree, "<cell>", "exec"), ns)  # noqa: S102 - the project's own notebook
    out = eval(compile(ast.Expression(last.value), "<cell>", "eval"), ns)  # noqa: S307
    assert str(ROOT) not in out.markdown + out.csv  # neither the table nor its CSV download
    return out.plain


def test_the_throughput_table_names_the_log_files_relative(tmp_path):
    # Eos v4.1 n32: 3 GPT-3 runs, result_0..2.txt -> one row, its folder below results/ and result_*.txt
    md = _throughput_table(MLPERF / "v4.1" / "NVIDIA" / "results" / N32)
    assert "Log files" in md and "eos_n32_ngc24.09_nemo/gpt3/result_*.txt" in md
    assert str(ROOT) not in md and "/work" not in md
    # one file in a flat folder: its name only
    shutil.copyfile(MLPERF / "v4.1" / "NVIDIA" / "results" / N32 / "gpt3" / "result_1.txt",
                    tmp_path / "result_1.txt")  # fmt: skip
    md = _throughput_table(tmp_path)
    assert "result_1.txt" in md and str(tmp_path) not in md


N32 = "eos_n32_ngc24.09_nemo"


def test_the_runs_table_has_a_relative_result_file_column(tmp_path):
    shutil.copyfile(MLPERF / "v4.1" / "NVIDIA" / "results" / N32 / "gpt3" / "result_1.txt",
                    tmp_path / "result_1.txt")  # fmt: skip
    src = _cell("mlperf_runs.ipynb", "tbl-mlperf-runs")
    for folder, expected in ((MLPERF / "v4.1" / "NVIDIA" / "results" / N32, f"{N32}/gpt3/result_2.txt"),
                             (tmp_path, "result_1.txt")):  # fmt: skip
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ns = {"pl": pl, "results": mlperf.load_results(folder)}
        tree = ast.parse(src)
        last = tree.body.pop()
        exec(compile(tree, "<cell>", "exec"), ns)  # noqa: S102 - the project's own notebook
        out = eval(compile(ast.Expression(last.value), "<cell>", "eval"), ns)  # noqa: S307
        assert "Result file" in out.plain and expected in out.plain
        assert str(folder) not in out.plain + out.csv


# --------------------------------------------------------------------------- memory per benchmark


def test_model_state_of_each_benchmark_by_hand():
    t = {r["benchmark"]: r for r in flops.model_state_by_benchmark(
        ["llama31_405b", "llama2_70b_lora", "gpt3"], 80e9, 8, "H100 SXM").iter_rows(named=True)}  # fmt: skip
    # LoRA rank 16 on q, k, v, o of Llama 2 70B (h 8192, 8 KV heads of 128 = 1024, 80 layers):
    # 16 x (2 x (8192 + 8192) + 2 x (8192 + 1024)) = 819,200 a layer, x 80 = 65,536,000 adapters;
    # frozen bf16 68,976,648,192 x 2 = 137.953e9 B; adapters x 18 B = 1.180e9 B; sum 139.133e9 B
    lora = t["llama2_70b_lora"]
    assert lora["trainable_parameters"] == 65_536_000 and lora["parameters"] == 68_976_648_192
    assert lora["model_state_bytes"] == pytest.approx(68_976_648_192 * 2 + 65_536_000 * 18)
    assert (lora["min_gpus"], lora["min_nodes"]) == (2, 1)  # 139.1 / 80 = 1.74 -> 2 GPUs
    assert "fits one node of 8 H100 SXM" in lora["sentence"]
    # Llama 3.1 405B (arXiv:2407.21783 Table 3 shape): 405,853,388,800 parameters x 18 B = 7.305e12
    # B; 7.305e12 / 640e9 = 11.4 -> 12 nodes; 7.305e12 / 80e9 = 91.3 -> 92 GPUs
    big = t["llama31_405b"]
    assert big["parameters"] == 405_853_388_800 and (big["min_gpus"], big["min_nodes"]) == (92, 12)
    assert "does not fit the 7.04 TB of 11 nodes" in big["sentence"]
    # GPT-3 175B: 3.14e12 B > 4 x 640 GB = 2.56 TB, 5 nodes
    assert t["gpt3"]["min_nodes"] == 5
    # MI300X (192 GB, 1.536 TB a node): 405B needs 7.305 / 1.536 = 4.76 -> 5 nodes, LoRA 1 GPU
    m = {r["benchmark"]: r for r in flops.model_state_by_benchmark(
        ["llama31_405b", "llama2_70b_lora"], 192e9, 8, "MI300X").iter_rows(named=True)}  # fmt: skip
    assert m["llama31_405b"]["min_nodes"] == 5 and m["llama2_70b_lora"]["min_gpus"] == 1
    assert "does not fit the 6.14 TB of 4 nodes of 8 MI300X" in m["llama31_405b"]["sentence"]
    # the sentences name models and benchmarks as readers know them, never by the logs' ids
    assert t["gpt3"]["sentence"].startswith("GPT-3 175B carries 3.14 TB of model state")
    assert t["llama31_405b"]["sentence"].startswith("Llama 3.1 405B carries 7.31 TB")
    assert lora["sentence"].startswith(
        "Llama 2 70B (the Llama 2 70B LoRA benchmark) carries 139.1 GB"
    )


def _memory_notebook(tmp_path: Path, benchmarks: list[str], accelerator: str) -> dict:
    cmp = tmp_path / "comparison.csv"
    cmp.write_text("benchmark,n_gpus\n" + "".join(f"{b},64\n" for b in benchmarks))
    values = tmp_path / "memory_model.json"
    pm.execute_notebook(
        str(ROOT / "notebooks" / "memory_model.ipynb"), str(tmp_path / "out.ipynb"),
        parameters={"comparison_path": str(cmp), "accelerator": accelerator,
                    "figures_dir": str(tmp_path / "fig"), "values_path": str(values)},
        cwd=str(ROOT / "notebooks"), progress_bar=False, kernel_name="python3",
    )  # fmt: skip
    return json.loads(values.read_text())


def test_a_lora_only_book_models_llama2_70b_lora_and_says_nothing_of_gpt3(tmp_path):
    vals = _memory_notebook(tmp_path, ["llama2_70b_lora"], "MI300X")
    prose = vals["memory_prose"].replace("\\", "")
    assert (
        "GPT-3" not in prose
        and "Llama 2 70B (the Llama 2 70B LoRA benchmark) carries 139.1 GB" in prose
    )
    assert "needs at least 1 GPU of 192 GB" in prose  # 139.1 GB < 192 GB
    assert vals["shown_llama2_70b_lora"] is True and "shown_gpt3" not in vals
    # the background example of full pre-training: GPT-3 175B, 174.6e9 x 18 B = 3.14 TB, 3 MI300X
    # nodes (3.14 TB / (8 x 192 GB) = 2.05 -> 3), named, and said not to be among the book's logs
    assert vals["model_state_tb"] == "3.14" and vals["min_nodes"] == 3 and "model" not in vals
    assert vals["example_model"] == "GPT-3 175B" and vals["example_in_logs"] is False
    workload = _conditional_content((ROOT / "chapters" / "workload.qmd").read_text(),
                                    {"values": {"memory_model": vals}})  # fmt: skip
    assert "not one of the benchmarks in this book's logs" in workload
    figs = {p.name for p in (tmp_path / "fig").iterdir()}
    assert "memory_model_state_llama2_70b.svg" in figs
    assert not any("gpt3" in f or "405b" in f for f in figs)
    # the chapter as the preview (and Quarto) keeps it: no GPT-3 sentence, the LoRA figure
    chapter = _conditional_content((ROOT / "chapters" / "_memory.qmd").read_text(),
                                   {"values": {"memory_model": vals}})  # fmt: skip
    assert "GPT-3" not in chapter and "memory_model_state_llama2_70b.svg" in chapter
    assert "memory_model_state_gpt3_175b" not in chapter


def test_a_flux_book_gets_no_memory_row_and_one_sentence_not_a_failed_notebook(tmp_path):
    # issue 36 trial item 1: Flux.1 has no LLM memory preset; the notebook failed with KeyError
    vals = _memory_notebook(tmp_path, ["flux1", "llama31_8b"], "B200")
    prose = vals["memory_prose"].replace("\\", "")
    assert "Flux.1 has no model-state row" in prose and "Llama 3.1 8B" in prose
    assert vals["has_rows"] is True and vals["has_unmodelled"] is True
    assert "shown_flux1" not in vals and vals["n_benchmarks"] == 1
    # the example of full training is the book's own Llama 3.1 8B: no "not in the logs" sentence
    assert vals["example_model"] == "Llama 3.1 8B" and vals["example_in_logs"] is True
    (tmp_path / "only").mkdir()
    vals = _memory_notebook(tmp_path / "only", ["flux1"], "B200")
    assert vals["has_rows"] is False and vals["has_nodes"] is False
    assert vals["memory_prose"].replace("\\", "").startswith("Flux.1 has no model-state row")
    # the chapter keeps one sentence: no table, figure or appendix reference
    chapter = _conditional_content((ROOT / "chapters" / "_memory.qmd").read_text(),
                                   {"values": {"memory_model": vals}})  # fmt: skip
    assert "tbl-memory" not in chapter and "memory_model_state" not in chapter
    assert "values.memory_model.memory_prose" in chapter


# --------------------------------------------------------------------------- what the rules fix


def test_what_the_rules_fix_is_said_per_benchmark_of_the_logs():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = mlperf.load_results(MLPERF / "v4.1" / "NVIDIA" / "results" / "eos_n8_ngc24.09_nemo")
    (row,) = mlperf.rules_sentences(mlperf.convergence_hyperparameters(res)).iter_rows(named=True)
    # closed_llama2_70b_lora.yaml (mlperf-logging, training_4.1.0) has one CHECK among the logged
    # keys: lora_rank == 16; the log's :::MLLOG global_batch_size event says 8
    assert row["benchmark"] == "llama2_70b_lora" and row["ruleset"] == "training_4.1.0"
    assert (row["n_fixed"], row["fixed_keys"], row["global_batch_sizes"]) == (1, "lora_rank", "8")
    assert row["sentence"].startswith(
        "For Llama 2 70B LoRA the rules (training_4.1.0) fix 1 of the"
    )
    assert "GPT-3" not in row["sentence"] and "these logs do not record it" in row["sentence"]
    # the chapter's section says nothing of GPT-3 by itself (its sentences come from the values)
    text = (ROOT / "chapters" / "_mlperf.qmd").read_text()
    section = text[text.index("### What the rules fix") :]
    kept = _conditional_content(section, {"values": {"mlperf_runs": {"layout_known": False}}})
    assert "GPT-3" not in kept and "{{< meta values.mlperf_runs.rules_prose >}}" in kept
    assert "512-GPU" not in kept and "sec-cluster-layout" not in kept


# --------------------------------------------------------------------------- the fresh-user findings


def test_rows_that_differ_only_in_gpu_count_share_one_round_line(tmp_path, capsys):
    # Eos v4.1 LoRA at 8 GPUs (eos_ngc24.09_nemo) and 64 GPUs (eos_n8_ngc24.09_nemo) relabelled as a
    # v5.0 submission: the bundled Eos has no LoRA in v5.0, so both rows take v4.1 (nearest) and
    # the book says so once, "at 8 and 64 GPUs"
    root = tmp_path / "training_results_v5.0" / "Lab"
    for src, name in (("eos_ngc24.09_nemo", "lab_8"), ("eos_n8_ngc24.09_nemo", "lab_64")):
        res = root / "results" / name / "llama2_70b_lora"
        res.mkdir(parents=True)
        for f in (MLPERF / "v4.1" / "NVIDIA" / "results" / src / "llama2_70b_lora").iterdir():
            shutil.copyfile(f, res / f.name)
        (root / "systems").mkdir(exist_ok=True)
        shutil.copyfile(MLPERF / "v4.1" / "NVIDIA" / "systems" / f"{src}.json",
                        root / "systems" / f"{name}.json")  # fmt: skip
    cfg = tmp_path / "lab.yaml"
    # Eos pinned: the round rule of a pinned reference (like for like is tests/test_like_for_like.py)
    cfg.write_text(yaml.safe_dump({"name": "Lab", "accelerator": "H100 SXM", "gpus_per_node": 8,
                                   "mlperf": str(tmp_path / "training_results_v5.0"),
                                   "reference": {"name": "Eos"}}))  # fmt: skip
    assert cli.main(["compare", "--config", str(cfg), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["ratio"] for r in doc["rows"]] == [1.0, 1.0]  # identical logs, equal GPU counts
    (line,) = doc["warnings"]
    assert line.startswith("Llama 2 70B LoRA at 8 and 64 GPUs: Lab v5.0")
    assert line.endswith("no result of the reference in v5.0; nearest round v4.1")
    # its own strong scaling: E = 8 x 27.928383 / (64 x 4.573167) = 223.427 / 292.683 = 0.763
    frame = pl.DataFrame(doc["rows"], schema=compare.COMPARISON_SCHEMA)
    assert compare.own_scaling_summary(frame) == (
        "From 8 to 64 GPUs, Lab keeps 76.3 % of perfect strong scaling on Llama 2 70B LoRA "
        "(E = 8 × 27.93 / (64 × 4.573))"
    )


def test_the_users_comparison_chapter_keeps_no_gpt3_or_published_prose_without_them():
    values = {"values": {"inputs": {"logs_gpt3": False, "published": False, "quoted_ratio": False,
                                    "evaluated": True, "mlperf": True}}}  # fmt: skip
    for chapter in ("_eos_comparison.qmd", "summary.qmd"):
        kept = _conditional_content((ROOT / "chapters" / chapter).read_text(), values)
        for word in ("SAKURAONE", "talk", "paper", "512-GPU", "GPT-3 row"):
            assert word not in kept, (chapter, word)


def test_the_memory_tables_of_a_lora_only_book_have_no_layout_columns(tmp_path):
    _memory_notebook(tmp_path, ["llama2_70b_lora"], "H100 SXM")
    nb = json.loads((tmp_path / "out.ipynb").read_text())
    plain = {
        label: "".join(o["data"]["text/plain"])
        for c in nb["cells"]
        for label in [
            next(
                (
                    ln.split(":", 1)[1].strip()
                    for ln in "".join(c["source"]).splitlines()
                    if ln.startswith("#| label:")
                ),
                None,
            )
        ]  # fmt: skip
        for o in c.get("outputs", [])
        if label and "text/plain" in o.get("data", {})
    }
    nodes = plain["tbl-memory-nodes"]
    assert "tp 4 x pp 8" not in nodes and "Fits, layout" not in nodes
    # 139.133e9 B over 8 GPUs of one node: 17.4 GB each (H100: 80 GB, fits)
    assert "17.4" in nodes and "GPT-3" not in plain["tbl-memory-summary"]


def test_the_cluster_notebook_shows_the_users_cluster_and_the_reference_only(tmp_path):
    nb = json.loads((ROOT / "notebooks" / "cluster.ipynb").read_text())
    (params,) = [c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", [])]
    assert "SAKURAONE" not in "".join(params["source"])  # no case-study default
    out = tmp_path / "cluster.ipynb"
    pm.execute_notebook(
        str(ROOT / "notebooks" / "cluster.ipynb"), str(out),
        parameters={"evaluated": "Lab 7", "accelerator": "MI300X", "gpus_per_node": 8, "nodes": 4},
        cwd=str(ROOT / "notebooks"), progress_bar=False, kernel_name="python3",
    )  # fmt: skip
    shown = "".join(
        "".join(o.get("data", {}).get("text/plain", "")) + "".join(o.get("text", ""))
        for c in json.loads(out.read_text())["cells"]
        for o in c.get("outputs", [])
    )
    assert "Lab 7" in shown and "8 x MI300X" in shown and "Eos" in shown
    # the demo cluster's column of systems.csv and its TOP500 row are not the user's
    assert "SAKURAONE" not in shown and "ISC 2025" not in shown


def test_legends_name_only_what_is_drawn():
    # two rows, measured and interpolated: the legend has those two kinds, no "extrapolated"
    row = dict.fromkeys(compare.COMPARISON_SCHEMA)
    rows = [{**row, "benchmark": "llama2_70b_lora", "n_gpus": n, "ratio": r, "reference_kind": k,
             "ratio_low": lo, "ratio_high": hi}
            for n, r, k, lo, hi in ((8, 1.06, "measured", 1.06, 1.06),
                                    (16, 1.07, "interpolated", 0.89, 1.17))]  # fmt: skip
    spec = json.dumps(
        charts.comparison_ratio_by_gpus(
            pl.DataFrame(rows, schema=compare.COMPARISON_SCHEMA)
        ).to_dict()
    )
    assert "reference interpolated" in spec and "reference extrapolated" not in spec
    # a LoRA memory chart has no layout line, and its legend no layout entry
    spec = flops.RECIPES["mixed_adam_fp32_grads"]
    by_nodes = flops.memory_vs_nodes(flops.LLAMA2_70B, [1, 2], spec, n_params=139.1e9 / 18).with_columns(
        pl.lit(None, pl.Float64).alias("bytes_per_gpu_layout"))  # fmt: skip
    chart = json.dumps(charts.memory_per_gpu(by_nodes, 80.0, "Llama 2 70B LoRA").to_dict())
    assert "evenly over all GPUs" in chart and "TP x PP x ZeRO-1 layout" not in chart


# --------------------------------------------------------------------------- the user's book


#: What only the bundled demo's book may say: the case study's name (Latin and Japanese), its
#: paper (arXiv:2604.13600, Konishi et al.) and white paper, its talk (Tsubouchi, Cloud Operator
#: Days Tokyo 2025, on Speaker Deck), the talk's quoted 1.28x and the "third-party summary" the
#: case study's numbers come from. Matched case-insensitively on
#: what a reader sees; "the paper" and "the talk" as the book refers to the case study's (other
#: works are named: "the ZeRO paper"; "talk" the verb, "where the GPUs talk", is not matched).
DEMO_TERMS = (
    r"sakura", r"さくら", r"\bthe paper\b", r"\bthe paper's\b", r"\bthe talk\b", r"\bthe talk's\b",
    r"2604\.13600", r"2507\.02124", r"konishi", r"tsubouchi", r"cloud operator days",
    r"speakerdeck", r"\b1\.28\s*(x|×)", r"published for [A-Z]", r"third-party summary",
    r"mlsys", r"case study",
)  # fmt: skip


#: Sentences of the demo's book seen in a user's book (issue 38); none may show in a user's pages.
DEMO_SENTENCES = (
    r"run `?make report`? again",
    r"`?make report`? executes the notebooks",
    r"byte-for-byte copies",
    r"real H200",
    r"months of operation",
    r"in the demo book",
    r"MLPerf GPT-3 runs' layout",
)


def _demo_terms(text: str) -> list[str]:

    return [t for t in DEMO_TERMS if re.search(t, text, re.IGNORECASE)]


def _own_rows(tmp: Path) -> Path:
    """Published rows of the user's own cluster (a GPT-3 and a LoRA scale; minutes of their own,
    not the case study's), in the layout of data/reference/published_results.csv."""
    head = (ROOT / "data/reference/published_results.csv").read_text().splitlines()[0]
    rows = [
        "Copycat,v4.1,Copycat Labs,gpt3,256,32,110.0,,,,fp8,700.0,750.0,Copycat run book,false",
        "Copycat,v4.1,Copycat Labs,llama2_70b_lora,64,8,5.0,,,,,,,Copycat run book,false",
    ]
    p = tmp / "own_rows.csv"
    p.write_text("\n".join([head, *rows]) + "\n")
    return p


def _run_users_book(tmp: Path, cfg: Path):
    """``trainperf report --config cfg`` into ``tmp/book`` (preview site, no batch runs, English
    figures only: the book's language); returns (summary, out, figures, log lines)."""
    mp = pytest.MonkeyPatch()
    mp.setenv(LANGS_ENV, "en")
    try:
        out, figures, lines = tmp / "book", tmp / "figures", []
        summary = report.run_report(
            out=out, figures=figures, root=ROOT, use_quarto=False, log=lines.append,
            progress=False, run_batches=False, config=load_config(cfg),
        )  # fmt: skip
    finally:
        mp.undo()
    return summary, out, figures, lines


@pytest.fixture(scope="module")
def users_book(tmp_path_factory):
    """The book of a user's config with every input: own MLPerf logs (Eos v4.1 GPT-3 at 256 GPUs
    and LoRA at 64 GPUs, relabelled 'Copycat'), own published rows with a quoted ratio, and the
    synthetic telemetry and Slurm history (a user without their own)."""

    tmp = tmp_path_factory.mktemp("users_book")
    root = tmp / "training_results_v4.1" / "Copycat"
    src = MLPERF / "v4.1" / "NVIDIA"
    for system, name, bench in (("eos_n32_ngc24.09_nemo", "cc_256", "gpt3"),
                                ("eos_n8_ngc24.09_nemo", "cc_64", "llama2_70b_lora")):  # fmt: skip
        res = root / "results" / name / bench
        res.mkdir(parents=True)
        for f in (src / "results" / system / bench).iterdir():
            shutil.copyfile(f, res / f.name)
        desc = json.loads((src / "systems" / f"{system}.json").read_text())
        desc["submitter"], desc["system_name"] = "Copycat", name
        (root / "systems").mkdir(exist_ok=True)
        (root / "systems" / f"{name}.json").write_text(json.dumps(desc))
    data = {
        "name": "Copycat", "accelerator": "H100 SXM", "gpus_per_node": 8, "nodes": 40,
        "mlperf": str(tmp / "training_results_v4.1"),
        "published": {"path": str(_own_rows(tmp)), "quoted_ratio": 1.1},
        "telemetry": {"source": "synthetic", "mlperf_log": str(
            src / "results" / "eos_n64_ngc24.09_nemo" / "gpt3" / "result_0.txt")},
        "sacct": "synthetic",
    }  # fmt: skip
    cfg = tmp / "copycat.yaml"
    cfg.write_text(yaml.safe_dump(data), encoding="utf-8")
    return _run_users_book(tmp, cfg)


def _page_text(html: str) -> str:
    """What a reader reads on a page: the text, alt texts and titles, without the tags and the
    figures' data URIs (their titles are checked in the figure files)."""

    html = re.sub(r"data:[^\"')\s]+", "", html)
    alts = " ".join(re.findall(r'(?:alt|title)="([^"]*)"', html))
    return re.sub(r"<[^>]+>", " ", html) + " " + alts


@pytest.mark.slow
def test_the_users_book_holds_nothing_of_the_demo(users_book):

    summary, out, figures, lines = users_book
    assert summary.problems == [], summary.problems
    assert not [ln for ln in lines if "failed" in ln], lines
    values = yaml.safe_load((out / "values.yml").read_text())["values"]
    assert values["inputs"]["demo"] is False and values["inputs"]["published"] is True
    found: dict[str, list[str]] = {}
    # 1. every chapter as Quarto shows it: includes inlined, content-visible/-hidden when-meta
    #    resolved against this book's values, meta values and embeds filled in
    structure = book_structure(ROOT)
    assert len(structure.chapters) >= 10
    # the case study is a part of its own that only the demo's book has (trainperf.report.parts)
    case_study = {ROOT / "chapters" / "case_study.qmd"}
    source = yaml.safe_load((ROOT / "_quarto.yml").read_text())["book"]["chapters"]
    assert {"part": parts.CASE_STUDY_PART, "chapters": ["chapters/case_study.qmd"]} in source
    for qmd in structure.chapters:
        if qmd in case_study:
            continue
        md = chapter_markdown(qmd, out / "notebooks", values)
        found[str(qmd.relative_to(ROOT))] = _demo_terms(md)
    # 2. every page of the built site (chapters, notebook appendices with their outputs, the
    #    references page from the book's bibliography)
    site = Path(summary.site).parent
    pages = sorted(site.glob("*.html"))
    assert {"index.html", "operations.html", "references.html"} <= {p.name for p in pages}
    assert "case_study.html" not in {p.name for p in pages}
    for page in pages:
        text = _page_text(page.read_text(errors="replace"))
        found[f"site/{page.name}"] = _demo_terms(text) + [
            s for s in DEMO_SENTENCES if re.search(s, re.sub(r"\s+", " ", text), re.IGNORECASE)
        ]
    # 3. the executed notebooks and their appendix copies: markdown, code shown folded, outputs
    for nb in sorted([*(out / "notebooks").glob("*.ipynb"), *(out / "appendix").glob("*.ipynb")]):
        found[f"notebooks/{nb.name}"] = _demo_terms(nb.read_text())
    # 4. the figures' titles and texts (SVG) and the book's values
    for fig in sorted(figures.glob("*.svg")):
        found[f"figures/{fig.name}"] = _demo_terms(fig.read_text())
    assert len(list(figures.glob("*.svg"))) >= 10
    found["values.yml"] = _demo_terms((out / "values.yml").read_text())
    assert not {k: v for k, v in found.items() if v}, {k: v for k, v in found.items() if v}
    # the list is not trivially met: the demo's chapters, read as the demo's book, have them
    demo_values = {**values, "inputs": {**values["inputs"], "demo": True}}
    for chapter in ("operations.qmd", "_trace.qmd", "telemetry_cluster.qmd", "glossary.qmd"):
        text = _conditional_content((ROOT / "chapters" / chapter).read_text(),
                                    {"values": demo_values})  # fmt: skip
        assert "SAKURAONE" in text and _demo_terms(text), chapter
    # and the user's synthetic inputs are said to be synthetic, in neutral words
    ops = (site / "operations.html").read_text()
    tel = (site / "telemetry_cluster.html").read_text()
    assert "It is not the accounting of Copycat" in re.sub(r"\s+", " ", _page_text(ops))
    assert "It is not the telemetry of Copycat" in re.sub(r"\s+", " ", _page_text(tel))


@pytest.mark.slow
def test_the_users_own_published_rows_get_no_case_study_prose(users_book):

    summary, out, figures, _ = users_book
    # the user's rows enter comparison.csv against Eos v4.1 logs at equal GPU count: GPT-3 at 256
    # GPUs, 110.0 min against Eos v4.1 eos_n32 (256 GPUs, 96.664 min, its score; the paper's
    # table and PAPER_TABLE give 96.66): ratio 110.0 / 96.664 = 1.138
    cmp = pl.read_csv(out / "comparison.csv").filter(pl.col("evaluated_source") == "published")
    (gpt3,) = cmp.filter((pl.col("benchmark") == "gpt3") & (pl.col("n_gpus") == 256)).rows(
        named=True
    )
    assert f"{gpt3['ratio']:.3f}" == f"{110.0 / 96.664:.3f}" == "1.138"
    # the eos_comparison notebook ran them (no paper table of the case study: its rows are not
    # there) and says where they are compared
    nb = json.loads((out / "notebooks" / "eos_comparison.ipynb").read_text())
    shown = json.dumps([c.get("outputs", []) for c in nb["cells"]])
    # no `reference:`: the record is the reference, named as such (issue 36 trial item 3)
    assert "The published rows of Copycat are compared with the reference" in shown
    assert "Paper" not in shown and "paper_ratio" not in shown
    values = yaml.safe_load((out / "values.yml").read_text())["values"]["eos_comparison"]
    assert "talk_ratio" not in values and not [k for k in values if k.startswith("paper_")]
    site = Path(summary.site).parent
    pages = {p.name: " ".join(_page_text(p.read_text()).split()) for p in site.glob("*.html")}
    chapter = next(t for t in pages.values() if "The published rows given for Copycat" in t)
    assert "this book does not place it against the data" in chapter
    assert "the published rows of Copycat that the config gives" in pages["index.html"]


def test_only_the_bundled_case_study_is_the_demo(tmp_path):

    demo = load_config(ROOT / "configs" / "sakuraone.yaml")
    assert demo_mod.is_demo(demo, ROOT) is True
    # the same rows under another name, another cluster's rows under the demo's name, no rows
    rows = tmp_path / "rows.csv"
    shutil.copyfile(ROOT / "data" / "reference" / "published_results.csv", rows)
    other = tmp_path / "o.yaml"
    for name, path in (("Copycat", rows), ("SAKURAONE", _own_rows(tmp_path))):
        other.write_text(yaml.safe_dump({"name": name, "accelerator": "H100 SXM",
                                         "gpus_per_node": 8, "published": {"path": str(path)}}))  # fmt: skip
        assert demo_mod.is_demo(load_config(other), ROOT) is False, name
    other.write_text(yaml.safe_dump({"name": "SAKURAONE", "accelerator": "H100 SXM",
                                     "gpus_per_node": 8}))  # fmt: skip
    assert demo_mod.is_demo(load_config(other), ROOT) is False
    assert demo_mod.demo_overrides(demo, True) == {"eos_comparison": {"case_study": True}}


def test_a_users_bibliography_lists_none_of_the_case_studys_works(tmp_path):

    bib = demo_mod.book_bibliography(ROOT, tmp_path / "refs.bib", demo=False)
    text = bib.read_text()
    # references.bib: the paper, the white paper and the talk name SAKURAONE; the 14 others stay
    whole = (ROOT / "references.bib").read_text()
    assert (
        whole.count("\n@") + whole.startswith("@") == text.count("\n@") + text.startswith("@") + 3
    )
    for key in ("konishi2026sakuraone", "konishi2025whitepaper", "tsubouchi2025talk"):
        assert key in whole and key not in text
    assert "narayanan2021megatron" in text and not _demo_terms(text)
    assert (
        demo_mod.book_bibliography(ROOT, tmp_path / "x.bib", demo=True) == ROOT / "references.bib"
    )


def test_the_quarto_project_of_a_users_book_has_the_filtered_bibliography(tmp_path, monkeypatch):

    # a stand-in for `quarto render` that writes an empty book (Quarto is not installable here):
    # what is checked is the staged project Quarto renders, not Quarto
    fake = tmp_path / "quarto"
    fake.write_text("#!/bin/sh\nmkdir -p _book && echo '<html></html>' > _book/index.html\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(book_build, "quarto_available", lambda: str(fake))
    cfg = load_config(ROOT / "configs" / "sakuraone.yaml")
    out, figures = tmp_path / "out", tmp_path / "fig"
    out.mkdir()
    figures.mkdir()
    for demo in (False, True):
        book = book_build.build_book(
            ROOT, out, figures, cfg, {"inputs": {"demo": demo}}, None, print
        )
        assert book["quarto"] is True
        staged = (out / "quarto" / "references.bib").read_text()
        # the case study's paper only in the demo's book; the other works in both
        assert ("konishi2026sakuraone" in staged) is demo and "narayanan2021megatron" in staged


@pytest.mark.slow
def test_the_demos_book_keeps_its_case_study(main_job):
    # the bundled demo (configs/sakuraone.yaml) is the case study: its pages keep the paper's
    # and the talk's material that a user's book leaves out
    tmp, summary = main_job
    values = yaml.safe_load((tmp / "out" / "values.yml").read_text())["values"]
    assert values["inputs"]["demo"] is True and values["eos_comparison"]["talk_ratio"] == 1.28
    site = Path(summary.site).parent
    pages = {p.name: " ".join(_page_text(p.read_text()).split()) for p in site.glob("*.html")}
    assert "the marginals published for SAKURAONE" in pages["operations.html"]
    assert "SAKURAONE paper observed" in pages["telemetry_cluster.html"]
    assert any("What the talk" in t and "1.28x" in t for t in pages.values())
    assert "Konishi" in pages["references.html"] and "Tsubouchi" in pages["references.html"]


# --------------------------------------------------------------------------- a 405B-only book


def test_the_books_benchmarks_are_those_of_its_logs():

    only_405b = {"logs_gpt3": False, "logs_llama2_70b_lora": False, "logs_llama31_405b": True}
    assert book_words.benchmarks_studied(only_405b) == "Llama 3.1 405B pre-training"
    both = {"logs_gpt3": True, "logs_llama2_70b_lora": True, "logs_llama31_405b": False}
    assert book_words.benchmarks_studied(both) == (
        "GPT-3 175B pre-training and Llama 2 70B LoRA fine-tuning"
    )
    assert book_words.benchmarks_studied({}) == "no benchmark"
    text = (ROOT / "index.qmd").read_text()
    about = text[text.index("## About this book") :]
    kept = _conditional_content(about, {"values": {"inputs": {"demo": False, **only_405b}}})
    assert "{{< meta values.config.benchmarks_studied >}}" in kept
    assert "GPT-3" not in kept and "LoRA" not in kept and "512-GPU" not in kept
    # the demo's book keeps its sentence
    demo = _conditional_content(about, {"values": {"inputs": {"demo": True, **both}}})
    assert "(GPT-3 175B pre-training and Llama 2 70B LoRA fine-tuning)" in demo


def test_the_synthetic_telemetry_names_the_log_it_follows(tmp_path):

    def cfg(log: Path):
        p = tmp_path / "t.yaml"
        p.write_text(yaml.safe_dump({"name": "Lab", "accelerator": "H100 SXM", "gpus_per_node": 8,
                                     "telemetry": {"source": "synthetic", "mlperf_log": str(log)}}))  # fmt: skip
        return load_config(p)

    default = (
        MLPERF / "v4.1" / "NVIDIA" / "results" / "eos_n64_ngc24.09_nemo" / "gpt3" / "result_0.txt"
    )
    assert (
        book_words.telemetry_log_phrase(cfg(default), ROOT)
        == "NVIDIA's real Eos MLPerf v4.1 GPT-3 log"
    )
    own = tmp_path / "lab_64" / "gpt3" / "result_3.txt"
    own.parent.mkdir(parents=True)
    shutil.copyfile(default, own)
    phrase = book_words.telemetry_log_phrase(cfg(own), ROOT)
    # an inline code span (trainperf.markup.md_code pads it; Markdown strips one space each side)
    assert phrase == (
        "the MLPerf log ` lab_64/gpt3/result_3.txt ` that the config names (`telemetry.mlperf_log`)"
    )
    assert "Eos" not in phrase and str(tmp_path) not in phrase
    # the chapter quotes the computed phrase in a user's book, not a fixed one

    kept = _conditional_content((ROOT / "chapters" / "telemetry_cluster.qmd").read_text(),
                                {"values": {"inputs": {"demo": False, "telemetry": True,
                                                       "telemetry_synthetic": True}}})  # fmt: skip
    assert "{{< meta values.config.telemetry_log >}}" in kept and "Eos MLPerf v4.1" not in kept


def test_the_mfu_sentence_quotes_the_reference_runs_of_the_chosen_round():
    # two rounds at 512 GPUs (made-up step figures): v3.1 300 TFLOP/s (MFU FP8 0.1517 = 300/1979,
    # BF16 0.3033 = 300/989), v4.1 400 TFLOP/s; a GPT-3 comparison against v3.1 quotes v3.1's
    thr = pl.DataFrame({
        "round": ["v3.1", "v3.1", "v4.1"], "benchmark": ["gpt3"] * 3, "n_accelerators": [512] * 3,
        "status": ["success"] * 3, "model_tflops_per_gpu_step": [300.0, 300.0, 400.0],
        "mfu_fp8_dense_step": [300 / 1979, 300 / 1979, 400 / 1979],
        "mfu_bf16_dense_step": [300 / 989, 300 / 989, 400 / 989],
    })  # fmt: skip
    v31 = reference_mfu_values(
        thr, pl.DataFrame({"benchmark": ["gpt3"], "reference_round": ["v3.1"]})
    )
    assert v31 == {"eos_512_tflops_step": "300", "eos_512_mfu_fp8_pct": "15.2",
                   "eos_512_mfu_bf16_pct": "30.3", "eos_512_round": "v3.1"}  # fmt: skip
    # no GPT-3 comparison: the newest round (v4.1: 400 / 1979 = 20.2 %, 400 / 989 = 40.4 %)
    newest = reference_mfu_values(thr, None)
    assert (newest["eos_512_round"], newest["eos_512_mfu_fp8_pct"], newest["eos_512_mfu_bf16_pct"]) == (
        "v4.1", "20.2", "40.4")  # fmt: skip
    for chapter in ("summary.qmd", "_eos_comparison.qmd"):
        text = (ROOT / "chapters" / chapter).read_text()
        assert "values.eos_comparison.eos_512_round" in text and "round v4.1 reach" not in text


@pytest.fixture(scope="module")
def book_405b(tmp_path_factory):
    """The book of a user's config with Llama 3.1 405B logs only (the Eos v5.0 512-GPU logs
    relabelled 'Fictional Labs'), no telemetry, no Slurm accounting, no published rows."""

    tmp = tmp_path_factory.mktemp("book_405b")
    logs = _relabelled_405b(tmp)
    cfg = tmp / "fl.yaml"
    # Eos pinned: without `reference:` these logs (byte for byte Eos's) would be named as Eos's
    # published result and left out of their own like-for-like reference (test_like_for_like.py)
    cfg.write_text(yaml.safe_dump({"name": "Fictional Labs", "accelerator": "H100 SXM",
                                   "gpus_per_node": 8, "mlperf": str(logs),
                                   "reference": {"name": "Eos"}}), encoding="utf-8")  # fmt: skip
    summary, out, figures, _ = _run_users_book(tmp, cfg)
    site = Path(summary.site).parent
    pages = {p.name: " ".join(_page_text(p.read_text()).split()) for p in site.glob("*.html")}
    return summary, out, figures, pages


@pytest.mark.slow
def test_a_405b_only_book_says_nothing_of_other_benchmarks_or_the_bundled_capture(book_405b):
    summary, out, figures, pages = book_405b
    assert summary.problems == [], summary.problems
    values = yaml.safe_load((out / "values.yml").read_text())["values"]
    assert values["inputs"]["capture"] is False and values["inputs"]["trace"] is False
    assert values["config"]["benchmarks_studied"] == "Llama 3.1 405B pre-training"
    # 1. the index names the benchmark of the logs only
    index = pages["index.html"]
    about = index[index.index("About this book") :]
    assert "Llama 3.1 405B pre-training" in about
    assert "GPT-3" not in about and "LoRA" not in about
    # 2. the project's own H200 capture and trace are not executed: no figures, the chapter says why
    names = {p.stem for p in figures.rglob("*.svg")}
    for fig in ("capture_tensor_activity", "trace_step_breakdown", "trace_vs_telemetry",
                "eos_gpt3_gpu_hours_by_scale"):  # fmt: skip
        assert fig not in names, fig
    assert "telemetry_capture" in summary.not_given and "trace" in summary.not_given
    tel = next(t for n, t in pages.items() if n.startswith("telemetry.") or "sec-telemetry" in n)
    assert "no profiler trace of Fictional Labs were given, so this chapter shows none" in tel
    assert (
        "H200 GPUs: a telemetry capture" not in tel
        and "Tensor-pipe activity of the real" not in tel
    )
    assert "Inside a step: a profiler trace" not in tel and "what does a GPU spend" not in tel
    # 3. appendix C says where its numbers come from; 4. Table C.5 holds no published GPT-3 row
    appendix = next(t for n, t in pages.items() if "eos_comparison" in n)
    appendix = appendix.replace("\u2019", "'").replace("&#39;", "'")
    assert (
        "self-reported numbers come from" not in appendix
        and "published_results.csv (flagged" not in appendix
    )
    assert "the evaluated system's own where the config gives them" in appendix
    nb = json.loads((out / "notebooks" / "eos_comparison.ipynb").read_text())
    (cell,) = [c for c in nb["cells"] if "#| label: tbl-eos-consistency" in "".join(c["source"])]
    shown = json.dumps(cell["outputs"])
    # no published rows given: no other system's transcribed rows are checked (none is evidence here)
    assert "were given (`published:`): its scores are recomputed from its logs" in shown
    assert "Tokens covered" not in shown


def test_the_bundled_capture_and_trace_are_left_out_unless_asked_for(tmp_path):

    user = tmp_path / "u.yaml"
    user.write_text(yaml.safe_dump({"name": "Lab", "accelerator": "H100 SXM", "gpus_per_node": 8}))
    cfg = load_config(user)
    out, fig = tmp_path / "out", tmp_path / "fig"
    _, absent = job._plan_with_config(ROOT, out, fig, job.NOTEBOOKS, cfg, None, False)
    assert {"telemetry_capture", "trace"} <= set(absent)
    assert "measured on another machine" in absent["trace"] and "Lab" in absent["trace"]
    # asked for with -p (a capture of the user's own): executed
    own = {
        "telemetry_capture": {
            "capture_dir": str(ROOT / "data/telemetry/h200_1gpu_1.3b_20261129T1852Z")
        }
    }
    _, absent = job._plan_with_config(ROOT, out, fig, job.NOTEBOOKS, cfg, own, False)
    assert "telemetry_capture" not in absent and "trace" in absent
    # the demo's book shows the project's own capture and trace
    demo = load_config(ROOT / "configs" / "sakuraone.yaml")
    _, absent = job._plan_with_config(ROOT, out, fig, job.NOTEBOOKS, demo, None, False, demo=True)
    assert "telemetry_capture" not in absent and "trace" not in absent


def _scaling_table(comparison: pl.DataFrame | None) -> object:
    """The strong-scaling cell of the comparison notebook run for a user's book (record reference,
    no case study), on the bundled v4.1 logs."""
    ns = {"pl": pl, "mlperf": mlperf, "Markdown": Markdown, "md_text": md_text, "Col": Col,
          "show_table": show_table, "mlperf_path": str(MLPERF / "v4.1"), "case_study": False,
          "reference_logs": False, "reference": "the record", "evaluated": "Lab",
          "published": compare.load_published_results().clear(), "comparison": comparison}  # fmt: skip
    src = _cell("eos_comparison.ipynb", "tbl-eos-scaling")
    tree = ast.parse(src)
    last = tree.body.pop()
    exec(compile(tree, "<cell>", "exec"), ns)  # noqa: S102 - the project's own notebook
    return eval(compile(ast.Expression(last.value), "<cell>", "eval"), ns)  # noqa: S307


def test_the_gpt3_scaling_table_is_one_sentence_in_a_book_without_two_gpt3_scales():
    # a LoRA-only book: the GPT-3 table would be an empty "No rows." under a GPT-3 caption
    lora = pl.DataFrame({"benchmark": ["llama2_70b_lora"], "n_nodes": [8], "n_gpus": [64],
                         "evaluated_min": [9.5], "evaluated_source": ["logs"]})  # fmt: skip
    out = _scaling_table(lora)
    assert out.data == "No GPT-3 result of Lab in this book, so no GPT-3 strong-scaling table."
    one = lora.with_columns(benchmark=pl.lit("gpt3"))  # one GPT-3 scale: no pair to compare
    assert "No two GPT-3 results of Lab at different scales" in _scaling_table(one).data
    # two scales of one system: a table with their efficiency, 32 -> 64 nodes:
    # E = (32 x 100) / (64 x 60) = 83.3 %
    two = pl.DataFrame({"benchmark": ["gpt3", "gpt3"], "n_nodes": [32, 64], "n_gpus": [256, 512],
                        "evaluated_min": [100.0, 60.0], "evaluated_source": ["logs", "logs"]})  # fmt: skip
    assert "83.3" in _scaling_table(two).plain
