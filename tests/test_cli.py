"""Command line: one clear line on failure, the traceback only with --debug."""

from __future__ import annotations

import subprocess
import sys

from conftest import MLPERF


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
