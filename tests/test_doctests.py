"""The examples in the docstrings run: every trainperf module whose source holds a ``>>>`` example
(the sacct field parsers, FLOP and MFU formulas, comparison ratios, ...) is run through ``doctest``.
Modules are found by their text, so a new example runs without being listed here."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


def _modules_with_examples() -> list[str]:
    out = []
    for path in sorted((SRC / "trainperf").rglob("*.py")):
        if ">>> " not in path.read_text(encoding="utf-8"):
            continue
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.append(".".join(parts))
    return out


MODULES = _modules_with_examples()


def test_the_parsers_and_formulas_carry_examples():
    # the modules the examples were written for, so that an empty discovery cannot pass
    assert {"trainperf.slurm.fields", "trainperf.flops.counts", "trainperf.compare.ratios"} <= set(
        MODULES
    )


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name}: no example was run"
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"
