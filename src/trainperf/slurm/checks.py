"""Record checks that every sacct reader applies after parsing (parsable2 and ``--json`` alike).

:func:`check_records` runs on the frame of one dump (jobs and steps together, derived columns
present, before the split in :func:`trainperf.slurm.fields.assemble`) and, in this order:

1. drops an exact repeat of a record (check ``duplicate_record``, action ``excluded``): every sacct
   column equal to an earlier record of the same dump, e.g. a dump concatenated twice or a line
   pasted twice. Its GPU-hours would count twice. Records of one ``JobID`` that differ (a requeued
   job listed with ``--duplicates``) are different records and stay.
2. a negative ``NNodes`` (a field overflow or a hand-edited dump; ``0`` is kept: ``--json`` gives 0
   for a job that never got an allocation) is replaced by the count of the record's own
   ``NodeList`` where that names hosts (check ``out_of_range``, action ``corrected``), else left
   empty (action ``excluded``): the two fields describe the same allocation, so the job keeps its
   place in the job-size table.
   A negative ``NCPUS`` is left empty (``out_of_range``, ``excluded``).
3. ``End`` before ``Start`` (check ``end_before_start``, action ``excluded``): which of the two is
   wrong is not known, so both are left empty (the record stays in counts and GPU-hours, which
   come from ``Elapsed``, and leaves the time-line charts).

Each check that fires adds one quality row naming the dump, the first line (parsable2; null for
``--json``, whose records have no line) and a JobID, with a :class:`~trainperf.slurm.SacctWarning`.
"""

from __future__ import annotations

import polars as pl

from trainperf.quality import QualityLog

__all__ = ["check_records"]

# derived per-record bookkeeping, not part of what sacct printed
_NOT_RECORD = ("source_line", "data_flags")


def _first(df: pl.DataFrame, mask: pl.Series) -> tuple[int | None, str]:
    """First line (or None) and JobID of the records in ``mask``."""
    sub = df.filter(mask)
    line = sub["source_line"][0] if "source_line" in sub.columns else None
    job = sub["JobID"][0] if "JobID" in sub.columns else sub["job_id_raw"][0]
    return (int(line) if line is not None else None), str(job)


def _records(n: int) -> str:
    return f"{n} record" if n == 1 else f"{n} records"


def check_records(
    df: pl.DataFrame, source: str, log: QualityLog, *, record_key: list[str] | None = None
) -> pl.DataFrame:
    """Apply the checks of this module to one dump's frame; rows added to ``log``.

    Args:
        df: one row per sacct record with the sacct-named columns and the derived ones
            (``n_nodes``, ``nodes``, ``n_cpus``, ``start``, ``end``, ``source_line``).
        source: the dump's path, for messages.
        log: quality log of the dump.
        record_key: columns that determine all the others (two records equal in these are equal
            in every column); ``None``: every column but ``source_line`` and ``data_flags``. The
            parsable2 reader passes its sacct text columns, of which every derived column is a
            function, so a repeat is found without comparing the derived (list) columns.

    Returns:
        ``df`` without repeated records and with the values above left empty or corrected.
    """
    if df.height == 0:
        return df
    df = _drop_repeats(df, source, log, record_key)
    df = _node_counts(df, source, log)
    return _end_before_start(df, source, log)


def _first_distinct(df: pl.DataFrame, key: list[str]) -> pl.Series:
    """``pl.struct(key).is_first_distinct()`` of ``df``, computed from a 64-bit hash of the rows.

    The hash covers the columns that are not floats (equal values hash equal there; a float's
    ``-0.0``/``0.0`` or NaN need not). Rows that are equal have equal hashes, so where no hash
    repeats no row does (the usual case: one hash pass instead of a struct comparison).
    Where hashes repeat, every later row of a hash is compared, all columns, with the first row
    of its hash; if all are equal to it, the first of each hash is the first of each record.
    Otherwise (a collision, or floats that compare unequal) the struct comparison decides, so
    the result is always that of ``is_first_distinct``.
    """
    sub = df.select(key)
    hashed = [c for c, t in sub.schema.items() if not t.is_float()]
    if not hashed:
        return sub.select(pl.struct(key).is_first_distinct()).to_series()
    h = sub.select(hashed).hash_rows()
    first = h.is_first_distinct()
    if first.all():
        return first
    later = ~first
    idx = pl.int_range(h.len(), dtype=pl.UInt32, eager=True)
    heads = pl.DataFrame({"h": h.filter(first), "head": idx.filter(first)})
    head = (  # the row of the first occurrence of each later row's hash
        h.filter(later)
        .to_frame("h")
        .join(heads, on="h", how="left", maintain_order="left")
        .get_column("head")
    )
    if sub.filter(later).equals(sub[head], null_equal=True):
        return first
    return sub.select(pl.struct(key).is_first_distinct()).to_series()  # collision


