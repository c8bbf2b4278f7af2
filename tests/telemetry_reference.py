"""REFERENCE ONLY: trainperf.telemetry before the split (commit ffda09c), verbatim below this docstring, for
the identity tests of the rewritten per-phase statistics. The product never imports it.
"""

# ruff: noqa

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from trainperf import dcgm

__all__ = [
    "ACTIVITY_FIELDS",
    "NIC_RX",
    "NIC_TX",
    "PHASE_SCHEMA",
    "SYNTHETIC_LABEL",
    "WANTED",
    "achieved_tflops",
    "activity_timeline",
    "gpu_heatmap",
    "imbalance_summary",
    "is_synthetic",
    "jobs_in",
    "link_throughput",
    "nic_throughput",
    "node_throughput",
    "phase_stats",
    "phases_from_log",
    "rail_imbalance",
    "rail_summary",
    "select_job",
    "shift_phases",
    "tflops_comparison",
    "tflops_from_tensor_active",
    "unavailable",
    "with_phases",
]

SYNTHETIC_LABEL = ("synthetic", "true")
"""Label (name, value) that :mod:`trainperf.synthetic.telemetry` puts on every series it generates."""

NIC_TX = "node_network_transmit_bytes_total"
NIC_RX = "node_network_receive_bytes_total"

ACTIVITY_FIELDS: dict[str, tuple[int, str]] = {
    "tensor_active": (1004, "ratio"),
    "sm_active": (1002, "ratio"),
    "dram_active": (1005, "ratio"),
    "power": (155, "W"),
    "sm_clock": (100, "MHz"),
}
"""Metric name -> (DCGM field id, unit) of the per-phase distributions."""

WANTED: tuple[str, ...] = (
    "tensor_active",
    "sm_active",
    "dram_active",
    "gpu_util",
    "power",
    "energy",
    "fb_used",
    "pcie_bytes",
    "nvlink_bytes",
    "nic_bytes",
)
"""What the telemetry chapter wants; keys of :data:`trainperf.dcgm.METRIC_REQUIREMENTS` + ``nic_bytes``."""

PHASE_SCHEMA: dict[str, pl.DataType] = {
    "phase": pl.String(),
    "kind": pl.String(),
    "index": pl.Int32(),
    "start": pl.Datetime("us", "UTC"),
    "end": pl.Datetime("us", "UTC"),
    "duration_s": pl.Float64(),
}
"""Schema of :func:`phases_from_log`."""

_US = pl.Datetime("us", "UTC")


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------


