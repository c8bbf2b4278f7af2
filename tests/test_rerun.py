"""Re-runs do only what changed (trainperf.report.rerun): fingerprints, and the main job skipping a
notebook whose inputs did not change."""

from __future__ import annotations

import json
import os
import re
import shutil

import pytest
from helpers import ROOT
from test_config import BASE, N96, _copy_n96, _write

from trainperf.config import load_config
from trainperf.report import job as report
from trainperf.report import rerun


def test_digest_follows_content_names_and_missing_paths(tmp_path):
    d = tmp_path / "d"
    (d / "sub").mkdir(parents=True)
    (d / "a.csv").write_text("x\n1\n")
    (d / "sub" / "b.txt").write_text("b")
    first = rerun.tree_digest([d])
    assert rerun.tree_digest([d]) == first  # nothing changed
    (d / "a.csv").write_text("x\n2\n")  # same size, other content
    assert rerun.tree_digest([d]) != first
    (d / "a.csv").write_text("x\n1\n")
    assert rerun.tree_digest([d]) == first  # content, not mtime, for small files
    (d / "sub" / "c.txt").write_text("")
    assert rerun.tree_digest([d]) != first  # a new file
    missing = rerun.tree_digest([tmp_path / "nope"])
    (tmp_path / "nope").write_text("")
    assert rerun.tree_digest([tmp_path / "nope"]) != missing  # creating a missing input counts


def test_large_files_by_size_and_mtime(tmp_path, monkeypatch):
    monkeypatch.setattr(rerun, "HASH_LIMIT_BYTES", 0)  # every file is "large"
    f = tmp_path / "trace.json"
    f.write_text("{}")
    os.utime(f, ns=(1_000_000_000, 1_000_000_000))
    first = rerun.tree_digest([f])
    os.utime(f, ns=(2_000_000_000, 2_000_000_000))
    assert rerun.tree_digest([f]) != first


def _run(tmp_path, systems, lines, force=False):
    nb = report.NotebookSpec(
        "cluster",
        "Cluster",
        {"systems_path": str(systems), "top500_path": "data/reference/top500.csv"},
    )
    return report.run_report(
        out=tmp_path / "o",
        figures=tmp_path / "f",
        root=ROOT,
        notebooks=[nb],
        use_quarto=False,
        log=lines.append,
        progress=False,
        run_batches=False,
        force=force,
    )


@pytest.mark.slow
def test_unchanged_notebook_is_skipped_and_a_changed_input_runs_again(tmp_path):
    systems = tmp_path / "systems.csv"
    shutil.copy(ROOT / "data/reference/systems.csv", systems)
    lines: list[str] = []
    first = _run(tmp_path, systems, lines)
    executed = tmp_path / "o" / "notebooks" / "cluster.ipynb"
    assert first.skipped == [] and executed.is_file()
    mtime = executed.stat().st_mtime_ns
    values = json.loads((tmp_path / "o" / "values" / "cluster.json").read_text())

    lines.clear()
    second = _run(tmp_path, systems, lines)
    assert second.skipped == ["cluster"]
    assert executed.stat().st_mtime_ns == mtime  # not executed again
    assert any("cluster.ipynb unchanged" in line and "skipped" in line for line in lines)
    # the skipped notebook's numbers are still in values.yml and its page in the site
    assert json.loads((tmp_path / "o" / "values" / "cluster.json").read_text()) == values
    assert "cluster" in (tmp_path / "o" / "values.yml").read_text()

    # an input changed: "Compute nodes,100" -> 101 (the notebook's nodes value follows)
    systems.write_text(systems.read_text().replace("Compute nodes,100,", "Compute nodes,101,", 1))
    third = _run(tmp_path, systems, lines)
    assert third.skipped == []
    assert json.loads((tmp_path / "o" / "values" / "cluster.json").read_text())["nodes"] == 101

    # a deleted output runs it again; --force runs it whatever
    (tmp_path / "o" / "values" / "cluster.json").unlink()
    assert _run(tmp_path, systems, lines).skipped == []
    assert _run(tmp_path, systems, lines, force=True).skipped == []


def test_url_inputs_are_never_skipped(tmp_path):
    nb = tmp_path / "n.ipynb"
    nb.write_text("{}")
    check = rerun.NotebookRun(
        nb,
        tmp_path / "o.ipynb",
        {"telemetry_source": "http://localhost:9090"},
        ["telemetry_source"],
        tmp_path,
    )
    (tmp_path / "o.ipynb").write_text("{}")
    check.start()
    check.finish()
    assert check.unchanged() is False  # a server's answer cannot be fingerprinted


def test_batch_summary_is_fingerprinted_by_its_runs(tmp_path):
    # the summary is rewritten on every run (a reused run reads "skipped" instead of "success"),
    # so the comparison notebook's check looks at the runs' result files instead
    plan = report.plan_report(ROOT, tmp_path / "o", tmp_path / "f", report.NOTEBOOKS)
    grid_out = tmp_path / "o" / "batch" / "mlperf_systems"
    assert plan.fingerprints == {str(grid_out / "summary.parquet"): str(grid_out / "runs")}
    params = next(p for s, p in plan.notebooks if s.name == "eos_comparison")
    assert params["batch_summary_path"] == str(grid_out / "summary.parquet")


