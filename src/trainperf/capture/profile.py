"""A ``torch.profiler`` schedule for training loops: a few active steps, one Chrome trace per rank.

Used by the smoke benchmark (:mod:`trainperf.capture.smoke`, options ``--profile-*``) and the parallel
benchmark (:mod:`trainperf.capture.parallel`); any loop can use it::

    prof = StepProfiler(out_dir, rank=rank, skip_first=100, warmup=2, active=10,
                        metadata={"run_id": run_id, "world_size": world})
    with prof:
        for step in ...:
            train_step()
            prof.step()          # after each optimizer step

Schedule (``torch.profiler.schedule(skip_first=s, wait=0, warmup=w, active=a, repeat=1)``): the
first ``s`` steps are not profiled, the next ``w`` are profiled and thrown away (the profiler's
own start-up cost lands there), the next ``a`` are recorded; the trace is written when the last
active step ends. Because :meth:`StepProfiler.step` is called after each step, the trace's
``ProfilerStep#N`` annotation spans training iteration ``N`` counted from 0 (the ``N+1``-th
step); whatever runs between two ``step()`` calls, an evaluation too, belongs to the step after it.

The trace is ``<out_dir>/rank<rank>.pt.trace.json.gz`` (gzip, Kineto's Chrome-trace JSON, read by
:func:`trainperf.trace.read_trace` and by HolisticTraceAnalysis). Besides Kineto's own top-level
keys (``distributedInfo`` when ``torch.distributed`` is initialised, ``deviceProperties``,
``baseTimeNanoseconds``) it carries ``"trainperf": {...}``: the ``metadata`` given here plus
``rank`` and the schedule (``skip_first``, ``warmup``, ``active``), added while the profiler is
recording (Kineto keeps metadata only from a running session).

Activities: CPU, and CUDA when a GPU is used (kernels, memcpy/memset and the CUDA runtime calls
that launched them, linked by ``correlation``). Shapes, stacks and memory are not recorded: they
multiply the trace's size and the profiler's overhead and no analysis here uses them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["StepProfiler", "add_profiler_arguments", "trace_path"]


def trace_path(out_dir: str | os.PathLike, rank: int) -> Path:
    """``<out_dir>/rank<rank>.pt.trace.json.gz``: where :class:`StepProfiler` writes rank's trace."""
    return Path(out_dir) / f"rank{rank}.pt.trace.json.gz"


class StepProfiler:
    """``torch.profiler.profile`` with a one-cycle step schedule; a no-op when ``out_dir`` is None.

    Args:
        out_dir: folder for the trace (created); None disables profiling.
        rank: the process's rank (file name and metadata).
        skip_first, warmup, active: schedule in steps (see the module docstring); ``active >= 1``.
        cuda: record CUDA activity (kernels, copies, runtime calls) too.
        metadata: JSON-serialisable dict stored under the trace's top-level key ``trainperf``.

    Attributes:
        path: the trace file (None when disabled); ``written`` is True once it has been exported.

    Raises:
        ValueError: ``active < 1`` or a negative ``skip_first``/``warmup``.
    """

    def __init__(
        self,
        out_dir: str | os.PathLike | None,
        *,
        rank: int = 0,
        skip_first: int = 10,
        warmup: int = 2,
        active: int = 5,
        cuda: bool = False,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        if active < 1 or skip_first < 0 or warmup < 0:
            raise ValueError(
                f"profiler schedule needs active >= 1, skip_first >= 0, warmup >= 0 "
                f"(got skip_first={skip_first}, warmup={warmup}, active={active})"
            )
        self.path = trace_path(out_dir, rank) if out_dir is not None else None
        self.rank = rank
        self.schedule = {"skip_first": skip_first, "warmup": warmup, "active": active}
        self.cuda = cuda
        self.metadata = {**(metadata or {}), "rank": rank, **self.schedule}
        self.written = False
        self._prof: Any = None

    @property
    def enabled(self) -> bool:
        return self.path is not None

    def __enter__(self) -> StepProfiler:
        if self.path is None:
            return self
        # deferred: torch is the optional [gpu] extra; a run without --profile never loads it here
        import torch.profiler as tp

        self.path.parent.mkdir(parents=True, exist_ok=True)
        activities = [tp.ProfilerActivity.CPU]
        if self.cuda:
            activities.append(tp.ProfilerActivity.CUDA)

        def ready(prof: Any) -> None:
            prof.export_chrome_trace(str(self.path))  # ".gz": torch writes it gzip-compressed
            self.written = True

        self._prof = tp.profile(
            activities=activities,
            schedule=tp.schedule(wait=0, repeat=1, **self.schedule),
            on_trace_ready=ready,
            record_shapes=False,
            with_stack=False,
            profile_memory=False,
            # one cycle only (repeat=1), so keeping events "across cycles" changes nothing; without
            # it torch warns "Profiler clears events at the end of each cycle" at the first cycle
            acc_events=True,
        )
        self._prof.__enter__()
        self._tag()
        return self

    def _tag(self) -> None:
        # deferred: torch is the optional [gpu] extra; a run without --profile never loads it here
        import torch.profiler as tp

        if self._prof.current_action in (
            tp.ProfilerAction.WARMUP,
            tp.ProfilerAction.RECORD,
            tp.ProfilerAction.RECORD_AND_SAVE,
        ):
            self._prof.add_metadata_json("trainperf", json.dumps(self.metadata))

    def step(self) -> None:
        """Mark the end of one training step."""
        if self._prof is not None:
            self._prof.step()
            self._tag()

    def __exit__(self, *exc: object) -> None:
        if self._prof is not None:
            self._prof.__exit__(*exc)
            self._prof = None


def add_profiler_arguments(parser: Any) -> None:
    """Add ``--profile-dir``, ``--profile-skip``, ``--profile-warmup``, ``--profile-active``."""
    g = parser.add_argument_group("profiler (torch.profiler Chrome trace, one file per rank)")
    g.add_argument(
        "--profile-dir",
        default=None,
        help="write rank<r>.pt.trace.json.gz here (default: no profiling)",
    )
    g.add_argument(
        "--profile-skip", type=int, default=20, help="steps before profiling starts (default 20)"
    )
    g.add_argument(
        "--profile-warmup", type=int, default=2, help="profiled, discarded steps (default 2)"
    )
    g.add_argument("--profile-active", type=int, default=5, help="recorded steps (default 5)")
