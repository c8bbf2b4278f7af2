"""The MLPerf loader as it was before the issue 15/16 rewrite (trainperf.mlperf at commit ffda09c), kept
verbatim below this header as the reference of the identical-output test (tests/test_mlperf_identical.py).
Not part of the product; never import it outside the tests.
"""

# --- verbatim copy of src/trainperf/mlperf/__init__.py at ffda09c, docstring dropped ---

from __future__ import annotations

import json
import math
import re
import warnings
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from pathlib import Path

import polars as pl
from mlperf_logging import benchmark_meta
from mlperf_logging.compliance_checker.mlp_parser import ruleset_410 as _mllog_grammar
from mlperf_logging.result_summarizer import result_summarizer as _summarizer
from tqdm.auto import tqdm

from trainperf import flops as fl
from trainperf.errors import DataWarning

__all__ = [
    "MLLOG_TOKEN",
    "MLPerfLogWarning",
    "Results",
    "RUN_STATUSES",
    "load_results",
    "parse_log",
    "score_runs",
    "convergence_target",
    "step_times",
    "eval_curve",
    "find_result_files",
    "blocks",
    "throughput",
]

MLLOG_TOKEN = ":::MLLOG"

#: Possible values of ``runs.status``.
#:   success     run_stop logged with metadata status "success"
#:   aborted     run_stop logged with any other status (did not converge, crashed and caught)
#:   incomplete  run_start logged but no run_stop (log truncated, job killed)
#:   relaunched  a second run_start after the first attempt had trained or stopped (the file holds
#:               two attempts; their times are never added; the run does not count for scoring)
#:   parse_error the file could not be read or holds no usable run_start
RUN_STATUSES = ("success", "aborted", "incomplete", "relaunched", "parse_error")

_ROUND_RE = re.compile(r"^(?:training_results_)?v?(\d+\.\d+)$")
_TARGET_RE = re.compile(r"v\['value'\]\s*(<=|>=|<|>)\s*([0-9.eE+-]+)")

# eval_accuracy metadata key that counts training progress, per benchmark. For gpt3 "epoch_num" counts
# training tokens (training_rules.adoc, mlcommons/training_policies@ad8c1ace:598); for
# llama2_70b_lora "samples_count" counts training samples (ruleset closed_llama2_70b_lora.yaml).
_PROGRESS_KEYS = {"gpt3": ("epoch_num", "tokens"), "llama2_70b_lora": ("samples_count", "samples")}


class MLPerfLogWarning(DataWarning):
    """A problem in an MLPerf log that does not stop loading (the message names file and line)."""


@dataclass
class Results:
    """What :func:`load_results` returns.

    Attributes:
        runs: one row per result file (see :func:`load_results` for the columns).
        events: every MLLOG event, long form (see :func:`parse_log`).
        scores: one row per (round, submitter, system, benchmark) (see :func:`score_runs`).
        warnings: every warning raised while loading, as text ("file:line: what").
    """

    runs: pl.DataFrame
    events: pl.DataFrame
    scores: pl.DataFrame
    warnings: list[str] = field(default_factory=list)


_EVENT_SCHEMA = {
    "file": pl.String,
    "line": pl.Int64,
    "prefix": pl.String,
    "time_ms": pl.Float64,
    "event_type": pl.String,
    "key": pl.String,
    "value": pl.String,
    "value_num": pl.Float64,
    "metadata": pl.String,
}


def _warn(msg: str, sink: list[str]) -> None:
    sink.append(msg)
    warnings.warn(msg, MLPerfLogWarning, stacklevel=3)


def _as_number(value) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    return None


