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
import math
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trainperf.capture.profile import StepProfiler, add_profiler_arguments
from trainperf.capture.training import (
    BENCHMARK,
    NullLog,
    ResultLog,
    SmokeError,
    dist_env,
    log_hyperparameters,
    log_model,
    log_run_stop,
    log_step,
    log_system,
    open_result_log,
    profiler,
    select_device,
    shared_run_id,
    steady_tokens_per_s,
)
from trainperf.flops import ModelSpec, model_flops_per_token, narayanan_flops_per_token

try:
    import torch
    import torch.nn.functional as F
    from torch import nn
except ImportError:  # pragma: no cover - exercised only without torch
    torch = None  # type: ignore[assignment]

__all__ = ["PRESETS", "SmokeConfig", "SmokeError", "main", "model_spec", "run"]


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
# Training run
# --------------------------------------------------------------------------------------------


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
    rank, local_rank, world = dist_env()
    use_cuda, device = select_device(torch, args.device, local_rank)
    dist = None
    if world > 1:
        # deferred: torch.distributed only for a multi-process run
        import torch.distributed as dist

        dist.init_process_group(
            backend="nccl" if use_cuda else "gloo", device_id=device if use_cuda else None
        )
    result, log = open_result_log(args, rank)
    r = _Run(args, cfg, rank, local_rank, world, use_cuda, device, dist, log)
    r.log_header()
    r.build()
    r.sync()
    log.end("init_stop")
    if dist is not None:
        dist.barrier()
    prof = _profiler(args, rank, world, use_cuda, dist, log)
    log.start("run_start")
    t_run = time.time()
    r.train(prof, t_run)
    prof.__exit__(None, None, None)
    peak = log_run_stop(log, torch, use_cuda, device, rank)
    seconds = time.time() - t_run
    tok_s = steady_tokens_per_s(r.times, r.tokens_per_step)
    summary = {
        "result_file": str(result) if rank == 0 else None,
        "steps": r.step,
        "tokens": r.tokens,
        "param_count": r.n_params,
        "model_flops_per_token": r.f_tok,
        "tokens_per_s": tok_s,
        "model_tflops_per_gpu": tok_s * r.f_tok / world / 1e12,
        "eval_loss": r.eval_loss,
        "seconds": seconds,
        "peak_memory_allocated": peak,
    }
    log.event("smoke_summary", summary)
    log.close()
    if rank == 0:
        print(
            f"trainperf.capture.smoke: done: {r.step} steps, {r.tokens:,} tokens in {seconds:.1f} s; "
            f"{tok_s:,.0f} tokens/s (steps 2..), {summary['model_tflops_per_gpu']:.1f} model "
            f"TFLOP/s per GPU; log {result}",
            flush=True,
        )
    if dist is not None:
        dist.destroy_process_group()
    return summary


