"""Model specifications (GPT-3 175B, Llama 2 70B as the MLPerf references define them) and their parameter counts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# --------------------------------------------------------------------------------------------
# Model specifications
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelSpec:
    """Architecture of a decoder-only transformer, as far as FLOP and memory counts need it.

    Attributes:
        name: display name.
        n_layers: transformer layers ``l``.
        hidden: model width ``h``.
        n_heads: attention (query) heads ``a``.
        n_kv_heads: key/value heads (GQA query groups); equal to ``n_heads`` for MHA.
        ffn_hidden: MLP inner width.
        activation: ``'gelu'`` (two MLP GEMMs) or ``'swiglu'`` (three MLP GEMMs: gate, up, down).
        vocab_raw: tokenizer vocabulary size.
        vocab_padded: vocabulary after padding for tensor parallelism; the logits GEMM uses this.
        seq_len: training sequence length ``s``.
        bias: linear layers carry biases (GPT-3 yes, Llama no).
        norm: ``'layernorm'`` (weight + bias, 2h params) or ``'rmsnorm'`` (weight only, h params).
        learned_pos_emb: learned absolute position embedding of ``s·h`` params (GPT-3) vs RoPE.
        tied_embeddings: output projection shares the input embedding matrix.
    """

    name: str
    n_layers: int
    hidden: int
    n_heads: int
    n_kv_heads: int
    ffn_hidden: int
    activation: Literal["gelu", "swiglu"]
    vocab_raw: int
    vocab_padded: int
    seq_len: int
    bias: bool = True
    norm: Literal["layernorm", "rmsnorm"] = "layernorm"
    learned_pos_emb: bool = True
    tied_embeddings: bool = True

    def __post_init__(self) -> None:
        if self.activation not in ("gelu", "swiglu"):
            raise ValueError(f"activation must be 'gelu' or 'swiglu', got {self.activation!r}")
        if self.norm not in ("layernorm", "rmsnorm"):
            raise ValueError(f"norm must be 'layernorm' or 'rmsnorm', got {self.norm!r}")
        if self.hidden % self.n_heads:
            raise ValueError("hidden must be divisible by n_heads")
        if self.n_heads % self.n_kv_heads:
            raise ValueError("n_heads must be divisible by n_kv_heads")

    @property
    def head_dim(self) -> int:
        """Per-head width ``h / a``."""
        return self.hidden // self.n_heads

    @property
    def kv_dim(self) -> int:
        """Width of the K (or V) projection output: ``n_kv_heads · head_dim``."""
        return self.n_kv_heads * self.head_dim


GPT3_175B = ModelSpec(
    name="GPT-3 175B",
    n_layers=96,
    hidden=12288,
    n_heads=96,
    n_kv_heads=96,
    ffn_hidden=49152,
    activation="gelu",
    vocab_raw=50257,
    vocab_padded=51200,
    seq_len=2048,
    bias=True,
    norm="layernorm",
    learned_pos_emb=True,
    tied_embeddings=True,
)
"""MLPerf Training GPT-3 175B: ``mlcommons/training@aa344c7f:retired_benchmarks/gpt3/paxml/README.md:32-46``
and ``…/megatron-lm/run_gpt3.sh:55-59``; vocab 50257 padded to 51200 (Megatron reference, TP=8,
divisible by 128, ``…/megatron-lm/megatron/tokenizer/tokenizer.py:55-68``; PAX
``…/paxml/c4.py:631-632`` ``VOCAB_SIZE = 51200``)."""

LLAMA2_70B = ModelSpec(
    name="Llama 2 70B",
    n_layers=80,
    hidden=8192,
    n_heads=64,
    n_kv_heads=8,
    ffn_hidden=28672,
    activation="swiglu",
    vocab_raw=32000,
    vocab_padded=32000,
    seq_len=8192,
    bias=False,
    norm="rmsnorm",
    learned_pos_emb=False,
    tied_embeddings=False,
)
"""Llama 2 70B (Touvron et al. 2023, arXiv:2307.09288; HF ``meta-llama/Llama-2-70b-hf`` config:
80 layers, h=8192, 64 heads, 8 KV heads, SwiGLU 28672, vocab 32000, untied output). Sequence length
8192 is the MLPerf Training ``llama2_70b_lora`` setting (GovReport, max length 8192)."""

LLAMA31_405B = ModelSpec(
    name="Llama 3.1 405B",
    n_layers=126,
    hidden=16384,
    n_heads=128,
    n_kv_heads=8,
    ffn_hidden=53248,
    activation="swiglu",
    vocab_raw=128256,
    vocab_padded=128256,
    seq_len=8192,
    bias=False,
    norm="rmsnorm",
    learned_pos_emb=False,
    tied_embeddings=False,
)
"""Llama 3.1 405B (Llama Team, AI @ Meta, "The Llama 3 Herd of Models", arXiv:2407.21783, Table 3:
126 layers, model dimension 16,384, FFN dimension 53,248, 128 attention heads, 8 key/value heads,
vocabulary 128,000 tokens (128,256 in the released tokenizer, ``meta-llama/Llama-3.1-405B``
``config.json``), SwiGLU, RoPE, untied output). Sequence length 8192 is the MLPerf Training
``llama31_405b`` setting (its logs' ``max_sequence_length``, ``mlcommons/training_results_v5.0``)."""

LLAMA31_8B = ModelSpec(
    name="Llama 3.1 8B",
    n_layers=32,
    hidden=4096,
    n_heads=32,
    n_kv_heads=8,
    ffn_hidden=14336,
    activation="swiglu",
    vocab_raw=128256,
    vocab_padded=128256,
    seq_len=8192,
    bias=False,
    norm="rmsnorm",
    learned_pos_emb=False,
    tied_embeddings=False,
)
"""Llama 3.1 8B as the MLPerf Training ``llama31_8b`` benchmark (v5.1, "Small LLM pretraining")
trains it: ``mlcommons/training@aa344c7f:small_llm_pretraining/nemo/README.md`` ("Model details":
32 layers, model dimension 4096, vocabulary 128,000) and ``…/pretrain_llama31.py:145``
(``seq_length = 8192``); 32 heads, 8 KV heads, SwiGLU 14,336 and the 128,256-entry tokenizer from
arXiv:2407.21783 Table 3 and ``meta-llama/Llama-3.1-8B`` ``config.json``; untied output.
:func:`param_count` gives 8,030,261,248 (the model card's "8.03B")."""

PRESETS: dict[str, ModelSpec] = {
    "gpt3_175b": GPT3_175B,
    "llama2_70b": LLAMA2_70B,
    "llama31_405b": LLAMA31_405B,
    "llama31_8b": LLAMA31_8B,
}
"""Model presets keyed by benchmark-style short names."""


def _vocab(spec: ModelSpec, vocab: int | Literal["raw", "padded"]) -> int:
    if vocab == "raw":
        return spec.vocab_raw
    if vocab == "padded":
        return spec.vocab_padded
    if isinstance(vocab, int):
        return vocab
    raise ValueError(f"vocab must be 'raw', 'padded' or an int, got {vocab!r}")


# --------------------------------------------------------------------------------------------
# Parameter counts
# --------------------------------------------------------------------------------------------


def narayanan_param_count(spec: ModelSpec, vocab: int | Literal["raw", "padded"] = "raw") -> float:
    """Parameter count by [SC21]: ``P = 12·l·h²·(1 + 13/(12h) + (V+s)/(12·l·h))``.

    Valid for GPT-3-style models (MHA, 4h GELU MLP, biases, LayerNorm, learned positions, tied
    embeddings). The final LayerNorm (2h) is not counted by the formula.

    Args:
        spec: model.
        vocab: ``'raw'`` (default; GPT-3 with V=50257 gives 174.60e9), ``'padded'`` or an int.

    Returns:
        Parameters (count, float).
    """
    n_l, h, s = spec.n_layers, spec.hidden, spec.seq_len
    v = _vocab(spec, vocab)
    return 12 * n_l * h * h * (1 + 13 / (12 * h) + (v + s) / (12 * n_l * h))


def linear_weights_per_layer(spec: ModelSpec) -> dict[str, tuple[int, int]]:
    """(d_in, d_out) of every linear layer in one transformer block."""
    h, kv, f = spec.hidden, spec.kv_dim, spec.ffn_hidden
    mats = {
        "q": (h, h),
        "k": (h, kv),
        "v": (h, kv),
        "o": (h, h),
    }
    if spec.activation == "swiglu":
        mats.update({"gate": (h, f), "up": (h, f), "down": (f, h)})
    else:
        mats.update({"up": (h, f), "down": (f, h)})
    return mats


def param_count(spec: ModelSpec, vocab: int | Literal["raw", "padded"] = "raw") -> int:
    """General parameter count (handles GQA, SwiGLU, RMSNorm, untied embeddings, no biases).

    Per layer: Q, K, V, O projections (K and V have ``n_kv_heads·head_dim`` outputs), the MLP
    (2 matrices for GELU, 3 for SwiGLU), biases if ``spec.bias``, two norms. Plus the input
    embedding ``V·h``, learned positions ``s·h`` if any, the final norm and an untied output
    matrix ``V·h`` if ``tied_embeddings`` is false.

    For GPT-3 this equals :func:`narayanan_param_count` plus the final LayerNorm's ``2h``
    (the SC21 formula omits it): per layer ``12h² + 13h``, embeddings ``(V + s)·h``.
    For Llama 2 70B (vocab 32000) it gives 68,976,648,192 (the published "70B").

    Returns:
        Parameters (int).
    """
    h = spec.hidden
    v = _vocab(spec, vocab)
    per_layer = 0
    for d_in, d_out in linear_weights_per_layer(spec).values():
        per_layer += d_in * d_out + (d_out if spec.bias else 0)
    norm_params = 2 * h if spec.norm == "layernorm" else h
    per_layer += 2 * norm_params
    total = spec.n_layers * per_layer
    total += v * h  # input embedding
    if spec.learned_pos_emb:
        total += spec.seq_len * h
    total += norm_params  # final norm
    if not spec.tied_embeddings:
        total += v * h
    return total
