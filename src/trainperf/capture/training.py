"""What the training benchmarks (:mod:`~trainperf.capture.smoke`, :mod:`~trainperf.capture.parallel`) share.

The torchrun environment and the device, the MLPerf result log (written with
``mlperf_logging.mllog`` by rank 0, events as the smoke module's docstring lists them), the run id
all ranks agree on, and the ``--profile-*`` schedule (:mod:`trainperf.capture.profile`). PyTorch is
passed in or imported by the callers, so this module imports without it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import platform
import time
from pathlib import Path
from typing import Any

from trainperf.capture.profile import StepProfiler
from trainperf.errors import TrainperfError

__all__ = [
    "BENCHMARK",
    "NullLog",
    "ResultLog",
    "SmokeError",
    "dist_env",
    "log_hyperparameters",
    "log_model",
    "log_run_stop",
    "log_step",
    "log_system",
    "open_result_log",
    "profiler",
    "select_device",
    "shared_run_id",
    "steady_tokens_per_s",
]


class SmokeError(TrainperfError, RuntimeError):
    """A usage or environment problem (no torch, no GPU, result file exists)."""


BENCHMARK = "gpt_smoke"
"""Value of ``submission_benchmark``."""


def dist_env() -> tuple[int, int, int]:
    """(rank, local_rank, world_size) from torchrun's environment (1 process without it)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    return int(os.environ.get("RANK", "0")), int(os.environ.get("LOCAL_RANK", "0")), world


def select_device(torch: Any, device_arg: str, local_rank: int) -> tuple[bool, Any]:
    """(use_cuda, device) for ``--device`` (``auto``, ``cpu``, ``cuda``); TF32 on for CUDA.

    Raises:
        SmokeError: ``--device cuda`` and PyTorch sees no GPU.
    """
    use_cuda = device_arg == "cuda" or (device_arg == "auto" and torch.cuda.is_available())
    if device_arg == "cuda" and not torch.cuda.is_available():
        raise SmokeError("--device cuda: PyTorch sees no CUDA GPU")
    device = torch.device(f"cuda:{local_rank}" if use_cuda else "cpu")
    if use_cuda:
        torch.cuda.set_device(device)
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    return use_cuda, device


class NullLog:
    """Stands in for the MLLogger on ranks other than 0."""

    def event(self, *a: Any, **k: Any) -> None:
        pass

    start = end = event

    def raw(self, line: str) -> None:
        pass

    def close(self) -> None:
        pass


class ResultLog:
    """An ``mlperf_logging.mllog.MLLogger`` writing to one result file (rank 0 only)."""

    def __init__(self, path: Path) -> None:
        # deferred: mlperf_logging.mllog (~0.4-1 s, -X importtime) only when a run writes a log
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


def open_result_log(args: argparse.Namespace, rank: int) -> tuple[Path, ResultLog | NullLog]:
    """The result file ``--out-dir``/``--result-name`` and its log (a :class:`NullLog` off rank 0).

    Raises:
        SmokeError: the file exists, is not empty, and ``--overwrite`` was not given.
    """
    out_dir = Path(args.out_dir)
    result = out_dir / args.result_name
    log: ResultLog | NullLog = NullLog()
    if rank == 0:
        out_dir.mkdir(parents=True, exist_ok=True)
        if result.exists() and result.stat().st_size and not args.overwrite:
            raise SmokeError(f"{result} exists; pass --overwrite or choose another --out-dir")
        log = ResultLog(result)
    return result, log


def log_system(
    log: ResultLog | NullLog,
    torch: Any,
    accel: str,
    *,
    system_name: str,
    nodes: int,
    per_node: int,
) -> None:
    """``:::SYSJSON`` and the ``submission_*`` events."""
    log.raw(
        ":::SYSJSON "
        + json.dumps(
            {
                "submitter": "trainperf",
                "division": "open",
                "status": "research",
                "system_name": system_name,
                "number_of_nodes": str(nodes),
                "accelerators_per_node": str(per_node),
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


def log_hyperparameters(
    log: ResultLog | NullLog,
    *,
    global_batch: int,
    seq_len: int,
    seed: int,
    grad_accum: int,
    lr: float,
) -> None:
    """Batch, sequence length, seed, accumulation and the AdamW settings (β 0.9, 0.95; wd 0.1)."""
    log.event("global_batch_size", global_batch)
    log.event("max_sequence_length", seq_len)
    log.event("seed", seed)
    log.event("gradient_accumulation_steps", grad_accum)
    log.event("opt_name", "adamw")
    log.event("opt_base_learning_rate", lr)
    log.event("opt_adamw_beta_1", 0.9)
    log.event("opt_adamw_beta_2", 0.95)
    log.event("opt_adamw_weight_decay", 0.1)


def log_model(
    log: ResultLog | NullLog, spec: Any, preset: str, f_tok: float, f_tok_causal: float
) -> None:
    """``model_spec`` and the model FLOPs per token (Narayanan SC21 eq. 3; causal variant)."""
    log.event("model_spec", dataclasses.asdict(spec), {"preset": preset})
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


def log_step(
    log: ResultLog | NullLog, dt: float, tokens_per_step: int, loss: float, tokens: int
) -> None:
    """One ``tracked_stats`` event: step time (s), throughput (tokens/s), loss; ``step`` = tokens."""
    log.event(
        "tracked_stats",
        {
            "train_step_timing in s": dt,
            "throughput in tokens/s": tokens_per_step / dt,
            "train_loss": loss,
        },
        {"step": tokens},
    )


def log_run_stop(
    log: ResultLog | NullLog, torch: Any, use_cuda: bool, device: Any, rank: int
) -> int | None:
    """``peak_memory_allocated`` (bytes, CUDA only) and ``run_stop``; returns the peak."""
    peak = torch.cuda.max_memory_allocated(device) if use_cuda else None
    if peak is not None:
        log.event("peak_memory_allocated", peak, {"unit": "bytes", "rank": rank})
    log.end("run_stop", metadata={"status": "success"})
    return peak


def steady_tokens_per_s(times: list[float], tokens_per_step: int) -> float:
    """Tokens/s over all steps but the first (all when there is one)."""
    steady = times[1:] or times
    return tokens_per_step * len(steady) / sum(steady)


def shared_run_id(dist: Any) -> str:
    """``TORCHELASTIC_RUN_ID``, else host-pid-ns; with a process group, rank 0's for all ranks."""
    run_id = (
        os.environ.get("TORCHELASTIC_RUN_ID") or f"{platform.node()}-{os.getpid()}-{time.time_ns()}"
    )
    if dist is not None:  # one id for all ranks: rank 0's
        box = [run_id]
        dist.broadcast_object_list(box, src=0)
        run_id = box[0]
    return run_id


def profiler(
    args: argparse.Namespace, rank: int, use_cuda: bool, meta: dict, log: ResultLog | NullLog
) -> StepProfiler:
    """The ``--profile-*`` schedule (not entered); logs ``profiler_trace`` when tracing."""
    out = getattr(args, "profile_dir", None)
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
    return prof