def parse_log(path: str | Path, warnings_sink: list[str] | None = None) -> pl.DataFrame:
    """Parse every ``:::MLLOG`` event of one log file.

    Each physical line (split on ``\\n``; a trailing ``\\r`` is dropped) may carry text before the token
    (a rank prefix such as ``0: `` or ``Processing``; after a carriage return only the text after the
    last ``\\r`` is kept, as a terminal shows it) and may carry more than one event when ranks wrote into
    the same line. The JSON after each token is decoded by mlperf-logging's own grammar
    (``mlp_parser.string_to_logline``). Lines without the token (``:::SYSJSON``, shell traces) are
    skipped. A corrupted event (bad JSON, missing ``time_ms``/``key``/``value``/``metadata``) is skipped
    with an :class:`MLPerfLogWarning` naming the file and the 1-based line; the rest still counts.

    Args:
        path: the log file. It is only read.
        warnings_sink: list that receives the warning texts (also emitted through ``warnings``).

    Returns:
        polars frame, one row per event, in file order: ``file`` (String), ``line`` (Int64, 1-based
        source line), ``prefix`` (String, text before the token, "" when none), ``time_ms`` (Float64,
        Unix epoch milliseconds), ``event_type`` (String), ``key`` (String), ``value`` (String, the
        value as JSON text), ``value_num`` (Float64, the value when it is a number, else null),
        ``metadata`` (String, JSON text).

    Raises:
        FileNotFoundError / OSError: the file cannot be read.
    """
    sink = warnings_sink if warnings_sink is not None else []
    path = Path(path)
    text = path.read_bytes().decode("utf-8", errors="replace")
    rows: dict[str, list] = {k: [] for k in _EVENT_SCHEMA}
    for lineno, raw in enumerate(text.split("\n"), start=1):
        if MLLOG_TOKEN not in raw:
            continue
        line = raw.rstrip("\r")
        parts = line.split(MLLOG_TOKEN)
        prefix = parts[0].rsplit("\r", 1)[-1].strip()
        for segment in parts[1:]:
            try:
                ll = _mllog_grammar.string_to_logline(lineno, f"{MLLOG_TOKEN} {segment.strip()}")
            except json.JSONDecodeError as exc:
                _warn(
                    f"{path}:{lineno}: corrupted MLLOG JSON ({exc.msg} at column {exc.colno}); event skipped",
                    sink,
                )
                continue
            except KeyError as exc:
                _warn(
                    f"{path}:{lineno}: MLLOG event lacks required field {exc.args[0]!r} (expected time_ms, key, value, metadata); event skipped",
                    sink,
                )
                continue
            except (ValueError, TypeError) as exc:
                _warn(f"{path}:{lineno}: unusable MLLOG event ({exc}); event skipped", sink)
                continue
            payload = json.loads(ll.full_string[len(MLLOG_TOKEN) :])
            value = ll.value["value"]
            rows["file"].append(str(path))
            rows["line"].append(lineno)
            rows["prefix"].append(prefix)
            rows["time_ms"].append(ll.timestamp)
            rows["event_type"].append(payload.get("event_type"))
            rows["key"].append(ll.key)
            rows["value"].append(json.dumps(value))
            rows["value_num"].append(_as_number(value))
            rows["metadata"].append(json.dumps(ll.value["metadata"]))
            prefix = ""
    return pl.DataFrame(rows, schema=_EVENT_SCHEMA)


@cache
def convergence_target(benchmark: str, round_: str | None = None) -> tuple[float, str] | None:
    """Return the convergence target of a benchmark from the mlperf-logging compliance ruleset.

    The target is read from the ``ATLEAST_ONE_CHECK`` of the ``eval_accuracy`` key in
    ``mlperf_logging/compliance_checker/training_<round>.0/closed_<benchmark>.yaml`` (e.g. gpt3
    v4.1: ``v['value'] <= 2.69``, log perplexity; llama2_70b_lora v4.1: ``<= 0.925``, eval loss).

    Args:
        benchmark: MLPerf benchmark name (``gpt3``, ``llama2_70b_lora``, ...).
        round_: ``v4.1``-style round; when None or unknown to the package, the newest ruleset that
            has the benchmark is used.

    Returns:
        ``(target, comparison)`` with comparison one of ``<=``, ``>=``, ``<``, ``>``, or None when no
        ruleset defines a target for the benchmark.
    """
    base = files("mlperf_logging") / "compliance_checker"
    rulesets = sorted(
        (p.name for p in base.iterdir() if p.name.startswith("training_") and p.is_dir()),
        key=lambda n: tuple(int(x) for x in re.findall(r"\d+", n)),
        reverse=True,
    )
    if round_:
        wanted = f"training_{round_.lstrip('v')}.0"
        if wanted in rulesets:
            rulesets.remove(wanted)
            rulesets.insert(0, wanted)
    for rs in rulesets:
        yml = base / rs / f"closed_{benchmark}.yaml"
        if not yml.is_file():
            continue
        text = yml.read_text()
        m = re.search(r"NAME:\s*eval_accuracy.*?ATLEAST_ONE_CHECK:\s*\"([^\"]+)\"", text, re.S)
        if m:
            t = _TARGET_RE.search(m.group(1))
            if t:
                return float(t.group(2)), t.group(1)
    return None


