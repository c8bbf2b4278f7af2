"""Numbers the notebooks compute for the book's prose: recorded per notebook, merged into values.yml."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import yaml

from trainperf.atomic import write_text_atomic

__all__ = ["merge_values", "record_values", "reference_mfu_values"]


def record_values(values: dict, path: str | Path | None) -> None:
    """Record numbers a notebook computed for the book's prose (JSON, written atomically).

    The main job passes each notebook a ``values_path``; after all notebooks ran it merges the files
    into ``<out>/values.yml`` as ``values: {<notebook>: {...}}``, which ``_quarto.yml`` reads through
    ``metadata-files``, so that chapters write ``{{< meta values.mlperf_runs.n_result_files >}}``
    instead of typing a number. The preview site resolves the same shortcodes.

    Args:
        values: flat mapping of names (letters, digits, ``_``) to numbers or short strings.
        path: where to write; empty or None: do nothing (a notebook run on its own).

    Returns nothing, so that a notebook's last cell shows no dump of the values.

    Raises:
        ValueError: a name that Quarto's ``meta`` shortcode could not address.
    """
    for key in values:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(key)):
            raise ValueError(f"value name {key!r}: use letters, digits and _ only")
    if path:
        write_text_atomic(json.dumps(values, indent=2, default=str), path)


def merge_values(values_dir: str | Path, target: str | Path) -> dict:
    """Merge ``<values_dir>/<notebook>.json`` files into ``target`` (YAML, ``values:`` mapping)."""

    merged = {
        p.stem: json.loads(p.read_text(encoding="utf-8"))
        for p in sorted(Path(values_dir).glob("*.json"))
    }
    write_text_atomic(
        yaml.safe_dump({"values": merged}, sort_keys=True, allow_unicode=True), target
    )
    return merged


def reference_mfu_values(thr, comparison=None) -> dict[str, str]:
    """The reference's GPT-3 step-level TFLOP/s and MFU per GPU count, for the prose: of the MLPerf
    round the book's GPT-3 comparison uses (``reference_round`` of its first ``gpt3`` row of
    ``comparison.csv``, :func:`trainperf.compare.reference_round_for`), else of the newest round
    at each GPU count.

    Args:
        thr: runs with throughput (``round``, ``benchmark``, ``n_accelerators``, ``status``,
            ``model_tflops_per_gpu_step``, ``mfu_fp8_dense_step``, ``mfu_bf16_dense_step``:
            fractions).
        comparison: ``comparison.csv`` as a frame (``benchmark``, ``reference_round``) or None.

    Returns:
        ``{"eos_<n>_tflops_step": "…", "eos_<n>_mfu_fp8_pct": "…", "eos_<n>_mfu_bf16_pct": "…",
        "eos_<n>_round": "v4.1"}`` for each GPU count ``n`` (medians over the successful runs).
    """
    runs = thr.filter(
        (pl.col("benchmark") == "gpt3")
        & pl.col("model_tflops_per_gpu_step").is_not_null()
        & (pl.col("status") == "success")
    )
    chosen = None
    if comparison is not None and "reference_round" in comparison.columns:
        rounds = comparison.filter(pl.col("benchmark") == "gpt3")["reference_round"].drop_nulls()
        chosen = rounds[0] if rounds.len() else None
    if chosen is not None and (runs["round"] == chosen).any():
        runs = runs.filter(pl.col("round") == chosen)
    best = (
        runs.group_by("round", "n_accelerators")
        .agg(
            pl.col(
                "model_tflops_per_gpu_step", "mfu_fp8_dense_step", "mfu_bf16_dense_step"
            ).median()
        )
        .sort("round", "n_accelerators")
        .unique(
            "n_accelerators", keep="last", maintain_order=True
        )  # the newest round at each scale
    )
    vals: dict[str, str] = {}
    for r in best.iter_rows(named=True):
        n = r["n_accelerators"]
        vals[f"eos_{n}_tflops_step"] = f"{r['model_tflops_per_gpu_step']:.0f}"
        vals[f"eos_{n}_mfu_fp8_pct"] = f"{100 * r['mfu_fp8_dense_step']:.1f}"
        vals[f"eos_{n}_mfu_bf16_pct"] = f"{100 * r['mfu_bf16_dense_step']:.1f}"
        vals[f"eos_{n}_round"] = r["round"]
    return vals
