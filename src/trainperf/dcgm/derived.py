"""Derived quantities of reader frames: SI units, counter increases, coverage, which metrics are
available or missing and why, NVLink throughput from either field, XID events."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable
from typing import Any

import polars as pl

from trainperf.dcgm.fields import FIELDS, METRIC_REQUIREMENTS, SERIES_KEY
from trainperf.dcgm.fields import resolve_ids as _resolve_ids
from trainperf.dcgm.monotonic import LIFETIME_FIELDS, glitch_expr, reset_expr
from trainperf.dcgm.series import epoch_us as _epoch_us
from trainperf.dcgm.series import interval_us as _interval_us

__all__ = [
    "available_metrics",
    "counter_increase",
    "coverage",
    "device_rows_per_gpu",
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


#: Device-level fields dcgm-exporter repeats on every MIG instance row of a GPU (``GPU_I_ID`` label):
#: the GPU's counters (energy, ECC, row remap, violations, PCIe replay, NVLink errors), its last XID
#: (230), clock-event reasons (112), power (155) and row-remap failure (395). One physical GPU has one
#: value of each; the instance rows are copies (dcgm-exporter ``pkg/dcgmexporter``: device fields are
#: read per GPU and written with each instance's labels). Profiling (``DCGM_FI_PROF_*``) fields and
#: memory gauges are per instance and are not in this set.
DEVICE_LEVEL_FIELDS: frozenset[int] = frozenset(
    {fid for fid, f in FIELDS.items() if f.kind in ("counter", "code", "bitmask")} | {155, 395}
)


def device_rows_per_gpu(frame: pl.DataFrame) -> pl.DataFrame:
    """One series per physical GPU for the device-level fields (:data:`DEVICE_LEVEL_FIELDS`).

    dcgm-exporter writes a GPU's device fields (XID, ECC counts, energy...) once per MIG instance
    (entity ``GPU-I``), so a GPU with 3 instances shows each XID and each ECC error 3 times. Rule:
    a ``GPU-I`` row of a device-level field with a known ``gpu`` index or ``uuid`` becomes a row of
    its GPU (entity ``GPU``, ``entity_id`` = ``gpu``, ``GPU_I_*`` labels dropped from ``labels``
    only by keeping the first row's); rows of one GPU, field and time are then one row, the first
    read, with the job ids of all of them sorted and joined with ``,`` (the convention of
    :data:`trainperf.dcgm.SCHEMA` for a shared GPU). Other rows are unchanged.

    Returns:
        a frame with the columns of ``frame``: the other rows in input order, then the device-level
        rows of MIG GPUs, collapsed.
    """
    if frame.height == 0 or "entity" not in frame.columns:
        return frame
    is_mig = (
        (pl.col("entity") == "GPU-I")
        & pl.col("field_id").is_in(list(DEVICE_LEVEL_FIELDS))
        & (pl.col("gpu").is_not_null() | pl.col("uuid").is_not_null())
    )
    mig = frame.filter(is_mig)
    if mig.height == 0:
        return frame
    # the GPU's own rows of the same fields, if the export has them, join the same groups
    gpus = mig.select("hostname", "gpu", "uuid", "field_id").unique()
    own = frame.filter(~is_mig & (pl.col("entity") == "GPU")).join(
        gpus, on=["hostname", "gpu", "uuid", "field_id"], how="semi", nulls_equal=True
    )
    rest = frame.filter(~is_mig).join(
        own.select("hostname", "gpu", "uuid", "field_id", "entity").unique(),
        on=["hostname", "gpu", "uuid", "field_id", "entity"],
        how="anti",
        nulls_equal=True,
    )
    dev = pl.concat([own, mig.with_columns(entity=pl.lit("GPU"), entity_id=pl.col("gpu"))])
    key = ["hostname", "gpu", "uuid", "entity", "entity_id", "field_id", "timestamp"]
    others = [c for c in frame.columns if c not in key and c != "job_id"]
    one = dev.group_by(key, maintain_order=True).agg(
        *[pl.col(c).first() for c in others],
        pl.col("job_id").drop_nulls().unique().sort().str.join(",").alias("job_id"),
    )
    one = one.with_columns(
        pl.when(pl.col("job_id") == "").then(None).otherwise("job_id").alias("job_id")
    )
    return pl.concat([rest, one.select(frame.columns).cast(frame.schema)])


def _reset_or_dip(fid: int) -> tuple[pl.Expr, pl.Expr]:
    """(reset, dip) flags of each sample against the previous one of its series (sorted)."""
    prev = pl.col("value").shift(1).over(SERIES_KEY)
    down = pl.col("value") < prev
    if fid in LIFETIME_FIELDS:
        return pl.lit(False), down.fill_null(False)
    reset = down & reset_expr(pl.col("value"), prev)
    return reset.fill_null(False), (down & ~reset).fill_null(False)


def _in_time_or_input_order(d: pl.DataFrame) -> pl.DataFrame:
    """``d`` sorted per series by time, except a series whose time goes back in input order (the
    clock stepped back: the reader's order is the file's, check ``clock_step``): that series keeps
    its input order, where the counter's value sequence is right though its timestamps are not."""
    d = d.with_row_index("_ord")
    back = (pl.col("timestamp").dt.epoch("us").diff() < 0).any().over(SERIES_KEY)
    d = d.with_columns(pl.when(back.fill_null(False)).then(pl.col("_ord")).otherwise(0).alias("_k"))
    return d.sort([*SERIES_KEY, "_k", "timestamp"], nulls_last=True).drop("_ord", "_k")


def counter_increase(frame: pl.DataFrame, field: int | str) -> pl.DataFrame:
    """Reset-aware increase of a *counter* field per series between consecutive samples.

    Rules:

    * a step down to less than half the previous value is a counter reset (driver reload /
      reboot: the counter restarts near zero): the increase of that step is the new value
      (counted from 0), as Prometheus ``increase()`` does;
    * a smaller step down (back to about the old level: 5, 5, 4, 5 ECC errors, a 1 mJ dip of the
      energy counter) is not a reset: the series is non-monotonic (the reader flags it, check
      ``counter_dip``), and the increase is counted from the highest value seen since the last
      reset, so a dip and the climb back add nothing;
    * the lifetime ``*_AGG_TOTAL`` ECC counts (:data:`LIFETIME_FIELDS`) never reset: every step down
      is a dip;
    * a step down to under half whose next sample is back at or above the value before it is a
      one-sample glitch, not a reset (:func:`trainperf.dcgm.monotonic.glitch_expr`; the reader flags
      it, check ``counter_glitch``): the sample is taken as the value before it, so it adds nothing;
    * samples are taken in time order, except in a series whose time goes back in the frame's order
      (a clock stepped back; the reader's frame is in file order and flags it, check
      ``clock_step``): there the frame's order (the file's), where the counter's values are in the
      order they were read;
    * device-level fields are first made one series per physical GPU
      (:func:`device_rows_per_gpu`: MIG instance rows are copies).

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
    d = device_rows_per_gpu(frame.filter(pl.col("field_id") == fid))
    d = _in_time_or_input_order(d)
    if fid not in LIFETIME_FIELDS:
        # a one-sample drop back above the old level at the next sample is a glitch, not a reset:
        # the sample is taken as the value before it (trainperf.dcgm.monotonic, check counter_glitch)
        prev = pl.col("value").shift(1).over(SERIES_KEY)
        nxt = pl.col("value").shift(-1).over(SERIES_KEY)
        d = d.with_columns(
            pl.when(glitch_expr(pl.col("value"), prev, nxt))
            .then(prev)
            .otherwise(pl.col("value"))
            .alias("value")
        )
    reset, _ = _reset_or_dip(fid)
    d = d.with_columns(reset.cast(pl.UInt32).cum_sum().over(SERIES_KEY).alias("_seg"))
    seg = [*SERIES_KEY, "_seg"]
    d = d.with_columns(pl.col("value").cum_max().over(seg).alias("_top"))
    step = pl.col("_top").diff().over(seg)
    first_of_seg = pl.col("_seg") != pl.col("_seg").shift(1).over(SERIES_KEY)
    return d.with_columns(
        pl.when(first_of_seg.fill_null(False))
        .then(pl.col("value"))
        .otherwise(step)
        .alias("increase")
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
    ``DCGM_EXP_XID_ERRORS_COUNT``). MIG instance rows of a GPU are one series
    (:func:`device_rows_per_gpu`): one XID is one event per physical GPU.

    Returns:
        hostname, gpu, uuid, entity, entity_id, ``xid`` (Int32), ``first_seen``,
        ``last_seen`` (Datetime[us, UTC]), ``n_samples`` (UInt32), ``job_id`` (String,
        of the first sample), sorted by host, gpu, first_seen.
    """
    key = ["hostname", "gpu", "uuid", "entity", "entity_id"]
    d = device_rows_per_gpu(frame.filter(pl.col("field_id") == 230)).sort(
        [*key, "timestamp"], nulls_last=True
    )
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
