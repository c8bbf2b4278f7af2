"""Named result schemas: a public function that builds its result frame with a schema names a
``*_SCHEMA`` constant, and its docstring points to it (read from the source with ``ast``).

A public function that returns a frame built with an inline schema dict fails here: every one
names its constant."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def _public_functions():
    for path in sorted((SRC / "trainperf").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        mod = ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                yield f"{mod}.{node.name}", node


def _result_schemas(func: ast.FunctionDef):
    """The ``schema=`` arguments of the frames a function returns (directly in a ``return``)."""
    for ret in ast.walk(func):
        if not isinstance(ret, ast.Return) or ret.value is None:
            continue
        for call in ast.walk(ret.value):
            if isinstance(call, ast.Call):
                for kw in call.keywords:
                    if kw.arg == "schema":
                        yield kw.value


def test_result_frames_name_their_schema_and_the_docstring_points_to_it():
    inline, unnamed_in_doc = set(), []
    for name, func in _public_functions():
        for schema in _result_schemas(func):
            if isinstance(schema, ast.Dict):
                inline.add(name)
            elif isinstance(schema, ast.Name) and schema.id.endswith("_SCHEMA"):
                if schema.id not in (ast.get_docstring(func) or ""):
                    unnamed_in_doc.append(f"{name}: {schema.id}")
    assert unnamed_in_doc == []
    assert sorted(inline) == []


def test_the_checker_sees_named_and_inline_schemas():
    src = '''
def named():
    """Returns :data:`A_SCHEMA`."""
    return pl.DataFrame(rows, schema=A_SCHEMA)

def inline():
    return pl.DataFrame(rows, schema={"a": pl.Int64})
'''
    funcs = {n.name: n for n in ast.parse(src).body}
    assert [s.id for s in _result_schemas(funcs["named"])] == ["A_SCHEMA"]
    assert isinstance(next(_result_schemas(funcs["inline"])), ast.Dict)
