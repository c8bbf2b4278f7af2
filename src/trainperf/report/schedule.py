"""Run the main job's work items side by side: notebooks and batch runs on ``jobs`` worker processes.

Every notebook and every batch run starts its own kernel and spends its time there, so the job's
wall time is the sum of the kernels' times unless they run side by side; on a machine of N cores,
N kernels at once finish the same work in about 1/N of the time (measured on 2 cores: two
CPU-bound processes at once took 2.14 s where one took 2.17 s). A work item may wait for a group of
others (the comparison notebook reads the summary of the batch's runs).

With ``jobs == 1`` everything runs in this process, one item after another, in the given order
(the notebooks then show papermill's per-cell progress bars). With more, the items run in a pool of
``jobs`` spawned worker processes; at most ``jobs`` are handed out at a time, so an item is
started when it is handed out (the progress line printed then is true), in the given order among
those whose group is complete. Workers ignore Ctrl-C (the parent stops them); on an error, an
interrupt or SIGTERM the items not started are cancelled, the workers terminated and their kernels
killed (:func:`kill_descendants`: the processes below this one, listed before any is stopped).

Ctrl-C stops the run every time: while items run, SIGINT has a handler of its own here (set even
where the process started with SIGINT ignored, and never replaced by the SIGINT handler that
``asyncio.run`` installs around papermill's event loop in a single-process run, which cancels the
loop's task and can lose the interrupt), which records the interrupt and raises
``KeyboardInterrupt``; a recorded interrupt is raised again after each item ends, in case a library
turned the first into another error.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Work", "default_jobs", "exit_process", "kill_descendants", "run_work"]

#: the most worker processes the job starts by default (each holds one kernel of up to ~1 GB)
MAX_DEFAULT_JOBS = 4


def default_jobs() -> int:
    """Worker processes by default: the CPUs this process may run on (``os.sched_getaffinity``:
    a Slurm allocation or ``taskset`` is honoured), at most :data:`MAX_DEFAULT_JOBS`."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        n = os.cpu_count() or 1
    return max(1, min(MAX_DEFAULT_JOBS, n))


@dataclass
class Work:
    """One item: ``fn(arg)`` (both picklable: a module-level function and plain data).

    Attributes:
        key: unique name, passed back to the callbacks.
        fn, arg: what to run.
        group: the group this item belongs to (e.g. ``"batch"``), or None.
        after: the group that must be complete before this item starts, or None.
    """

    key: str
    fn: Callable
    arg: object
    group: str | None = None
    after: str | None = None


def _worker_init() -> None:
    """Workers leave Ctrl-C to the parent, which stops them (no traceback per worker)."""

    signal.signal(signal.SIGINT, signal.SIG_IGN)


class _Inline:
    """``jobs == 1``: run each item here, when it is handed out."""

    def submit(self, fn, arg) -> cf.Future:
        fut: cf.Future = cf.Future()
        try:
            fut.set_result(fn(arg))
        except BaseException as exc:  # handed to on_done like a worker's exception
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            fut.set_exception(exc)
        return fut

    def stop(self) -> None:
        pass


def kill_descendants(timeout_s: float = 10.0) -> int:
    """Terminate every process below this one (workers, kernels), then kill what is left after
    ``timeout_s``. The tree is listed first: a kernel whose worker died would no longer be below.

    Returns:
        the number of processes signalled (0 when ``psutil``, ipykernel's own dependency, is absent).
    """
    try:
        import psutil  # noqa: PLC0415 - only on a stop
    except ImportError:
        return 0
    try:
        procs = psutil.Process().children(recursive=True)
    except psutil.Error:
        return 0
    for p in procs:
        try:
            p.terminate()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(procs, timeout=timeout_s)
    for p in alive:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=timeout_s)
    return len(procs)


