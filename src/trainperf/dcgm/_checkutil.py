"""Helpers shared by the DCGM reader checks (:mod:`trainperf.dcgm.checks` and the modules of each
check): per-series lookups, the counts and first line of a quality row, the field counts of a
message, the labels JSON decoded once per text, the physical GPU of a series."""

from __future__ import annotations

import json
from typing import Any

import polars as pl

__all__: list[str] = []


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


def _label_dict(text: str, seen: dict) -> dict:
    """The labels JSON of a series, decoded once per text (``seen``): the series of one GPU share
    it (20 fields, one text). Read only: the dict is shared."""
    labels = seen.get(text)
    if labels is None:
        labels = seen[text] = json.loads(text)
    return labels


def _gpu_keys(series: pl.DataFrame) -> list[int | None]:
    """Per series: an id of the physical GPU it is a field of (UUID first, else host and index),
    None for a series that is not a whole GPU's (MIG instance, NVLink, NVSwitch, non-DCGM).

    The last table's answer is kept (the checks ``frozen``, ``stale`` and ``stale_field`` ask it of
    one series table in turn; issue 41: 0.7 ms a time over the 1,280 series of the benchmark's
    archive): no check changes a frame in place, and the one kept is held, so its identity is not
    reused by another."""
    last = _GPU_KEYS_LAST[0]  # one tuple, read and replaced whole: safe across threads
    if last is not None and last[0] is series:
        return last[1]
    out = _gpu_keys_of(series)
    _GPU_KEYS_LAST[0] = (series, out)
    return out


_GPU_KEYS_LAST: list = [None]  # [(series table, its _gpu_keys)]


def _gpu_keys_of(series: pl.DataFrame) -> list[int | None]:
    ids: dict[tuple, int] = {}
    out: list[int | None] = []
    for h, g, u, e in series.select("hostname", "gpu", "uuid", "entity").iter_rows():
        if e != "GPU" or (g is None and u is None):
            out.append(None)
            continue
        k = ("uuid", u) if u is not None else ("host", h, g)  # UUID first, as in _phys_ids
        out.append(ids.setdefault(k, len(ids)))
    return out


def _period(sid: pl.Series) -> int | None:
    """The period ``p`` of a sid column that repeats one sequence of ``p`` distinct series (an
    archive whose every scrape lists its series in one order, the last scrape possibly cut short),
    or None. Exact: the first ``p`` sids are distinct and every later one equals the one ``p`` rows
    before it, so the previous sample of a series is always ``p`` rows back."""
    n = sid.len()
    if n < 2 or sid.null_count():
        return None
    hits = (sid == sid[0]).arg_true()
    if hits.len() < 2:
        return None
    p = int(hits[1])
    if sid.head(p).n_unique() != p or not (sid.slice(p) == sid.head(n - p)).all():
        return None
    return p
