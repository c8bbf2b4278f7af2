"""The training memory model: model state (bytes per parameter by recipe), activations, bytes per GPU and the nodes a model needs."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import polars as pl

from trainperf.benchmarks import benchmark_name
from trainperf.flops.catalog import benchmark_model
from trainperf.flops.counts import lora_param_count
from trainperf.flops.models import PRESETS, ModelSpec, param_count
from trainperf.flops.units import Recompute

# --------------------------------------------------------------------------------------------
# Memory model
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Recipe:
    """Bytes per parameter of the model state, by component.

    Attributes:
        name: preset key.
        weight_bytes: working (compute) copy of the weights.
        grad_bytes: gradients.
        master_bytes: fp32 master weights (0 if the working copy is fp32).
        optimizer_bytes: optimizer state (Adam: momentum + variance, fp32 → 8).
        source: where the numbers come from.
    """

    name: str
    weight_bytes: float
    grad_bytes: float
    master_bytes: float
    optimizer_bytes: float
    source: str = ""

    @property
    def bytes_per_param(self) -> float:
        """Total model-state bytes per parameter, unsharded."""
        return self.weight_bytes + self.grad_bytes + self.master_bytes + self.optimizer_bytes


RECIPES: dict[str, Recipe] = {
    "mixed_adam_fp32_grads": Recipe(
        "mixed_adam_fp32_grads",
        2,
        4,
        4,
        8,
        "Megatron bf16 params + fp32 main grads: 18 B/param "
        "(NVIDIA/Megatron-LM@d98e8a64:docs/user-guide/features/dist_optimizer.md:14-20)",
    ),
    "mixed_adam": Recipe(
        "mixed_adam",
        2,
        2,
        4,
        8,
        "ZeRO (Rajbhandari et al. 2020, arXiv:1910.02054 §3.1): 2Ψ + 2Ψ + 12Ψ = 16 B/param",
    ),
    "fp32_adam": Recipe(
        "fp32_adam",
        4,
        4,
        0,
        8,
        "fp32 params and grads + Adam: 16 B/param (dist_optimizer.md:14-20)",
    ),
}
"""Model-state recipes keyed by name."""


def _model_of(bench: str, model: str) -> str:
    """The model a sentence names: ``GPT-3 175B``; ``Llama 2 70B (the Llama 2 70B LoRA
    benchmark)`` where the benchmark's name is not the model's."""
    name = benchmark_name(bench)
    return model if name == model else f"{model} (the {name} benchmark)"


def _recipe(recipe: Recipe | str) -> Recipe:
    if isinstance(recipe, Recipe):
        return recipe
    try:
        return RECIPES[recipe]
    except KeyError:
        raise ValueError(f"unknown recipe {recipe!r}; known: {sorted(RECIPES)}") from None


def model_state_bytes(
    spec: ModelSpec, recipe: Recipe | str = "mixed_adam_fp32_grads", n_params: float | None = None
) -> float:
    """Total model state (weights, grads, master weights, optimizer), bytes, unsharded.

    Args:
        spec: model (used for :func:`param_count` unless ``n_params`` is given).
        recipe: :class:`Recipe` or a key of :data:`RECIPES`.
        n_params: override the parameter count (e.g. 175e9 for the talk's arithmetic).

    Returns:
        Bytes. GPT-3 with N = 175e9 at 18 B/param: 3.15e12 (3.15 TB); with
        ``param_count(GPT3_175B)`` = 174.6e9: 3.14e12.

    Raises:
        ValueError: unknown recipe name.
    """
    n = float(param_count(spec) if n_params is None else n_params)
    return n * _recipe(recipe).bytes_per_param


def model_state_bytes_per_gpu(
    spec: ModelSpec,
    recipe: Recipe | str = "mixed_adam_fp32_grads",
    tp: int = 1,
    pp: int = 1,
    dp: int = 1,
    zero_stage: int = 0,
    n_params: float | None = None,
) -> float:
    """Model-state bytes on one GPU under TP × PP model parallelism and ZeRO over DP.

    Parameters per GPU are ``N / (tp·pp)`` (even split; embeddings and logits imbalance ignored).
    Sharding over the ``dp`` data-parallel ranks [ZeRO]:

    * stage 0: nothing sharded;
    * stage 1 (= Megatron distributed optimizer): master weights + optimizer state ``/dp``
      (bf16/fp32-grad recipe: ``6 + 12/dp`` B/param [DO]);
    * stage 2: also gradients ``/dp``;
    * stage 3: also weights ``/dp``.

    Returns:
        Bytes per GPU (float). GPT-3, 18 B/param, tp=4, pp=8: dp=1 → 98.2e9; dp=2, stage 1 → 65.5e9.

    Raises:
        ValueError: bad parallel sizes or stage.
    """
    if min(tp, pp, dp) < 1:
        raise ValueError("tp, pp and dp must be >= 1")
    if zero_stage not in (0, 1, 2, 3):
        raise ValueError(f"zero_stage must be 0..3, got {zero_stage}")
    r = _recipe(recipe)
    n = float(param_count(spec) if n_params is None else n_params) / (tp * pp)
    w, g, opt = r.weight_bytes, r.grad_bytes, r.master_bytes + r.optimizer_bytes
    if zero_stage >= 1:
        opt /= dp
    if zero_stage >= 2:
        g /= dp
    if zero_stage >= 3:
        w /= dp
    return n * (w + g + opt)


def activation_bytes_per_layer(
    spec: ModelSpec,
    micro_batch_size: int = 1,
    tp: int = 1,
    sequence_parallel: bool = True,
    recompute: Recompute = "none",
    flash_attention: bool = False,
    seq_len: int | None = None,
) -> float:
    """Activation bytes stored for one layer and one micro-batch [KOR] Table 2 (16-bit activations).

    * no recompute, no parallelism: ``s·b·h·(34 + 5·a·s/h)``;
      with TP and sequence parallelism: divided by ``tp``;
      with TP without SP: ``s·b·h·(10 + 24/t + 5·a·s/(h·t))``;
    * ``'selective'`` (attention core recomputed): ``34·s·b·h`` (÷ tp with SP);
    * ``'full'``: only the layer input, ``2·s·b·h`` (÷ tp with SP);
    * ``flash_attention=True`` drops the ``5·a·s/h`` term (no s² score matrix is stored).

    The formula was derived for MHA; for GQA models it is an approximation.

    Returns:
        Bytes. GPT-3, s=2048, b=1, tp=4 with SP: 0.72e9 (0.21e9 with flash attention).
    """
    s = seq_len or spec.seq_len
    b, h, a, t = micro_batch_size, spec.hidden, spec.n_heads, tp
    sbh = s * b * h
    score = 0.0 if flash_attention else 5 * a * s / h
    if recompute == "full":
        return 2 * sbh / (t if sequence_parallel else 1)
    if recompute == "selective":
        return 34 * sbh / (t if sequence_parallel else 1)
    if recompute != "none":
        raise ValueError(f"recompute must be 'none', 'selective' or 'full', got {recompute!r}")
    if sequence_parallel or t == 1:
        return sbh * (34 + score) / t
    return sbh * (10 + 24 / t + score / t)


def activation_bytes_per_gpu(
    spec: ModelSpec,
    micro_batch_size: int = 1,
    tp: int = 1,
    pp: int = 1,
    virtual_pp: int = 1,
    sequence_parallel: bool = True,
    recompute: Recompute = "none",
    flash_attention: bool = False,
) -> float:
    """Peak activation bytes on the first pipeline stage under 1F1B [KOR] §4.2.3.

    The first stage holds ``pp`` micro-batches of ``l/pp`` layers, i.e. ``l`` layers' worth of
    activations whatever ``pp`` is; the interleaved schedule multiplies this by
    ``1 + (pp − 1)/(pp · virtual_pp)``. Embedding, logits and loss buffers are not counted.

    Returns:
        Bytes per GPU.
    """
    per_layer = activation_bytes_per_layer(
        spec, micro_batch_size, tp, sequence_parallel, recompute, flash_attention
    )
    factor = 1.0
    if virtual_pp > 1 and pp > 1:
        factor += (pp - 1) / (pp * virtual_pp)
    return spec.n_layers * per_layer * factor


@dataclass(frozen=True)
class MemoryBreakdown:
    """Per-GPU memory estimate, bytes.

    Attributes:
        model_state_bytes: weights + grads + master + optimizer on this GPU.
        activation_bytes: stored activations (first pipeline stage).
        total_bytes: sum of the two (no workspace, NCCL buffers or fragmentation).
    """

    model_state_bytes: float
    activation_bytes: float

    @property
    def total_bytes(self) -> float:
        """Model state + activations, bytes."""
        return self.model_state_bytes + self.activation_bytes


def bytes_per_gpu(
    spec: ModelSpec,
    recipe: Recipe | str = "mixed_adam_fp32_grads",
    tp: int = 1,
    pp: int = 1,
    dp: int = 1,
    zero_stage: int = 1,
    micro_batch_size: int = 1,
    virtual_pp: int = 1,
    sequence_parallel: bool = True,
    recompute: Recompute = "none",
    flash_attention: bool = True,
    n_params: float | None = None,
) -> MemoryBreakdown:
    """Per-GPU memory: :func:`model_state_bytes_per_gpu` + :func:`activation_bytes_per_gpu`.

    Defaults follow the NVIDIA MLPerf GPT-3 layout family (distributed optimizer = ZeRO-1,
    sequence parallel, fused/flash attention, no recompute).

    Returns:
        :class:`MemoryBreakdown` in bytes.
    """
    return MemoryBreakdown(
        model_state_bytes=model_state_bytes_per_gpu(spec, recipe, tp, pp, dp, zero_stage, n_params),
        activation_bytes=activation_bytes_per_gpu(
            spec,
            micro_batch_size,
            tp,
            pp,
            virtual_pp,
            sequence_parallel,
            recompute,
            flash_attention,
        ),
    )


def min_nodes_for_model_state(
    spec: ModelSpec,
    recipe: Recipe | str = "mixed_adam_fp32_grads",
    gpus_per_node: int = 8,
    gpu_memory_bytes: float = 80e9,
    n_params: float | None = None,
) -> int:
    """Smallest node count whose aggregate GPU memory holds the model state, perfect sharding.

    ``ceil(model_state_bytes / (gpus_per_node · gpu_memory_bytes))`` — a lower bound that
    ignores activations, workspace, NCCL buffers and the divisibility of a real TP×PP×DP layout.
    GPT-3 at 18 B/param: 3.15e12 B > 4 × 8 × 80e9 = 2.56e12 B, so at least 5 nodes.

    Returns:
        Nodes (int).
    """
    state = model_state_bytes(spec, recipe, n_params)
    return math.ceil(state / (gpus_per_node * gpu_memory_bytes))


def model_state_fit_sentence(
    model: str,
    state_bytes: float,
    gpu_memory_bytes: float,
    gpus_per_node: int,
    accelerator: str,
) -> str:
    """The memory model's finding in one sentence, computed from the accelerator's memory.

    ``min_nodes = ceil(state / (gpus_per_node · memory))`` (:func:`min_nodes_for_model_state`);
    the sentence compares the state with the memory of ``min_nodes − 1`` nodes (which it exceeds)
    and of ``min_nodes`` (which holds it), so it is true for any accelerator. Decimal TB.

    >>> model_state_fit_sentence("GPT-3 175B", 3.14e12, 80e9, 8, "H100 SXM")  # 640 GB a node
    '3.14 TB of model state do not fit the 2.56 TB of 4 nodes of 8 H100 SXM (80 GB each): GPT-3 175B needs at least 5 nodes (3.20 TB) before any activation'
    >>> model_state_fit_sentence("GPT-3 175B", 3.14e12, 192e9, 8, "MI300X")  # 1.536 TB a node
    '3.14 TB of model state do not fit the 3.07 TB of 2 nodes of 8 MI300X (192 GB each): GPT-3 175B needs at least 3 nodes (4.61 TB) before any activation'
    """
    per_node = gpus_per_node * gpu_memory_bytes
    need = math.ceil(state_bytes / per_node)
    what = f"{gpus_per_node} {accelerator} ({gpu_memory_bytes / 1e9:g} GB each)"
    node_s = "node" if need == 1 else "nodes"
    if need <= 1:
        return (
            f"{state_bytes / 1e12:.2f} TB of model state fit the {per_node / 1e12:.2f} TB of one "
            f"node of {what}: {model} needs at least 1 node before any activation"
        )
    below = need - 1
    return (
        f"{state_bytes / 1e12:.2f} TB of model state do not fit the {below * per_node / 1e12:.2f} TB "
        f"of {below} node{'s' if below != 1 else ''} of {what}: {model} needs at least {need} "
        f"{node_s} ({need * per_node / 1e12:.2f} TB) before any activation"
    )


def memory_vs_nodes(
    spec: ModelSpec,
    nodes: Iterable[int] = (1, 2, 4, 8, 16, 32, 64, 96),
    recipe: Recipe | str = "mixed_adam_fp32_grads",
    gpus_per_node: int = 8,
    gpu_memory_bytes: float = 80e9,
    tp: int = 4,
    pp: int = 8,
    zero_stage: int = 1,
    n_params: float | None = None,
) -> pl.DataFrame:
    """Model-state memory against node count, for charts.

    Returns:
        polars frame, one row per node count, columns:
        ``n_nodes`` (Int64), ``n_gpus`` (Int64), ``aggregate_hbm_bytes`` (Float64),
        ``model_state_bytes`` (Float64, total, unsharded), ``bytes_per_gpu_perfect`` (Float64,
        total / n_gpus), ``fits_perfect`` (Boolean), ``dp`` (Int64, ``n_gpus/(tp·pp)``, null if
        not a positive integer), ``bytes_per_gpu_layout`` (Float64, :func:`model_state_bytes_per_gpu`
        with tp/pp/dp/zero_stage; null where dp is null), ``fits_layout`` (Boolean, model state
        only, null where dp is null), ``gpu_memory_bytes`` (Float64).
    """
    state = model_state_bytes(spec, recipe, n_params)
    rows = []
    for n in nodes:
        g = n * gpus_per_node
        dp = g // (tp * pp) if g % (tp * pp) == 0 and g >= tp * pp else None
        layout = (
            model_state_bytes_per_gpu(spec, recipe, tp, pp, dp, zero_stage, n_params)
            if dp
            else None
        )
        rows.append(
            {
                "n_nodes": n,
                "n_gpus": g,
                "aggregate_hbm_bytes": float(g * gpu_memory_bytes),
                "model_state_bytes": state,
                "bytes_per_gpu_perfect": state / g,
                "fits_perfect": state / g <= gpu_memory_bytes,
                "dp": dp,
                "bytes_per_gpu_layout": layout,
                "fits_layout": None if layout is None else layout <= gpu_memory_bytes,
                "gpu_memory_bytes": float(gpu_memory_bytes),
            }
        )
    schema = {
        "n_nodes": pl.Int64,
        "n_gpus": pl.Int64,
        "aggregate_hbm_bytes": pl.Float64,
        "model_state_bytes": pl.Float64,
        "bytes_per_gpu_perfect": pl.Float64,
        "fits_perfect": pl.Boolean,
        "dp": pl.Int64,
        "bytes_per_gpu_layout": pl.Float64,
        "fits_layout": pl.Boolean,
        "gpu_memory_bytes": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema)


# --------------------------------------------------------------------------------------------
# Model state of each MLPerf Training benchmark
# --------------------------------------------------------------------------------------------


def lora_model_state_bytes(
    spec: ModelSpec,
    lora_rank: int,
    target_modules: tuple[str, ...] = ("q", "k", "v", "o"),
    recipe: Recipe | str = "mixed_adam_fp32_grads",
    frozen_weight_bytes: float = 2.0,
) -> tuple[float, float]:
    """Model state of LoRA fine-tuning: frozen base weights plus trainable adapters, bytes.

    The base weights are frozen [LoRA] (Hu et al., arXiv:2106.09685, section 4.2: no gradients or
    optimizer state for them), kept in ``frozen_weight_bytes`` per parameter (bf16: 2, the MLPerf
    ``llama2_70b_lora`` reference); only the adapters of :func:`~trainperf.flops.lora_param_count`
    carry the full ``recipe`` (weights, gradients, master copy, Adam moments).

    Returns:
        ``(frozen_bytes, adapter_bytes)``. Llama 2 70B, rank 16 on q, k, v, o: 68,976,648,192 × 2
        = 137.95e9 B frozen; 80 layers × 16 × (2·(8192+8192) + 2·(8192+1024)) = 65,536,000 adapter
        parameters × 18 B = 1.18e9 B.
    """
    frozen = float(param_count(spec)) * frozen_weight_bytes
    adapters = (
        float(lora_param_count(spec, lora_rank, target_modules)) * _recipe(recipe).bytes_per_param
    )
    return frozen, adapters


#: What each MLPerf Training benchmark trains, for the memory model: the model, and the LoRA rank
#: where only adapters train. Sources: GPT-3 175B and Llama 3.1 405B are pre-trained in full
#: (MLPerf Training rules, ``mlcommons/training_policies`` ``training_rules.adoc``, benchmark table;
#: shapes in :data:`~trainperf.flops.GPT3_175B` and :data:`~trainperf.flops.LLAMA31_405B`, the
#: latter from arXiv:2407.21783 Table 3); ``llama2_70b_lora`` fine-tunes Llama 2 70B
#: (arXiv:2307.09288) with LoRA adapters of rank 16 on the attention projections (the
#: ``lora_rank`` events of the Eos v4.1 logs in ``data/mlperf``; NeMo ``linear_qkv`` +
#: ``linear_proj``).
BENCHMARK_TRAINING: dict[str, tuple[str, int | None]] = {
    "gpt3": ("gpt3_175b", None),
    "llama31_405b": ("llama31_405b", None),
    "llama2_70b_lora": ("llama2_70b", 16),
    "llama31_8b": ("llama31_8b", None),
    "deepseekv3_671b": ("deepseekv3_671b", None),
    "gpt_oss_20b": ("gpt_oss_20b", None),
    "flux1": ("flux1", None),
}
"""Benchmark -> (model: a key of :data:`PRESETS`, or for the mixture-of-experts and Flux.1
models the benchmark of :func:`trainperf.flops.catalog.benchmark_model`; LoRA rank or None).
A mixture-of-experts model holds the state of every expert (all of its parameters are trained;
a token computes with the active ones only, which the FLOP counts use)."""

MODEL_STATE_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.String,
    "model": pl.String,
    "parameters": pl.Int64,
    "trainable_parameters": pl.Int64,
    "lora_rank": pl.Int64,
    "active_parameters": pl.Int64,
    "recipe": pl.String,
    "model_state_bytes": pl.Float64,
    "gpu_memory_bytes": pl.Float64,
    "gpus_per_node": pl.Int64,
    "min_gpus": pl.Int64,
    "min_nodes": pl.Int64,
    "sentence": pl.String,
}
"""Columns of :func:`model_state_by_benchmark`."""


def model_state_by_benchmark(
    benchmarks: Iterable[str],
    gpu_memory_bytes: float,
    gpus_per_node: int,
    accelerator: str,
    recipe: Recipe | str = "mixed_adam_fp32_grads",
) -> pl.DataFrame:
    """The model state each benchmark trains, against one accelerator's memory.

    Full training (GPT-3 175B, Llama 3.1 405B): :func:`model_state_bytes` with ``recipe`` over all
    parameters. LoRA (Llama 2 70B): :func:`lora_model_state_bytes`. ``min_gpus =
    ceil(state / memory)`` and ``min_nodes = ceil(state / (gpus_per_node · memory))``: lower
    bounds with a perfect split, before any activation, workspace or NCCL buffer.

    Args:
        benchmarks: MLPerf benchmark names (keys of :data:`BENCHMARK_TRAINING`, in that order in
            the result; others are left out).
        gpu_memory_bytes: memory of one GPU, bytes (decimal: 80 GB = 80e9).
        gpus_per_node: GPUs per node.
        accelerator: the accelerator's name, for the sentence.

    Returns:
        polars frame with :data:`MODEL_STATE_SCHEMA`, one row per benchmark: ``benchmark``,
        ``model``, ``parameters`` (all), ``trainable_parameters`` (LoRA: the adapters),
        ``lora_rank`` (null for full training), ``recipe`` (String), ``model_state_bytes``,
        ``gpu_memory_bytes``, ``gpus_per_node``, ``min_gpus``, ``min_nodes`` (Int64) and
        ``sentence`` (String, plain text: the finding, true for any memory size).

    >>> t = model_state_by_benchmark(["llama2_70b_lora"], 80e9, 8, "H100 SXM")
    >>> t["min_gpus"][0], round(t["model_state_bytes"][0] / 1e9, 1)
    (2, 139.1)
    """
    rec = _recipe(recipe)
    wanted = set(benchmarks)
    rows = []
    per_node = gpus_per_node * gpu_memory_bytes
    for bench, (preset, rank) in BENCHMARK_TRAINING.items():
        if bench not in wanted:
            continue
        spec = PRESETS.get(preset)
        cat = benchmark_model(bench)
        n = param_count(spec) if spec is not None else cat.params_total
        model_name = spec.name if spec is not None else cat.model
        active = cat.params_active if cat is not None else n
        if rank is None:
            state, trainable = n * rec.bytes_per_param, n
            how = f"{n / 1e9:.1f} billion parameters trained in full at {rec.bytes_per_param:g} bytes each"
            if active < n:
                how += f", every expert held though a token uses {active / 1e9:.1f} billion"
        else:
            frozen, adapters = lora_model_state_bytes(spec, rank, recipe=rec)
            state, trainable = frozen + adapters, lora_param_count(spec, rank)
            how = (
                f"{frozen / 1e9:.1f} GB of frozen bf16 weights, its {n / 1e9:.1f} billion "
                f"parameters at 2 bytes each, and {adapters / 1e9:.2f} GB for the {trainable / 1e6:.1f} million parameters of "
                f"its rank-{rank} LoRA adapters at {rec.bytes_per_param:g} bytes each"
            )
        min_gpus = math.ceil(state / gpu_memory_bytes)
        min_nodes = math.ceil(state / per_node)
        size = f"{state / 1e12:.2f} TB" if state >= 1e12 else f"{state / 1e9:.1f} GB"
        one = f"{gpu_memory_bytes / 1e9:g} GB"
        if min_nodes <= 1:
            fit = (
                f"it fits one node of {gpus_per_node} {accelerator} ({per_node / 1e12:.2f} TB) and "
                f"needs at least {min_gpus} GPU{'s' if min_gpus != 1 else ''} of {one}"
            )
        else:
            below = min_nodes - 1
            fit = (
                f"it does not fit the {below * per_node / 1e12:.2f} TB of {below} "
                f"node{'s' if below != 1 else ''} of {gpus_per_node} {accelerator} ({one} each) "
                f"and needs at least {min_nodes} nodes ({min_nodes * per_node / 1e12:.2f} TB)"
            )
        sentence = (
            f"{_model_of(bench, model_name)} carries {size} of model state ({how}): {fit}, before any "
            "activation"
        )
        rows.append(
            {
                "benchmark": bench,
                "model": model_name,
                "parameters": n,
                "trainable_parameters": trainable,
                "lora_rank": rank,
                "active_parameters": active,
                "recipe": rec.name,
                "model_state_bytes": state,
                "gpu_memory_bytes": float(gpu_memory_bytes),
                "gpus_per_node": gpus_per_node,
                "min_gpus": min_gpus,
                "min_nodes": min_nodes,
                "sentence": sentence,
            }
        )
    return pl.DataFrame(rows, schema=MODEL_STATE_SCHEMA)
