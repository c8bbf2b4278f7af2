"""Smoke pre-training benchmark: a GPT-2-style decoder on synthetic tokens, logged as MLPerf.

Purpose: a real, short training run on the machine under study whose MLPerf-format log
(``:::MLLOG``, written with ``mlperf_logging.mllog``) goes through the same loader as the
published results (:func:`trainperf.mlperf.load_results`) and whose telemetry
(:mod:`trainperf.capture.collect`) goes through :mod:`trainperf.dcgm`.

Run::

    python -m trainperf.capture.smoke --preset tiny --steps 20 --out-dir /tmp/smoke/gpt_smoke      # CPU
    python -m trainperf.capture.smoke --preset gpt2-medium --minutes 4 --out-dir run/gpt_smoke       # 1 GPU
    torchrun --standalone --nproc-per-node 2 -m trainperf.capture.smoke --preset gpt2-medium \\
        --minutes 4 --out-dir run/gpt_smoke                                                  # DDP

Model (``GPT``): learned token and position embeddings, ``n_layers`` pre-LayerNorm blocks of
causal multi-head attention (``torch.nn.functional.scaled_dot_product_attention``) and a 4h
GELU MLP, all linear layers with biases, final LayerNorm, output projection tied to the token
embedding. Its parameter count equals :func:`trainperf.flops.param_count` of the
:class:`~trainperf.flops.ModelSpec` it logs (``vocab="padded"``: the embedding has
``vocab_padded`` rows).

Presets (:data:`PRESETS`):

===========  ======  ======  =====  =======  ==============  =====  ===============
preset       layers  hidden  heads  seq len  vocab (padded)  mbs    parameters
===========  ======  ======  =====  =======  ==============  =====  ===============
tiny         2       64      4      32       256 (256)       4      ~0.1 M (CPU tests)
gpt2-medium  24      1024    16     1024     50257 (50304)   16     354.8 M
1.3b         24      2048    16     2048     50257 (50304)   8      1.315 B (GPT-3 XL shape)
===========  ======  ======  =====  =======  ==============  =====  ===============

Training: AdamW (β = 0.9, 0.95, weight decay 0.1, fused on CUDA), constant learning rate,
gradient clipping at 1.0; bf16 autocast on CUDA, fp32 on CPU; ``torch.compile`` only with
``--compile``. Data: uniform random token ids in ``[0, vocab_raw)`` from a seeded generator,
a different stream per rank; the held-out batch is fixed by the seed. The eval loss therefore
stays near ``ln(vocab_raw)`` (10.8 for GPT-2's vocabulary): it is logged for the log's shape,
not as a quality target.

Distributed: with ``WORLD_SIZE > 1`` (``torchrun``) the model is wrapped in
``DistributedDataParallel`` (NCCL on CUDA, Gloo on CPU); every rank trains on its own
micro-batches, rank 0 writes the log. The time limit is agreed on by all ranks each step.

MLPerf events written (units as in the MLPerf GPT-3 reference, where block and eval counts
are in **tokens**): ``:::SYSJSON`` system description, ``submission_benchmark``
(``gpt_smoke``), ``global_batch_size`` (sequences), ``max_sequence_length``, ``seed``,
``gradient_accumulation_steps``, ``opt_*``; ``model_spec`` (the ModelSpec fields as a dict),
``model_param_count``, ``model_flops_per_token`` (Narayanan et al. SC21 eq. 3 via
:func:`trainperf.flops.narayanan_flops_per_token`: dense attention, padded vocabulary, no
recompute), ``model_flops_per_token_causal`` (:func:`trainperf.flops.model_flops_per_token`
with ``causal=True``); ``init_start``/``init_stop``, ``run_start``; per block
``block_start``/``block_stop`` (metadata ``first_epoch_num`` = tokens before the block,
``epoch_count`` = tokens in the block), per step ``tracked_stats`` with value
``{"train_step_timing in s", "throughput in tokens/s", "train_loss"}`` and metadata ``step``
= tokens consumed so far, and at each block end ``eval_accuracy`` (held-out mean
cross-entropy, nats/token) with metadata ``epoch_num`` = tokens; ``peak_memory_allocated``
(bytes, CUDA only) and ``run_stop`` with status ``success``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainperf.capture.profile import StepProfiler, add_profiler_arguments
from trainperf.errors import TrainperfError
from trainperf.flops import ModelSpec, model_flops_per_token, narayanan_flops_per_token

try:
    import torch
    import torch.nn.functional as F
    from torch import nn
except ImportError:  # pragma: no cover - exercised only without torch
    torch = None  # type: ignore[assignment]

__all__ = ["PRESETS", "SmokeConfig", "SmokeError", "main", "model_spec", "run"]


class SmokeError(TrainperfError, RuntimeError):
    """A usage or environment problem (no torch, no GPU, result file exists)."""


BENCHMARK = "gpt_smoke"
"""Value of ``submission_benchmark``."""


@dataclass(frozen=True)
class SmokeConfig:
    """Model shape and micro-batch of a preset.

    Attributes:
        name: preset name.
        n_layers, hidden, n_heads: transformer shape.
        seq_len: tokens per sequence.
        vocab_raw: token ids are drawn from ``[0, vocab_raw)``.
        vocab_padded: embedding rows (a multiple of 64, as Megatron pads GPT-2's 50257).
        micro_batch_size: sequences per rank per forward pass.
        lr: learning rate.
    """

    name: str
    n_layers: int
    hidden: int
    n_heads: int
    seq_len: int
    vocab_raw: int
    vocab_padded: int
    micro_batch_size: int
    lr: float = 3e-4


PRESETS: dict[str, SmokeConfig] = {
    "tiny": SmokeConfig("tiny", 2, 64, 4, 32, 256, 256, 4, lr=1e-3),
    "gpt2-medium": SmokeConfig("gpt2-medium", 24, 1024, 16, 1024, 50257, 50304, 16),
    "1.3b": SmokeConfig("1.3b", 24, 2048, 16, 2048, 50257, 50304, 8, lr=2e-4),
}
"""Model presets (see the module docstring's table)."""


def model_spec(cfg: SmokeConfig) -> ModelSpec:
    """The :class:`~trainperf.flops.ModelSpec` of the smoke model built from ``cfg``."""
    return ModelSpec(
        name=f"smoke {cfg.name}",
        n_layers=cfg.n_layers,
        hidden=cfg.hidden,
        n_heads=cfg.n_heads,
        n_kv_heads=cfg.n_heads,
        ffn_hidden=4 * cfg.hidden,
        activation="gelu",
        vocab_raw=cfg.vocab_raw,
        vocab_padded=cfg.vocab_padded,
        seq_len=cfg.seq_len,
        bias=True,
        norm="layernorm",
        learned_pos_emb=True,
        tied_embeddings=True,
    )


# --------------------------------------------------------------------------------------------
# Model
# --------------------------------------------------------------------------------------------

if torch is not None:

    class Block(nn.Module):
        """Pre-LN transformer block: causal MHA + 4h GELU MLP, biases everywhere."""

        def __init__(self, hidden: int, n_heads: int) -> None:
            super().__init__()
            self.n_heads = n_heads
            self.ln1 = nn.LayerNorm(hidden)
            self.qkv = nn.Linear(hidden, 3 * hidden)
            self.proj = nn.Linear(hidden, hidden)
            self.ln2 = nn.LayerNorm(hidden)
            self.fc = nn.Linear(hidden, 4 * hidden)
            self.fc_out = nn.Linear(4 * hidden, hidden)

        def forward(self, x):
            b, s, h = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(h, dim=2)
            q, k, v = (
                t.view(b, s, self.n_heads, h // self.n_heads).transpose(1, 2) for t in (q, k, v)
            )
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, s, h))
            return x + self.fc_out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        """GPT-2-style decoder; ``forward(idx, targets)`` returns the mean cross-entropy."""

        def __init__(self, cfg: SmokeConfig) -> None:
            super().__init__()
            self.wte = nn.Embedding(cfg.vocab_padded, cfg.hidden)
            self.wpe = nn.Embedding(cfg.seq_len, cfg.hidden)
            self.blocks = nn.ModuleList(Block(cfg.hidden, cfg.n_heads) for _ in range(cfg.n_layers))
            self.ln_f = nn.LayerNorm(cfg.hidden)
            for m in self.modules():  # GPT-2 initialisation
                if isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, std=0.02)
                    nn.init.zeros_(m.bias)
                elif isinstance(m, nn.Embedding):
                    nn.init.normal_(m.weight, std=0.02)
            for blk in self.blocks:  # residual projections scaled by 1/sqrt(2 * n_layers)
                for lin in (blk.proj, blk.fc_out):
                    nn.init.normal_(lin.weight, std=0.02 / math.sqrt(2 * cfg.n_layers))

        def forward(self, idx, targets):
            pos = torch.arange(idx.shape[1], device=idx.device)
            x = self.wte(idx) + self.wpe(pos)
            for blk in self.blocks:
                x = blk(x)
            logits = F.linear(self.ln_f(x), self.wte.weight)  # tied output projection
            return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.reshape(-1))