def _layout_from_path(path: Path) -> dict:
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
    else:
        out["benchmark"] = path.parent.name
    return out


def _system_desc(layout: dict, events: pl.DataFrame, path: Path, sink: list[str]) -> dict:
    if layout["submitter_dir"] is not None:
        js = layout["submitter_dir"] / "systems" / f"{layout['system']}.json"
        if js.is_file():
            try:
                return json.loads(js.read_text())
            except json.JSONDecodeError as exc:
                _warn(f"{js}:{exc.lineno}: system description is not valid JSON ({exc.msg})", sink)
    # Fallback: some logs embed the system description as ':::SYSJSON {...}' lines (NVIDIA v4.0).
    with path.open("rb") as fh:
        for raw in fh:
            if b":::SYSJSON" in raw:
                try:
                    return json.loads(raw.split(b":::SYSJSON", 1)[1])
                except json.JSONDecodeError:
                    break
    _warn(f"{path}: no systems/<system>.json and no :::SYSJSON line; n_accelerators unknown", sink)
    return {}


def _first(events: pl.DataFrame, key: str):
    sel = events.filter(pl.col("key") == key)
    if sel.height == 0:
        return None
    return json.loads(sel["value"][0])


def _int_or_none(v) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _run_row(path: Path, events: pl.DataFrame, sink: list[str]) -> dict:
    layout = _layout_from_path(path)
    desc = (
        _system_desc(layout, events, path, sink) if events.height or layout["submitter_dir"] else {}
    )
    nodes = _int_or_none(desc.get("number_of_nodes"))
    per_node = _int_or_none(desc.get("accelerators_per_node"))
    benchmark_log = _first(events, "submission_benchmark")
    benchmark = benchmark_log or layout["benchmark"]
    if benchmark_log and layout["benchmark"] and benchmark_log != layout["benchmark"]:
        _warn(
            f"{path}: log says benchmark {benchmark_log!r} but folder says {layout['benchmark']!r}; using the log",
            sink,
        )
    row = {
        "round": layout["round"],
        "submitter": desc.get("submitter") or layout["submitter"],
        "system": layout["system"],
        "benchmark": benchmark,
        "result_file": str(path),
        "n_nodes": nodes,
        "n_accelerators": nodes * max(per_node, 1)
        if nodes is not None and per_node is not None
        else None,
        "accelerator_model": desc.get("accelerator_model_name"),
        "framework": desc.get("framework"),
        "global_batch_size": _int_or_none(_first(events, "global_batch_size")),
        "max_sequence_length": _int_or_none(_first(events, "max_sequence_length")),
        "seed": _int_or_none(_first(events, "seed")),
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
    }
    starts = events.filter(pl.col("key") == "run_start")
    if starts.height == 0:
        _warn(f"{path}: no run_start event; status parse_error", sink)
        return row
    stops = events.filter(pl.col("key") == "run_stop")
    # Relaunch: a run_start that comes (in file order) after the first attempt trained (an
    # eval_accuracy) or stopped (a run_stop). Rank duplicates of run_start come before any of those.
    first_line = starts["line"].min()
    progress = events.filter(
        pl.col("key").is_in(["eval_accuracy", "run_stop"]) & (pl.col("line") > first_line)
    )
    relaunch = starts.filter(
        pl.col("line") > (progress["line"].min() if progress.height else math.inf)
    )
    start_ms = starts["time_ms"].min()
    if relaunch.height:
        _warn(
            f"{path}:{relaunch['line'][0]}: second run_start after the run had trained (relaunch); "
            "the file holds two attempts, status relaunched, time_to_train_min is that of the last attempt only",
            sink,
        )
        start_ms = relaunch["time_ms"].min()
        stops = stops.filter(pl.col("line") > relaunch["line"][0])
    row["run_start"] = start_ms
    evals = events.filter(pl.col("key") == "eval_accuracy").unique(
        subset=["value", "metadata"], keep="first", maintain_order=True
    )
    row["n_evals"] = evals.height
    if evals.height:
        last = evals.sort("time_ms").tail(1)
        row["eval_value"] = last["value_num"][0]
        meta = json.loads(last["metadata"][0])
        key_kind = _PROGRESS_KEYS.get(benchmark)
        if key_kind and key_kind[0] in meta:
            count = _int_or_none(meta[key_kind[0]])
            if key_kind[1] == "tokens":
                row["tokens_to_converge"] = count
                if count is not None and row["max_sequence_length"]:
                    row["samples_to_converge"] = count // row["max_sequence_length"]
            else:
                row["samples_to_converge"] = count
    target = convergence_target(benchmark, layout["round"]) if benchmark else None
    if target is not None:
        row["eval_target"] = target[0]
        if row["eval_value"] is not None:
            v, t = row["eval_value"], target[0]
            row["eval_target_met"] = {"<=": v <= t, ">=": v >= t, "<": v < t, ">": v > t}[target[1]]
    if stops.height == 0:
        row["status"] = "relaunched" if relaunch.height else "incomplete"
        _warn(
            f"{path}: run_start without run_stop (truncated or killed run); status {row['status']}, no time-to-train",
            sink,
        )
        return row
    last_stop = stops.sort("time_ms").tail(1)
    row["run_stop"] = last_stop["time_ms"][0]
    row["time_to_train_min"] = (row["run_stop"] - start_ms) / 60_000.0
    stop_status = json.loads(last_stop["metadata"][0]).get("status")
    if relaunch.height:
        row["status"] = "relaunched"
    else:
        row["status"] = "success" if stop_status == "success" else "aborted"
    return row


