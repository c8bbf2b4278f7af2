"""Batch runs: one notebook over a grid of parameter sets (trainperf.report.batch)."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
import yaml
from helpers import MLPERF, ROOT
from slurm_cluster import slurm_cluster  # noqa: F401 (fixture)

from trainperf.report import batch

NOTEBOOK = ROOT / "notebooks" / "mlperf_runs.ipynb"
# every results folder listed in data/mlperf/SOURCES.md, as <round>/<submitter>/<system>/<benchmark>
SYSTEMS = {
    "v3.1/NVIDIA/eos_n64_ngc23.09_nemo/gpt3",
    "v3.1/NVIDIA/eos_n96_ngc23.09_nemo/gpt3",
    "v4.0/NVIDIA/eos-dfw_n1344_ngc24.04_nemo/gpt3",
    "v4.1/NVIDIA/eos_n32_ngc24.09_nemo/gpt3",
    "v4.1/NVIDIA/eos_n64_ngc24.09_nemo/gpt3",
    "v4.1/NVIDIA/eos_ngc24.09_nemo/llama2_70b_lora",
    "v4.1/NVIDIA/eos_n8_ngc24.09_nemo/llama2_70b_lora",
    "v5.0/NVIDIA/eos-dfw_n64_ngc25.01_nemo/llama31_405b",
    "v5.0/NVIDIA/eos-dfw_n256_ngc25.01_nemo/llama31_405b",
    "v4.1/NVIDIA/eos_n128_ngc24.09_nemo/llama2_70b_lora",
    "v4.1/Oracle/1536xBM.GPU.H100.8/gpt3",
}


def write_grid(folder: Path, spec: dict, name: str = "grid.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


# ---------------------------------------------------------------------------------------- fast


def test_slug_deterministic_and_readable():
    p = {"mlperf_path": "../data/mlperf/v4.1", "figures_dir": ""}
    s = batch.slugify_run(p, "v4.1/NVIDIA sys/gpt3")
    assert s == batch.slugify_run(dict(reversed(list(p.items()))), "v4.1/NVIDIA sys/gpt3")
    prefix, digest = s.rsplit("-", 1)
    assert prefix == "v4.1-NVIDIA-sys-gpt3"
    assert len(digest) == 10 and all(c in "0123456789abcdef" for c in digest)
    # the hash depends on the parameters only, not on the name
    assert batch.slugify_run(p, "other").endswith(digest)
    assert batch.slugify_run({**p, "figures_dir": "x"}, "v4.1/NVIDIA sys/gpt3") != s
    # fixed value: the slug must not change between Python versions or machines
    assert (
        batch.slugify_run({"a": 1}, "")
        == "1-" + __import__("hashlib").sha256(b'{"a":1}').hexdigest()[:10]
    )
    assert batch.slugify_run({}, "").startswith("run-")


def test_discover_mlperf_finds_every_result_folder():
    found = batch.discover_mlperf(MLPERF)
    assert {f["name"] for f in found} == SYSTEMS
    for f in found:
        assert list(Path(f["mlperf_path"]).glob("result_*.txt"))
    with pytest.raises(FileNotFoundError):
        batch.discover_mlperf(MLPERF / "nowhere")


def test_grid_paths_relative_to_yaml_and_slugs_independent_of_location(tmp_path):
    slugs = []
    for where in ("a", "b/c"):
        data = tmp_path / where / "mlperf"
        shutil.copytree(MLPERF, data)
        g = write_grid(
            tmp_path / where / "grids",
            {
                "notebook": os.path.relpath(NOTEBOOK, tmp_path / where / "grids"),
                "output": "../out",
                "parameters": {"figures_dir": ""},
                "discover": {"kind": "mlperf_results", "path": "../mlperf"},
            },
        )
        grid = batch.load_grid(g)
        assert grid.notebook == NOTEBOOK.resolve()
        assert grid.output == (tmp_path / where / "out").resolve()
        assert {r.name for r in grid.runs} == SYSTEMS
        assert all(r.parameters["mlperf_path"].startswith("../mlperf/") for r in grid.runs)
        slugs.append([r.slug for r in grid.runs])
    assert slugs[0] == slugs[1]
    assert len(set(slugs[0])) == len(SYSTEMS)


def test_unknown_parameter_refused_before_anything_runs(tmp_path, capsys):
    g = write_grid(
        tmp_path,
        {
            "notebook": str(NOTEBOOK),
            "output": "out",
            "runs": [
                {"name": "good", "mlperf_path": str(MLPERF)},
                {"name": "typo", "mlperf_pth": str(MLPERF)},
            ],
        },
    )
    with pytest.raises(batch.GridError) as err:
        batch.load_grid(g)
    msg = str(err.value)
    assert "'typo'" in msg and "'mlperf_pth'" in msg
    assert "known parameters: figures_dir, mlperf_path, results_path" in msg
    # a Grid built by hand is checked by run_batch too, before the output folder is created
    grid = batch.Grid(
        name="x",
        notebook=NOTEBOOK,
        output=tmp_path / "out",
        base=tmp_path,
        runs=[batch.Run("bad", {"nope": 1}, batch.slugify_run({"nope": 1}, "bad"))],
    )
    with pytest.raises(batch.GridError, match="unknown parameter 'nope'"):
        batch.run_batch(grid, progress=False)
    assert not (tmp_path / "out").exists()
    # the command line: one line, exit status 1
    assert batch.main([str(g)]) == 1
    err_line = capsys.readouterr().err.strip()
    assert err_line.startswith("trainperf: error: GridError: run 'typo': unknown parameter")
    assert "\n" not in err_line


@pytest.mark.parametrize(
    "spec, match",
    [
        ({"runs": [{"results_path": "x.parquet"}]}, "set by the batch"),
        ({"runs": [{"mlperf_path": "a"}, {"name": "same", "mlperf_path": "a"}]}, "same parameters"),
        ({"runs": [{"mlperf_path": "a"}], "colour": 1}, "unknown key"),
        ({}, "no runs"),
        ({"runs": [{"mlperf_path": "a"}], "executor": {"kind": "pbs"}}, "executor kind 'pbs'"),
        ({"runs": [{"mlperf_path": "a"}], "workers": 0}, "positive integer"),
    ],
)
def test_bad_grids_refused(tmp_path, spec, match):
    g = write_grid(tmp_path, {"notebook": str(NOTEBOOK), "output": "out", **spec})
    with pytest.raises(batch.GridError, match=match):
        batch.load_grid(g)


def test_example_grid_loads():
    grid = batch.load_grid(ROOT / "grids" / "mlperf_systems.yaml")
    assert grid.notebook == NOTEBOOK.resolve()
    assert {r.name for r in grid.runs} == SYSTEMS
    assert all(r.parameters["figures_dir"] == "" for r in grid.runs)
    assert grid.output == (ROOT / "_output" / "batch" / "mlperf_systems").resolve()


def test_cli_hookup_keeps_top_level_debug():
    p = argparse.ArgumentParser()
    p.add_argument("--debug", action="store_true")
    sub = p.add_subparsers(dest="command")
    batch.add_batch_arguments(sub.add_parser("batch"))
    assert p.parse_args(["--debug", "batch", "g.yaml"]).debug is True
    assert p.parse_args(["batch", "g.yaml", "--debug", "--workers", "3"]).workers == 3
    assert p.parse_args(["batch", "g.yaml"]).debug is False


# ---------------------------------------------------------------------------------------- slow


#: The folders of :func:`first_batch`: one of each benchmark (3, 10 and 3 result files). The
#: notebook over every folder of SYSTEMS is the main job's own batch, checked by
#: :func:`test_the_main_jobs_batch_ran_every_bundled_folder` (run once in the suite, not twice).
SUBSET = {
    "v3.1/NVIDIA/eos_n64_ngc23.09_nemo/gpt3",
    "v4.1/NVIDIA/eos_n8_ngc24.09_nemo/llama2_70b_lora",
    "v5.0/NVIDIA/eos-dfw_n64_ngc25.01_nemo/llama31_405b",
}


def _check_runs(ok: pl.DataFrame, names: set[str]) -> None:
    """The successful runs of a batch of notebooks/mlperf_runs.ipynb over the bundled folders
    ``names``: each run's results file holds one row per result file of its folder."""
    assert set(ok["name"]) == names
    for rec in ok.iter_rows(named=True):
        nb = json.loads(Path(rec["notebook"]).read_text())
        assert nb["metadata"]["papermill"]["parameters"]["results_path"] == rec["results"]
        runs = pl.read_parquet(rec["results"])
        assert runs.height == rec["result_rows"] == rec["n_success"] == rec["time_to_train_n"]
        assert rec["time_to_train_median_min"] == pytest.approx(runs["time_to_train_min"].median())
        assert json.loads(rec["parameters"])["mlperf_path"] == rec["mlperf_path"]
        # LoRA folders hold 10 result files each (1, 8 and 128 nodes), the others 3
        n_files = 10 if rec["name"].endswith("/llama2_70b_lora") else 3
        assert rec["result_rows"] == n_files, rec["name"]


