"""The batch summary: one row per run with its status, duration, parameters and key numbers."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from trainperf.atomic import write_parquet_atomic, write_text_atomic
from trainperf.report.batch.grid import Grid

# --------------------------------------------------------------------------------------------------
# summary


def key_numbers(results: str | None) -> dict:
    out = {
        "result_rows": None,
        "n_success": None,
        "time_to_train_median_min": None,
        "time_to_train_n": None,
    }
    if not results or not Path(results).is_file():
        return out
    try:
        df = pl.read_parquet(results)
    except Exception:
        return out
    out["result_rows"] = df.height
    if "status" in df.columns:
        out["n_success"] = int((df["status"] == "success").sum())
    if "time_to_train_min" in df.columns and df["time_to_train_min"].dtype.is_numeric():
        ttt = df["time_to_train_min"].drop_nulls().drop_nans()
        out["time_to_train_n"] = ttt.len()
        out["time_to_train_median_min"] = float(ttt.median()) if ttt.len() else None
    return out


def _param_column(values: list):
    kinds = {type(v) for v in values if v is not None}
    if len(kinds) == 1 and kinds <= {bool, int, float, str}:
        return values
    if kinds <= {int, float}:
        return [None if v is None else float(v) for v in values]
    return [None if v is None else json.dumps(v, sort_keys=True) for v in values]


def summary_frame(rows: list[dict]) -> pl.DataFrame:
    schema = {
        "run": pl.String,
        "name": pl.String,
        "parameters": pl.String,
        "status": pl.String,
        "duration_s": pl.Float64,
        "notebook": pl.String,
        "results": pl.String,
        "error": pl.String,
        "result_rows": pl.Int64,
        "n_success": pl.Int64,
        "time_to_train_median_min": pl.Float64,
        "time_to_train_n": pl.Int64,
    }
    base = pl.DataFrame(
        [
            {
                **{k: r.get(k) for k in schema if k != "parameters"},
                "parameters": json.dumps(r["parameters"], sort_keys=True),
            }
            for r in rows
        ],
        schema=schema,
    )
    names: list[str] = []
    for r in rows:
        names += [k for k in r["parameters"] if k not in names]
    cols = []
    for key in names:
        col = key if key not in schema else f"param_{key}"
        values = _param_column([r["parameters"].get(key) for r in rows])
        cols.append(pl.Series(col, values, strict=False))
    frame = base.with_columns(cols) if cols else base
    return frame.select(
        "run",
        "name",
        "parameters",
        *[c.name for c in cols],
        *[c for c in schema if c not in {"run", "name", "parameters"}],
    )


def write_summary(grid: Grid, frame: pl.DataFrame) -> None:
    write_parquet_atomic(frame, grid.output / "summary.parquet")
    write_text_atomic(frame.write_csv(), grid.output / "summary.csv")
