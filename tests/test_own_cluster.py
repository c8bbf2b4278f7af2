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
import shutil
import warnings
from pathlib import Path

import papermill as pm
import polars as pl
import pytest
import yaml
from helpers import MLPERF, ROOT

from trainperf import compare, flops, jobs, mlperf
from trainperf.config import load_config, report_overrides
from trainperf.errors import ConfigError
from trainperf.report import charts, cli
from trainperf.report.preview.pages import _conditional_content
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
    cfg.write_text(yaml.safe_dump({"name": "Fictional Labs", "accelerator": "H100 SXM",
                                   "gpus_per_node": 8, "mlperf": str(logs)}), encoding="utf-8")  # fmt: skip
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
    ns = {"pl": pl, "thr": thr, "mfu_cols": ["bf16", "fp8"]}
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
    assert "GPT-3" not in prose and "Llama 2 70B (llama2_70b_lora) carries 139.1 GB" in prose
    assert "needs at least 1 GPU of 192 GB" in prose  # 139.1 GB < 192 GB
    assert vals["shown_llama2_70b_lora"] is True and "shown_gpt3" not in vals
    # the background example of full pre-training, unnamed: GPT-3 175B, 3.14 TB, 3 MI300X nodes
    assert vals["model_state_tb"] == "3.14" and vals["min_nodes"] == 3 and "model" not in vals
    figs = {p.name for p in (tmp_path / "fig").iterdir()}
    assert "memory_model_state_llama2_70b.svg" in figs
    assert not any("gpt3" in f or "405b" in f for f in figs)
    # the chapter as the preview (and Quarto) keeps it: no GPT-3 sentence, the LoRA figure
    chapter = _conditional_content((ROOT / "chapters" / "_memory.qmd").read_text(),
                                   {"values": {"memory_model": vals}})  # fmt: skip
    assert "GPT-3" not in chapter and "memory_model_state_llama2_70b.svg" in chapter
    assert "memory_model_state_gpt3_175b" not in chapter


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
    cfg.write_text(yaml.safe_dump({"name": "Lab", "accelerator": "H100 SXM", "gpus_per_node": 8,
                                   "mlperf": str(tmp_path / "training_results_v5.0")}))  # fmt: skip
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
