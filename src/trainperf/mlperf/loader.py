"""Results folders in the MLCommons layout into runs, events, scores and a data-quality frame.

Layout expected (any depth under the path given to :func:`load_results`)::

    <round>/<submitter>/results/<system>/<benchmark>/result_<i>.txt
    <round>/<submitter>/systems/<system>.json

``<round>`` is a folder named like ``v4.1`` or ``training_results_v4.1``; it selects the compliance
ruleset (``4.1.0``) whose rules give the convergence target and the progress key.

Every file is loaded on its own: a file that cannot be read becomes a ``parse_error`` row with its
message (and a ``parse_error`` data-quality row); every other file still loads, scores and reports.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
from tqdm.std import tqdm  # not .auto: in a kernel without ipywidgets it warns into the book

from trainperf.errors import InputError
from trainperf.mlperf.checks import (
    FileChecks,
    MLPerfLogWarning,
    as_count,
    check_results_folder,
    display_path,
    limits,
    read_result_bytes,
)
from trainperf.mlperf.parse import EVENT_SCHEMA, Memo, ParsedLog, flush, read_log
from trainperf.mlperf.progress import apply_train_samples
from trainperf.mlperf.readonce import held_bytes
from trainperf.mlperf.rules import convergence_target, progress_key
from trainperf.mlperf.scores import score_runs
from trainperf.mlperf.timeline import (
    clock_stepped_back,
    duplicate_files,
    mark_duplicate,
    unknown_stop_status,
)
from trainperf.quality import QualityLog, empty_quality

__all__ = [
    "RUN_SCHEMA",
    "RUN_STATUSES",
    "Results",
    "find_result_files",
    "load_results",
    "quality_summary",
]

#: Possible values of ``runs.status``.
#:   success     run_stop logged with metadata status "success"
#:   aborted     run_stop logged with any other status (did not converge, crashed and caught)
#:   incomplete  run_start logged but no run_stop (log truncated, job killed)
#:   relaunched  a second run_start after the first attempt had trained or stopped (the file holds
#:               two attempts; their times are never added; the run does not count for scoring)
#:   damaged     run_start and run_stop logged, but a value needed for the time to train or the
#:               outcome is damaged (a time excluded, rank duplicates without a consensus, the
#:               run_stop metadata unreadable, two different values logged for the final
#:               evaluation; see ``Results.quality``): time_to_train_min only
#:               where its times are usable; the run counts as failed for scoring
#:   parse_error the file could not be read or holds no usable run_start
#:   duplicate   a byte copy of another result file of its folder: not a distinct run, left out
#:               of the score (:mod:`trainperf.mlperf.timeline`)
RUN_STATUSES = (
    "success", "aborted", "incomplete", "relaunched", "damaged", "parse_error", "duplicate"
)  # fmt: skip

_ROUND_RE = re.compile(r"^(?:training_results_)?v?(\d+\.\d+)$")

RUN_SCHEMA = {
    "round": pl.String,
    "submitter": pl.String,
    "system": pl.String,
    "benchmark": pl.String,
    "result_file": pl.String,
    "n_nodes": pl.Int64,
    "n_accelerators": pl.Int64,
    "accelerator_model": pl.String,
    "framework": pl.String,
    "global_batch_size": pl.Int64,
    "max_sequence_length": pl.Int64,
    "seed": pl.Int64,
    "run_start": pl.Float64,
    "run_stop": pl.Float64,
    "time_to_train_min": pl.Float64,
    "status": pl.String,
    "samples_to_converge": pl.Int64,
    "tokens_to_converge": pl.Int64,
    "n_evals": pl.Int64,
    "eval_value": pl.Float64,
    "eval_target": pl.Float64,
    "eval_target_met": pl.Boolean,
    "n_warnings": pl.Int64,
    "quality": pl.String,
}
"""Columns of ``Results.runs`` before run_start/run_stop become Datetime (see :func:`load_results`)."""


@dataclass
class Results:
    """What :func:`load_results` returns.

    Attributes:
        runs: one row per result file (see :func:`load_results` for the columns).
        events: every MLLOG event, long form (see :func:`~trainperf.mlperf.parse.parse_log`).
        scores: one row per (round, submitter, system, benchmark) (see :func:`score_runs`).
        warnings: every warning raised while loading, as text ("file:line: what (check: action)").
        quality: data-quality rows of all files (:data:`trainperf.quality.QUALITY_SCHEMA`), one per
            (file, check that fired); :func:`quality_summary` gives one row per file.
    """

    runs: pl.DataFrame
    events: pl.DataFrame
    scores: pl.DataFrame
    warnings: list[str] = field(default_factory=list)
    quality: pl.DataFrame = field(default_factory=empty_quality)


def find_result_files(path: str | Path) -> list[Path]:
    """Return every ``result_*.txt`` and ``result_*.txt.gz`` below ``path`` (any depth), sorted;
    ``path`` may be one file. A ``.gz`` next to its uncompressed twin is skipped with a warning.

    Entries that are not readable files (a folder of that name, a dangling link) are listed too, so
    that :func:`load_results` reports them as ``parse_error`` rows.

    Raises:
        FileNotFoundError: ``path`` does not exist or holds no result file.
        trainperf.errors.InputError: ``path`` is a file system root or a system folder
            (:func:`~trainperf.mlperf.checks.check_results_folder`), refused before any walk.
    """
    path = Path(path)
    if path.is_file():
        return [path]
    check_results_folder(path)
    if not path.exists():
        raise FileNotFoundError(
            f"{path}: no such file or folder (expected an MLPerf results folder or a result_*.txt)"
        )
    # every entry named like a result file: one that cannot be read (a folder, a dangling link)
    # becomes a parse_error row rather than vanishing. Compressed logs (result_*.txt.gz) are read
    # too; one next to its uncompressed twin is the same run, skipped with a warning
    plain = sorted(path.rglob("result_*.txt"))
    names = set(plain)
    found = list(plain)
    for gz in sorted(path.rglob("result_*.txt.gz")):
        twin = gz.with_name(gz.name[:-3])
        if twin in names:
            warnings.warn(
                MLPerfLogWarning(
                    f"{display_path(gz)}: the compressed copy of {twin.name}, which is read; "
                    "the .gz is skipped (one run, not two)",
                    display_path(gz),
                    None,
                    "compressed_twin",
                ),
                stacklevel=2,
            )
            continue
        found.append(gz)
    if not found:
        raise FileNotFoundError(
            f"{path}: no result_*.txt files (nor result_*.txt.gz) found at any depth (expected "
            "<submitter>/results/<system>/<benchmark>/result_<i>.txt)"
        )
    return sorted(found)


def layout_from_path(path: Path) -> dict:
    parts = path.parts
    out = {
        "round": None,
        "submitter": None,
        "system": None,
        "benchmark": None,
        "submitter_dir": None,
    }
    if len(parts) >= 5 and parts[-4] == "results":
        out["benchmark"] = parts[-2]
        out["system"] = parts[-3]
        out["submitter"] = parts[-5]
        out["submitter_dir"] = Path(*parts[:-4])
        for comp in reversed(parts[:-5]):
            m = _ROUND_RE.match(comp)
            if m:
                out["round"] = f"v{m.group(1)}"
                break
    else:  # a flat folder of result_*.txt: the folder may be named after the benchmark
        out["benchmark"] = path.parent.name
        out["flat"] = True
        for comp in reversed(parts[:-1]):
            m = _ROUND_RE.match(comp)
            if m:
                out["round"] = f"v{m.group(1)}"
                break
    return out


def _read_system_json(js: Path, cache: dict, checks: FileChecks) -> dict | None:
    """``systems/<system>.json`` as a dict (cached per load), or None (with the check recorded)."""
    if js not in cache:
        try:
            desc = json.loads(js.read_bytes().decode("utf-8"))
            cache[js] = desc if isinstance(desc, dict) else ("not a JSON object", None)
        except json.JSONDecodeError as exc:
            cache[js] = (f"not valid JSON ({exc.msg})", exc.lineno)
        except (UnicodeDecodeError, RecursionError, ValueError, OSError) as exc:
            cache[js] = (f"unreadable ({type(exc).__name__}: {exc})", None)
    desc = cache[js]
    if isinstance(desc, tuple):
        where = f"{js}:{desc[1]}" if desc[1] else str(js)
        checks.add("bad_system_description", "excluded", f"system description {where} is {desc[0]}")
        return None
    return desc


def _system_desc(layout: dict, parsed: ParsedLog, cache: dict, checks: FileChecks) -> dict:
    if layout["submitter_dir"] is not None:
        js = layout["submitter_dir"] / "systems" / f"{layout['system']}.json"
        if js.is_file():
            desc = _read_system_json(js, cache, checks)
            return desc if desc is not None else {}
    # Fallback: some logs embed the system description as ':::SYSJSON {...}' lines (NVIDIA v4.0).
    if parsed.sysjson is not None:
        try:
            desc = json.loads(parsed.sysjson)
            if isinstance(desc, dict):
                return desc
        except (ValueError, RecursionError):
            pass
        checks.add("bad_system_description", "excluded", ":::SYSJSON line is not a JSON object")
        return {}
    checks.add(
        "no_system_description",
        "flagged",
        "no systems/<system>.json and no :::SYSJSON line; n_accelerators unknown",
    )
    return {}


def _count(value, what: str, checks: FileChecks, lo: int = 0, line: int | None = None):
    """A logged count (batch size, nodes, progress) as int, or None with a ``bad_value`` check."""
    if value is None:
        return None
    n = as_count(value, lo)
    if n is None:
        checks.add(
            "bad_value",
            "excluded",
            f"{what} {str(value)[:40]!r} is not an integer count >= {lo}; excluded",
            line,
        )
    return n


def _text(value) -> str | None:
    return value if isinstance(value, str) else None


def _first(parsed: ParsedLog, key: str, what: str, checks: FileChecks, lo: int = 0):
    kept = parsed.kept.get(key)
    if not kept:
        return None
    row, value, _ = kept[0]
    return _count(value, what, checks, lo, parsed.cols["line"][row])


def _base_row(path: Path, parsed: ParsedLog | None, sys_cache: dict, checks: FileChecks) -> dict:
    """Layout, system description and logged sizes of one file (status parse_error until timed)."""
    layout = layout_from_path(path)
    desc = {}
    if parsed is not None and (parsed.n_events or layout["submitter_dir"]):
        desc = _system_desc(layout, parsed, sys_cache, checks)
    nodes = _count(desc.get("number_of_nodes"), "number_of_nodes", checks, lo=1)
    per_node = _count(desc.get("accelerators_per_node"), "accelerators_per_node", checks)
    bench_log = None
    if parsed is not None and parsed.kept.get("submission_benchmark"):
        bench_log = _text(parsed.kept["submission_benchmark"][0][1])
    benchmark = bench_log or layout["benchmark"]
    # a flat folder's name is not a claim about the benchmark: only the MLCommons layout's is
    if (
        bench_log
        and layout["benchmark"]
        and bench_log != layout["benchmark"]
        and not layout.get("flat")
    ):
        checks.add(
            "benchmark_mismatch",
            "flagged",
            f"log says benchmark {bench_log!r} but folder says {layout['benchmark']!r}; using the log",
        )
    n_acc = nodes * max(per_node, 1) if nodes is not None and per_node is not None else None
    row = {
        "round": layout["round"],
        "submitter": _text(desc.get("submitter")) or layout["submitter"],
        "system": layout["system"],
        "benchmark": benchmark,
        "result_file": str(path),
        "n_nodes": nodes,
        "n_accelerators": n_acc if n_acc is not None and n_acc <= 2**63 - 1 else None,
        "accelerator_model": _text(desc.get("accelerator_model_name")),
        "framework": _text(desc.get("framework")),
        "global_batch_size": None,
        "max_sequence_length": None,
        "seed": None,
        "run_start": None,
        "run_stop": None,
        "time_to_train_min": None,
        "status": "parse_error",
        "samples_to_converge": None,
        "tokens_to_converge": None,
        "n_evals": 0,
        "eval_value": None,
        "eval_target": None,
        "eval_target_met": None,
        "n_warnings": 0,
        "quality": "",
    }
    if parsed is not None:
        row["global_batch_size"] = _first(
            parsed, "global_batch_size", "global_batch_size", checks, 1
        )
        row["max_sequence_length"] = _first(
            parsed, "max_sequence_length", "max_sequence_length", checks, 1
        )
        row["seed"] = _first(parsed, "seed", "seed", checks)
    return row


def _consensus(
    name: str, rows: list[int], parsed: ParsedLog, checks: FileChecks
) -> list[int] | None:
    """The rows of rank duplicates whose times agree (more than half within the tolerance).

    Rows whose time was excluded are ignored; the others' median is the reference, and a time
    further than ``duplicate_tolerance_ms`` (60 s) from it is an outlier, excluded with a check.

    Returns:
        the agreeing rows, or None when no time is left or no majority agrees (check recorded).
    """
    times, lines = parsed.cols["time_ms"], parsed.cols["line"]
    valid = [r for r in rows if times[r] is not None]
    if not valid:
        checks.add(
            "time_unusable",
            "flagged",
            f"every {name} time is excluded as damaged; no time to train",
            lines[rows[0]],
        )
        return None
    tol = limits()["duplicate_tolerance_ms"]
    med = statistics.median(times[r] for r in valid)
    agree = [r for r in valid if abs(times[r] - med) <= tol]
    if 2 * len(agree) <= len(valid):
        checks.add(
            "duplicate_time_disagrees",
            "flagged",
            f"{len(valid)} {name} events disagree by more than {tol / 1000:.0f} s and no majority "
            "agrees; no time to train",
            lines[valid[0]],
        )
        return None
    agreeing = set(agree)  # a list's `in` made this quadratic in the rank duplicates
    for r in valid:
        if r not in agreeing:
            checks.add(
                "duplicate_time_outlier",
                "excluded",
                f"{name} time_ms {times[r]:.0f} is {abs(times[r] - med) / 60000:,.1f} min from the "
                f"median of its {len(valid)} rank duplicates; the {len(agree)} that agree give the time",
                lines[r],
            )
    return agree


def _final_eval(row: dict, parsed: ParsedLog, evals: list, checks: FileChecks) -> bool:
    """Unique evaluations, the last by its progress key (not by time), its value and counts.

    Evaluations of equal progress with different values (a duplicated block of eval lines whose
    values disagree) are a conflict (check ``eval_conflict``): the first in file order is kept,
    and the return value says whether the final evaluation is one of them (the outcome is then
    unknown: the caller sets status ``damaged``).
    """
    cols = parsed.cols
    seen, unique = set(), []
    for r, _value, meta in evals:
        sig = (cols["value"][r], cols["metadata"][r])
        if sig not in seen:
            seen.add(sig)
            unique.append((r, meta))
    row["n_evals"] = len(unique)
    if not unique:
        return False
    pk = progress_key(row["benchmark"], row["round"])
    progress = []
    for r, meta in unique:
        p = None
        if pk and meta and pk[0] in meta:
            p = _count(meta[pk[0]], f"eval_accuracy {pk[0]}", checks, 0, cols["line"][r])
        progress.append(p)
    # conflicts: the same progress logged twice with different values; the first one is kept
    first_at: dict[int, int] = {}
    conflict_at: set[int] = set()
    repeats: set[int] = set()
    n_conflicts = 0
    for i, p in enumerate(progress):
        if p is None:
            continue
        if p not in first_at:
            first_at[p] = i
            continue
        j = first_at[p]
        v0, v1 = cols["value_num"][unique[j][0]], cols["value_num"][unique[i][0]]
        if v0 != v1:
            n_conflicts += 1
            conflict_at.add(p)
            if n_conflicts == 1:
                conflict_line = cols["line"][unique[i][0]]
                conflict_detail = (
                    f"eval_accuracy at {pk[0]} {p} logged twice with different values ({v0!r} at "
                    f"line {cols['line'][unique[j][0]]}, {v1!r} at line {conflict_line}); the "
                    "first is kept"
                )
        repeats.add(i)  # a repeat never becomes the final evaluation
    known = [(p, i) for i, p in enumerate(progress) if p is not None and i not in repeats]
    tail = max(i for i in range(len(unique)) if i not in repeats)
    last = max(known)[1] if known else tail
    if last < tail and progress[tail] is None:
        last = tail  # a later eval of unknown progress: the file's last is the final one
    for (p0, _), (p1, i1) in zip(known, known[1:], strict=False):
        if p1 < p0:
            checks.add(
                "progress_out_of_order",
                "flagged",
                f"eval_accuracy {pk[0]} {p1} after {p0} in file order; the largest counts as the last",
                cols["line"][unique[i1][0]],
            )
            break
    row["eval_value"] = cols["value_num"][unique[last][0]]
    count = progress[last]
    if pk and count is not None:
        if pk[1] == "tokens":
            row["tokens_to_converge"] = count
            if row["max_sequence_length"]:
                row["samples_to_converge"] = count // row["max_sequence_length"]
        elif pk[1] == "samples":
            row["samples_to_converge"] = count
    row["n_evals"] = len(unique) - len(repeats)  # a repeated evaluation counts once
    final_conflict = count is not None and count in conflict_at
    if n_conflicts:
        more = f"; {n_conflicts} evaluations conflict in all" if n_conflicts > 1 else ""
        what = ("the final evaluation is one of them: the outcome is unknown, status damaged"
                if final_conflict else "the final evaluation is not one of them")  # fmt: skip
        checks.add("eval_conflict", "flagged", f"{conflict_detail}{more}; {what}", conflict_line,
                   n=n_conflicts)  # fmt: skip
        checks.found["eval_conflict"].counted = True
    return final_conflict


def _target(row: dict) -> None:
    target = convergence_target(row["benchmark"], row["round"]) if row["benchmark"] else None
    if target is None:
        return
    row["eval_target"] = target[0]
    v, t = row["eval_value"], target[0]
    if v is not None:
        row["eval_target_met"] = {"<=": v <= t, ">=": v >= t, "<": v < t, ">": v > t}[target[1]]


def _timed_row(path: Path, parsed: ParsedLog, sys_cache: dict, checks: FileChecks) -> dict:
    """The run row of one parsed file: the attempt, its consensus start and stop, the final eval."""
    row = _base_row(path, parsed, sys_cache, checks)
    kept, cols = parsed.kept, parsed.cols
    lines, times = cols["line"], cols["time_ms"]
    starts = [r for r, _, _ in kept.get("run_start", [])]
    if not starts:
        if not parsed.n_events and path.is_file() and path.stat().st_size == 0:
            checks.add("empty_file", "parse_error", "empty file (0 bytes); status parse_error")
            return row
        why = "" if parsed.n_events else " (no :::MLLOG line in the file)"
        checks.add("no_run_start", "parse_error", f"no run_start event{why}; status parse_error")
        return row
    stops = kept.get("run_stop", [])
    evals = kept.get("eval_accuracy", [])
    # Relaunch: a run_start that comes (in file order) after the first attempt trained (an
    # eval_accuracy) or stopped (a run_stop). Rank duplicates of run_start come before any of those.
    progressed = [r for r, _, _ in evals + stops if r > starts[0]]
    first_progress = min(progressed) if progressed else None  # once: a loop's min is O(n^2)
    relaunch = [r for r in starts if first_progress is not None and r > first_progress]
    attempt = starts
    if relaunch:
        checks.add(
            "relaunch",
            "flagged",
            "second run_start after the run had trained (relaunch); the file holds two attempts, "
            "status relaunched, time_to_train_min is that of the last attempt only",
            lines[relaunch[0]],
        )
        attempt = relaunch
        stops = [s for s in stops if s[0] > relaunch[0]]
        evals = [e for e in evals if e[0] > relaunch[0]]
    final_conflict = _final_eval(row, parsed, evals, checks)
    apply_train_samples(row, parsed.events, checks)
    _target(row)
    start_rows = _consensus("run_start", attempt, parsed, checks)
    row["run_start"] = min(times[r] for r in start_rows) if start_rows else None
    if not stops:
        row["status"] = "relaunched" if relaunch else "incomplete"
        checks.add(
            "no_run_stop",
            "flagged",
            f"run_start without run_stop (truncated or killed run); status {row['status']}, no time-to-train",
        )
        return row
    stop_rows = _consensus("run_stop", [s[0] for s in stops], parsed, checks)
    last = max(stop_rows, key=lambda r: (times[r], r)) if stop_rows else stops[-1][0]
    meta = next(m for r, _, m in stops if r == last)
    ok = meta is not None and meta.get("status") == "success"
    row["status"] = "relaunched" if relaunch else ("success" if ok else "aborted")
    if meta is None and not relaunch:  # the outcome is unknown, not a failure the log reports
        row["status"] = "damaged"
        checks.add(
            "outcome_unknown",
            "flagged",
            "run_stop metadata is damaged: the run's status is unknown; status damaged",
            lines[last],
        )
    elif not relaunch and unknown_stop_status(meta, checks, lines[last]):
        row["status"] = "damaged"
    if row["status"] == "success" and final_conflict:
        row["status"] = "damaged"  # the outcome rests on an evaluation logged with two values
    elif row["status"] == "success" and row.get("eval_target_met") is False:
        checks.add(
            "outcome_contradiction",
            "flagged",
            f"run_stop says success but the final eval_accuracy {row['eval_value']!r} does not meet "
            f"the target {row['eval_target']!r} of the ruleset table; status kept as logged",
            lines[last],
        )
    if start_rows is None or stop_rows is None:
        if not relaunch:
            row["status"] = "damaged"
        return row
    row["run_stop"] = times[last]
    minutes = (row["run_stop"] - row["run_start"]) / 60_000.0
    if minutes <= 0:
        checks.add(
            "time_unusable",
            "flagged",
            f"run_stop is not after run_start ({minutes:.3f} min); no time to train",
            lines[last],
        )
        if not relaunch:
            row["status"] = "damaged"
        return row
    stepped = clock_stepped_back(times, lines, min(start_rows), last, checks,
                                 len(attempt) > 1 or len(stops) > 1, cols["key"],
                                 cols["value"]) if start_rows else False  # fmt: skip
    if stepped:
        if not relaunch:
            row["status"] = "damaged"
        return row
    row["time_to_train_min"] = minutes
    return row


def _load_file(
    path: Path, sys_cache: dict, memo: Memo | None = None
) -> tuple[dict, ParsedLog | None, FileChecks]:
    """Parse and time one file; raises whatever goes wrong (the caller isolates files)."""
    # result_*.txt.gz decompressed; a plain file is streamed by read_log. A lone surrogate in the
    # text makes the whole file a parse_error (read_log raises, naming the line)
    data = read_result_bytes(path)
    if data is None:  # inside read_once (a record build): the bytes the other readers take too
        data = held_bytes(path)
    parsed = read_log(path, data, memo=memo)
    checks = parsed.checks
    return _timed_row(path, parsed, sys_cache, checks), parsed, checks


def _failed_file(path: Path, exc: BaseException, sys_cache: dict) -> tuple[dict, FileChecks]:
    """The parse_error row and check of a file that could not be loaded at all."""
    checks = FileChecks(str(path))
    if isinstance(exc, OSError):
        check, msg = "read_error", f"cannot read ({exc.strerror or exc}); status parse_error"
    elif isinstance(exc, InputError):
        check, msg = "parse_error", f"{exc}; status parse_error"
    else:  # a bug in this reader: say so, keep the other files
        check = "internal_error"
        msg = f"internal error {type(exc).__name__}: {exc} (a trainperf bug); status parse_error"
    checks.add(check, "parse_error", msg, getattr(exc, "line", None))
    try:
        row = _base_row(path, None, sys_cache, FileChecks(str(path)))
    except Exception:  # noqa: BLE001 - the layout of a path cannot fail, but never lose the row
        row = {k: None for k in RUN_SCHEMA} | {"result_file": str(path), "status": "parse_error"}
    return row, checks


def load_results(path: str | Path, progress: bool = False) -> Results:
    """Load every MLPerf result file under ``path`` into runs, events, scores and quality frames.

    Each file is checked (see :func:`~trainperf.mlperf.parse.parse_log` for the line checks) and
    timed robustly: rank duplicates of run_start / run_stop give the time their majority agrees on
    (outliers beyond 60 s excluded); the final evaluation is the one with the largest progress
    count (``epoch_num`` / ``samples_count``, the key the round's rules name), not the latest time.
    A file that cannot be loaded at all becomes a ``parse_error`` row; the others still load.

    Args:
        path: an MLCommons ``training_results_vX.Y`` checkout, any folder below one, a folder in the
            same layout (the bundled ``data/mlperf``), or a single ``result_*.txt``.
        progress: show a tqdm progress bar over files.

    Returns:
        :class:`Results` with

        ``runs`` (one row per result file): round (String, ``v4.1``), submitter, system, benchmark,
        result_file (String), n_nodes, n_accelerators (Int64, number_of_nodes x accelerators_per_node
        of ``systems/<system>.json``, or of the log's ``:::SYSJSON`` line), accelerator_model,
        framework (String), global_batch_size, max_sequence_length, seed (Int64), run_start, run_stop
        (Datetime[ms, UTC]: the earliest run_start and latest run_stop of the rank duplicates that
        agree), time_to_train_min (Float64, minutes, (run_stop - run_start) as the MLPerf summarizer
        computes it; null unless the run stopped with usable times), status (String, one of
        :data:`RUN_STATUSES`), samples_to_converge, tokens_to_converge (Int64, from the final
        eval_accuracy's progress count: gpt3 ``epoch_num`` counts tokens, ``samples_count``
        (llama2_70b_lora, llama31_*) counts samples), n_evals (Int64, distinct evaluations),
        eval_value (Float64, final evaluation), eval_target (Float64, from the ruleset),
        eval_target_met (Boolean), n_warnings (Int64, data-quality rows of this file), quality
        (String, the checks that fired on this file, comma-separated; "" when none).

        ``events``: the events of all files (:func:`~trainperf.mlperf.parse.parse_log` columns).

        ``scores``: :func:`~trainperf.mlperf.scores.score_runs` of ``runs``.

        ``quality``: data-quality rows (:data:`~trainperf.quality.QUALITY_SCHEMA`), one per file and
        check that fired.

    Raises:
        FileNotFoundError: no result file under ``path``.
    """

    files_ = find_result_files(path)
    log = QualityLog(category=MLPerfLogWarning)
    sink: list[str] = []
    rows = []
    frames: list[pl.DataFrame] = []
    sys_cache: dict = {}
    memo = Memo()  # the files of one submission log the same events: each decoded once
    iterator = files_
    if progress:
        iterator = tqdm(files_, desc="MLPerf logs", unit="file", file=sys.stderr)
    copies = duplicate_files(files_)
    for i, f in enumerate(iterator):
        parsed = None
        try:
            row, parsed, checks = _load_file(f, sys_cache, memo)
        except Exception as exc:  # noqa: BLE001 - isolation: one bad file never costs the others
            row, checks = _failed_file(f, exc, sys_cache)
        if i in copies:
            mark_duplicate(row, checks, copies[i])
        row["quality"] = ",".join(checks.found)
        row["n_warnings"] = flush(checks, log, sink)
        row["result_file"] = display_path(row["result_file"])  # a name that is not UTF-8
        rows.append(row)
        if parsed is not None and parsed.n_events:
            frames.append(parsed.frame())
    runs = pl.DataFrame(rows, schema=RUN_SCHEMA).with_columns(
        pl.col("run_start").cast(pl.Int64).cast(pl.Datetime("ms", "UTC")),
        pl.col("run_stop").cast(pl.Int64).cast(pl.Datetime("ms", "UTC")),
    )
    events = pl.concat(frames) if frames else pl.DataFrame(schema=EVENT_SCHEMA)
    scores = score_runs(runs, log)  # before log.frame(): bad scaling.json rows go to the log
    return Results(runs=runs, events=events, scores=scores, warnings=sink, quality=log.frame())


def quality_summary(results: Results) -> pl.DataFrame:
    """One row per result file: its status, warnings, skipped lines and excluded values.

    Args:
        results: :func:`load_results` output.

    Returns:
        polars frame, one row per file in ``runs`` order: result_file, round, system, benchmark,
        status (String), n_warnings (Int64, data-quality rows), n_skipped_lines (Int64, lines whose
        event was skipped: corrupted JSON, missing or mistyped fields), n_excluded_values (Int64,
        values set to null: times and counts), checks (String, the checks that fired, comma-separated),
        detail (String, the first row's detail; "" when clean).
    """
    q = results.quality
    skipped = q.filter(pl.col("detail").str.contains("event skipped"))
    excluded = q.filter(
        (pl.col("action") == "excluded") & ~pl.col("detail").str.contains("event skipped")
    )
    per_file = [
        skipped.group_by("source").agg(pl.col("n_lines").sum().alias("n_skipped_lines")),
        excluded.group_by("source").agg(pl.col("n_samples").sum().alias("n_excluded_values")),
        q.group_by("source", maintain_order=True).agg(pl.col("detail").first()),
    ]
    out = results.runs.select(
        "result_file",
        "round",
        "system",
        "benchmark",
        "status",
        "n_warnings",
        pl.col("quality").alias("checks"),
    )
    for part in per_file:
        out = out.join(part, left_on="result_file", right_on="source", how="left")
    return out.with_columns(
        pl.col("n_skipped_lines").fill_null(0).cast(pl.Int64),
        pl.col("n_excluded_values").fill_null(0).cast(pl.Int64),
        pl.col("detail").fill_null(""),
    ).select(
        "result_file",
        "round",
        "system",
        "benchmark",
        "status",
        "n_warnings",
        "n_skipped_lines",
        "n_excluded_values",
        "checks",
        "detail",
    )