def _drop_repeats(
    df: pl.DataFrame, source: str, log: QualityLog, key: list[str] | None
) -> pl.DataFrame:
    key = [c for c in (key or df.columns) if c not in _NOT_RECORD]
    first = _first_distinct(df, key)
    if first.all():
        return df
    rep = ~first
    n = int(rep.sum())
    line, job = _first(df, rep)
    log.add(source, "duplicate_record", "excluded",
            f"{_records(n)} repeating an earlier record field for field (e.g. JobID {job}"
            f"{'' if line is None else f' at line {line}'}): each kept once, so its GPU-hours "
            "count once", n_lines=n, first_line=line)  # fmt: skip
    return df.filter(first)


def _node_counts(df: pl.DataFrame, source: str, log: QualityLog) -> pl.DataFrame:
    if "n_nodes" in df.columns:
        bad = df["n_nodes"].is_not_null() & (df["n_nodes"] < 0)
        if bad.any():
            listed = (
                df["nodes"].list.len().cast(pl.Int64).replace(0, None)
                if "nodes" in df.columns
                else pl.Series([None] * df.height, dtype=pl.Int64)
            )
            fix = bad & listed.is_not_null()
            n_fix, n_null = int(fix.sum()), int((bad & ~fix).sum())
            for n, action, what in (
                (n_fix, "corrected", "replaced by the number of hosts in its NodeList"),
                (n_null, "excluded", "left empty (no NodeList to count)"),
            ):
                if n:
                    m = bad & (fix if action == "corrected" else ~fix)
                    ln, jb = _first(df, m)
                    v = df.filter(m)["n_nodes"][0]
                    log.add(source, "out_of_range", action,
                            f"{_records(n)} with a negative NNodes (e.g. {v} for JobID {jb}): "
                            f"{what}", n_lines=n, first_line=ln)  # fmt: skip
            new = pl.when(pl.Series(bad)).then(pl.Series(listed)).otherwise(pl.col("n_nodes"))
            df = df.with_columns(new.alias("n_nodes"))
    if "n_cpus" in df.columns:
        bad = df["n_cpus"].is_not_null() & (df["n_cpus"] < 0)
        if bad.any():
            n = int(bad.sum())
            line, job = _first(df, bad)
            log.add(source, "out_of_range", "excluded",
                    f"{_records(n)} with a negative NCPUS (e.g. JobID {job}): left empty",
                    n_lines=n, first_line=line)  # fmt: skip
            df = df.with_columns(
                pl.when(pl.Series(bad)).then(None).otherwise(pl.col("n_cpus")).alias("n_cpus")
            )
    return df


def _end_before_start(df: pl.DataFrame, source: str, log: QualityLog) -> pl.DataFrame:
    if "start" not in df.columns or "end" not in df.columns:
        return df
    bad = (df["end"] < df["start"]).fill_null(False)
    if not bad.any():
        return df
    n = int(bad.sum())
    line, job = _first(df, bad)
    sub = df.filter(bad)
    log.add(source, "end_before_start", "excluded",
            f"{_records(n)} whose End is before its Start (e.g. JobID {job}: Start "
            f"{sub['start'][0]}, End {sub['end'][0]}): both left empty, which one is wrong is "
            "not known", n_lines=n, first_line=line)  # fmt: skip
    m = pl.Series(bad)
    return df.with_columns(
        pl.when(m).then(None).otherwise(pl.col("start")).alias("start"),
        pl.when(m).then(None).otherwise(pl.col("end")).alias("end"),
    )
