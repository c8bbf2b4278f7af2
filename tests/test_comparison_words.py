"""The comparison in words (trial of 2026-12-07): an MFU no training run reaches is not quoted as
a possible reading, and a like-for-like sentence says when the two sides trained in different
number formats. Expected texts by hand from the rows the tests build."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from trainperf.compare import COMPARISON_SCHEMA
from trainperf.compare.comparison_words import MFU_PLAUSIBLE, _mfu_clause
from trainperf.compare.record_words import record_summary, reference_label


def test_an_implausible_mfu_rules_its_precision_out():
    # Dell B200 LoRA, precision not logged: 46.1 % of the FP8 dense peak is 92.2 % of the BF16
    # one (the BF16 peak is half the FP8 peak); 92.2 % > 75 %: BF16 is not what it trained in
    r = {"evaluated_precision": None, "evaluated_mfu_fp8": 0.461, "evaluated_mfu_bf16": 0.922}
    text = _mfu_clause(r, " (e2e)")
    assert text.startswith("MFU (e2e) 46.1 % of the FP8 dense peak (precision unknown")
    assert "92.2" not in text and "not BF16" in text and f"{100 * MFU_PLAUSIBLE:.0f} %" in text
    # both plausible: both quoted, as before
    both = _mfu_clause({"evaluated_mfu_fp8": 0.25, "evaluated_mfu_bf16": 0.5}, "")
    assert "25.0 % of the FP8 dense peak or 50.0 % of the BF16 dense peak" in both
    # a logged precision is the only one quoted, whatever the value
    own = _mfu_clause({"evaluated_precision": "bf16", "evaluated_mfu_bf16": 0.4}, "")
    assert own == "MFU 40.0 % of the BF16 dense peak"


def _row(**kw) -> pl.DataFrame:
    row = dict.fromkeys(COMPARISON_SCHEMA)
    row.update(benchmark="llama31_8b", n_gpus=16, n_nodes=2, evaluated_system="Lab",
               evaluated_source="logs", evaluated_min=61.38, reference_system="nebius_b200_n2",
               reference_submitter="Nebius", reference_accelerator="B200", reference_round="v5.1",
               reference_kind="measured", reference_n_gpus=16, reference_min=51.83,
               ratio=61.38 / 51.83, ratio_low=61.38 / 51.83, ratio_high=61.38 / 51.83, **kw)  # fmt: skip
    return pl.DataFrame([row], schema=COMPARISON_SCHEMA)


def test_a_like_for_like_sentence_names_different_precisions():
    words = record_summary(_row(evaluated_precision="fp8", reference_precision="fp4"), "B200")
    # 61.38 / 51.83 = 1.184...
    assert "Lab needs 1.18x the GPU time of Nebius nebius_b200_n2 (B200, v5.1)" in words
    assert "the reference trained in FP4, this run in FP8" in words
    same = record_summary(_row(evaluated_precision="fp8", reference_precision="fp8"), "B200")
    assert "trained in" not in same
    unknown = record_summary(_row(evaluated_precision=None, reference_precision="fp4"), "B200")
    assert "trained in" not in unknown


def test_an_fp4_run_is_quoted_at_its_own_fp4_peak():
    # Nebius nebius_b200_n2, Llama 2 70B LoRA (v5.1): the logs say `fp4: true` (fp4_recipe nvfp4),
    # 1,720.35 model TFLOP/s per GPU end to end; B200 FP4 dense peak 9,000 TFLOP/s
    # (data/reference/accelerators.csv): 1720.35 / 9000 = 19.1 %. Its precision is known, so the
    # clause must not say "precision unknown" nor quote the FP8 peak (1720.35 / 4500 = 38.2 %).
    r = {"evaluated_precision": "fp4", "evaluated_mfu": 1720.35 / 9000,
         "evaluated_mfu_fp8": 1720.35 / 4500, "evaluated_mfu_bf16": 1720.35 / 2250}  # fmt: skip
    assert _mfu_clause(r, " (e2e)") == "MFU (e2e) 19.1 % of the FP4 dense peak"


def test_the_comparison_tables_reference_cell_names_every_kind():
    # Wiwynn 8xKinabalux18x4GB200, Llama 2 70B LoRA at 576 GB200 (v5.1): no GB200 result above
    # 576 GPUs in the record, the largest below is NVIDIA tyche_ngpu512_ngc25.09_nemo (512 GPUs,
    # 0.4663 min; data/reference/mlperf_record.csv): a bound only. The appendix table said
    # "no reference at this benchmark" beside its bound <= 1.037.
    bounds = {"reference_kind": "bounds", "reference_submitter": "NVIDIA",
              "reference_system": "tyche_ngpu512_ngc25.09_nemo", "reference_accelerator": "GB200",
              "reference_round": "v5.1", "reference_low_n_gpus": 512, "reference_high_n_gpus": None}  # fmt: skip
    assert reference_label(bounds) == (
        "NVIDIA tyche_ngpu512_ngc25.09_nemo (GB200, v5.1): bound only, from its 512 GPUs"
    )
    both = bounds | {"reference_system": "a .. b", "reference_high_n_gpus": 4096}
    assert reference_label(both).endswith(
        "bounds only, from 512 and 4,096 GPUs (more than 4x apart)"
    )
    cross = bounds | {"reference_kind": "cross-generation", "reference_accelerator": "H100 SXM"}
    assert reference_label(cross) == (
        "NVIDIA tyche_ngpu512_ngc25.09_nemo (H100 SXM, v5.1): another accelerator generation"
    )
    assert reference_label(bounds | {"reference_kind": "measured"}) == (
        "NVIDIA tyche_ngpu512_ngc25.09_nemo (GB200, v5.1)"
    )
    assert reference_label({"reference_kind": "none"}) == "no reference at this benchmark"
    # the appendix table uses it
    nb = Path(__file__).resolve().parents[1] / "notebooks" / "eos_comparison.ipynb"
    cell = next(c for c in json.loads(nb.read_text())["cells"] if c.get("id") == "cell-cmp-tbl")
    assert "reference_label(r) for r in comparison.iter_rows(named=True)" in "".join(cell["source"])


def test_a_published_result_against_its_own_earlier_round_says_so():
    # MangoBoost MI300X-LLMBoost-GPUBoost-2node, LoRA: v5.1 15.72 min against its own v5.0 16.36 min
    # (data/reference/mlperf_record.csv), the only other 16-GPU MI300X result of the record
    own = {"published_as": "v5.1 MangoBoost MI300X-LLMBoost-GPUBoost-2node",
           "reference_submitter": "MangoBoost", "reference_system": "MI300X-LLMBoost-GPUBoost-2node",
           "reference_accelerator": "MI300X", "reference_round": "v5.0", "reference_kind": "measured"}  # fmt: skip
    assert reference_label(own) == (
        "MangoBoost MI300X-LLMBoost-GPUBoost-2node (MI300X, v5.0): the same system's own v5.0 result"
    )
    other = own | {"reference_system": "MI300X-LLMBoost-GPUBoost-1node"}
    assert "same system" not in reference_label(other)
    assert "same system" not in reference_label(own | {"published_as": None})
