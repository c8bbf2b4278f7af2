"""Failure taxonomy: how each job (or step) ended, from sacct fields, node events and GPU events.

The rules are a data table, ``trainperf/tables/failure_taxonomy.csv`` (:func:`taxonomy_rules`):
one row per rule with its precedence, the class it gives, the fields it reads, the condition in
words and its source (Slurm's job state codes, https://slurm.schedmd.com/job_state_codes.html;
NVIDIA's XID catalogue, https://docs.nvidia.com/deploy/xid-errors/index.html). The first rule that
matches a record, in precedence order, gives its class; :data:`RULES` holds the condition of each
rule as a polars expression, and a test checks that the table and the code name the same rules.

Classes (:data:`FAILURE_CLASSES`, an ordered ``Enum``): ``completed``, ``user_failure``
(non-zero exit, OUT_OF_MEMORY of the job's own memory limit), ``infra_failure`` (NODE_FAIL,
BOOT_FAIL, a node of the job down/drained during it, an infrastructure XID or uncorrectable
ECC/row-remap event on one of its nodes inside its window), ``timeout``, ``cancelled``,
``requeued``, ``preempted``, ``other``.

Assumptions (stated in the chapter too): sacct does not record which GPUs of a node a job had,
so a GPU event on a node counts for every job on that node in the window (exact for whole-node
allocations, the usual 8-GPU training job); infrastructure evidence overrides FAILED, CANCELLED,
TIMEOUT, REQUEUED and PREEMPTED (a job killed by a dead GPU often ends FAILED, and a hung job
TIMEOUT or CANCELLED), never COMPLETED (a completed job with an event in its window is marked in
``infra_event_in_window``); the window is ``[Start, End + grace_s]``, 60 s by default: a
node health check drains a node, or slurmctld marks it down, shortly after the job it killed
ended, while a longer grace blames jobs that had ended before an unrelated failure (the real
loopback fixture ``tests/data/slurm/real/reliability`` has jobs that ended 200 s before a node
went down).
"""

from __future__ import annotations

import polars as pl

from trainperf.jobs import FINAL_STATES
from trainperf.quality import QualityLog, empty_quality
from trainperf.reliability.events import GPU_EVENT_SCHEMA, NODE_EVENT_SCHEMA, ReliabilityWarning
from trainperf.tables import read_table

__all__ = [
    "FAILURE_CLASSES",
    "FAILURE_CLASS_NAMES",
    "FAILURE_CLASS_DTYPE",
    "INFRA_OVERRIDABLE_STATES",
    "RULES",
    "classification_quality",
    "classify",
    "taxonomy_rules",
]

#: Failure classes in the order tables and charts show them.
FAILURE_CLASSES: tuple[str, ...] = (
    "completed",
    "user_failure",
    "infra_failure",
    "timeout",
    "cancelled",
    "requeued",
    "preempted",
    "other",
)
FAILURE_CLASS_DTYPE = pl.Enum(list(FAILURE_CLASSES))

#: How a table names each class for a reader (the ids stay in the frames and CSV downloads).
FAILURE_CLASS_NAMES: dict[str, str] = {
    "completed": "Completed",
    "user_failure": "User failure",
    "infra_failure": "Infrastructure failure",
    "timeout": "Timeout",
    "cancelled": "Cancelled",
    "requeued": "Requeued",
    "preempted": "Preempted",
    "other": "Other",
}

#: Final states that infrastructure evidence turns into ``infra_failure``.
INFRA_OVERRIDABLE_STATES = ("FAILED", "CANCELLED", "TIMEOUT", "REQUEUED", "PREEMPTED")

_S = pl.col("state")
_EVIDENCE = pl.col("_node_event") | pl.col("_gpu_event")
_OVERRIDABLE = _S.is_in(list(INFRA_OVERRIDABLE_STATES))

#: Condition of each rule of ``failure_taxonomy.csv`` (columns as in the returned frame).
RULES: dict[str, pl.Expr] = {
    "damage_no_end": pl.col("_no_end"),
    "damage_negative_elapsed": pl.col("_negative"),
    "not_finished": ~_S.is_in(list(FINAL_STATES)) | _S.is_null(),
    "infra_state": _S.is_in(["NODE_FAIL", "BOOT_FAIL"]),
    "infra_node_event": _OVERRIDABLE & pl.col("_node_event"),
    "infra_gpu_event": _OVERRIDABLE & pl.col("_gpu_event"),
    "requeued": _S.is_in(["REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD"]),
    "user_oom": _S == "OUT_OF_MEMORY",
    "user_exit": _S == "FAILED",
    "completed_nonzero": (_S == "COMPLETED") & (pl.col("exit_code").fill_null(0) != 0),
    "timeout": _S.is_in(["TIMEOUT", "DEADLINE"]),
    "cancelled": _S == "CANCELLED",
    "preempted": _S == "PREEMPTED",
    "completed": _S == "COMPLETED",
    "other": pl.lit(True),
}


