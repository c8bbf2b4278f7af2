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
    """(cells + the machine, date and load cell, command) of every RESULTS.md row."""
    text = (ROOT / "benchmarks/RESULTS.md").read_text(encoding="utf-8")
    out = []
    for name, body in re.findall(r"<!-- bench:(\w+) -->\n(.*?)<!-- /bench:\1 -->", text, re.S):
        command = re.search(r"^`([^`]+)`$", body, re.M).group(1)
        assert f"--only {name}" in command
        # e.g. "Measured on AMD EPYC, 2 cores, 24 GiB, Python 3.11.7, 2026-12-02 08:01 UTC, in 68 s;
        # load average 13.5 at the start, 12.2 at the end (...)"
        m = re.search(
            r"^Measured on (.+), (\d{4}-\d\d-\d\d \d\d:\d\d UTC), in \d+ s; "
            r"load average ([\d.]+) at the start, ([\d.]+) at the end",
            body,
            re.M,
        )
        assert m, name
        where = f"{m[1]}; {m[2]}; load {m[3]} to {m[4]}"
        for line in body.splitlines():
            if line.startswith("| ") and not line.startswith("| work |"):
                out.append(([*_cells(line), where], command))
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


def test_each_row_names_its_machine_and_load():
    # the column before the command: machine, date, load (issue 41)
    for cells, _ in readme_rows():
        assert re.fullmatch(
            r".+ cores.+; \d{4}-\d\d-\d\d \d\d:\d\d UTC; load [\d.]+ to [\d.]+", cells[-1]
        )


def test_every_section_names_its_machine_and_load():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("<!-- perf-table -->\n", 1)[1].split("<!-- /perf-table -->", 1)[0]
    commands = {c for _, c in results_rows()}
    for c in commands:
        assert re.search(rf"^\* `{re.escape(c)}`: Measured on .+load average", block, re.M), c