# --------------------------------------------------------------------------------------------
# Logging
# --------------------------------------------------------------------------------------------


class _NullLogger:
    """Stands in for the MLLogger on ranks other than 0."""

    def event(self, *a: Any, **k: Any) -> None:
        pass

    start = end = event

    def raw(self, line: str) -> None:
        pass

    def close(self) -> None:
        pass


class _ResultLog:
    """An ``mlperf_logging.mllog.MLLogger`` writing to one result file (rank 0 only)."""

    def __init__(self, path: Path) -> None:
        from mlperf_logging.mllog import mllog

        self._logger = logging.getLogger(f"trainperf.capture.smoke.{id(self)}")
        self._logger.propagate = False
        self._logger.setLevel(logging.INFO)
        self._handler = logging.FileHandler(path, mode="w", encoding="utf-8")
        self._handler.setFormatter(logging.Formatter("%(message)s"))
        self._logger.addHandler(self._handler)
        self._ml = mllog.MLLogger(
            logger=self._logger, default_stack_offset=2, root_dir=str(Path(__file__).parent)
        )

    def event(self, key: str, value: Any = None, metadata: dict | None = None) -> None:
        self._ml.event(key=key, value=value, metadata=metadata)

    def start(self, key: str, value: Any = None, metadata: dict | None = None) -> None:
        self._ml.start(key=key, value=value, metadata=metadata)

    def end(self, key: str, value: Any = None, metadata: dict | None = None) -> None:
        self._ml.end(key=key, value=value, metadata=metadata)

    def raw(self, line: str) -> None:
        self._logger.info(line)

    def close(self) -> None:
        self._handler.flush()
        self._handler.close()
        self._logger.removeHandler(self._handler)


