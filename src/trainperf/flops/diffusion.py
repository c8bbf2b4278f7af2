"""Flux.1 (the MLPerf Training v5.1 ``flux1`` text-to-image benchmark): parameters and model FLOPs
per training image.

Counting convention (as for the language models, :mod:`trainperf.flops.moe`): one multiply-add =
2 FLOP, training = 3 x forward, no recomputation. Only the trained diffusion transformer counts:
the frozen T5-XXL and CLIP text encoders and the VAE encoder are not model FLOPs of training (the
benchmark may run them offline, ``flux_schnell_mlperf_preprocessed.toml``). Attention is
bidirectional over the joint text + image sequence (no causal mask: every query sees every key).
Per-image (not per-token) work, the AdaLN modulation of each block and the timestep and pooled-text
embedders, is counted once per image. Norms, biases and rotary embeddings are not counted.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FLUX1_SCHNELL", "FluxSpec", "flux_flops_per_image", "flux_param_count"]


@dataclass(frozen=True)
class FluxSpec:
    """A Flux.1 multimodal diffusion transformer (MMDiT) and the images it trains on.

    Attributes:
        name: display name.
        hidden: width of every block (``hidden_size``).
        n_heads: attention heads.
        n_double: double-stream blocks (separate text and image weights, joint attention).
        n_single: single-stream blocks (one weight set over the joint sequence).
        mlp_ratio: MLP inner width / ``hidden``.
        in_channels: channels of one image token (VAE latent channels x patch²: 16 x 2 x 2 = 64).
        context_dim: width of the T5 text embeddings (4096).
        vec_dim: width of the pooled CLIP embedding (768).
        time_dim: width of the sinusoidal timestep embedding (256).
        guidance: a guidance embedder (FLUX.1-dev; schnell has none).
        image_size: training resolution, pixels per side.
        vae_factor: VAE down-sampling (8).
        patch: latent patch size (2).
        text_len: T5 tokens per caption.
    """

    name: str
    hidden: int = 3072
    n_heads: int = 24
    n_double: int = 19
    n_single: int = 38
    mlp_ratio: float = 4.0
    in_channels: int = 64
    context_dim: int = 4096
    vec_dim: int = 768
    time_dim: int = 256
    guidance: bool = False
    image_size: int = 256
    vae_factor: int = 8
    patch: int = 2
    text_len: int = 256

    @property
    def image_tokens(self) -> int:
        """Image tokens per image: ``(image_size / vae_factor / patch)²`` (256 px: 16² = 256)."""
        side = self.image_size // (self.vae_factor * self.patch)
        return side * side

    @property
    def seq_len(self) -> int:
        """Joint sequence: text tokens + image tokens."""
        return self.text_len + self.image_tokens

    def _block_matrices(self) -> tuple[int, int]:
        """(per-token matrix parameters of one stream of a double block, of a single block).

        Double block, per stream: qkv ``h x 3h``, proj ``h x h``, MLP ``h x rh`` and ``rh x h``.
        Single block: ``linear1`` ``h x (3h + rh)`` (qkv and MLP in), ``linear2`` ``(h + rh) x h``.
        """
        h, m = self.hidden, int(self.hidden * self.mlp_ratio)
        return h * 3 * h + h * h + 2 * h * m, h * (3 * h + m) + (h + m) * h

    def _per_image_matrices(self) -> int:
        """Matrices applied once per image: modulation (double: 2 streams x ``h x 6h``; single
        ``h x 3h``; final ``h x 2h``), timestep, pooled-text (and guidance) embedders."""
        h = self.hidden
        mod = self.n_double * 2 * h * 6 * h + self.n_single * h * 3 * h + h * 2 * h
        emb = (self.time_dim * h + h * h) + (self.vec_dim * h + h * h)
        if self.guidance:
            emb += self.time_dim * h + h * h
        return mod + emb


def flux_param_count(spec: FluxSpec) -> int:
    """Parameters of the diffusion transformer (matrices only; norms and biases left out).

    FLUX.1-schnell: 11,891,178,496 (the benchmark README's "~11.9B").
    """
    h = spec.hidden
    double, single = spec._block_matrices()
    blocks = spec.n_double * 2 * double + spec.n_single * single
    io = spec.in_channels * h + spec.context_dim * h + h * spec.in_channels
    return blocks + spec._per_image_matrices() + io


def flux_flops_per_image(spec: FluxSpec) -> float:
    """Model FLOPs to train on one image (forward + backward, 3 x forward).

    Forward: every block applies its matrices to each of the ``seq_len`` tokens (a double block's
    two streams: text tokens through the text weights, image tokens through the image weights;
    the same count per token), plus joint attention ``4·seq_len²·hidden`` per block; the input
    projections (``in_channels -> h`` per image token, ``context_dim -> h`` per text token), the
    final ``h -> in_channels`` per image token and the per-image matrices once.

    Returns:
        FLOP per image. FLUX.1-schnell at 256 x 256 (512 tokens): 2.0422e13
        (``tests/test_moe_models.py`` by hand).
    """
    h, s = spec.hidden, spec.seq_len
    double, single = spec._block_matrices()
    blocks = s * (spec.n_double * double + spec.n_single * single)
    attn = (spec.n_double + spec.n_single) * 4.0 * s * s * h  # QKᵀ and PV: 2·s²·h FLOP each
    io = spec.image_tokens * (spec.in_channels * h + h * spec.in_channels)
    io += spec.text_len * spec.context_dim * h
    fwd = 2.0 * (blocks + io + spec._per_image_matrices()) + attn
    return 3.0 * fwd


FLUX1_SCHNELL = FluxSpec(name="Flux.1-schnell")
"""FLUX.1-schnell as the MLPerf Training ``flux1`` benchmark trains it:
``mlcommons/training@aa344c7f:text_to_image/README.md`` §4 ("List of layers": 19 double-stream and
38 single-stream blocks, 24 heads, hidden 3072, MLP ratio 4.0, 64 input channels, T5-XXL with 256
tokens, CLIP pooled 768, VAE factor 8 "256→32", 16 channels; §3: images resized to 256x256), the
model of ``huggingface.co/black-forest-labs/FLUX.1-schnell`` as torchtitan implements it
(no guidance embedder in schnell)."""