_RUN_SCHEMA = {
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
}


def find_result_files(path: str | Path) -> list[Path]:
    """Return every ``result_*.txt`` below ``path`` (any depth), sorted; ``path`` may be one file.

    Raises:
        FileNotFoundError: ``path`` does not exist or holds no result file.
    """
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.exists():
        raise FileNotFoundError(
            f"{path}: no such file or folder (expected an MLPerf results folder or a result_*.txt)"
        )
    found = sorted(p for p in path.rglob("result_*.txt") if p.is_file())
    if not found:
        raise FileNotFoundError(
            f"{path}: no result_*.txt files found at any depth (expected <submitter>/results/<system>/<benchmark>/result_<i>.txt)"
        )
    return found


def load_results(path: str | Path, progress: bool = False) -> Results:
    """Load every MLPerf result file under ``path`` into runs, events and scores frames.

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
        (Datetime[ms, UTC]: the earliest run_start and latest run_stop of any rank),
        time_to_train_min (Float64, minutes, (run_stop - run_start) as the MLPerf summarizer computes it;
        null unless the run stopped), status (String, one of :data:`RUN_STATUSES`),
        samples_to_converge, tokens_to_converge (Int64, from the last eval_accuracy's metadata:
        gpt3 ``epoch_num`` counts tokens, llama2_70b_lora ``samples_count`` counts samples), n_evals
        (Int64), eval_value (Float64, last evaluation), eval_target (Float64, from the ruleset),
        eval_target_met (Boolean), n_warnings (Int64, warnings raised for this file).

        ``events``: :func:`parse_log` frames of all files, concatenated.

        ``scores``: :func:`score_runs` of ``runs``.

    Raises:
        FileNotFoundError: no result file under ``path``.
    """
    files_ = find_result_files(path)
    sink: list[str] = []
    rows, frames = [], []
    iterator = files_
    if progress:
        iterator = tqdm(files_, desc="MLPerf logs", unit="file")
    for f in iterator:
        before = len(sink)
        try:
            ev = parse_log(f, sink)
        except OSError as exc:
            _warn(f"{f}: cannot read ({exc}); status parse_error", sink)
            ev = pl.DataFrame(schema=_EVENT_SCHEMA)
        frames.append(ev)
        row = _run_row(f, ev, sink)
        row["n_warnings"] = len(sink) - before
        rows.append(row)
    runs = pl.DataFrame(rows, schema=_RUN_SCHEMA).with_columns(
        pl.col("run_start").cast(pl.Int64).cast(pl.Datetime("ms", "UTC")),
        pl.col("run_stop").cast(pl.Int64).cast(pl.Datetime("ms", "UTC")),
    )
    events = pl.concat(frames) if frames else pl.DataFrame(schema=_EVENT_SCHEMA)
    return Results(runs=runs, events=events, scores=score_runs(runs), warnings=sink)


