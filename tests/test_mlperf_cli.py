"""``trainperf runs PATH --format table|csv|json`` and ``trainperf --version`` (issue 14, CLI for scripts)."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import tomllib

import polars as pl
import pytest
from helpers import MLPERF, ROOT

from trainperf.mlperf.loader import RUN_SCHEMA


def _run(*args):
    return subprocess.run(
        [sys.executable, "-m", "trainperf", *args], capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def eos64(tmp_path_factory):
    """A copy of the bundled v4.1 Eos 64-node GPT-3 results (3 runs) and its systems JSON."""
    dst = tmp_path_factory.mktemp("runs") / "v4.1" / "NVIDIA"
    (dst / "results").mkdir(parents=True)
    shutil.copytree(MLPERF / "v4.1/NVIDIA/systems", dst / "systems")
    shutil.copytree(
        MLPERF / "v4.1/NVIDIA/results/eos_n64_ngc24.09_nemo", dst / "results/eos_n64_ngc24.09_nemo"
    )
    return dst.parent.parent


# result_0.txt: run_start 1727896646904 (line 600), run_stop 1727899633389 (line 1082)
TTT_0 = (1727899633389 - 1727896646904) / 60000  # 49.77475 min


def test_version_is_the_package_version():
    out = _run("--version")
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert out.returncode == 0 and out.stdout.strip() == f"trainperf {version}"


def test_table_is_for_people(eos64):
    out = _run("runs", str(eos64))
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "Time to train (min)" in text and "Score (min)" in text and "Scores" in text
    assert f"{TTT_0:.3f}" in text and "49.775" in text  # rounded to 3 decimals
    assert str(TTT_0) not in text  # not full precision
    assert "…" not in text and "shape:" not in text  # nothing cut off, no polars frame
    assert not any(
        line.split() and line.split()[0] in ("str", "f64", "i64") for line in text.splitlines()
    )
    # one row per run: the three result files
    assert sum(line.count("result_") for line in text.splitlines()) == 3


def test_csv_is_machine_readable_full_precision(eos64):
    out = _run("runs", str(eos64), "--format", "csv")
    assert out.returncode == 0, out.stderr
    runs = pl.read_csv(io.StringIO(out.stdout))
    assert runs.columns == list(RUN_SCHEMA)
    r0 = runs.filter(pl.col("result_file").str.ends_with("result_0.txt")).row(0, named=True)
    assert r0["time_to_train_min"] == TTT_0  # exactly, all digits
    assert r0["run_start"] == "2024-10-02T19:17:26.904Z"
    scores = pl.read_csv(
        io.StringIO(_run("runs", str(eos64), "--format", "csv", "--table", "scores").stdout)
    )
    assert scores["score_min"][0] == pytest.approx(49.795, abs=0.0006)  # published, 3 decimals


def test_json_has_runs_scores_quality(eos64):
    out = _run("runs", str(eos64), "--format", "json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert set(doc) == {"trainperf_version", "path", "runs", "scores", "quality"}
    assert len(doc["runs"]) == 3 and doc["quality"] == []
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert doc["trainperf_version"] == version and doc["path"] == str(eos64)
    times = sorted(r["time_to_train_min"] for r in doc["runs"])
    assert TTT_0 in times
    # olympic mean of 3 runs = the median
    assert doc["scores"][0]["score_min"] == times[1]


def test_one_damaged_file_still_prints_everything(eos64, tmp_path):
    tree = tmp_path / "t"
    shutil.copytree(eos64, tree)
    bad = tree / "v4.1/NVIDIA/results/eos_n64_ngc24.09_nemo/gpt3/result_3.txt"
    bad.write_bytes(b"\x00\x01 not a log")
    out = _run("runs", str(tree))
    assert out.returncode == 0, out.stderr
    assert "parse_error" in out.stdout and "Data quality" in out.stdout
    assert "no run_start" in out.stdout
    assert f"warning: {bad}" in out.stderr
    # the three good runs still score (4 files, 1 failed: the failure is the dropped slowest)
    doc = json.loads(_run("runs", str(tree), "--format", "json").stdout)
    s = doc["scores"][0]
    assert (s["n_runs"], s["n_valid_runs"]) == (4, 3) and s["score_min"] is not None


def test_unknown_format_is_refused():
    out = _run("runs", str(MLPERF), "--format", "xml")
    assert out.returncode == 2 and "invalid choice" in out.stderr


def test_one_result_file_is_singular(tmp_path):
    src = MLPERF / "v4.1/NVIDIA/results/eos_n64_ngc24.09_nemo/gpt3/result_0.txt"
    one = tmp_path / "one"
    one.mkdir()
    shutil.copy(src, one / "result_0.txt")
    out = _run("runs", str(one))
    assert out.returncode == 0, out.stderr
    assert "(1 result file)" in out.stdout.splitlines()[0]
