"""``mlperf: /`` (or ``trainperf runs /``) is refused before any walk of the file system (issue 40):
the walk functions are replaced by ones that fail, so a refusal that walked first would show."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trainperf import mlperf
from trainperf.config import load_config
from trainperf.errors import ConfigError, InputError
from trainperf.report.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def no_walk(monkeypatch):
    def walked(*a, **k):
        raise AssertionError("the file system was walked")

    monkeypatch.setattr(os, "walk", walked)
    monkeypatch.setattr(Path, "rglob", walked)
    monkeypatch.setattr(Path, "glob", walked)


@pytest.mark.parametrize("folder", ["/", "/proc", "/sys/class", "/dev"])
def test_find_result_files_refuses_a_root_or_system_folder(no_walk, folder):
    with pytest.raises(InputError, match="not an MLPerf results folder"):
        mlperf.find_result_files(folder)


def test_config_mlperf_root_is_refused_before_any_walk(tmp_path, monkeypatch):
    demo = (ROOT / "configs" / "sakuraone.yaml").read_text().replace("../data", str(ROOT / "data"))
    p = tmp_path / "c.yaml"
    p.write_text(demo + "mlperf: /\n")

    def walked(*a, **k):
        raise AssertionError("the file system was walked")

    with pytest.raises(ConfigError) as e:
        monkeypatch.setattr(os, "walk", walked)
        monkeypatch.setattr(Path, "rglob", walked)
        load_config(p)
    assert "mlperf: /: a file system root, not an MLPerf results folder" in str(e.value)


def test_runs_command_refuses_root_in_one_line(no_walk, capsys):
    assert main(["runs", "/"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "/: a file system root" in err


def test_a_results_folder_is_still_found():
    files = mlperf.find_result_files(ROOT / "data" / "mlperf")
    assert files and all(f.name.startswith("result_") for f in files)