@pytest.mark.slow
def test_the_main_jobs_batch_ran_every_bundled_folder(main_job):
    # the main job's batch (grids/mlperf_systems.yaml) is the notebook over every folder of SYSTEMS
    tmp, summary = main_job
    nb_path = next(p for p in summary.notebooks if Path(p).stem == "eos_comparison")
    params = json.loads(Path(nb_path).read_text())["metadata"]["papermill"]["parameters"]
    runs = pl.read_parquet(params["batch_summary_path"])
    assert runs.height == len(SYSTEMS)
    assert set(runs["status"]) <= {"success", "skipped"}  # skipped: reused from the cache
    _check_runs(runs, SYSTEMS)
    assert runs.filter(pl.col("name").str.ends_with("/llama2_70b_lora")).height == 3


@pytest.fixture(scope="module")
def first_batch(tmp_path_factory):
    """The bundled MLPerf folders of SUBSET (one run each, discovered) plus one broken run,
    executed with 2 workers."""
    tmp = tmp_path_factory.mktemp("batch")
    for name in SUBSET:
        rnd, submitter, system, bench = name.split("/")
        src, dst = MLPERF / rnd / submitter, tmp / "mlperf" / rnd / submitter
        shutil.copytree(src / "results" / system / bench, dst / "results" / system / bench)
        shutil.copytree(src / "systems", dst / "systems", dirs_exist_ok=True)
    (tmp / "empty").mkdir()  # no result file: load_results raises FileNotFoundError
    spec = {
        "notebook": os.path.relpath(NOTEBOOK, tmp / "grids"),
        "output": "../out",
        "workers": 2,
        "parameters": {"figures_dir": ""},
        "discover": {"kind": "mlperf_results", "path": "../mlperf", "parameter": "mlperf_path"},
        "runs": [{"name": "broken", "mlperf_path": "../empty"}],
    }
    g = write_grid(tmp / "grids", spec)
    summary = batch.run_batch(batch.load_grid(g), workers=2, progress=False)
    return tmp, g, summary


