"""Which hyperparameters the MLPerf rules fix, and what every submission logged for them.

The point of the table (the SAKURAONE talk, section 4: the benchmark fixes what affects convergence,
so that a comparison of two clusters compares infrastructure): one row per hyperparameter of a
benchmark, with what the closed-division rules allow and what each bundled submission logged.

What the rules fix is read from the machine-readable rules, mlperf-logging's compliance-checker
YAML of the round (``mlperf_logging/compliance_checker/training_<round>.0/closed_<benchmark>.yaml``,
through :func:`~trainperf.mlperf.rules.hyperparameter_rules`); the prose rules are the MLPerf
Training rules, ``mlcommons/training_policies`` ``training_rules.adoc`` (for GPT-3 at ``ad8c1ace``,
lines 309-322: the hyperparameters; 428-445: the allowed batch sizes and learning rates).
"""

from __future__ import annotations

import json

import polars as pl

from trainperf.benchmarks import benchmark_name
from trainperf.mlperf.hyperparameters import PARALLELISM_KEYS, hyperparameters, hyperparameters_long
from trainperf.mlperf.loader import Results

__all__ = ["RULES_URL", "convergence_hyperparameters", "rules_sentences"]

RULES_URL = "https://github.com/mlcommons/training_policies/blob/ad8c1ace/training_rules.adoc"
"""The MLPerf Training rules at the commit of the v4.1-era rules (GPT-3 hyperparameters: lines
309-322; allowed batch sizes and learning rates: lines 428-445)."""

SCHEMA = {
    "benchmark": pl.String,
    "key": pl.String,
    "unit": pl.String,
    "fixed_by_rules": pl.Boolean,
    "allowed": pl.String,
    "rule": pl.String,
    "values": pl.String,
    "n_systems": pl.Int64,
    "n_logged": pl.Int64,
    "same_in_all": pl.Boolean,
    "all_meet_rule": pl.Boolean,
    "ruleset": pl.String,
}


def _text(v: str | None) -> str | None:
    if v is None:
        return None
    x = json.loads(v)
    return x if isinstance(x, str) else json.dumps(x)


def convergence_hyperparameters(results: Results, benchmark: str | None = None) -> pl.DataFrame:
    """One row per (benchmark, hyperparameter): the rule, and the values the submissions logged.

    Rows: every key of :func:`~trainperf.mlperf.hyperparameters_long` for the benchmark, the keys
    the rules fix first (in the rules YAML order), then the others, then the parallelism keys
    (``tensor_parallelism``, ``pipeline_parallelism``, ... ; the rules leave them free), whose
    ``values`` say where they were found (log, systems JSON) or ``not in the log or systems JSON``.

    Args:
        results: :func:`~trainperf.mlperf.load_results` output.
        benchmark: one benchmark (default: every benchmark in ``results``).

    Returns:
        polars frame: benchmark, key, unit (String); fixed_by_rules (Boolean); allowed (String,
        the values the rules allow, ``", "``-joined, null unless fixed); rule (String, the rules
        YAML ``CHECK`` expression, "" when none); values (String: the distinct logged values,
        ``", "``-joined, each with the number of systems that logged it when they differ);
        n_systems (Int64, systems of the benchmark); n_logged (Int64, systems that logged the key);
        same_in_all (Boolean, one value across the systems that logged it); all_meet_rule
        (Boolean, every logged value is allowed; null unless fixed); ruleset (String, e.g.
        ``training_4.1.0``, the newest ruleset among the systems).
    """
    long = hyperparameters_long(results)
    if benchmark is not None:
        long = long.filter(pl.col("benchmark") == benchmark)
    wide = hyperparameters(results)
    out: list[dict] = []
    for (bench,), sub in long.group_by("benchmark", maintain_order=True):
        systems = sub.select("round", "system").unique()
        n_sys = systems.height
        ruleset = max(sub["ruleset"].drop_nulls().to_list(), default=None)
        keys = list(dict.fromkeys(sub["key"].to_list()))
        fixed = [k for k in keys if sub.filter(pl.col("key") == k)["fixed_by_rules"].any()]
        for key in fixed + [k for k in keys if k not in fixed]:
            rows = sub.filter(pl.col("key") == key)
            logged = rows.filter(pl.col("value").is_not_null())
            counts = logged.group_by("value", maintain_order=True).len()
            texts = [_text(v) for v in counts["value"]]
            if counts.height > 1:
                texts = [f"{t} ({n})" for t, n in zip(texts, counts["len"], strict=True)]
            is_fixed = bool(rows["fixed_by_rules"].any())
            allowed = rows["allowed"].drop_nulls()
            meets = logged["meets_rule"].drop_nulls()
            out.append(
                {
                    "benchmark": bench,
                    "key": key,
                    "unit": rows["unit"][0],
                    "fixed_by_rules": is_fixed,
                    "allowed": ", ".join(_text(json.dumps(a)) for a in json.loads(allowed[-1]))
                    if is_fixed and allowed.len()
                    else None,
                    "rule": rows["check"].drop_nulls()[-1]
                    if rows["check"].drop_nulls().len()
                    else "",
                    "values": ", ".join(texts) if texts else "not logged",
                    "n_systems": n_sys,
                    "n_logged": logged.select("round", "system").unique().height,
                    "same_in_all": counts.height <= 1,
                    "all_meet_rule": bool(meets.all()) if is_fixed and meets.len() else None,
                    "ruleset": ruleset,
                }
            )
        w = wide.filter(pl.col("benchmark") == bench)
        if w.select(pl.col(list(PARALLELISM_KEYS)).is_not_null().any()).row(0) == (False,) * len(
            PARALLELISM_KEYS
        ):
            # no system of the benchmark gives any: one row says so
            out.append(
                {
                    "benchmark": bench,
                    "key": "parallelism (TP, PP, VP, CP, EP, micro-batch)",
                    "unit": "GPUs",
                    "fixed_by_rules": False,
                    "allowed": None,
                    "rule": "",
                    "values": "not in the log or systems JSON",
                    "n_systems": n_sys,
                    "n_logged": 0,
                    "same_in_all": True,
                    "all_meet_rule": None,
                    "ruleset": ruleset,
                }
            )
            continue
        for col, key in PARALLELISM_KEYS.items():
            vals = w.filter(pl.col(col).is_not_null())
            texts = [
                f"{v} ({s})" for v, s in zip(vals[col], vals["parallelism_source"], strict=True)
            ]
            out.append(
                {
                    "benchmark": bench,
                    "key": key,
                    "unit": {"micro_batch_size": "samples", "vp": "chunks"}.get(col, "GPUs"),
                    "fixed_by_rules": False,
                    "allowed": None,
                    "rule": "",
                    "values": ", ".join(dict.fromkeys(texts)) or "not in the log or systems JSON",
                    "n_systems": n_sys,
                    "n_logged": vals.height,
                    "same_in_all": vals[col].n_unique() <= 1,
                    "all_meet_rule": None,
                    "ruleset": ruleset,
                }
            )
    return pl.DataFrame(out, schema=SCHEMA)