def taxonomy_rules() -> pl.DataFrame:
    """The rule table: ``precedence`` (Int64), ``rule_id``, ``rule_name`` (the rule in a few
    words, for a reader's table), ``failure_class`` (null: the record is not classified),
    ``fields``, ``condition``, ``source`` (all String), by precedence."""
    return read_table("failure_taxonomy").sort("precedence")


def _window_matches(
    records: pl.DataFrame, events: pl.DataFrame, time_col: str, grace_s: int
) -> pl.DataFrame:
    """(_row, evidence text) for events on a record's node (or of its job label) in its window."""
    win = records.filter(pl.col("start").is_not_null() & pl.col("end").is_not_null()).select(
        "_row", "JobID", "start", _until=pl.col("end") + pl.duration(seconds=grace_s), nodes="nodes"
    )
    if events.height == 0 or win.height == 0:
        return pl.DataFrame(schema={"_row": pl.UInt32, "_evidence": pl.String})
    by_host = (
        win.explode("nodes")
        .rename({"nodes": "hostname"})
        .filter(pl.col("hostname").is_not_null())
        .join(events, on="hostname", how="inner")
    )
    parts = [by_host]
    if "job_id" in events.columns:
        lab = (
            events.filter(pl.col("job_id").is_not_null())
            .with_columns(pl.col("job_id").str.split(","))
            .explode("job_id")
        )
        parts.append(win.drop("nodes").join(lab, left_on="JobID", right_on="job_id", how="inner"))
    cols = ["_row", "start", "_until", time_col, "_label"]
    m = pl.concat([p.select(cols) for p in parts], how="vertical")
    m = m.filter((pl.col(time_col) >= pl.col("start")) & (pl.col(time_col) <= pl.col("_until")))
    return (
        m.sort(time_col)
        .group_by("_row", maintain_order=True)
        .agg(_evidence=pl.col("_label").first())
    )