class _Run:
    """One training run's state, in the steps :func:`run` takes: header, model, training loop."""

    def __init__(
        self,
        args: argparse.Namespace,
        cfg: SmokeConfig,
        rank: int,
        local_rank: int,
        world: int,
        use_cuda: bool,
        device: Any,
        dist: Any,
        log: ResultLog | NullLog,
    ) -> None:
        self.args, self.cfg, self.log = args, cfg, log
        self.rank, self.local_rank, self.world = rank, local_rank, world
        self.use_cuda, self.device, self.dist = use_cuda, device, dist
        self.spec = model_spec(cfg)
        self.global_batch = cfg.micro_batch_size * args.grad_accum * world
        self.tokens_per_step = self.global_batch * cfg.seq_len
        self.f_tok = narayanan_flops_per_token(self.spec)
        self.f_tok_causal = model_flops_per_token(self.spec, causal=True)
        self.accel = (
            torch.cuda.get_device_name(device) if use_cuda else (platform.processor() or "cpu")
        )
        self.step = 0
        self.tokens = 0
        self.times: list[float] = []
        self.eval_loss = float("nan")

    def log_header(self) -> None:
        """The events before the model exists: system, submission, hyperparameters, model FLOPs."""
        args, cfg, log = self.args, self.cfg, self.log
        nodes = int(os.environ.get("SLURM_NNODES", "1"))
        log_system(
            log,
            torch,
            self.accel,
            system_name=f"{platform.node()} smoke",
            nodes=nodes,
            per_node=max(self.world // nodes, 1),
        )
        log.start("init_start")
        log_hyperparameters(
            log,
            global_batch=self.global_batch,
            seq_len=cfg.seq_len,
            seed=args.seed,
            grad_accum=args.grad_accum,
            lr=cfg.lr,
        )
        log.event("opt_gradient_clip_norm", 1.0)
        log_model(log, self.spec, cfg.name, self.f_tok, self.f_tok_causal)
        log.event(
            "smoke_config",
            {
                "preset": cfg.name,
                "micro_batch_size": cfg.micro_batch_size,
                "world_size": self.world,
                "device": self.accel,
                "dtype": "bf16 autocast" if self.use_cuda else "fp32",
                "compile": bool(args.compile),
                "torch": torch.__version__,
            },
        )

    def build(self) -> None:
        """The model (seeded), its DDP/compiled wrapper, AdamW, the data generators, autocast."""
        args, cfg, device, use_cuda = self.args, self.cfg, self.device, self.use_cuda
        torch.manual_seed(args.seed)
        self.model = model = GPT(cfg).to(device)
        self.n_params = n_params = sum(p.numel() for p in model.parameters())
        self.log.event("model_param_count", n_params)
        if self.rank == 0:
            print(
                f"trainperf.capture.smoke: preset {cfg.name}: {n_params:,} parameters; model FLOPs/token "
                f"{self.f_tok:.4e} (Narayanan SC21, dense attention), {self.f_tok_causal:.4e} (causal); "
                f"global batch {self.global_batch} x {cfg.seq_len} tokens; world {self.world}; "
                f"{self.accel}",
                flush=True,
            )
        train_model: Any = model
        if args.compile:
            train_model = torch.compile(model)
        if self.dist is not None:
            # deferred: DDP only for a multi-process run
            from torch.nn.parallel import DistributedDataParallel as DDP

            train_model = DDP(train_model, device_ids=[self.local_rank] if use_cuda else None)
        self.train_model = train_model
        self.opt = torch.optim.AdamW(
            model.parameters(), lr=cfg.lr, betas=(0.9, 0.95), weight_decay=0.1, fused=use_cuda
        )
        self.gen = torch.Generator(device=device).manual_seed(args.seed * 1000 + self.rank)
        eval_gen = torch.Generator(device=device).manual_seed(args.seed * 1000 + 999_983)
        self.eval_batches = [self._batch(eval_gen) for _ in range(args.eval_batches)]
        self.autocast = (
            torch.autocast("cuda", dtype=torch.bfloat16)
            if use_cuda
            else torch.autocast("cpu", enabled=False)
        )

    def _batch(self, gen: Any) -> Any:
        """Uniform random token ids, one more per sequence than the model reads (the targets)."""
        cfg = self.cfg
        return torch.randint(
            0,
            cfg.vocab_raw,
            (cfg.micro_batch_size, cfg.seq_len + 1),
            device=self.device,
            generator=gen,
        )

    def sync(self) -> None:
        if self.use_cuda:
            torch.cuda.synchronize(self.device)

    def evaluate(self) -> float:
        """Mean cross-entropy over the held-out micro-batches (nats/token)."""
        model = self.model
        model.eval()
        total = 0.0
        with torch.no_grad(), self.autocast:
            for b in self.eval_batches:
                total += float(model(b[:, :-1], b[:, 1:]))
        model.train()
        return total / len(self.eval_batches)

    def train_step(self) -> tuple[float, float]:
        """One optimizer step over ``--grad-accum`` micro-batches; (train loss, seconds)."""
        args, dist, train_model = self.args, self.dist, self.train_model
        t0 = time.perf_counter()
        for micro in range(args.grad_accum):
            batch = self._batch(self.gen)
            last = micro == args.grad_accum - 1
            ctx = train_model.no_sync() if (dist is not None and not last) else _nullcontext()
            with ctx, self.autocast:
                loss = train_model(batch[:, :-1], batch[:, 1:])
            (loss / args.grad_accum).backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        train_loss = float(loss.detach())  # synchronises with the device
        self.sync()
        return train_loss, time.perf_counter() - t0

    def done(self, deadline: float) -> bool:
        """The step or time limit reached (on any rank: all ranks agree)."""
        max_steps = self.args.steps if self.args.steps else None
        done = (max_steps is not None and self.step >= max_steps) or time.time() >= deadline
        if self.dist is not None:
            flag = torch.tensor([1.0 if done else 0.0], device=self.device)
            self.dist.all_reduce(flag, op=self.dist.ReduceOp.MAX)
            done = bool(flag.item())
        return done

    def train(self, prof: StepProfiler, t_run: float) -> None:
        """Blocks of ``--eval-every`` steps, each followed by an evaluation, up to the limits."""
        args, log = self.args, self.log
        deadline = t_run + args.minutes * 60 if args.minutes else math.inf
        stop = False
        while not stop:
            block_first = self.tokens
            log.start(
                "block_start",
                metadata={
                    "first_epoch_num": block_first,
                    "epoch_count": args.eval_every * self.tokens_per_step,
                },
            )
            for _ in range(args.eval_every):
                train_loss, dt = self.train_step()
                self.step += 1
                self.tokens += self.tokens_per_step
                self.times.append(dt)
                log_step(log, dt, self.tokens_per_step, train_loss, self.tokens)
                prof.step()
                if self.done(deadline):
                    stop = True
                    break
            log.end("block_stop", metadata={"first_epoch_num": block_first})
            log.start("eval_start", metadata={"epoch_num": self.tokens})
            self.eval_loss = self.evaluate()
            log.end("eval_stop", metadata={"epoch_num": self.tokens})
            log.event("eval_accuracy", self.eval_loss, {"epoch_num": self.tokens})
            if self.rank == 0:
                recent = self.times[-min(len(self.times), args.eval_every) :]
                print(
                    f"trainperf.capture.smoke: step {self.step} tokens {self.tokens:,} "
                    f"train_loss {train_loss:.4f} eval_loss {self.eval_loss:.4f} "
                    f"step_time {sum(recent) / len(recent):.4f} s",
                    flush=True,
                )


def _profiler(args, rank, world, use_cuda, dist, log) -> StepProfiler:
    """The ``--profile-*`` schedule (:mod:`trainperf.capture.profile`), entered; logs ``profiler_trace``."""
    run_id = shared_run_id(dist)
    meta = {"run_id": run_id, "benchmark": BENCHMARK, "world_size": world, "dp": world}
    return profiler(args, rank, use_cuda, meta, log).__enter__()


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
