"""Write API.md: every public name of trainperf, by the import path to use, in one place.

A package's face (its ``__init__``, e.g. ``trainperf.mlperf``) re-exports the names of its modules;
a module's own public names that no face re-exports are listed under the module. Public means: in the
module's ``__all__``; a module without ``__all__``: its functions and classes not starting with
``_``. Private modules (``_common.py``) are listed only through the faces that re-export them.

Read from the source with ``ast`` (nothing is imported: no optional component is needed).

Usage::

    python scripts/api_index.py --write    # rewrite API.md
    python scripts/api_index.py --check    # exit 1 when API.md is out of date
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
OUT = ROOT / "API.md"

HEADER = """# API index

Every public name of `trainperf`, by the import path to use, with what it is (the first sentence
of its docstring). A package (`trainperf.mlperf`) lists the names it re-exports from its modules;
a module (`trainperf.dcgm.checks`) lists its public names that its package does not re-export.
The architecture (which package owns what) is in [ARCHITECTURE.md](ARCHITECTURE.md).

Generated from the source by `python scripts/api_index.py --write`; `tests/test_api_index.py`
fails when this file is out of date.
"""


@dataclass(frozen=True)
class Entry:
    name: str
    kind: str  # function, class, constant, module
    summary: str
    home: str  # the module that defines it


def _modules() -> dict[str, tuple[Path, ast.Module]]:
    out = {}
    for path in sorted((SRC / "trainperf").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        dotted = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[dotted] = (path, ast.parse(path.read_text(encoding="utf-8")))
    return out


def _all(tree: ast.Module) -> list[str] | None:
    for s in tree.body:
        if isinstance(s, (ast.Assign, ast.AnnAssign)):
            target = s.targets[0] if isinstance(s, ast.Assign) else s.target
            if isinstance(target, ast.Name) and target.id == "__all__":
                return list(ast.literal_eval(s.value))
    return None


_MAX = 160  # characters of a summary


def _summary(doc: str | None) -> str:
    """The first sentence of a docstring (its first paragraph, up to the first full stop)."""
    if not doc:
        return ""
    para = " ".join(doc.strip().split("\n\n")[0].split())
    for i, ch in enumerate(para):
        if (
            ch == "."
            and (i + 1 == len(para) or para[i + 1] == " ")
            and not para[:i].endswith(("e.g", "i.e", "vs", "cf", "etc"))
        ):
            para = para[: i + 1]
            break
    if len(para) > _MAX:
        para = para[: para.rfind(" ", 0, _MAX)].rstrip(",;:") + " …"
    return para.replace("|", "\\|")


def _comment_above(lines: list[str], lineno: int) -> str:
    """The comment lines right above a line (``#:``, Sphinx's attribute comments, or ``#``)."""
    got = []
    i = lineno - 2
    while i >= 0 and lines[i].startswith("#"):
        got.insert(0, lines[i][1:].removeprefix(":").strip())
        i -= 1
    return " ".join(got)


def _resolve(mods, module: str, name: str, depth: int = 0) -> Entry:
    path, tree = mods[module]
    body = []
    for s in tree.body:  # a face that imports its names at first use (PEP 562) names them for typing
        typing_only = isinstance(s, ast.If) and ast.unparse(s.test).endswith("TYPE_CHECKING")
        body.extend(s.body if typing_only else [s])
    for i, s in enumerate(body):
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and s.name == name:
            kind = "class" if isinstance(s, ast.ClassDef) else "function"
            return Entry(name, kind, _summary(ast.get_docstring(s)), module)
        if isinstance(s, (ast.Assign, ast.AnnAssign)):
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                doc = None
                nxt = body[i + 1] if i + 1 < len(body) else None
                if isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant):
                    doc = nxt.value.value if isinstance(nxt.value.value, str) else None
                if doc is None:
                    doc = _comment_above(path.read_text(encoding="utf-8").splitlines(), s.lineno)
                return Entry(name, "constant", _summary(doc), module)
        if isinstance(s, ast.ImportFrom) and s.module and depth < 10:
            for a in s.names:
                if (a.asname or a.name) == name:
                    if s.module in mods:
                        e = _resolve(mods, s.module, a.name, depth + 1)
                        return Entry(name, e.kind, e.summary, e.home)
                    return Entry(name, "re-export", f"`{s.module}.{a.name}`", s.module)
        if isinstance(s, ast.Import):
            for a in s.names:
                if (a.asname or a.name) == name:
                    return Entry(name, "module", f"`{a.name}`", a.name)
    raise LookupError(f"{module}: {name!r} is in __all__ but not defined there")


def _is_private(dotted: str) -> bool:
    return any(p.startswith("_") for p in dotted.split("."))


def index() -> list[tuple[str, str, list[Entry]]]:
    """``(module, its summary, its entries)`` for every module that has public names to list."""
    mods = _modules()
    packages = {m for m, (p, _) in mods.items() if p.name == "__init__.py"}
    sections: dict[str, list[Entry]] = {}
    faced: set[tuple[str, str]] = set()  # (home module, name) re-exported by a package face
    for m in sorted(packages):
        if _is_private(m):
            continue
        names = _all(mods[m][1]) or []
        entries = [_resolve(mods, m, n) for n in names]
        sections[m] = entries
        faced |= {(e.home, e.name) for e in entries}
    for m in sorted(set(mods) - packages):
        if _is_private(m):
            continue
        tree = mods[m][1]
        names = _all(tree)
        if names is None:
            names = [
                s.name
                for s in tree.body
                if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and not s.name.startswith("_")
            ]
        entries = [
            e
            for e in (_resolve(mods, m, n) for n in names)
            # a module's own names (a name it re-exports is listed at its home), unless its
            # home is private (then this module is where a reader finds it)
            if (e.home == m or _is_private(e.home) or e.home not in mods)
            and (e.home, e.name) not in faced
        ]
        if entries:
            sections[m] = entries
    return [
        (m, _summary(ast.get_docstring(mods[m][1])), sections[m])
        for m in sorted(sections, key=lambda m: m.split("."))
    ]


def render() -> str:
    out = [HEADER]
    for module, summary, entries in index():
        out.append(f"\n## `{module}`\n")
        if summary:
            out.append(f"\n{summary}\n")
        if not entries:
            out.append("\n(no names of its own: its modules are listed below)\n")
            continue
        out.append("\n| name | kind | what it is | defined in |\n|---|---|---|---|\n")
        for e in entries:
            home = "" if e.home == module else f"`{e.home}`"
            out.append(f"| `{e.name}` | {e.kind} | {e.summary} | {home} |\n")
    return "".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help=f"rewrite {OUT.name}")
    ap.add_argument("--check", action="store_true", help=f"exit 1 when {OUT.name} is out of date")
    args = ap.parse_args(argv)
    text = render()
    if args.write:
        OUT.write_text(text, encoding="utf-8")
    elif args.check:
        if not OUT.is_file() or OUT.read_text(encoding="utf-8") != text:
            print(
                f"{OUT.name} is out of date: python scripts/api_index.py --write", file=sys.stderr
            )
            return 1
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