def classify(
    records: pl.DataFrame,
    *,
    node_events: pl.DataFrame | None = None,
    gpu_events: pl.DataFrame | None = None,
    grace_s: int = 60,
) -> pl.DataFrame:
    """Give every job (or step) record a failure class by the rules of ``failure_taxonomy.csv``.

    Args:
        records: ``jobs`` or ``steps`` of :class:`trainperf.slurm.SacctData` (columns ``JobID``,
            ``state``, ``exit_code``, ``start``, ``end``, ``elapsed_s``, ``nodes``, ``n_nodes``,
            ``n_gpus``; ``--duplicates`` dumps keep one record per attempt of a requeued job).
        node_events: :data:`trainperf.reliability.NODE_EVENT_SCHEMA` (``sacctmgr show event``);
            every row counts as a node going down/drained at ``start``.
        gpu_events: :data:`trainperf.reliability.GPU_EVENT_SCHEMA` (:func:`gpu_events`); only rows
            with ``infra`` true are evidence.
        grace_s: seconds after ``End`` an event still counts for the job (default 60 s; see the
            module docstring).

    Returns:
        The records with the added columns ``attempt`` (Int64, 1-based per ``JobID`` in start
        order), ``requeued`` (Boolean: a later record of the same ``JobID`` exists, or the state
        is REQUEUED), ``node_event`` / ``gpu_event`` (String: the first piece of evidence in the
        window, e.g. ``"DRAIN: Kill task failed"`` or ``"XID 79 GPU has fallen off the bus"``,
        null if none), ``infra_event_in_window`` (Boolean), ``failure_class``
        (:data:`FAILURE_CLASS_DTYPE`; null for damaged and unfinished records), ``rule_id``
        (String), ``reliability_flags`` (List[String]: ``no_end``, ``negative_elapsed``).

    Raises:
        ValueError: a required column is missing (the message names it).
    """
    for c in ("JobID", "state", "start", "end", "elapsed_s", "nodes"):
        if c not in records.columns:
            raise ValueError(f"records lack column {c!r} (see trainperf.slurm.JOB_COLUMNS)")
    r = records.with_row_index("_row")
    if "exit_code" not in r.columns:
        r = r.with_columns(exit_code=pl.lit(None, pl.Int64))
    final = _S.is_in(list(FINAL_STATES))
    r = r.with_columns(
        _no_end=(final & pl.col("end").is_null() & pl.col("start").is_not_null()).fill_null(False),
        _negative=(
            (pl.col("elapsed_s") < 0).fill_null(False)
            | (pl.col("end") < pl.col("start")).fill_null(False)
        ),
    )
    ne = node_events if node_events is not None else pl.DataFrame(schema=NODE_EVENT_SCHEMA)
    ne = ne.select(
        "hostname",
        ts="start",
        _label=pl.concat_str(
            [pl.col("state").fill_null("DOWN"), pl.lit(": "), pl.col("reason").fill_null("")]
        ).str.strip_chars(": "),
    )
    ge = gpu_events if gpu_events is not None else pl.DataFrame(schema=GPU_EVENT_SCHEMA)
    ge = ge.filter(pl.col("infra")).select(
        "hostname",
        "job_id",
        ts="timestamp",
        _label=pl.when(pl.col("kind") == "xid")
        .then(
            pl.concat_str(
                [
                    pl.lit("XID "),
                    pl.col("code").cast(pl.String),
                    pl.lit(" "),
                    pl.col("detail").fill_null(""),
                ]
            )
        )
        .otherwise(pl.col("kind").str.replace_all("_", " "))
        .str.strip_chars(),
    )
    ok = r.filter(~pl.col("_no_end") & ~pl.col("_negative"))
    nm = _window_matches(ok, ne, "ts", grace_s).rename({"_evidence": "node_event"})
    gm = _window_matches(ok, ge, "ts", grace_s).rename({"_evidence": "gpu_event"})
    r = r.join(nm, on="_row", how="left").join(gm, on="_row", how="left")
    r = r.with_columns(
        _node_event=pl.col("node_event").is_not_null(),
        _gpu_event=pl.col("gpu_event").is_not_null(),
    )
    rules = taxonomy_rules()
    ids = rules.get_column("rule_id").to_list()
    missing = set(ids) ^ set(RULES)
    if missing:  # the table and the code must name the same rules
        raise RuntimeError(f"failure_taxonomy.csv and RULES differ: {sorted(missing)}")
    cls = dict(zip(ids, rules.get_column("failure_class").to_list(), strict=True))
    expr_cls: pl.Expr | None = None
    expr_rule: pl.Expr | None = None
    for rid in ids:
        c = cls[rid]
        lit_c = pl.lit(c, pl.String) if c else pl.lit(None, pl.String)
        if expr_cls is None:
            expr_cls = pl.when(RULES[rid]).then(lit_c)
            expr_rule = pl.when(RULES[rid]).then(pl.lit(rid))
        else:
            expr_cls = expr_cls.when(RULES[rid]).then(lit_c)  # type: ignore[union-attr]
            expr_rule = expr_rule.when(RULES[rid]).then(pl.lit(rid))  # type: ignore[union-attr]
    assert expr_cls is not None and expr_rule is not None
    order = pl.col("start").rank("ordinal").over("JobID")
    n_rec = pl.len().over("JobID")
    r = r.with_columns(
        failure_class=expr_cls.otherwise(None).cast(FAILURE_CLASS_DTYPE),  # type: ignore[union-attr]
        rule_id=expr_rule.otherwise(None),  # type: ignore[union-attr]
        attempt=order.cast(pl.Int64).fill_null(1),
        requeued=(
            (order < n_rec).fill_null(False) | _S.is_in(["REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD"])
        ),
        infra_event_in_window=_EVIDENCE,
        reliability_flags=pl.concat_list(
            [
                pl.when(pl.col("_no_end"))
                .then(pl.lit(["no_end"]))
                .otherwise(pl.lit([], pl.List(pl.String))),
                pl.when(pl.col("_negative"))
                .then(pl.lit(["negative_elapsed"]))
                .otherwise(pl.lit([], pl.List(pl.String))),
            ]
        ),
    )
    return r.sort("_row").drop("_row", "_no_end", "_negative", "_node_event", "_gpu_event")


def classification_quality(classified: pl.DataFrame, source: str = "<sacct>") -> pl.DataFrame:
    """Quality rows (and :class:`ReliabilityWarning`\\s) for records the taxonomy could not use.

    One row per flag of ``reliability_flags`` that fired (``no_end``: a final state without an End
    time; ``negative_elapsed``: Elapsed < 0 or End before Start), action ``excluded`` (the record
    has no class and is left out of every rate), naming the first JobID and its dump line.

    Returns:
        A frame with :data:`trainperf.quality.QUALITY_SCHEMA` (empty when nothing fired).
    """
    if "reliability_flags" not in classified.columns or classified.height == 0:
        return empty_quality()
    log = QualityLog(ReliabilityWarning)
    words = {
        "no_end": "a final state but no End time",
        "negative_elapsed": "negative elapsed time (Elapsed < 0 or End before Start)",
    }
    for flag, what in words.items():
        hit = classified.filter(pl.col("reliability_flags").list.contains(flag))
        if hit.height == 0:
            continue
        first = hit.row(0, named=True)
        line = first.get("source_line")
        log.add(
            source,
            flag,
            "excluded",
            f"{hit.height} record(s) with {what}, e.g. JobID {first['JobID']}: left out of the failure rates",
            n_samples=hit.height,
            n_lines=hit.height,
            first_line=int(line) if line is not None else None,
        )
    return log.frame()
