"""Goodput: the effective training time ratio (ETTR) of long jobs, measured and expected.

ETTR is productive training time over the wall-clock time the run held (Kokolis et al.,
"Revisiting Reliability in Large-Scale Machine Learning Research Clusters", HPCA 2025,
arXiv 2410.21680, who define it and estimate its expected value from the failure rate, the job
size, the checkpoint interval and the restart overhead).

Expected value (:func:`expected_ettr`), the first-order model with those inputs: failures arrive
as a Poisson process of rate ``lambda = n_nodes x r_f`` (``r_f`` failures per node-day, the
independence assumption of :mod:`trainperf.reliability.rates`); each failure costs the restart
overhead ``u0`` (requeue, scheduling, start-up, checkpoint load) plus the work since the last
checkpoint, on average half an interval ``dt_cp / 2``; each checkpoint stalls training for
``c`` (0 for a fully asynchronous save). Over a wall time ``W`` with productive time ``T``:
``W = T (1 + c / dt_cp) + lambda W (u0 + dt_cp / 2)``, so

    ``E[ETTR] = T / W = (1 - lambda (u0 + dt_cp / 2)) / (1 + c / dt_cp)``, clipped at 0.

This is the standard derivation of Young (1974, "A first order approximation to the optimum
checkpoint interval", CACM 17(9)) and Daly (2006, FGCS 22(3)); its checkpoint interval with the
best ETTR for small ``lambda`` is Young's ``sqrt(2 c / lambda)`` (:func:`young_interval`). The
model holds while ``lambda (u0 + dt_cp)`` is well below 1 (few failures per checkpoint interval);
it ignores queueing after a failure (add it to ``u0``) and failures during restart.

Measured value (:func:`measured_ettr`): sacct does not know when checkpoints were written, so the
time lost at each interruption is the model's ``u0 + dt_cp / 2`` too, with the user's
parameters; what the accounting measures is the wall time of the whole run, the gaps between its
attempts and the number of interruptions.
"""

from __future__ import annotations

import math

import polars as pl

__all__ = [
    "ETTR_CURVE_SCHEMA",
    "DEFAULT_CHECKPOINT_INTERVAL_H",
    "DEFAULT_CHECKPOINT_WRITE_H",
    "DEFAULT_RESTART_OVERHEAD_H",
    "ettr_curve",
    "expected_ettr",
    "measured_ettr",
    "training_runs",
    "young_interval",
]

#: Defaults of the goodput parameters (our choices, not published values: set your own).
DEFAULT_CHECKPOINT_INTERVAL_H = 1.0
DEFAULT_RESTART_OVERHEAD_H = 0.5  # requeue + scheduling + NCCL/framework start + checkpoint load
DEFAULT_CHECKPOINT_WRITE_H = 2.0 / 60  # a 2-minute blocking save


def expected_ettr(
    n_nodes: float,
    failures_per_node_day: float,
    checkpoint_interval_h: float = DEFAULT_CHECKPOINT_INTERVAL_H,
    restart_overhead_h: float = DEFAULT_RESTART_OVERHEAD_H,
    checkpoint_write_h: float = DEFAULT_CHECKPOINT_WRITE_H,
) -> float:
    """Expected ETTR (0-1) of a job of ``n_nodes`` (formula in the module docstring).

    Args:
        n_nodes: nodes of the job.
        failures_per_node_day: ``r_f`` (e.g. :func:`infra_failure_rate` node-days rate / 1000).
        checkpoint_interval_h: ``dt_cp`` in hours (> 0).
        restart_overhead_h: ``u0`` in hours.
        checkpoint_write_h: ``c``, training stall per checkpoint, hours.

    Raises:
        ValueError: a negative input or a non-positive checkpoint interval.
    """
    if n_nodes < 0 or failures_per_node_day < 0 or restart_overhead_h < 0 or checkpoint_write_h < 0:
        raise ValueError("expected_ettr: inputs must be non-negative")
    if checkpoint_interval_h <= 0:
        raise ValueError("expected_ettr: checkpoint_interval_h must be > 0")
    lam_h = n_nodes * failures_per_node_day / 24.0  # failures per hour of the job
    ettr = (1 - lam_h * (restart_overhead_h + checkpoint_interval_h / 2)) / (
        1 + checkpoint_write_h / checkpoint_interval_h
    )
    return max(0.0, ettr)


def young_interval(
    n_nodes: float, failures_per_node_day: float, checkpoint_write_h: float
) -> float | None:
    """Young's (1974) checkpoint interval ``sqrt(2 c MTTF_job)`` in hours; None without failures
    or without a checkpoint cost."""
    lam_h = n_nodes * failures_per_node_day / 24.0
    if lam_h <= 0 or checkpoint_write_h <= 0:
        return None
    return math.sqrt(2 * checkpoint_write_h / lam_h)


