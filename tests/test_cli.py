"""Command line: one clear line on failure, the traceback only with --debug."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import MLPERF

from trainperf.report import cli, job
from trainperf.report.cli import parse_overrides


def _run(*args):
    return subprocess.run(
        [sys.executable, "-m", "trainperf", *args], capture_output=True, text=True, timeout=300
    )


def test_failure_is_one_line():
    out = _run("runs", "/nonexistent/results")
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(
        "trainperf: error: FileNotFoundError: /nonexistent/results: no such file or folder"
    )
    assert "--debug" in lines[0]


def test_debug_shows_traceback():
    out = _run("--debug", "runs", "/nonexistent/results")
    assert out.returncode == 1 and "Traceback (most recent call last)" in out.stderr


def test_runs_command_prints_scores():
    out = _run("runs", str(MLPERF / "v4.1" / "NVIDIA" / "results" / "eos_n8_ngc24.09_nemo"))
    assert out.returncode == 0, out.stderr
    # olympic mean of the 10 llama2_70b_lora runs, published as 4.573 minutes
    assert "4.573" in out.stdout and "llama2_70b_lora" in out.stdout


def test_parse_overrides(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sacct.txt").write_text("x")
    got = parse_overrides(
        [
            "slurm_jobs.dump_paths=[sacct.txt]",
            "slurm_jobs.synthetic=false",
            "telemetry.telemetry_source=http://prom:9090",
        ]
    )
    assert got == {
        "slurm_jobs": {"dump_paths": [str(tmp_path / "sacct.txt")], "synthetic": False},
        "telemetry": {"telemetry_source": "http://prom:9090"},
    }
    with pytest.raises(ValueError, match="expected NOTEBOOK.PARAM=VALUE"):
        parse_overrides(["nodot=1"])


def test_report_refuses_unknown_override_before_running():
    out = _run("report", "-p", "telemetry.no_such_param=1")
    assert out.returncode == 1
    assert "does not declare parameter(s) no_such_param; it declares:" in out.stderr
    assert "executing" not in out.stdout  # nothing ran


def test_debug_flag_after_the_subcommand():
    out = _run("runs", "/nonexistent/results", "--debug")
    assert out.returncode == 1 and "Traceback (most recent call last)" in out.stderr


@pytest.mark.parametrize("value", ["0", "-2", "two"])
def test_report_jobs_must_be_a_positive_whole_number(value, tmp_path):
    out = _run("report", "--out", str(tmp_path / "o"), "--jobs", value)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1] == (
        "trainperf report: error: argument -j/--jobs: expected a whole number of 1 or more, "
        f"got '{value}'"
    )
    assert not (tmp_path / "o").exists()  # refused before anything ran


def test_report_jobs_reaches_the_job(monkeypatch):
    seen = {}
    monkeypatch.setattr(job, "run_report", lambda **kw: seen.update(kw) or job.ReportSummary())
    cli.main(["report", "--jobs", "3"])
    assert seen["jobs"] == 3