# --------------------------------------------------------------------------------------------
# Training loop
# --------------------------------------------------------------------------------------------


def _dist_env() -> tuple[int, int, int]:
    """(rank, local_rank, world_size) from torchrun's environment (1 process without it)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    return int(os.environ.get("RANK", "0")), int(os.environ.get("LOCAL_RANK", "0")), world


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Train as ``args`` say and write the MLPerf log; returns a summary dict (all ranks).

    Summary keys: ``result_file`` (str or None on ranks > 0), ``steps``, ``tokens``,
    ``param_count``, ``model_flops_per_token``, ``tokens_per_s`` (mean over all steps but
    the first), ``model_tflops_per_gpu``, ``eval_loss``, ``seconds`` (run_start to run_stop).
    """
    if torch is None:
        raise SmokeError("PyTorch is not installed: pip install torch")
    cfg = PRESETS[args.preset]
    if args.micro_batch_size:
        cfg = dataclasses.replace(cfg, micro_batch_size=args.micro_batch_size)
    if args.lr:
        cfg = dataclasses.replace(cfg, lr=args.lr)
    rank, local_rank, world = _dist_env()
    use_cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SmokeError("--device cuda: PyTorch sees no CUDA GPU")
    device = torch.device(f"cuda:{local_rank}" if use_cuda else "cpu")
    if use_cuda:
        torch.cuda.set_device(device)
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    dist = None
    if world > 1:
        import torch.distributed as dist

        dist.init_process_group(
            backend="nccl" if use_cuda else "gloo", device_id=device if use_cuda else None
        )

    out_dir = Path(args.out_dir)
    result = out_dir / args.result_name
    log: _ResultLog | _NullLogger = _NullLogger()
    if rank == 0:
        out_dir.mkdir(parents=True, exist_ok=True)
        if result.exists() and result.stat().st_size and not args.overwrite:
            raise SmokeError(f"{result} exists; pass --overwrite or choose another --out-dir")
        log = _ResultLog(result)

    spec = model_spec(cfg)
    global_batch = cfg.micro_batch_size * args.grad_accum * world
    tokens_per_step = global_batch * cfg.seq_len
    f_tok = narayanan_flops_per_token(spec)
    f_tok_causal = model_flops_per_token(spec, causal=True)
    accel = torch.cuda.get_device_name(device) if use_cuda else (platform.processor() or "cpu")
    nodes = int(os.environ.get("SLURM_NNODES", "1"))
    log.raw(
        ":::SYSJSON "
        + json.dumps(
            {
                "submitter": "trainperf",
                "division": "open",
                "status": "research",
                "system_name": f"{platform.node()} smoke",
                "number_of_nodes": str(nodes),
                "accelerators_per_node": str(max(world // nodes, 1)),
                "accelerator_model_name": accel,
                "framework": f"PyTorch {torch.__version__}",
            }
        )
    )
    log.event("submission_benchmark", BENCHMARK)
    log.event("submission_org", "trainperf")
    log.event("submission_division", "open")
    log.event("submission_status", "research")
    log.event("submission_platform", accel)
    log.start("init_start")
    log.event("global_batch_size", global_batch)
    log.event("max_sequence_length", cfg.seq_len)
    log.event("seed", args.seed)
    log.event("gradient_accumulation_steps", args.grad_accum)
    log.event("opt_name", "adamw")
    log.event("opt_base_learning_rate", cfg.lr)
    log.event("opt_adamw_beta_1", 0.9)
    log.event("opt_adamw_beta_2", 0.95)
    log.event("opt_adamw_weight_decay", 0.1)
    log.event("opt_gradient_clip_norm", 1.0)
    log.event("model_spec", dataclasses.asdict(spec), {"preset": cfg.name})
    log.event(
        "model_flops_per_token",
        f_tok,
        {
            "formula": "Narayanan et al. SC21 eq. (3): 72*l*h^2*(1+s/(6h)+V/(12*l*h))",
            "causal": False,
        },
    )
    log.event(
        "model_flops_per_token_causal",
        f_tok_causal,
        {"formula": "trainperf.flops.model_flops_per_token(causal=True)", "causal": True},
    )
    log.event(
        "smoke_config",
        {
            "preset": cfg.name,
            "micro_batch_size": cfg.micro_batch_size,
            "world_size": world,
            "device": accel,
            "dtype": "bf16 autocast" if use_cuda else "fp32",
            "compile": bool(args.compile),
            "torch": torch.__version__,
        },
    )

    torch.manual_seed(args.seed)
    model = GPT(cfg).to(device)
    n_params = sum(p.numel() for p in model.parameters())
    log.event("model_param_count", n_params)
    if rank == 0:
        print(
            f"trainperf.capture.smoke: preset {cfg.name}: {n_params:,} parameters; model FLOPs/token "
            f"{f_tok:.4e} (Narayanan SC21, dense attention), {f_tok_causal:.4e} (causal); "
            f"global batch {global_batch} x {cfg.seq_len} tokens; world {world}; {accel}",
            flush=True,
        )
    train_model: Any = model
    if args.compile:
        train_model = torch.compile(model)
    if dist is not None:
        from torch.nn.parallel import DistributedDataParallel as DDP

        train_model = DDP(train_model, device_ids=[local_rank] if use_cuda else None)
    opt = torch.optim.AdamW(
        model.parameters(), lr=cfg.lr, betas=(0.9, 0.95), weight_decay=0.1, fused=use_cuda
    )
    gen = torch.Generator(device=device).manual_seed(args.seed * 1000 + rank)
    eval_gen = torch.Generator(device=device).manual_seed(args.seed * 1000 + 999_983)
    eval_batches = [
        torch.randint(
            0,
            cfg.vocab_raw,
            (cfg.micro_batch_size, cfg.seq_len + 1),
            device=device,
            generator=eval_gen,
        )
        for _ in range(args.eval_batches)
    ]
    autocast = (
        torch.autocast("cuda", dtype=torch.bfloat16)
        if use_cuda
        else torch.autocast("cpu", enabled=False)
    )

    def sync() -> None:
        if use_cuda:
            torch.cuda.synchronize(device)

    def evaluate() -> float:
        model.eval()
        total = 0.0
        with torch.no_grad(), autocast:
            for b in eval_batches:
                total += float(model(b[:, :-1], b[:, 1:]))
        model.train()
        return total / len(eval_batches)

    sync()
    log.end("init_stop")
    if dist is not None:
        dist.barrier()
    prof = _profiler(args, rank, world, use_cuda, dist, log)
    log.start("run_start")
    t_run = time.time()
    deadline = t_run + args.minutes * 60 if args.minutes else math.inf
    max_steps = args.steps if args.steps else None
    step = 0
    tokens = 0
    times: list[float] = []
    eval_loss = float("nan")
    stop = False
    while not stop:
        block_first = tokens
        log.start(
            "block_start",
            metadata={
                "first_epoch_num": block_first,
                "epoch_count": args.eval_every * tokens_per_step,
            },
        )
        for _ in range(args.eval_every):
            t0 = time.perf_counter()
            for micro in range(args.grad_accum):
                batch = torch.randint(
                    0,
                    cfg.vocab_raw,
                    (cfg.micro_batch_size, cfg.seq_len + 1),
                    device=device,
                    generator=gen,
                )
                last = micro == args.grad_accum - 1
                ctx = train_model.no_sync() if (dist is not None and not last) else _nullcontext()
                with ctx, autocast:
                    loss = train_model(batch[:, :-1], batch[:, 1:])
                (loss / args.grad_accum).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            train_loss = float(loss.detach())  # synchronises with the device
            sync()
            dt = time.perf_counter() - t0
            step += 1
            tokens += tokens_per_step
            times.append(dt)
            log.event(
                "tracked_stats",
                {
                    "train_step_timing in s": dt,
                    "throughput in tokens/s": tokens_per_step / dt,
                    "train_loss": train_loss,
                },
                {"step": tokens},
            )
            prof.step()
            done = (max_steps is not None and step >= max_steps) or time.time() >= deadline
            if dist is not None:
                flag = torch.tensor([1.0 if done else 0.0], device=device)
                dist.all_reduce(flag, op=dist.ReduceOp.MAX)
                done = bool(flag.item())
            if done:
                stop = True
                break
        log.end("block_stop", metadata={"first_epoch_num": block_first})
        log.start("eval_start", metadata={"epoch_num": tokens})
        eval_loss = evaluate()
        log.end("eval_stop", metadata={"epoch_num": tokens})
        log.event("eval_accuracy", eval_loss, {"epoch_num": tokens})
        if rank == 0:
            recent = times[-min(len(times), args.eval_every) :]
            print(
                f"trainperf.capture.smoke: step {step} tokens {tokens:,} train_loss {train_loss:.4f} "
                f"eval_loss {eval_loss:.4f} step_time {sum(recent) / len(recent):.4f} s",
                flush=True,
            )
    prof.__exit__(None, None, None)
    peak = torch.cuda.max_memory_allocated(device) if use_cuda else None
    if peak is not None:
        log.event("peak_memory_allocated", peak, {"unit": "bytes", "rank": rank})
    log.end("run_stop", metadata={"status": "success"})
    seconds = time.time() - t_run
    steady = times[1:] or times
    tok_s = tokens_per_step * len(steady) / sum(steady)
    summary = {
        "result_file": str(result) if rank == 0 else None,
        "steps": step,
        "tokens": tokens,
        "param_count": n_params,
        "model_flops_per_token": f_tok,
        "tokens_per_s": tok_s,
        "model_tflops_per_gpu": tok_s * f_tok / world / 1e12,
        "eval_loss": eval_loss,
        "seconds": seconds,
        "peak_memory_allocated": peak,
    }
    log.event("smoke_summary", summary)
    log.close()
    if rank == 0:
        print(
            f"trainperf.capture.smoke: done: {step} steps, {tokens:,} tokens in {seconds:.1f} s; "
            f"{tok_s:,.0f} tokens/s (steps 2..), {summary['model_tflops_per_gpu']:.1f} model "
            f"TFLOP/s per GPU; log {result}",
            flush=True,
        )
    if dist is not None:
        dist.destroy_process_group()
    return summary


def _profiler(args, rank, world, use_cuda, dist, log) -> StepProfiler:
    """The ``--profile-*`` schedule (:mod:`trainperf.capture.profile`), entered; logs ``profiler_trace``."""
    out = getattr(args, "profile_dir", None)
    run_id = (
        os.environ.get("TORCHELASTIC_RUN_ID") or f"{platform.node()}-{os.getpid()}-{time.time_ns()}"
    )
    if dist is not None:  # one id for all ranks: rank 0's
        box = [run_id]
        dist.broadcast_object_list(box, src=0)
        run_id = box[0]
    meta = {"run_id": run_id, "benchmark": BENCHMARK, "world_size": world, "dp": world}
    prof = StepProfiler(
        out,
        rank=rank,
        cuda=use_cuda,
        metadata=meta,
        **(
            {
                "skip_first": args.profile_skip,
                "warmup": args.profile_warmup,
                "active": args.profile_active,
            }
            if out
            else {}
        ),
    )
    if out:
        log.event(
            "profiler_trace", str(Path(out) / "rank*.pt.trace.json.gz"), {**meta, **prof.schedule}
        )
    return prof.__enter__()


class _nullcontext:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m trainperf.capture.smoke",
        description="Short GPT pre-training run on synthetic tokens with an MLPerf-format log.",
    )
    p.add_argument("--preset", choices=sorted(PRESETS), default="tiny", help="model size")
    p.add_argument("--steps", type=int, default=None, help="stop after this many optimizer steps")
    p.add_argument("--minutes", type=float, default=None, help="stop after this many minutes")
    p.add_argument(
        "--eval-every", type=int, default=50, help="steps per block (eval after each; default 50)"
    )
    p.add_argument("--eval-batches", type=int, default=4, help="micro-batches in the held-out set")
    p.add_argument("--micro-batch-size", type=int, default=None, help="override the preset's")
    p.add_argument("--grad-accum", type=int, default=1, help="micro-batches per optimizer step")
    p.add_argument("--lr", type=float, default=None, help="override the preset's learning rate")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--out-dir", default=".", help="folder for the result file (default .)")
    p.add_argument("--result-name", default="result_0.txt", help="result file name")
    p.add_argument("--overwrite", action="store_true", help="replace an existing result file")
    add_profiler_arguments(p)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point (``python -m trainperf.capture.smoke``); returns the exit status."""
    args = _parser().parse_args(argv)
    if not args.steps and not args.minutes:
        print("trainperf.capture.smoke: error: give --steps and/or --minutes", file=sys.stderr)
        return 2
    for name in ("eval_every", "eval_batches", "grad_accum"):
        if getattr(args, name) < 1:
            print(
                f"trainperf.capture.smoke: error: --{name.replace('_', '-')} must be >= 1",
                file=sys.stderr,
            )
            return 2
    try:
        run(args)
    except SmokeError as exc:
        print(f"trainperf.capture.smoke: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