_SCORE_SCHEMA = {
    "round": pl.String,
    "submitter": pl.String,
    "system": pl.String,
    "benchmark": pl.String,
    "n_accelerators": pl.Int64,
    "n_runs": pl.Int64,
    "n_valid_runs": pl.Int64,
    "n_required_runs": pl.Int64,
    "scaling_factor": pl.Float64,
    "score_min": pl.Float64,
    "note": pl.String,
}


def score_runs(runs: pl.DataFrame) -> pl.DataFrame:
    """Score each (round, submitter, system, benchmark) as the MLPerf Training rules do.

    Rule (MLPerf Training rules, "Benchmark Results", mlcommons/training_policies training_rules.adoc;
    implemented by mlperf-logging's result summarizer, whose ``_compute_olympic_average`` is called
    here): sort the successful runs' times, drop the fastest and the slowest and average the rest
    (3 gpt3 runs give the median, 10 llama2_70b_lora runs the mean of the middle 8). A run that did not
    succeed counts as the dropped slowest one; more failed runs than may be dropped (1; 4 for unet3d)
    gives no score. The ``scaling.json`` factor of a results folder, when present, multiplies the score.

    Args:
        runs: the ``runs`` frame of :func:`load_results`.

    Returns:
        polars frame, one row per group: round, submitter, system, benchmark (String), n_accelerators
        (Int64), n_runs, n_valid_runs (successful), n_required_runs (Int64, from mlperf-logging's
        benchmark_meta; null when unknown), scaling_factor (Float64), score_min (Float64, minutes,
        null when no score), note (String: why there is no score, or what is unusual).
    """
    keys = ["round", "submitter", "system", "benchmark"]
    required = benchmark_meta.get_result_file_counts("training")
    out = []
    for group, sub in runs.group_by(keys, maintain_order=True):
        rec = dict(zip(keys, group, strict=True))
        ok = sub.filter(pl.col("status") == "success")
        dropped = sub.height - ok.height
        max_dropped = 4 if rec["benchmark"] == "unet3d" else 1
        req = required.get(rec["benchmark"])
        folder = Path(sub["result_file"][0]).parent
        factor = float(_summarizer._get_scaling_factor(str(folder)))
        notes = []
        score = None
        if dropped > max_dropped:
            notes.append(
                f"{dropped} runs did not succeed (at most {max_dropped} may be dropped): no score"
            )
        else:
            avg = _summarizer._compute_olympic_average(
                sorted(ok["time_to_train_min"].to_list()), dropped, max_dropped
            )
            if avg is None:
                notes.append("too few successful runs for an olympic mean")
            else:
                score = avg * factor
                if dropped:
                    notes.append(f"{dropped} failed run counted as the dropped slowest")
        if req is not None and sub.height < req:
            notes.append(f"only {sub.height} of the {req} runs the rules require")
        if factor != 1.0:
            notes.append(f"scaled by scaling.json factor {factor}")
        n_acc = sub["n_accelerators"].drop_nulls()
        out.append(
            {
                **rec,
                "n_accelerators": n_acc[0] if n_acc.len() else None,
                "n_runs": sub.height,
                "n_valid_runs": ok.height,
                "n_required_runs": req,
                "scaling_factor": factor,
                "score_min": score,
                "note": "; ".join(notes),
            }
        )
    return pl.DataFrame(out, schema=_SCORE_SCHEMA)


