"""Mixture-of-experts transformers (DeepSeek-V3 671B, GPT-OSS-20B as MLPerf Training v6.0 trains
them): parameter counts (total and active per token) and model FLOPs per token.

Counting convention (the same as :func:`trainperf.flops.model_flops_per_token` for dense models,
stated once here for every mixture-of-experts count):

* one multiply-add = 2 FLOP; a linear layer ``d_in x d_out`` costs ``2·d_in·d_out`` per token
  forward; training = 3 x forward (forward, dgrad, wgrad); no recomputation (MFU numerator);
* **experts**: a token pays for the ``top_k`` routed experts it is sent to and for every shared
  expert, never for the others (the *active* parameters); each expert is a SwiGLU MLP of three
  ``hidden x expert_ffn`` matrices;
* **router**: its ``hidden x n_experts`` linear layer is counted like any GEMM; softmax, top-k
  selection, token permutation and the all-to-all are not FLOPs of the model;
* **attention core** (``QKᵀ`` and ``softmax·V``): ``2·n_heads·(d_qk + d_v)`` FLOP per key per
  query; a query sees ``seq_len`` keys (dense, as SC21 and PaLM count) or ``seq_len/2`` with
  ``causal=True`` (Megatron-LM since 2025-03); a sliding-window layer sees ``min(window, seq_len)``
  keys in both conventions (its window is causal by construction);
* **MLA** (DeepSeek-V3): the low-rank projections ``q_a``, ``q_b``, ``kv_a``, ``kv_b`` and ``o``
  are counted as the linear layers they are in training (no weight absorption);
* logits ``2·hidden·vocab`` once per token; embedding lookups, norms, biases, rotary embeddings
  and attention sinks are not counted (each under 0.1 % here);
* a multi-token-prediction (MTP) module is counted only when ``mtp_layers`` says it is trained.

Parameter counts use the same matrices (norms and biases left out): ``total`` holds every expert,
``active`` the ones a token uses plus the output matrix (the convention of the GPT-OSS model card,
whose 3.6B "active" excludes the input embedding).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "DEEPSEEK_V3_671B",
    "GPT_OSS_20B",
    "MoESpec",
    "moe_flops_per_token",
    "moe_param_counts",
]


@dataclass(frozen=True)
class MoESpec:
    """A decoder-only mixture-of-experts transformer, as far as FLOP and memory counts need it.

    Attributes:
        name: display name.
        n_layers: transformer layers.
        hidden: model width ``h``.
        vocab: vocabulary of the logits GEMM (padded, as trained).
        seq_len: training sequence length.
        n_heads: query heads.
        attention: ``"gqa"`` (grouped-query) or ``"mla"`` (multi-head latent attention).
        head_dim: per-head width of Q, K and V (GQA) or of V (MLA).
        n_kv_heads: key/value heads (GQA).
        q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim: MLA's low ranks and the
            non-rotary and rotary parts of each query/key head.
        window: sliding-window width (tokens) of the windowed layers; None: none.
        windowed: per layer, whether it uses the sliding window (len ``n_layers``; empty: none).
        n_dense_layers: leading layers with a dense MLP of width ``dense_ffn`` instead of experts.
        dense_ffn: width of those dense SwiGLU MLPs.
        n_experts: routed experts per MoE layer.
        top_k: routed experts per token.
        n_shared_experts: experts every token uses.
        expert_ffn: inner width of one expert (SwiGLU).
        mtp_layers: multi-token-prediction layers trained with the model (0: none).
    """

    name: str
    n_layers: int
    hidden: int
    vocab: int
    seq_len: int
    n_heads: int
    attention: Literal["gqa", "mla"]
    head_dim: int
    n_experts: int
    top_k: int
    expert_ffn: int
    n_shared_experts: int = 0
    n_kv_heads: int = 0
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    window: int | None = None
    windowed: tuple[bool, ...] = ()
    n_dense_layers: int = 0
    dense_ffn: int = 0
    mtp_layers: int = 0

    def __post_init__(self) -> None:
        if self.attention not in ("gqa", "mla"):
            raise ValueError(f"attention must be 'gqa' or 'mla', got {self.attention!r}")
        if self.windowed and len(self.windowed) != self.n_layers:
            raise ValueError("windowed must give one flag per layer")
        if not 0 < self.top_k <= self.n_experts:
            raise ValueError("top_k must be between 1 and n_experts")

    def attention_weights(self) -> dict[str, tuple[int, int]]:
        """(d_in, d_out) of every linear layer of one attention block."""
        h, a = self.hidden, self.n_heads
        if self.attention == "gqa":
            q, kv = a * self.head_dim, self.n_kv_heads * self.head_dim
            return {"q": (h, q), "k": (h, kv), "v": (h, kv), "o": (q, h)}
        d_qk = self.qk_nope_head_dim + self.qk_rope_head_dim
        return {
            "q_a": (h, self.q_lora_rank),
            "q_b": (self.q_lora_rank, a * d_qk),
            "kv_a": (h, self.kv_lora_rank + self.qk_rope_head_dim),
            "kv_b": (self.kv_lora_rank, a * (self.qk_nope_head_dim + self.head_dim)),
            "o": (a * self.head_dim, h),
        }

    @property
    def qk_head_dim(self) -> int:
        """Width of one query/key head (MLA: non-rotary + rotary parts)."""
        if self.attention == "mla":
            return self.qk_nope_head_dim + self.qk_rope_head_dim
        return self.head_dim


def _swiglu(h: int, f: int) -> int:
    return 3 * h * f


def moe_param_counts(spec: MoESpec) -> dict[str, int]:
    """Parameters of a mixture-of-experts model (matrices only: norms and biases left out).

    Returns:
        ``{"total", "active", "embedding", "experts"}`` (int counts): ``total`` every weight
        (all experts; what the model state holds), ``active`` what one token uses (attention, the
        dense MLPs, the router, ``top_k`` routed and every shared expert, the output matrix),
        ``embedding`` the input embedding, ``experts`` all routed experts.
        DeepSeek-V3 with its own 129,280-entry vocabulary: total 671.0e9 and active 36.6e9 (the
        report's "671B total, 37B activated", arXiv:2412.19437 §1); GPT-OSS-20B with its own
        201,088 entries: 20.9e9 and 3.6e9 (the model card's "21B" and "3.6B").
    """
    h = spec.hidden
    attn = sum(i * o for i, o in spec.attention_weights().values())
    n_moe = spec.n_layers - spec.n_dense_layers
    expert = _swiglu(h, spec.expert_ffn)
    router = h * spec.n_experts
    dense = spec.n_dense_layers * _swiglu(h, spec.dense_ffn)
    shared = spec.n_shared_experts * expert
    embed = spec.vocab * h
    out_matrix = spec.vocab * h
    body_total = spec.n_layers * attn + dense + n_moe * (spec.n_experts * expert + shared + router)
    body_active = spec.n_layers * attn + dense + n_moe * (spec.top_k * expert + shared + router)
    return {
        "total": body_total + embed + out_matrix,
        "active": body_active + out_matrix,
        "embedding": embed,
        "experts": n_moe * spec.n_experts * expert,
    }


def moe_flops_per_token(spec: MoESpec, causal: bool = False) -> float:
    """Model FLOPs per training token of a mixture-of-experts model (the convention of the module
    docstring: active experts only, router counted, 3 x forward, no recomputation).

    Per token forward: ``2·(active matrix parameters per layer)`` summed over layers, plus the
    attention core ``2·n_heads·(d_qk + d_v)·keys`` per layer (keys: ``seq_len``, ``seq_len/2``
    when ``causal``, ``min(window, seq_len)`` on windowed layers), plus logits ``2·h·vocab``.
    An MTP layer (``mtp_layers``) adds one MoE layer, its ``2h x h`` projection and one logits
    GEMM each.

    Returns:
        FLOP per token (float). DeepSeek-V3 as MLPerf v6.0 trains it (seq 4096, vocab 128,256,
        no MTP), dense attention: 2.8111e11 (``tests/test_moe_models.py`` by hand).
    """
    h = spec.hidden
    attn_linear = 2.0 * sum(i * o for i, o in spec.attention_weights().values())
    expert = 2.0 * _swiglu(h, spec.expert_ffn)
    router = 2.0 * h * spec.n_experts
    moe_mlp = (spec.top_k + spec.n_shared_experts) * expert + router
    per_key = 2.0 * spec.n_heads * (spec.qk_head_dim + spec.head_dim)
    full_keys = spec.seq_len / 2 if causal else float(spec.seq_len)
    fwd = 0.0
    for layer in range(spec.n_layers):
        win = spec.windowed[layer] if spec.windowed else False
        keys = float(min(spec.window, spec.seq_len)) if (win and spec.window) else full_keys
        mlp = 2.0 * _swiglu(h, spec.dense_ffn) if layer < spec.n_dense_layers else moe_mlp
        fwd += attn_linear + per_key * keys + mlp
    logits = 2.0 * h * spec.vocab
    fwd += logits
    for _ in range(spec.mtp_layers):
        fwd += attn_linear + per_key * full_keys + moe_mlp + 2.0 * (2 * h) * h + logits
    return 3.0 * fwd


DEEPSEEK_V3_671B = MoESpec(
    name="DeepSeek-V3 671B",
    n_layers=61,
    hidden=7168,
    vocab=128256,
    seq_len=4096,
    n_heads=128,
    attention="mla",
    head_dim=128,
    q_lora_rank=1536,
    kv_lora_rank=512,
    qk_nope_head_dim=128,
    qk_rope_head_dim=64,
    n_dense_layers=3,
    dense_ffn=18432,
    n_experts=256,
    top_k=8,
    n_shared_experts=1,
    expert_ffn=2048,
)
"""DeepSeek-V3 as the MLPerf Training v6.0 ``deepseekv3_671b`` benchmark ("LLM MoE pretraining")
trains it: ``mlcommons/training@aa344c7f:llm_moe_pretraining/nemo/README.md`` ("Model details":
61 layers, MLA, 128 heads, model dimension 7,168, 256 routed experts, 8 active, 1 shared, SwiGLU,
the Llama 3.1 8B tokenizer, context length 4,096; ``pretrain_deepseek_v3_671b.py:236``
``--sequence_length`` default 4096). The widths the README does not list are DeepSeek-V3's own
(arXiv:2412.19437 §4.2 and ``deepseek-ai/DeepSeek-V3`` ``config.json``: ``q_lora_rank`` 1536,
``kv_lora_rank`` 512, ``qk_nope_head_dim`` 128, ``qk_rope_head_dim`` 64, ``v_head_dim`` 128,
``moe_intermediate_size`` 2048, ``intermediate_size`` 18432, ``first_k_dense_replace`` 3).
Vocabulary: the Llama 3.1 tokenizer's 128,256 entries (the README rounds to "128,000").
The MTP module is not counted (``mtp_layers=0``): the reference's files do not set it; pass
``dataclasses.replace(DEEPSEEK_V3_671B, mtp_layers=1)`` for a run that trains it."""

GPT_OSS_20B = MoESpec(
    name="GPT-OSS-20B",
    n_layers=24,
    hidden=2880,
    vocab=128256,
    seq_len=8192,
    n_heads=64,
    attention="gqa",
    head_dim=64,
    n_kv_heads=8,
    window=128,
    windowed=tuple(i % 2 == 0 for i in range(24)),
    n_experts=32,
    top_k=4,
    expert_ffn=2880,
)
"""GPT-OSS-20B as the MLPerf Training v6.0 ``gpt_oss_20b`` benchmark ("Small LLM MoE
pretraining") trains it: ``mlcommons/training@aa344c7f:small_llm_moe_pretraining/primus/conf/
gpt_oss_20B-pretrain.yaml`` (24 layers, hidden and expert width 2880, 64 heads, 8 query groups,
32 experts, ``moe_router_topk: 4``, SwiGLU, ``seq_length`` 8192, the Llama 3 tokenizer,
``window_size: [128, 0]`` on the layers where ``window_attn_skip_freq`` is 1: layers 0, 2, 4...).
Head width 64 from the model card (``openai/gpt-oss-20b`` ``config.json``: ``head_dim`` 64).
Vocabulary 128,256 (the Llama 3 tokenizer the benchmark trains with, not GPT-OSS's own 201,088)."""
