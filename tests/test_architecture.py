"""The package layout: no import cycle between trainperf modules, analyses never import the report.

Imports are read from the source with ``ast`` (function-level imports included, since a cycle through
a deferred import is still a cycle in the design).
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "trainperf"


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PKG.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for t in targets:
                if t in modules and t != name and not name.startswith(t + "."):
                    graph[name].add(t)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found, state, stack = [], {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph[n]):
            if state.get(m) == 1:
                found.append(stack[stack.index(m) :] + [m])
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n)
    return found


def test_graph_sees_known_edges():
    g = _graph()
    # a hand-checked edge, so that an empty graph cannot pass the cycle test
    assert "trainperf.dcgm" in g["trainperf.telemetry"]
    assert "trainperf.report.notebooks" in g["trainperf.report.batch.execute"]


def test_no_import_cycle():
    assert _cycles(_graph()) == []


def test_cycle_finder_finds_a_planted_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]


def test_analyses_and_readers_do_not_import_the_report():
    g = _graph()
    for name, deps in g.items():
        if name.startswith("trainperf.report") or name in ("trainperf", "trainperf.__main__"):
            continue
        assert not [d for d in deps if d.startswith("trainperf.report")], name