@pytest.mark.slow
def test_batch_runs_every_folder_and_records_the_failure(first_batch):
    tmp, g, summary = first_batch
    out = tmp / "out"
    assert summary.height == len(SUBSET) + 1
    assert summary.columns[:5] == ["run", "name", "parameters", "figures_dir", "mlperf_path"]
    assert summary.schema["duration_s"] == pl.Float64
    assert summary.schema["time_to_train_median_min"] == pl.Float64
    ok = summary.filter(pl.col("status") == "success")
    bad = summary.filter(pl.col("status") == "failed").row(0, named=True)
    assert bad["name"] == "broken"
    assert bad["error"].startswith("FileNotFoundError: ")
    assert "no result_*.txt files" in bad["error"]
    assert bad["notebook"].endswith(".failed.ipynb") and bad["results"] is None
    _check_runs(ok, SUBSET)
    # summary on disk, Parquet and CSV; no temporary file left anywhere
    assert pl.read_parquet(out / "summary.parquet").equals(summary)
    assert pl.read_csv(out / "summary.csv")["run"].to_list() == summary["run"].to_list()
    assert not [p for p in out.rglob("*") if ".tmp" in p.name]
    # batch runs export no figures
    assert not (tmp / "figures").exists()


@pytest.mark.slow
def test_resume_after_interruption_runs_only_what_is_missing(first_batch):
    tmp, g, summary = first_batch
    grid = batch.load_grid(g)
    grid.runs = [r for r in grid.runs if r.name != "broken"]  # failed runs are always run again
    runs_dir = grid.runs_dir
    victim = grid.runs[2].slug
    # as if the batch had been killed while this run was executing: no results, no marker, a stray temp
    (runs_dir / f"{victim}.parquet").unlink()
    (runs_dir / f"{victim}.json").unlink()
    stray = runs_dir / f".{victim}.ipynb.abcd1234.tmp.ipynb"
    stray.write_text("{half a notebook")
    before = {r.slug: (runs_dir / f"{r.slug}.ipynb").stat().st_mtime_ns for r in grid.runs}
    again = batch.run_batch(grid, workers=2, progress=False)
    status = dict(zip(again["run"], again["status"], strict=True))
    assert status.pop(victim) == "success"
    assert set(status.values()) == {"skipped"}
    assert not stray.exists()
    for r in grid.runs:
        changed = (runs_dir / f"{r.slug}.ipynb").stat().st_mtime_ns != before[r.slug]
        assert changed == (r.slug == victim)
    # skipped rows keep their key numbers and the earlier duration
    old = summary.filter(pl.col("run") != victim).drop("status")
    new = again.filter(pl.col("run") != victim).drop("status")
    assert new.equals(old.filter(pl.col("run").is_in(new["run"].to_list())))


