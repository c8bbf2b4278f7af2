"""``benchmarks/RESULTS.md`` as sections written by ``run_all.py``, and the README table made from them.

Each benchmark module (``bench_<name>.py``) owns one section of RESULTS.md, between
``<!-- bench:<name> -->`` and ``<!-- /bench:<name> -->``: the command that reproduces it, the machine,
the date and the load average, then the table and notes ``harness.markdown`` printed. ``run_all.py``
replaces the sections of the modules it ran and keeps the others as they were measured.

``python benchmarks/results_md.py --readme`` (or ``run_all.py --readme``) rewrites the README's
Performance table, between ``<!-- perf-table -->`` and ``<!-- /perf-table -->``, from RESULTS.md: every
row of every section, with the command that reproduces it; ``tests/test_benchmarks_readme.py`` checks
that the README table is RESULTS.md's.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from trainperf.atomic import write_text_atomic

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "RESULTS.md"
README = HERE.parent / "README.md"
TITLE = "# Benchmark results\n\nWritten by `benchmarks/run_all.py` (one section per benchmark module; " \
    "a run replaces the sections it ran). The README's Performance table is made from this file " \
    "(`run_all.py --readme`).\n"  # fmt: skip
_SECTION = re.compile(r"<!-- bench:(\w+) -->\n(.*?)<!-- /bench:\1 -->\n", re.S)
_TABLE = ("<!-- perf-table -->\n", "<!-- /perf-table -->\n")


def sections(text: str) -> dict[str, str]:
    """Section name -> its body (in file order)."""
    return {m.group(1): m.group(2) for m in _SECTION.finditer(text)}


def section(name: str, command: str, measured: str, table: str) -> str:
    """One section's body."""
    return f"## {name}\n\n`{command}`\n\n{measured}\n\n{table}\n"


def write(new: dict[str, str], path: Path = RESULTS) -> str:
    """RESULTS.md with the sections in ``new`` replaced (or added), the others kept; returns it."""
    old = sections(path.read_text(encoding="utf-8")) if path.exists() else {}
    merged = {**old, **new}
    order = sorted(merged)
    text = TITLE + "".join(f"\n<!-- bench:{n} -->\n{merged[n]}<!-- /bench:{n} -->\n" for n in order)
    write_text_atomic(text, path)
    return text


def rows(body: str) -> tuple[str, str, list[list[str]]]:
    """(command, measured line, table rows as cells) of one section body."""
    lines = body.strip().splitlines()
    command = lines[2].strip("`")
    measured = lines[4]
    cells = [
        [c.strip() for c in ln.strip().strip("|").split(" | ")]
        for ln in lines
        if ln.startswith("| ") and not ln.startswith("| work |")
    ]
    return command, measured, cells


_MEASURED = re.compile(
    r"Measured on (?P<machine>.+?), (?P<date>\d{4}-\d\d-\d\d \d\d:\d\d [A-Z]+), in .*?"
    r"load average (?P<start>[\d.]+) at the start, (?P<end>[\d.]+) at the end"
)


def where_cell(measured: str) -> str:
    """The machine, date and load of a section's measured line, for each of its rows in the README
    (issue 41: a figure is read with the machine and the load it was taken at)."""
    m = _MEASURED.search(measured)
    if m is None:
        return "see below"
    return f"{m['machine']}; {m['date']}; load {m['start']} to {m['end']}"


def readme_table(results_text: str) -> str:
    """The README's Performance table (between the markers) made from RESULTS.md's text."""
    out = [
        "| work | product | peer or limit | ratio | target | met | machine, date, load | reproduce |",
        "|---|---|---|---|---|---|---|---|",
    ]
    where = []
    for body in sections(results_text).values():
        command, measured, cells = rows(body)
        for c in cells:
            out.append("| " + " | ".join([*c, where_cell(measured), f"`{command}`"]) + " |")
        where.append(f"* `{command}`: {measured}")
    return "\n".join(out) + "\n\n" + "\n".join(where) + "\n"


def update_readme(results: Path = RESULTS, readme: Path = README) -> bool:
    """Rewrite the README table from RESULTS.md; returns whether it changed."""
    text = readme.read_text(encoding="utf-8")
    a, b = text.index(_TABLE[0]) + len(_TABLE[0]), text.index(_TABLE[1])
    new = text[:a] + readme_table(results.read_text(encoding="utf-8")) + text[b:]
    if new == text:
        return False
    write_text_atomic(new, readme)
    return True


def readme_block(readme: Path = README) -> str:
    """The README's current table block (between the markers)."""
    text = readme.read_text(encoding="utf-8")
    return text[text.index(_TABLE[0]) + len(_TABLE[0]) : text.index(_TABLE[1])]


if __name__ == "__main__":
    if "--readme" in sys.argv:
        print("README.md table " + ("rewritten" if update_readme() else "unchanged"))
