"""One result folder into one row of the record (run in a worker process by :mod:`.build`)."""

from __future__ import annotations

import json
import statistics
import warnings
from pathlib import Path

import polars as pl

from trainperf.mlperf import load_results, throughput
from trainperf.mlperf.checks import as_count
from trainperf.mlperf.precision import precision_in_system
from trainperf.mlperf.readonce import read_once
from trainperf.power import energy_to_train
from trainperf.record.accelerators import canonical_accelerator
from trainperf.record.folders import ResultFolder, logs_sha256

__all__ = ["ENERGY_COLUMNS", "RECORD_SCHEMA", "folder_row"]

RECORD_SCHEMA: dict[str, pl.DataType] = {
    "round": pl.String(),
    "division": pl.String(),
    "submitter": pl.String(),
    "system": pl.String(),
    "system_name": pl.String(),
    "benchmark": pl.String(),
    "availability": pl.String(),
    "accelerator_model_name": pl.String(),
    "accelerator": pl.String(),
    "accelerators_per_node": pl.Int64(),
    "n_nodes": pl.Int64(),
    "n_gpus": pl.Int64(),
    "host_interconnect": pl.String(),
    "accelerator_interconnect": pl.String(),
    "framework": pl.String(),
    "n_runs": pl.Int64(),
    "n_converged": pl.Int64(),
    "n_required_runs": pl.Int64(),
    "scaling_factor": pl.Float64(),
    "score_min": pl.Float64(),
    "score_note": pl.String(),
    "global_batch_size": pl.Int64(),
    "throughput_basis": pl.String(),
    "tokens_per_s_per_gpu": pl.Float64(),
    "tokens_per_s_per_gpu_e2e": pl.Float64(),
    "model_tflops_per_gpu": pl.Float64(),
    "precision": pl.String(),
    "mfu": pl.Float64(),
    "mfu_bf16_dense": pl.Float64(),
    "mfu_fp8_dense": pl.Float64(),
    "quality_status": pl.String(),
    "quality_checks": pl.String(),
    "n_warnings": pl.Int64(),
    "repo": pl.String(),
    "commit": pl.String(),
    "folder": pl.String(),
    "logs_sha256": pl.String(),
    # added after the first bundled record (read_record fills them with nulls in an older file)
    "energy_to_train_j": pl.Float64(),
    "energy_to_train_kwh": pl.Float64(),
    "energy_status": pl.String(),
    "energy_checks": pl.String(),
}
"""Columns of the record, one row per (round, division, submitter, system, benchmark).

round (``v5.1``), division (``closed``/``open``, the systems JSON's ``division``), submitter, system
(the folder name), system_name (the systems JSON's), benchmark (the logs' ``submission_benchmark``),
availability (the systems JSON's ``status``: ``available``, ``preview``, ``rdi``, ``Available cloud`` ...),
accelerator_model_name (the systems JSON's text), accelerator (the accelerator table's canonical name,
null when the table has no such accelerator), accelerators_per_node, n_nodes (Int64, systems JSON),
n_gpus (Int64, nodes x accelerators per node, as the loader counts them), host_interconnect (the
systems JSON's ``host_networking``), accelerator_interconnect, framework (String);
n_runs (result files), n_converged (runs with status ``success``), n_required_runs (Int64, the
rules' run count, mlperf-logging ``benchmark_meta``); scaling_factor (Float64, ``scaling.json``, 1.0
without one); score_min (Float64, minutes: the olympic mean of the times to train x scaling_factor,
null when the rules give no score), score_note (String, why no score or what is unusual);
global_batch_size (Int64, the first converged run's); throughput_basis (``step`` where the logs time
the training steps, else ``e2e``: tokens to converge over the time to train, evaluations included;
the LoRA and Llama 3.1 logs have no step timing), tokens_per_s_per_gpu (Float64, tokens/s per GPU
on that basis, median over the converged runs of :func:`trainperf.mlperf.throughput`; null for
benchmarks without a model there: GPT-3, Llama 3.1 405B and Llama 2 70B LoRA have one),
tokens_per_s_per_gpu_e2e (Float64, end to end), model_tflops_per_gpu (Float64, TFLOP/s per GPU,
on that basis);
precision (``fp8``/``bf16`` where the submission's systems JSON states exactly one of them,
:func:`trainperf.mlperf.precision.precision_in_system`: MLPerf logs have no precision key; null when
unknown), mfu (Float64, fraction 0-1 of the dense peak of that precision; null when unknown),
mfu_bf16_dense, mfu_fp8_dense (Float64, fractions of the dense BF16 and FP8 peaks, both
given as the precision is often unknown; null when the accelerator has no peak in the table); quality_status (``clean``: no check fired; ``flagged``: checks fired, the
score stands; ``no_score``: the rules give no score; ``error``: the folder could not be read),
quality_checks (String, the checks that fired, sorted, comma-separated), n_warnings (Int64, data
quality rows); repo, commit, folder (the folder's path inside the repository), logs_sha256 (sha256
of the ``sha256sum`` listing of the folder's logs, :func:`trainperf.record.folders.logs_sha256`);
energy_to_train_j (Float64, J: the MLPerf power score of a folder with ``power/`` logs,
:func:`trainperf.power.energy_to_train`: the olympic mean over the runs the time score keeps of
the runs' energy at the nodes' power supplies plus the interconnect estimate, x the scaling factor;
equal to mlcommons/logging's result summarizer), energy_to_train_kwh (Float64, kWh = J / 3.6e6),
energy_status (``clean``: no power-log check fired; ``flagged``: checks fired, the energy stands;
``no_energy``: power logs but no energy by the rules (note in ``energy_checks``); ``error``: the
power logs could not be read), energy_checks (String, the power-log checks that fired, sorted,
comma-separated); all four null for a folder without ``power/``."""

