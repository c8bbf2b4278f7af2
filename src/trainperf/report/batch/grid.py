"""Batch grids: the YAML file, its validation, run slugs, and discovery of MLPerf results folders."""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from trainperf.errors import ConfigError
from trainperf.mlperf import find_result_files

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


def is_path_param(key: str) -> bool:
    return key.endswith("_path") or key.endswith("_dir")


def resolve_path_value(value, base: Path):
    if isinstance(value, str) and value and not os.path.isabs(value):
        return str((base / value).resolve())
    return value


def _notebook_parameters(notebook: Path) -> dict:
    # deferred: papermill costs 2-4 s at import (-X importtime); only a grid's check needs it
    import papermill as pm  # noqa: PLC0415

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