def _side_by_side(tmp_path, specs, **extra) -> dict:
    """run_report arguments: these notebooks, two at a time, into tmp_path/o and tmp_path/f."""
    return dict(
        out=tmp_path / "o",
        figures=tmp_path / "f",
        root=ROOT,
        notebooks=specs,
        use_quarto=False,
        progress=False,
        jobs=2,
        **extra,
    )


@pytest.mark.slow
def test_notebooks_side_by_side_record_only_their_own_figures(tmp_path):
    small = ROOT / "data/mlperf/v4.1/NVIDIA/results/eos_n8_ngc24.09_nemo"
    specs = [
        report.NotebookSpec("memory_model", "Memory model"),
        report.NotebookSpec("mlperf_runs", "MLPerf", {"mlperf_path": str(small)}),
    ]
    kw = _side_by_side(
        tmp_path, specs, run_batches=False, overrides={"mlperf_runs": {"mlperf_path": str(small)}}
    )
    lines: list[str] = []
    first = report.run_report(log=lines.append, **kw)
    assert first.executed == ["memory_model", "mlperf_runs"]  # in the job's order
    assert "executing 2 notebooks, 2 at a time, each with its own kernel" in lines
    # each notebook's record names the figures that notebook exported (the two ran into one
    # folder at the same time), in every language it exported
    own = {
        # without a config, the memory model models every MLPerf benchmark (one figure each)
        "memory_model": {
            "memory_model_state_gpt3_175b",
            "memory_model_state_llama31_405b",
            "memory_model_state_llama2_70b",
            "memory_wall",
        },
        "mlperf_runs": {
            "mlperf_time_to_train_llama2_70b_lora",
            "mlperf_eval_curve_llama2_70b_lora",
            "cluster_job_layout",
        },
    }
    log = [json.loads(ln) for ln in (tmp_path / "o" / "figures.jsonl").read_text().splitlines()]
    for name, figures in own.items():
        rec = json.loads((tmp_path / "o" / "notebooks" / f"{name}.run.json").read_text())
        stems = {os.path.basename(p).rsplit(".", 1)[0] for p in rec["figures"]}
        exported = {r["name"] for r in log} & figures
        assert stems == exported and exported, (name, stems)
    # nothing changed: both skipped; one figure of one notebook removed: only that one runs
    lines.clear()
    assert report.run_report(log=lines.append, **kw).skipped == ["memory_model", "mlperf_runs"]
    (tmp_path / "f" / "memory_wall.png").unlink()
    again = report.run_report(log=lines.append, **kw)
    assert again.executed == ["memory_model"] and again.skipped == ["mlperf_runs"]
    assert (tmp_path / "f" / "memory_wall.png").is_file()


@pytest.mark.slow
def test_a_notebook_reading_batch_runs_is_skipped_once_they_are_reused(tmp_path):
    # the batch runs beside the notebooks, and the comparison notebook waits for them: its
    # fingerprint must be taken after they ran, or the next run would execute it again
    cfg = load_config(
        _write(
            tmp_path,
            {
                **BASE,
                "mlperf": str(_copy_n96(tmp_path)),
                "reference": {"name": "Eos", "mlperf": str(N96), "round": "v3.1"},
            },
        )
    )
    specs = [s for s in report.NOTEBOOKS if s.name == "eos_comparison"]
    kw = _side_by_side(tmp_path, specs, config=cfg)
    lines: list[str] = []
    first = report.run_report(log=lines.append, **kw)
    assert first.executed == ["eos_comparison"]
    # Eos v3.1 holds two GPT-3 result folders (64 and 96 nodes): two batch runs, then the notebook
    assert "executing 1 notebook and 2 batch runs, 2 at a time, each with its own kernel" in lines
    order = [ln for ln in lines if "batch" in ln or "eos_comparison" in ln]
    # a line as each run ends: which, how it ended, how long it took
    ran = [ln for ln in lines if ln.startswith("  batch grids/mlperf_systems.yaml [")]
    assert [ln.split("]")[0] for ln in ran] == [
        "  batch grids/mlperf_systems.yaml [1/2",
        "  batch grids/mlperf_systems.yaml [2/2",
    ]
    assert all(re.search(r"-gpt3-[0-9a-f]{10} success in \d+\.\d s$", ln) for ln in ran), ran
    assert order.index("batch grids/mlperf_systems.yaml: 2 runs done") < order.index(
        "[1/1] executing notebooks/eos_comparison.ipynb"
    )
    lines.clear()
    second = report.run_report(log=lines.append, **kw)
    assert second.skipped == ["eos_comparison"] and second.executed == []
    # the batch's line says both runs are reused (whatever the job said before it: without a CJK
    # font, "Japanese figures skipped: ..." comes first)
    batch_lines = [ln for ln in lines if ln.startswith("batch grids/mlperf_systems.yaml: ")]
    assert len(batch_lines) == 1 and batch_lines[0].endswith("(2 reused, 0 to execute)"), lines