def rules_sentences(conv: pl.DataFrame) -> pl.DataFrame:
    """What the MLPerf rules fix and leave free, one plain-text sentence per benchmark of ``conv``.

    Counts are over the logged hyperparameter keys of :func:`convergence_hyperparameters` (its
    parallelism row, which no log of the bundled kind records, is counted apart): fixed keys are
    those the rules YAML of the round constrains (``fixed_by_rules``), free keys the others.

    Args:
        conv: :func:`convergence_hyperparameters` output.

    Returns:
        polars frame, one row per benchmark in ``conv`` order: ``benchmark`` (String), ``ruleset``
        (String), ``n_fixed`` and ``n_free`` (Int64, logged keys), ``fixed_keys`` (String, ``", "``-
        joined), ``global_batch_sizes`` (String, the logged values, or ``not logged``),
        ``layout_logged`` (Boolean: a parallelism value was found) and ``sentence`` (String).
    """
    rows = []
    for bench in conv["benchmark"].unique(maintain_order=True).to_list():
        b = conv.filter(pl.col("benchmark") == bench)
        par = b.filter(pl.col("key").str.starts_with("parallelism"))
        keys = b.filter(~pl.col("key").str.starts_with("parallelism"))
        fixed = keys.filter(pl.col("fixed_by_rules"))
        free = keys.filter(~pl.col("fixed_by_rules"))
        gbs = keys.filter(pl.col("key") == "global_batch_size")["values"]
        gbs_text = gbs[0] if gbs.len() and gbs[0] else "not logged"
        layout_logged = bool(par.height and (par["n_logged"] > 0).any())
        ruleset = b["ruleset"][0] if "ruleset" in b.columns and b.height else None
        name = benchmark_name(bench)
        fixed_list = ", ".join(fixed["key"].to_list())
        sentence = (
            f"For {name} the rules ({ruleset or 'the round of the logs'}) fix {fixed.height} of the "
            f"{keys.height} logged hyperparameters"
            + (f" ({fixed_list})" if fixed.height else "")
            + f" and leave {free.height} to the submitter, among them the global batch size "
            f"(these logs: {gbs_text})"
            + "; the parallel layout is free too, and "
            + ("these logs record it" if layout_logged else "these logs do not record it")
        )
        rows.append(
            {
                "benchmark": bench,
                "ruleset": ruleset,
                "n_fixed": fixed.height,
                "n_free": free.height,
                "fixed_keys": fixed_list,
                "global_batch_sizes": gbs_text,
                "layout_logged": layout_logged,
                "sentence": sentence,
            }
        )
    schema = {
        "benchmark": pl.String,
        "ruleset": pl.String,
        "n_fixed": pl.Int64,
        "n_free": pl.Int64,
        "fixed_keys": pl.String,
        "global_batch_sizes": pl.String,
        "layout_logged": pl.Boolean,
        "sentence": pl.String,
    }
    return pl.DataFrame(rows, schema=schema)
