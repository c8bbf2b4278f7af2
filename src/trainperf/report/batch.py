"""Batch runs: one parameterized notebook executed over a grid of parameter sets.

A grid is a YAML file::

    notebook: ../notebooks/mlperf_runs.ipynb   # the notebook to execute
    output: ../_output/batch/mlperf_systems    # runs/, summary.parquet, summary.csv go here
    workers: 2                                 # local worker processes (default: min(4, CPUs))
    parameters:                                # common to every run
      figures_dir: ""
    discover:                                  # one run per MLPerf result folder, at any depth
      kind: mlperf_results
      path: ../data/mlperf
      parameter: mlperf_path
    runs:                                      # and/or explicit parameter sets
      - name: one-system                       # optional; gives the readable part of the slug
        mlperf_path: ../data/mlperf/v4.1
    executor:                                  # optional; default: local worker processes
      kind: slurm
      partition: debug
      timeout_min: 30

Paths
    Every relative path in the file is relative to **the folder of the YAML file**: ``notebook``,
    ``output``, ``discover.path``, and the values of parameters whose name ends in ``_path`` or ``_dir``
    (an empty string stays empty: ``figures_dir: ""`` means "export no figures"). The notebook
    receives them as absolute paths and runs with its own folder as working folder, as in
    ``trainperf report``.

Runs and slugs
    Each parameter set (the common ``parameters`` updated with the run's own) is one run, named by a
    slug: a readable prefix (the run's ``name``, or else its parameter values) and the first 10 hex
    digits of the SHA-256 of the parameters as written in the file (JSON, keys sorted), e.g.
    ``v4.1-NVIDIA-eos_n64_ngc24.09_nemo-gpt3-3f0c9a1b2e``. The same parameters give the same slug on
    every machine and checkout; two runs with the same parameters are refused.

Outputs, per run, in ``<output>/runs/``
    ``<slug>.ipynb`` the executed notebook (``<slug>.failed.ipynb`` when a cell failed),
    ``<slug>.parquet`` the notebook's results table (passed to it as ``results_path`` when the notebook
    declares that parameter), and ``<slug>.json``, the done-marker written last (status, duration,
    error). All three are written to a temporary name and renamed, so a killed batch leaves no
    half-written file; temporary files left by a killed run are removed when that run starts again.

Resume
    A run is skipped (status ``skipped``, outputs reused) when its marker says ``success``, the notebook
    file is unchanged (its sha256 is in the marker) and its
    notebook and results table exist; ``force=True`` (``--force``) runs everything again. Failed runs
    are always run again.

Summary
    ``<output>/summary.parquet`` and ``summary.csv``, one row per run (see :func:`run_batch`).

Executors
    ``local`` (default): ``workers`` processes (:class:`concurrent.futures.ProcessPoolExecutor`), each
    running papermill, which starts its own kernel. ``slurm``: one Slurm job per run, submitted through
    submitit as a job array (``executor: {kind: slurm, partition: ..., timeout_min: ...}``; at most
    ``workers`` array tasks run at once); the jobs execute :func:`_execute_run` with this same Python
    on the cluster, so the output folder must be on a file system the nodes share. ``submitit_local``
    runs the same submitit path as local processes (for trying a grid without a cluster).

Command line: ``trainperf batch GRID.yaml [--workers N] [--force] [--executor local|slurm]``.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import hashlib
import json
import multiprocessing
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from trainperf.atomic import write_parquet_atomic, write_text_atomic
from trainperf.errors import ConfigError
from trainperf.report.notebooks import execute_notebook

__all__ = [
    "EXECUTOR_KINDS",
    "RESULTS_PARAMETER",
    "STATUSES",
    "Grid",
    "GridError",
    "Run",
    "add_batch_arguments",
    "discover_mlperf",
    "load_grid",
    "main",
    "run_batch",
    "run_from_args",
    "slugify_run",
    "validate_grid",
]

#: Values of the grid's ``executor.kind``.
EXECUTOR_KINDS = ("local", "slurm", "submitit_local")
#: Run statuses in the summary.
STATUSES = ("success", "failed", "skipped", "interrupted")
#: Parameter the batch sets itself (to ``<output>/runs/<slug>.parquet``) when the notebook declares it.
RESULTS_PARAMETER = "results_path"

_GRID_KEYS = {"notebook", "output", "workers", "parameters", "runs", "discover", "executor", "name"}
_EXECUTOR_KEYS = {
    "kind",
    "partition",
    "timeout_min",
    "cpus_per_task",
    "mem_gb",
    "gpus_per_node",
    "additional",
}
_SUMMARY_FIXED = [
    "run",
    "name",
    "parameters",
    "status",
    "duration_s",
    "notebook",
    "results",
    "error",
    "result_rows",
    "n_success",
    "time_to_train_median_min",
    "time_to_train_n",
]


class GridError(ConfigError):
    """A grid file or grid that cannot be run (raised before any run starts)."""


@dataclass(frozen=True)
class Run:
    """One parameter set of a grid.

    Attributes:
        name: readable name (from ``runs[].name`` or the discovered folder), may be empty.
        parameters: the notebook parameters as written in the grid (common ones included).
        slug: file stem of the run's outputs (:func:`slugify_run`).
    """

    name: str
    parameters: dict
    slug: str


@dataclass
class Grid:
    """A notebook and the parameter sets to execute it with (see the module docstring).

    Attributes:
        name: grid name (the YAML file stem), used in the progress bar and job names.
        notebook: absolute path of the notebook.
        output: absolute output folder.
        runs: the runs, in file order (discovered ones first, then explicit ones).
        base: folder relative paths in parameter values are resolved against (the YAML's folder).
        workers: local worker processes (or the Slurm array parallelism); None: min(4, CPUs).
        executor: ``{"kind": "local"}`` or ``{"kind": "slurm", "partition": ..., "timeout_min": ...}``.
        source: the YAML file, if the grid was loaded from one.
    """

    name: str
    notebook: Path
    output: Path
    runs: list[Run]
    base: Path
    workers: int | None = None
    executor: dict = field(default_factory=lambda: {"kind": "local"})
    source: Path | None = None

    @property
    def runs_dir(self) -> Path:
        """``<output>/runs``: executed notebooks, results tables and done-markers."""
        return self.output / "runs"


# --------------------------------------------------------------------------------------------------
# grid loading


def _slug_part(text: str) -> str:
    text = re.sub(r"[^A-Za-z0-9._-]+", "-", str(text)).strip("-.")
    return re.sub(r"-{2,}", "-", text)


def slugify_run(parameters: dict, name: str = "") -> str:
    """Return the deterministic file stem of a run.

    The readable prefix comes from ``name`` (or, when empty, the parameter values joined by ``-``),
    with characters other than ``A-Za-z0-9._-`` replaced by ``-`` and cut to 60 characters; the suffix
    is the first 10 hex digits of SHA-256 over ``json.dumps(parameters, sort_keys=True)``. The prefix
    is decoration only: the hash alone identifies the parameter set.

    Raises:
        TypeError: a parameter value is not JSON-serializable.
    """
    digest = hashlib.sha256(
        json.dumps(parameters, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    ).hexdigest()[:10]
    prefix = name or "-".join(str(parameters[k]) for k in sorted(parameters) if parameters[k] != "")
    prefix = _slug_part(prefix)[:60].strip("-.") or "run"
    return f"{prefix}-{digest}"


def discover_mlperf(path: str | Path, parameter: str = "mlperf_path") -> list[dict]:
    """One parameter set per MLPerf result folder under ``path`` (any depth).

    A result folder is a folder directly holding ``result_*.txt`` files (in the MLCommons layout,
    ``<round>/<submitter>/results/<system>/<benchmark>/``).

    Args:
        path: a results checkout or any folder in that layout.
        parameter: the notebook parameter that receives the folder.

    Returns:
        list, sorted by folder, of dicts ``{"name": <folder relative to path, without the "results"
        level, "/"-separated>, parameter: <the folder, str>}``; the folder is ``path`` joined with the
        relative folder (absolute only if ``path`` is).

    Raises:
        FileNotFoundError: ``path`` does not exist or holds no result file.
    """
    from trainperf.mlperf import find_result_files

    path = Path(path)
    if path.is_file():
        raise FileNotFoundError(f"{path}: is a file; discover needs a folder of MLPerf results")
    folders = sorted({f.parent for f in find_result_files(path)})
    out = []
    for folder in folders:
        rel = folder.relative_to(path)
        parts = [p for p in rel.parts if p != "results"] or [path.resolve().name]
        out.append({"name": "/".join(parts), parameter: str(path / rel)})
    return out


_DISCOVERERS = {"mlperf_results": discover_mlperf}


def _is_path_param(key: str) -> bool:
    return key.endswith("_path") or key.endswith("_dir")


def _resolve(value, base: Path):
    if isinstance(value, str) and value and not os.path.isabs(value):
        return str((base / value).resolve())
    return value


def _notebook_parameters(notebook: Path) -> dict:
    import papermill as pm

    if not notebook.is_file():
        raise GridError(f"notebook {notebook} does not exist")
    return pm.inspect_notebook(str(notebook))


def validate_grid(grid: Grid) -> dict:
    """Check a grid before anything runs; return the notebook's declared parameters.

    Raises:
        GridError: the notebook is missing, a run uses a parameter the notebook does not declare,
            a run sets ``results_path`` (the batch sets it), two runs share parameters,
            or the executor kind is unknown.
    """
    declared = _notebook_parameters(grid.notebook)
    known = ", ".join(sorted(declared)) or "(none: the notebook has no cell tagged 'parameters')"
    seen: dict[str, str] = {}
    for run in grid.runs:
        label = run.name or run.slug
        for key in run.parameters:
            if key not in declared:
                raise GridError(
                    f"run {label!r}: unknown parameter {key!r} for notebook {grid.notebook.name}; "
                    f"known parameters: {known}"
                )
            if key == RESULTS_PARAMETER:
                raise GridError(
                    f"run {label!r}: {RESULTS_PARAMETER!r} is set by the batch "
                    f"(to <output>/runs/<slug>.parquet); remove it from the grid"
                )
        key = json.dumps(run.parameters, sort_keys=True)
        if key in seen or run.slug in seen:
            other = seen.get(key) or seen[run.slug]
            raise GridError(f"runs {other!r} and {label!r} have the same parameters: {key}")
        seen[key] = seen[run.slug] = label
    kind = grid.executor.get("kind", "local")
    if kind not in EXECUTOR_KINDS:
        raise GridError(f"executor kind {kind!r} unknown; one of {', '.join(EXECUTOR_KINDS)}")
    return declared


def load_grid(path: str | Path) -> Grid:
    """Read and check a grid YAML file (format: the module docstring).

    Relative paths in the file are resolved against the file's folder. Discovered folders are kept
    relative to that folder in the run parameters, so slugs do not depend on where the checkout is.

    Returns:
        :class:`Grid`, already checked with :func:`validate_grid`.

    Raises:
        FileNotFoundError: the YAML file, or a ``discover.path``, does not exist.
        GridError: malformed file (unknown key, no runs, bad types) or any :func:`validate_grid` error,
            naming the run, the parameter and the parameters the notebook knows.
    """
    import yaml

    path = Path(path).resolve()
    try:
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise GridError(f"{where}: not valid YAML ({problem})") from None
    if not isinstance(spec, dict):
        raise GridError(f"{path}: expected a mapping at the top level")
    unknown = set(spec) - _GRID_KEYS
    if unknown:
        raise GridError(
            f"{path}: unknown key(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(_GRID_KEYS))}"
        )
    base = path.parent
    for key in ("notebook", "output"):
        if not isinstance(spec.get(key), str) or not spec[key]:
            raise GridError(f"{path}: {key!r} (a path relative to {base}) is required")
    common = spec.get("parameters") or {}
    if not isinstance(common, dict):
        raise GridError(f"{path}: 'parameters' must be a mapping of notebook parameters")
    sets: list[tuple[str, dict]] = []
    discover = spec.get("discover")
    if discover:
        specs = discover if isinstance(discover, list) else [discover]
        for d in specs:
            kind = d.get("kind", "mlperf_results")
            if kind not in _DISCOVERERS:
                raise GridError(
                    f"{path}: discover kind {kind!r} unknown; one of {', '.join(_DISCOVERERS)}"
                )
            if "path" not in d:
                raise GridError(f"{path}: discover needs 'path' (relative to {base})")
            parameter = d.get("parameter", "mlperf_path")
            where = Path(d["path"])
            for found in _DISCOVERERS[kind](base / where, parameter=parameter):
                found = dict(found)
                name = found.pop("name")
                if not where.is_absolute():  # keep the folder relative to the grid file
                    found[parameter] = os.path.relpath(found[parameter], base)
                sets.append((name, found))
    for i, entry in enumerate(spec.get("runs") or []):
        if not isinstance(entry, dict):
            raise GridError(f"{path}: runs[{i}] must be a mapping of parameters")
        entry = dict(entry)
        sets.append((str(entry.pop("name", "") or ""), entry))
    if not sets:
        raise GridError(f"{path}: no runs: give 'runs:' or 'discover:'")
    runs = []
    for name, params in sets:
        merged = {**common, **params}
        runs.append(Run(name=name, parameters=merged, slug=slugify_run(merged, name)))
    executor = spec.get("executor") or {"kind": "local"}
    if isinstance(executor, str):
        executor = {"kind": executor}
    bad = set(executor) - _EXECUTOR_KEYS
    if bad:
        raise GridError(
            f"{path}: unknown executor key(s) {', '.join(sorted(bad))}; known: {', '.join(sorted(_EXECUTOR_KEYS))}"
        )
    workers = spec.get("workers")
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise GridError(f"{path}: 'workers' must be a positive integer, got {workers!r}")
    grid = Grid(
        name=str(spec.get("name") or path.stem),
        notebook=(base / spec["notebook"]).resolve(),
        output=(base / spec["output"]).resolve(),
        runs=runs,
        base=base,
        workers=workers,
        executor=dict(executor),
        source=path,
    )
    validate_grid(grid)
    return grid


# --------------------------------------------------------------------------------------------------
# one run (executed in a worker process or a Slurm job)


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in str(text).strip().splitlines() if ln.strip()]
    return lines[0] if lines else ""


def _error_text(exc: BaseException) -> str:
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


def _execute_run(task: dict) -> dict:
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
        k: _resolve(v, base) if _is_path_param(k) else v for k, v in task["parameters"].items()
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
        record["error"] = _error_text(exc)
        record["notebook"] = str(nb_failed) if nb_failed.exists() else None
    if record["status"] == "failed" and record["results"] and not results.is_file():
        record["results"] = None
    record["duration_s"] = round(time.monotonic() - t0, 3)
    record["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    write_text_atomic(json.dumps(record, indent=2), marker)
    return record


def _done_record(grid: Grid, run: Run, has_results: bool) -> dict | None:
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


# --------------------------------------------------------------------------------------------------
# summary


def _key_numbers(results: str | None) -> dict:
    out = {
        "result_rows": None,
        "n_success": None,
        "time_to_train_median_min": None,
        "time_to_train_n": None,
    }
    if not results or not Path(results).is_file():
        return out
    try:
        df = pl.read_parquet(results)
    except Exception:
        return out
    out["result_rows"] = df.height
    if "status" in df.columns:
        out["n_success"] = int((df["status"] == "success").sum())
    if "time_to_train_min" in df.columns and df["time_to_train_min"].dtype.is_numeric():
        ttt = df["time_to_train_min"].drop_nulls().drop_nans()
        out["time_to_train_n"] = ttt.len()
        out["time_to_train_median_min"] = float(ttt.median()) if ttt.len() else None
    return out


def _param_column(values: list):
    kinds = {type(v) for v in values if v is not None}
    if len(kinds) == 1 and kinds <= {bool, int, float, str}:
        return values
    if kinds <= {int, float}:
        return [None if v is None else float(v) for v in values]
    return [None if v is None else json.dumps(v, sort_keys=True) for v in values]


def _summary_frame(rows: list[dict]) -> pl.DataFrame:
    schema = {
        "run": pl.String,
        "name": pl.String,
        "parameters": pl.String,
        "status": pl.String,
        "duration_s": pl.Float64,
        "notebook": pl.String,
        "results": pl.String,
        "error": pl.String,
        "result_rows": pl.Int64,
        "n_success": pl.Int64,
        "time_to_train_median_min": pl.Float64,
        "time_to_train_n": pl.Int64,
    }
    base = pl.DataFrame(
        [
            {
                **{k: r.get(k) for k in schema if k != "parameters"},
                "parameters": json.dumps(r["parameters"], sort_keys=True),
            }
            for r in rows
        ],
        schema=schema,
    )
    names: list[str] = []
    for r in rows:
        names += [k for k in r["parameters"] if k not in names]
    cols = []
    for key in names:
        col = key if key not in schema else f"param_{key}"
        values = _param_column([r["parameters"].get(key) for r in rows])
        cols.append(pl.Series(col, values, strict=False))
    frame = base.with_columns(cols) if cols else base
    return frame.select(
        "run",
        "name",
        "parameters",
        *[c.name for c in cols],
        *[c for c in schema if c not in {"run", "name", "parameters"}],
    )


def _write_summary(grid: Grid, frame: pl.DataFrame) -> None:
    write_parquet_atomic(frame, grid.output / "summary.parquet")
    write_text_atomic(frame.write_csv(), grid.output / "summary.csv")


# --------------------------------------------------------------------------------------------------
# the batch


def run_batch(
    grid: Grid | str | Path,
    workers: int | None = None,
    force: bool = False,
    progress: bool = True,
    executor: str | dict | None = None,
) -> pl.DataFrame:
    """Execute every run of ``grid`` not done yet, then write and return the summary.

    The grid is checked first (:func:`validate_grid`): nothing runs if any run names a parameter the
    notebook does not declare. Runs are then executed by the grid's executor, a failing run is
    recorded and the others go on; ``<output>/summary.parquet`` and ``summary.csv`` are written
    (atomically) at the end.

    Args:
        grid: a :class:`Grid` or the path of a grid YAML file.
        workers: worker processes (local) or concurrent array tasks (Slurm); default: the grid's
            ``workers``, else min(4, CPUs).
        force: run again runs already done.
        progress: tqdm progress bar over runs (on stderr).
        executor: override the grid's executor: ``"local"``, ``"slurm"``, ``"submitit_local"``, or a
            dict like the grid's ``executor`` key.

    Returns:
        polars frame, one row per run in grid order:
        run (String, the slug), name (String), parameters (String, JSON of the parameters as written
        in the grid, keys sorted), one column per parameter named after it (``param_<name>`` if that
        clashes with a fixed column; its values' type when all share one scalar type, else JSON
        String), status (String: success, failed, or skipped = done in an earlier batch and reused),
        duration_s (Float64, seconds of notebook execution; for skipped runs, that of the earlier
        run), notebook (String, the executed notebook, ``.failed.ipynb`` for a failed cell, null if
        none), results (String, the run's results Parquet, null if none), error (String, null on
        success: ``ename: evalue`` first line of the failing cell, or the exception), and key numbers
        read from the results Parquet (null when it is missing or lacks the column): result_rows
        (Int64, rows), n_success (Int64, rows with ``status == "success"``),
        time_to_train_median_min (Float64, median of ``time_to_train_min``; for the MLPerf notebook,
        the median run of the folder, which is the MLPerf score for 3-run gpt3 folders),
        time_to_train_n (Int64, non-null ``time_to_train_min`` values).

    Raises:
        GridError: the grid is invalid (raised before anything runs), or the Slurm executor is asked
            for without submitit installed.
        FileNotFoundError: the grid file does not exist.
    """
    if not isinstance(grid, Grid):
        grid = load_grid(grid)
    declared = validate_grid(grid)
    exec_spec = dict(grid.executor)
    if executor is not None:
        exec_spec = {"kind": executor} if isinstance(executor, str) else dict(executor)
        if exec_spec.get("kind") not in EXECUTOR_KINDS:
            raise GridError(
                f"executor kind {exec_spec.get('kind')!r} unknown; one of {', '.join(EXECUTOR_KINDS)}"
            )
    kind = exec_spec.get("kind", "local")
    n_workers = workers or grid.workers or min(4, os.cpu_count() or 1)
    has_results = RESULTS_PARAMETER in declared
    grid.runs_dir.mkdir(parents=True, exist_ok=True)

    records: dict[str, dict] = {}
    tasks = []
    for run in grid.runs:
        done = None if force else _done_record(grid, run, has_results)
        if done is not None:
            results = grid.runs_dir / f"{run.slug}.parquet"
            records[run.slug] = {
                **done,
                "status": "skipped",
                "notebook": str(grid.runs_dir / f"{run.slug}.ipynb"),
                "results": str(results) if has_results else None,
            }
            continue
        tasks.append(
            {
                "slug": run.slug,
                "name": run.name,
                "parameters": run.parameters,
                "notebook": str(grid.notebook),
                "runs_dir": str(grid.runs_dir),
                "base": str(grid.base),
                "declared": sorted(declared),
            }
        )

    from tqdm.auto import tqdm

    bar = tqdm(
        total=len(grid.runs),
        initial=len(records),
        desc=f"batch {grid.name}",
        unit="run",
        disable=not progress,
        file=sys.stderr,
    )

    def on_done(rec: dict) -> None:
        records[rec["run"]] = rec
        if rec["status"] == "failed" and progress:
            bar.write(f"failed: {rec['run']}: {rec['error']}", file=sys.stderr)

    def summarize() -> pl.DataFrame:
        rows = []
        for run in grid.runs:
            rec = records.get(run.slug)
            if rec is None:  # interrupted before this run finished
                rec = {
                    "run": run.slug,
                    "name": run.name,
                    "status": "interrupted",
                    "error": "batch interrupted before this run finished",
                }
            rows.append({**rec, **_key_numbers(rec.get("results")), "parameters": run.parameters})
        frame = _summary_frame(rows)
        _write_summary(grid, frame)
        return frame

    try:
        if tasks:
            if kind == "local":
                _run_local(tasks, min(n_workers, len(tasks)), bar, on_done)
            else:
                _run_submitit(grid, tasks, exec_spec, n_workers, bar, on_done)
    except KeyboardInterrupt:
        bar.close()
        summarize()  # what finished is recorded; a second run resumes from the markers
        raise
    finally:
        bar.close()
    return summarize()


# --------------------------------------------------------------------------------------------------
# command line


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def add_batch_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``batch`` arguments (GRID, --workers, --force, --executor, --no-progress, --debug)."""
    parser.add_argument("grid", help="grid YAML file (paths in it are relative to its folder)")
    parser.add_argument(
        "--workers",
        type=_positive_int,
        default=None,
        help="parallel runs (default: the grid's, else 4)",
    )
    parser.add_argument("--force", action="store_true", help="run again runs already done")
    parser.add_argument(
        "--executor",
        choices=EXECUTOR_KINDS,
        default=None,
        help="override the grid's executor (local worker processes, or Slurm jobs via submitit)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    # SUPPRESS: when absent, a top-level --debug (trainperf --debug batch ...) is not overwritten
    parser.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show the full traceback on errors",
    )
    return parser


def run_from_args(args: argparse.Namespace, log=print) -> int:
    """Run the batch the parsed ``args`` describe; return the exit status (0: no run failed, 1).

    Raises:
        GridError, FileNotFoundError: as :func:`load_grid` / :func:`run_batch`.
    """
    grid = load_grid(args.grid)
    progress = not getattr(args, "no_progress", False) and sys.stderr.isatty()
    frame = run_batch(
        grid,
        workers=args.workers,
        force=args.force,
        progress=progress,
        executor=getattr(args, "executor", None),
    )
    counts = {s: int((frame["status"] == s).sum()) for s in STATUSES}
    for rec in frame.filter(pl.col("status") == "failed").iter_rows(named=True):
        log(f"failed: {rec['run']}: {rec['error']}")
    log(
        f"batch {grid.name}: {counts['success']} succeeded, {counts['skipped']} skipped (done before), "
        f"{counts['failed']} failed; summary {grid.output / 'summary.parquet'}"
    )
    return 1 if counts["failed"] else 0


def main(argv: list[str] | None = None) -> int:
    """``trainperf batch GRID.yaml [--workers N] [--force] [--debug]`` as a standalone command.

    Returns 0 when every run succeeded or was skipped, 1 when a run failed or the grid is invalid
    (one line ``trainperf: error: ...``; ``--debug`` or TRAINPERF_DEBUG=1 prints the traceback), 130 on
    Ctrl-C.
    """
    parser = argparse.ArgumentParser(
        prog="trainperf batch", description="execute a notebook over a grid of parameter sets"
    )
    args = add_batch_arguments(parser).parse_args(argv)
    debug = getattr(args, "debug", False) or os.environ.get("TRAINPERF_DEBUG") == "1"
    try:
        return run_from_args(args)
    except KeyboardInterrupt:
        print("trainperf: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        from trainperf.errors import print_error

        return print_error(exc, debug)


if __name__ == "__main__":
    sys.exit(main())


def collect_results(
    summary_path: str | Path, statuses: tuple[str, ...] = ("success", "skipped")
) -> pl.DataFrame:
    """Concatenate the per-run result tables a batch collected, as listed in its summary.

    Args:
        summary_path: ``<output>/summary.parquet`` written by :func:`run_batch`.
        statuses: which runs to take (skipped runs are earlier successes whose outputs were reused).

    Returns:
        The runs' Parquet tables stacked (``how="diagonal_relaxed"``: columns missing in one table are
        null there), with a leading ``run`` column (String, the run's slug).

    Raises:
        FileNotFoundError: the summary or a listed results file is missing.
        ValueError: no run with one of ``statuses`` has a results table.
    """
    summary = pl.read_parquet(summary_path)
    ok = summary.filter(pl.col("status").is_in(list(statuses)) & pl.col("results").is_not_null())
    if ok.height == 0:
        raise ValueError(
            f"{summary_path}: no run with status {', '.join(statuses)} has a results table"
        )
    frames = [
        pl.read_parquet(p).with_columns(pl.lit(run).alias("run"))
        for run, p in ok.select("run", "results").iter_rows()
    ]
    out = pl.concat(frames, how="diagonal_relaxed")
    return out.select("run", pl.exclude("run"))
