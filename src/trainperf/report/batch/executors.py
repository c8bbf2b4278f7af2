"""Where the runs execute: local worker processes, or Slurm array jobs through submitit."""

from __future__ import annotations

import json
import time
from pathlib import Path

from trainperf.atomic import write_text_atomic
from trainperf.report.batch.execute import error_text, execute_run
from trainperf.report.batch.grid import Grid, GridError
from trainperf.report.schedule import Work, run_work

# --------------------------------------------------------------------------------------------------
# executors


def run_local(tasks: list[dict], workers: int, bar, on_done) -> None:
    """Run ``tasks`` in ``workers`` worker processes (:func:`trainperf.report.schedule.run_work`:
    Ctrl-C and SIGTERM, a Slurm ``scancel`` or time limit, cancel the pending runs and terminate
    the workers, so none is left running)."""

    def done(work: Work, rec, exc: BaseException | None) -> None:
        on_done(rec if exc is None else crashed(work.arg, exc))  # a worker process died
        bar.update(1)

    run_work([Work(t["slug"], execute_run, t) for t in tasks], workers, lambda w: None, done)


def crashed(task: dict, exc: BaseException) -> dict:
    rec = {
        "run": task["slug"],
        "name": task["name"],
        "parameters": task["parameters"],
        "status": "failed",
        "error": error_text(exc),
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
        # deferred: the submitit executor only (a grid's local runs never load it)
        import submitit  # noqa: PLC0415
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


def run_submitit(grid: Grid, tasks: list[dict], executor: dict, workers: int, bar, on_done):
    ex = _submitit_executor(grid, executor, workers)
    jobs = ex.map_array(execute_run, tasks)
    pending = dict(zip(jobs, tasks, strict=True))
    try:
        while pending:
            finished = [j for j in pending if j.done()]
            for job in finished:
                task = pending.pop(job)
                try:
                    rec = job.result()
                except Exception as exc:  # the job failed outside the notebook (timeout, node, ...)
                    rec = crashed(task, exc)
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
