"""GPU activity by phase and over time, job selection, and what the telemetry cannot give."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from trainperf import dcgm
from trainperf.atomic import atomic_path
from trainperf.errors import DataWarning, InputError
from trainperf.quality import QUALITY_SCHEMA, empty_quality
from trainperf.slurm import expand_nodelist
from trainperf.telemetry._common import (
    ACTIVITY_FIELDS,
    NIC_RX,
    NIC_TX,
    SYNTHETIC_LABEL,
    WANTED,
    as_lazy,
    collect,
    every_us,
    gpu_rows,
    host_batches,
    only_hosts,
    to_datetime,
)
from trainperf.telemetry.phases import in_span, interval_expr, interval_table


def jobs_in(data: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """Slurm jobs seen in the telemetry's ``job_id`` column (``hpc_job``/``jobid`` labels).

    A GPU shared by several jobs (``job_id`` ``"11,12"``, see :mod:`trainperf.dcgm.checks`) counts
    for each of them.

    Returns:
        job_id (String), n_hosts (UInt32), n_gpus (UInt32, distinct host x gpu), first, last
        (Datetime[us, UTC]), sorted by n_gpus descending. Empty when no series carries a job.
    """
    return (
        as_lazy(data)
        .filter(pl.col("job_id").is_not_null())
        # a GPU shared by several jobs carries their ids joined with "," (trainperf.dcgm.checks)
        .with_columns(pl.col("job_id").str.split(","))
        .explode("job_id")
        .group_by("job_id")
        .agg(
            pl.col("hostname").n_unique().alias("n_hosts"),
            pl.struct("hostname", "gpu").n_unique().alias("n_gpus"),
            pl.col("timestamp").min().alias("first"),
            pl.col("timestamp").max().alias("last"),
        )
        .sort(["n_gpus", "job_id"], descending=[True, False])
        .pipe(collect)
    )


def select_job(
    data: pl.DataFrame | pl.LazyFrame,
    *,
    job_id: str | None = None,
    hostnames: Iterable[str] | str | None = None,
    start: Any = None,
    end: Any = None,
    source: str | None = None,
) -> pl.LazyFrame:
    """Restrict telemetry to one Slurm job: its nodes and its time window.

    Args:
        data: reader frame (eager or lazy).
        job_id: keep every series (GPU *and* NIC) of the hosts on which some series carries this
            ``job_id`` label (alone, or among the ``,``-joined ids of a shared GPU); exclusive 8-GPU nodes make the node-level join exact
            (dcgm-exporter's HPC job mapping, ``NVIDIA/dcgm-exporter:internal/pkg/transformation/hpc.go``). Needs one collect of (job_id, hostname).
        hostnames: explicit node list, or a Slurm host list string (``"gpu[001-064]"``), e.g. from
            ``sacct`` NodeList, for telemetry without job labels.
        start, end: time window (datetime, epoch s or ISO 8601), inclusive.
        source: the telemetry's file(s) or URL, for the error message (default: ``"telemetry"``).

    Returns:
        a LazyFrame (same columns).

    Raises:
        trainperf.errors.InputError (a ValueError): ``job_id`` not found in the data; the message
            names ``source`` (the telemetry's files, when given), the job ids present and the way
            out (``hostnames=`` and ``start=``/``end=`` for telemetry without job labels).
    """
    lf = as_lazy(data)
    hosts: set[str] | None = None
    if hostnames is not None:
        if isinstance(hostnames, str):
            hostnames = expand_nodelist(hostnames)
        hosts = set(hostnames)
    if job_id is not None and str(job_id) != "":
        jh = (
            lf.filter(
                (pl.col("job_id") == str(job_id))
                | (
                    pl.col("job_id").str.contains(",", literal=True)
                    & pl.col("job_id").str.split(",").list.contains(str(job_id))
                )
            )
            .select("hostname")
            .unique()
            .pipe(collect)["hostname"]
            .to_list()
        )
        if not jh:
            present = (
                lf.select(pl.col("job_id").drop_nulls().unique().sort().head(6))
                .pipe(collect)["job_id"]
                .to_list()
            )
            have = (f"the job ids present: {', '.join(present[:5])}{', ...' if len(present) > 5 else ''}"
                    if present else "the telemetry carries no job_id labels")  # fmt: skip
            where = source or "telemetry"
            raise InputError(
                f"{where}: job {job_id!r} not found in the job_id labels ({have}); check the job "
                "id, or select by hostnames= (sacct NodeList) and start=/end= instead",
                source=source,
            )
        hosts = set(jh) if hosts is None else hosts & set(jh)
    if hosts is not None:
        lf = lf.filter(pl.col("hostname").is_in(sorted(hosts)))
    if start is not None:
        lf = lf.filter(pl.col("timestamp") >= to_datetime(start))
    if end is not None:
        lf = lf.filter(pl.col("timestamp") <= to_datetime(end))
    return lf


def is_synthetic(data: pl.DataFrame | pl.LazyFrame, probe_rows: int = 10_000) -> bool:
    """True when the first ``probe_rows`` rows carry the ``synthetic="true"`` label."""
    k, v = SYNTHETIC_LABEL
    pat = f'"{k}":"{v}"'
    res = (
        as_lazy(data)
        .head(probe_rows)
        .select(pl.col("labels").str.contains(pat, literal=True).any())
        .pipe(collect)
    )
    return bool(res.item()) if res.height else False


# --------------------------------------------------------------------------------------
# GPU activity
# --------------------------------------------------------------------------------------


def _metric_table(fields: Mapping[str, tuple[int, str]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "metric": list(fields),
            "field_id": [f[0] for f in fields.values()],
            "unit": [f[1] for f in fields.values()],
        },
        schema={"metric": pl.String, "field_id": pl.Int32, "unit": pl.String},
    )


GPU_STATS_CATEGORICAL: tuple[str, ...] = ("phase", "kind", "hostname", "metric", "unit")
"""Columns of :func:`phase_stats` ``(level="gpu")`` (and of
:meth:`trainperf.promsource.PrometheusSource.phase_stats` at ``level="gpu"``) of dtype
``pl.Categorical`` rather than ``pl.String``: repeated values, millions of rows at cluster scale."""


def phase_stats(
    data: pl.DataFrame | pl.LazyFrame,
    phases: pl.DataFrame,
    *,
    level: str = "gpu",
    fields: Mapping[str, tuple[int, str]] | None = None,
    quantiles: Sequence[float] = (0.05, 0.25, 0.5, 0.75, 0.95),
) -> pl.DataFrame:
    """Distribution of each activity metric per phase (and per GPU).

    Args:
        data: reader frame (eager or lazy); GPU-entity rows are used.
        phases: :func:`phases_from_log`.
        level: ``"gpu"`` (per phase x host x GPU), ``"phase"`` (per phase, all GPUs pooled) or
            ``"kind"`` (per phase kind init/train/eval, all phases and GPUs pooled).
        fields: metric -> (field id, unit); default :data:`ACTIVITY_FIELDS`.
        quantiles: linear-interpolation quantiles (``pl.Expr.quantile``) to report.

    Returns:
        grouping columns (``gpu``: phase, kind, index, hostname, gpu; ``phase``: phase, kind,
        index; ``kind``: kind) + ``metric``, ``unit``, ``n`` (UInt32, samples), ``mean``
        (Float64) and one Float64 column per quantile named ``p05``, ``p25``, ``p50``... in the
        field's unit. ``index`` is Int32, ``gpu`` Int32. The text columns (phase, kind,
        hostname, metric, unit) are String at ``level="phase"``/``"kind"`` and **Categorical**
        at ``level="gpu"`` (:data:`GPU_STATS_CATEGORICAL`): the per-GPU result of a long store has
        millions of rows (64 tiled runs of 800 GPUs: 12.5 M), and a 4-byte category code per value
        instead of a 16-byte String view keeps it at about 1.0 GB instead of 1.75 GB. Filters and
        comparisons with strings (``pl.col("kind") == "train"``, ``is_in``), sorts (lexical, as
        String), ``to_list()`` and joins with other Categorical columns work as before; a join
        with a String column needs ``.cast(pl.String)`` on one side (or ``pl.Categorical`` on
        the other). Sorted by kind (init, train, eval, others), index, hostname (null
        first), gpu, metric (in the order of ``fields``), then phase (in the order phases start:
        several runs' phases of equal kind and index). Metrics absent from the data have no rows
        (see :func:`unavailable`). The number columns are slices of the host batches' results
        (several chunks; ``rechunk()`` if one contiguous buffer is wanted). A result too large
        for memory: :func:`write_phase_stats` writes it to Parquet, host batch by host batch.

    Raises:
        ValueError: unknown ``level``.
    """
    out = _phase_stats(data, phases, level, fields, quantiles, None)
    assert out is not None
    return out


def _phase_stats(data, phases, level, fields, quantiles, _sink) -> pl.DataFrame | None:
    """:func:`phase_stats`; with ``_sink``, each host batch's rows (in the result order within
    the batch) are passed to ``_sink(frame)`` instead of being held, and None is returned."""
    keys = {
        "gpu": ["phase", "kind", "index", "hostname", "gpu"],
        "phase": ["phase", "kind", "index"],
        "kind": ["kind"],
    }.get(level)
    if keys is None:
        raise ValueError(f"level must be 'gpu', 'phase' or 'kind', not {level!r}")
    mt = _metric_table(fields or ACTIVITY_FIELDS)
    lf = gpu_rows(as_lazy(data)).filter(pl.col("field_id").is_in(mt["field_id"].to_list()))
    qcols = [f"p{round(q * 100):02d}" for q in quantiles]
    aggs = [pl.len().alias("n"), pl.col("value").mean().alias("mean")] + [
        pl.col("value").quantile(q, "linear").alias(c)
        for q, c in zip(quantiles, qcols, strict=True)
    ]
    # Memory: group on small integer keys (a phase-group number from the interval number, the
    # field id) and attach the phase / metric strings to the small result, instead of carrying
    # five string columns on every sample through the group-by (7.4 GB peak at 62 M rows before).
    bounds, table = interval_table(phases)
    gkeys = [k for k in keys if k not in ("hostname", "gpu")]
    groups = table.select(gkeys).unique(maintain_order=True).with_row_index("_g")
    iv_to_g = table.join(groups, on=gkeys, how="inner", nulls_equal=True).select("_iv", "_g")
    empty = len(bounds) < 2 or iv_to_g.height == 0
    if not empty:
        lf = lf.filter(in_span(bounds))

    def attach(lf: pl.LazyFrame) -> pl.LazyFrame:
        """``_g``: the phase group of each sample (samples in no group dropped)."""
        if empty:
            return lf.filter(pl.lit(False)).with_columns(pl.lit(None, pl.UInt32).alias("_g"))
        return (
            lf.with_columns(interval_expr(bounds))
            .with_columns(
                pl.col("_iv")
                .replace_strict(
                    iv_to_g["_iv"].to_list(),
                    iv_to_g["_g"].to_list(),
                    default=None,
                    return_dtype=pl.UInt32,
                )
                .alias("_g")
            )
            .filter(pl.col("_g").is_not_null())
        )

    rest = [k for k in keys if k in ("hostname", "gpu")]
    # per-GPU groups lie within one host: run host batch by host batch (bounded memory). The host
    # filter comes before the phase columns: polars does not push a filter down through the
    # search_sorted of interval_expr, so a filter after it read the whole store once per batch
    # (16x store: 1.0 GB and 7-60 s per batch instead of 0.2 GB and 1.4 s)
    batches = host_batches(lf) if level == "gpu" and not empty else [None]
    hosts = None
    if batches != [None]:
        hosts = pl.Series([h for b in batches for h in b if h is not None], dtype=pl.String)
    gr = _group_rank(groups)
    parts = []
    rows = 0
    for hb in batches:
        part = attach(only_hosts(lf, hb)).group_by(["_g", *rest, "field_id"]).agg(aggs)
        part = collect(part)
        if "hostname" in rest and hosts is None:  # one batch: its own hosts
            hosts = part["hostname"].drop_nulls().unique()
        parts.append(_encode(part, mt, hosts, gr, rest))
        if _sink is not None:  # this batch's rows, in the result order, handed on and dropped
            done = _assemble(parts, groups, mt, keys, rest, qcols, hosts)
            rows += done.height
            _sink(done)
            del done
    if _sink is not None:
        if rows == 0 and phases.height:
            _warn_no_overlap(data, phases, mt)
        return None
    out = _assemble(parts, groups, mt, keys, rest, qcols, hosts)
    if out.height == 0 and phases.height:
        _warn_no_overlap(data, phases, mt)
    return out


def write_phase_stats(
    data: pl.DataFrame | pl.LazyFrame,
    phases: pl.DataFrame,
    path: str | os.PathLike,
    *,
    fields: Mapping[str, tuple[int, str]] | None = None,
    quantiles: Sequence[float] = (0.05, 0.25, 0.5, 0.75, 0.95),
) -> Path:
    """:func:`phase_stats` at ``level="gpu"`` written to one Parquet file, host batch by host batch.

    For stores whose per-GPU result does not fit in memory: the result has one row per phase x
    GPU x metric, so it grows with the phases of a long store (256 tiled runs of 800 GPUs: 50 M
    rows, about 4 GB resident even with Categorical text columns); here each host batch's rows
    (:data:`BATCH_ROWS` input rows a batch) go to the file as one row group and are dropped, so the
    memory is one batch's, whatever the length of the store. The file is written atomically
    (a temporary file beside ``path``, then a rename).

    Returns:
        ``path``: the columns and dtypes of ``phase_stats(data, phases, level="gpu")`` (text
        columns Categorical, Parquet dictionary columns), the same rows, ordered host batch by
        host batch (hosts in sorted order) and within a batch as :func:`phase_stats` orders them;
        read with ``pl.scan_parquet(path)``; sort by (kind, index, hostname, gpu, metric, phase)
        for :func:`phase_stats`'s own order across hosts.

    Raises:
        OSError: ``path`` cannot be written (nothing is left at ``path`` then).
    """
    # deferred: pyarrow.parquet is ~0.2 s of every import of trainperf.telemetry; only this writer needs it
    import pyarrow.parquet as pq  # noqa: PLC0415

    target = Path(path)
    tmp = atomic_path(target)
    state: dict[str, Any] = {}

    def sink(frame: pl.DataFrame) -> None:  # called once a batch, at least once (empty result)
        table = frame.to_arrow()
        if "writer" not in state:
            state["schema"] = table.schema
            state["writer"] = pq.ParquetWriter(tmp, table.schema)
        elif table.schema != state["schema"]:  # e.g. an all-null column of one batch
            table = table.cast(state["schema"])
        state["writer"].write_table(table)

    try:
        _phase_stats(data, phases, "gpu", fields, quantiles, sink)
        state["writer"].close()
        os.replace(tmp, target)
    finally:
        if "writer" in state and state["writer"].is_open:
            state["writer"].close()
        tmp.unlink(missing_ok=True)
    return target


def _warn_no_overlap(data, phases: pl.DataFrame, mt: pl.DataFrame) -> None:
    """Telemetry and the run's phases that do not meet in time: say so (one extra pass, only when
    no statistic came out), with both spans, instead of an empty table without a word."""

    span = collect(
        gpu_rows(as_lazy(data))
        .filter(pl.col("field_id").is_in(mt["field_id"].to_list()))
        .select(pl.len().alias("n"), pl.col("timestamp").min().alias("t0"),
                pl.col("timestamp").max().alias("t1"))
    ).row(0, named=True)  # fmt: skip
    if not span["n"]:
        return  # no activity metric at all: unavailable() says which and why
    fmt = "%Y-%m-%d %H:%M:%S"
    warnings.warn(
        DataWarning(
            f"telemetry: none of its {span['n']:,} activity samples "
            f"({span['t0']:{fmt}} .. {span['t1']:{fmt}} UTC) falls in the run's phases "
            f"({phases['start'].min():{fmt}} .. {phases['end'].max():{fmt}} UTC): the phase "
            "statistics are empty; check that the telemetry covers the run (clocks, timestamp "
            "units) or align it with telemetry.shift_phases",
            "telemetry",
            None,
            "no_overlap",
        ),
        stacklevel=4,  # the caller of phase_stats / write_phase_stats (via _phase_stats)
    )


def _group_rank(groups: pl.DataFrame) -> pl.Series:
    """Per phase group ``_g`` (row of ``groups``): its rank in the result order (kind init,
    train, eval, other; then index), UInt32 from 1."""
    kind_order = {"init": 0, "train": 1, "eval": 2}
    return groups.with_columns(
        pl.col("kind").replace_strict(kind_order, default=9, return_dtype=pl.Int32).alias("_k")
    ).select(
        pl.struct(["_k", "index"] if "index" in groups.columns else ["_k"])
        .rank("dense")
        .cast(pl.UInt32)
        .alias("_gr")
    )["_gr"]


def _encode(
    part: pl.DataFrame, mt: pl.DataFrame, hosts: pl.Series | None, gr: pl.Series, rest: list[str]
) -> pl.DataFrame:
    """One batch's aggregates with integer codes for its strings, sorted in the result order.

    The batches held until the last one is done carry no string column: ``field_id`` -> ``_m``
    (position in the metric table), ``hostname`` -> ``_h`` (0 = null, else 1 + position among the
    sorted ``hosts``); ``_gr`` is the rank of the phase group (:func:`_group_rank`). Sorted by
    (``_gr``, ``_h``, ``gpu``, ``_m``, ``_g``): the order of the result within this batch."""
    ids = mt["field_id"].to_list()
    cols = [
        pl.lit(gr).gather(pl.col("_g")).alias("_gr"),
        pl.col("field_id")
        .replace_strict(ids, list(range(len(ids))), return_dtype=pl.UInt32)
        .alias("_m"),
    ]
    if "hostname" in rest:
        # position in the sorted host list (every host of the batch is in it); not
        # replace_strict, which panics on an empty mapping (all hosts null)
        h = pl.col("hostname")
        pos = pl.lit(hosts.sort()).search_sorted(h, side="left").cast(pl.UInt32) + 1
        cols.append(pl.when(h.is_null()).then(pl.lit(0, pl.UInt32)).otherwise(pos).alias("_h"))
    keys = ["_gr", *(["_h"] if "hostname" in rest else []), *[k for k in rest if k == "gpu"]]
    return (
        part.with_columns(cols).drop("field_id", "hostname", strict=False).sort([*keys, "_m", "_g"])
    )


def _assemble(parts, groups, mt, keys, rest, qcols, hosts) -> pl.DataFrame:
    """The per-batch aggregates (:func:`_encode`) as the result, ordered (kind, index, hostname,
    gpu, metric, phase group).

    Memory (the per-GPU result of a long store has millions of rows; 64 tiled runs: 12.5 M rows,
    about 1.0 GB resident with its five text columns Categorical, 1.75 GB as String): the batches hold
    numbers only, each sorted already; they cover consecutive hosts in sorted order, so the result
    is, for each phase-group rank in turn, that rank's slice of every batch in batch order: the
    number columns are those slices (no sort or copy of the whole result, which needed hundreds
    of MB more at the peak), and only the text columns (phase, kind, hostname, metric, unit) are
    made new, gathered from the small group / host / metric tables by the code columns
    (Categorical at level="gpu", so 4 bytes a value)."""
    slices = []
    for i, part in enumerate(parts):  # boundaries of each rank's run in each (sorted) batch
        r = part["_gr"]
        ranks = r.unique(maintain_order=True).to_list()
        lo = r.search_sorted(pl.Series(ranks, dtype=pl.UInt32), side="left").to_list()
        hi = r.search_sorted(pl.Series(ranks, dtype=pl.UInt32), side="right").to_list()
        slices += [(rk, i, a, b - a) for rk, a, b in zip(ranks, lo, hi, strict=True)]
        parts[i] = part.drop("_gr")
    slices.sort()  # by rank, then batch (host) order
    res = pl.concat([parts[i].slice(a, n) for _, i, a, n in slices]) if slices else parts[0]
    parts.clear()
    out: dict[str, pl.Series] = {c: res[c] for c in [k for k in rest if k != "hostname"]}
    out |= {c: res[c] for c in ["n", "mean", *qcols]}
    g, m = res["_g"], res["_m"]
    h = res["_h"] if "hostname" in rest else None
    res = None  # the code columns go as soon as their strings are made
    # level="gpu": the text columns as Categorical (GPU_STATS_CATEGORICAL), gathered from the
    # small tables already cast, so no String column of the result's length is ever made
    cat = "hostname" in rest

    def small(s: pl.Series) -> pl.Series:
        return s.cast(pl.Categorical) if cat and s.name in GPU_STATS_CATEGORICAL else s

    if h is not None:
        names_h = pl.concat([pl.Series("hostname", [None], dtype=pl.String), hosts.sort()])
        out["hostname"] = small(names_h.alias("hostname")).gather(h)
        h = None
    for c in keys:
        if c in groups.columns:
            out[c] = small(groups[c]).gather(g)
    g = None
    out["metric"] = small(mt["metric"]).gather(m)
    out["unit"] = small(mt["unit"]).gather(m)
    m = None
    names = [*keys, "metric", "unit", "n", "mean", *qcols]
    return pl.DataFrame([out.pop(k).alias(k) for k in names])


def activity_timeline(
    data: pl.DataFrame | pl.LazyFrame,
    field: int | str = "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    every: Any = "60s",
) -> pl.DataFrame:
    """One metric over time, pooled over GPUs, in time bins.

    Args:
        data: reader frame (eager or lazy).
        field: DCGM field id or any alias.
        every: bin width (seconds, timedelta or ``"30s"``/``"2m"``); bins start at multiples of it
            (``dt.truncate``).

    Returns:
        ``timestamp`` (Datetime[us, UTC], bin start), ``n_gpus`` (UInt32, distinct host x GPU),
        ``n`` (UInt32), ``mean``, ``p05``, ``p50``, ``p95`` (Float64, the field's unit, over all
        samples of all GPUs in the bin); sorted by time.
    """
    fid = dcgm.field_id(field) if isinstance(field, str) else int(field)
    if fid is None:
        raise ValueError(f"unknown DCGM field {field!r}")
    ev = every_us(every)
    return (
        gpu_rows(as_lazy(data))
        .filter(pl.col("field_id") == fid)
        .with_columns(pl.col("timestamp").dt.truncate(f"{ev}us").alias("_bin"))
        .group_by("_bin")
        .agg(
            pl.struct("hostname", "gpu").n_unique().alias("n_gpus"),
            pl.len().alias("n"),
            pl.col("value").mean().alias("mean"),
            pl.col("value").quantile(0.05, "linear").alias("p05"),
            pl.col("value").quantile(0.5, "linear").alias("p50"),
            pl.col("value").quantile(0.95, "linear").alias("p95"),
        )
        .rename({"_bin": "timestamp"})
        .sort("timestamp")
        .pipe(collect)
    )


def gpu_heatmap(
    data: pl.DataFrame | pl.LazyFrame,
    field: int | str = "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    every: Any = "60s",
    *,
    per: str = "gpu",
) -> pl.DataFrame:
    """GPU (or node) x time grid of one metric, downsampled by averaging into time bins.

    Args:
        data: reader frame (eager or lazy).
        field: DCGM field id or alias.
        every: bin width (see :func:`activity_timeline`).
        per: ``"gpu"`` (one row per host x GPU) or ``"node"`` (GPUs of a host averaged).

    Returns:
        ``hostname`` (String), ``gpu`` (Int32; null for ``per="node"``), ``row`` (String,
        ``host/gpu`` or ``host``), ``timestamp`` (Datetime[us, UTC], bin start), ``value``
        (Float64, mean in the bin, the field's unit), ``n`` (UInt32); sorted by host, gpu, time.
    """
    fid = dcgm.field_id(field) if isinstance(field, str) else int(field)
    if fid is None:
        raise ValueError(f"unknown DCGM field {field!r}")
    if per not in ("gpu", "node"):
        raise ValueError(f"per must be 'gpu' or 'node', not {per!r}")
    ev = every_us(every)
    keys = ["hostname", "gpu"] if per == "gpu" else ["hostname"]
    out = (
        gpu_rows(as_lazy(data))
        .filter(pl.col("field_id") == fid)
        .with_columns(pl.col("timestamp").dt.truncate(f"{ev}us").alias("timestamp"))
        .group_by([*keys, "timestamp"])
        .agg(pl.col("value").mean().alias("value"), pl.len().alias("n"))
        .pipe(collect)
    )
    if per == "node":
        out = out.with_columns(pl.lit(None, pl.Int32).alias("gpu"))
        row = pl.col("hostname")
    else:
        row = pl.col("hostname") + "/" + pl.col("gpu").cast(pl.String)
    return (
        out.with_columns(row.alias("row"))
        .select("hostname", "gpu", "row", "timestamp", "value", "n")
        .sort(["hostname", "gpu", "timestamp"], nulls_last=True)
    )


# --------------------------------------------------------------------------------------
# FLOP/s


def unavailable(data: pl.DataFrame | pl.LazyFrame, wanted: Iterable[str] = WANTED) -> pl.DataFrame:
    """What the telemetry cannot give, and why, summarised over hosts.

    DCGM metrics go through :func:`trainperf.dcgm.missing_metrics` (reasons ``no_profiling``,
    ``off_by_default``, ``not_exported``); ``nic_bytes`` needs both node-exporter byte counters
    (:data:`NIC_TX`, :data:`NIC_RX`) on the host (reason ``not_exported``: node-exporter not
    scraped or the ``netdev`` collector off).

    Returns:
        wanted (String), reason (String), detail (String), n_hosts (UInt32), example_host
        (String); empty when everything is computable on every host.
    """
    present = as_lazy(data).select("hostname", "field_id", "field").unique().pipe(collect)
    wanted = list(wanted)
    parts = []
    dcgm_w = [w for w in wanted if w != "nic_bytes"]
    if dcgm_w:
        parts.append(dcgm.missing_metrics(present.select("hostname", "field_id"), dcgm_w))
    if "nic_bytes" in wanted:
        hosts = present["hostname"].unique().sort().to_list()
        have = (
            present.filter(pl.col("field").is_in([NIC_TX, NIC_RX]))
            .group_by("hostname")
            .agg(pl.col("field").n_unique().alias("k"))
            .filter(pl.col("k") == 2)["hostname"]
            .to_list()
        )
        miss = [h for h in hosts if h not in set(have)]
        if miss:
            parts.append(
                pl.DataFrame(
                    {
                        "wanted": ["nic_bytes"] * len(miss),
                        "hostname": miss,
                        "missing_field_ids": [[] for _ in miss],
                        "reason": ["not_exported"] * len(miss),
                        "detail": [
                            f"no node-exporter {NIC_TX} / {NIC_RX} series: scrape node-exporter "
                            "(netdev collector) on the GPU nodes"
                        ]
                        * len(miss),
                    },
                    schema={
                        "wanted": pl.String,
                        "hostname": pl.String,
                        "missing_field_ids": pl.List(pl.Int32),
                        "reason": pl.String,
                        "detail": pl.String,
                    },
                )
            )
    schema = {
        "wanted": pl.String,
        "reason": pl.String,
        "detail": pl.String,
        "n_hosts": pl.UInt32,
        "example_host": pl.String,
    }
    parts = [p for p in parts if p.height]
    if not parts:
        return pl.DataFrame(schema=schema)
    return (
        pl.concat(parts)
        .group_by("wanted", "reason", "detail", maintain_order=True)
        .agg(
            pl.col("hostname").n_unique().alias("n_hosts"),
            pl.col("hostname").min().alias("example_host"),
        )
        .select(list(schema))
    )


def quality_notes(data: pl.DataFrame | pl.LazyFrame, source: str = "telemetry") -> pl.DataFrame:
    """Data-quality rows of the analysis itself: series the per-GPU statistics leave out.

    :func:`phase_stats`, :func:`activity_timeline`, :func:`gpu_heatmap` and the MFU checks use the
    whole-GPU rows (entity ``GPU`` with a GPU index). Rows of other entities are counted here so
    that the book says what was left out and why:

    * ``mig_instance`` (entity ``GPU-I``): MIG instances are slices of a GPU; their activity
      ratios are relative to the slice and cannot be pooled with whole GPUs;
    * ``nvswitch`` (entity ``NVSwitch``): switch metrics, not GPU activity;
    * ``no_gpu_index``: GPU rows without a ``gpu`` label (cannot be attributed to a GPU).

    Args:
        data: reader frame (eager or lazy).
        source: the ``source`` column of the rows.

    Returns:
        :data:`trainperf.quality.QUALITY_SCHEMA` rows (action ``flagged``), one per kind found; empty
        when every row is a whole-GPU row.
    """

    kind = (
        pl.when(pl.col("entity") == "GPU-I").then(pl.lit("mig_instance"))
        .when(pl.col("entity") == "NVSwitch").then(pl.lit("nvswitch"))
        .when((pl.col("entity") == "GPU") & pl.col("gpu").is_null() & pl.col("field_id").is_not_null())
        .then(pl.lit("no_gpu_index"))
    )  # fmt: skip
    g = (
        as_lazy(data)
        .with_columns(kind.alias("_k"))
        .filter(pl.col("_k").is_not_null())
        .group_by("_k")
        .agg(
            pl.struct("hostname", "gpu", "entity", "entity_id", "field_id", "job_id")
            .n_unique()
            .alias("n_series"),
            pl.struct("hostname", "gpu")
            .filter(pl.col("gpu").is_not_null())
            .n_unique()
            .alias("n_gpus"),
            pl.len().alias("n_samples"),
        )
        .sort("_k")
        .pipe(collect)
    )
    if g.height == 0:
        return empty_quality()
    why = {
        "mig_instance": "MIG instance (GPU-I) rows are not in the per-GPU statistics: their ratios "
        "are relative to the instance and cannot be pooled with whole GPUs",
        "nvswitch": "NVSwitch rows are switch metrics, not GPU activity: not in the GPU statistics",
        "no_gpu_index": "GPU rows without a gpu label cannot be attributed to a GPU: not in the "
        "per-GPU statistics",
    }
    rows = [
        {"source": source, "check": k, "action": "flagged", "n_series": ns, "n_gpus": ng,
         "n_samples": n, "n_lines": None, "first_line": None, "detail": why[k]}
        for k, ns, ng, n in g.rows()
    ]  # fmt: skip
    return pl.DataFrame(rows, schema=QUALITY_SCHEMA, orient="row")
