"""The hyperparameters each submission logged, the parallelism it used, and what the MLPerf rules fix.

The logged values are the runs' own MLLOG events (``global_batch_size``, ``max_sequence_length``,
``gradient_accumulation_steps``, ``opt_*``, ``lora_*``, ...); what the rules say about each key is read
from mlperf-logging's compliance-checker rules YAML of the round (:func:`~trainperf.mlperf.rules.hyperparameter_rules`);
units and meanings are the package table ``trainperf/tables/mlperf_hyperparameters.csv`` (sources:
``mlperf_logging/mllog/constants.py``). Parallelism (TP/PP/VP/CP/EP, micro-batch) is taken from the
log's ``tensor_parallelism``/``pipeline_parallelism``/... events (mllog constants since v5.0) or the
same keys in the systems JSON; the bundled Eos logs (v3.1-v4.1) and their systems JSON carry none.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import polars as pl

from trainperf.mlperf.checks import as_count
from trainperf.mlperf.loader import Results, layout_from_path
from trainperf.mlperf.rules import hyperparameter_rules
from trainperf.tables import package_table

__all__ = ["PARALLELISM_KEYS", "hyperparameters", "hyperparameters_long"]

#: Column of :func:`hyperparameters` -> the MLLOG key (and systems-JSON key) it is read from.
PARALLELISM_KEYS = {
    "tp": "tensor_parallelism",
    "pp": "pipeline_parallelism",
    "vp": "virtual_pipeline_parallelism",
    "cp": "context_parallelism",
    "ep": "expert_parallelism",
    "micro_batch_size": "micro_batch_size",
}

_GROUP = ["round", "submitter", "system", "benchmark"]
_NOT_HYPERPARAMETERS = {"seed", "trained_samples"}

LONG_SCHEMA = {
    "round": pl.String,
    "submitter": pl.String,
    "system": pl.String,
    "benchmark": pl.String,
    "key": pl.String,
    "value": pl.String,
    "value_num": pl.Float64,
    "unit": pl.String,
    "n_runs": pl.Int64,
    "varies": pl.Boolean,
    "source": pl.String,
    "ruleset": pl.String,
    "required": pl.String,
    "check": pl.String,
    "fixed_by_rules": pl.Boolean,
    "allowed": pl.String,
    "meets_rule": pl.Boolean,
}


@cache
def _units() -> dict[str, str]:

    return {r["key"]: (r["unit"] or "") for r in package_table("mlperf_hyperparameters")}


def _is_hyperparameter(key: str, rule_keys: set[str]) -> bool:
    if key in _NOT_HYPERPARAMETERS or key.startswith("submission_"):
        return False
    return key in rule_keys or key in _units() or key.startswith(("opt_", "lora_"))


def _meets(value_text: str | None, allowed: str | None) -> bool | None:
    if allowed is None or value_text is None:
        return None
    value = json.loads(value_text)
    for a in json.loads(allowed):
        if (
            isinstance(a, int | float)
            and isinstance(value, int | float)
            and not isinstance(value, bool)
        ):
            if abs(value - a) <= 1e-9 * max(abs(a), abs(value), 1e-300):
                return True
        elif value == a:
            return True
    return False


def hyperparameters_long(results: Results) -> pl.DataFrame:
    """One row per (round, submitter, system, benchmark, hyperparameter key): logged value and rule.

    Keys: those the round's rules YAML names for the benchmark (logged or not), and every logged
    ``opt_*``/``lora_*`` key or key of ``mlperf_hyperparameters.csv``.

    Args:
        results: :func:`~trainperf.mlperf.loader.load_results` output.

    Returns:
        :data:`LONG_SCHEMA`: round, submitter, system, benchmark, key (String); value (String, JSON text of
        the first run's value; null when no run logged the key); value_num (Float64, the value when a
        number); unit (String: samples, tokens, steps, micro-batches, GPUs, "1" for dimensionless, ""
        when not a quantity or unknown); n_runs (Int64, runs that logged it); varies (Boolean, the
        runs logged different values); source (String, ``file:line`` of the value shown); ruleset
        (String, e.g. ``training_4.1.0``); required (String, the rules' REQ, "" when the rules do
        not name the key); check (String, the rules' CHECK expression); fixed_by_rules (Boolean: the
        rules pin the value); allowed (String, JSON list of the values the rules allow, null unless
        fixed); meets_rule (Boolean, the value is one of those; null unless fixed and logged).
    """
    runs = results.runs.select("result_file", *_GROUP)
    ev = results.events.select("file", "line", "key", "value", "value_num")
    first = (
        ev.join(runs, left_on="file", right_on="result_file", how="inner")
        .group_by("file", "key", maintain_order=True)
        .first()
    )
    out = []
    for group, sub in runs.group_by(_GROUP, maintain_order=True):
        rec = dict(zip(_GROUP, group, strict=True))
        rules = hyperparameter_rules(rec["benchmark"], rec["round"]) if rec["benchmark"] else None
        rule_rows = {r["key"]: r for r in rules.iter_rows(named=True)} if rules is not None else {}
        logged = first.filter(pl.col("file").is_in(sub["result_file"].implode()))
        keys = list(rule_rows) + sorted(
            k
            for k in logged["key"].unique().to_list()
            if k not in rule_rows and _is_hyperparameter(k, set(rule_rows))
        )
        ruleset = rules["ruleset"][0] if rules is not None and rules.height else None
        for key in keys:
            vals = logged.filter(pl.col("key") == key)
            rule = rule_rows.get(key, {})
            value = vals["value"][0] if vals.height else None
            out.append(
                {
                    **rec,
                    "key": key,
                    "value": value,
                    "value_num": vals["value_num"][0] if vals.height else None,
                    "unit": _units().get(key, ""),
                    "n_runs": vals["file"].n_unique(),
                    "varies": vals["value"].n_unique() > 1,
                    "source": f"{vals['file'][0]}:{vals['line'][0]}" if vals.height else None,
                    "ruleset": ruleset,
                    "required": rule.get("required", ""),
                    "check": rule.get("check", ""),
                    "fixed_by_rules": bool(rule.get("fixed", False)),
                    "allowed": rule.get("allowed"),
                    "meets_rule": _meets(value, rule.get("allowed")),
                }
            )
    return pl.DataFrame(out, schema=LONG_SCHEMA)


def _system_json_parallelism(result_file: str) -> dict[str, int]:
    layout = layout_from_path(Path(result_file))
    if layout["submitter_dir"] is None:
        return {}
    js = layout["submitter_dir"] / "systems" / f"{layout['system']}.json"
    try:
        desc = json.loads(js.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(desc, dict):
        return {}
    found = {col: as_count(desc.get(key), 1) for col, key in PARALLELISM_KEYS.items()}
    return {k: v for k, v in found.items() if v is not None}


def hyperparameters(results: Results) -> pl.DataFrame:
    """One row per (round, submitter, system, benchmark): the hyperparameters and parallelism used.

    Args:
        results: :func:`~trainperf.mlperf.loader.load_results` output.

    Returns:
        polars frame with, in order: round, submitter, system, benchmark (String); n_accelerators,
        n_runs (Int64); global_batch_size (Int64, samples per optimizer step), max_sequence_length
        (Int64, tokens per sample), gradient_accumulation_steps (Int64, micro-batches per optimizer
        step); dp_x_micro_batch (Int64, samples per micro-step over all data-parallel ranks:
        global_batch_size / gradient_accumulation_steps, which is data-parallel size x micro-batch
        size in Megatron-LM/NeMo, ``num_microbatches = global_batch_size // (micro_batch_size x
        data_parallel_size)``; null unless it divides); tp, pp, vp, cp, ep (Int64, GPUs per
        tensor/pipeline/context/expert-parallel group, VP model chunks per stage), micro_batch_size
        (Int64, samples), dp (Int64, n_accelerators / (tp x pp x cp) when all are known) — null when
        neither the log nor the systems JSON gives them; parallelism_source (String: "log",
        "systems JSON" or "not in the log or systems JSON"); ruleset (String); fixed_by_rules
        (String, the keys the rules pin, comma-separated); then one column per other logged
        hyperparameter key (``opt_*``, ``lora_*``, ...; Int64 when every value is an integer, Float64
        when a number, else String), named by its MLLOG key, the first run's value. :func:`hyperparameters_long` gives units, rules and sources.
    """
    long = hyperparameters_long(results)
    n_acc = results.runs.group_by(_GROUP, maintain_order=True).agg(
        pl.col("n_accelerators").drop_nulls().first(), pl.len().cast(pl.Int64).alias("n_runs")
    )
    rows = []
    for rec in n_acc.iter_rows(named=True):
        sub = long.filter(*(pl.col(k).eq_missing(rec[k]) for k in _GROUP))
        vals = dict(zip(sub["key"], sub["value"], strict=True))
        row = {**rec}

        def count(key, vals=vals):
            return as_count(json.loads(vals[key]), 1) if vals.get(key) is not None else None

        for k in ("global_batch_size", "max_sequence_length", "gradient_accumulation_steps"):
            row[k] = count(k)
        gbs, ga = row["global_batch_size"], row["gradient_accumulation_steps"]
        row["dp_x_micro_batch"] = gbs // ga if gbs and ga and gbs % ga == 0 else None
        par = {col: count(key) for col, key in PARALLELISM_KEYS.items()}
        source = "log" if any(v is not None for v in par.values()) else None
        if source is None:
            files = results.runs.filter(*(pl.col(k).eq_missing(rec[k]) for k in _GROUP))
            par.update(_system_json_parallelism(files["result_file"][0]))
            source = "systems JSON" if any(v is not None for v in par.values()) else None
        row.update(par)
        tp, pp, cp = par["tp"], par["pp"], par["cp"] or 1
        n = rec["n_accelerators"]
        row["dp"] = n // (tp * pp * cp) if n and tp and pp and n % (tp * pp * cp) == 0 else None
        row["parallelism_source"] = source or "not in the log or systems JSON"
        row["ruleset"] = sub["ruleset"][0] if sub.height else None
        row["fixed_by_rules"] = ",".join(sub.filter(pl.col("fixed_by_rules"))["key"].to_list())
        rows.append((row, sub))
    return _widen(rows)


def _widen(rows: list[tuple[dict, pl.DataFrame]]) -> pl.DataFrame:
    fixed_cols = {
        **{k: pl.String for k in _GROUP},
        "n_accelerators": pl.Int64,
        "n_runs": pl.Int64,
        "global_batch_size": pl.Int64,
        "max_sequence_length": pl.Int64,
        "gradient_accumulation_steps": pl.Int64,
        "dp_x_micro_batch": pl.Int64,
        **{k: pl.Int64 for k in PARALLELISM_KEYS},
        "dp": pl.Int64,
        "parallelism_source": pl.String,
        "ruleset": pl.String,
        "fixed_by_rules": pl.String,
    }
    skip = set(fixed_cols) | set(PARALLELISM_KEYS.values())
    extra: dict[str, list] = {}
    for _, sub in rows:
        for key in sub["key"].to_list():
            if key not in skip:
                extra.setdefault(key, [])
    kinds = {}
    for key in extra:
        values = [v for _, sub in rows for v in sub.filter(pl.col("key") == key)["value"].to_list()]
        decoded = [json.loads(v) for v in values if v is not None]
        if decoded and all(type(v) is int and abs(v) < 2**63 for v in decoded):
            kinds[key] = pl.Int64
        elif all(isinstance(v, int | float) and not isinstance(v, bool) for v in decoded):
            kinds[key] = pl.Float64
        else:
            kinds[key] = pl.String
    data = []
    for row, sub in rows:
        vals = dict(zip(sub["key"], sub["value"], strict=True))
        for key, kind in kinds.items():
            v = json.loads(vals[key]) if vals.get(key) is not None else None
            if v is not None and kind == pl.Float64:
                v = float(v)
            elif v is not None and kind == pl.String and not isinstance(v, str):
                v = json.dumps(v)
            row[key] = v
        data.append(row)
    return pl.DataFrame(data, schema={**fixed_cols, **kinds})