ETTR_CURVE_SCHEMA: dict[str, pl.DataType] = {
    "n_nodes": pl.Int64,
    "n_gpus": pl.Int64,
    "checkpoint_interval_h": pl.Float64,
    "ettr": pl.Float64,
    "optimal": pl.Boolean,
}
"""Columns of :func:`ettr_curve`."""


def ettr_curve(
    failures_per_node_day: float,
    nodes: list[int] | tuple[int, ...],
    intervals_h: list[float] | tuple[float, ...] | None = None,
    *,
    restart_overhead_h: float = DEFAULT_RESTART_OVERHEAD_H,
    checkpoint_write_h: float = DEFAULT_CHECKPOINT_WRITE_H,
    gpus_per_node: int = 8,
) -> pl.DataFrame:
    """Expected ETTR against the checkpoint interval for several job sizes.

    Returns:
        :data:`ETTR_CURVE_SCHEMA`.
        ``n_nodes``, ``n_gpus`` (Int64), ``checkpoint_interval_h``, ``ettr`` (Float64, 0-1),
        ``optimal`` (Boolean: the grid point nearest Young's interval of that size), one row per
        size and interval. Default grid: 5 minutes to 24 hours, logarithmic (40 points).
    """
    if intervals_h is None:
        lo, hi, n = math.log(5 / 60), math.log(24.0), 40
        intervals_h = [math.exp(lo + (hi - lo) * i / (n - 1)) for i in range(n)]
    rows = []
    for nn in nodes:
        yi = young_interval(nn, failures_per_node_day, checkpoint_write_h)
        best = (
            min(range(len(intervals_h)), key=lambda i: abs(math.log(intervals_h[i] / yi)))
            if yi
            else None
        )
        for i, dt in enumerate(intervals_h):
            rows.append(
                {
                    "n_nodes": nn,
                    "n_gpus": nn * gpus_per_node,
                    "checkpoint_interval_h": float(dt),
                    "ettr": expected_ettr(
                        nn, failures_per_node_day, dt, restart_overhead_h, checkpoint_write_h
                    ),
                    "optimal": i == best,
                }
            )
    return pl.DataFrame(
        rows,
        schema=ETTR_CURVE_SCHEMA,
    )


def training_runs(classified: pl.DataFrame, *, max_gap_h: float = 12.0) -> pl.DataFrame:
    """Group job records into training runs: the attempts of one run, in start order.

    A run is the records of one ``JobID`` (the attempts a ``--duplicates`` dump lists for a
    requeued job), chained with the next job of the same ``User``, ``JobName`` and ``n_nodes``
    that starts within ``max_gap_h`` of the previous attempt's end after an interruption (a
    record whose class is ``infra_failure``, ``requeued``, ``timeout`` or ``preempted``: the
    resubmission of a failed run). Records without a class are left out.

    Returns:
        The records (``JobID``, ``start``, ``end``, ``elapsed_s``, ``n_nodes``, ``failure_class``)
        with ``run_id`` (String, the first attempt's JobID) and ``attempt_in_run`` (Int64).
    """
    keys = [c for c in ("User", "JobName") if c in classified.columns]
    d = classified.filter(
        pl.col("failure_class").is_not_null()
        & pl.col("start").is_not_null()
        & pl.col("end").is_not_null()
    ).select("JobID", *keys, "n_nodes", "start", "end", "elapsed_s", "failure_class")
    d = d.sort("start")
    grp = [*keys, "n_nodes"]
    interrupted = (
        pl.col("failure_class")
        .cast(pl.String)
        .is_in(["infra_failure", "requeued", "timeout", "preempted"])
    )
    prev_end = pl.col("end").shift(1).over(grp)
    prev_int = interrupted.shift(1).over(grp).fill_null(False)
    prev_id = pl.col("JobID").shift(1).over(grp)
    cont = (prev_id == pl.col("JobID")).fill_null(False) | (
        prev_int
        & ((pl.col("start") - prev_end) <= pl.duration(seconds=int(max_gap_h * 3600))).fill_null(
            False
        )
    )
    d = d.with_columns(_new=~cont).with_columns(
        _run=pl.col("_new").cast(pl.Int64).cum_sum().over(grp)
    )
    d = d.with_columns(
        run_id=pl.col("JobID").first().over([*grp, "_run"]),
        attempt_in_run=pl.int_range(1, pl.len() + 1).over([*grp, "_run"]).cast(pl.Int64),
    )
    return d.drop("_new", "_run")


