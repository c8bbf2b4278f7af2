"""``trainperf runs PATH``: the runs, scores and data quality of MLPerf logs, for people or scripts.

Formats:

* ``table`` (default): for a terminal: one row per run, then a scores section, then a data-quality
  section when a check fired; human headers with units, rounded numbers, nothing cut off.
* ``csv``: one table (``--table runs|scores|quality``, default runs) with the library's column
  names and full precision; times as ISO 8601 UTC; empty fields for null.
* ``json``: one object ``{"trainperf_version", "path", "runs", "scores", "quality"}``, each a list
  of records with the library's column names, full precision, null for missing, times ISO 8601 UTC.

Columns: ``runs`` as documented by :func:`trainperf.mlperf.load_results`, ``scores`` by
:func:`trainperf.mlperf.score_runs`, ``quality`` by :data:`trainperf.quality.QUALITY_SCHEMA`.
A damaged file is a ``parse_error`` run row (its message in the quality rows); the command still
prints everything else and exits 0. Warnings go to stderr, one line each.
"""

from __future__ import annotations

import io
import json
import math
import sys
import warnings

__all__ = ["FORMATS", "TABLES", "render", "run_command"]

FORMATS = ("table", "csv", "json")
TABLES = ("runs", "scores", "quality")


def _runs_table(res) -> str:
    # deferred: `trainperf --help` imports this module for its parser; polars, tabulate and the
    # MLPerf reader (~2.4 s, -X importtime) load only when `trainperf runs` runs
    from trainperf.report.display import Col

    runs = res.runs.with_columns(
        run=res.runs["result_file"].map_elements(
            lambda p: p.replace("\\", "/").rsplit("/", 1)[-1], return_dtype=str
        )
    )
    cols = {
        "round": "Round",
        "system": "System",
        "benchmark": "Benchmark",
        "run": "Run",
        "n_accelerators": "GPUs",
        "status": "Status",
        "time_to_train_min": Col("Time to train (min)", 3),
        "n_evals": "Evals",
        "eval_value": Col("Final eval", 4),
        "eval_target": "Target",
        "eval_target_met": "Target met",
        "n_warnings": "Warnings",
    }
    return _plain(runs, cols)


def _scores_table(res) -> str:
    # deferred: polars, tabulate and the MLPerf reader load only when `trainperf runs` runs
    from trainperf.report.display import Col

    cols = {
        "round": "Round",
        "system": "System",
        "benchmark": "Benchmark",
        "n_accelerators": "GPUs",
        "n_runs": "Runs",
        "n_valid_runs": "Successful",
        "n_required_runs": "Required",
        "score_min": Col("Score (min)", 3),
        "note": "Note",
    }
    return _plain(res.scores, cols)


def _quality_table(res) -> str:
    cols = {
        "source": "File",
        "check": "Check",
        "action": "Action",
        "n_samples": "Count",
        "first_line": "First line",
        "detail": "Detail",
    }
    return _plain(res.quality, cols)


def _plain(frame, cols) -> str:
    """A plain-text table (tabulate ``simple``): no index, no dtype row, every character kept."""
    # deferred: polars, tabulate and the MLPerf reader load only when `trainperf runs` runs
    from tabulate import tabulate

    from trainperf.report.display import Col, format_value

    spec = {c: (Col(v) if isinstance(v, str) else v) for c, v in cols.items()}
    rows = [
        [format_value(r[c], col, markdown=False) for c, col in spec.items()]
        for r in frame.select(list(spec)).iter_rows(named=True)
    ]
    align = ["right" if frame.schema[c].is_numeric() else "left" for c in spec]
    return tabulate(
        rows,
        headers=[col.header for col in spec.values()],
        tablefmt="simple",
        colalign=align,
        disable_numparse=True,
    )


def _records(frame) -> list[dict]:
    # deferred: polars, tabulate and the MLPerf reader load only when `trainperf runs` runs
    import polars as pl

    out = frame.with_columns(
        pl.col(c).dt.to_string("%Y-%m-%dT%H:%M:%S%.3fZ")
        for c, t in frame.schema.items()
        if isinstance(t, pl.Datetime)
    ).to_dicts()
    for rec in out:  # JSON has no NaN or infinity
        for k, v in rec.items():
            if isinstance(v, float) and not math.isfinite(v):
                rec[k] = None
    return out


def render(
    res, fmt: str = "table", table: str = "runs", path: str = "", version: str | None = None
) -> str:
    """The text ``trainperf runs`` prints for a :class:`trainperf.mlperf.Results`.

    ``version`` is the trainperf version the JSON document names.

    Raises:
        ValueError: unknown ``fmt`` or ``table``.
    """
    if fmt not in FORMATS:
        raise ValueError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if table not in TABLES:
        raise ValueError(f"--table {table!r}: expected one of {', '.join(TABLES)}")
    if fmt == "json":
        doc = {
            "trainperf_version": version,
            "path": path,
            **{t: _records(getattr(res, t)) for t in TABLES},
        }
        return json.dumps(doc, indent=2, allow_nan=False) + "\n"
    if fmt == "csv":
        # deferred: polars, tabulate and the MLPerf reader load only when `trainperf runs` runs
        import polars as pl

        frame = getattr(res, table)
        frame = frame.with_columns(
            pl.col(c).dt.to_string("%Y-%m-%dT%H:%M:%S%.3fZ")
            for c, t in frame.schema.items()
            if isinstance(t, pl.Datetime)
        )
        buf = io.StringIO()
        frame.write_csv(buf, float_precision=None)
        return buf.getvalue()
    parts = [
        f"MLPerf runs under {path} ({res.runs.height} result file{'' if res.runs.height == 1 else 's'})\n",
        _runs_table(res),
        "\nScores (MLPerf rules: olympic mean of the successful runs)\n",
        _scores_table(res),
    ]
    if res.quality.height:
        parts += [
            "\nData quality (checks that fired; details in --format json)\n",
            _quality_table(res),
        ]
    return "\n".join(parts) + "\n"


def run_command(
    path: str, fmt: str = "table", table: str = "runs", version: str | None = None
) -> int:
    """Load ``path`` and print it in ``fmt`` to stdout (warnings to stderr). Returns 0.

    Raises:
        FileNotFoundError: no result file under ``path``.
        ValueError: unknown format or table.
    """
    # deferred: polars, tabulate and the MLPerf reader load only when `trainperf runs` runs
    from trainperf.mlperf import load_results

    if fmt not in FORMATS or table not in TABLES:
        render(None, fmt, table)  # raises the one-line error before any work
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = load_results(path, progress=sys.stderr.isatty())
    for w in res.warnings:
        print(f"warning: {w}", file=sys.stderr)
    sys.stdout.write(render(res, fmt, table, str(path), version))
    return 0