ENERGY_COLUMNS = ("energy_to_train_j", "energy_to_train_kwh", "energy_status", "energy_checks")
"""The columns added after the first bundled record (:func:`trainperf.record.read_record` reads a
record file without them, the columns null)."""


def _text(v) -> str | None:
    return v.strip() if isinstance(v, str) and v.strip() else None


def _system_json(folder: Path) -> tuple[dict, str | None]:
    js = folder.parent.parent.parent / "systems" / f"{folder.parent.name}.json"
    try:
        desc = json.loads(js.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        return {}, "no_system_description"
    except (OSError, ValueError, RecursionError):
        return {}, "bad_system_description"
    return (desc, None) if isinstance(desc, dict) else ({}, "bad_system_description")


def _median(values) -> float | None:
    v = [x for x in values if x is not None]
    return statistics.median(v) if v else None


def folder_row(rf: ResultFolder) -> dict:
    """The record row of one result folder (:data:`RECORD_SCHEMA`); never raises.

    Loads the folder with :func:`trainperf.mlperf.load_results` (warnings are not printed: their
    checks are in ``quality_checks``), scores it (:func:`trainperf.mlperf.score_runs`, the
    summarizer's olympic mean and ``scaling.json`` factor) and takes the per-run throughput of
    :func:`trainperf.mlperf.throughput`.
    """
    row: dict = dict.fromkeys(RECORD_SCHEMA)
    row.update(round=rf.round, repo=rf.repo, commit=rf.commit, folder=rf.rel,
               system=rf.path.parent.name, benchmark=rf.path.name)  # fmt: skip
    try:
        _fill(row, rf)
    except Exception as exc:  # noqa: BLE001 - one bad folder never costs the others
        row["quality_status"] = "error"
        row["quality_checks"] = "internal_error"
        row["score_note"] = f"could not be read: {type(exc).__name__}: {exc}"[:300]
    return row


def _fill(row: dict, rf: ResultFolder) -> None:
    desc, sys_check = _system_json(rf.path)
    # each log read from disk once: its bytes serve the hash, the parse, the duplicate check and
    # the precision search (issue 36: four reads of every file were a tenth of a round's build)
    with read_once(), warnings.catch_warnings():
        row["logs_sha256"] = logs_sha256(rf.path)
        warnings.simplefilter("ignore")  # every check is a quality row, kept in quality_checks
        res = load_results(rf.path)
        thr = throughput(res)
    sc = res.scores.row(0, named=True) if res.scores.height else {}
    runs = res.runs
    row["division"] = (_text(desc.get("division")) or "").lower() or None
    row["submitter"] = sc.get("submitter") or rf.path.parent.parent.parent.name
    bench = runs["benchmark"].drop_nulls()
    if bench.len():
        row["benchmark"] = bench.mode().sort()[0]
    row["system_name"] = _text(desc.get("system_name"))
    row["availability"] = _text(desc.get("status"))
    acc = _text(desc.get("accelerator_model_name"))
    if acc is None:
        models = runs["accelerator_model"].drop_nulls()
        acc = models[0] if models.len() else None
    row["accelerator_model_name"] = acc
    row["accelerator"] = canonical_accelerator(acc)
    row["accelerators_per_node"] = as_count(desc.get("accelerators_per_node"), 0)
    row["n_nodes"] = as_count(desc.get("number_of_nodes"), 1)
    gpus = runs["n_accelerators"].drop_nulls()
    row["n_gpus"] = int(gpus[0]) if gpus.len() else None
    row["host_interconnect"] = _text(desc.get("host_networking"))
    row["accelerator_interconnect"] = _text(desc.get("accelerator_interconnect"))
    frameworks = runs["framework"].drop_nulls()
    row["framework"] = _text(desc.get("framework")) or (frameworks[0] if frameworks.len() else None)
    row["n_runs"] = runs.height
    ok = runs.filter(pl.col("status") == "success")
    row["n_converged"] = ok.height
    for k in ("n_required_runs", "scaling_factor", "score_min"):
        row[k] = sc.get(k)
    row["score_note"] = sc.get("note") or None
    gbs = ok["global_batch_size"].drop_nulls()
    row["global_batch_size"] = int(gbs[0]) if gbs.len() else None
    basis = "step" if thr.height and thr["tokens_per_s_per_gpu_step"].drop_nulls().len() else "e2e"
    med = {c: _median(thr[c].drop_nulls().to_list()) if thr.height else None for c in thr.columns
           if c.startswith(("tokens_", "model_tflops", "mfu_")) and thr[c].dtype.is_numeric()}  # fmt: skip
    row["tokens_per_s_per_gpu_e2e"] = med.get("tokens_per_s_per_gpu_e2e")
    row["tokens_per_s_per_gpu"] = med.get(f"tokens_per_s_per_gpu_{basis}")
    row["throughput_basis"] = basis if row["tokens_per_s_per_gpu"] is not None else None
    row["model_tflops_per_gpu"] = med.get(f"model_tflops_per_gpu_{basis}")
    row["mfu_bf16_dense"] = med.get(f"mfu_bf16_dense_{basis}")
    row["mfu_fp8_dense"] = med.get(f"mfu_fp8_dense_{basis}")
    # the logs' own precision first (issue 37: MLLOG key, framework config dump), else the JSON's
    logged = thr["precision"].drop_nulls().unique().to_list() if "precision" in thr.columns else []
    row["precision"] = logged[0] if len(logged) == 1 else precision_in_system(desc)
    if row["precision"] in ("bf16", "fp8"):
        row["mfu"] = row[f"mfu_{row['precision']}_dense"]
    elif row["precision"] == "fp4" and thr.height and "mfu_fp4_dense_step" in thr.columns:
        row["mfu"] = med.get(f"mfu_fp4_dense_{basis}")
    checks = set(res.quality["check"].to_list())
    if sys_check:
        checks.add(sys_check)
    row["quality_checks"] = ",".join(sorted(checks)) or None
    row["n_warnings"] = res.quality.height
    row["quality_status"] = (
        "no_score" if row["score_min"] is None else ("flagged" if checks else "clean")
    )
    if (rf.path / "power").is_dir():
        _fill_energy(row, rf.path, runs)


def _fill_energy(row: dict, folder: Path, runs: pl.DataFrame) -> None:
    """The energy columns of a folder with ``power/`` logs (:func:`trainperf.power.energy_to_train`,
    given the runs already read); a failure costs the energy columns only, never the row."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # every check is a quality row, kept in energy_checks
            res = energy_to_train(folder, runs=runs)
    except Exception as exc:  # noqa: BLE001 - damaged power logs never cost the performance row
        row["energy_status"] = "error"
        row["energy_checks"] = f"internal_error: {type(exc).__name__}: {exc}"[:300]
        return
    # the folder itself is the one power folder at or under it: one score row
    s = res.scores.row(0, named=True) if res.scores.height else {}
    checks = sorted(set(res.quality["check"].to_list()))
    row["energy_to_train_j"] = s.get("energy_to_train_j")
    row["energy_to_train_kwh"] = s.get("energy_to_train_kwh")
    if row["energy_to_train_j"] is None:
        row["energy_status"] = "no_energy"
        note = s.get("note") or "no power result"
        row["energy_checks"] = ",".join([*checks, note]) if checks else note
    else:
        row["energy_status"] = "flagged" if checks else "clean"
        row["energy_checks"] = ",".join(checks) or None
