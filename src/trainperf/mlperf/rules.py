"""The MLPerf Training rules, read from the ``mlperf-logging`` package (github.com/mlcommons/logging).

Nothing here is typed in by hand: convergence targets, the progress key of ``eval_accuracy`` and the
hyperparameters the rules fix come from the compliance checker's rules YAML
(``mlperf_logging/compliance_checker/training_<round>.0/closed_<benchmark>.yaml``); the number of runs
from ``mlperf_logging.benchmark_meta``; the olympic mean and the ``scaling.json`` factor are the
result summarizer's own functions.

Why the summarizer's functions are taken from its source rather than by ``import``: importing
``mlperf_logging.result_summarizer.result_summarizer`` pulls in pandas and (through the RCP checker)
scipy, +2.1 s and +185 MB measured, for two functions of a few lines that use neither.
:func:`summarizer_function` compiles just those functions from the installed package's source file,
so the rule stays the package's code; when the source cannot be read that way it imports the module.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import math
import os
import re
from collections.abc import Callable
from functools import cache
from importlib.resources import files
from pathlib import Path

import polars as pl
import yaml
from mlperf_logging import benchmark_meta

from trainperf.tables import package_table

__all__ = [
    "convergence_target",
    "hyperparameter_rules",
    "init_allowance_min",
    "olympic_average",
    "progress_key",
    "required_runs",
    "ruleset_yaml",
    "scaling_factor",
    "summarizer_function",
]

_TARGET_RE = re.compile(r"v\['value'\]\s*(<=|>=|<|>)\s*([0-9.eE+-]+)")
_PROGRESS_RE = re.compile(r"""['"](\w+)['"]\s+in\s+v\[['"]metadata['"]\]""")
_SUMMARIZER = "mlperf_logging.result_summarizer.result_summarizer"


def _rulesets() -> list[str]:
    base = files("mlperf_logging") / "compliance_checker"
    return sorted(
        (p.name for p in base.iterdir() if p.name.startswith("training_") and p.is_dir()),
        key=lambda n: tuple(int(x) for x in re.findall(r"\d+", n)),
        reverse=True,
    )


@cache
def ruleset_yaml(benchmark: str, round_: str | None = None) -> tuple[str, str] | None:
    """The closed-division rules YAML of a benchmark: ``(ruleset folder, YAML text)``.

    Args:
        benchmark: MLPerf benchmark name (``gpt3``, ``llama2_70b_lora``, ``llama31_405b``, ...).
        round_: ``v4.1``-style round; when None or unknown to the package (or the round has no rules
            for the benchmark), the newest ruleset that has the benchmark is used.

    Returns:
        e.g. ``("training_4.1.0", "<yaml text>")``, or None when no training ruleset has the benchmark.
    """
    if not isinstance(benchmark, str) or not re.fullmatch(r"[A-Za-z0-9_]+", benchmark):
        return None
    base = files("mlperf_logging") / "compliance_checker"
    rulesets = _rulesets()
    if round_:
        wanted = f"training_{str(round_).lstrip('v')}.0"
        if wanted in rulesets:
            rulesets.remove(wanted)
            rulesets.insert(0, wanted)
    for rs in rulesets:
        yml = base / rs / f"closed_{benchmark}.yaml"
        if yml.is_file():
            return rs, yml.read_text(encoding="utf-8")
    return None


@cache
def _rule_entries(benchmark: str, round_: str | None) -> tuple[str, tuple[dict, ...]] | None:

    found = ruleset_yaml(benchmark, round_)
    if found is None:
        return None
    entries = yaml.safe_load(found[1]) or []
    keys = tuple(
        e["KEY"] for e in entries if isinstance(e, dict) and isinstance(e.get("KEY"), dict)
    )
    return found[0], keys


@cache
def convergence_target(benchmark: str, round_: str | None = None) -> tuple[float, str] | None:
    """The convergence target of a benchmark from the mlperf-logging compliance ruleset.

    Read from the ``ATLEAST_ONE_CHECK`` of the ``eval_accuracy`` key of the benchmark's rules YAML
    (:func:`ruleset_yaml`; e.g. gpt3 v4.1: ``v['value'] <= 2.69``, log perplexity; llama2_70b_lora
    v4.1: ``<= 0.925``, eval loss).

    Returns:
        ``(target, comparison)`` with comparison one of ``<=``, ``>=``, ``<``, ``>``, or None when no
        ruleset defines a target for the benchmark.
    """
    found = ruleset_yaml(benchmark, round_)
    if found is None:
        return None
    m = re.search(r"NAME:\s*eval_accuracy.*?ATLEAST_ONE_CHECK:\s*\"([^\"]+)\"", found[1], re.S)
    if m:
        t = _TARGET_RE.search(m.group(1))
        if t:
            return float(t.group(2)), t.group(1)
    return None


@cache
def _progress_units() -> dict[tuple[str, str], str]:

    return {
        (r["benchmark"], r["metadata_key"]): r["unit"] for r in package_table("mlperf_progress")
    }


@cache
def progress_key(benchmark: str | None, round_: str | None = None) -> tuple[str, str] | None:
    """The ``eval_accuracy`` metadata key that counts training progress, and its unit.

    The key is the one the rules YAML requires in every ``eval_accuracy`` (``CHECK: "'epoch_num' in
    v['metadata']"`` for gpt3, ``'samples_count'`` for llama2_70b_lora and llama31_*); the unit comes
    from ``trainperf/tables/mlperf_progress.csv`` (``samples_count`` counts samples; ``epoch_num``
    epochs, except gpt3 where it counts tokens by the training rules).

    Returns:
        ``(metadata key, unit)``, e.g. ``("epoch_num", "tokens")``; None when the rules name no key.
    """
    if not benchmark:
        return None
    found = _rule_entries(benchmark, round_)
    if found is None:
        return None
    for key in found[1]:
        if key.get("NAME") != "eval_accuracy":
            continue
        checks = key.get("CHECK") or []
        for check in [checks] if isinstance(checks, str) else checks:
            m = _PROGRESS_RE.search(str(check))
            if m:
                units = _progress_units()
                unit = units.get((benchmark, m.group(1))) or units.get(("*", m.group(1)), "count")
                return m.group(1), unit
    return None


_NOT_HYPERPARAMETERS = {
    "eval_accuracy",
    "aggregated_eval_accuracy",
    "block_start",
    "block_stop",
    "epoch_start",
    "epoch_stop",
    "run_start",
    "run_stop",
}
_FIXED_RE = re.compile(r"^\s*v\['value'\]\s*==\s*(.+?)\s*$")


def _fixed_values(check: str) -> list | None:
    """The values a CHECK allows when it is ``v['value'] == X`` (or several joined by ``or``)."""
    values = []
    for part in re.split(r"\s+or\s+", check.strip()):
        m = _FIXED_RE.match(part)
        if not m:
            return None
        try:
            values.append(ast.literal_eval(m.group(1)))
        except (ValueError, SyntaxError):
            return None
    return values


@cache
def hyperparameter_rules(benchmark: str, round_: str | None = None) -> pl.DataFrame:
    """What the MLPerf rules say about each logged hyperparameter of a benchmark (closed division).

    Read from the rules YAML (:func:`ruleset_yaml`): every key except the timing keys and
    ``eval_accuracy`` (whose target :func:`convergence_target` gives).

    Returns:
        polars frame, one row per key in YAML order: ruleset (String, e.g. ``training_4.1.0``), key
        (String), required (String, the YAML ``REQ``: ``EXACTLY_ONE``, ``AT_LEAST_ONE``, ...), check
        (String, the YAML ``CHECK`` expression, "" when none), fixed (Boolean: the check pins the value,
        ``v['value'] == X`` or a list of alternatives), allowed (String: the allowed values as JSON
        when fixed, else null). Empty when no ruleset has the benchmark.
    """
    schema = {
        "ruleset": pl.String,
        "key": pl.String,
        "required": pl.String,
        "check": pl.String,
        "fixed": pl.Boolean,
        "allowed": pl.String,
    }
    found = _rule_entries(benchmark, round_)
    if found is None:
        return pl.DataFrame(schema=schema)
    rows = []
    for key in found[1]:
        name = key.get("NAME")
        if (
            not isinstance(name, str)
            or name in _NOT_HYPERPARAMETERS
            or name.startswith("submission_")
        ):
            continue
        check = key.get("CHECK") or ""
        check = " and ".join(map(str, check)) if isinstance(check, list) else str(check).strip()
        values = _fixed_values(check) if check else None
        rows.append(
            {
                "ruleset": found[0],
                "key": name,
                "required": str(key.get("REQ", "")),
                "check": check,
                "fixed": values is not None,
                "allowed": json.dumps(values) if values is not None else None,
            }
        )
    return pl.DataFrame(rows, schema=schema)


_COMPILE_RE = re.compile(
    r"compile_time_mins'\]\s*=\s*(\d+)\s+if\s+v\['value'\]\s*==\s*'open'\s+else\s+(\d+)"
)


@cache
def init_allowance_min(round_: str | None = None, division: str = "closed") -> int | None:
    """Minutes of initialisation allowed before ``run_start`` (from the first ``init_start`` to
    ``init_stop``), as the ruleset's compliance checker enforces it.

    Read from ``compliance_checker/training_<round>.0/common.yaml`` of the installed
    ``mlperf-logging`` (``s['compile_time_mins'] = 240 if v['value'] == 'open' else 30``: 30 min
    closed, 4 h open in every training ruleset 3.1.0-6.1.0; training_rules.adoc, "Run result").

    Args:
        round_: ``v6.0``-style round; None or unknown: the newest ruleset.
        division: ``closed`` or ``open``.

    Returns:
        Minutes, or None when the ruleset states no allowance.
    """
    base = files("mlperf_logging") / "compliance_checker"
    rulesets = _rulesets()
    wanted = f"training_{str(round_).lstrip('v')}.0" if round_ else None
    for rs in ([wanted] if wanted in rulesets else []) + rulesets:
        common = base / rs / "common.yaml"
        if common.is_file():
            m = _COMPILE_RE.search(common.read_text(encoding="utf-8"))
            if m:
                return int(m.group(1) if division == "open" else m.group(2))
    return None


def required_runs() -> dict[str, int]:
    """Result files a training submission needs per benchmark (``mlperf_logging.benchmark_meta``)."""

    return benchmark_meta.get_result_file_counts("training")


@cache
def summarizer_function(name: str) -> Callable:
    """A top-level function of mlperf-logging's result summarizer, without importing that module.

    The module's source (``mlperf_logging/result_summarizer/result_summarizer.py`` of the installed
    package) is parsed and the small helpers the scorers use (``_compute_olympic_average``,
    ``_get_scaling_factor``, ``_read_json_file``, and the power score's ``_index_olympic_average``)
    are compiled together with ``os`` and ``json``, the only names they use. If the source cannot
    be read or lacks ``name``, the module is imported (issue 36: importing it for the power score
    kept pandas and scipy, ~190 MB, in every record-build worker from its first power folder on).

    Raises:
        AttributeError: the summarizer has no function ``name``.
    """
    wanted = {
        "_compute_olympic_average",
        "_get_scaling_factor",
        "_read_json_file",
        "_index_olympic_average",
    }
    if name in wanted:
        try:
            spec = importlib.util.find_spec(_SUMMARIZER)
            origin = Path(spec.origin) if spec and spec.origin else None
            tree = ast.parse(origin.read_text(encoding="utf-8")) if origin else None
        except (ImportError, OSError, SyntaxError, ValueError):
            tree = None
        if tree is not None:
            nodes = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in wanted]
            if name in {n.name for n in nodes}:
                namespace: dict = {"os": os, "json": json, "__name__": _SUMMARIZER}
                module = ast.Module(body=nodes, type_ignores=[])
                exec(compile(module, str(origin), "exec"), namespace)  # noqa: S102 - the package's own code
                return namespace[name]
    return getattr(importlib.import_module(_SUMMARIZER), name)


