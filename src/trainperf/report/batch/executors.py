"""Where the runs execute: local worker processes, or Slurm array jobs through submitit."""

from __future__ import annotations

import concurrent.futures as cf
import json
import multiprocessing
import time
from pathlib import Path

from trainperf.atomic import write_text_atomic
from trainperf.report.batch.execute import _error_text, _execute_run
from trainperf.report.batch.grid import Grid, GridError

# --------------------------------------------------------------------------------------------------
# executors


def _worker_init() -> None:
    """Workers leave Ctrl-C and SIGTERM to the parent, which stops them (no traceback per worker)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_local(tasks: list[dict], workers: int, bar, on_done) -> None:
    """Run ``tasks`` in worker processes. SIGTERM (a Slurm ``scancel`` or time limit) is handled like
    Ctrl-C: the pending runs are cancelled and the workers terminated, so none is left running."""
    import signal
    import threading

    ctx = multiprocessing.get_context("spawn")  # no fork of a process holding threads
    pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_worker_init)
    previous = None
    if threading.current_thread() is threading.main_thread():

        def _on_term(signum, frame):
            raise KeyboardInterrupt(f"signal {signum}")

        previous = signal.signal(signal.SIGTERM, _on_term)
    try:
        futures = {pool.submit(_execute_run, t): t for t in tasks}
        for fut in cf.as_completed(futures):
            task = futures[fut]
            try:
                rec = fut.result()
            except Exception as exc:  # the worker process itself died
                rec = _crashed(task, exc)
            on_done(rec)
            bar.update(1)
    except BaseException:
        procs = list(getattr(pool, "_processes", {}).values())  # no public API for this
        pool.shutdown(wait=False, cancel_futures=True)
        for p in procs:
            p.terminate()
        for p in procs:
            p.join(timeout=10)
        raise
    else:
        pool.shutdown(wait=True)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _crashed(task: dict, exc: BaseException) -> dict:
    rec = {
        "run": task["slug"],
        "name": task["name"],
        "parameters": task["parameters"],
        "status": "failed",
        "error": _error_text(exc),
        "notebook": None,
        "results": None,
        "duration_s": None,
    }
    # leave a marker so the failure is visible in runs/ too
    try:
        write_text_atomic(
            json.dumps(rec, indent=2), Path(task["runs_dir"]) / f"{task['slug']}.json"
        )
    except OSError:
        pass
    return rec


def _submitit_executor(grid: Grid, executor: dict, workers: int):
    try:
        import submitit
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise GridError(
            "executor 'slurm' needs submitit: pip install submitit (or conda install -c conda-forge submitit)"
        ) from exc
    kind = executor.get("kind", "slurm")
    cluster = "local" if kind == "submitit_local" else "slurm"
    ex = submitit.AutoExecutor(folder=grid.output / "submitit" / "%j", cluster=cluster)
    params: dict = {"timeout_min": int(executor.get("timeout_min", 60)), "name": grid.name}
    if cluster == "slurm":
        params["slurm_array_parallelism"] = workers
        if executor.get("partition"):
            params["slurm_partition"] = executor["partition"]
        if executor.get("cpus_per_task"):
            params["cpus_per_task"] = int(executor["cpus_per_task"])
        if executor.get("mem_gb"):
            params["mem_gb"] = executor["mem_gb"]
        if executor.get("gpus_per_node") is not None:
            params["gpus_per_node"] = int(executor["gpus_per_node"])
        if executor.get("additional"):
            params["slurm_additional_parameters"] = dict(executor["additional"])
    ex.update_parameters(**params)
    return ex


def _run_submitit(grid: Grid, tasks: list[dict], executor: dict, workers: int, bar, on_done):
    ex = _submitit_executor(grid, executor, workers)
    jobs = ex.map_array(_execute_run, tasks)
    pending = dict(zip(jobs, tasks, strict=True))
    try:
        while pending:
            finished = [j for j in pending if j.done()]
            for job in finished:
                task = pending.pop(job)
                try:
                    rec = job.result()
                except Exception as exc:  # the job failed outside the notebook (timeout, node, ...)
                    rec = _crashed(task, exc)
                    rec["error"] = f"job {job.job_id}: {rec['error']}"
                rec["job_id"] = str(job.job_id)
                on_done(rec)
                bar.update(1)
            if pending and not finished:
                time.sleep(2.0)
    except BaseException:
        for job in pending:
            try:
                job.cancel(check=False)
            except Exception:
                pass
        raise
