"""The glossary defines what the book shows of any cluster (trial of 2026-12-08: a Nebius B200
book showed precision FP4 in its comparison table, and the glossary knew only FP8 and BF16; an
MI300X book was told of NVLink only)."""

from __future__ import annotations

import re
from pathlib import Path

from trainperf.config.schema import PRECISIONS

GLOSSARY = Path(__file__).resolve().parents[1] / "chapters" / "glossary.qmd"


def _terms() -> list[str]:
    # a definition list: the term on its own line, its definition on the next starting with ": "
    lines = GLOSSARY.read_text(encoding="utf-8").splitlines()
    return [a for a, b in zip(lines, lines[1:], strict=False) if b.startswith(": ")]


def test_every_precision_a_config_or_log_can_name_is_a_glossary_term():
    named = {t.strip().upper() for term in _terms() for t in re.split(r",\s*", term)}
    assert {p.upper() for p in PRECISIONS} <= named  # bf16, fp8, fp4 (config schema)


def test_the_scaleup_fabric_entry_names_amds_and_the_nvl72_domain():
    text = GLOSSARY.read_text(encoding="utf-8")
    entry = text[text.index("NVLink, NVSwitch") :].split("\n\n", 1)[0]
    assert "Infinity Fabric" in entry and "NVL72" in entry