def olympic_average(times: list[float], dropped: int, max_dropped: int) -> float | None:
    """The olympic mean of the MLPerf Training rules (the summarizer's ``_compute_olympic_average``).

    Args:
        times: times to train of the successful runs (minutes; sorted here).
        dropped: runs that did not succeed (each counts as one of the dropped slowest).
        max_dropped: runs dropped at each end (1; 4 for unet3d).

    Returns:
        The mean of the runs left, or None when none is left.
    """
    return summarizer_function("_compute_olympic_average")(sorted(times), dropped, max_dropped)


#: The range a ``scaling.json`` factor must fall in (exclusive): product choice. The review committee
#: scales a score by a small factor (training_policies results_guidelines: "scaling.json" added during
#: review); a factor of 0, a negative one or one of 1000 and more is a damaged file, not a ruling.
SCALING_RANGE = (0.0, 1000.0)


def scaling_factor(folder: str | Path) -> float:
    """The ``scaling.json`` factor of a benchmark folder (1.0 without one).

    The rule is the summarizer's (``_get_scaling_factor``: the file's ``scaling_factor`` multiplies the
    score), but the file is read here with :mod:`json` rather than by the summarizer's
    ``_read_json_file``, whose failure on a truncated file is an internal ``TypeError`` rather than the
    reason; every bad case gives one clear reason.

    Raises:
        ValueError: ``scaling.json`` exists but is not a file, not UTF-8 JSON, not an object, has no
            ``scaling_factor``, one that is not a number (a bool or a string such as ``"1.5"``), or one
            outside :data:`SCALING_RANGE`. The message starts with the file's path.
    """
    path = Path(folder) / "scaling.json"
    if not path.exists() and not path.is_symlink():
        return 1.0
    if not path.is_file():
        raise ValueError(f"{path}: not a readable file")
    try:
        doc = json.loads(path.read_bytes().decode("utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from exc
    except (OSError, UnicodeDecodeError, RecursionError, ValueError) as exc:
        raise ValueError(f"{path}: unreadable ({type(exc).__name__}: {exc})") from exc
    if not isinstance(doc, dict) or "scaling_factor" not in doc:
        raise ValueError(f"{path}: no scaling_factor (not a JSON object with that key)")
    factor = doc["scaling_factor"]
    if isinstance(factor, bool) or not isinstance(factor, (int, float)):
        raise ValueError(f"{path}: scaling_factor {factor!r} is not a number")
    factor = float(factor)
    lo, hi = SCALING_RANGE
    if not (math.isfinite(factor) and lo < factor < hi):
        raise ValueError(f"{path}: scaling_factor {factor:g} is outside ({lo:g}, {hi:g})")
    return factor
