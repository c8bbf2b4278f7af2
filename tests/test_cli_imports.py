"""The command line imports a sub-command's machinery only when that sub-command runs (issue 41).

``trainperf --help`` and ``trainperf init`` (which only writes a template) must not import polars,
papermill, nbformat, jupyter_client, jsonschema or the batch package; a config error is told before
the main job's imports (papermill). Checked on ``sys.modules`` of a fresh interpreter after the
command ran, never by timing.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from trainperf.report import cli

HEAVY = (
    "polars",
    "papermill",
    "nbformat",
    "jupyter_client",
    "jsonschema",
    "trainperf.report.batch",
)


def _modules_after(argv: list[str], cwd) -> tuple[int, list[str], str]:
    """Run ``trainperf ARGV`` in a fresh interpreter; (exit status, HEAVY modules loaded, stderr)."""
    code = (
        "import json, sys\n"
        "from trainperf.report.cli import main\n"
        "try:\n"
        f"    rc = main({argv!r})\n"
        "except SystemExit as e:\n"
        "    rc = e.code\n"
        f"heavy = {HEAVY!r}\n"
        "got = sorted(m for m in sys.modules if m in heavy or m.startswith(tuple(h + '.' for h in heavy)))\n"
        "print(json.dumps({'rc': rc, 'heavy': sorted({m.split('.')[0] if not m.startswith('trainperf') "
        "else 'trainperf.report.batch' for m in got})}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=cwd
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    return got["rc"], got["heavy"], out.stderr


def test_help_imports_no_sub_command(tmp_path):
    rc, heavy, _ = _modules_after(["--help"], tmp_path)
    assert (rc, heavy) == (0, [])


def test_init_imports_neither_polars_nor_papermill(tmp_path):
    rc, heavy, _ = _modules_after(["init", str(tmp_path / "cluster.yaml")], tmp_path)
    assert (rc, heavy) == (0, [])
    # and it did its work: the template is there
    assert "cluster" in (tmp_path / "cluster.yaml").read_text(encoding="utf-8")


def test_batch_help_loads_the_batch_arguments(tmp_path):
    # the batch sub-command's arguments come from its module, imported when it is chosen
    out = subprocess.run(
        [sys.executable, "-m", "trainperf", "batch", "--help"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert out.returncode == 0
    assert "--executor" in out.stdout and "grid" in out.stdout


@pytest.mark.parametrize("command", ["report", "compare"])
def test_config_error_is_told_before_the_jobs_imports(command, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("cluster:\n  name: x\nno_such_key: 1\n", encoding="utf-8")
    rc, heavy, err = _modules_after([command, "--config", str(bad)], tmp_path)
    assert rc == 1
    assert err.startswith("trainperf: error: ") and len(err.strip().splitlines()) == 1
    assert "papermill" not in heavy and "nbformat" not in heavy


HELLO = """
import sys

def add_arguments(parser):
    parser.add_argument("--name", required=True)

def run(args):
    print(f"hello {args.name}")
    return 7
"""


def test_a_lazy_command_is_one_line(tmp_path, monkeypatch, capsys):
    # a sub-command's module defines add_arguments(parser) and run(args); one LazyCommand line
    # adds it, and its module is imported only when it runs
    (tmp_path / "hello_cmd_i41.py").write_text(HELLO, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(
        cli,
        "LAZY_COMMANDS",
        (*cli.LAZY_COMMANDS, cli.LazyCommand("hello", "greet", "hello_cmd_i41")),
    )
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "greet" in capsys.readouterr().out
    assert "hello_cmd_i41" not in sys.modules
    assert cli.main(["hello", "--name", "x"]) == 7
    assert capsys.readouterr().out == "hello x\n"
    monkeypatch.delitem(sys.modules, "hello_cmd_i41")
