"""The accelerator table against MLCommons's own systems JSONs and the vendors' datasheets.

Expected values: the ``accelerator_model_name`` strings are those of the MLCommons Training
results v3.1-v5.1 (``data/reference/mlperf_accelerator_names.csv``, derived by
``scripts/derive_accelerator_names.py`` with repository, commit, path and sha256 of each file);
peaks are hand computations from the datasheet figures quoted in each test.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from trainperf.config import parse_config
from trainperf.flops import (
    UnknownAcceleratorError,
    load_accelerators,
    lookup_accelerator,
    peak_flops,
)
from trainperf.flops.accelerators import _full_key

REPO = Path(__file__).resolve().parents[1]
NAMES = REPO / "data" / "reference" / "mlperf_accelerator_names.csv"


def _bundled() -> list[dict]:
    with NAMES.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_bundle_has_provenance_for_every_string():
    rows = _bundled()
    assert len(rows) >= 38  # 38 distinct strings in v3.1-v5.1 (455 systems files)
    for r in rows:
        assert r["repo"].startswith("mlcommons/training_results_v"), r
        assert re.fullmatch(r"[0-9a-f]{40}", r["commit"]), r
        assert re.fullmatch(r"[^/]+/systems/[^/]+\.json", r["path"]), r
        assert re.fullmatch(r"[0-9a-f]{64}", r["sha256"]), r
        assert r["source"] == f"https://github.com/{r['repo']}/blob/{r['commit']}/{r['path']}"
    # the v5.1 parts the issue names are in the record
    names = {r["accelerator_model_name"] for r in rows}
    for s in (
        "NVIDIA Blackwell Ultra GPU (GB300)",
        "NVIDIA Blackwell Ultra GPU (B300-SXM-270GB)",
        "AMD Instinct MI350X",
        "AMD Instinct MI355X",
        "NVIDIA RTX Pro 6000 SE PCIe 96GB",
    ):
        assert s in names


@pytest.mark.parametrize("row", _bundled(), ids=lambda r: r["accelerator_model_name"])
def test_every_mlperf_string_maps_to_exactly_one_row(row):
    table = load_accelerators()
    name = row["accelerator_model_name"]
    if not row["accelerator"]:  # Intel's CPU-only v3.1 systems: "N/A"
        with pytest.raises(UnknownAcceleratorError) as err:
            lookup_accelerator(name, table)
        assert "names no accelerator" in str(err.value) and "\n" not in str(err.value)
        return
    got = lookup_accelerator(name, table)
    assert got["accelerator"] == row["accelerator"]
    # exactly one row: no other row's name or alias is spelled the same
    key = _full_key(name)
    claiming = [
        r["accelerator"]
        for r in table.iter_rows(named=True)
        if any(_full_key(n) == key for n in [r["accelerator"], *(r["aliases"] or "").split(";")])
    ]
    assert len(set(claiming)) <= 1, claiming
    assert got["bf16_dense_tflops"] is None or got["bf16_dense_tflops"] > 0
    assert got["source_url"].startswith("https://")


def test_unknown_string_is_refused_in_one_line():
    with pytest.raises(UnknownAcceleratorError) as err:
        lookup_accelerator("NVIDIA Rubin GPU (VR200)")
    msg = str(err.value)
    assert "'NVIDIA Rubin GPU (VR200)'" in msg and "accelerators.csv" in msg and "\n" not in msg
    assert isinstance(err.value, ValueError)  # callers that catch ValueError keep working


def test_memory_variants_are_told_apart():
    # Lenovo v3.1's 96 GB H100 is not the 80 GB part (the normalised key alone would merge them)
    assert lookup_accelerator("NVIDIA H100-SXM5-96GB")["memory_gb"] == 96
    assert lookup_accelerator("NVIDIA H100-SXM5-80GB")["memory_gb"] == 80


def test_blackwell_ultra_and_cdna4_peaks_by_hand():
    # GB300 NVL72 page: FP4 1,080 PFLOPS dense, FP8 720 and BF16 360 PFLOPS with sparsity, 72 GPUs
    assert peak_flops("NVIDIA Blackwell Ultra GPU (GB300)", "nvfp4") == pytest.approx(1080e15 / 72)
    assert peak_flops("GB300", "fp8") == pytest.approx(720e15 / 2 / 72)
    assert peak_flops("GB300", "bf16") == pytest.approx(360e15 / 2 / 72)
    # HGX B300 (8 GPUs): FP4 108 PFLOPS dense; FP8 72 and BF16 36 PFLOPS with sparsity
    assert peak_flops("B300", "fp4") == pytest.approx(108e15 / 8)
    assert peak_flops("B300", "fp8") == pytest.approx(72e15 / 2 / 8)
    # CDNA 4: 256 CUs x 4,096 dense FP16 FLOP per clock per CU (FP8 2x, MXFP4 4x); MI355X 2.4 GHz,
    # MI350X 2.2 GHz (AMD MI350 series pages: 2.5/5/10 and 2.3/4.6/9.2 PFLOPS)
    for part, ghz in (("AMD Instinct MI355X", 2.4), ("AMD Instinct MI350X", 2.2)):
        bf16 = 256 * 4096 * ghz * 1e9
        assert peak_flops(part, "bf16") == pytest.approx(bf16, rel=1e-4)
        assert peak_flops(part, "fp8") == pytest.approx(2 * bf16, rel=1e-4)
        assert peak_flops(part, "mxfp4") == pytest.approx(4 * bf16, rel=1e-4)
    # no FP4 tensor cores before Blackwell / CDNA 4: refused, never a made-up peak
    with pytest.raises(ValueError, match="fp4"):
        peak_flops("H100 SXM", "fp4")


def test_scaleup_domains():
    acc = load_accelerators()
    dom = dict(zip(acc["accelerator"], acc["scaleup_domain"], strict=True))
    # NVL72: 18 compute trays of 4 GPUs in one NVLink domain; HGX/OAM boards: 8
    assert dom["GB300"] == dom["GB200"] == 18 * 4
    for board in ("H100 SXM", "H200", "B200", "B300", "MI300X", "MI325X", "MI350X", "MI355X"):
        assert dom[board] == 8, board
    assert (acc["scaleup_domain"] >= 1).all()
    fp4 = acc.filter(acc["fp4_dense_tflops"].is_not_null())
    assert set(fp4["fp4_format"]) <= {"NVFP4", "MXFP4"}
    assert set(fp4["accelerator"]) >= {"B200", "B300", "GB200", "GB300", "MI350X", "MI355X"}


@pytest.mark.parametrize(
    ("given", "canonical", "memory_gb"),
    [
        ("GB300", "GB300", 288),
        ("NVIDIA Blackwell Ultra GPU (GB300)", "GB300", 288),
        ("B300", "B300", 288),
        ("AMD Instinct MI355X", "MI355X", 288),
        ("RTX Pro 6000 Blackwell Server", "RTX Pro 6000 Blackwell Server", 96),
    ],
)
def test_a_cluster_of_todays_parts_is_configured_by_name(tmp_path, given, canonical, memory_gb):
    cfg = parse_config({"name": "X", "accelerator": given, "gpus_per_node": 4, "precision": "fp4"},
                       tmp_path)  # fmt: skip
    assert cfg.accelerator == canonical and cfg.gpu_memory_gb == memory_gb
    assert cfg.precision == "fp4"
