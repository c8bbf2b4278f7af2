"""scripts/make_env.sh (``make env``): the venv with uv, pip as the fallback, then the bytecode.

Run on a tiny project (no dependencies), so that what is tested is the script's path through
venv, uv and pip, not the download of the project's packages. Needs PyPI (setuptools is fetched
to build the project), like ``make env`` itself."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
from helpers import ROOT

pytestmark = pytest.mark.slow


def _project(tmp_path):
    proj = tmp_path / "proj"
    (proj / "scripts").mkdir(parents=True)
    (proj / "src" / "tinyproj").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "make_env.sh", proj / "scripts")
    shutil.copy(ROOT / "scripts" / "compile_bytecode.py", proj / "scripts")
    (proj / "src" / "tinyproj" / "__init__.py").write_text("VALUE = 7\n")
    (proj / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "tinyproj"\nversion = "0.1"\n'
        "[project.optional-dependencies]\ndev = []\n"
        '[tool.setuptools.packages.find]\nwhere = ["src"]\n'
    )
    return proj


def _make_env(proj, **env):
    full = {**os.environ, "PYTHON": sys.executable, **env}
    full.pop("VIRTUAL_ENV", None)
    return subprocess.run(
        ["sh", "scripts/make_env.sh", ".venv"],
        cwd=proj,
        env=full,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _works(proj):
    py = proj / ".venv" / "bin" / "python"
    out = subprocess.run(
        [str(py), "-c", "import tinyproj, pip; print(tinyproj.VALUE)"],
        capture_output=True,
        text=True,
        cwd=proj,
    )
    return out.stdout.strip() == "7"


@pytest.fixture(scope="module")
def fresh_env(tmp_path_factory):
    """The tiny project after its first ``make env`` (the fast path): (project, result, uv cache).
    Read by the fast path's test, then run again by the existing environment's (what it checks
    of the first run holds after the second: the project imports, uv is in the venv)."""
    tmp = tmp_path_factory.mktemp("make-env")
    proj, cache = _project(tmp), str(tmp / "uv-cache")
    return proj, _make_env(proj, UV_CACHE_DIR=cache), cache


def test_the_fast_path_installs_with_uv(fresh_env):
    proj, res, _ = fresh_env
    assert res.returncode == 0, res.stderr
    # one line per stage as it starts, the bytecode's count, the total: no fallback, no warning
    out = res.stdout.strip().splitlines()
    assert out[:4] == [
        f"env: creating the virtual environment .venv ({sys.executable} -m venv)",
        "env: installing uv into .venv",
        "env: installing trainperf (editable) and its [dev] packages",
        "env: compiling the bytecode of what the report imports",
    ], out
    assert out[4].startswith("compile_bytecode: ") and len(out) == 6, out
    assert re.fullmatch(r"env: ready in \d+ s \(\.venv\)", out[5]), out
    assert "uv not available" not in res.stdout and res.stderr == ""
    assert _works(proj)
    assert list((proj / ".venv").glob("lib/python*/site-packages/uv"))  # uv came with it


def test_uv_failing_falls_back_to_pip_and_says_so(tmp_path):
    proj = _project(tmp_path)
    # an index nothing answers on: uv cannot install, pip (its own configuration) can
    res = _make_env(
        proj, UV_INDEX_URL="http://127.0.0.1:9/simple", UV_CACHE_DIR=str(tmp_path / "c")
    )
    assert res.returncode == 0, res.stderr
    assert "env: uv not available or failed; installing with pip" in res.stdout.splitlines()
    assert _works(proj)


def test_an_existing_environment_says_only_the_stages_it_runs(fresh_env):
    # `make env` after pyproject.toml changed: the venv and its uv are there already
    proj, first, cache = fresh_env
    assert first.returncode == 0, first.stderr
    res = _make_env(proj, UV_CACHE_DIR=cache)
    assert res.returncode == 0, res.stderr
    out = res.stdout.strip().splitlines()
    assert [ln for ln in out if ln.startswith("env: ") and "ready in" not in ln] == [
        "env: installing trainperf (editable) and its [dev] packages",
        "env: compiling the bytecode of what the report imports",
    ], out
    assert _works(proj)
