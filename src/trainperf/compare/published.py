"""Published MLPerf rows (``data/reference/published_results.csv``) and the GPT-3 token budgets.

Sources: the rows' own ``source`` column; Eos results from ``mlcommons/training_results_v3.1@d06288b2``
and ``…_v4.1@b87b9e39``; the GPT-3 evaluation interval from
``mlcommons/training_policies@ad8c1ace:training_rules.adoc:477``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from trainperf.tables import read_table

__all__ = [
    "GPT3_EVAL_INTERVAL_TOKENS",
    "GPT3_MIN_TOKENS_GBS2048",
    "PUBLISHED_SCHEMA",
    "load_published_results",
    "load_reference",
    "select_row",
]

PUBLISHED_SCHEMA: dict[str, pl.DataType] = {
    "system": pl.String,
    "round": pl.String,
    "submitter": pl.String,
    "benchmark": pl.String,
    "n_gpus": pl.Int64,
    "n_nodes": pl.Int64,
    "minutes": pl.Float64,
    "tokens_to_converge": pl.Int64,
    "samples_to_converge": pl.Int64,
    "global_batch_size": pl.Int64,
    "precision": pl.String,
    "tokens_per_s_per_gpu": pl.Float64,
    "tflops_per_gpu": pl.Float64,
    "source": pl.String,
    "verified": pl.Boolean,
}
"""Schema of ``published_results.csv``: ``minutes`` is the MLPerf time to train
(time_to_train_min); ``tokens_per_s_per_gpu`` and ``tflops_per_gpu`` are step-level (training
steps only), model FLOPs with F_tok = 1.07644e12 for GPT-3."""

GPT3_EVAL_INTERVAL_TOKENS = 24576 * 2048
"""Tokens between GPT-3 evaluations: 24,576 sequences × 2048 = 50,331,648
(``mlcommons/training_policies@ad8c1ace:training_rules.adoc:477``)."""

GPT3_MIN_TOKENS_GBS2048 = 23 * GPT3_EVAL_INTERVAL_TOKENS
"""Smallest GPT-3 token budget seen at GBS 2048: 23 evaluations = 1,157,627,904 tokens
(the fewest evaluations of any GBS-2048 GPT-3 result in ``mlcommons/training_results_v3.0`` to
``…_v4.1``, counted from the last evaluation's ``epoch_num`` in those logs; the bundled GBS-2048
Eos logs took 24). A lower bound used when a row does not state its tokens."""


def load_published_results(path: str | Path | None = None) -> pl.DataFrame:
    """Load ``data/reference/published_results.csv`` with :data:`PUBLISHED_SCHEMA`.

    Returns:
        polars frame, one row per published result; columns and dtypes as in
        :data:`PUBLISHED_SCHEMA` (nulls where a value is not published).

    Raises:
        FileNotFoundError: missing file.
    """
    return read_table("published_results", path, PUBLISHED_SCHEMA)


def select_row(results: pl.DataFrame, **equals: Any) -> dict[str, Any]:
    """Return the single row of ``results`` whose columns equal the given values.

    Example: ``select_row(df, system="Eos", round="v4.1", benchmark="gpt3", n_nodes=64)``.

    Raises:
        ValueError: no row or more than one row matches (the message shows the filter).
    """
    sub = results
    for col, val in equals.items():
        sub = sub.filter(pl.col(col) == val)
    if sub.height != 1:
        raise ValueError(f"expected exactly one row for {equals}, found {sub.height}")
    return sub.row(0, named=True)


def load_reference(name: str, path: str | Path | None = None) -> pl.DataFrame:
    """Load a cited reference table ``data/reference/<name>.csv`` (see ``data/reference/README.md``).

    Args:
        name: ``memory_wall``, ``systems``, ``top500``, ``accelerators`` or ``published_results``.
        path: an explicit CSV path instead.

    Returns:
        The table as read by polars (column types inferred; every table has a source column).

    Raises:
        FileNotFoundError: no such table (the message lists the tables there are).
    """
    return read_table(name, path)
