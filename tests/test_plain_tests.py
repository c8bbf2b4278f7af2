"""scripts/plain_tests.sh: the tests run with every optional component hidden (the CI's check that
no test passes only where a component is installed), and conftest's ``component`` marks."""

from __future__ import annotations

import subprocess
import sys

from conftest import COMPONENT_FIXTURES  # conftest's own grouping, which this file checks
from helpers import ROOT

SCRIPT = ROOT / "scripts" / "plain_tests.sh"

# run by the script's pytest: what a test sees there, in its own process and in a child's
PROBE = """
import importlib.util, shutil, subprocess, sys

def test_every_component_is_hidden():
    fonts = subprocess.run(["fc-list", ":lang=ja"], capture_output=True, text=True).stdout
    assert fonts == ""
    for exe in ("chromium", "quarto", "prometheus", "promtool", "sbatch", "slurmctld", "munged",
                "mariadbd"):
        assert shutil.which(exe) is None, exe
    assert shutil.which("sh") is not None  # the rest of PATH is there
    for mod in ("torch", "hta"):
        assert importlib.util.find_spec(mod) is None, mod
        assert mod not in sys.modules  # scipy looks there for torch
    import scipy.stats  # noqa: F401 (it imports with torch hidden)
    child = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True, text=True)
    assert "ModuleNotFoundError" in child.stderr  # a kernel started by a test gets it too
"""


def _plain(*args, **env):
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/local/bin:/usr/bin:/bin", "PYTHON": sys.executable, **env},
    )


def test_the_plain_run_hides_every_component_and_fails_with_a_failing_test(tmp_path):
    (tmp_path / "test_probe.py").write_text(PROBE)
    (tmp_path / "test_fails.py").write_text("def test_x():\n    assert False\n")
    res = _plain(str(tmp_path), "-p", "no:cacheprovider", "-q")
    assert res.stdout.splitlines()[0] == (
        "plain tests: no CJK font, no chromium/quarto/prometheus/Slurm/munge/MariaDB on PATH, "
        "no torch,hta importable"
    )
    assert "1 failed, 1 passed" in res.stdout, res.stdout + res.stderr
    assert "test_fails.py::test_x" in res.stdout and res.returncode == 1


def test_no_test_selected_is_not_a_failure_for_a_given_selection(tmp_path):
    (tmp_path / "test_none.py").write_text("X = 1\n")
    res = _plain(str(tmp_path / "test_none.py"), "-p", "no:cacheprovider", "-q")
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.strip().splitlines()[-1].startswith("plain tests: no test selected by: ")


def test_the_component_tests_are_marked_by_fixture_and_by_module():
    # the plain run's default selection: tests using a component fixture (test_charts reads the
    # main job's notebooks), and every test of a component module (test_rerun runs the main job)
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--co", "-m", "component", "-p", "no:cacheprovider",
         "tests/test_charts.py", "tests/test_rerun.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    marked = {ln for ln in out.stdout.splitlines() if "::" in ln}
    assert "main_job" in COMPONENT_FIXTURES
    # of test_charts only the one test reading the main job's outputs
    assert sorted(n for n in marked if n.startswith("tests/test_charts.py::")) == [
        "tests/test_charts.py::test_executed_notebooks_have_no_html_or_javascript_chart_outputs"
    ]
    assert "tests/test_rerun.py::test_url_inputs_are_never_skipped" in marked
