"""``trainperf compare --config FILE [--format table|csv|json]``: the evaluated cluster against the
reference from the logs alone, in seconds, without executing a notebook or building the book.

The frame is :func:`trainperf.compare.cluster_comparison` of the config (the same rows as the
book's ``comparison.csv``); a comparison against another MLPerf round than the evaluated result's
own is said in one ``warning:`` line on stderr per row (:func:`trainperf.compare.round_warnings`).
"""

from __future__ import annotations

import json
import sys
import warnings

import polars as pl

from trainperf.compare import (
    BENCHMARK_NAMES,
    ComparisonWarning,
    cluster_comparison,
    comparison_summary,
    round_warnings,
)
from trainperf.config import ClusterConfig
from trainperf.record import read_record, record_path

FORMATS = ("table", "csv", "json")

#: The columns ``--format table`` shows, with their headers (every column: ``--format csv``).
TABLE_COLUMNS = {
    "benchmark": "Benchmark",
    "n_gpus": "GPUs",
    "evaluated_round": "Round",
    "evaluated_min": "Time (min)",
    "reference_round": "Ref. round",
    "reference_kind": "Reference",
    "reference_min": "Ref. time (min)",
    "ratio": "Ratio",
    "ratio_low": "Low",
    "ratio_high": "High",
}


def config_comparison(cfg: ClusterConfig) -> pl.DataFrame:
    """:func:`~trainperf.compare.cluster_comparison` of a validated config (its accelerator
    table, reference, round and precision), without warnings (see :func:`round_warnings`): like
    for like with the bundled MLPerf record where the config pins no ``reference:``, else against
    the pinned reference's logs; the record's rank on every row."""
    record = _record()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ComparisonWarning)
        return cluster_comparison(
            cfg.name,
            cfg.gpus_per_node,
            cfg.accelerator,
            cfg.reference.mlperf,
            mlperf=cfg.mlperf,
            published=cfg.published.path if cfg.published else None,
            precision=cfg.precision,
            reference_name=cfg.reference.name,
            reference_round=cfg.reference.round,
            reference_precision=cfg.reference.precision,
            accelerators=cfg.accelerator_table(),
            warn=False,
            record=record,
            like_for_like=not cfg.reference.pinned or cfg.reference.from_record,
            reference_record=(
                cfg.reference.record_filter(record)
                if cfg.reference.from_record and record is not None
                else None
            ),
        )


def _record() -> pl.DataFrame | None:
    """The bundled MLPerf record, or None where this installation has none (no rank then)."""
    path = record_path()
    return read_record(path) if path.is_file() else None


def evaluated_notes(frame: pl.DataFrame) -> list[str]:
    """One line per row whose evaluated side has a ``note`` (a run that failed or was damaged, no
    valid score, where the precision came from), the benchmark named as in the round warnings:
    ``GPT-3 175B at 512 GPUs: 1 of 3 runs failed ...``."""
    lines = []
    for r in frame.filter(pl.col("note").is_not_null()).iter_rows(named=True):
        at = f"at {r['n_gpus']:,} GPUs" if r["n_gpus"] else "at an unknown GPU count"
        lines.append(f"{BENCHMARK_NAMES.get(r['benchmark'], r['benchmark'])} {at}: {r['note']}")
    return lines


def _table(frame: pl.DataFrame) -> str:
    shown = frame.select(list(TABLE_COLUMNS)).with_columns(
        pl.col("benchmark").replace_strict(
            BENCHMARK_NAMES, default=pl.col("benchmark")
        ),  # names readers know
        pl.col("evaluated_min", "reference_min").round(2),
        pl.col("ratio", "ratio_low", "ratio_high").round(3),
    )
    rows = [list(TABLE_COLUMNS.values())] + [
        ["" if v is None else f"{v:,}" if isinstance(v, int) else str(v) for v in r]
        for r in shown.iter_rows()
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join([*lines, "", comparison_summary(frame)])


def run_compare(cfg: ClusterConfig, fmt: str = "table", out=None, err=None) -> int:
    """Print the comparison of ``cfg`` in ``fmt``; returns the exit status (0).

    ``table``: the columns of :data:`TABLE_COLUMNS`, rounded, then the summary sentence. ``csv``:
    every column of :data:`trainperf.compare.COMPARISON_SCHEMA`, full precision (``comparison.csv``).
    ``json``: ``{"config", "rows": [...], "summary", "warnings"}``. The round warnings are
    ``warning:`` lines on stderr, the evaluated side's notes (:func:`evaluated_notes`) ``note:``
    lines (json: both in ``warnings``).
    """
    out = out or sys.stdout
    err = err or sys.stderr
    frame = config_comparison(cfg)
    notes = round_warnings(frame)
    if fmt == "json":
        doc = {
            "config": cfg.source,
            "rows": frame.to_dicts(),
            "summary": comparison_summary(frame),
            "warnings": notes + evaluated_notes(frame),
        }
        out.write(json.dumps(doc, indent=2, default=str) + "\n")
        return 0
    for line in notes:
        print(f"warning: {line}", file=err)
    for line in evaluated_notes(frame):  # e.g. a damaged file of the user's that did not count
        print(f"note: {line}", file=err)
    if fmt == "csv":
        out.write(frame.write_csv())
    elif frame.is_empty():
        out.write("no results of the evaluated system (config keys `mlperf:` or `published:`)\n")
    else:
        out.write(_table(frame) + "\n")
    return 0
