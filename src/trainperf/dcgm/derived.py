"""Derived quantities of reader frames: SI units, counter increases, coverage, which metrics are
available or missing and why, NVLink throughput from either field, XID events."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable
from typing import Any

import polars as pl

from trainperf.dcgm.fields import FIELDS, METRIC_REQUIREMENTS, SERIES_KEY
from trainperf.dcgm.fields import resolve_ids as _resolve_ids
from trainperf.dcgm.series import epoch_us as _epoch_us
from trainperf.dcgm.series import interval_us as _interval_us

__all__ = [
    "available_metrics",
    "counter_increase",
    "coverage",
    "missing_metrics",
    "nvlink_throughput",
    "with_si_units",
    "xid_events",
]


def with_si_units(frame: pl.DataFrame) -> pl.DataFrame:
    """Add ``unit`` (String, as read), ``value_si`` (Float64) and ``si_unit`` (String) by field id.

    Conversions (:data:`trainperf.dcgm.FIELDS`): % -> ratio (x0.01), MHz -> Hz, mJ -> J, MiB -> B
    (x2**20), MB/s -> B/s (x1e6), KB/s -> B/s, ns -> s. Unknown fields get nulls.
    """
    t = pl.DataFrame(
        {
            "field_id": list(FIELDS),
            "unit": [f.unit for f in FIELDS.values()],
            "si_unit": [f.si_unit for f in FIELDS.values()],
            "_scale": [f.si_scale for f in FIELDS.values()],
        },
        schema={
            "field_id": pl.Int32,
            "unit": pl.String,
            "si_unit": pl.String,
            "_scale": pl.Float64,
        },
    )
    return (
        frame.join(t, on="field_id", how="left", maintain_order="left")
        .with_columns((pl.col("value") * pl.col("_scale")).alias("value_si"))
        .drop("_scale")
    )


def counter_increase(frame: pl.DataFrame, field: int | str) -> pl.DataFrame:
    """Reset-aware increase of a *counter* field per series between consecutive samples.

    A negative step is a counter reset (driver reload / reboot): the increase of that
    step is the new value (counted from 0), as Prometheus ``increase()`` does.

    Returns:
        columns SERIES_KEY + timestamp (Datetime[us, UTC]) + ``increase`` (Float64, in
        the field's unit; null on each series' first sample).

    Raises:
        ValueError: the field is not a counter in :data:`trainperf.dcgm.FIELDS` (e.g. the PCIe/NVLink
            ``*_BYTES`` rates, which dcgm-exporter declares ``counter`` but are B/s gauges).
    """
    (fid,) = _resolve_ids([field])
    info = FIELDS[fid]
    if info.kind != "counter":
        raise ValueError(
            f"{info.name} ({fid}) is a {info.kind} in {info.unit}, not a counter: never difference it"
        )
    d = frame.filter(pl.col("field_id") == fid).sort([*SERIES_KEY, "timestamp"], nulls_last=True)
    step = pl.col("value").diff().over(SERIES_KEY)
    return d.with_columns(
        pl.when(step < 0).then(pl.col("value")).otherwise(step).alias("increase")
    ).select([*SERIES_KEY, "timestamp", "increase"])


def coverage(
    frame: pl.DataFrame,
    interval: float | str | _dt.timedelta,
    *,
    start: _dt.datetime | float | str | None = None,
    end: _dt.datetime | float | str | None = None,
) -> pl.DataFrame:
    """Share of expected samples present, per series.

    The window is [``start``, ``end``] if given, else per host the first and last
    timestamp of *any* series of that host (so a series that stops early scores < 1).
    ``n_expected = floor((end - start) / interval) + 1``; ``n_present`` = distinct
    timestamps of the series inside the window (duplicates count once); ``coverage =
    min(1, n_present / n_expected)``. Series absent altogether do not appear: see
    :func:`missing_metrics`.

    Returns:
        SERIES_KEY columns + ``start``, ``end`` (Datetime[us, UTC]), ``n_present``,
        ``n_expected`` (Int64), ``coverage`` (Float64).
    """
    iv = _interval_us(interval)
    if iv <= 0:
        raise ValueError("interval must be positive")
    f = frame.with_columns(pl.col("timestamp").dt.epoch("us").alias("_us"))
    if start is not None and end is not None:
        win = (
            f.select("hostname")
            .unique()
            .with_columns(pl.lit(_epoch_us(start)).alias("_s"), pl.lit(_epoch_us(end)).alias("_e"))
        )
    else:
        win = f.group_by("hostname").agg(
            pl.col("_us").min().alias("_s"), pl.col("_us").max().alias("_e")
        )
        if start is not None:
            win = win.with_columns(pl.lit(_epoch_us(start)).alias("_s"))
        if end is not None:
            win = win.with_columns(pl.lit(_epoch_us(end)).alias("_e"))
    f = f.join(win, on="hostname", how="left", nulls_equal=True)
    out = (
        f.group_by(SERIES_KEY)
        .agg(
            pl.col("_s").first(),
            pl.col("_e").first(),
            pl.col("_us")
            .filter((pl.col("_us") >= pl.col("_s")) & (pl.col("_us") <= pl.col("_e")))
            .n_unique()
            .alias("n_present"),
        )
        .with_columns(
            (((pl.col("_e") - pl.col("_s")) // iv) + 1).cast(pl.Int64).alias("n_expected")
        )
        .with_columns(
            pl.min_horizontal(pl.lit(1.0), pl.col("n_present") / pl.col("n_expected")).alias(
                "coverage"
            ),
            pl.col("_s").cast(pl.Datetime("us", "UTC")).alias("start"),
            pl.col("_e").cast(pl.Datetime("us", "UTC")).alias("end"),
            pl.col("n_present").cast(pl.Int64),
        )
    )
    return out.select([*SERIES_KEY, "start", "end", "n_present", "n_expected", "coverage"]).sort(
        SERIES_KEY, nulls_last=True
    )


def available_metrics(frame: pl.DataFrame) -> pl.DataFrame:
    """Which DCGM fields a frame holds.

    Returns:
        one row per (field_id, field): ``n_hosts`` (UInt32), ``n_series`` (UInt32),
        ``n_samples`` (UInt32), ``profiling`` (Boolean), ``unit`` (String), sorted by id.
    """
    g = frame.group_by("field_id", "field").agg(
        pl.col("hostname").n_unique().alias("n_hosts"),
        pl.struct(SERIES_KEY).n_unique().alias("n_series"),
        pl.len().alias("n_samples"),
    )
    return g.with_columns(
        pl.col("field_id")
        .map_elements(
            lambda i: FIELDS[i].profiling if i in FIELDS else None, return_dtype=pl.Boolean
        )
        .alias("profiling"),
        pl.col("field_id")
        .map_elements(lambda i: FIELDS[i].unit if i in FIELDS else None, return_dtype=pl.String)
        .alias("unit"),
    ).sort("field_id", nulls_last=True)


def missing_metrics(frame: pl.DataFrame, wanted: Iterable[int | str]) -> pl.DataFrame:
    """Say which wanted fields / report metrics cannot be computed, per host, and why.

    ``wanted`` holds field ids, metric names (any alias) or keys of
    :data:`trainperf.dcgm.METRIC_REQUIREMENTS` (``"sm_active"``, ``"nvlink_bytes"``...; a metric is
    computable on a host if one of its alternatives has all its fields there).

    Reasons (``reason`` column), most specific first:

    * ``no_profiling``: the host exports no ``DCGM_FI_PROF_*`` series at all (profiling
      module unavailable: DCP unsupported on the GPU/MIG profile, counters held by
      another profiler such as Nsight, or no DCP fields in the exporter's counter CSV);
    * ``off_by_default``: a field commented out in dcgm-exporter ``default-counters.csv``
      (SM_ACTIVE, SM_OCCUPANCY, NVLINK_TX/RX, FP pipes...): enable it in the CSV (``-f``);
    * ``not_exported``: any other absent field.

    Returns:
        one row per (wanted item, host) that is *not* computable: ``wanted`` (String),
        ``hostname`` (String), ``missing_field_ids`` (List[Int32]), ``reason``
        (String), ``detail`` (String). Empty frame = everything computable.
    """
    hosts = frame["hostname"].unique(maintain_order=True).to_list() or [None]
    have: dict[Any, set[int]] = {h: set() for h in hosts}
    for h, fid in frame.select("hostname", "field_id").unique().iter_rows():
        if fid is not None:
            have.setdefault(h, set()).add(fid)
    out = []
    for w in wanted:
        if isinstance(w, str) and w in METRIC_REQUIREMENTS:
            alts = METRIC_REQUIREMENTS[w]
        else:
            alts = [tuple(_resolve_ids([w]))]
        for h in hosts:
            fids = have.get(h, set())
            if any(all(x in fids for x in alt) for alt in alts):
                continue
            miss = [x for x in alts[0] if x not in fids]
            prof_any = any(FIELDS.get(x) and FIELDS[x].profiling for x in fids)
            infos = [FIELDS[x] for x in miss if x in FIELDS]
            if any(i.profiling for i in infos) and not prof_any:
                reason = "no_profiling"
                detail = "host exports no DCGM_FI_PROF_* series: profiling (DCP) unavailable or not enabled"
            elif infos and all(not i.default_on for i in infos):
                reason = "off_by_default"
                detail = "off in dcgm-exporter default-counters.csv; enable " + ", ".join(
                    i.name for i in infos
                )
            else:
                reason = "not_exported"
                detail = "not in the export: " + ", ".join(
                    FIELDS[x].name if x in FIELDS else str(x) for x in miss
                )
            out.append(
                {
                    "wanted": str(w),
                    "hostname": h,
                    "missing_field_ids": miss,
                    "reason": reason,
                    "detail": detail,
                }
            )
    schema = {
        "wanted": pl.String,
        "hostname": pl.String,
        "missing_field_ids": pl.List(pl.Int32),
        "reason": pl.String,
        "detail": pl.String,
    }
    return pl.DataFrame(out, schema=schema, orient="row") if out else pl.DataFrame(schema=schema)


def nvlink_throughput(frame: pl.DataFrame, *, tolerance: float = 0.25) -> pl.DataFrame:
    """One NVLink throughput (B/s, TX+RX, all links) per GPU and timestamp, from either field.

    The same traffic is reported by ``DCGM_FI_PROF_NVLINK_TX_BYTES`` + ``_RX_BYTES``
    (1011 + 1012, B/s) and by ``DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL`` (449, MB/s,
    converted x1e6 to B/s). Rule: where 1011 and 1012 are both present at a
    (host, gpu, timestamp), their sum is used (``source="prof"``); else 449 x 1e6
    (``source="dev449"``). Where both are present, ``rel_diff`` = |prof - dev449| / max
    of the two and ``disagree`` = rel_diff > ``tolerance``; otherwise null. GPU-level
    rows only (entity ``GPU``); per-link entities are ignored.

    Returns:
        hostname, gpu, uuid, job_id, timestamp, ``bytes_per_s`` (Float64), ``source``
        (String), ``rel_diff`` (Float64), ``disagree`` (Boolean).
    """
    key = ["hostname", "gpu", "uuid", "job_id", "timestamp"]
    g = frame.filter((pl.col("entity") == "GPU") & pl.col("field_id").is_in([449, 1011, 1012]))
    w = g.group_by(key).agg(
        pl.col("value").filter(pl.col("field_id") == 1011).mean().alias("tx"),
        pl.col("value").filter(pl.col("field_id") == 1012).mean().alias("rx"),
        (pl.col("value").filter(pl.col("field_id") == 449).mean() * 1e6).alias("dev"),
    )
    prof = pl.col("tx") + pl.col("rx")
    has_prof = pl.col("tx").is_not_null() & pl.col("rx").is_not_null()
    rel = (prof - pl.col("dev")).abs() / pl.max_horizontal(prof, pl.col("dev"))
    return (
        w.with_columns(
            pl.when(has_prof).then(prof).otherwise(pl.col("dev")).alias("bytes_per_s"),
            pl.when(has_prof)
            .then(pl.lit("prof"))
            .when(pl.col("dev").is_not_null())
            .then(pl.lit("dev449"))
            .alias("source"),
            pl.when(has_prof & pl.col("dev").is_not_null())
            .then(rel.fill_nan(0.0))
            .alias("rel_diff"),
        )
        .with_columns((pl.col("rel_diff") > tolerance).alias("disagree"))
        .filter(pl.col("bytes_per_s").is_not_null())
        .select([*key, "bytes_per_s", "source", "rel_diff", "disagree"])
        .sort(key, nulls_last=True)
    )


def xid_events(frame: pl.DataFrame) -> pl.DataFrame:
    """Collapse the ``DCGM_FI_DEV_XID_ERRORS`` (230) gauge into events.

    The field holds the *last XID seen*, so it repeats the same code every scrape. Per
    (host, gpu, uuid, entity, entity_id), samples are sorted by time; an event starts at
    each sample whose XID differs from the previous sample's (including the first
    non-zero sample and a change back after 0); consecutive equal non-zero samples
    extend it. Value 0 means "no XID" and is not an event. A same-code XID recurring
    while the gauge already shows it cannot be seen in this field (use
    ``DCGM_EXP_XID_ERRORS_COUNT``).

    Returns:
        hostname, gpu, uuid, entity, entity_id, ``xid`` (Int32), ``first_seen``,
        ``last_seen`` (Datetime[us, UTC]), ``n_samples`` (UInt32), ``job_id`` (String,
        of the first sample), sorted by host, gpu, first_seen.
    """
    key = ["hostname", "gpu", "uuid", "entity", "entity_id"]
    d = frame.filter(pl.col("field_id") == 230).sort([*key, "timestamp"], nulls_last=True)
    d = d.with_columns(pl.col("value").round(0).cast(pl.Int32).alias("xid"))
    d = d.with_columns(
        (pl.col("xid") != pl.col("xid").shift(1).over(key)).fill_null(True).alias("_chg")
    )
    d = d.with_columns(pl.col("_chg").cast(pl.UInt32).cum_sum().over(key).alias("_run"))
    ev = (
        d.filter(pl.col("xid") != 0)
        .group_by([*key, "_run"])
        .agg(
            pl.col("xid").first(),
            pl.col("timestamp").min().alias("first_seen"),
            pl.col("timestamp").max().alias("last_seen"),
            pl.len().alias("n_samples"),
            pl.col("job_id").first(),
        )
    )
    return ev.drop("_run").sort(["hostname", "gpu", "first_seen"], nulls_last=True)