def measured_ettr(
    classified: pl.DataFrame,
    *,
    failures_per_node_day: float | None = None,
    min_wall_h: float = 24.0,
    checkpoint_interval_h: float = DEFAULT_CHECKPOINT_INTERVAL_H,
    restart_overhead_h: float = DEFAULT_RESTART_OVERHEAD_H,
    checkpoint_write_h: float = DEFAULT_CHECKPOINT_WRITE_H,
    max_gap_h: float = 12.0,
) -> pl.DataFrame:
    """ETTR of the long training runs of a dump (wall time at least ``min_wall_h``).

    Per run (:func:`training_runs`): ``wall_h`` = last end - first start; ``allocated_h`` = sum
    of the attempts' run times; ``n_interruptions`` = attempts that ended in an interruption
    (``infra_failure``, ``requeued``, ``timeout``, ``preempted``) and were followed by another
    attempt, plus the last attempt if it ended in ``infra_failure``; ``lost_h`` =
    ``n_interruptions x (restart_overhead_h + checkpoint_interval_h / 2)`` (the model's loss per
    failure: sacct has no checkpoint times); checkpoint stalls =
    ``(allocated_h - lost_h) x c / (dt_cp + c)``; ``productive_h`` = the rest, at least 0;
    ``ettr = productive_h / wall_h``. ``expected_ettr`` is :func:`expected_ettr` at the run's
    nodes and ``failures_per_node_day`` (null if not given).

    Returns:
        ``run_id``, ``n_nodes``, ``n_attempts``, ``n_interruptions`` (Int64), ``first_start``,
        ``last_end`` (Datetime UTC), ``wall_h``, ``allocated_h``, ``gap_h`` (wall - allocated),
        ``lost_h``, ``productive_h``, ``ettr``, ``expected_ettr`` (Float64), longest wall first.
    """
    runs = training_runs(classified, max_gap_h=max_gap_h)
    interrupted = (
        pl.col("failure_class")
        .cast(pl.String)
        .is_in(["infra_failure", "requeued", "timeout", "preempted"])
    )
    is_last = pl.col("attempt_in_run") == pl.col("attempt_in_run").max().over("run_id")
    runs = runs.with_columns(
        _intr=(interrupted & ~is_last)
        | (is_last & (pl.col("failure_class").cast(pl.String) == "infra_failure"))
    )
    g = runs.group_by("run_id").agg(
        n_nodes=pl.col("n_nodes").first(),
        n_attempts=pl.len().cast(pl.Int64),
        n_interruptions=pl.col("_intr").sum().cast(pl.Int64),
        first_start=pl.col("start").min(),
        last_end=pl.col("end").max(),
        allocated_h=pl.col("elapsed_s").sum() / 3600,
    )
    per = restart_overhead_h + checkpoint_interval_h / 2
    stall = checkpoint_write_h / (checkpoint_interval_h + checkpoint_write_h)
    g = g.with_columns(
        wall_h=(pl.col("last_end") - pl.col("first_start")).dt.total_seconds() / 3600,
    ).filter(pl.col("wall_h") >= min_wall_h)
    g = g.with_columns(
        gap_h=pl.col("wall_h") - pl.col("allocated_h"),
        lost_h=pl.min_horizontal(pl.col("n_interruptions") * per, pl.col("allocated_h")),
    ).with_columns(
        productive_h=((pl.col("allocated_h") - pl.col("lost_h")) * (1 - stall)).clip(
            lower_bound=0.0
        )
    )
    g = g.with_columns(ettr=pl.col("productive_h") / pl.col("wall_h"))
    if failures_per_node_day is not None:
        g = g.with_columns(
            expected_ettr=pl.col("n_nodes").map_elements(
                lambda n: expected_ettr(
                    n,
                    failures_per_node_day,
                    checkpoint_interval_h,
                    restart_overhead_h,
                    checkpoint_write_h,
                ),
                return_dtype=pl.Float64,
            )
        )
    else:
        g = g.with_columns(expected_ettr=pl.lit(None, pl.Float64))
    cols = [
        "run_id",
        "n_nodes",
        "n_attempts",
        "n_interruptions",
        "first_start",
        "last_end",
        "wall_h",
        "allocated_h",
        "gap_h",
        "lost_h",
        "productive_h",
        "ettr",
        "expected_ettr",
    ]
    return (
        g.select(cols)
        .cast({"wall_h": pl.Float64, "allocated_h": pl.Float64})
        .sort("wall_h", descending=True)
    )
