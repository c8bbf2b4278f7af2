"""Failure rates the reliability studies report, from a classified job frame.

Input everywhere: the output of :func:`trainperf.reliability.classify` (job records with
``failure_class``, ``n_nodes``, ``n_gpus``, ``elapsed_s``); records without a class (damaged or
unfinished) are left out, and so are records that never ran (``elapsed_s`` 0 or null).

Formulas and sources:

* Job failure rate of a size bin = failed jobs / finished jobs of the bin, with the exact
  Clopper-Pearson binomial interval (Clopper and Pearson, Biometrika 26, 1934):
  ``[B(a/2; k, n-k+1), B(1-a/2; k+1, n-k)]`` (``B`` the beta quantile).
* Infrastructure failures per 1,000 GPU-days (node-days) = 1000 x failures / exposure, exposure
  = sum of ``n_gpus x elapsed_s / 86400`` (``n_nodes x ...``) over the jobs, the measure of
  Kokolis et al., "Revisiting Reliability in Large-Scale Machine Learning Research Clusters"
  (HPCA 2025, arXiv 2410.21680), who give failure rates per node-day of job run time. Interval:
  the exact (Garwood, Biometrika 28, 1936) Poisson interval for a count ``k``:
  ``[chi2(a/2; 2k) / 2, chi2(1-a/2; 2k+2) / 2]`` divided by the exposure, computed with
  ``scipy.stats.chi2`` (scipy is in the environment; without it the same quantiles are found by
  bisection on the Poisson distribution function, which is the definition of the interval).
* MTTF per node = node-hours of exposure / infrastructure failures (the inverse rate); under
  the independence assumption (every node fails as a Poisson process of the same rate, a job
  fails when any of its nodes fails; the series model of Kokolis et al.),
  ``MTTF_job(N) = MTTF_node / N`` for a job of ``N`` nodes. The measured MTTF of jobs of a size
  bin is their job-hours / their infrastructure failures; the projection for the bin uses the
  bin's time-weighted mean node count ``node_hours / job_hours``.

Assumptions (in the chapter too): failures are independent between nodes and constant in time
(no burn-in, no lemon nodes); the exposure is job run time, so failures of idle nodes are not in
the job rates (node events give those); a failure is counted once per job record.
"""

from __future__ import annotations

import math

import polars as pl

from trainperf.jobs import size_bin

__all__ = [
    "INFRA_FAILURE_RATE_SCHEMA",
    "PROJECTED_MTTF_SCHEMA",
    "GPU_SIZE_BINS",
    "clopper_pearson",
    "failure_rate_by_size",
    "garwood_interval",
    "infra_failure_rate",
    "mttf_by_size",
    "projected_mttf",
]

#: Job-size bins in GPUs (upper bounds inclusive); with 8 GPUs per node the first is one node.
GPU_SIZE_BINS: tuple[tuple[str, int | None], ...] = (
    ("1-8", 8),
    ("9-16", 16),
    ("17-32", 32),
    ("33-128", 128),
    ("129-256", 256),
    ("257-512", 512),
    (">512", None),
)
GPU_SIZE_BIN_DTYPE = pl.Enum([b for b, _ in GPU_SIZE_BINS])
_FAILED = ("user_failure", "infra_failure", "timeout")


def _poisson_cdf(k: int, mu: float) -> float:
    term = math.exp(-mu)
    total = term
    for i in range(1, k + 1):
        term *= mu / i
        total += term
    return min(total, 1.0)


