"""Every public name in one place (API.md, generated from ``__all__`` by scripts/api_index.py),
and each package's ``__init__`` only a face: it re-exports, it holds no logic."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
from pathlib import Path

import pytest
from helpers import ROOT

import trainperf.dcgm
import trainperf.telemetry

SRC = ROOT / "src"
_spec = importlib.util.spec_from_file_location("api_index", ROOT / "scripts" / "api_index.py")
api_index = sys.modules["api_index"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(api_index)

INITS = sorted((SRC / "trainperf").rglob("__init__.py"))


def _package(path: Path) -> str:
    return ".".join(path.relative_to(SRC).parent.parts)


def _typing_imports(s: ast.stmt) -> bool:
    """``if typing.TYPE_CHECKING:`` holding imports only."""
    return (
        isinstance(s, ast.If)
        and ast.unparse(s.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
        and not s.orelse
        and all(isinstance(b, (ast.Import, ast.ImportFrom)) for b in s.body)
    )


def _not_a_face(tree: ast.Module) -> list[str]:
    """The statements of an ``__init__`` that are neither its docstring, an import, ``__all__``
    (or another dunder such as ``__version__``) with its docstring, nor the deprecation
    ``__getattr__`` (with the private tables it reads)."""
    getattr_names = {
        n.id
        for s in tree.body
        if isinstance(s, ast.FunctionDef) and s.name == "__getattr__"
        for n in ast.walk(s)
        if isinstance(n, ast.Name)
    }
    bad = []
    for s in tree.body:
        if isinstance(s, (ast.Import, ast.ImportFrom)):
            continue
        if _typing_imports(s):
            continue  # the names a face imports at first use (PEP 562), for type checkers
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant):
            continue  # the module's docstring or an attribute's
        if isinstance(s, ast.FunctionDef) and s.name in ("__getattr__", "__dir__"):
            continue
        if isinstance(s, (ast.Assign, ast.AnnAssign)):
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            if len(names) == len(targets) and all(
                (n.startswith("__") and n.endswith("__")) or n in getattr_names for n in names
            ):
                continue
        bad.append(f"line {s.lineno}: {ast.unparse(s).splitlines()[0][:80]}")
    return bad


def test_api_md_lists_every_public_name_as_the_source_has_it():
    # regenerate with: python scripts/api_index.py --write
    assert (ROOT / "API.md").read_text(encoding="utf-8") == api_index.render()


def test_api_md_has_the_faces_and_the_modules_names():
    text = (ROOT / "API.md").read_text(encoding="utf-8")
    # a face's re-export under the package, with the module that defines it
    mlperf = text.split("\n## `trainperf.mlperf`\n", 1)[1].split("\n## ", 1)[0]
    assert "| `load_results` | function |" in mlperf and "`trainperf.mlperf.loader`" in mlperf
    # a module's public name its package does not re-export, under the module
    checks = text.split("\n## `trainperf.dcgm.checks`\n", 1)[1].split("\n## ", 1)[0]
    assert "| `RANGES_SCHEMA` | constant | Columns of :func:`range_table`. |  |" in checks


@pytest.mark.parametrize("path", INITS, ids=_package)
def test_each_package_init_only_reexports(path):
    assert _not_a_face(ast.parse(path.read_text(encoding="utf-8"))) == []


@pytest.mark.parametrize("path", INITS, ids=_package)
def test_each_face_exports_what_it_imports(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = api_index._all(tree) or []
    body = [b for s in tree.body for b in (s.body if _typing_imports(s) else [s])]
    imported = {
        a.asname or a.name
        for s in body
        if isinstance(s, ast.ImportFrom) and s.module != "__future__"
        for a in s.names
    }
    public = {n for n in imported if not n.startswith("_")}
    # nothing public re-exported silently, nothing listed that is not there
    assert sorted(public - set(names)) == []
    assert len(names) == len(set(names))
    module = importlib.import_module(_package(path))
    assert [n for n in names if not hasattr(module, n)] == []


def test_the_face_check_flags_logic_and_passes_a_face():
    face = ast.parse(
        '"""Doc."""\nfrom a import b\n__all__ = ["b"]\n_OLD = {"x": "b"}\n'
        "def __getattr__(name):\n    return _OLD[name]\n"
    )
    assert _not_a_face(face) == []
    lazy = ast.parse("import typing\nif typing.TYPE_CHECKING:\n    from a import b\n")
    assert _not_a_face(lazy) == []
    assert _not_a_face(ast.parse("if typing.TYPE_CHECKING:\n    X = 1\n")) == [
        "line 1: if typing.TYPE_CHECKING:"
    ]
    logic = ast.parse('"""Doc."""\nX = 1\ndef f():\n    pass\nregister(f)\n')
    assert _not_a_face(logic) == ["line 2: X = 1", "line 3: def f():", "line 5: register(f)"]


def test_summaries_are_the_first_sentence():
    assert api_index._summary("Read a table.\n\nMore.") == "Read a table."
    assert api_index._summary("Peaks, e.g. H100. Then more") == "Peaks, e.g. H100."
    assert api_index._summary("a | b") == "a \\| b"
    # 60 words, no full stop: cut at the last space before character 160, which is the one at
    # 159 (word k, from 0, starts at 5k; 5 x 32 - 1 = 159): 32 words kept
    long = "word " * 60
    assert api_index._summary(long) == ("word " * 32).rstrip() + " …"


def test_the_reader_through_the_telemetry_package_warns_naming_its_home():
    with pytest.warns(DeprecationWarning, match=r"import trainperf\.dcgm"):
        assert trainperf.telemetry.dcgm is trainperf.dcgm
    assert "dcgm" not in trainperf.telemetry.__all__