def step_times(events: pl.DataFrame) -> pl.DataFrame:
    """Per-step training time from ``tracked_stats`` events, duplicates (one per rank) removed.

    NeMo-based MLPerf implementations log ``tracked_stats`` with value ``{"train_step_timing": s}``
    (v3.x) or ``{"train_step_timing in s": s}`` (v4.1) and metadata ``step`` (for gpt3, a token count).
    v4.0 logs carry no step timing; use block_start/block_stop there.

    Args:
        events: an events frame (:func:`parse_log` or ``Results.events``).

    Returns:
        polars frame: file (String), step (Int64, the metadata ``step``), time_ms (Float64),
        step_time_s (Float64, seconds). Empty when the log has no step timing.
    """
    ts = events.filter(pl.col("key") == "tracked_stats").unique(
        subset=["file", "value", "metadata"], keep="first", maintain_order=True
    )
    rows = []
    for f, v, m, t in ts.select("file", "value", "metadata", "time_ms").iter_rows():
        val = json.loads(v)
        if not isinstance(val, dict):
            continue
        s = val.get("train_step_timing in s", val.get("train_step_timing"))
        if s is None:
            continue
        rows.append(
            {
                "file": f,
                "step": _int_or_none(json.loads(m).get("step")),
                "time_ms": t,
                "step_time_s": float(s),
            }
        )
    return pl.DataFrame(
        rows,
        schema={
            "file": pl.String,
            "step": pl.Int64,
            "time_ms": pl.Float64,
            "step_time_s": pl.Float64,
        },
    )


def eval_curve(results: Results) -> pl.DataFrame:
    """Evaluation metric against training progress for every run (rank duplicates removed).

    Args:
        results: what :func:`load_results` returned.

    Returns:
        polars frame: result_file, round, system, benchmark (String), n_accelerators (Int64),
        progress (Int64: tokens for gpt3 from ``epoch_num``, samples for llama2_70b_lora from
        ``samples_count``), progress_unit (String, "tokens" or "samples"), eval_value (Float64),
        eval_target (Float64, the ruleset target), time_ms (Float64).
    """
    ev = results.events.filter(pl.col("key") == "eval_accuracy").unique(
        subset=["file", "value", "metadata"], keep="first", maintain_order=True
    )
    meta = results.runs.select(
        pl.col("result_file").alias("file"),
        "round",
        "system",
        "benchmark",
        "n_accelerators",
        "eval_target",
    )
    rows = []
    for f, m, v, t in ev.select("file", "metadata", "value_num", "time_ms").iter_rows():
        rows.append({"file": f, "md": m, "eval_value": v, "time_ms": t})
    schema = {"file": pl.String, "md": pl.String, "eval_value": pl.Float64, "time_ms": pl.Float64}
    df = pl.DataFrame(rows, schema=schema).join(meta, on="file", how="left")
    out = []
    for rec in df.iter_rows(named=True):
        key, unit = _PROGRESS_KEYS.get(rec["benchmark"], ("epoch_num", "epochs"))
        md = json.loads(rec["md"])
        rec["progress"] = _int_or_none(md.get(key))
        rec["progress_unit"] = unit
        out.append(rec)
    return (
        pl.DataFrame(
            out,
            schema={
                **schema,
                "round": pl.String,
                "system": pl.String,
                "benchmark": pl.String,
                "n_accelerators": pl.Int64,
                "eval_target": pl.Float64,
                "progress": pl.Int64,
                "progress_unit": pl.String,
            },
        )
        .select(
            pl.col("file").alias("result_file"),
            "round",
            "system",
            "benchmark",
            "n_accelerators",
            "progress",
            "progress_unit",
            "eval_value",
            "eval_target",
            "time_ms",
        )
        .sort("result_file", "time_ms")
    )


def blocks(events: pl.DataFrame) -> pl.DataFrame:
    """Training blocks (``block_start``/``block_stop`` pairs, rank duplicates removed).

    A block is the training between two evaluations; its metadata ``first_epoch_num`` and
    ``epoch_count`` count tokens for gpt3 and samples for llama2_70b_lora.

    Returns:
        polars frame: file (String), first_epoch_num, epoch_count (Int64), start_ms, stop_ms
        (Float64, epoch ms; the earliest start and the latest stop over ranks), duration_s (Float64).
    """
    be = events.filter(pl.col("key").is_in(["block_start", "block_stop"])).with_columns(
        pl.col("metadata")
        .str.json_path_match("$.first_epoch_num")
        .cast(pl.Int64)
        .alias("first_epoch_num"),
        pl.col("metadata").str.json_path_match("$.epoch_count").cast(pl.Int64).alias("epoch_count"),
    )
    starts = (
        be.filter(pl.col("key") == "block_start")
        .group_by("file", "first_epoch_num")
        .agg(pl.col("epoch_count").first(), pl.col("time_ms").min().alias("start_ms"))
    )
    stops = (
        be.filter(pl.col("key") == "block_stop")
        .group_by("file", "first_epoch_num")
        .agg(pl.col("time_ms").max().alias("stop_ms"))
    )
    return (
        starts.join(stops, on=["file", "first_epoch_num"], how="inner")
        .with_columns(((pl.col("stop_ms") - pl.col("start_ms")) / 1000.0).alias("duration_s"))
        .sort("file", "first_epoch_num")
    )


