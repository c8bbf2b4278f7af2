"""A small GPT trained with tensor, pipeline and data parallelism, logged as MLPerf and traced per rank.

The smoke benchmark's model (:mod:`trainperf.capture.smoke`: presets, :class:`~trainperf.flops.ModelSpec`,
synthetic tokens, MLPerf events) laid out the way Megatron-LM lays out GPT-3 (Shoeybi et al. 2019,
arXiv:1909.08053, §3; Narayanan et al. SC21, arXiv:2104.04473, §2):

* **tensor parallel** (``tp``, inside a host): in each block the QKV and first MLP linear are split
  by output columns and the attention output and second MLP linear by input rows, so a block's
  forward needs two all-reduces over the ``tp`` group (``g``) and its backward two more (``f``); the
  vocabulary is split too (output head and a vocab-parallel cross-entropy: three all-reduces of
  ``[tokens]`` in the forward). Heads are divided among the ``tp`` ranks.
* **pipeline parallel** (``pp``): the blocks are cut into ``pp`` stages; the first holds the
  embeddings (replicated over ``tp``), the last the final LayerNorm and the output head (untied from
  the embedding, split by vocabulary; the logged ModelSpec says ``tied_embeddings: false``).
  ``--micro-batches`` micro-batches run GPipe-style (all forwards, then all backwards; Huang et
  al. 2019): activations go to the next stage and gradients back by point-to-point send/recv
  (NCCL ``SendRecv`` kernels on GPUs, ``gloo:send``/``gloo:recv`` on the CPU).
* **data parallel** (``dp``): replicas of the whole pipeline on different tokens; after the
  backward each stage all-reduces its gradients over its ``dp`` group (one flat fp32 buffer).

Ranks: ``rank = pp_rank * (dp * tp) + dp_rank * tp + tp_rank`` (``tp`` fastest, so a ``tp`` group is
consecutive GPUs of one host). One all-reduce over all ranks per step carries the stop flag and
the loss. Gradients are not clipped (a global norm would need one more reduction over ``tp`` and
``pp``); otherwise AdamW as in the smoke benchmark. The layout and the MLPerf log's events are those
of :mod:`trainperf.capture.smoke` plus ``parallel_layout`` ``{"tp", "pp", "dp", "micro_batches"}``;
rank 0 writes the log. With ``--profile-dir`` every rank writes a trace
(:class:`trainperf.capture.profile.StepProfiler`) whose ``trainperf`` metadata also holds the layout
and the rank's ``tp_rank``/``pp_rank``/``dp_rank``.

NVLink multicast (NVLS) stays off: this module sets ``NCCL_NVLS_ENABLE=0``,
``TORCH_SYMM_MEM_DISABLE_MULTICAST=1`` and ``NVSHMEM_DISABLE_NVLS=1`` in its environment before
the process group exists, whatever the caller set (a program using it can take shared GPUs out of
service).

Run (``--layout auto`` picks tp x pp x dp from the world size: 2 -> 1x2x1, 4 -> 2x2x1,
8 -> 2x2x2)::

    torchrun --standalone --nproc-per-node 4 -m trainperf.capture.parallel --preset 1.3b \\
        --minutes 2 --micro-batches 8 --out-dir run/gpt_smoke --profile-dir run/trace
    torchrun --standalone --nproc-per-node 4 -m trainperf.capture.parallel --device cpu \\
        --preset tiny --tp 2 --pp 2 --steps 4 --out-dir /tmp/p/gpt_smoke      # CPU, gloo
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import platform
import sys
import time
from collections.abc import Sequence
from typing import Any

from trainperf.capture import training

NVLS_OFF = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}
"""Environment that keeps NVLink multicast off (set by :func:`main` and :func:`run`)."""

__all__ = [
    "NVLS_OFF",
    "Layout",
    "auto_layout",
    "local_param_count",
    "main",
    "run",
    "traffic_per_step",
]


@dataclasses.dataclass(frozen=True)
class Layout:
    """A tp x pp x dp layout and one rank's place in it."""

    tp: int
    pp: int
    dp: int
    rank: int = 0

    @property
    def world(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def tp_rank(self) -> int:
        return self.rank % self.tp

    @property
    def dp_rank(self) -> int:
        return (self.rank // self.tp) % self.dp

    @property
    def pp_rank(self) -> int:
        return self.rank // (self.tp * self.dp)

    def tp_groups(self) -> list[list[int]]:
        return [list(range(start, start + self.tp)) for start in range(0, self.world, self.tp)]

    def dp_groups(self) -> list[list[int]]:
        out = []
        for p in range(self.pp):
            for t in range(self.tp):
                out.append([p * self.tp * self.dp + d * self.tp + t for d in range(self.dp)])
        return out

    def peer(self, delta: int) -> int | None:
        """The rank of the same (tp, dp) place ``delta`` stages away, or None past the ends."""
        p = self.pp_rank + delta
        if not 0 <= p < self.pp:
            return None
        return self.rank + delta * self.tp * self.dp


def auto_layout(world: int) -> tuple[int, int, int]:
    """(tp, pp, dp) for ``world`` ranks on one host: 1 -> 1x1x1, 2 -> 1x2x1, 4 -> 2x2x1, 8 -> 2x2x2,
    other even -> 2 x (world/2) x 1, odd -> 1 x world x 1."""
    table = {1: (1, 1, 1), 2: (1, 2, 1), 4: (2, 2, 1), 8: (2, 2, 2)}
    if world in table:
        return table[world]
    return (2, world // 2, 1) if world % 2 == 0 else (1, world, 1)


def local_param_count(cfg: Any, lay: Layout) -> int:
    """Parameters held by one rank of this module's model (its stage, its tensor-parallel slice).

    Per block: QKV ``3h/tp x h + 3h/tp``, attention output ``h x h/tp + h``, MLP in
    ``4h/tp x h + 4h/tp``, MLP out ``h x 4h/tp + h``, two LayerNorms ``4h``; the first stage adds
    the embeddings ``(V + s) h``, the last the final LayerNorm ``2h`` and its head slice ``V/tp x h``
    (``V`` padded). ``cfg``: a :class:`trainperf.capture.smoke.SmokeConfig`.
    """
    h, t = cfg.hidden, lay.tp
    block = (
        (3 * h // t) * h
        + 3 * h // t
        + h * (h // t)
        + h
        + (4 * h // t) * h
        + 4 * h // t
        + h * (4 * h // t)
        + h
        + 4 * h
    )
    n = block * (cfg.n_layers // lay.pp)
    if lay.pp_rank == 0:
        n += (cfg.vocab_padded + cfg.seq_len) * h
    if lay.pp_rank == lay.pp - 1:
        n += 2 * h + (cfg.vocab_padded // t) * h
    return n


def traffic_per_step(
    cfg: Any, tp: int, pp: int, dp: int, micro_batches: int, *, act_bytes: int = 2
) -> Any:
    """Bytes each rank sends per training step, by collective, for the layout this module runs.

    Ring algorithms (NCCL's ring; Patarasuk and Yuan, JPDC 2009): an all-reduce of S bytes over n
    ranks sends ``2 (n - 1) / n x S`` from each rank; a point-to-point send sends S. Per micro-batch
    of ``b x s`` tokens (``b`` = ``cfg.micro_batch_size``), with A = ``b s h`` activations:

    * tensor parallel, each block: two forward all-reduces of the row-parallel outputs (``act_bytes``
      per element, bf16 under autocast) and two backward all-reduces of the gradients at the
      LayerNorm outputs (fp32: LayerNorm runs in fp32 under autocast); the last stage adds one
      backward all-reduce before the head (fp32) and the vocab-parallel cross-entropy's
      ``b s`` max and ``2 b s`` sums (fp32);
    * pipeline: the activations to the next stage and the gradients to the previous one,
      ``act_bytes`` per element, each A elements;
    * data parallel: once per step the stage's gradients, :func:`local_param_count` fp32 values.

    The step's stop-flag all-reduce (8 bytes) is left out. With ``cfg`` on CPU (fp32) pass
    ``act_bytes=4``; the backward sizes do not change.

    Returns:
        polars frame, one row per (rank, collective) with traffic: ``rank``, ``tp_rank``,
        ``pp_rank``, ``dp_rank`` (Int64), ``collective`` (String: AllReduce or SendRecv),
        ``parallelism`` (String: tp, pp or dp), ``bytes_sent`` (Float64, per step).
    """
    # deferred: polars (~0.7 s, -X importtime) only for this table; torchrun ranks never load it
    import polars as pl

    b, sl, h = cfg.micro_batch_size, cfg.seq_len, cfg.hidden
    a = b * sl * h
    blocks = cfg.n_layers // pp
    rows = []
    for r in range(tp * pp * dp):
        lay = Layout(tp, pp, dp, r)
        first, last = lay.pp_rank == 0, lay.pp_rank == pp - 1
        base = {"rank": r, "tp_rank": lay.tp_rank, "pp_rank": lay.pp_rank, "dp_rank": lay.dp_rank}
        if tp > 1:
            per_mb = blocks * 2 * a * act_bytes + blocks * 2 * a * 4
            if last:
                per_mb += a * 4 + 3 * b * sl * 4
            rows.append({**base, "collective": "AllReduce", "parallelism": "tp",
                         "bytes_sent": micro_batches * per_mb * 2 * (tp - 1) / tp})  # fmt: skip
        if pp > 1:
            sends = (0 if last else 1) + (0 if first else 1)
            rows.append({**base, "collective": "SendRecv", "parallelism": "pp",
                         "bytes_sent": float(micro_batches * sends * a * act_bytes)})  # fmt: skip
        if dp > 1:
            rows.append({**base, "collective": "AllReduce", "parallelism": "dp",
                         "bytes_sent": 4 * local_param_count(cfg, lay) * 2 * (dp - 1) / dp})  # fmt: skip
    schema = {"rank": pl.Int64, "tp_rank": pl.Int64, "pp_rank": pl.Int64, "dp_rank": pl.Int64,
              "collective": pl.String, "parallelism": pl.String, "bytes_sent": pl.Float64}  # fmt: skip
    return pl.DataFrame(rows, schema=schema)


def _build(torch: Any, cfg: Any, lay: Layout, groups: dict, device: Any) -> tuple[Any, dict]:
    """The stage module of this rank and counts of its parameters (sharded, replicated)."""
    h, a = cfg.hidden, cfg.n_heads
    if a % lay.tp or (4 * h) % lay.tp or cfg.vocab_padded % lay.tp:
        raise ValueError(
            f"tp={lay.tp} must divide heads ({a}), 4h ({4 * h}) and vocab ({cfg.vocab_padded})"
        )
    if cfg.n_layers % lay.pp:
        raise ValueError(f"pp={lay.pp} must divide the {cfg.n_layers} layers")
    sharded: list[Any] = []
    stage = _stage_class(torch, cfg, lay, _tp_ops(torch, lay, groups["tp"]), sharded)
    torch.manual_seed(1234 + 7919 * lay.pp_rank + 104729 * lay.tp_rank)  # same across dp
    model = stage().to(device)
    _init_weights(torch, model, first=lay.pp_rank == 0)
    sid = {id(p) for p in sharded}
    n_sh = sum(p.numel() for p in model.parameters() if id(p) in sid)
    n_rep = sum(p.numel() for p in model.parameters() if id(p) not in sid)
    return model, {"sharded": n_sh, "replicated": n_rep}


def _tp_ops(torch: Any, lay: Layout, tp_group: Any) -> tuple[Any, Any, Any]:
    """Megatron-LM's tensor-parallel autograd functions over ``tp_group``: f, g, vocab-parallel CE."""
    # deferred: torch is the optional [gpu] extra (this module's parser runs without it)
    import torch.distributed as dist

    class _CopyToTP(torch.autograd.Function):  # f: identity forward, all-reduce backward
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            if lay.tp > 1:
                g = g.contiguous()
                dist.all_reduce(g, group=tp_group)
            return g

    class _ReduceFromTP(torch.autograd.Function):  # g: all-reduce forward, identity backward
        @staticmethod
        def forward(ctx, x):
            if lay.tp > 1:
                x = x.contiguous()
                dist.all_reduce(x, group=tp_group)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    class _VocabParallelCE(torch.autograd.Function):
        """Mean cross-entropy of logits split by vocabulary over the tp group (Megatron-LM)."""

        @staticmethod
        def forward(ctx, logits, target, v_start):
            ctx.in_dtype = logits.dtype
            logits = logits.float()
            m = logits.max(dim=-1).values
            if lay.tp > 1:
                dist.all_reduce(m, op=dist.ReduceOp.MAX, group=tp_group)
            z = logits - m.unsqueeze(-1)
            ez = z.exp()
            s = ez.sum(dim=-1)
            local = (target >= v_start) & (target < v_start + logits.shape[-1])
            idx = (target - v_start).clamp(0, logits.shape[-1] - 1)
            t = z.gather(-1, idx.unsqueeze(-1)).squeeze(-1) * local
            if lay.tp > 1:
                both = torch.stack([s, t])
                dist.all_reduce(both, group=tp_group)
                s, t = both[0], both[1]
            ctx.save_for_backward(ez / s.unsqueeze(-1), idx, local)
            return (s.log() - t).mean()

        @staticmethod
        def backward(ctx, g):
            p, idx, local = ctx.saved_tensors
            grad = p.clone()
            grad.scatter_add_(-1, idx.unsqueeze(-1), -local.unsqueeze(-1).to(grad.dtype))
            return (grad * (g / p.shape[0])).to(ctx.in_dtype), None, None

    return _CopyToTP, _ReduceFromTP, _VocabParallelCE


def _stage_class(torch: Any, cfg: Any, lay: Layout, ops: tuple, sharded: list) -> Any:
    """The module class of this rank's pipeline stage; its tp-split parameters go to ``sharded``."""
    # deferred: torch is the optional [gpu] extra (this module's parser runs without it)
    import torch.nn.functional as F
    from torch import nn

    _CopyToTP, _ReduceFromTP, _VocabParallelCE = ops
    h, a = cfg.hidden, cfg.n_heads
    a_loc, h_loc = a // lay.tp, h // lay.tp

    def col(i: int, o: int) -> Any:  # output columns split: weight [o/tp, i], bias [o/tp]
        lin = nn.Linear(i, o // lay.tp)
        sharded.extend([lin.weight, lin.bias])
        return lin

    def row(i: int, o: int) -> Any:  # input rows split: weight [o, i/tp], bias replicated
        lin = nn.Linear(i // lay.tp, o)
        sharded.append(lin.weight)
        return lin

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
            self.qkv, self.proj = col(h, 3 * h), row(h, h)
            self.fc, self.fc_out = col(h, 4 * h), row(4 * h, h)

        def forward(self, x):
            b, s, _ = x.shape
            q, k, v = self.qkv(_CopyToTP.apply(self.ln1(x))).split(h_loc, dim=2)
            q, k, v = (t.view(b, s, a_loc, h // a).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            y = y.transpose(1, 2).reshape(b, s, h_loc)
            x = x + _ReduceFromTP.apply(F.linear(y, self.proj.weight)) + self.proj.bias
            z = F.gelu(self.fc(_CopyToTP.apply(self.ln2(x))), approximate="tanh")
            return x + _ReduceFromTP.apply(F.linear(z, self.fc_out.weight)) + self.fc_out.bias

    per_stage = cfg.n_layers // lay.pp
    first, last = lay.pp_rank == 0, lay.pp_rank == lay.pp - 1

    class Stage(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            if first:
                self.wte = nn.Embedding(cfg.vocab_padded, h)
                self.wpe = nn.Embedding(cfg.seq_len, h)
            self.blocks = nn.ModuleList(Block() for _ in range(per_stage))
            if last:  # untied head, split by vocabulary (a tied one would need a vocab-split wte)
                self.ln_f = nn.LayerNorm(h)
                self.head = nn.Linear(h, cfg.vocab_padded // lay.tp, bias=False)
                sharded.append(self.head.weight)
            self.v_start = lay.tp_rank * (cfg.vocab_padded // lay.tp)

        def forward(self, x, idx=None, targets=None):
            if first:
                pos = torch.arange(idx.shape[1], device=idx.device)
                x = self.wte(idx) + self.wpe(pos)
            for blk in self.blocks:
                x = blk(x)
            if not last:
                return x
            logits = self.head(_CopyToTP.apply(self.ln_f(x)))
            return _VocabParallelCE.apply(
                logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), self.v_start
            )

    return Stage


def _init_weights(torch: Any, model: Any, *, first: bool) -> None:
    """GPT-2 initialisation; the first stage's embeddings from one seed on all tp ranks."""
    # deferred: torch is the optional [gpu] extra (this module's parser runs without it)
    from torch import nn

    for m in model.modules():
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, std=0.02)
    if first:  # embeddings and LayerNorms identical on all tp ranks: same seed for them
        g = torch.Generator(device="cpu").manual_seed(1234)
        with torch.no_grad():
            for emb in (model.wte, model.wpe):
                emb.weight.copy_(torch.randn(emb.weight.shape, generator=g) * 0.02)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Train as ``args`` say (one process of the torchrun world); returns a summary (all ranks).

    Raises:
        trainperf.capture.smoke.SmokeError: no torch, no GPU with ``--device cuda``, result file exists.
        ValueError: a layout that does not fit the world size or the model.
    """
    os.environ.update(NVLS_OFF)
    # deferred: smoke imports torch (and NCCL reads its environment), so only after NVLS_OFF is set
    from trainperf.capture import smoke
    from trainperf.flops import narayanan_flops_per_token

    try:
        import torch
        import torch.distributed as dist
    except ImportError as exc:  # pragma: no cover
        raise training.SmokeError("PyTorch is not installed: pip install torch") from exc
    cfg = smoke.PRESETS[args.preset]
    if args.micro_batch_size:
        cfg = dataclasses.replace(cfg, micro_batch_size=args.micro_batch_size)
    rank, local_rank, world = training.dist_env()
    lay = _layout(args, world, rank)
    use_cuda, device = training.select_device(torch, args.device, local_rank)
    if world > 1:
        dist.init_process_group(
            backend="nccl" if use_cuda else "gloo", device_id=device if use_cuda else None
        )
    groups = _groups(dist, lay)
    result, log = training.open_result_log(args, rank)
    spec = dataclasses.replace(smoke.model_spec(cfg), tied_embeddings=False)
    m = args.micro_batches
    tokens_per_step = cfg.micro_batch_size * m * lay.dp * cfg.seq_len
    f_tok = narayanan_flops_per_token(spec)
    accel = torch.cuda.get_device_name(device) if use_cuda else (platform.processor() or "cpu")
    layout = {"tp": lay.tp, "pp": lay.pp, "dp": lay.dp, "micro_batches": m}
    _log_header(log, torch, args, cfg, spec, accel, world, layout)
    model, counts = _build(torch, cfg, lay, groups, device)
    n_params = _param_count(torch, dist, counts, lay, device)
    log.event("model_param_count", n_params)
    log.event(
        "smoke_config",
        {
            "preset": cfg.name,
            "micro_batch_size": cfg.micro_batch_size,
            "world_size": world,
            **layout,
            "device": accel,
            "dtype": "bf16 autocast" if use_cuda else "fp32",
            "torch": torch.__version__,
        },
    )
    if rank == 0:
        print(
            f"trainperf.capture.parallel: preset {cfg.name}, {n_params:,} parameters, "
            f"tp={lay.tp} pp={lay.pp} dp={lay.dp}, {m} micro-batches of {cfg.micro_batch_size} x {cfg.seq_len}; {accel}",
            flush=True,
        )
    pipe = _Pipeline(torch, dist, model, cfg, lay, groups, m, args.seed, use_cuda, device)
    meta = {
        "run_id": training.shared_run_id(dist if world > 1 else None),
        "benchmark": smoke.BENCHMARK,
        "world_size": world,
        **layout,
        "tp_rank": lay.tp_rank,
        "pp_rank": lay.pp_rank,
        "dp_rank": lay.dp_rank,
        "local_params": counts["sharded"] + counts["replicated"],
    }
    prof = training.profiler(args, rank, use_cuda, meta, log)
    if use_cuda:
        torch.cuda.synchronize(device)
    log.end("init_stop")
    if world > 1:
        dist.barrier()
    log.start("run_start")
    t_run = time.time()
    pipe.train(prof, log, args, tokens_per_step, t_run)
    training.log_run_stop(log, torch, use_cuda, device, rank)
    seconds = time.time() - t_run
    tok_s = training.steady_tokens_per_s(pipe.times, tokens_per_step)
    summary = {
        "result_file": str(result) if rank == 0 else None,
        "trace_file": str(prof.path) if prof.written else None,
        "steps": pipe.step,
        "tokens": pipe.step * tokens_per_step,
        "param_count": n_params,
        "layout": layout,
        "tokens_per_s": tok_s,
        "model_tflops_per_gpu": tok_s * f_tok / world / 1e12,
        "train_loss": pipe.loss,
        "seconds": seconds,
    }
    log.event("smoke_summary", summary)
    log.close()
    if rank == 0:
        print(
            f"trainperf.capture.parallel: done: {pipe.step} steps in {seconds:.1f} s; {tok_s:,.0f} tokens/s, "
            f"{summary['model_tflops_per_gpu']:.1f} model TFLOP/s per GPU, loss {pipe.loss:.4f}; log {result}",
            flush=True,
        )
    if world > 1:
        dist.destroy_process_group()
    return summary


def _layout(args: argparse.Namespace, world: int, rank: int) -> Layout:
    """``--layout``/``--tp``/``--pp``/``--dp`` as a :class:`Layout` of this rank.

    Raises:
        ValueError: tp x pp x dp is not the world size.
    """
    tp, pp, dp = (args.tp, args.pp, args.dp)
    if args.layout == "auto" and not (tp or pp or dp):
        tp, pp, dp = auto_layout(world)
    tp, pp = tp or 1, pp or 1
    dp = dp or max(1, world // (tp * pp))
    lay = Layout(tp, pp, dp, rank)
    if lay.world != world:
        raise ValueError(
            f"layout tp={tp} x pp={pp} x dp={dp} = {lay.world} ranks, but WORLD_SIZE={world}"
        )
    return lay


def _groups(dist: Any, lay: Layout) -> dict[str, Any]:
    """This rank's ``tp`` and ``dp`` process groups (None in a world of one)."""
    groups: dict[str, Any] = {"tp": None, "dp": None}
    if lay.world > 1:
        for g in lay.tp_groups():
            pg = dist.new_group(g)
            if lay.rank in g:
                groups["tp"] = pg
        for g in lay.dp_groups():
            pg = dist.new_group(g)
            if lay.rank in g:
                groups["dp"] = pg
    return groups


def _log_header(
    log: Any,
    torch: Any,
    args: argparse.Namespace,
    cfg: Any,
    spec: Any,
    accel: str,
    world: int,
    layout: dict,
) -> None:
    """The events before the model exists: system, submission, hyperparameters, layout, FLOPs."""
    # deferred: trainperf.flops loads polars (~1.4 s, -X importtime); only rank 0 logs these events
    from trainperf.flops import model_flops_per_token, narayanan_flops_per_token

    m = layout["micro_batches"]
    training.log_system(
        log, torch, accel, system_name=f"{platform.node()} parallel smoke", nodes=1, per_node=world
    )
    log.start("init_start")
    training.log_hyperparameters(
        log,
        global_batch=cfg.micro_batch_size * m * layout["dp"],
        seq_len=cfg.seq_len,
        seed=args.seed,
        grad_accum=m,
        lr=cfg.lr,
    )
    log.event("parallel_layout", layout)
    training.log_model(
        log,
        spec,
        cfg.name,
        narayanan_flops_per_token(spec),
        model_flops_per_token(spec, causal=True),
    )


def _param_count(torch: Any, dist: Any, counts: dict, lay: Layout, device: Any) -> int:
    """Parameters of the whole model: each stage's sharded ones x tp plus its replicated ones."""
    own = (
        counts["sharded"] * lay.tp + counts["replicated"]
        if (lay.tp_rank == 0 and lay.dp_rank == 0)
        else 0
    )
    n = torch.tensor([float(own)], device=device, dtype=torch.float64)
    if lay.world > 1:
        dist.all_reduce(n)
    return int(n.item())


class _Pipeline:
    """This rank's part of a training step: GPipe forwards and backwards, dp all-reduce, AdamW."""

    def __init__(
        self,
        torch: Any,
        dist: Any,
        model: Any,
        cfg: Any,
        lay: Layout,
        groups: dict,
        micro_batches: int,
        seed: int,
        use_cuda: bool,
        device: Any,
    ) -> None:
        self.torch, self.dist, self.model, self.cfg, self.lay = torch, dist, model, cfg, lay
        self.groups, self.m, self.device = groups, micro_batches, device
        self.opt = torch.optim.AdamW(
            model.parameters(), lr=cfg.lr, betas=(0.9, 0.95), weight_decay=0.1, fused=use_cuda
        )
        self.gen = torch.Generator(device=device).manual_seed(seed * 1000 + lay.dp_rank)
        self.autocast = (
            torch.autocast("cuda", dtype=torch.bfloat16)
            if use_cuda
            else torch.autocast("cpu", enabled=False)
        )
        self.act_dtype = torch.bfloat16 if use_cuda else torch.float32
        self.prev, self.nxt = lay.peer(-1), lay.peer(+1)
        self.first, self.last = self.prev is None, self.nxt is None
        self.shape = (cfg.micro_batch_size, cfg.seq_len, cfg.hidden)
        self.step = 0
        self.times: list[float] = []
        self.loss = float("nan")

    def train_step(self) -> float:
        """One optimizer step; the mean loss of the micro-batches (last stage), else 0."""
        torch, dist, model, cfg, m = self.torch, self.dist, self.model, self.cfg, self.m
        first, last, prev, nxt, shape = self.first, self.last, self.prev, self.nxt, self.shape
        device, act_dtype = self.device, self.act_dtype
        batches = [
            torch.randint(
                0,
                cfg.vocab_raw,
                (cfg.micro_batch_size, cfg.seq_len + 1),
                device=device,
                generator=self.gen,
            )
            for _ in range(m)
        ]
        outs, ins, losses = [], [], []
        for i in range(m):  # forwards
            x_in = None
            if not first:
                x_in = torch.empty(shape, device=device, dtype=act_dtype)
                dist.recv(x_in, src=prev)
                x_in.requires_grad_(True)
            with self.autocast:
                y = model(x_in, idx=batches[i][:, :-1], targets=batches[i][:, 1:])
            if not last:
                dist.send(y.detach().to(act_dtype).contiguous(), dst=nxt)
            ins.append(x_in)
            outs.append(y)
        for i in reversed(range(m)):  # backwards
            if last:
                (outs[i] / m).backward()
                losses.append(float(outs[i].detach()))
            else:
                g = torch.empty(shape, device=device, dtype=act_dtype)
                dist.recv(g, src=nxt)
                outs[i].backward(g.to(outs[i].dtype))
            if not first:
                dist.send(ins[i].grad.to(act_dtype).contiguous(), dst=prev)
        dp = self.lay.dp
        if dp > 1:
            grads = [p.grad for p in model.parameters() if p.grad is not None]
            flat = torch.cat([g.reshape(-1).float() for g in grads])
            dist.all_reduce(flat, group=self.groups["dp"])
            flat /= dp
            off = 0
            for g in grads:
                g.copy_(flat[off : off + g.numel()].view_as(g))
                off += g.numel()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return sum(losses) / len(losses) if losses else 0.0

    def train(
        self, prof: Any, log: Any, args: argparse.Namespace, tokens_per_step: int, t_run: float
    ) -> None:
        """Steps in one block up to ``--steps``/``--minutes`` (all ranks agree), each logged."""
        torch, dist, lay = self.torch, self.dist, self.lay
        deadline = t_run + args.minutes * 60 if args.minutes else math.inf
        log.start("block_start", metadata={"first_epoch_num": 0, "epoch_count": tokens_per_step})
        with prof:
            while True:
                t0 = time.perf_counter()
                local_loss = self.train_step()
                self.step += 1
                done = (args.steps and self.step >= args.steps) or time.time() >= deadline
                flag = torch.tensor(
                    [1.0 if done else 0.0, local_loss if (self.last and lay.tp_rank == 0) else 0.0],
                    device=self.device,
                    dtype=torch.float32,
                )
                if lay.world > 1:
                    dist.all_reduce(flag)
                done, self.loss = bool(flag[0].item() > 0), float(flag[1].item()) / lay.dp
                dt = time.perf_counter() - t0
                self.times.append(dt)
                training.log_step(log, dt, tokens_per_step, self.loss, self.step * tokens_per_step)
                prof.step()
                if done:
                    break
        log.end("block_stop", metadata={"first_epoch_num": 0})


def _parser() -> argparse.ArgumentParser:
    # deferred: smoke imports torch, which NCCL's environment (NVLS_OFF, set in main) must precede
    from trainperf.capture import smoke
    from trainperf.capture.profile import add_profiler_arguments

    p = argparse.ArgumentParser(
        prog="python -m trainperf.capture.parallel",
        description="GPT smoke run with tensor, pipeline and data parallelism (torchrun), MLPerf log and traces.",
    )
    p.add_argument("--preset", choices=sorted(smoke.PRESETS), default="tiny")
    p.add_argument(
        "--layout",
        choices=("auto", "manual"),
        default="auto",
        help="auto: tp x pp x dp from the world size",
    )
    p.add_argument("--tp", type=int, default=0, help="tensor-parallel size (inside a host)")
    p.add_argument("--pp", type=int, default=0, help="pipeline stages")
    p.add_argument("--dp", type=int, default=0, help="data-parallel replicas (default: the rest)")
    p.add_argument("--micro-batches", type=int, default=4, help="micro-batches per step (GPipe)")
    p.add_argument("--micro-batch-size", type=int, default=None)
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--minutes", type=float, default=None)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--out-dir", default=".")
    p.add_argument("--result-name", default="result_0.txt")
    p.add_argument("--overwrite", action="store_true")
    add_profiler_arguments(p)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point (``python -m trainperf.capture.parallel`` under torchrun); the exit status."""
    os.environ.update(NVLS_OFF)
    # deferred: smoke imports torch (and NCCL reads its environment), so only after NVLS_OFF is set
    from trainperf.capture import smoke

    args = _parser().parse_args(argv)
    if not args.steps and not args.minutes:
        print("trainperf.capture.parallel: error: give --steps and/or --minutes", file=sys.stderr)
        return 2
    if args.micro_batches < 1:
        print("trainperf.capture.parallel: error: --micro-batches must be >= 1", file=sys.stderr)
        return 2
    try:
        run(args)
    except (smoke.SmokeError, ValueError) as exc:
        print(f"trainperf.capture.parallel: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