@pytest.mark.slow
def test_cli_on_a_finished_grid_skips_everything(first_batch, capsys):
    tmp, g, _ = first_batch
    spec = yaml.safe_load(g.read_text())
    del spec["runs"]  # same output, the discovered runs only: all done
    g2 = write_grid(g.parent, spec, "done.yaml")
    assert batch.main([str(g2), "--workers", "2"]) == 0
    assert f"0 succeeded, {len(SUBSET)} skipped (done before), 0 failed" in capsys.readouterr().out


@pytest.mark.slow
def test_submitit_path_with_local_jobs(tmp_path):
    pytest.importorskip("submitit", reason="submitit not installed (needed for executor: slurm)")
    g = write_grid(
        tmp_path,
        {
            "notebook": str(NOTEBOOK),
            "output": "out",
            "parameters": {"figures_dir": ""},
            "runs": [
                {"name": "one", "mlperf_path": str(MLPERF / "v3.1")},
                {"name": "none", "mlperf_path": str(tmp_path)},
            ],
            "executor": {"kind": "submitit_local", "timeout_min": 5},
        },
    )
    summary = batch.run_batch(batch.load_grid(g), progress=False)
    assert summary["status"].to_list() == ["success", "failed"]
    # v3.1: eos_n64 gpt3 3 + eos_n96 gpt3 3 result files (data/mlperf/SOURCES.md); one round is
    # enough for the executor's path (v4.1's 39 files cost the run, not the path, more time)
    assert summary["result_rows"][0] == 6
    assert summary["error"][1].startswith("FileNotFoundError")