def throughput(
    results: Results, recompute: str | None = None, causal: bool = False
) -> pl.DataFrame:
    """Per-run throughput, model TFLOP/s per GPU and MFU from the logs themselves.

    Definitions (per run, n = n_accelerators):

    * step level: ``tokens_per_s_per_gpu_step = global_batch_size x max_sequence_length /
      (median step time x n)``, the step time being the median of the ``tracked_stats`` step timings
      (:func:`step_times`); logs without step timing (v4.0) use the training blocks instead
      (:func:`blocks`: tokens of all blocks / their summed duration, evaluation excluded);
      ``step_source`` says which.
    * end to end: ``tokens_per_s_per_gpu_e2e = tokens_to_converge / (time_to_train x n)``; it includes
      the evaluations inside the timed region, as MLPerf's time to train does.
    * ``model_tflops_per_gpu_* = tokens_per_s_per_gpu_* x F_tok / 1e12`` with F_tok the model FLOPs
      per token of :func:`trainperf.flops.model_flops_per_token` (Narayanan et al., SC21, no
      recomputation; ``causal=True`` halves the attention-score FLOPs as Megatron-LM does since
      2025-03).
    * MFU against both dense peaks of :func:`trainperf.flops.peak_flops`: ``mfu_bf16_dense_*`` and
      ``mfu_fp8_dense_*`` (every NVIDIA-stack H100 MLPerf GPT-3 submission trained in FP8, so the
      BF16 figure alone misleads; the truth lies between the two).
    * HFU (hardware FLOPs, full recomputation counted) only when ``recompute`` is given; the logs do
      not say whether activations were recomputed.

    Only benchmarks with a model preset and a token count (gpt3) get FLOP figures; other rows keep
    null FLOP columns and say why in ``note``.

    Args:
        results: :func:`load_results` output.
        recompute: ``"none"``, ``"selective"`` or ``"full"`` when known (for HFU); None: unknown.
        causal: the causal-attention FLOP convention.

    Returns:
        polars frame, one row per successful run: result_file, round, system, benchmark (String),
        n_accelerators, global_batch_size (Int64), accelerator_model (String), step_source (String:
        "tracked_stats", "blocks" or null), step_time_s (Float64, s), tokens_per_s_per_gpu_step,
        tokens_per_s_per_gpu_e2e (Float64, tokens/s/GPU), flops_per_token (Float64, FLOP),
        model_tflops_per_gpu_step, model_tflops_per_gpu_e2e (Float64, TFLOP/s), mfu_bf16_dense_step,
        mfu_fp8_dense_step, mfu_bf16_dense_e2e, mfu_fp8_dense_e2e (Float64, fraction 0-1),
        hfu_bf16_dense_step, hfu_fp8_dense_step (Float64 or null), note (String).
    """
    presets = {"gpt3": fl.GPT3_175B}
    st = step_times(results.events).group_by("file").agg(pl.col("step_time_s").median())
    bl = (
        blocks(results.events)
        .group_by("file")
        .agg(
            pl.col("epoch_count").sum().alias("block_tokens"),
            pl.col("duration_s").sum().alias("block_s"),
        )
    )
    runs = results.runs.filter(pl.col("status") == "success")
    rows = []
    for r in runs.iter_rows(named=True):
        f = r["result_file"]
        n = r["n_accelerators"]
        out = {
            k: r[k]
            for k in (
                "result_file",
                "round",
                "system",
                "benchmark",
                "n_accelerators",
                "global_batch_size",
                "accelerator_model",
            )
        }
        notes = []
        spec = presets.get(r["benchmark"])
        seq = r["max_sequence_length"]
        s_row = st.filter(pl.col("file") == f)
        b_row = bl.filter(pl.col("file") == f)
        step_tps = None
        out["step_source"] = None
        out["step_time_s"] = None
        if n and seq and r["global_batch_size"] and s_row.height:
            out["step_source"], out["step_time_s"] = "tracked_stats", s_row["step_time_s"][0]
            step_tps = r["global_batch_size"] * seq / (out["step_time_s"] * n)
        elif n and r["benchmark"] == "gpt3" and b_row.height and b_row["block_s"][0] > 0:
            out["step_source"] = "blocks"
            step_tps = b_row["block_tokens"][0] / (b_row["block_s"][0] * n)
        e2e_tps = None
        if n and r["tokens_to_converge"] and r["time_to_train_min"]:
            e2e_tps = r["tokens_to_converge"] / (r["time_to_train_min"] * 60.0 * n)
        out["tokens_per_s_per_gpu_step"] = step_tps
        out["tokens_per_s_per_gpu_e2e"] = e2e_tps
        f_tok = fl.model_flops_per_token(spec, causal=causal) if spec else None
        out["flops_per_token"] = f_tok
        peaks = {}
        if spec is None:
            notes.append(
                f"no model preset for {r['benchmark']!r} or no token count: FLOP figures not computed"
            )
        elif r["accelerator_model"]:
            try:
                peaks = {p: fl.peak_flops(r["accelerator_model"], p) for p in ("bf16", "fp8")}
            except ValueError as exc:
                notes.append(str(exc))
        for kind, tps in (("step", step_tps), ("e2e", e2e_tps)):
            tfl = tps * f_tok / 1e12 if (tps is not None and f_tok) else None
            out[f"model_tflops_per_gpu_{kind}"] = tfl
            for p in ("bf16", "fp8"):
                out[f"mfu_{p}_dense_{kind}"] = (
                    tfl * 1e12 / peaks[p] if (tfl is not None and p in peaks) else None
                )
        hfu_ratio = None
        if recompute and spec and step_tps is not None:
            hfu_ratio = fl.model_flops_per_token(spec, causal=causal, recompute=recompute) / f_tok
        for p in ("bf16", "fp8"):
            m = out[f"mfu_{p}_dense_step"]
            out[f"hfu_{p}_dense_step"] = (
                m * hfu_ratio if (m is not None and hfu_ratio is not None) else None
            )
        if recompute is None:
            notes.append("HFU not computed: recomputation unknown")
        out["note"] = "; ".join(notes)
        rows.append(out)
    schema = {
        "result_file": pl.String,
        "round": pl.String,
        "system": pl.String,
        "benchmark": pl.String,
        "n_accelerators": pl.Int64,
        "global_batch_size": pl.Int64,
        "accelerator_model": pl.String,
        "step_source": pl.String,
        "step_time_s": pl.Float64,
        "tokens_per_s_per_gpu_step": pl.Float64,
        "tokens_per_s_per_gpu_e2e": pl.Float64,
        "flops_per_token": pl.Float64,
        "model_tflops_per_gpu_step": pl.Float64,
        "mfu_bf16_dense_step": pl.Float64,
        "mfu_fp8_dense_step": pl.Float64,
        "model_tflops_per_gpu_e2e": pl.Float64,
        "mfu_bf16_dense_e2e": pl.Float64,
        "mfu_fp8_dense_e2e": pl.Float64,
        "hfu_bf16_dense_step": pl.Float64,
        "hfu_fp8_dense_step": pl.Float64,
        "note": pl.String,
    }
    return pl.DataFrame(rows, schema=schema)


def runs_with_throughput(results: Results, **kwargs) -> pl.DataFrame:
    """The ``runs`` frame with the :func:`throughput` columns joined on ``result_file``.

    This is the per-run results table that batch runs collect (one Parquet file per results folder).

    Args:
        results: :func:`load_results` output.
        **kwargs: passed to :func:`throughput` (``recompute``, ``causal``).

    Returns:
        ``runs`` columns plus step_source, step_time_s, tokens_per_s_per_gpu_step/e2e, flops_per_token,
        model_tflops_per_gpu_step/e2e, mfu_{bf16,fp8}_dense_{step,e2e}, hfu_{bf16,fp8}_dense_step, note
        (null for runs that did not succeed).
    """
    thr = throughput(results, **kwargs).drop(
        "round", "system", "benchmark", "n_accelerators", "global_batch_size", "accelerator_model"
    )
    return results.runs.join(thr, on="result_file", how="left")
