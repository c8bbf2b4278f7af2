"""scripts/compile_bytecode.py (run by ``make env``): the modules a process imported get a ``.pyc``
even where ``PYTHONDONTWRITEBYTECODE`` is set; modules it did not import, and sources whose
``.pyc`` is current, are left alone."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from helpers import ROOT

SCRIPT = ROOT / "scripts" / "compile_bytecode.py"


def _cache(path: Path) -> Path:
    return Path(importlib.util.cache_from_source(str(path)))


def _run(tmp_path: Path, *modules: str) -> str:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(tmp_path)}
    env.pop("PYTHONPYCACHEPREFIX", None)
    res = subprocess.run(
        [sys.executable, str(SCRIPT), *modules],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert res.stderr == ""
    return res.stdout


def test_imported_modules_get_bytecode_and_others_do_not(tmp_path):
    pkg = tmp_path / "tp_bytecode_demo"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "used.py").write_text("from tp_bytecode_demo import helper\nX = helper.Y + 1\n")
    (pkg / "helper.py").write_text("Y = 41\n")
    (pkg / "unused.py").write_text("Z = 0\n")

    out = _run(tmp_path, "tp_bytecode_demo.used")

    # the package, the module named and the module it imports: 3 files; never the unused one
    assert out.strip() == "compile_bytecode: 3 modules compiled to bytecode"
    for name in ("__init__.py", "used.py", "helper.py"):
        assert _cache(pkg / name).is_file(), name
    assert not _cache(pkg / "unused.py").exists()
    # the written bytecode is what Python itself would load: importing it gives the same value
    res = subprocess.run(
        [sys.executable, "-c", "import tp_bytecode_demo.used as u; print(u.X)"],
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert res.stdout.strip() == "42"

    # a second run finds every imported module current: nothing compiled again
    assert _run(tmp_path, "tp_bytecode_demo.used").strip() == (
        "compile_bytecode: 0 modules compiled to bytecode"
    )


def test_a_module_that_cannot_be_imported_is_skipped(tmp_path):
    (tmp_path / "tp_bytecode_ok.py").write_text("A = 1\n")
    (tmp_path / "tp_bytecode_broken.py").write_text("raise RuntimeError('no GPU here')\n")

    out = _run(tmp_path, "tp_bytecode_broken", "tp_bytecode_ok")

    assert out.strip() == "compile_bytecode: 1 module compiled to bytecode"
    assert _cache(tmp_path / "tp_bytecode_ok.py").is_file()
