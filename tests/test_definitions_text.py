"""The comparison section's definition of model FLOPs per token is the count its numbers use (trial
of 2026-12-08: the Nebius B200 book gave F_tok = 72 l h^2 (1 + s/(6h) + V/(12 l h)) for every
benchmark; for Llama 3.1 8B that closed form gives 54.7 GFLOP per token, the book's TFLOP/s use
57.9)."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainperf import flops

TEXT = (Path(__file__).resolve().parents[1] / "chapters" / "_eos_comparison.qmd").read_text()


def test_llama31_8b_count_by_hand_is_not_the_gpt3_closed_form():
    # Llama 3.1 8B (model card): l=32, h=4096, 8 KV heads of 128 (kv 1024), gated MLP 14336,
    # V=128256, s=8192. Forward per layer: Q,O 2*2*h^2 = 67,108,864; K,V 2*2*h*1024 = 16,777,216;
    # MLP 3*2*h*14336 = 352,321,536; QK^T and softmax*V 2*2*s*h = 134,217,728; sum 570,425,344;
    # x32 = 18,253,611,008; logits 2*h*V = 1,050,673,152; x3 (training) = 57,912,852,480.
    by_hand = 3 * (32 * 570_425_344 + 1_050_673_152)
    assert by_hand == 57_912_852_480
    assert flops.model_flops_per_token(flops.LLAMA31_8B) == pytest.approx(by_hand, rel=1e-12)
    layers, h, s, v = 32, 4096, 8192, 128256
    closed = 72 * layers * h**2 * (1 + s / (6 * h) + v / (12 * layers * h))
    assert closed == pytest.approx(54.69e9, rel=1e-3)  # not the count used: 5.6 % lower


def test_the_definition_says_the_closed_form_is_gpt3s_and_names_gqa_and_gated_mlps():
    definition = " ".join(
        TEXT[TEXT.index("**Model FLOPs per token**") :].split("\n* ", 1)[0].split()
    )
    assert "grouped-query attention" in definition and "gated MLP" in definition
    assert "for GPT-3 175B this is their $72" in definition