def _lazy(data: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    if isinstance(data, pl.LazyFrame):
        return data
    if isinstance(data, pl.DataFrame):
        return data.lazy()
    raise TypeError(f"expected a polars DataFrame or LazyFrame, not {type(data).__name__}")


def _to_datetime(x: Any) -> _dt.datetime:
    """datetime / epoch seconds / ISO 8601 string -> aware UTC datetime."""
    if isinstance(x, _dt.datetime):
        return x if x.tzinfo else x.replace(tzinfo=_dt.UTC)
    if isinstance(x, (int, float)):
        return _dt.datetime.fromtimestamp(float(x), tz=_dt.UTC)
    s = str(x).strip()
    if re.fullmatch(r"\d+(\.\d+)?", s):
        return _dt.datetime.fromtimestamp(float(s), tz=_dt.UTC)
    d = _dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
    return d if d.tzinfo else d.replace(tzinfo=_dt.UTC)


def _every_us(every: Any) -> int:
    if isinstance(every, _dt.timedelta):
        return int(every.total_seconds() * 1_000_000)
    if isinstance(every, (int, float)):
        return int(float(every) * 1_000_000)
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*", str(every))
    if not m:
        raise ValueError(f"every={every!r}: expected seconds, a timedelta or e.g. '30s', '2m'")
    mult = {"ms": 1_000, "s": 1_000_000, None: 1_000_000, "m": 60_000_000, "h": 3_600_000_000}
    return int(float(m.group(1)) * mult[m.group(2)])


def _natural_key(s: str) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def _collect(lf: pl.LazyFrame) -> pl.DataFrame:
    """Collect a query (one place to choose the engine; the in-memory engine was faster than the
    streaming one on a 97M-row cluster-day store, at the same peak memory)."""
    return lf.collect()


def _gpu_rows(lf: pl.LazyFrame) -> pl.LazyFrame:
    return lf.filter((pl.col("entity") == "GPU") & pl.col("gpu").is_not_null())


BATCH_ROWS = 4_000_000
"""Input rows per collect of the per-host analyses (``phase_stats(level="gpu")``,
:func:`link_throughput`, :func:`nic_throughput`): above it they run host batch by host batch and
concatenate, so peak memory follows the batch, not the store (the in-memory engine materialises
its whole filtered input: 62 M rows took 7.4 GB at once). Results are the same, since every group
of these analyses lies within one host."""


def _host_batches(lf: pl.LazyFrame, batch_rows: int | None = None) -> list[list[str | None] | None]:
    """Host lists of about ``batch_rows`` input rows each; ``[None]`` = one batch of everything.

    Costs a row count (Parquet metadata for a store) and a streaming ``unique`` of the host
    column; each batch's host filter prunes whole files of a partitioned store."""
    batch_rows = BATCH_ROWS if batch_rows is None else batch_rows
    n = lf.select(pl.len()).collect(engine="streaming").item()
    if n <= batch_rows:
        return [None]
    hosts = lf.select(pl.col("hostname").unique()).collect(engine="streaming")["hostname"].to_list()
    hosts.sort(key=lambda h: (h is None, h or ""))
    per = max(1, int(batch_rows * len(hosts) / n))
    return [hosts[i : i + per] for i in range(0, len(hosts), per)]


def _only_hosts(lf: pl.LazyFrame, hosts: list[str | None] | None) -> pl.LazyFrame:
    if hosts is None:
        return lf
    named = [h for h in hosts if h is not None]
    cond = pl.col("hostname").is_in(named)
    if len(named) < len(hosts):
        cond = cond | pl.col("hostname").is_null()
    return lf.filter(cond)


# --------------------------------------------------------------------------------------
# Phases
# --------------------------------------------------------------------------------------


def phases_from_log(source: Any, file: str | None = None) -> pl.DataFrame:
    """Phases of one MLPerf run from its ``:::MLLOG`` events.

    Args:
        source: a ``result_*.txt`` path, a :class:`trainperf.mlperf.Results`, or an events frame
            (:func:`trainperf.mlperf.parse_log` / ``Results.events``: columns file, key, time_ms,
            metadata).
        file: which result file when ``source`` holds several.

    Returns:
        one row per phase, in time order: ``phase`` (String: ``init``, ``train_01`` ...,
        ``eval_01`` ...), ``kind`` (String: ``init``, ``train`` or ``eval``), ``index``
        (Int32, 0 for init, 1-based for blocks and evaluations), ``start``, ``end``
        (Datetime[us, UTC]), ``duration_s`` (Float64, s). Rank duplicates are merged: a phase
        starts at the earliest start and ends at the latest stop over ranks. Evaluations
        are matched start/stop by their ``epoch_num`` metadata; blocks by
        ``first_epoch_num`` (:func:`trainperf.mlperf.blocks`).

    Raises:
        ValueError: several result files and no ``file``; no ``init_start``/``init_stop`` and no
            block (nothing to align with).
    """
    from trainperf import mlperf

    if isinstance(source, (str, Path)):
        events = mlperf.parse_log(source)
    elif isinstance(source, mlperf.Results):
        events = source.events
    elif isinstance(source, pl.DataFrame):
        events = source
    else:
        raise TypeError("source must be a result file path, a Results or an events frame")
    files = events["file"].unique(maintain_order=True).to_list()
    if file is not None:
        events = events.filter(pl.col("file") == str(file))
    elif len(files) > 1:
        raise ValueError(f"{len(files)} result files in the events; pass file= (one of {files})")
    rows: list[dict[str, Any]] = []
    t = {k: events.filter(pl.col("key") == k)["time_ms"] for k in ("init_start", "init_stop")}
    if t["init_start"].len() and t["init_stop"].len():
        rows.append(
            {
                "phase": "init",
                "kind": "init",
                "index": 0,
                "s": t["init_start"].min(),
                "e": t["init_stop"].max(),
            }
        )
    bl = mlperf.blocks(events).sort("start_ms")
    for i, (s, e) in enumerate(bl.select("start_ms", "stop_ms").iter_rows(), start=1):
        rows.append({"phase": f"train_{i:02d}", "kind": "train", "index": i, "s": s, "e": e})
    ev = events.filter(pl.col("key").is_in(["eval_start", "eval_stop"])).with_columns(
        pl.col("metadata").str.json_path_match("$.epoch_num").alias("_n")
    )
    es = (
        ev.filter(pl.col("key") == "eval_start")
        .group_by("_n")
        .agg(pl.col("time_ms").min().alias("s"))
        .join(
            ev.filter(pl.col("key") == "eval_stop")
            .group_by("_n")
            .agg(pl.col("time_ms").max().alias("e")),
            on="_n",
            how="inner",
        )
        .sort("s")
    )
    for i, (s, e) in enumerate(es.select("s", "e").iter_rows(), start=1):
        rows.append({"phase": f"eval_{i:02d}", "kind": "eval", "index": i, "s": s, "e": e})
    if not rows:
        raise ValueError("the log has no init_start/init_stop, block or eval events to align with")
    df = pl.DataFrame(
        rows,
        schema={
            "phase": pl.String,
            "kind": pl.String,
            "index": pl.Int32,
            "s": pl.Float64,
            "e": pl.Float64,
        },
        orient="row",
    )
    return (
        df.with_columns(
            (pl.col("s") * 1000).round(0).cast(pl.Int64).cast(_US).alias("start"),
            (pl.col("e") * 1000).round(0).cast(pl.Int64).cast(_US).alias("end"),
            ((pl.col("e") - pl.col("s")) / 1000.0).alias("duration_s"),
        )
        .select(list(PHASE_SCHEMA))
        .sort("start", "kind")
    )


def shift_phases(phases: pl.DataFrame, start: Any) -> pl.DataFrame:
    """Shift all phases so that the first one starts at ``start`` (datetime, epoch s or ISO).

    Durations and gaps are kept. Returns a frame with :data:`PHASE_SCHEMA`.
    """
    if phases.height == 0:
        return phases
    delta = _to_datetime(start) - phases["start"].min()
    return phases.with_columns(pl.col("start") + delta, pl.col("end") + delta)


def _interval_table(phases: pl.DataFrame) -> tuple[list[int], pl.DataFrame]:
    """Sorted boundaries (epoch us) and, per interval number j ([b_{j-1}, b_j)), the phase covering it."""
    p = phases.with_columns(
        pl.col("start").dt.epoch("us").alias("_s"), pl.col("end").dt.epoch("us").alias("_e")
    ).sort("_s")
    bounds = sorted(set(p["_s"].to_list()) | set(p["_e"].to_list()))
    rows = []
    recs = p.select("phase", "kind", "index", "_s", "_e").rows()
    for j in range(1, len(bounds)):
        lo, hi = bounds[j - 1], bounds[j]
        cover = [r for r in recs if r[3] <= lo and r[4] >= hi]
        if cover:
            ph, kind, idx, _, _ = cover[-1]  # overlapping phases: the one that started last
            rows.append({"_iv": j, "phase": ph, "kind": kind, "index": idx})
    table = pl.DataFrame(
        rows,
        schema={"_iv": pl.Int32, "phase": pl.String, "kind": pl.String, "index": pl.Int32},
        orient="row",
    )
    return bounds, table


def _interval_expr(bounds: list[int]) -> pl.Expr:
    """``_iv`` (Int32): the number of boundaries <= t = the interval number of
    :func:`_interval_table` ([b_{j-1}, b_j) -> j)."""
    return (
        pl.lit(pl.Series(bounds, dtype=pl.Int64))
        .search_sorted(pl.col("timestamp").dt.epoch("us"), side="right")
        .cast(pl.Int32)
        .alias("_iv")
    )


def _in_span(bounds: list[int]) -> pl.Expr:
    """``bounds[0] <= t < bounds[-1]``: a plain time predicate that polars pushes into a Parquet
    scan (row groups and files outside the phases are skipped). Samples outside the span belong
    to no phase, so filtering them first changes no result."""
    return (pl.col("timestamp") >= pl.lit(bounds[0]).cast(_US)) & (
        pl.col("timestamp") < pl.lit(bounds[-1]).cast(_US)
    )


def with_phases(
    data: pl.DataFrame | pl.LazyFrame, phases: pl.DataFrame, *, keep_outside: bool = False
) -> pl.LazyFrame:
    """Attach ``phase``, ``kind``, ``index`` (see :func:`phases_from_log`) to every sample.

    A sample at time t belongs to the phase with ``start <= t < end``. Lazy: the boundaries
    are located with ``search_sorted`` and joined to a small interval table, no sort of the data.

    Args:
        data: reader frame (eager or lazy).
        phases: :func:`phases_from_log` output (possibly :func:`shift_phases`-ed).
        keep_outside: keep samples outside every phase (with null phase columns).

    Returns:
        a LazyFrame: the input columns + phase (String), kind (String), index (Int32).
    """
    lf = _lazy(data)
    bounds, table = _interval_table(phases)
    if len(bounds) < 2:
        out = lf.with_columns(
            pl.lit(None, pl.String).alias("phase"),
            pl.lit(None, pl.String).alias("kind"),
            pl.lit(None, pl.Int32).alias("index"),
        )
        return out if keep_outside else out.filter(pl.lit(False))
    if not keep_outside:
        lf = lf.filter(_in_span(bounds))
    out = lf.with_columns(_interval_expr(bounds)).join(
        table.lazy(), on="_iv", how="left" if keep_outside else "inner", maintain_order="left"
    )
    return out.drop("_iv")


# --------------------------------------------------------------------------------------
# Jobs and selection
# --------------------------------------------------------------------------------------


def jobs_in(data: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """Slurm jobs seen in the telemetry's ``job_id`` column (``hpc_job``/``jobid`` labels).

    Returns:
        job_id (String), n_hosts (UInt32), n_gpus (UInt32, distinct host x gpu), first, last
        (Datetime[us, UTC]), sorted by n_gpus descending. Empty when no series carries a job.
    """
    return (
        _lazy(data)
        .filter(pl.col("job_id").is_not_null())
        .group_by("job_id")
        .agg(
            pl.col("hostname").n_unique().alias("n_hosts"),
            pl.struct("hostname", "gpu").n_unique().alias("n_gpus"),
            pl.col("timestamp").min().alias("first"),
            pl.col("timestamp").max().alias("last"),
        )
        .sort(["n_gpus", "job_id"], descending=[True, False])
        .pipe(_collect)
    )


def select_job(
    data: pl.DataFrame | pl.LazyFrame,
    *,
    job_id: str | None = None,
    hostnames: Iterable[str] | str | None = None,
    start: Any = None,
    end: Any = None,
) -> pl.LazyFrame:
    """Restrict telemetry to one Slurm job: its nodes and its time window.

    Args:
        data: reader frame (eager or lazy).
        job_id: keep every series (GPU *and* NIC) of the hosts on which some series carries this
            ``job_id`` label; exclusive 8-GPU nodes make the node-level join exact
            (telemetry_formats.md A.5). Needs one collect of (job_id, hostname).
        hostnames: explicit node list, or a Slurm host list string (``"gpu[001-064]"``), e.g. from
            ``sacct`` NodeList, for telemetry without job labels.
        start, end: time window (datetime, epoch s or ISO 8601), inclusive.

    Returns:
        a LazyFrame (same columns).

    Raises:
        ValueError: ``job_id`` not found in the data.
    """
    lf = _lazy(data)
    hosts: set[str] | None = None
    if hostnames is not None:
        if isinstance(hostnames, str):
            from trainperf.slurm import expand_nodelist

            hostnames = expand_nodelist(hostnames)
        hosts = set(hostnames)
    if job_id is not None and str(job_id) != "":
        jh = (
            lf.filter(pl.col("job_id") == str(job_id))
            .select("hostname")
            .unique()
            .pipe(_collect)["hostname"]
            .to_list()
        )
        if not jh:
            raise ValueError(f"job {job_id!r} not found in the telemetry's job_id labels")
        hosts = set(jh) if hosts is None else hosts & set(jh)
    if hosts is not None:
        lf = lf.filter(pl.col("hostname").is_in(sorted(hosts)))
    if start is not None:
        lf = lf.filter(pl.col("timestamp") >= _to_datetime(start))
    if end is not None:
        lf = lf.filter(pl.col("timestamp") <= _to_datetime(end))
    return lf


def is_synthetic(data: pl.DataFrame | pl.LazyFrame, probe_rows: int = 10_000) -> bool:
    """True when the first ``probe_rows`` rows carry the ``synthetic="true"`` label."""
    k, v = SYNTHETIC_LABEL
    pat = f'"{k}":"{v}"'
    res = (
        _lazy(data)
        .head(probe_rows)
        .select(pl.col("labels").str.contains(pat, literal=True).any())
        .pipe(_collect)
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
        index; ``kind``: kind) + ``metric`` (String), ``unit`` (String), ``n`` (UInt32, samples),
        ``mean`` (Float64) and one Float64 column per quantile named ``p05``, ``p25``, ``p50``...
        in the field's unit; sorted by the grouping columns and metric. Metrics absent from the
        data have no rows (see :func:`unavailable`).

    Raises:
        ValueError: unknown ``level``.
    """
    keys = {
        "gpu": ["phase", "kind", "index", "hostname", "gpu"],
        "phase": ["phase", "kind", "index"],
        "kind": ["kind"],
    }.get(level)
    if keys is None:
        raise ValueError(f"level must be 'gpu', 'phase' or 'kind', not {level!r}")
    mt = _metric_table(fields or ACTIVITY_FIELDS)
    lf = _gpu_rows(_lazy(data)).filter(pl.col("field_id").is_in(mt["field_id"].to_list()))
    qcols = [f"p{round(q * 100):02d}" for q in quantiles]
    aggs = [pl.len().alias("n"), pl.col("value").mean().alias("mean")] + [
        pl.col("value").quantile(q, "linear").alias(c)
        for q, c in zip(quantiles, qcols, strict=True)
    ]
    # Memory: group on small integer keys (a phase-group number from the interval number, the
    # field id) and attach the phase / metric strings to the small result, instead of carrying
    # five string columns on every sample through the group-by (7.4 GB peak at 62 M rows before).
    bounds, table = _interval_table(phases)
    gkeys = [k for k in keys if k not in ("hostname", "gpu")]
    groups = table.select(gkeys).unique(maintain_order=True).with_row_index("_g")
    iv_to_g = table.join(groups, on=gkeys, how="inner", nulls_equal=True).select("_iv", "_g")
    if len(bounds) < 2 or iv_to_g.height == 0:
        lf = lf.filter(pl.lit(False)).with_columns(pl.lit(None, pl.UInt32).alias("_g"))
    else:
        lf = (
            lf.filter(_in_span(bounds))
            .with_columns(_interval_expr(bounds))
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
    # per-GPU groups lie within one host: run host batch by host batch (bounded memory)
    batches = _host_batches(lf) if level == "gpu" else [None]
    parts = [
        _only_hosts(lf, hosts).group_by(["_g", *rest, "field_id"]).agg(aggs).pipe(_collect)
        for hosts in batches
    ]
    # order as (kind, index, hostname, gpu, metric), on integer keys before the strings are
    # attached (the per-GPU result of a long store has millions of rows)
    kind_order = {"init": 0, "train": 1, "eval": 2}
    gr = groups.with_columns(
        pl.col("kind").replace_strict(kind_order, default=9, return_dtype=pl.Int32).alias("_k")
    ).with_columns(
        pl.struct(["_k", "index"] if "index" in groups.columns else ["_k"])
        .rank("dense")
        .cast(pl.UInt32)
        .alias("_gr")
    )
    mt_i = mt.with_row_index("_m")
    out = (
        pl.concat(parts)
        .join(mt_i.select("field_id", "_m"), on="field_id", how="inner")
        .join(gr.select("_g", "_gr"), on="_g", how="left")
        .sort(["_gr", *rest, "_m"])
        .join(groups, on="_g", how="left", maintain_order="left")
        .join(mt_i.select("_m", "metric", "unit"), on="_m", how="left", maintain_order="left")
    )
    return out.select([*keys, "metric", "unit", "n", "mean", *qcols])


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
    ev = _every_us(every)
    return (
        _gpu_rows(_lazy(data))
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
        .pipe(_collect)
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
    ev = _every_us(every)
    keys = ["hostname", "gpu"] if per == "gpu" else ["hostname"]
    out = (
        _gpu_rows(_lazy(data))
        .filter(pl.col("field_id") == fid)
        .with_columns(pl.col("timestamp").dt.truncate(f"{ev}us").alias("timestamp"))
        .group_by([*keys, "timestamp"])
        .agg(pl.col("value").mean().alias("value"), pl.len().alias("n"))
        .pipe(_collect)
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
# --------------------------------------------------------------------------------------


def tflops_from_tensor_active(
    tensor_active: float, accelerator: str = "H100 SXM", precision: str = "fp8"
) -> float:
    """Achieved TFLOP/s estimated as tensor-pipe activity x the dense tensor peak.

    ``DCGM_FI_PROF_PIPE_TENSOR_ACTIVE`` is the fraction of cycles in which *any* tensor pipe is
    active; it does not tell the datatype (no FP8 field, telemetry_formats.md A.0) nor whether
    the pipe ran at full rate, so the product is an upper-bound style estimate labelled with the
    precision of the peak used (:func:`trainperf.flops.peak_flops`, dense, no sparsity).

    Returns:
        TFLOP/s per GPU, e.g. 0.45 x 1978.9 = 890.505 for H100 SXM FP8.

    Raises:
        ValueError: unknown accelerator/precision (from ``peak_flops``) or a ratio outside 0-1.
    """
    from trainperf import flops

    if not 0.0 <= tensor_active <= 1.0:
        raise ValueError(f"tensor_active is a ratio 0-1, got {tensor_active}")
    return tensor_active * flops.peak_flops(accelerator, precision) / flops.TFLOP


def achieved_tflops(
    data: pl.DataFrame | pl.LazyFrame,
    phases: pl.DataFrame,
    accelerator: str = "H100 SXM",
    *,
    kinds: Sequence[str] = ("train", "eval", "init"),
    precisions: Sequence[str] = ("bf16", "fp8"),
) -> pl.DataFrame:
    """Achieved TFLOP/s per GPU from tensor activity, per phase kind, against each dense peak.

    Returns:
        kind (String), tensor_active_mean (Float64, ratio, mean over all samples of all GPUs in
        phases of that kind), n (UInt32), precision (String), peak_tflops (Float64, dense peak,
        TFLOP/s), achieved_tflops (Float64, TFLOP/s per GPU = mean x peak). No row for a kind
        without tensor-activity samples.
    """
    from trainperf import flops

    st = phase_stats(
        data, phases, level="kind", fields={"tensor_active": ACTIVITY_FIELDS["tensor_active"]}
    ).filter(pl.col("kind").is_in(list(kinds)))
    rows = []
    for kind, mean, n in st.select("kind", "mean", "n").iter_rows():
        for p in precisions:
            peak = flops.peak_flops(accelerator, p) / flops.TFLOP
            rows.append(
                {
                    "kind": kind,
                    "tensor_active_mean": mean,
                    "n": n,
                    "precision": p,
                    "peak_tflops": peak,
                    "achieved_tflops": mean * peak,
                }
            )
    return pl.DataFrame(
        rows,
        schema={
            "kind": pl.String,
            "tensor_active_mean": pl.Float64,
            "n": pl.UInt32,
            "precision": pl.String,
            "peak_tflops": pl.Float64,
            "achieved_tflops": pl.Float64,
        },
        orient="row",
    )


def tflops_comparison(
    achieved: pl.DataFrame, results: Any, *, synthetic: bool = False
) -> pl.DataFrame:
    """Telemetry TFLOP/s estimate beside the model TFLOP/s computed from the MLPerf log.

    Args:
        achieved: :func:`achieved_tflops` (its ``train`` rows are used).
        results: :class:`trainperf.mlperf.Results` of the run (or a result-file path), for
            :func:`trainperf.mlperf.throughput` (step level: median step time; end to end: tokens to
            converge / time to train, evaluations included).
        synthetic: mark the telemetry rows' source as synthetic.

    Returns:
        source (String), quantity (String), precision (String or null), tflops_per_gpu
        (Float64, TFLOP/s per GPU), fraction_of_peak (Float64: tensor activity or MFU against
        the dense peak of ``precision``; null where no peak applies).
    """
    from trainperf import mlperf

    if isinstance(results, (str, Path)):
        results = mlperf.load_results(results)
    src = "telemetry (synthetic)" if synthetic else "telemetry"
    rows = []
    for r in achieved.filter(pl.col("kind") == "train").iter_rows(named=True):
        rows.append(
            {
                "source": src,
                "quantity": "tensor active x dense peak, training blocks",
                "precision": r["precision"],
                "tflops_per_gpu": r["achieved_tflops"],
                "fraction_of_peak": r["tensor_active_mean"],
            }
        )
    thr = mlperf.throughput(results)
    for r in thr.iter_rows(named=True):
        for kind, label in (("step", "median step time"), ("e2e", "end to end")):
            t = r[f"model_tflops_per_gpu_{kind}"]
            if t is None:
                continue
            for p in ("bf16", "fp8"):
                rows.append(
                    {
                        "source": "MLPerf log",
                        "quantity": f"model FLOPs, {label}",
                        "precision": p,
                        "tflops_per_gpu": t,
                        "fraction_of_peak": r[f"mfu_{p}_dense_{kind}"],
                    }
                )
    return pl.DataFrame(
        rows,
        schema={
            "source": pl.String,
            "quantity": pl.String,
            "precision": pl.String,
            "tflops_per_gpu": pl.Float64,
            "fraction_of_peak": pl.Float64,
        },
        orient="row",
    )


def logged_flops_per_token(results: Any) -> float | None:
    """The model FLOPs per token a run logged itself (MLLOG key ``model_flops_per_token``), or None.

    ``python -m trainperf.capture.smoke`` logs it (Narayanan et al. SC21 eq. 3 for its own model); MLPerf
    reference implementations do not, and :func:`trainperf.mlperf.throughput` uses a model preset.
    """
    ev = results.events.filter(pl.col("key") == "model_flops_per_token")
    return float(ev["value_num"][0]) if ev.height and ev["value_num"][0] is not None else None


def mfu_cross_check(
    data: pl.DataFrame | pl.LazyFrame,
    results: Any,
    accelerator: str | None = None,
    *,
    precision: str = "bf16",
    peak_clock_mhz: float = 1830.0,
) -> pl.DataFrame:
    """MFU from model FLOPs (the log) against the tensor-activity estimate (the telemetry), per GPU.

    Model side: tokens per second per GPU = global_batch_size x max_sequence_length / (median step
    time x n GPUs), from the log's ``tracked_stats`` step times; times the model FLOPs per token the
    run logged (:func:`logged_flops_per_token`) or, for gpt3, the preset of
    :func:`trainperf.mlperf.throughput`; divided by the dense peak of ``precision``
    (:func:`trainperf.flops.peak_flops`).

    Telemetry side, over the samples inside the training blocks of the log: mean
    ``DCGM_FI_PROF_PIPE_TENSOR_ACTIVE`` (fraction of cycles any tensor pipe is busy) x the same dense
    peak; and that estimate scaled by the mean SM clock over the clock the datasheet peak assumes,
    since the activity ratio counts cycles at the clock the GPU actually ran (a power-capped GPU runs
    below it). For H100/H200 SXM the dense BF16 peak, 989.4 TFLOP/s, is 132 SMs x 4 tensor cores x
    1024 dense BF16 FLOP per clock at 1830 MHz (989.4e12 / (528 x 1024) = 1.830e9 Hz; NVIDIA H100
    Tensor Core GPU Architecture whitepaper, https://resources.nvidia.com/en-us-tensor-core), not at
    the 1980 MHz maximum SM clock that ``nvidia-smi --query-gpu=clocks.max.sm`` reports.

    Args:
        data: DCGM long frame (the capture).
        results: :class:`trainperf.mlperf.Results` of the run (a result-file path is loaded).
        accelerator: GPU model for the peak; None: the log's ``accelerator_model``.
        precision: the datatype the run computed in (``bf16`` for the smoke benchmark).
        peak_clock_mhz: the SM clock the dense peak assumes (MHz; 1830 for H100 and H200 SXM).

    Returns:
        one row per GPU: gpu (Int32), n_samples (UInt32), tensor_active_mean (Float64, 0-1),
        sm_clock_mean_mhz (Float64, MHz), model_tflops_per_gpu (Float64, TFLOP/s), mfu (Float64,
        0-1 against the dense peak of ``precision``), tensor_estimate_tflops (Float64, TFLOP/s),
        tensor_estimate_clock_adjusted_tflops (Float64, TFLOP/s), estimate_over_model (Float64:
        tensor_estimate_tflops / model_tflops_per_gpu), adjusted_over_model (Float64), precision
        (String).

    Raises:
        ValueError: the log has no step times, no FLOPs per token, or the telemetry no tensor
            activity inside the training blocks.
    """
    from trainperf import flops, mlperf

    if isinstance(results, (str, Path)):
        results = mlperf.load_results(results)
    run = results.runs.row(0, named=True)
    steps = mlperf.step_times(results.events)
    if steps.height == 0:
        raise ValueError(f"{run['result_file']}: no tracked_stats step times in the log")
    f_tok = logged_flops_per_token(results)
    if f_tok is None:
        thr = mlperf.throughput(results)
        f_tok = thr["flops_per_token"][0] if thr.height else None
    if f_tok is None:
        raise ValueError(
            f"{run['result_file']}: no model FLOPs per token (not logged, no model preset for {run['benchmark']!r})"
        )
    n = run["n_accelerators"] or 1
    step_s = steps["step_time_s"].median()
    tokens_per_s_per_gpu = run["global_batch_size"] * run["max_sequence_length"] / (step_s * n)
    peak = flops.peak_flops(accelerator or run["accelerator_model"], precision)
    model_tflops = tokens_per_s_per_gpu * f_tok / flops.TFLOP
    phases = phases_from_log(results)
    tensor_id, clock_id = ACTIVITY_FIELDS["tensor_active"][0], ACTIVITY_FIELDS["sm_clock"][0]
    lf = with_phases(data, phases).filter(pl.col("kind") == "train")
    wide = _collect(
        lf.filter(pl.col("field_id").is_in([tensor_id, clock_id]))
        .group_by("gpu", "field_id")
        .agg(pl.col("value").mean().alias("mean"), pl.len().alias("n"))
    )
    tensor = wide.filter(pl.col("field_id") == tensor_id)
    if tensor.height == 0:
        raise ValueError(
            "no DCGM_FI_PROF_PIPE_TENSOR_ACTIVE samples inside the training blocks of the log"
        )
    clock = wide.filter(pl.col("field_id") == clock_id).select(
        "gpu", pl.col("mean").alias("sm_clock_mean_mhz")
    )
    out = (
        tensor.select(
            "gpu", pl.col("n").alias("n_samples"), pl.col("mean").alias("tensor_active_mean")
        )
        .join(clock, on="gpu", how="left")
        .with_columns(
            pl.lit(model_tflops).alias("model_tflops_per_gpu"),
            pl.lit(model_tflops * flops.TFLOP / peak).alias("mfu"),
            (pl.col("tensor_active_mean") * peak / flops.TFLOP).alias("tensor_estimate_tflops"),
        )
        .with_columns(
            (pl.col("tensor_estimate_tflops") * pl.col("sm_clock_mean_mhz") / peak_clock_mhz).alias(
                "tensor_estimate_clock_adjusted_tflops"
            )
        )
        .with_columns(
            (pl.col("tensor_estimate_tflops") / pl.col("model_tflops_per_gpu")).alias(
                "estimate_over_model"
            ),
            (
                pl.col("tensor_estimate_clock_adjusted_tflops") / pl.col("model_tflops_per_gpu")
            ).alias("adjusted_over_model"),
            pl.lit(precision).alias("precision"),
        )
        .sort("gpu")
    )
    return out


def allreduce_check(
    data: pl.DataFrame | pl.LazyFrame,
    results: Any,
    *,
    grad_bytes_per_param: int = 4,
) -> pl.DataFrame:
    """NVLink traffic of a data-parallel run against its gradient all-reduce volume, per GPU.

    A ring all-reduce of S bytes over n GPUs sends 2(n-1)/n x S bytes from each GPU (reduce-scatter
    then all-gather; Patarasuk and Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
    workstations", JPDC 2009; NCCL's ring algorithm). With S = parameters x ``grad_bytes_per_param``
    (4: fp32 gradients of a bf16-autocast model, as ``trainperf.capture.smoke`` trains) once per step, the
    expected transmit rate is that volume over the median step time. The parameter count is the one
    the run logged (MLLOG key ``model_param_count``).

    Returns:
        one row per GPU: gpu (Int32), measured_tx_GBps, measured_rx_GBps (Float64, GB/s = 1e9 B/s,
        mean of DCGM_FI_PROF_NVLINK_TX_BYTES / RX_BYTES (B/s gauges) over the training blocks),
        expected_tx_GBps (Float64), measured_over_expected (Float64).

    Raises:
        ValueError: the log has no parameter count or step times, or the run used one GPU.
    """
    from trainperf import mlperf

    if isinstance(results, (str, Path)):
        results = mlperf.load_results(results)
    run = results.runs.row(0, named=True)
    n = run["n_accelerators"] or 1
    if n < 2:
        raise ValueError(f"{run['result_file']}: a one-GPU run has no gradient all-reduce")
    ev = results.events.filter(pl.col("key") == "model_param_count")
    steps = mlperf.step_times(results.events)
    if ev.height == 0 or steps.height == 0:
        raise ValueError(
            f"{run['result_file']}: needs model_param_count and tracked_stats step times in the log"
        )
    params = float(ev["value_num"][0])
    expected = 2 * (n - 1) / n * params * grad_bytes_per_param / steps["step_time_s"].median()
    phases = phases_from_log(results)
    tx, rx = (
        dcgm.field_id("DCGM_FI_PROF_NVLINK_TX_BYTES"),
        dcgm.field_id("DCGM_FI_PROF_NVLINK_RX_BYTES"),
    )
    got = _collect(
        with_phases(data, phases)
        .filter((pl.col("kind") == "train") & pl.col("field_id").is_in([tx, rx]))
        .group_by("gpu")
        .agg(
            (pl.col("value").filter(pl.col("field_id") == tx).mean() / 1e9).alias(
                "measured_tx_GBps"
            ),
            (pl.col("value").filter(pl.col("field_id") == rx).mean() / 1e9).alias(
                "measured_rx_GBps"
            ),
        )
    )
    return got.with_columns(
        pl.lit(expected / 1e9).alias("expected_tx_GBps"),
        (pl.col("measured_tx_GBps") / (expected / 1e9)).alias("measured_over_expected"),
    ).sort("gpu")


# --------------------------------------------------------------------------------------
# Network: NIC, PCIe, NVLink
# --------------------------------------------------------------------------------------


def _rail_map(devices: Iterable[tuple[str, str]], rail_devices: Any) -> pl.DataFrame:
    rows = []
    if isinstance(rail_devices, Mapping):
        m = {str(k): int(v) for k, v in rail_devices.items()}
        for h, d in devices:
            if d in m:
                rows.append((h, d, m[d]))
    elif rail_devices is not None:
        m = {str(d): i for i, d in enumerate(rail_devices)}
        for h, d in devices:
            if d in m:
                rows.append((h, d, m[d]))
    else:
        per_host: dict[str, list[str]] = {}
        for h, d in devices:
            per_host.setdefault(h, []).append(d)
        for h, ds in per_host.items():
            for i, d in enumerate(sorted(set(ds), key=_natural_key)):
                rows.append((h, d, i))
    return pl.DataFrame(
        rows, schema={"hostname": pl.String, "device": pl.String, "rail": pl.Int32}, orient="row"
    )


def nic_throughput(
    data: pl.DataFrame | pl.LazyFrame,
    rail_devices: Sequence[str] | Mapping[str, int] | None = None,
) -> pl.DataFrame:
    """Per-rail NIC throughput (TX + RX, B/s) from node-exporter byte counters.

    Rate between consecutive samples of one (host, device, direction) counter:
    ``(v_k - v_{k-1}) / (t_k - t_{k-1})``; a negative step is a counter reset (reboot, driver
    reload) and counts as ``v_k`` bytes since 0, as Prometheus ``increase()`` does. The rate is
    stamped at ``t_k``. TX and RX are summed where both are present at a timestamp.

    Args:
        data: reader frame with ``node_network_{transmit,receive}_bytes_total`` series (label
            ``device``).
        rail_devices: device -> rail mapping (a sequence: position = rail); default: each host's
            devices in natural sort order are rails 0, 1, ... (rail i serves GPU i).

    Returns:
        hostname (String), rail (Int32), device (String), timestamp (Datetime[us, UTC]),
        tx_Bps, rx_Bps, bytes_per_s (Float64, B/s); sorted by host, rail, time. Empty when no
        NIC counters are present.
    """
    key = ["hostname", "device", "field"]
    nic_rows = _lazy(data).filter(pl.col("field").is_in([NIC_TX, NIC_RX]))
    batches = _host_batches(nic_rows)
    if len(batches) > 1:  # counters are per host: run host batch by host batch
        return pl.concat(
            [nic_throughput(_only_hosts(nic_rows, h), rail_devices) for h in batches]
        ).sort("hostname", "rail", "timestamp")
    lf = nic_rows.select(
        "hostname",
        "field",
        "timestamp",
        "value",
        pl.col("labels").str.json_path_match("$.device").alias("device"),
    ).sort([*key, "timestamp"])
    dv = pl.col("value").diff().over(key)
    dt = pl.col("timestamp").diff().over(key).dt.total_microseconds() / 1e6
    rates = (
        lf.with_columns((pl.when(dv < 0).then(pl.col("value")).otherwise(dv) / dt).alias("rate"))
        .filter(pl.col("rate").is_not_null() & pl.col("rate").is_finite())
        .group_by("hostname", "device", "timestamp")
        .agg(
            pl.col("rate").filter(pl.col("field") == NIC_TX).mean().alias("tx_Bps"),
            pl.col("rate").filter(pl.col("field") == NIC_RX).mean().alias("rx_Bps"),
        )
        .pipe(_collect)
    )
    schema = {
        "hostname": pl.String,
        "rail": pl.Int32,
        "device": pl.String,
        "timestamp": _US,
        "tx_Bps": pl.Float64,
        "rx_Bps": pl.Float64,
        "bytes_per_s": pl.Float64,
    }
    if rates.height == 0:
        return pl.DataFrame(schema=schema)
    devs = rates.select("hostname", "device").unique().rows()
    rm = _rail_map(devs, rail_devices)
    return (
        rates.join(rm, on=["hostname", "device"], how="inner")
        .with_columns(
            (pl.col("tx_Bps").fill_null(0) + pl.col("rx_Bps").fill_null(0)).alias("bytes_per_s")
        )
        .select(list(schema))
        .sort("hostname", "rail", "timestamp")
    )


def _stat(expr: pl.Expr, stat: str) -> pl.Expr:
    if stat == "mean":
        return expr.mean()
    if stat == "max":
        return expr.max()
    m = re.fullmatch(r"p(\d{1,2})", stat)
    if m:
        return expr.quantile(int(m.group(1)) / 100, "linear")
    raise ValueError(f"stat must be 'mean', 'max' or 'pNN', not {stat!r}")


def link_throughput(
    data: pl.DataFrame | pl.LazyFrame,
    phases: pl.DataFrame | None = None,
    *,
    kind: str | None = "train",
    stat: str = "mean",
    rail_devices: Sequence[str] | Mapping[str, int] | None = None,
) -> pl.DataFrame:
    """Per node and rail: NIC, PCIe and NVLink throughput (TX + RX, B/s) in one phase kind.

    Rail i = NIC i = GPU i (rail-optimized fabric). Per timestamp TX + RX is formed first
    (PCIe: ``DCGM_FI_PROF_PCIE_TX_BYTES`` + ``_RX_BYTES``; NVLink: ``DCGM_FI_PROF_NVLINK_TX_BYTES``
    + ``_RX_BYTES``, else ``DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL`` x 1e6; NIC: :func:`nic_throughput`),
    then ``stat`` over the samples in phases of ``kind``.

    Args:
        data: reader frame (eager or lazy).
        phases: :func:`phases_from_log`; None = every sample.
        kind: ``train``, ``eval``, ``init`` or None (all phases).
        stat: ``mean``, ``max`` or a quantile ``p95``/``p50``...
        rail_devices: see :func:`nic_throughput`.

    Returns:
        hostname (String), rail (Int32), nic_Bps, pcie_Bps, nvlink_Bps (Float64, B/s; null where
        the source is absent), sorted by host and rail.
    """

    def in_phase(lf: pl.LazyFrame) -> pl.LazyFrame:
        if phases is None:
            return lf
        lf = with_phases(lf, phases)
        return lf.filter(pl.col("kind") == kind) if kind else lf

    lf_all = _lazy(data)
    batches = _host_batches(lf_all)
    if len(batches) > 1:  # every result row is one host's: run host batch by host batch
        return pl.concat(
            [
                link_throughput(
                    _only_hosts(lf_all, hosts),
                    phases,
                    kind=kind,
                    stat=stat,
                    rail_devices=rail_devices,
                )
                for hosts in batches
            ]
        ).sort("hostname", "rail")
    g = _gpu_rows(lf_all).filter(pl.col("field_id").is_in([1009, 1010, 1011, 1012, 449]))
    per_ts = (
        in_phase(g)
        .group_by("hostname", "gpu", "timestamp")
        .agg(
            pl.col("value").filter(pl.col("field_id") == 1009).mean().alias("_ptx"),
            pl.col("value").filter(pl.col("field_id") == 1010).mean().alias("_prx"),
            pl.col("value").filter(pl.col("field_id") == 1011).mean().alias("_ntx"),
            pl.col("value").filter(pl.col("field_id") == 1012).mean().alias("_nrx"),
            (pl.col("value").filter(pl.col("field_id") == 449).mean() * 1e6).alias("_n449"),
        )
        .with_columns(
            (pl.col("_ptx") + pl.col("_prx")).alias("pcie"),
            pl.coalesce(pl.col("_ntx") + pl.col("_nrx"), pl.col("_n449")).alias("nvlink"),
        )
    )
    gpu = (
        per_ts.group_by("hostname", "gpu")
        .agg(
            _stat(pl.col("pcie"), stat).alias("pcie_Bps"),
            _stat(pl.col("nvlink"), stat).alias("nvlink_Bps"),
        )
        .rename({"gpu": "rail"})
        .pipe(_collect)
    )
    nic = nic_throughput(data, rail_devices)
    if phases is not None and nic.height:
        nic = with_phases(nic, phases).pipe(_collect)
        if kind:
            nic = nic.filter(pl.col("kind") == kind)
    nic = nic.group_by("hostname", "rail").agg(_stat(pl.col("bytes_per_s"), stat).alias("nic_Bps"))
    out = gpu.join(nic, on=["hostname", "rail"], how="full", coalesce=True)
    return out.select(
        "hostname", pl.col("rail").cast(pl.Int32), "nic_Bps", "pcie_Bps", "nvlink_Bps"
    ).sort("hostname", "rail")


def node_throughput(link: pl.DataFrame) -> pl.DataFrame:
    """Per node totals and rail spread of :func:`link_throughput`.

    Returns:
        hostname (String), n_rails (UInt32), nic_total_Bps, pcie_total_Bps, nvlink_total_Bps
        (Float64, B/s, sum over rails), nic_min_Bps, nic_median_Bps, nic_max_Bps (Float64, B/s
        over rails), sorted by host.
    """
    return (
        link.group_by("hostname")
        .agg(
            pl.len().alias("n_rails"),
            pl.col("nic_Bps").sum().alias("nic_total_Bps"),
            pl.col("pcie_Bps").sum().alias("pcie_total_Bps"),
            pl.col("nvlink_Bps").sum().alias("nvlink_total_Bps"),
            pl.col("nic_Bps").min().alias("nic_min_Bps"),
            pl.col("nic_Bps").median().alias("nic_median_Bps"),
            pl.col("nic_Bps").max().alias("nic_max_Bps"),
        )
        .with_columns(pl.col("n_rails").cast(pl.UInt32))
        .sort("hostname")
    )


def rail_imbalance(
    link: pl.DataFrame, column: str = "nic_Bps", *, threshold: float = 0.5
) -> pl.DataFrame:
    """Rails whose throughput is below ``threshold`` x the median of their node's rails.

    The node median is polars' median over the node's rails with a non-null value (the mean of
    the two middle values for an even count). A node whose median is 0 flags nothing.

    Args:
        link: :func:`link_throughput` (or any frame with hostname, rail and ``column``).
        column: ``nic_Bps``, ``pcie_Bps`` or ``nvlink_Bps``.
        threshold: fraction of the node median.

    Returns:
        the flagged rails only: hostname (String), rail (Int32), value (Float64, B/s),
        node_median (Float64, B/s), ratio (Float64, value / node_median); sorted by host, rail.
    """
    d = link.filter(pl.col(column).is_not_null()).with_columns(
        pl.col(column).median().over("hostname").alias("node_median")
    )
    return (
        d.filter((pl.col("node_median") > 0) & (pl.col(column) < threshold * pl.col("node_median")))
        .select(
            "hostname",
            pl.col("rail").cast(pl.Int32),
            pl.col(column).alias("value"),
            "node_median",
            (pl.col(column) / pl.col("node_median")).alias("ratio"),
        )
        .sort("hostname", "rail")
    )


def rail_summary(link: pl.DataFrame) -> pl.DataFrame:
    """Per rail, across nodes: median and min of NIC, PCIe and NVLink throughput.

    Args:
        link: :func:`link_throughput`.

    Returns:
        rail (Int32), n_nodes (UInt32), then for each of nic, pcie, nvlink: ``<x>_median_GBps`` and
        ``<x>_min_GBps`` (Float64, GB/s = 1e9 B/s); sorted by rail.
    """
    aggs: list[pl.Expr] = [pl.col("hostname").n_unique().alias("n_nodes")]
    for x in ("nic", "pcie", "nvlink"):
        c = pl.col(f"{x}_Bps") / 1e9
        aggs += [c.median().alias(f"{x}_median_GBps"), c.min().alias(f"{x}_min_GBps")]
    return link.group_by("rail").agg(aggs).sort("rail")


def imbalance_summary(link: pl.DataFrame, *, threshold: float = 0.5) -> pl.DataFrame:
    """:func:`rail_imbalance` for NIC, PCIe and NVLink, counted per rail.

    Returns:
        source (String: ``NIC``, ``PCIe``, ``NVLink``), rail (Int32), n_flagged_nodes (UInt32),
        n_nodes (UInt32, nodes with a value for that source), median_ratio (Float64, median of
        value / node median over the flagged nodes); only rails flagged on at least one node.
    """
    parts = []
    for col, name in (("nic_Bps", "NIC"), ("pcie_Bps", "PCIe"), ("nvlink_Bps", "NVLink")):
        if col not in link.columns:
            continue
        n_nodes = link.filter(pl.col(col).is_not_null())["hostname"].n_unique()
        f = rail_imbalance(link, col, threshold=threshold)
        parts.append(
            f.group_by("rail")
            .agg(
                pl.len().cast(pl.UInt32).alias("n_flagged_nodes"),
                pl.col("ratio").median().alias("median_ratio"),
            )
            .with_columns(pl.lit(name).alias("source"), pl.lit(n_nodes, pl.UInt32).alias("n_nodes"))
            .select("source", "rail", "n_flagged_nodes", "n_nodes", "median_ratio")
        )
    schema = {
        "source": pl.String,
        "rail": pl.Int32,
        "n_flagged_nodes": pl.UInt32,
        "n_nodes": pl.UInt32,
        "median_ratio": pl.Float64,
    }
    if not parts:
        return pl.DataFrame(schema=schema)
    return pl.concat(parts).cast(schema).sort("source", "rail")


# --------------------------------------------------------------------------------------
# What cannot be computed
# --------------------------------------------------------------------------------------


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
    present = _lazy(data).select("hostname", "field_id", "field").unique().pipe(_collect)
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
