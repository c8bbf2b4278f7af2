"""The identity checks of the DCGM readers: one sample per series and time (``duplicate_sample``),
one host name per GPU UUID (``host_alias``), one sample per GPU, field and time where several series
describe one GPU (``duplicate_series``); steps 3 and 4 of :func:`trainperf.dcgm.checks.finish`, and
:func:`trainperf.dcgm.checks.across_sources` across files."""

from __future__ import annotations

import polars as pl

from trainperf.dcgm._checkutil import _field_counts, _per_sid, _summary, _where
from trainperf.quality import QualityLog

__all__: list[str] = []


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
