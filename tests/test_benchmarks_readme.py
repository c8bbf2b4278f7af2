"""The README's Performance table is what the benchmark harness printed (issue 29).

``benchmarks/run_all.py`` writes one section per benchmark module into ``benchmarks/RESULTS.md``
(its command, machine, date and load, then the rows ``harness.markdown`` printed); the README table
between its markers must hold exactly those rows, each with the command that reproduces it. Parsed
here independently of ``benchmarks/results_md.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip()[1:-1].split(" | ")]


def results_rows() -> list[tuple[list[str], str]]:
    text = (ROOT / "benchmarks/RESULTS.md").read_text(encoding="utf-8")
    out = []
    for name, body in re.findall(r"<!-- bench:(\w+) -->\n(.*?)<!-- /bench:\1 -->", text, re.S):
        command = re.search(r"^`([^`]+)`$", body, re.M).group(1)
        assert f"--only {name}" in command
        assert re.search(r"^Measured on .*load average", body, re.M), name
        for line in body.splitlines():
            if line.startswith("| ") and not line.startswith("| work |"):
                out.append((_cells(line), command))
    return out


def readme_rows() -> list[tuple[list[str], str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("<!-- perf-table -->\n", 1)[1].split("<!-- /perf-table -->", 1)[0]
    out = []
    for line in block.splitlines():
        if line.startswith("| ") and not line.startswith("| work |"):
            cells = _cells(line)
            out.append((cells[:-1], cells[-1].strip("`")))
    return out


def test_readme_table_is_the_harness_output():
    res, readme = results_rows(), readme_rows()
    assert len(res) >= 5
    assert readme == res


def test_every_section_names_its_machine_and_load():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("<!-- perf-table -->\n", 1)[1].split("<!-- /perf-table -->", 1)[0]
    commands = {c for _, c in results_rows()}
    for c in commands:
        assert re.search(rf"^\* `{re.escape(c)}`: Measured on .+load average", block, re.M), c
