"""The data checks every DCGM reader applies to what it read, and the :class:`~trainperf.dcgm.Reading`
they produce.

:func:`finish` takes a reader's series table and samples and, in this order:

1. drops DCGM *blank sentinels* (int64 fields ``>= 0x7ffffffffffffff0``, double fields ``>= 2**47``,
   fields of unknown type ``>= 0x7ffffffffffffff0`` or exactly ``2**47 + 0..3``;
   ``testing/python3/dcgmvalue.py`` in NVIDIA/DCGM), ``NaN`` and ``±Inf`` (check ``blank_value``,
   recorded without a warning: DCGM documents them as "no data");
2. excludes values outside the physical range of their unit (check ``out_of_range``; ranges are the
   package table ``dcgm_ranges.csv``: ratio 0–1, percent 0–100, power 0 .. the board limit of
   ``accelerator_power.csv`` x 1.2 for the exporter's ``modelName``);
3. keeps one sample per series and time (check ``duplicate_sample``: the same sample line twice,
   e.g. a scrape appended twice to an archive; the first in input order is kept; where the values
   differ the detail says how many);
4. keeps one sample per GPU, field and time where several series describe the same GPU (check
   ``duplicate_series``: two exporters scraping one GPU, several ``hpc_job``/pod labels on a shared
   GPU). Samples at the same time are merged into one (the first in input order; the job ids of a
   shared GPU are joined, sorted, with ``,``); series of one GPU and field that interleave in time
   without coinciding (two unsynchronised exporters) keep the series with the most samples;
5. excludes profiling samples frozen at a constant while the GPU is busy (check ``frozen``): every
   ``DCGM_FI_PROF_*`` field of the GPU unchanged for at least :data:`FROZEN_MIN_SAMPLES` consecutive
   samples while ``DCGM_FI_DEV_GPU_UTIL`` >= :data:`BUSY_UTIL_PCT` % (a field DCGM has not yet
   watched, or frozen after an nv-hostengine restart). Without ``GPU_UTIL`` nothing is flagged;
6. excludes every frozen field of a GPU whose board power stopped changing (check ``stale``: the
   exporter serving its last values after an nv-hostengine restart);
7. excludes one field frozen while the rest of its GPU is live (check ``stale_field``, per field):
   a run of bit-identical values of at least ``min_run`` samples while other fields of the GPU
   change or the GPU is busy; the rule of each field (``varies``, ``increases`` or ``may_hold``,
   with its reason) is the package table ``dcgm_staleness.csv``; values at a bound of their range
   (an idle pipe at 0, an engine saturated at 100 %) and ``may_hold`` fields (clocks, temperatures,
   frame buffer, error counters) are never flagged;
8. re-attributes jobs where the ``gpu`` label (DCGM index) and the ``device`` label (``nvidiaN``,
   the device minor) disagree (check ``label_mismatch``): dcgm-exporter reads the job of GPU *i*
   from the HPC job-mapping file named *i*, which Slurm prolog scripts write per Slurm GPU index,
   i.e. per device minor; so the job belongs to the GPU whose minor is *i*. Action ``corrected``
   where every GPU and field has one series, else ``flagged``;
9. flags a ``gpu`` label that is not a GPU index and keeps a series whose ``GPU_I_ID`` is not an
   instance id as a MIG instance (checks ``bad_gpu_label``, ``bad_instance_id``,
   :mod:`trainperf.dcgm.ids`);
10. flags a cumulative counter that steps down without resetting to near zero (check
   ``counter_dip``, :mod:`trainperf.dcgm.monotonic`).

Every check that fires adds one row to the quality frame (:data:`trainperf.quality.QUALITY_SCHEMA`)
and, except ``blank_value``, a :class:`~trainperf.dcgm.DcgmWarning` naming the file and the first line.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from functools import cache
from typing import Any

import polars as pl

from trainperf import flops
from trainperf.dcgm.fields import FIELDS, FP_BLANK, INT_BLANK_CMP, DcgmWarning
from trainperf.dcgm.ids import check_entity_ids
from trainperf.dcgm.monotonic import note_clock_steps, note_counter_dips
from trainperf.dcgm.series import Reading
from trainperf.quality import QualityLog
from trainperf.tables import read_table

__all__ = [
    "BUSY_GR_RATIO", "BUSY_UTIL_PCT", "FROZEN_MIN_SAMPLES", "PLAUSIBLE_US", "STALE_RULES", "across_sources", "finish",
    "RANGES_SCHEMA", "range_table", "staleness_table", "STALENESS_SCHEMA", "value_bounds",
]  # fmt: skip

FROZEN_MIN_SAMPLES = 5
"""Consecutive equal samples of every profiling field of a busy GPU that count as frozen.
DCP ratios are floats that change from sample to sample on a busy GPU; five equal ones in a row
(5 s at 1 Hz, 75 s at dcgm-exporter's 15 s) do not happen on a working profiling module."""

BUSY_UTIL_PCT = 50.0
"""``DCGM_FI_DEV_GPU_UTIL`` (% of time a kernel ran) from which a GPU counts as busy: a kernel runs
half the time, so the graphics engine cannot be idle (``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` > 0)."""

_DEVICE_RE = re.compile(r"nvidia(\d+)$")


RANGES_SCHEMA: dict[str, pl.DataType] = {
    "scope": pl.String, "key": pl.String, "min": pl.Float64, "max": pl.Float64,
    "max_from": pl.String, "max_factor": pl.Float64, "source": pl.String,
}  # fmt: skip
"""Columns of :func:`range_table`."""


@cache
def range_table() -> pl.DataFrame:
    """The unit ranges (``trainperf/tables/dcgm_ranges.csv``): scope, key, min, max, max_from,
    max_factor, source (:data:`RANGES_SCHEMA`)."""

    return read_table("dcgm_ranges", schema=RANGES_SCHEMA)


@cache
def _power_limit(model: str) -> float | None:
    """Maximum board power (W) of a GPU model name (``modelName`` label), or None if unknown."""

    try:
        acc = flops.resolve_accelerator(model)
        t = read_table("accelerator_power", schema={"accelerator": pl.String,
                       "max_power_w": pl.Float64, "source": pl.String})  # fmt: skip
    except (ValueError, FileNotFoundError):
        return None
    row = t.filter(pl.col("accelerator") == acc)
    return float(row["max_power_w"][0]) if row.height else None


def value_bounds(field_id: int | None, labels: dict[str, str] | None = None) -> tuple[Any, Any]:
    """(min, max) of a field's values from :func:`range_table` (None = unbounded).

    Args:
        field_id: DCGM field id (None: a non-DCGM metric, unbounded).
        labels: the series' labels (``modelName`` gives the power limit).
    """
    model = (labels or {}).get("modelName")
    return _bounds(field_id, model)


@cache
def _bounds(field_id: int | None, model: str | None) -> tuple[Any, Any]:
    info = FIELDS.get(field_id) if field_id is not None else None
    if info is None:
        return None, None
    rows = range_table().filter((pl.col("scope") == "unit") & (pl.col("key") == info.unit))
    if rows.height == 0:
        return None, None
    r = rows.row(0, named=True)
    hi = r["max"]
    if r["max_from"] == "power_limit":
        lim = _power_limit(model) if model else None
        hi = lim * (r["max_factor"] or 1.0) if lim is not None else None
    return r["min"], hi


def _per_sid(values: list, dtype: pl.DataType) -> pl.Expr:
    """An expression giving ``values[sid]`` for every sample."""
    return pl.lit(pl.Series(values, dtype=dtype)).gather(pl.col("sid"))


def _summary(s: pl.DataFrame, series: pl.DataFrame) -> dict[str, Any]:
    """Counts and the first line of the samples ``s`` (with ``sid`` and ``line``)."""
    sids = s["sid"].unique()
    ser = series.filter(pl.col("sid").is_in(sids.implode()))
    n_gpus = ser.filter(pl.col("gpu").is_not_null() | pl.col("uuid").is_not_null()).select(
        pl.when(pl.col("uuid").is_not_null())
        .then(pl.concat_str(pl.lit("u:"), pl.col("uuid")))
        .otherwise(pl.concat_str(pl.lit("h:"), pl.col("hostname").fill_null(""), pl.lit(":"),
                                 pl.col("gpu").cast(pl.String)))
        .n_unique()
    )  # fmt: skip
    first = s["line"].min() if s["line"].null_count() < s.height else None
    return {
        "n_series": sids.len(),
        "n_gpus": int(n_gpus.item()) if n_gpus.height else 0,
        "n_samples": s.height,
        "first_line": first,
    }


def _where(src: str, s: pl.DataFrame, sources: list[str] | None) -> tuple[str, dict]:
    """Across files (``sources``: the file of each sid), the row names the file of the first of
    the samples ``s`` in input order and that sample's line; else ``src`` and no override."""
    if not sources or s.height == 0:
        return src, {}
    first = s.row(0, named=True)
    return sources[first["sid"]], {"first_line": first["line"]}


def _field_counts(s: pl.DataFrame, series: pl.DataFrame) -> str:
    c = (
        s.join(series.select("sid", "field"), on="sid", how="left")
        .group_by("field")
        .len()
        .sort(["len", "field"], descending=[True, False])
    )
    return ", ".join(f"{f} ({n})" for f, n in c.rows()[:4]) + (", ..." if c.height > 4 else "")


PLAUSIBLE_US = (946_684_800_000_000, 4_102_444_800_000_000)
"""Sample times a DCGM reading can have: [2000-01-01, 2100-01-01) UTC in epoch microseconds."""

_TIME_UNITS = ((1000, "epoch seconds written where milliseconds are expected"),
               (1 / 1000, "epoch milliseconds written where seconds are expected"),
               (1 / 1_000_000, "epoch microseconds written where seconds are expected"))  # fmt: skip


def _check_times(series: pl.DataFrame, samples: pl.DataFrame, src: str, log: QualityLog):
    """Sample times outside :data:`PLAUSIBLE_US` (checks ``timestamp_unit``, ``timestamp_implausible``).

    A per-sample timestamp in seconds where the exposition format wants milliseconds reads as
    January 1970; Prometheus API values in milliseconds where the API gives seconds read as the
    year 57971. The unit is inferred from the magnitude: a factor of 1000 (or 10^6) that brings
    the time into [2000, 2100) is applied, where the file's other (plausible) times, if any, lie
    within a day of the corrected ones (checked against the other source of time in the file:
    scrape markers, other series). Anything else is kept as read and flagged, naming the line.
    """
    lo, hi = PLAUSIBLE_US
    t = pl.col("timestamp")
    ok = samples.select(((t >= lo) & (t < hi)).fill_null(True).alias("o"))["o"]
    if ok.all():
        return samples
    good = samples.filter(ok)
    g0, g1 = (good["timestamp"].min(), good["timestamp"].max()) if good.height else (None, None)
    day = 86_400_000_000
    bad = samples.filter(~ok)
    fixed = None
    for f, why in _TIME_UNITS:
        c = (bad["timestamp"].cast(pl.Float64) * f).round(0)
        if ((c >= lo) & (c < hi)).all():
            if g0 is None or (c.min() >= g0 - day and c.max() <= g1 + day):
                fixed = (c.cast(pl.Int64), why)
            break
    first = bad.row(0, named=True)
    at = f" at line {first['line']}" if first["line"] is not None else ""
    was = _dt_text(first["timestamp"])
    if fixed is not None:
        c, why = fixed
        log.add(src, "timestamp_unit", "corrected",
                f"{bad.height} sample times read as {was}{at}: {why}; unit inferred from the "
                f"magnitude, corrected to {_dt_text(int(c[0]))}", **_summary(bad, series))  # fmt: skip
        idx = samples.with_row_index("_i").filter(~ok)["_i"]
        return samples.with_columns(samples["timestamp"].scatter(idx, c).alias("timestamp"))
    other = (f"; the file's other sample times lie in {_dt_text(g0)} .. {_dt_text(g1)}"
             if g0 is not None else "")  # fmt: skip
    log.add(src, "timestamp_implausible", "flagged",
            f"{bad.height} sample times outside 2000..2100, e.g. {was}{at}, and no unit (s, ms, "
            f"us) brings them next to the file's other times{other}: kept as read, but they will "
            "match no MLPerf run or Slurm job; give per-sample timestamps in epoch milliseconds "
            "(exposition) or seconds (Prometheus API)", **_summary(bad, series))  # fmt: skip
    return samples


def _dt_text(us: int | None) -> str:

    if us is None:
        return "?"
    try:
        return (_dt.datetime(1970, 1, 1, tzinfo=_dt.UTC) + _dt.timedelta(microseconds=us)
                ).strftime("%Y-%m-%dT%H:%M:%SZ")  # fmt: skip
    except OverflowError:
        return f"the year {us / 3.15576e13 + 1970:.0f}"


def _drop_blank(series: pl.DataFrame, samples: pl.DataFrame, src: str, log: QualityLog):
    kind = [
        2 if d else 1 if i else 0
        for i, d in zip(series["_is_int"], series["_is_double"], strict=True)
    ]
    k = _per_sid(kind, pl.UInt8)
    v = pl.col("value")
    fp_exact = (v >= FP_BLANK) & (v <= FP_BLANK + 3.0) & (v == v.round(0))
    ok = (
        v.is_not_null()
        & v.is_finite()
        & (v < INT_BLANK_CMP)
        & pl.when(k == 2).then(v < FP_BLANK).when(k == 1).then(True).otherwise(~fp_exact)
    )
    mask = samples.select(ok.alias("ok"))["ok"]
    bad = samples.filter(~mask)
    if bad.height:
        # NaN / +-Inf are not DCGM's documented blanks (those are the sentinels and N/A, read as
        # null): an exporter or a converter produced them, so they are warned about, naming the line
        nonfinite = bad.filter(pl.col("value").is_not_null() & ~pl.col("value").is_finite())
        blank = bad.filter(pl.col("value").is_null() | pl.col("value").is_finite())
        if blank.height:
            log.add(src, "blank_value", "excluded",
                    f"{blank.height} DCGM blank/not-supported sentinels or N/A values "
                    f"({_field_counts(blank, series)})", warn=False,
                    **_summary(blank, series))  # fmt: skip
        if nonfinite.height:
            first = nonfinite.row(0, named=True)
            at = f" at line {first['line']}" if first["line"] is not None else ""
            log.add(src, "non_finite", "excluded",
                    f"{nonfinite.height} NaN or +-Inf values ({_field_counts(nonfinite, series)}), "
                    f"e.g. {series['field'][first['sid']]} = {first['value']}{at}: not used",
                    **_summary(nonfinite, series))  # fmt: skip
        samples = samples.filter(mask)
    return samples


def _label_dict(text: str, seen: dict) -> dict:
    """The labels JSON of a series, decoded once per text (``seen``): the series of one GPU share
    it (20 fields, one text). Read only: the dict is shared."""
    labels = seen.get(text)
    if labels is None:
        labels = seen[text] = json.loads(text)
    return labels


def _drop_out_of_range(series: pl.DataFrame, samples: pl.DataFrame, src: str, log: QualityLog):
    lo, hi, seen = [], [], {}
    for fid, lab in zip(series["field_id"], series["labels"], strict=True):
        watts = fid in FIELDS and FIELDS[fid].unit == "W"
        labels = _label_dict(lab, seen) if watts and lab and "modelName" in lab else None
        a, b = value_bounds(fid, labels)
        lo.append(a)
        hi.append(b)
    if all(a is None for a in lo) and all(b is None for b in hi):
        return samples
    v = pl.col("value")
    out = ((v < _per_sid(lo, pl.Float64)) | (v > _per_sid(hi, pl.Float64))).fill_null(False)
    mask = samples.select(out.alias("o"))["o"]
    bad = samples.filter(mask)
    if bad.height:
        first = bad.row(0, named=True)
        sid = first["sid"]
        unit = FIELDS[series["field_id"][sid]].unit
        ex = (f"e.g. {series['field'][sid]} = {first['value']:g} {unit}"
              f"{' at line ' + str(first['line']) if first['line'] is not None else ''}, "
              f"outside {lo[sid]:g}..{'' if hi[sid] is None else format(hi[sid], 'g')}")  # fmt: skip
        log.add(src, "out_of_range", "excluded",
                f"{bad.height} values outside their physical range ({_field_counts(bad, series)}); {ex}",
                **_summary(bad, series))  # fmt: skip
        samples = samples.filter(~mask)
    return samples


def _increasing_keys(samples: pl.DataFrame) -> bool:
    """Whether (timestamp, sid) strictly increases in input order, so that no two samples share a
    series and a time: one native pass over ``(timestamp - min) * n_sid + sid`` (injective where it
    fits an Int64; checked in Python integers). An archive in time order, series in one order per
    scrape, passes; anything else (nulls, a scrape twice, reordered series) takes the exact hashing
    path. Issue 29: the hashing of (sid, timestamp) structs was a sixth of the exposition reader."""
    ts = samples["timestamp"]
    if samples.height < 2 or ts.null_count():
        return False
    lo, hi, n_sid = ts.min(), ts.max(), samples["sid"].max()
    if (hi - lo + 1) * (n_sid + 1) >= 2**63:
        return False
    key = (pl.col("timestamp") - lo) * (n_sid + 1) + pl.col("sid").cast(pl.Int64)
    return bool(samples.select((key.diff().slice(1) > 0).all()).item())


def _drop_repeated(series: pl.DataFrame, samples: pl.DataFrame, src: str, log: QualityLog):
    """Samples of one series at one time after the first (``duplicate_sample``)."""
    key = ["sid", "timestamp"]
    if _increasing_keys(samples):
        return samples
    rep = samples.select(pl.struct(key).is_first_distinct().alias("f"))["f"]
    if rep.all():
        return samples
    bad = samples.filter(~rep)
    first = samples.filter(rep).join(bad.select(key).unique(), on=key, how="semi")
    differ = bad.join(first.select(*key, pl.col("value").alias("_v0")), on=key, how="left")
    n_diff = differ.filter(pl.col("value").ne_missing(pl.col("_v0"))).height
    ln = bad["line"].min() if bad["line"].null_count() < bad.height else None
    ex = f" at line {ln}" if ln is not None else ""
    why = (f"; {n_diff} of them with a different value" if n_diff else
           " (identical values)")  # fmt: skip
    n = bad.height
    log.add(src, "duplicate_sample", "excluded",
            f"{n} {'sample repeats' if n == 1 else 'samples repeat'} a sample of the same series "
            f"and time, e.g.{ex} ({_field_counts(bad, series)}){why}: the first kept",
            **(_summary(bad, series) | {"n_lines": n}))  # fmt: skip
    return samples.filter(rep)


def _phys_ids(series: pl.DataFrame) -> list[int | None]:
    """Per series: an id of the physical (host, GPU/entity, field) it measures, None for non-DCGM
    metrics (whose identity lies in labels the reader does not interpret)."""
    ids: dict[tuple, int] = {}
    out: list[int | None] = []
    for h, g, u, e, ei, f in series.select(
        "hostname", "gpu", "uuid", "entity", "entity_id", "field_id"
    ).iter_rows():
        if f is None or (g is None and u is None and e in ("GPU", "NVLink")):
            out.append(None)
            continue
        # a GPU's UUID identifies it whatever the exporter calls its host (n1, n1.cluster.local);
        # host + index only where there is no UUID
        k = ("uuid", u, e, ei, f) if u is not None else ("host", h, g, e, ei, f)
        out.append(ids.setdefault(k, len(ids)))
    return out


def _unify_hosts(series: pl.DataFrame, samples: pl.DataFrame, src: str, log: QualityLog,
                 sources: list[str] | None = None):  # fmt: skip
    """One host name per GPU UUID (check ``host_alias``): exporters that spell the host of one GPU
    differently (``n1``, ``n1.cluster.local``) describe one GPU; every series of that UUID gets the
    name most of its series use (ties: the shortest, then the first in input order)."""
    u = series.filter(pl.col("uuid").is_not_null() & pl.col("hostname").is_not_null())
    if u.height == 0:
        return series
    hosts = (
        u.group_by("uuid")
        .agg(pl.col("hostname").unique())
        .filter(pl.col("hostname").list.len() > 1)
    )
    if hosts.height == 0:
        return series
    canon: dict[str, str] = {}
    pairs: dict[tuple[str, ...], str] = {}
    for uuid in hosts["uuid"].to_list():
        names = u.filter(pl.col("uuid") == uuid)["hostname"].to_list()
        order = {h: i for i, h in reversed(list(enumerate(names)))}
        best = min(order, key=lambda h: (-names.count(h), len(h), order[h]))
        canon[uuid] = best
        pairs.setdefault(tuple(sorted(set(names), key=lambda h: order[h])), best)
    new_host = [
        canon.get(uu, h) if uu is not None and h is not None else h
        for h, uu in zip(series["hostname"], series["uuid"], strict=True)
    ]
    changed = [
        i for i, (a, b) in enumerate(zip(series["hostname"], new_host, strict=True)) if a != b
    ]
    names, best = next(iter(pairs.items()))
    s = samples.filter(pl.col("sid").is_in(changed))
    sumry = _summary(s, series) if s.height else {"n_series": len(changed), "n_gpus": len(canon)}
    src, at = _where(src, s, sources)
    log.add(src, "host_alias", "corrected",
            f"{len(canon)} GPU UUIDs reported under several host names, e.g. "
            f"{' / '.join(names)}: one GPU each, host name {best!r} used for all its series",
            **(sumry | at))  # fmt: skip
    return series.with_columns(pl.Series("hostname", new_host, dtype=pl.String))


def _dedupe(series: pl.DataFrame, samples: pl.DataFrame, src: str, log: QualityLog,
            sources: list[str] | None = None):  # fmt: skip
    phys = _phys_ids(series)
    count: dict[int, int] = {}
    for p in phys:
        if p is not None:
            count[p] = count.get(p, 0) + 1
    dup_sids = [i for i, p in enumerate(phys) if p is not None and count[p] > 1]
    if not dup_sids:
        return series, samples
    s = samples.with_row_index("_i")
    c = s.filter(pl.col("sid").is_in(dup_sids)).with_columns(
        _p=_per_sid(phys, pl.UInt32), _j=_per_sid(series["job_id"].to_list(), pl.String)
    )
    g = (
        c.group_by("_p", "timestamp")
        .agg(
            pl.col("_i").min().alias("_keep"),
            pl.len().alias("_n"),
            pl.col("_j").drop_nulls().unique().sort().str.join(",").alias("_jobs"),
        )
        .filter(pl.col("_n") > 1)
    )
    excluded = c.join(g.select("_p", "timestamp", "_keep"), on=["_p", "timestamp"], how="inner")
    excluded = excluded.filter(pl.col("_i") != pl.col("_keep"))
    n_same_time = excluded.height
    # what is left of series of one GPU field that interleave in time (two exporters scraping 10 s
    # apart, whether or not some of their scrapes coincide): keep the one with the most samples and
    # drop the others' samples inside its span
    span = (
        c.filter(~pl.col("_i").is_in(excluded["_i"].implode()))
        .group_by("_p", "sid")
        .agg(
            pl.len().alias("n"),
            pl.col("timestamp").min().alias("t0"),
            pl.col("timestamp").max().alias("t1"),
            pl.col("_i").min().alias("i0"),
        )  # fmt: skip
        .sort(["_p", "n", "i0"], descending=[False, True, False])
    )
    inter = []
    for _, grp in span.group_by("_p", maintain_order=True):
        keep = grp.row(0, named=True)
        for o in grp.slice(1).iter_rows(named=True):
            # the kept series' span, widened by its mean scrape interval: the other exporter's
            # scrape just after the kept one's last (10 s later) is the same GPU state again
            iv = (keep["t1"] - keep["t0"]) // (keep["n"] - 1) if keep["n"] > 1 else 0
            if o["t0"] <= keep["t1"] + iv and keep["t0"] - iv <= o["t1"]:
                inter.append((o["sid"], keep["t0"] - iv, keep["t1"] + iv))
    drop_i = excluded["_i"]
    if inter:
        cond = pl.lit(False)
        for sid, t0, t1 in inter:
            cond = cond | ((pl.col("sid") == sid) & pl.col("timestamp").is_between(t0, t1))
        drop_i = pl.concat([drop_i, c.filter(cond)["_i"]]).unique()
    n_interleaved = drop_i.len() - n_same_time
    if drop_i.len() == 0:
        return series, samples
    bad = s.filter(pl.col("_i").is_in(drop_i.implode()))
    # merged job ids of a shared GPU: the kept sample moves to a series carrying all of them
    kept = g.join(c.select("_i", "sid", "_j"), left_on="_keep", right_on="_i", how="left")
    kept = kept.filter(
        pl.col("_jobs").is_not_null() & (pl.col("_jobs") != pl.col("_j").fill_null(""))
    )
    merged_example = None
    if kept.height:
        pairs = kept.select("sid", "_jobs").unique(maintain_order=True)
        new_rows = []
        pair_sid: dict[tuple[int, str], int] = {}
        for sid, jobs in pairs.rows():
            pair_sid[(sid, jobs)] = series.height + len(new_rows)
            new_rows.append(
                series.row(sid, named=True) | {"sid": pair_sid[(sid, jobs)], "job_id": jobs}
            )
            merged_example = merged_example or jobs
        series = pl.concat([series, pl.DataFrame(new_rows, schema=series.schema, orient="row")])
        remap = kept.select(
            pl.col("_keep").alias("_i"),
            pl.struct("sid", "_jobs")
            .map_elements(lambda r: pair_sid[(r["sid"], r["_jobs"])], return_dtype=pl.UInt32)
            .alias("_new"),
        )
        s = (
            s.join(remap, on="_i", how="left", maintain_order="left")
            .with_columns(pl.coalesce("_new", "sid").alias("sid"))
            .drop("_new")
        )
    n_groups = len({phys[i] for i in bad["sid"].unique().to_list()})
    parts = []
    if n_same_time:
        parts.append(f"{n_same_time} at the same time as a kept sample (one sample kept per GPU, "
                     "field and time)")  # fmt: skip
    if n_interleaved:
        parts.append(f"{n_interleaved} of a second series interleaving in time with the kept one "
                     "(the series with the most samples kept over its time span)")  # fmt: skip
    detail = (f"{bad.height} samples of {n_groups} GPU fields measured by several series "
              f"(two exporters, or several job/pod labels on a shared GPU; "
              f"{_field_counts(bad, series)}) excluded: {'; '.join(parts)}")  # fmt: skip
    if merged_example:
        detail += f"; job ids of a shared GPU joined, e.g. {merged_example!r}"
    src, at = _where(src, bad, sources)
    log.add(src, "duplicate_series", "excluded", detail, **(_summary(bad, series) | at))
    return series, s.filter(~pl.col("_i").is_in(drop_i.implode())).drop("_i")


def _gpu_keys(series: pl.DataFrame) -> list[int | None]:
    ids: dict[tuple, int] = {}
    out: list[int | None] = []
    for h, g, u, e in series.select("hostname", "gpu", "uuid", "entity").iter_rows():
        if e != "GPU" or (g is None and u is None):
            out.append(None)
            continue
        k = ("uuid", u) if u is not None else ("host", h, g)  # UUID first, as in _phys_ids
        out.append(ids.setdefault(k, len(ids)))
    return out


def _drop_frozen(series: pl.DataFrame, samples: pl.DataFrame, src: str, log: QualityLog,
                 min_samples: int) -> pl.DataFrame:  # fmt: skip
    gk = _gpu_keys(series)
    fids = series["field_id"].to_list()
    prof = [
        i for i, f in enumerate(fids) if f in FIELDS and FIELDS[f].profiling and gk[i] is not None
    ]
    util = [i for i, f in enumerate(fids) if f == 203 and gk[i] is not None]
    if not prof or not util:
        return samples
    if not _has_long_run(samples, prof, [min_samples] * len(fids), min_samples, pl.lit(False)):
        return samples  # no profiling series holds a run of one value as long as min_samples
    s = samples.with_row_index("_i")
    g = _per_sid(gk, pl.UInt32).alias("_g")
    busy = (
        s.filter(pl.col("sid").is_in(util) & (pl.col("value") >= BUSY_UTIL_PCT))
        .select(g, "timestamp")
        .unique()
        .with_columns(pl.lit(True).alias("_busy"))
    )
    if busy.height == 0:
        return samples
    p = s.filter(pl.col("sid").is_in(prof)).sort(["sid", "timestamp", "_i"])
    # rows equal to the previous row of the same series (plain shifts: the frame is sorted by sid)
    new_run = (pl.col("sid") != pl.col("sid").shift(1)) | (
        pl.col("value") != pl.col("value").shift(1)
    )
    p = p.with_columns(new_run.fill_null(True).alias("_new"))
    if p.height - int(p["_new"].sum()) < min_samples - 1:  # no run long enough: nothing frozen
        return samples
    p = (
        p.with_columns(g)
        .with_columns(pl.col("_new").cast(pl.UInt32).cum_sum().alias("_run"))
        .with_columns((pl.len().over("_run") >= min_samples).alias("_long"))
        .with_columns(pl.col("_long").all().over("_g", "timestamp").alias("_all"))
        .join(busy, on=["_g", "timestamp"], how="left")
        .filter(pl.col("_all") & pl.col("_busy").fill_null(False))
    )
    if p.height == 0:
        return samples
    bad = p.sort("_i")
    first = bad.row(0, named=True)
    log.add(src, "frozen", "excluded",
            f"{bad.height} profiling samples unchanged for >= {min_samples} samples while "
            f"DCGM_FI_DEV_GPU_UTIL >= {BUSY_UTIL_PCT:g} % ({_field_counts(bad, series)}; not yet "
            f"watched by DCGM, or frozen after an nv-hostengine restart), e.g. "
            f"{series['field'][first['sid']]} = {first['value']:g}", **_summary(bad, series))  # fmt: skip
    return s.filter(~pl.col("_i").is_in(bad["_i"].implode())).drop("_i")


POWER_FIELD = 155  # DCGM_FI_DEV_POWER_USAGE (W)
UTIL_FIELD = 203  # DCGM_FI_DEV_GPU_UTIL (%)


def _drop_stale(series: pl.DataFrame, samples: pl.DataFrame, src: str, log: QualityLog,
                min_samples: int) -> pl.DataFrame:  # fmt: skip
    """Every field of a GPU whose board power stopped changing (check ``stale``).

    After an nv-hostengine restart (or a hung DCGM) the exporter keeps serving the last values
    it had: power, utilisation, clocks and temperatures all stay exactly equal. Board power is a
    measured float that changes between samples of a working GPU, so a GPU's
    ``DCGM_FI_DEV_POWER_USAGE`` unchanged for at least ``min_samples`` consecutive samples while
    the GPU is busy (``DCGM_FI_DEV_GPU_UTIL`` >= :data:`BUSY_UTIL_PCT`) or at a value with a
    fractional part (an exporter that prints watts to the mW: equal values are not rounding) marks
    those times stale; every sample of that GPU at a stale time whose own series is unchanged over
    at least ``min_samples`` samples too (the frozen fields, not one that still moves) is excluded.
    """
    gk = _gpu_keys(series)
    fids = series["field_id"].to_list()
    power = [i for i, f in enumerate(fids) if f == POWER_FIELD and gk[i] is not None]
    if not power:
        return samples
    # cheap exit first (one group-by of the power samples): no power series repeats a value often
    # enough to hold a frozen run
    pw = samples.filter(pl.col("sid").is_in(power))
    rep = pw.group_by("sid").agg(pl.len().alias("n"), pl.col("value").n_unique().alias("u"))
    if rep.filter(pl.col("n") - pl.col("u") >= min_samples - 1).height == 0:
        return samples
    s = samples.with_row_index("_i")
    g = _per_sid(gk, pl.UInt32).alias("_g")
    gpu_sids = [i for i, k in enumerate(gk) if k is not None]
    p = s.filter(pl.col("sid").is_in(gpu_sids)).sort(["sid", "timestamp", "_i"])
    new_run = (pl.col("sid") != pl.col("sid").shift(1)) | (
        pl.col("value") != pl.col("value").shift(1)
    )
    p = (
        p.with_columns(new_run.fill_null(True).alias("_new"), g)
        .with_columns(pl.col("_new").cast(pl.UInt32).cum_sum().alias("_run"))
        .with_columns((pl.len().over("_run") >= min_samples).alias("_long"))
    )
    util = [i for i, f in enumerate(fids) if f == UTIL_FIELD and gk[i] is not None]
    busy = (
        p.filter(pl.col("sid").is_in(util) & (pl.col("value") >= BUSY_UTIL_PCT))
        .select("_g", "timestamp").unique().with_columns(pl.lit(True).alias("_busy"))
    )  # fmt: skip
    stale_t = (
        p.filter(pl.col("sid").is_in(power) & pl.col("_long"))
        .join(busy, on=["_g", "timestamp"], how="left")
        .filter(pl.col("_busy").fill_null(False) | (pl.col("value") != pl.col("value").round(0)))
        .select("_g", "timestamp").unique()
    )  # fmt: skip
    if stale_t.height == 0:
        return samples
    bad = p.filter(pl.col("_long")).join(stale_t, on=["_g", "timestamp"], how="semi").sort("_i")
    if bad.height == 0:
        return samples
    first = bad.row(0, named=True)
    log.add(src, "stale", "excluded",
            f"{bad.height} samples of {stale_t['_g'].n_unique()} GPUs whose board power stayed "
            f"exactly equal for >= {min_samples} samples ({_field_counts(bad, series)}): values "
            f"frozen after an nv-hostengine restart or a hung DCGM, not measurements; e.g. "
            f"{series['field'][first['sid']]} = {first['value']:g}", **_summary(bad, series))  # fmt: skip
    return s.filter(~pl.col("_i").is_in(bad["_i"].implode())).drop("_i")


STALE_RULES = ("varies", "increases", "active", "may_hold")
"""Per-field staleness rules of ``trainperf/tables/dcgm_staleness.csv`` (column ``rule``):
``varies`` (a measurement with sensor noise that changes between samples of any live GPU, busy or
idle: board power), ``increases`` (a counter that grows on any powered GPU: energy), ``active`` (an
activity ratio or rate that moves while the GPU is busy but sits at a steady, quantised level when
idle), ``may_hold`` (legitimately constant: clocks, temperatures, memory, error counters; never
flagged)."""

GR_ENGINE_FIELD = 1001  # DCGM_FI_PROF_GR_ENGINE_ACTIVE (ratio)
BUSY_GR_RATIO = BUSY_UTIL_PCT / 100
"""``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` from which a GPU counts as busy: the DCP counterpart of
``DCGM_FI_DEV_GPU_UTIL`` (the graphics engine active half of the time)."""


#: Columns of :func:`staleness_table`.
STALENESS_SCHEMA = {"field_id": pl.Int64, "name": pl.String, "rule": pl.String,
                    "min_run": pl.Int64, "why": pl.String}  # fmt: skip


@cache
def staleness_table() -> pl.DataFrame:
    """The per-field staleness rules (``trainperf/tables/dcgm_staleness.csv``), as
    :data:`STALENESS_SCHEMA`: field_id, name, rule (one of :data:`STALE_RULES`), min_run
    (consecutive equal samples that count as stale; null for ``may_hold``), why (the reason and its
    source). Fields not in the table are not checked."""
    return read_table("dcgm_staleness", schema=STALENESS_SCHEMA)


@cache
def _stale_rules() -> dict[int, tuple[str, int]]:
    t = staleness_table().filter(pl.col("rule") != "may_hold")
    return {f: (r, n) for f, r, n in t.select("field_id", "rule", "min_run").iter_rows()}


def _has_long_run(samples: pl.DataFrame, chk: list[int], min_run: list[int], n_min: int,
                  at_bound: pl.Expr) -> bool:  # fmt: skip
    """Whether a series of ``chk`` holds ``min_run[sid]`` or more consecutive equal values (in
    (timestamp, input) order, as :func:`_drop_stale_fields` orders them) off its range's bounds.

    The exact runs of the full check, found cheaply (issue 29: the full check's sorts, windows and
    joins were a quarter of the exposition reader on an archive with nothing stale): the samples
    of ``chk`` are sorted by series alone, stably (input order within a series, which is time order
    in an archive written scrape after scrape; otherwise by series and time), a run starts where the
    series or the value changes, and its length is the distance to the next start.
    """
    q = samples.select("sid", "timestamp", "value").filter(pl.col("sid").is_in(chk))
    if q.height < n_min:
        return False
    q = q.sort("sid", maintain_order=True)
    sid, ts, value = pl.col("sid"), pl.col("timestamp"), pl.col("value")
    in_order = ((sid != sid.shift(1)) | (ts >= ts.shift(1))).fill_null(True).all()
    if not q.select(in_order).item():
        q = q.sort(["sid", "timestamp"], maintain_order=True)
    new = ((sid != sid.shift(1)) | (value != value.shift(1))).fill_null(True)
    starts = q.select(new.arg_true().alias("_s"))["_s"]
    length = starts.shift(-1).fill_null(q.height) - starts
    heads = q[starts].with_columns(length.alias("_len"))
    long = (pl.col("_len") >= _per_sid(min_run, pl.Int64)) & ~at_bound
    return heads.filter(long).height > 0


def _drop_stale_fields(series: pl.DataFrame, samples: pl.DataFrame, src: str,
                       log: QualityLog) -> pl.DataFrame:  # fmt: skip
    """One field of a GPU frozen while the GPU is live (check ``stale_field``), per field.

    After :func:`_drop_frozen` (every profiling field at once) and :func:`_drop_stale` (every field
    of a GPU whose power froze), this looks at each field alone, by the rule of its field in
    :func:`staleness_table`: a series of a ``varies``, ``increases`` or ``active`` field whose value
    stays bit-identical over a run of at least ``min_run`` consecutive samples is stale when the
    GPU shows it is live at no fewer than half of the run's samples after the first: at that time
    another checked field of the same GPU changed its value (a GPU whose every field is constant is
    left to the checks ``frozen`` and ``stale``), and, for an ``active`` field, the GPU is busy by
    another field (``DCGM_FI_DEV_GPU_UTIL`` >= :data:`BUSY_UTIL_PCT` % or
    ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` >= :data:`BUSY_GR_RATIO`; a field is never its own evidence):
    an activity ratio sits at a steady, quantised idle level while power and energy move. A run at
    a bound of the field's range (:func:`value_bounds`: an idle pipe at 0, a saturated engine at 1
    or 100 %) is a legitimate constant and never stale;
    ``may_hold`` fields and fields not in the table are not checked. Every sample of a stale run is
    excluded (the first cannot be told from its frozen copies), so coverage falls.

    Args / returns: as the other checks (series table, samples in input order, source name, log);
    the samples without the stale ones.
    """
    rules = _stale_rules()
    gk = _gpu_keys(series)
    fids = series["field_id"].to_list()
    chk = [i for i, f in enumerate(fids) if f in rules and gk[i] is not None]
    if not chk:
        return samples
    chk_set = set(chk)
    min_run = [rules[f][1] if f in rules else 0 for f in fids]
    n_min = min(min_run[i] for i in chk)
    lo, hi, seen = [], [], {}
    for i, (fid, lab) in enumerate(zip(fids, series["labels"], strict=True)):
        labels = None
        if i in chk_set and FIELDS[fid].unit == "W" and lab and "modelName" in lab:
            labels = _label_dict(lab, seen)
        a, b = value_bounds(fid, labels) if fid in rules else (None, None)
        lo.append(a)
        hi.append(b)
    at_bound = (pl.col("value") == _per_sid(lo, pl.Float64)).fill_null(False) | (
        pl.col("value") == _per_sid(hi, pl.Float64)
    ).fill_null(False)
    if not _has_long_run(samples, chk, min_run, n_min, at_bound):
        # cheap exit: no series holds a run of one value, off its range's bounds (an idle pipe at 0,
        # util at 100 % repeat by right), as long as its field's min_run
        return samples
    s = samples.with_row_index("_i")
    g = _per_sid(gk, pl.UInt32).alias("_g")
    p = s.filter(pl.col("sid").is_in(chk)).sort(["sid", "timestamp", "_i"])
    first_of_sid = pl.col("sid") != pl.col("sid").shift(1)
    changed = pl.col("value") != pl.col("value").shift(1)
    p = (
        p.with_columns(g, first_of_sid.fill_null(True).alias("_f"),
                       changed.fill_null(True).alias("_c"))
        .with_columns((pl.col("_f") | pl.col("_c")).alias("_new"))
        .with_columns(pl.col("_new").cast(pl.UInt32).cum_sum().alias("_run"))
        .with_columns(pl.len().over("_run").alias("_len"))
    )  # fmt: skip
    # times at which a checked field of a GPU changed value (the evidence that the GPU is live)
    moved = (p.filter(~pl.col("_f") & pl.col("_c")).select("_g", "timestamp").unique()
             .with_columns(pl.lit(True).alias("_moved")))  # fmt: skip
    # times at which the GPU is busy by GPU_UTIL (_bu) or by GR_ENGINE_ACTIVE (_bg); a field is
    # never its own evidence
    util = [i for i, f in enumerate(fids) if f == UTIL_FIELD and gk[i] is not None]
    gr = [i for i, f in enumerate(fids) if f == GR_ENGINE_FIELD and gk[i] is not None]

    def busy_at(sids: list[int], lo_val: float, name: str) -> pl.DataFrame:
        return (s.filter(pl.col("sid").is_in(sids) & (pl.col("value") >= lo_val))
                .select(g, "timestamp").unique().with_columns(pl.lit(True).alias(name)))  # fmt: skip

    cand = p.filter((pl.col("_len") >= _per_sid(min_run, pl.Int64)) & ~at_bound)
    if cand.height == 0:
        return samples
    active = [1 if f in rules and rules[f][0] == "active" else 0 for f in fids]
    busy = (pl.col("_bu").fill_null(False) & ~pl.col("sid").is_in(util)) | (
        pl.col("_bg").fill_null(False) & ~pl.col("sid").is_in(gr)
    )
    moved_ = pl.col("_moved").fill_null(False)
    evidence = pl.when(_per_sid(active, pl.UInt8) == 1).then(moved_ & busy).otherwise(moved_)
    cand = (
        cand.join(moved, on=["_g", "timestamp"], how="left")
        .join(busy_at(util, BUSY_UTIL_PCT, "_bu"), on=["_g", "timestamp"], how="left")
        .join(busy_at(gr, BUSY_GR_RATIO, "_bg"), on=["_g", "timestamp"], how="left")
        .with_columns((~pl.col("_new") & evidence).alias("_live"))
    )
    runs = (
        cand.group_by("_run")
        .agg(pl.col("_live").sum().alias("n_live"), pl.len().alias("n"))
        .filter(pl.col("n_live") * 2 >= pl.col("n") - 1)
    )
    if runs.height == 0:
        return samples
    bad = cand.join(runs.select("_run"), on="_run", how="semi").sort("_i")
    first = bad.row(0, named=True)
    n_first = int(bad.filter(pl.col("_run") == first["_run"]).height)
    ln = f" from line {first['line']}" if first["line"] is not None else ""
    log.add(src, "stale_field", "excluded",
            f"{bad.height} samples in {runs.height} runs of one value repeated bit for bit while "
            f"other fields of the same GPU changed ({_field_counts(bad, series)}): "
            f"a field the exporter stopped updating, not measurements; e.g. "
            f"{series['field'][first['sid']]} = {first['value']:g}{ln} for {n_first} samples "
            "(rules per field in dcgm_staleness.csv: activity ratios only while the GPU is busy; "
            "clocks, temperatures, memory and error counters may stay constant and are not "
            "checked)", **_summary(bad, series))  # fmt: skip
    return s.filter(~pl.col("_i").is_in(bad["_i"].implode())).drop("_i")


def _fix_gpu_device(series: pl.DataFrame, samples: pl.DataFrame, src: str, log: QualityLog):
    rows = series.select("sid", "hostname", "gpu", "entity", "field_id", "job_id", "labels").rows()
    minor: dict[int, int] = {}
    seen: dict = {}
    for sid, _h, gpu, ent, _f, _j, lab in rows:
        if ent == "GPU" and gpu is not None and lab and '"device"' in lab:
            m = _DEVICE_RE.fullmatch(str(_label_dict(lab, seen).get("device", "")))
            if m and int(m.group(1)) != gpu:
                minor[sid] = int(m.group(1))
    if not minor:
        return series
    hosts = {rows[s][1] for s in minor}
    by_key: dict[tuple, list[int]] = {}
    for sid, h, gpu, ent, f, _j, _lab in rows:
        if h in hosts and ent == "GPU" and gpu is not None:
            by_key.setdefault((h, f, gpu), []).append(sid)
    unique = all(len(v) == 1 for v in by_key.values())
    sids = sorted(minor)
    s = samples.filter(pl.col("sid").is_in(sids))
    ex_sid = sids[0]
    ex = f'gpu="{rows[ex_sid][2]}" with device="nvidia{minor[ex_sid]}" on {rows[ex_sid][1]}'
    jobs_differ = len({rows[i][5] for v in by_key.values() for i in v}) > 1
    if unique and jobs_differ:
        job = series["job_id"].to_list()
        labels = series["labels"].to_list()
        for sid, m in minor.items():
            h, f = rows[sid][1], rows[sid][4]
            src_sid = by_key.get((h, f, m), [None])[0]
            new = rows[src_sid][5] if src_sid is not None else None  # the exporter's job of index m
            if new != rows[sid][5]:
                lab = json.loads(labels[sid])
                lab["exporter_job_id"] = rows[sid][5] or ""
                labels[sid] = json.dumps(dict(sorted(lab.items())), separators=(",", ":"),
                                         ensure_ascii=False)  # fmt: skip
            job[sid] = new
        series = series.with_columns(
            pl.Series("job_id", job, dtype=pl.String), pl.Series("labels", labels, dtype=pl.String)
        )
        log.add(src, "label_mismatch", "corrected",
                f"the gpu label (DCGM index) and the device label (nvidiaN minor) disagree, {ex}: "
                "job ids re-attributed by device minor (Slurm's GPU index; the exporter's job is "
                "kept as exporter_job_id)", **_summary(s, series))  # fmt: skip
    else:
        why = "" if jobs_differ else " (no job labels to re-attribute)"
        action_detail = "job labels may belong to another GPU" if jobs_differ else "nothing changed"
        log.add(src, "label_mismatch", "flagged",
                f"the gpu label (DCGM index) and the device label (nvidiaN minor) disagree, {ex}; "
                f"{action_detail}{why}", **_summary(s, series))  # fmt: skip
    return series


def _note_mig(series: pl.DataFrame, samples: pl.DataFrame, src: str, log: QualityLog) -> None:
    """MIG instance rows (entity ``GPU-I``, check ``mig_instance``, flagged): kept in the reading,
    but the per-GPU statistics of :mod:`trainperf.telemetry` leave them out (a slice's ratios are
    of the slice, not of the GPU), so the reader says so, naming the file and the first line."""
    mig = [i for i, e in enumerate(series["entity"].to_list()) if e == "GPU-I"]
    if not mig:
        return
    s = samples.filter(pl.col("sid").is_in(mig))
    if s.height == 0:
        return
    log.add(src, "mig_instance", "flagged",
            f"{s.height} samples of MIG instances (entity GPU-I, {_field_counts(s, series)}): "
            "kept in the frame but not in the per-GPU statistics (a slice's ratios are of the "
            "slice, not of the whole GPU)", **_summary(s, series))  # fmt: skip


def finish(
    series: pl.DataFrame,
    samples: pl.DataFrame,
    source: str,
    log: QualityLog | None = None,
    *,
    frozen_min_samples: int = FROZEN_MIN_SAMPLES,
    checks: bool = True,
) -> Reading:
    """Apply the checks of this module and return the :class:`Reading`.

    Args:
        series: ``sid`` (UInt32, equal to the row number) + the columns of
            :data:`trainperf.dcgm.series.SERIES_SCHEMA`.
        samples: :data:`trainperf.dcgm.series.SAMPLE_SCHEMA` rows, in input order.
        source: file name for messages.
        log: quality log to add to (a new one if None); its rows are the reading's quality frame.
        frozen_min_samples: see :data:`FROZEN_MIN_SAMPLES`.
        checks: False: only drop blank sentinels / NaN / Inf (for results that are not samples,
            e.g. PromQL aggregates such as ``count_over_time`` pushed down to Prometheus).

    Returns:
        the reading, samples in input order.
    """
    log = log if log is not None else QualityLog(category=DcgmWarning)
    if samples.height:
        samples = _drop_blank(series, samples, source, log)
    if samples.height and checks:
        samples = _check_times(series, samples, source, log)
    if samples.height and checks:
        samples = _drop_out_of_range(series, samples, source, log)
    if samples.height and checks:
        samples = _drop_repeated(series, samples, source, log)
    if samples.height and checks:
        series = _unify_hosts(series, samples, source, log)
        series, samples = _dedupe(series, samples, source, log)
    if samples.height and checks:
        samples = _drop_frozen(series, samples, source, log, frozen_min_samples)
    if samples.height and checks:
        samples = _drop_stale(series, samples, source, log, frozen_min_samples)
    if samples.height and checks:
        samples = _drop_stale_fields(series, samples, source, log)
    if samples.height and checks:
        series = _fix_gpu_device(series, samples, source, log)
    if samples.height and checks:
        series = check_entity_ids(series, samples, source, log)
    if samples.height and checks:
        _note_mig(series, samples, source, log)
    if samples.height and checks:
        note_counter_dips(series, samples, source, log)
        note_clock_steps(samples, source, log)
    series = series.drop("_is_int", "_is_double")
    return Reading(series, samples.select("sid", "timestamp", "value", "line"), log.frame(), source)


def across_sources(reading: Reading, log: QualityLog, sources: list[str] | None = None) -> Reading:
    """The identity checks of :func:`finish` over several files read one by one
    (:func:`trainperf.dcgm.load`): one host name per GPU UUID (``host_alias``) and one sample per GPU,
    field and time (``duplicate_series``: two exporters writing two files). Rows go to ``log``,
    naming the file (``sources``: the file of each series id) and line of the first sample
    concerned.
    """
    if reading.samples.height == 0 or reading.series.height == 0:
        return reading
    where = reading.source
    series = _unify_hosts(reading.series, reading.samples, where, log, sources)
    series, samples = _dedupe(series, reading.samples, where, log, sources)
    return Reading(series, samples, reading.quality, reading.source)
