"""One run of a batch (executed in a worker process or a Slurm job): the notebook with its parameters, the done record."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from trainperf.atomic import write_text_atomic
from trainperf.report.batch.grid import (
    RESULTS_PARAMETER,
    Grid,
    Run,
    is_path_param,
    resolve_path_value,
)
from trainperf.report.notebooks import execute_notebook

# --------------------------------------------------------------------------------------------------
# one run (executed in a worker process or a Slurm job)


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in str(text).strip().splitlines() if ln.strip()]
    return lines[0] if lines else ""


def error_text(exc: BaseException) -> str:
    """``ename: evalue`` (first line) of a papermill error, else ``Type: message``."""
    ename = getattr(exc, "ename", None)
    if ename:
        return f"{ename}: {_first_line(getattr(exc, 'evalue', ''))}".rstrip(": ")
    return f"{type(exc).__name__}: {_first_line(str(exc))}".rstrip(": ")


def _sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _remove_stray(runs_dir: Path, slug: str) -> None:
    """Remove temporary files a killed earlier attempt of this run left behind."""
    for p in runs_dir.glob(f".{slug}.*"):
        if ".tmp" in p.name:
            p.unlink(missing_ok=True)


def execute_run(task: dict) -> dict:
    """Execute one run; never raises for a notebook failure. Returns the done-marker dict.

    ``task`` keys: slug, name, parameters (as written), notebook, runs_dir, base, declared (list of
    the notebook's parameter names).
    """
    runs_dir = Path(task["runs_dir"])
    slug = task["slug"]
    nb_out = runs_dir / f"{slug}.ipynb"
    nb_failed = runs_dir / f"{slug}.failed.ipynb"
    results = runs_dir / f"{slug}.parquet"
    marker = runs_dir / f"{slug}.json"
    runs_dir.mkdir(parents=True, exist_ok=True)
    # the marker goes first, so that a run killed from here on is never taken for done
    marker.unlink(missing_ok=True)
    for p in (nb_out, nb_failed, results):
        p.unlink(missing_ok=True)
    _remove_stray(runs_dir, slug)
    base = Path(task["base"])
    params = {
        k: resolve_path_value(v, base) if is_path_param(k) else v
        for k, v in task["parameters"].items()
    }
    has_results = RESULTS_PARAMETER in task["declared"]
    if has_results:
        params[RESULTS_PARAMETER] = str(results)
    t0 = time.monotonic()
    record = {
        "run": slug,
        "name": task["name"],
        "parameters": task["parameters"],
        "notebook_sha256": _sha256(task["notebook"]),
        "status": "success",
        "error": None,
        "notebook": str(nb_out),
        "results": str(results) if has_results else None,
    }
    try:
        execute_notebook(task["notebook"], nb_out, params, progress=False)
        if has_results and not results.is_file():
            record["status"] = "failed"
            record["error"] = f"the notebook did not write {RESULTS_PARAMETER} ({results.name})"
    except Exception as exc:  # recorded; the batch goes on
        record["status"] = "failed"
        record["error"] = error_text(exc)
        record["notebook"] = str(nb_failed) if nb_failed.exists() else None
    if record["status"] == "failed" and record["results"] and not results.is_file():
        record["results"] = None
    record["duration_s"] = round(time.monotonic() - t0, 3)
    record["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    write_text_atomic(json.dumps(record, indent=2), marker)
    return record


def done_record(grid: Grid, run: Run, has_results: bool) -> dict | None:
    """The marker of a run finished successfully earlier with its outputs in place, else None."""
    marker = grid.runs_dir / f"{run.slug}.json"
    try:
        rec = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if rec.get("status") != "success" or rec.get("parameters") != run.parameters:
        return None
    if rec.get("notebook_sha256") != _sha256(
        grid.notebook
    ):  # the notebook changed since: run again
        return None
    if not (grid.runs_dir / f"{run.slug}.ipynb").is_file():
        return None
    if has_results and not (grid.runs_dir / f"{run.slug}.parquet").is_file():
        return None
    return rec
