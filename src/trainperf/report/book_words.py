"""What a book says about its inputs: which benchmarks its MLPerf chapter shows, the opening
page's words for what the book is made of, and the one sentence a page shows where an input is
not given. Computed from the config, never from the demo (:mod:`trainperf.report.demo`)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from trainperf.markup import md_code, md_text

__all__ = [
    "BENCHMARK_PHRASES",
    "DEFAULT_TELEMETRY_LOG",
    "PROSE_BENCHMARKS",
    "benchmarks_studied",
    "bundled_measurements_absent",
    "input_phrases",
    "logs_flags",
    "telemetry_log_phrase",
]


def bundled_measurements_absent(cfg) -> dict[str, str]:
    """``{notebook: sentence}`` for the project's own single-GPU capture and profiler trace
    (``data/telemetry/``, ``data/traces/``: an H200 of the project, not the user's cluster): left
    out of a user's book (not executed, so none of their figures is exported) unless the user
    passes a capture of their own (``-p telemetry_capture.capture_dir=...``,
    ``-p trace.capture_dir=...``); the demo's book shows them. The energy chapter likewise, unless
    the config gives MLPerf power results (``power:``, or found under ``mlperf:``) or measured DCGM
    telemetry (``telemetry:`` with a real source: the chapter's GPU energy per run and phase)."""
    what = {
        "telemetry_capture": ("single-GPU telemetry capture", "telemetry_capture.capture_dir"),
        "trace": ("profiler trace", "trace.capture_dir"),
    }
    out = {
        nb: (
            f"No {kind} of {md_text(cfg.name)} was given, so this page shows none: the one bundled "
            f"with trainperf was measured on another machine (pass your own with `-p {param}=...`)."
        )
        for nb, (kind, param) in what.items()
    }
    tel = cfg.telemetry
    if cfg.power is None and (tel is None or tel.synthetic):
        generated = (
            " (its DCGM telemetry is generated, so it gives no energy figure)"
            if tel is not None
            else ""
        )
        out["energy"] = (
            f"No MLPerf power log or measured GPU telemetry of {md_text(cfg.name)} was given"
            f"{generated}, so this page shows no energy to train. Give MLPerf power results with "
            "the config key `power:` (a results folder whose benchmark folders hold "
            "`power/result_*/node_*.txt`; found by itself under `mlperf:`) or DCGM telemetry of a "
            "run with `telemetry:`."
        )
    return out


#: The MLPerf log whose phases the synthetic telemetry follows by default (the telemetry
#: notebook's ``mlperf_log``): NVIDIA's Eos v4.1 GPT-3 run, bundled in ``data/mlperf``.
DEFAULT_TELEMETRY_LOG = "data/mlperf/v4.1/NVIDIA/results/eos_n64_ngc24.09_nemo/gpt3/result_0.txt"


#: The benchmarks whose prose a chapter shows only where their logs are read (``values.inputs.logs_*``).
PROSE_BENCHMARKS = ("gpt3", "llama2_70b_lora", "llama31_405b")


def logs_flags(cfg, comparison: pl.DataFrame) -> dict[str, bool]:
    """``{"logs_gpt3": ..., ...}``: whether the book's MLPerf chapter shows logs of that benchmark:
    the evaluated system's own logs where the config gives them (the benchmarks of its rows in
    ``comparison``), else the reference's bundled logs, which have all three."""
    if cfg.mlperf is None:
        return {f"logs_{b}": True for b in PROSE_BENCHMARKS}
    own = set(comparison.filter(pl.col("evaluated_source") == "logs")["benchmark"].to_list())
    return {f"logs_{b}": b in own for b in PROSE_BENCHMARKS}


#: How the book names each benchmark in its opening sentence (the MLPerf Training task names).
BENCHMARK_PHRASES = {
    "gpt3": "GPT-3 175B pre-training",
    "llama31_405b": "Llama 3.1 405B pre-training",
    "llama2_70b_lora": "Llama 2 70B LoRA fine-tuning",
    "llama31_8b": "Llama 3.1 8B pre-training",
    "flux1": "FLUX.1 text-to-image training",
    "stable_diffusion": "Stable Diffusion v2 text-to-image training",
    "dlrm_dcnv2": "DLRM-dcnv2 recommendation training",
    "rgat": "R-GAT graph neural network training",
    "retinanet": "RetinaNet object detection training",
    "bert": "BERT-large pre-training",
}


def benchmarks_studied(flags: dict[str, bool], others: tuple[str, ...] = ()) -> str:
    """The benchmarks the book's MLPerf chapter shows (:func:`logs_flags`), as prose in
    :data:`PROSE_BENCHMARKS` order: ``"Llama 3.1 405B pre-training"``, ``"GPT-3 175B pre-training
    and Llama 2 70B LoRA fine-tuning"``; ``"no benchmark"`` where none."""
    names = [BENCHMARK_PHRASES[b] for b in PROSE_BENCHMARKS if flags.get(f"logs_{b}")]
    # the other benchmarks of the cluster's own logs (``others``: their MLPerf ids), by name
    names += [BENCHMARK_PHRASES.get(b, md_text(b)) for b in others if b not in PROSE_BENCHMARKS]
    if not names:
        return "no benchmark"
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def telemetry_log_phrase(cfg, root: Path) -> str:
    """The MLPerf log whose phases the synthetic telemetry follows, as the book names it: the
    bundled default (:data:`DEFAULT_TELEMETRY_LOG`) as NVIDIA's Eos log, any other
    as the log the config names (its last three path parts, never an absolute path). Empty
    without telemetry."""
    if cfg.telemetry is None:
        return ""
    log = Path(cfg.telemetry.mlperf_log)
    try:
        if log.resolve() == (root / DEFAULT_TELEMETRY_LOG).resolve():
            return "NVIDIA's real Eos MLPerf v4.1 GPT-3 log"
    except OSError:
        pass
    shown = "/".join(log.parts[-3:])
    return f"the MLPerf log {md_code(shown)} that the config names (`telemetry.mlperf_log`)"


def input_phrases(cfg, root: Path) -> dict[str, str]:
    """The opening page's words for what a user's book is made of (``values.config.*``, Markdown):
    ``inputs_given``, the inputs the config names (``"MLPerf Training result logs, DCGM
    telemetry"``; synthetic ones said so), and ``reference_logs``, one or two sentences on where
    the MLPerf logs come from: the config's own folder for the cluster's (never its path), the
    MLCommons copies bundled with trainperf for the reference where it is the bundled one."""
    given = []
    if cfg.mlperf:
        given.append("MLPerf Training result logs")
    if cfg.published is not None:
        given.append("published results")
    if cfg.telemetry is not None:
        given.append("DCGM telemetry" + (" (synthetic)" if cfg.telemetry.synthetic else ""))
    if cfg.sacct:
        given.append("Slurm accounting" + (" (synthetic)" if cfg.sacct_synthetic else ""))
    name = md_text(cfg.name)
    ref = md_text(cfg.reference.name)
    try:
        bundled = Path(cfg.reference.mlperf).resolve() == (root / "data" / "mlperf").resolve()
    except OSError:
        bundled = False
    own = (
        f"The MLPerf logs of {name} are read from the folder the config names (`mlperf:`), "
        "and never modified. "
        if cfg.mlperf
        else ""
    )
    reference = (
        "The reference results are rows of the MLPerf record bundled with trainperf "
        "(`data/reference/mlperf_record.csv`), each with its repository, commit and log checksums."
        if not cfg.reference.pinned or cfg.reference.from_record
        else f"Those of the reference, {ref}, are copies of the MLCommons `training_results` "
        "repositories bundled with trainperf, each file with its commit and checksum."
        if bundled
        else f"Those of the reference, {ref}, are read from the folder the config names "
        "(`reference.mlperf`)."
    )
    return {
        "inputs_given": ", ".join(given) if given else "no input of its own",
        "reference_logs": own + reference,
    }