def exit_process(code: int) -> None:
    """End this process now with ``code`` once its output is flushed, without the interpreter's exit
    handlers: for the command line after an interrupt, when the workers are already stopped and
    what finished is recorded. Seen once under load (a batch stopped by SIGTERM had printed
    "trainperf: interrupted" and returned 130, then did not exit in 600 s): at exit the interpreter
    joins ``concurrent.futures``' manager thread and the queue feeder threads of a process pool
    whose workers were just killed, and one of them can stay blocked."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


_INTERRUPTED = threading.Event()


def _on_sigint(signum, frame):
    _INTERRUPTED.set()
    raise KeyboardInterrupt


def _sigint_handler():
    """Install :func:`_on_sigint` (main thread only); returns the handler it replaced, or None."""
    if threading.current_thread() is not threading.main_thread():
        return None
    _INTERRUPTED.clear()
    return signal.signal(signal.SIGINT, _on_sigint)


class _Pool:
    def __init__(self, jobs: int) -> None:
        ctx = multiprocessing.get_context("spawn")  # no fork of a process holding threads
        self.pool = cf.ProcessPoolExecutor(
            max_workers=jobs, mp_context=ctx, initializer=_worker_init
        )

    def submit(self, fn, arg) -> cf.Future:
        return self.pool.submit(fn, arg)

    def stop(self) -> None:
        procs = list(getattr(self.pool, "_processes", {}).values())  # no public API for this
        self.pool.shutdown(wait=False, cancel_futures=True)
        kill_descendants()  # the workers and their kernels, listed before any is stopped
        for p in procs:
            p.terminate()
        for p in procs:
            p.join(timeout=10)


def run_work(
    items: list[Work],
    jobs: int,
    on_start: Callable[[Work], None],
    on_done: Callable[[Work, object, BaseException | None], None],
    on_group_done: Callable[[str], None] = lambda group: None,
) -> None:
    """Run ``items`` (see the module docstring).

    Args:
        items: in the order they should start; an item whose ``after`` group is not complete
            waits, and those behind it start meanwhile.
        jobs: worker processes (1: everything in this process).
        on_start: called in this process just before an item starts.
        on_done: called in this process when an item ends, with its result, or None and the
            exception it raised (a worker that died: ``BrokenProcessPool``). What it raises stops
            the run (items not started are not started).
        on_group_done: called once a group's last item is done, before the items waiting for it
            start; what it raises stops the run.

    Raises:
        ValueError: an item waits for a group no item belongs to.
        whatever a callback raises; KeyboardInterrupt.
    """
    groups: dict[str, int] = {}
    for w in items:
        if w.group:
            groups[w.group] = groups.get(w.group, 0) + 1
    for w in items:
        if w.after and w.after not in groups:
            raise ValueError(f"{w.key} waits for group {w.after!r}, which has no items")
    pending = list(items)
    running: dict[cf.Future, Work] = {}
    done_groups: set[str] = set()
    runner = _Inline() if jobs <= 1 or len(items) <= 1 else _Pool(jobs)
    inline = isinstance(runner, _Inline)
    previous = _sigterm_as_interrupt()
    previous_int = _sigint_handler()

    def ready() -> Work | None:
        for i, w in enumerate(pending):
            if not w.after or w.after in done_groups:
                return pending.pop(i)
        return None

    def finished(fut: cf.Future, w: Work) -> None:
        exc = fut.exception()
        on_done(w, None if exc else fut.result(), exc)
        if w.group:
            groups[w.group] -= 1
            if groups[w.group] == 0:
                done_groups.add(w.group)
                on_group_done(w.group)

    try:
        while pending or running:
            while len(running) < max(1, jobs) and (w := ready()) is not None:
                on_start(w)
                fut = runner.submit(w.fn, w.arg)
                if inline:
                    finished(fut, w)
                    if _INTERRUPTED.is_set():  # an interrupt a library turned into an outcome
                        raise KeyboardInterrupt
                else:
                    running[fut] = w
            if not running:
                if pending:  # cannot happen: every awaited group has items, all handed out
                    raise RuntimeError(f"{pending[0].key} waits for {pending[0].after!r}")
                break
            for fut in _first_done(running):
                finished(fut, running.pop(fut))
                if _INTERRUPTED.is_set():  # an interrupt a library turned into an outcome
                    raise KeyboardInterrupt
    except BaseException:
        runner.stop()
        raise
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if previous_int is not None:
            signal.signal(signal.SIGINT, previous_int)
    if not inline:
        runner.pool.shutdown(wait=True)


def _first_done(running) -> list[cf.Future]:
    """The futures done, once one is. Polled with ``time.sleep``, not ``concurrent.futures.wait``:
    a Ctrl-C landing inside a ``threading.Condition`` wait can leave its lock held (the main thread
    then hangs in the except clause, seen here); a sleep is interrupted cleanly. 50 ms a poll is
    nothing beside the seconds an item takes."""
    while True:
        done = [f for f in running if f.done()]
        if done:
            return done
        time.sleep(0.05)


def _sigterm_as_interrupt():
    """SIGTERM (``kill``, a Slurm ``scancel`` or time limit) stops the run like Ctrl-C: the items
    not started are cancelled and the workers terminated, none is left running. Returns the
    handler it replaced (None off the main thread, where no handler can be set)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def on_term(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    return signal.signal(signal.SIGTERM, on_term)