def garwood_interval(k: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact (Garwood 1936) confidence interval of a Poisson mean from an observed count ``k``.

    Returns:
        (lower, upper) of the expected count; lower is 0 for ``k = 0``. Example (the published
        table values): ``k = 2`` at 95 % gives (0.2422, 7.2247).

    Raises:
        ValueError: ``k < 0`` or confidence outside (0, 1).
    """
    if k < 0 or not 0 < confidence < 1:
        raise ValueError(
            f"garwood_interval: need k >= 0 and 0 < confidence < 1, got {k}, {confidence}"
        )
    a = 1 - confidence
    try:
        # deferred: scipy.stats costs seconds at import (-X importtime); only the intervals use it
        from scipy.stats import chi2  # noqa: PLC0415

        lo = 0.0 if k == 0 else float(chi2.ppf(a / 2, 2 * k) / 2)
        hi = float(chi2.ppf(1 - a / 2, 2 * k + 2) / 2)
        return lo, hi
    except ImportError:  # pragma: no cover - scipy is in the project's environment
        pass

    def solve(f, target: float) -> float:  # f decreasing in mu
        lo_mu, hi_mu = 0.0, max(10.0, 10.0 * (k + 1))
        for _ in range(200):
            mid = (lo_mu + hi_mu) / 2
            if f(mid) > target:
                lo_mu = mid
            else:
                hi_mu = mid
        return (lo_mu + hi_mu) / 2

    # lower: P(X >= k; L) = a/2, i.e. cdf(k-1; L) = 1 - a/2; upper: cdf(k; U) = a/2
    lo = 0.0 if k == 0 else solve(lambda mu: _poisson_cdf(k - 1, mu), 1 - a / 2)
    hi = solve(lambda mu: _poisson_cdf(k, mu), a / 2)
    return lo, hi


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float | None, float | None]:
    """Exact binomial interval of a proportion ``k / n`` (Clopper and Pearson 1934).

    Returns:
        (lower, upper) in 0-1; (None, None) for ``n = 0``. Example: ``k = 1, n = 4`` at 95 %
        gives (0.0063, 0.8059).
    """
    if n == 0:
        return None, None
    # deferred: scipy.stats costs seconds at import (-X importtime); only the intervals use it
    from scipy.stats import beta  # noqa: PLC0415

    a = 1 - confidence
    lo = 0.0 if k == 0 else float(beta.ppf(a / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - a / 2, k + 1, n - k))
    return lo, hi


def _gpu_bin(n: pl.Expr) -> pl.Expr:
    expr = pl.when(n.is_null() | (n < 1)).then(None)
    for label, hi in GPU_SIZE_BINS:
        if hi is not None:
            expr = expr.when(n <= hi).then(pl.lit(label))
    return expr.otherwise(pl.lit(GPU_SIZE_BINS[-1][0])).cast(GPU_SIZE_BIN_DTYPE)


def _usable(classified: pl.DataFrame) -> pl.DataFrame:
    return classified.filter(
        pl.col("failure_class").is_not_null()
        & pl.col("elapsed_s").is_not_null()
        & (pl.col("elapsed_s") > 0)
    )


def failure_rate_by_size(classified: pl.DataFrame, confidence: float = 0.95) -> pl.DataFrame:
    """Job failure rate by job size in GPUs, with counts per class.

    Returns:
        One row per occupied :data:`GPU_SIZE_BINS` bin, in size order: ``size_bin`` (Enum),
        ``n_jobs``, ``n_completed``, ``n_user_failure``, ``n_infra_failure``, ``n_timeout``,
        ``n_cancelled``, ``n_requeued``, ``n_failed`` (Int64; failed = user + infra + timeout),
        ``failure_rate``, ``failure_rate_lo``, ``failure_rate_hi``, ``infra_failure_rate``,
        ``infra_failure_rate_lo``, ``infra_failure_rate_hi`` (Float64, 0-1, Clopper-Pearson at
        ``confidence``). Cancelled and requeued jobs count in ``n_jobs`` (they ran and could
        have failed).
    """
    u = _usable(classified).with_columns(size_bin=_gpu_bin(pl.col("n_gpus")))
    u = u.filter(pl.col("size_bin").is_not_null())
    fc = pl.col("failure_class").cast(pl.String)
    g = (
        u.group_by("size_bin")
        .agg(
            n_jobs=pl.len().cast(pl.Int64),
            n_completed=(fc == "completed").sum().cast(pl.Int64),
            n_user_failure=(fc == "user_failure").sum().cast(pl.Int64),
            n_infra_failure=(fc == "infra_failure").sum().cast(pl.Int64),
            n_timeout=(fc == "timeout").sum().cast(pl.Int64),
            n_cancelled=(fc == "cancelled").sum().cast(pl.Int64),
            n_requeued=(fc == "requeued").sum().cast(pl.Int64),
            n_failed=fc.is_in(list(_FAILED)).sum().cast(pl.Int64),
        )
        .sort("size_bin")
    )
    rows = []
    for r in g.iter_rows(named=True):
        lo, hi = clopper_pearson(r["n_failed"], r["n_jobs"], confidence)
        ilo, ihi = clopper_pearson(r["n_infra_failure"], r["n_jobs"], confidence)
        rows.append(
            {
                **r,
                "failure_rate": r["n_failed"] / r["n_jobs"],
                "failure_rate_lo": lo,
                "failure_rate_hi": hi,
                "infra_failure_rate": r["n_infra_failure"] / r["n_jobs"],
                "infra_failure_rate_lo": ilo,
                "infra_failure_rate_hi": ihi,
            }
        )
    schema = {
        **dict(g.schema),
        **{
            c: pl.Float64
            for c in (
                "failure_rate",
                "failure_rate_lo",
                "failure_rate_hi",
                "infra_failure_rate",
                "infra_failure_rate_lo",
                "infra_failure_rate_hi",
            )
        },
    }
    return pl.DataFrame(rows, schema=schema)


INFRA_FAILURE_RATE_SCHEMA: dict[str, pl.DataType] = {
    "unit": pl.String,
    "n_failures": pl.Int64,
    "exposure": pl.Float64,
    "rate_per_1000": pl.Float64,
    "rate_lo_per_1000": pl.Float64,
    "rate_hi_per_1000": pl.Float64,
    "mttf_h": pl.Float64,
    "mttf_lo_h": pl.Float64,
    "mttf_hi_h": pl.Float64,
}
"""Columns of :func:`infra_failure_rate`."""


def infra_failure_rate(classified: pl.DataFrame, confidence: float = 0.95) -> pl.DataFrame:
    """Infrastructure failures per 1,000 GPU-days and per 1,000 node-days, with exact intervals.

    Returns:
        :data:`INFRA_FAILURE_RATE_SCHEMA`.
        Two rows, ``unit`` ``"GPU-days"`` and ``"node-days"``: ``n_failures`` (Int64,
        ``infra_failure`` records), ``exposure`` (Float64, GPU-days or node-days of job run time),
        ``rate_per_1000`` (failures per 1,000 units), ``rate_lo_per_1000``, ``rate_hi_per_1000``
        (Garwood interval at ``confidence``), ``mttf_h`` (Float64, hours: exposure x 24 /
        failures, per GPU or per node; null without failures), ``mttf_lo_h``, ``mttf_hi_h``
        (the interval inverted; ``mttf_hi_h`` null for zero failures). Rates are null without
        exposure.
    """
    u = _usable(classified)
    k = int((u.get_column("failure_class").cast(pl.String) == "infra_failure").sum())
    gpu_days = (
        float((u.get_column("n_gpus").fill_null(0) * u.get_column("elapsed_s")).sum()) / 86400
    )
    node_days = (
        float((u.get_column("n_nodes").fill_null(0) * u.get_column("elapsed_s")).sum()) / 86400
    )
    lo, hi = garwood_interval(k, confidence)
    rows = []
    for unit, ex in (("GPU-days", gpu_days), ("node-days", node_days)):
        ok = ex > 0
        rows.append(
            {
                "unit": unit,
                "n_failures": k,
                "exposure": ex,
                "rate_per_1000": 1000 * k / ex if ok else None,
                "rate_lo_per_1000": 1000 * lo / ex if ok else None,
                "rate_hi_per_1000": 1000 * hi / ex if ok else None,
                "mttf_h": 24 * ex / k if ok and k else None,
                "mttf_lo_h": 24 * ex / hi if ok else None,
                "mttf_hi_h": 24 * ex / lo if ok and lo > 0 else None,
            }
        )
    return pl.DataFrame(
        rows,
        schema=INFRA_FAILURE_RATE_SCHEMA,
    )


def mttf_by_size(
    classified: pl.DataFrame,
    *,
    mttf_node_h: float | None = None,
    min_failures: int = 3,
    confidence: float = 0.95,
) -> pl.DataFrame:
    """Measured MTTF of the jobs of each size bin (in nodes) against the independence projection.

    Args:
        classified: :func:`trainperf.reliability.classify` output.
        mttf_node_h: MTTF per node in hours; None: from the same frame
            (:func:`infra_failure_rate`, ``node-days`` row).
        min_failures: a bin's measured MTTF is shown only with at least this many infrastructure
            failures (``enough`` false otherwise; the count and exposure are still given).

    Returns:
        One row per node-size bin of :data:`trainperf.jobs.SIZE_BINS` with jobs: ``size_bin``
        (Enum), ``n_jobs``, ``n_infra_failures`` (Int64), ``job_hours``, ``node_hours``
        (Float64, h), ``mean_nodes`` (Float64, ``node_hours / job_hours``), ``projected_mttf_h``
        (``mttf_node_h / mean_nodes``), ``measured_mttf_h``, ``measured_mttf_lo_h``,
        ``measured_mttf_hi_h`` (job-hours / failures and its Garwood interval; null unless
        ``enough``), ``expected_failures`` (``node_hours / mttf_node_h``: the independence
        model's count for the bin), ``enough`` (Boolean).
    """

    if mttf_node_h is None:
        r = infra_failure_rate(classified, confidence).filter(pl.col("unit") == "node-days")
        mttf_node_h = r["mttf_h"][0] if r.height else None
    u = (
        _usable(classified)
        .with_columns(size_bin=size_bin("n_nodes"))
        .filter(pl.col("size_bin").is_not_null())
    )
    g = (
        u.group_by("size_bin")
        .agg(
            n_jobs=pl.len().cast(pl.Int64),
            n_infra_failures=(pl.col("failure_class").cast(pl.String) == "infra_failure")
            .sum()
            .cast(pl.Int64),
            job_hours=(pl.col("elapsed_s").sum() / 3600).cast(pl.Float64),
            node_hours=((pl.col("elapsed_s") * pl.col("n_nodes")).sum() / 3600).cast(pl.Float64),
        )
        .sort("size_bin")
    )
    rows = []
    for r in g.iter_rows(named=True):
        k = r["n_infra_failures"]
        enough = k >= min_failures
        lo, hi = garwood_interval(k, confidence)
        mean_nodes = r["node_hours"] / r["job_hours"] if r["job_hours"] else None
        rows.append(
            {
                **r,
                "mean_nodes": mean_nodes,
                "projected_mttf_h": mttf_node_h / mean_nodes
                if mttf_node_h and mean_nodes
                else None,
                "measured_mttf_h": r["job_hours"] / k if enough else None,
                "measured_mttf_lo_h": r["job_hours"] / hi if enough else None,
                "measured_mttf_hi_h": r["job_hours"] / lo if enough and lo > 0 else None,
                "expected_failures": r["node_hours"] / mttf_node_h if mttf_node_h else None,
                "enough": enough,
            }
        )
    schema = {
        **dict(g.schema),
        "mean_nodes": pl.Float64,
        "projected_mttf_h": pl.Float64,
        "measured_mttf_h": pl.Float64,
        "measured_mttf_lo_h": pl.Float64,
        "measured_mttf_hi_h": pl.Float64,
        "expected_failures": pl.Float64,
        "enough": pl.Boolean,
    }
    return pl.DataFrame(rows, schema=schema)


PROJECTED_MTTF_SCHEMA: dict[str, pl.DataType] = {
    "n_nodes": pl.Int64,
    "n_gpus": pl.Int64,
    "mttf_h": pl.Float64,
}
"""Columns of :func:`projected_mttf`."""


def job_sizes(
    largest: int, among: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
) -> list[int]:
    """Job sizes in nodes to project the MTTF or the ETTR to on a cluster of ``largest`` nodes:
    the sizes of ``among`` below ``largest``, then ``largest`` itself (a projection to more nodes
    than the cluster has describes no job it can run).

    Raises:
        ValueError: ``largest`` below 1.
    """
    if largest < 1:
        raise ValueError(f"a cluster of {largest} nodes: at least 1")
    return [s for s in among if s < largest] + [int(largest)]


def projected_mttf(
    mttf_node_h: float, nodes: list[int] | tuple[int, ...], gpus_per_node: int = 8
) -> pl.DataFrame:
    """``MTTF_job = MTTF_node / N`` for job sizes ``N`` (independence assumption, see module).

    Returns:
        :data:`PROJECTED_MTTF_SCHEMA`.
        ``n_nodes`` (Int64), ``n_gpus`` (Int64, ``n_nodes x gpus_per_node``), ``mttf_h``
        (Float64, hours).

    Raises:
        ValueError: ``mttf_node_h`` not positive, or a node count below 1.
    """
    if not mttf_node_h or mttf_node_h <= 0 or any(n < 1 for n in nodes):
        raise ValueError(
            f"projected_mttf: need mttf_node_h > 0 and nodes >= 1, got {mttf_node_h}, {nodes}"
        )
    return pl.DataFrame(
        {
            "n_nodes": list(nodes),
            "n_gpus": [n * gpus_per_node for n in nodes],
            "mttf_h": [mttf_node_h / n for n in nodes],
        },
        schema=PROJECTED_MTTF_SCHEMA,
    )