@pytest.mark.slow
@pytest.mark.slurm
def test_slurm_executor_runs_jobs_on_a_real_cluster(tmp_path, slurm_cluster):  # noqa: F811
    """Two runs as a submitit job array on the one-node cluster of tests/slurm_cluster.py (or on the
    external cluster named by TRAINPERF_SLURM_PARTITION); submitit follows them with sacct."""
    pytest.importorskip("submitit", reason="submitit not installed (needed for executor: slurm)")
    executor = {"kind": "slurm", "timeout_min": 10, "partition": slurm_cluster.partition}
    g = write_grid(
        tmp_path,
        {
            "notebook": str(NOTEBOOK),
            "output": "out",
            "parameters": {"figures_dir": ""},
            "discover": {"path": str(MLPERF / "v3.1")},  # eos_n64 and eos_n96: 2 runs
            "executor": executor,
        },
    )
    summary = batch.run_batch(batch.load_grid(g), progress=False)
    assert summary["status"].to_list() == ["success", "success"], summary["error"].to_list()
    assert sorted(summary["result_rows"].to_list()) == [3, 3]  # 3 GPT-3 result files each
    assert (tmp_path / "out" / "submitit").is_dir()


def test_yaml_syntax_error_names_file_and_line(tmp_path):
    grid = tmp_path / "bad.yaml"
    grid.write_text("notebook: nb.ipynb\noutput: out\nparameters:\n  a: 1\n   b: [2\n")
    with pytest.raises(batch.GridError, match=rf"{re.escape(str(grid))}:5:\d+: not valid YAML"):
        batch.load_grid(grid)


def test_workers_must_be_positive(capsys):
    with pytest.raises(SystemExit):
        batch.main(["grid.yaml", "--workers", "-3"])
    assert "expected a positive integer" in capsys.readouterr().err


@pytest.mark.slow
def test_sigterm_stops_workers_and_records_what_finished(tmp_path):
    spec = {
        "notebook": str(NOTEBOOK),
        "output": str(tmp_path / "out"),
        "workers": 2,
        "parameters": {"figures_dir": ""},
        "discover": {"kind": "mlperf_results", "path": str(MLPERF), "parameter": "mlperf_path"},
    }
    grid = write_grid(tmp_path, spec)
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainperf.report.batch", str(grid), "--no-progress"],
        stderr=subprocess.PIPE,
        text=True,
    )
    children: set[int] = set()
    deadline = time.monotonic() + 600  # a bound for a busy machine, never a measurement
    while time.monotonic() < deadline and len(children) < 2:  # wait until both workers run
        time.sleep(0.5)
        out = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout
        children = {int(x) for x in out.split()}
    assert children, "the batch started no worker process"
    proc.send_signal(signal.SIGTERM)  # what scancel or a Slurm time limit sends
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "trainperf: interrupted"

    def alive_now():
        out = []
        for pid in children:
            try:
                if open(f"/proc/{pid}/stat").read().split()[2] != "Z":
                    out.append(pid)
            except (OSError, IndexError):
                pass
        return out

    deadline = time.monotonic() + 600  # wait for the condition, bounded
    while alive_now() and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = alive_now()
    assert alive == [], "worker processes left running after SIGTERM"
    summary = pl.read_csv(tmp_path / "out" / "summary.csv")
    assert summary.height == len(SYSTEMS) and "interrupted" in summary["status"].to_list()


def test_exit_process_ends_despite_a_thread_that_never_returns():
    # the interpreter's normal exit joins non-daemon threads (and concurrent.futures' manager
    # thread): one blocked for ever hangs it, as a SIGTERM-stopped batch once did after printing
    # "trainperf: interrupted". exit_process flushes the output and ends the process regardless.
    code = (
        "import threading\n"
        "from trainperf.report.schedule import exit_process\n"
        "threading.Thread(target=threading.Event().wait).start()  # never returns\n"
        "print('recorded', flush=False)\n"
        "exit_process(130)\n"
    )
    # the timeout only bounds a hang on a busy machine; it measures nothing
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (out.returncode, out.stdout) == (130, "recorded\n")
