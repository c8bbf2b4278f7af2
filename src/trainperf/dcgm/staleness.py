"""The staleness checks of the DCGM readers: values an exporter keeps serving after they stopped
being measured (steps 5 to 7 of :func:`trainperf.dcgm.checks.finish`): profiling fields frozen on a
busy GPU (``frozen``), every field of a GPU whose board power froze (``stale``), one field frozen
while the rest of its GPU is live (``stale_field``, per-field rules of ``dcgm_staleness.csv``)."""

from __future__ import annotations

from functools import cache

import polars as pl

from trainperf.dcgm._checkutil import (
    _field_counts,
    _gpu_keys,
    _label_dict,
    _per_sid,
    _period,
    _summary,
)
from trainperf.dcgm.fields import FIELDS
from trainperf.dcgm.ranges import value_bounds
from trainperf.quality import QualityLog
from trainperf.tables import read_table

__all__ = [
    "BUSY_GR_RATIO", "BUSY_UTIL_PCT", "FROZEN_MIN_SAMPLES", "STALE_RULES", "STALENESS_SCHEMA",
    "staleness_table",
]  # fmt: skip

FROZEN_MIN_SAMPLES = 5
"""Consecutive equal samples of every profiling field of a busy GPU that count as frozen.
DCP ratios are floats that change from sample to sample on a busy GPU; five equal ones in a row
(5 s at 1 Hz, 75 s at dcgm-exporter's 15 s) do not happen on a working profiling module."""

BUSY_UTIL_PCT = 50.0
"""``DCGM_FI_DEV_GPU_UTIL`` (% of time a kernel ran) from which a GPU counts as busy: a kernel runs
half the time, so the graphics engine cannot be idle (``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` > 0)."""


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
    series or the value changes, and its length is the distance to the next start. Where the
    samples repeat one layout of series (``_period``) the runs are counted without the sort.
    """
    q = samples.select("sid", "timestamp", "value").filter(pl.col("sid").is_in(chk))
    if q.height < n_min:
        return False
    sid, ts, value = pl.col("sid"), pl.col("timestamp"), pl.col("value")
    p = _period(q["sid"])
    if p is not None and q.select((ts >= ts.shift(p)).fill_null(True).all()).item():
        # an archive of scrapes of one layout, each series in time order: a series' previous
        # sample is p rows back, so no sort: eq = equal to it (off the bounds), and the run ending
        # at a row is as long as the chain of eq through the rows p, 2p, ... back (counted up to
        # the longest min_run; issue 41: the sort was most of this test)
        eq = q.select((value == value.shift(p)).fill_null(False).alias("e"))["e"]
        chain = eq
        for k in range(1, n_min - 1):  # first without the bounds: a chain of n_min - 1 at all?
            if not chain.any():
                return False
            chain = chain & eq.shift(k * p, fill_value=False)
        if n_min >= 2 and not chain.any():
            return False
        eq = eq & q.select((~at_bound).fill_null(True).alias("b"))["b"]
        chain, count = eq, eq.cast(pl.UInt32)
        for k in range(1, max(min_run[i] for i in chk) - 1):
            if not chain.any():  # no chain this long: none longer (the common, noisy case)
                break
            chain = chain & eq.shift(k * p, fill_value=False)
            count = count + chain.cast(pl.UInt32)
        long = (pl.lit(count) >= _per_sid(min_run, pl.Int64) - 1) & ~at_bound
        return bool(q.select(long.any()).item())
    q = q.sort("sid", maintain_order=True)
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
