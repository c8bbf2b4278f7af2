"""Prometheus text exposition (dcgm-exporter ``/metrics``): one scrape, or an archive of scrapes.

:func:`read_exposition` returns the long frame; :func:`read_exposition_reading` the normalised
:class:`~trainperf.dcgm.Reading` (series table + samples + data-quality rows); :func:`ingest_exposition`
streams a file of any size into the Parquet store in bounded memory.

The fast engine is one polars CSV read of the file with ``}`` as the separator (so the series key and
the value are split by the CSV reader itself, natively), the key numbered by a native Categorical cast
(exact, no string group-by or join), and Python only over the distinct keys
and the few non-sample lines (scrape markers, comments other than HELP/TYPE). Lines the split does
not fit (no labels, ``}`` inside a label value, odd spacing) are re-split with a regular expression.
Why not prometheus_client: it parses 2-3 MB/s, a hundred times slower (``benchmarks/bench_dcgm.py``);
it stays as ``engine="prometheus_client"`` for cross-checking.
"""

from __future__ import annotations

import bisect
import datetime as _dt
import gzip
import io
import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

import polars as pl
from tqdm.std import tqdm  # not .auto: in a kernel without ipywidgets it warns into the book

from trainperf.dcgm.checks import finish
from trainperf.dcgm.fields import DcgmFormatError, DcgmWarning
from trainperf.dcgm.promclient import exposition_prometheus_client
from trainperf.dcgm.series import (
    Reading,
    empty_frame,
    epoch_us,
    normalise_series,
    read_bytes,
    series_frame,
    src_name,
)
from trainperf.dcgm.store import write_parquet_partitioned, write_store_quality
from trainperf.dcgm.text import (
    EXPECT_LABELS as _EXPECT_LABELS,
)
from trainperf.dcgm.text import (
    EXPECT_LINE as _EXPECT_LINE,
)
from trainperf.dcgm.text import (
    EXPECT_MARKER as _EXPECT_MARKER,
)
from trainperf.dcgm.text import (
    EXPECT_SAMPLE as _EXPECT_SAMPLE,
)
from trainperf.dcgm.text import (
    EXPECT_VALUE as _EXPECT_VALUE,
)
from trainperf.dcgm.text import (
    SAMPLE_RE as _SAMPLE_RE,
)
from trainperf.dcgm.text import marker_us, parse_labels, split_series_key
from trainperf.quality import QualityLog

__all__ = ["ingest_exposition", "parse_labels", "read_exposition", "read_exposition_reading"]

#: Lines from which the values of a file are split in a thread beside the Python over its keys.
OVERLAP_LINES = 50_000
_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trainperf-dcgm-values")

# --------------------------------------------------------------------------------------
# public readers
# --------------------------------------------------------------------------------------


def _prepare(source: Any, timestamp: Any) -> tuple[str, bytes | str, int | None]:
    name = src_name(source)
    if isinstance(source, (str, os.PathLike)) and not str(source).endswith(".gz"):
        data: bytes | str = str(source)  # let polars read (mmap) the file itself
        Path(source).stat()  # FileNotFoundError early, with the path
    else:
        data = read_bytes(source)
    if timestamp is not None:
        default_us: int | None = epoch_us(timestamp, name)
    elif isinstance(source, (str, os.PathLike)):
        default_us = int(round(os.stat(source).st_mtime * 1_000_000))
    else:
        default_us = None
    return name, data, default_us


def read_exposition_reading(
    source: str | os.PathLike | bytes,
    *,
    timestamp: _dt.datetime | float | str | None = None,
    engine: Literal["fast", "prometheus_client"] = "fast",
) -> Reading:
    """:func:`read_exposition`, returning the normalised :class:`~trainperf.dcgm.Reading`
    (series table, samples, data-quality rows) instead of the long frame.

    Raises:
        DcgmFormatError, FileNotFoundError: as :func:`read_exposition`.
        ValueError: unknown ``engine``.
    """
    name, data, default_us = _prepare(source, timestamp)
    if engine == "fast":
        return _exposition_fast(data, name, default_us)
    if engine == "prometheus_client":
        return exposition_prometheus_client(data, name, default_us)
    raise ValueError(f"engine must be 'fast' or 'prometheus_client', not {engine!r}")


def read_exposition(
    source: str | os.PathLike | bytes,
    *,
    timestamp: _dt.datetime | float | str | None = None,
    engine: Literal["fast", "prometheus_client"] = "fast",
) -> pl.DataFrame:
    """Read dcgm-exporter Prometheus text exposition: one scrape or an archive of scrapes.

    Accepted forms (mixable in one file; ``.gz`` files are decompressed):

    * **single scrape** (``curl -s host:9400/metrics > f``): every sample gets
      ``timestamp`` if given, else the file's mtime (UTC). Bytes input needs ``timestamp``.
    * **per-sample timestamps**: ``name{labels} value <epoch-ms>`` (Prometheus text
      format); the sample's own timestamp always wins.
    * **archive**: a *scrape marker* line starts each scrape and gives its time to the
      samples after it, until the next marker. Markers are a bare epoch-seconds line
      (``date -u +%s`` or ``date +%s.%N``), a bare ISO-8601 line (``date -u -Iseconds``)
      or a comment ``# SCRAPE <epoch|iso8601>`` (also ``# TIMESTAMP``). Samples before
      the first marker get ``timestamp``/mtime. Capture, e.g.::

          while true; do date -u +%s; curl -s host:9400/metrics; sleep 15; done >> dcgm.prom

    ``# HELP``/``# TYPE`` and other ``#`` comments and blank lines are skipped;
    ``# TYPE ... counter`` does not change how values are kept (they are never
    differenced here).

    Damage handled (each recorded in the reading's quality rows with a
    :class:`~trainperf.dcgm.DcgmWarning` naming the file and line; see :mod:`trainperf.dcgm.checks`
    for the value checks): a *failed scrape* (a scrape of an archive with no readable sample, e.g.
    an HTTP 500 error text or a curl error message) is excluded and the rest of the archive is
    read (check ``failed_scrape``); a last line cut off without its newline is excluded (check
    ``truncated_line``); a line among readable samples that is not a sample, comment, blank or
    marker (a line cut off mid-line, garbage, malformed labels or value) is excluded (check
    ``malformed_line``); a line with bytes that are not UTF-8 is excluded (check ``invalid_utf8``:
    a damaged label would make a new, wrong series); an empty file, or one of only comments, is
    flagged (check ``empty_file``); a repeated sample of one series and time is dropped (check
    ``duplicate_sample``, :mod:`trainperf.dcgm.checks`).

    Args:
        source: path or the raw bytes.
        timestamp: default sample time (datetime, epoch seconds or ISO string).
        engine: ``"fast"`` (vectorised polars parser, this module) or
            ``"prometheus_client"`` (``prometheus_client.parser.text_string_to_metric_families``
            per scrape; slow, for cross-checking; needs the ``prometheus-client`` package).

    Returns:
        a frame with :data:`trainperf.dcgm.SCHEMA` (value in the :data:`trainperf.dcgm.FIELDS`
        unit), rows in file order.

    Raises:
        DcgmFormatError: unreadable lines (neither a sample, a comment, blank nor a marker,
            malformed labels or a non-numeric value/timestamp) at least as many as the readable
            samples (the threshold: with as much damage as data the file is not an exposition, or
            damaged in a way the reader cannot bound); a file in which no scrape could be read;
            or samples with no time (bytes input without ``timestamp`` and no marker).
        FileNotFoundError: missing file.
    """
    r = read_exposition_reading(source, timestamp=timestamp, engine=engine)
    if r.samples.height == 0 and r.quality.height == 0:
        warnings.warn(f"{r.source}: no samples (empty file or only comments)", stacklevel=2)
    return r.frame()


def ingest_exposition(
    source: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    timestamp: _dt.datetime | float | str | None = None,
    chunk_mb: float = 256.0,
    progress: bool = False,
) -> dict[str, Any]:
    """Stream an exposition archive of any size into a partitioned Parquet store, in bounded memory.

    The file is read in chunks of about ``chunk_mb`` MB that end at a scrape marker (so every chunk
    carries its scrapes' times; a file without markers is cut at any line), each chunk is parsed as
    :func:`read_exposition` parses a whole file (same rules, same errors, line numbers counted from
    the start of the file) and written with :func:`trainperf.dcgm.write_parquet_partitioned`; the
    chunks' data-quality rows are written to the store too (:func:`trainperf.dcgm.store_quality`
    reads them). Peak memory is a few times ``chunk_mb`` whatever the file size; analyse the result
    with :func:`trainperf.dcgm.scan_parquet`. Duplicate series are detected within a chunk (a chunk
    holds whole scrapes, and duplicates share a scrape).

    Args:
        source: exposition file (``.gz`` is decompressed on the fly).
        out_dir: Parquet store (created; files are added, content-hash named, so re-ingesting the
            same file adds nothing).
        timestamp: default sample time for samples before the first marker (default: file mtime).
        chunk_mb: target chunk size in MB (1e6 bytes).
        progress: a tqdm progress bar over bytes read.

    Returns:
        ``{"chunks": n, "rows": n, "bytes": n, "quality": <QUALITY_SCHEMA frame>}``.

    Raises:
        DcgmFormatError: as :func:`read_exposition`, naming the file and the absolute line.
        FileNotFoundError: missing file.
    """

    name = src_name(source)
    path = Path(source)
    size = path.stat().st_size
    default_us = (
        epoch_us(timestamp, name)
        if timestamp is not None
        else int(round(os.stat(path).st_mtime * 1_000_000))
    )
    limit = max(1, int(chunk_mb * 1e6))
    opener = gzip.open if str(path).endswith(".gz") else open
    stats: dict[str, Any] = {"chunks": 0, "rows": 0, "bytes": 0}
    log = QualityLog(category=DcgmWarning)
    failed: list[DcgmFormatError] = []
    bar = None
    if progress:
        bar = tqdm(total=size, unit="B", unit_scale=True, desc=f"ingest {path.name}")

    def flush(buf: list[bytes], first_line: int) -> None:
        data = b"".join(buf)
        r = _exposition_fast(data, name, default_us, line_offset=first_line - 1, log=log,
                             all_failed_ok=True)  # fmt: skip
        if r.samples.height:
            write_parquet_partitioned(r.frame(), out_dir)
        elif r.quality.filter(pl.col("check") == "failed_scrape").height:
            failed.append(DcgmFormatError(name, int(r.quality["first_line"].min()), _EXPECT_SAMPLE))
        stats["chunks"] += 1
        stats["rows"] += r.samples.height
        stats["bytes"] += len(data)
        if bar is not None:
            bar.update(len(data))

    buf: list[bytes] = []
    buf_bytes = 0
    first_line = 1
    seen_marker = False
    try:
        with opener(path, "rb") as fh:
            for lineno, raw in enumerate(fh, start=1):
                head = raw[:1]
                is_marker = False
                if head and not (head.isalpha() or head in b"_:{") and raw.strip():
                    try:
                        is_marker = marker_us(raw.decode("utf-8", "replace").strip()) is not None
                    except ValueError:
                        is_marker = False  # reported with its line by the parser
                seen_marker = seen_marker or is_marker
                if buf_bytes >= limit and (is_marker or not seen_marker):
                    flush(buf, first_line)
                    buf, buf_bytes, first_line = [], 0, lineno
                buf.append(raw)
                buf_bytes += len(raw)
    except (OSError, EOFError) as e:  # a cut-off or corrupt .gz
        raise DcgmFormatError(name, None, "a complete gzip file", str(e)) from None
    if buf:
        flush(buf, first_line)
    if bar is not None:
        bar.close()
    if stats["rows"] == 0 and failed:
        raise failed[0]
    stats["quality"] = log.frame()
    if stats["quality"].height:
        write_store_quality(stats["quality"], out_dir)
    return stats


# --------------------------------------------------------------------------------------
# fast engine
# --------------------------------------------------------------------------------------


def _read_split(
    data: bytes | str, name: str, line_offset: int, pending: list | None = None
) -> pl.DataFrame:
    """The file as (lineno, k, r): k = text before the first ``}``, r = the text after it (up to a
    second ``}``), both null on a blank line, r null on a line without ``}``. Lines with bytes that
    are not UTF-8 are blanked, and their ``invalid_utf8`` quality row (a damaged label would make a
    new, wrong series) is appended to ``pending`` as ``log.add`` arguments, added once the file
    proves readable (no warning before an error)."""
    if (os.path.getsize(data) if isinstance(data, str) else len(data)) == 0:
        return pl.DataFrame(schema={"lineno": pl.UInt32, "k": pl.Categorical, "r": pl.String})

    def read(encoding: str) -> pl.DataFrame:
        # k as a Categorical straight from the reader: each key hashed once while parsing, not
        # copied as text and cast afterwards (issue 29: the cast was a tenth of the reader)
        return pl.read_csv(
            data if isinstance(data, str) else io.BytesIO(data),
            has_header=False,
            separator="}",
            quote_char=None,
            schema={"k": pl.Categorical if encoding == "utf8" else pl.String, "r": pl.String},
            truncate_ragged_lines=True,
            missing_columns="insert",
            encoding=encoding,
        )

    lossy = False
    try:
        try:
            df = read("utf8")  # strict decoding is the faster path
        except pl.exceptions.ComputeError:
            df = read("utf8-lossy")  # invalid UTF-8: replaced by U+FFFD, those lines blanked
            lossy = True
    except pl.exceptions.PolarsError as exc:
        raise DcgmFormatError(
            name, 1 + line_offset, "Prometheus text exposition (UTF-8 text)",
            f"unreadable bytes ({type(exc).__name__})",
        ) from None  # fmt: skip
    df = df.with_row_index("lineno", offset=1 + line_offset)
    if lossy and pending is not None:
        fffd = "\ufffd"
        hit = (pl.col("k").str.contains(fffd, literal=True).fill_null(False)
               | pl.col("r").str.contains(fffd, literal=True).fill_null(False))  # fmt: skip
        bad = df.filter(hit)
        n = bad.height
        if n and n < df.height:  # a file of nothing else is not text: the parser says so
            ln, k, r = bad.row(0)
            text = k if r is None else f"{k}}}{r}"
            pending.append(((name, "invalid_utf8", "excluded",
                    f"{n} {'line has' if n == 1 else 'lines have'} bytes that are not UTF-8 "
                    f"(a damaged label or value), e.g. line {ln}: {text[:80]!r}"),
                    {"n_lines": n, "first_line": int(ln)}))  # fmt: skip
            null = pl.lit(None, pl.String)
            df = df.with_columns(
                pl.when(hit).then(null).otherwise(pl.col("k")).alias("k"),
                pl.when(hit).then(null).otherwise(pl.col("r")).alias("r"),
            )
    if lossy:
        df = df.with_columns(pl.col("k").cast(pl.Categorical))
    return df


def _full_lines(data: bytes | str, linenos: list[int], line_offset: int) -> dict[int, str]:
    """The full text of some lines (the ``}`` split cuts a line at a second ``}``)."""
    raw = Path(data).read_bytes() if isinstance(data, str) else data
    lines = raw.split(b"\n")
    out = {}
    for ln in linenos:
        i = ln - 1 - line_offset
        out[ln] = lines[i].decode("utf-8", "replace").rstrip("\r") if 0 <= i < len(lines) else ""
    return out


def _ends_with_newline(data: bytes | str) -> bool:
    if isinstance(data, str):
        with open(data, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            if fh.tell() == 0:
                return True
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) == b"\n"
    return data.endswith(b"\n") or len(data) == 0


def _other_lines(other: pl.DataFrame, bad: list[tuple[int, str, str]]) -> tuple[list, list, list]:
    """Markers, unbraced sample candidates and garbage among the non-sample lines."""
    m_line: list[int] = []
    m_us: list[int] = []
    slow: list[int] = []
    # the common markers (``date -u +%s``, ``# TIMESTAMP <epoch>``, whole seconds, nothing around
    # them) read in polars, the rest line by line (issue 41: marker_us per line was 2.7 ms of the
    # 100 MB archive's 2,000 scrapes); float(t) * 1e6 as marker_us takes it, the same IEEE product
    digits = pl.col("k").str.extract(_PLAIN_MARKER, 1)
    plain = other.select(
        "lineno",
        pl.when(pl.col("r").is_null())
        .then((digits.cast(pl.Float64) * 1_000_000.0).round(0).cast(pl.Int64))
        .alias("us"),
    )
    is_plain = plain["us"].is_not_null()
    if is_plain.any():
        m_line, m_us = (
            plain.filter(is_plain)["lineno"].to_list(),
            plain["us"].drop_nulls().to_list(),
        )
        other = other.filter(~is_plain)
    n_plain = len(m_line)
    for lineno, k, r in other.iter_rows():
        text = k if r is None else f"{k}}}{r}"
        t = (text or "").strip()
        if not t:
            continue
        try:
            us = marker_us(t)
        except ValueError:
            bad.append((lineno, _EXPECT_MARKER, t))
            m_line.append(lineno)  # still a scrape boundary
            m_us.append(-1)
            continue
        if us is not None:
            m_line.append(lineno)
            m_us.append(us)
        elif t.startswith("#"):
            continue
        elif r is None and (t[0].isalpha() or t[0] in "_:") and text == text.lstrip():
            slow.append(lineno)  # a sample without labels, or a label set without value
        else:
            bad.append((lineno, _EXPECT_LINE, t))
    if n_plain and len(m_line) > n_plain:  # both kinds: in line order
        m_line, m_us = (list(x) for x in zip(*sorted(zip(m_line, m_us, strict=True)), strict=True))
    return m_line, m_us, slow


_PLAIN_MARKER = r"^(?:# (?:SCRAPE|TIMESTAMP) )?([0-9]{9,10})$"  # what marker_us reads as epoch s


def _split_values(lf: pl.LazyFrame) -> pl.LazyFrame:
    """``r`` = "value [ts]" -> value (Float64), ts_ms (Int64), _ok (Boolean)."""
    j = pl.col("r").str.find(" ", literal=True)
    v_s = pl.when(j.is_null()).then(pl.col("r")).otherwise(pl.col("r").str.slice(0, j))
    ts_s = pl.when(j.is_null()).then(None).otherwise(pl.col("r").str.slice(j + 1).str.strip_chars())
    lf = lf.with_columns(v_s.alias("v_s"), ts_s.alias("ts_s")).with_columns(
        pl.col("v_s").cast(pl.Float64, strict=False).alias("value"),
        pl.col("ts_s").cast(pl.Int64, strict=False).alias("ts_ms"),
    )
    special = pl.col("v_s").str.to_lowercase().is_in(["nan", "+inf", "-inf", "inf"])
    ts_ok = pl.col("ts_ms").is_not_null() & (pl.col("ts_ms").abs() < 9_000_000_000_000_000)
    ok = (pl.col("value").is_not_null() | special) & (pl.col("ts_s").is_null() | ts_ok)
    return lf.with_columns(ok.alias("_ok")).drop("v_s", "ts_s")


def _fast_values(samples: pl.DataFrame) -> pl.DataFrame:
    """Sample lines (lineno, k, r) -> lineno, k, value, ts_ms, _ok. The fast path takes ``r`` of
    exactly the form `` <value>`` or `` <value> <ms>`` (one space each, as exporters write it);
    anything else (tabs, several spaces, a CR, junk: the casts reject blanks) is not _ok and is
    re-split by the slow path. Files without per-sample timestamps need one cast of ``r[1:]``."""
    r = pl.col("r")
    head = samples["r"].head(1000)
    if head.str.count_matches(" ", literal=True).max() == 1:  # " <value>" only (so far)
        out = samples.select(
            "lineno", "k", r.str.slice(1).cast(pl.Float64, strict=False).alias("value"),
            pl.lit(None, pl.Int64).alias("ts_ms"), r.str.starts_with(" ").alias("_sp"),
        )  # fmt: skip
        hard = out["value"].is_null() | ~out["_sp"]
        if not hard.any():
            return out.drop("_sp").with_columns(pl.lit(True).alias("_ok"))
        easy = out.filter(~hard).drop("_sp").with_columns(pl.lit(True).alias("_ok"))
        rest = _split_fields(samples.filter(hard))
        return pl.concat([easy, rest]).sort("lineno")
    return _split_fields(samples)


def _split_fields(samples: pl.DataFrame) -> pl.DataFrame:
    s = samples.select("lineno", "k", pl.col("r").str.splitn(" ", 3).alias("s")).unnest("s")
    f0, v, t = pl.col("field_0"), pl.col("field_1"), pl.col("field_2")
    s = s.with_columns(
        v.cast(pl.Float64, strict=False).alias("value"),
        t.cast(pl.Int64, strict=False).alias("ts_ms"),
    )
    special = v.str.to_lowercase().is_in(["nan", "+inf", "-inf", "inf"])
    ts_ok = t.is_null() | (
        pl.col("ts_ms").is_not_null() & (pl.col("ts_ms").abs() < 9_000_000_000_000_000)
    )
    ok = (f0 == "") & (pl.col("value").is_not_null() | special) & ts_ok
    return s.select("lineno", "k", "value", "ts_ms", ok.fill_null(False).alias("_ok"))


def _slow_parse(texts: dict[int, str], bad: list[tuple[int, str, str]]) -> pl.DataFrame:
    """Regex split of lines the fast split did not fit: (lineno, k, value, ts_ms)."""
    schema = {"lineno": pl.UInt32, "k": pl.String, "value": pl.Float64, "ts_ms": pl.Int64}
    if not texts:
        return pl.DataFrame(schema=schema)
    f = pl.DataFrame({"lineno": list(texts), "line": list(texts.values())},
                     schema={"lineno": pl.UInt32, "line": pl.String})  # fmt: skip
    g = f.with_columns(
        pl.col("line").str.strip_chars_end().str.extract_groups(_SAMPLE_RE).alias("g")
    ).unnest("g")
    g = g.rename({g.columns[2]: "key", g.columns[3]: "r"})
    for ln, line in g.filter(pl.col("key").is_null()).select("lineno", "line").rows():
        bad.append((ln, _EXPECT_SAMPLE, line))
    g = _split_values(g.filter(pl.col("key").is_not_null()).lazy()).collect()
    for ln, line in g.filter(~pl.col("_ok")).select("lineno", "line").rows():
        bad.append((ln, _EXPECT_VALUE, line))
    k = pl.when(pl.col("key").str.ends_with("}")).then(pl.col("key").str.slice(0, pl.col("key").str.len_chars() - 1)).otherwise(pl.col("key"))  # fmt: skip
    return g.filter(pl.col("_ok")).select("lineno", k.alias("k"), "value", "ts_ms").cast(schema)


def _series_of_keys(keys: pl.DataFrame, bad: list, retry: list | None) -> tuple[pl.DataFrame, dict]:
    """Distinct keys (kid, k, lineno) -> series table (sid = row) and kid -> sid.

    Keys that do not parse go to ``retry`` (their lines are re-split by regex, since a ``}`` inside
    a label value cuts the key early) or, if ``retry`` is None, to ``bad``. A key that does not
    start like a sample (leading blank or junk) is put in ``retry`` *and* given a sid, which marks
    its lines as not samples."""
    rows: list[dict] = []
    attr_sid: dict[tuple, int] = {}
    kid_sid: dict[int, int] = {}
    label_cache: dict = {}  # label text -> labels, labels -> attributes: once per GPU, not per field
    norm_cache: dict = {}
    for kid, k, ln in keys.iter_rows():
        if retry is not None and not (k[:1].isalpha() or k[:1] in "_:{"):
            retry.append((kid, ln, k))
            kid_sid[kid] = -1
            continue
        sk = split_series_key(k + "}", label_cache) if "{" in k else None
        if "{" not in k and retry is None:  # a sample without labels (regex-split)
            sk = split_series_key(k)
        if sk is None:
            if retry is not None:
                retry.append((kid, ln, k))
            else:
                bad.append((ln, _EXPECT_LABELS, k + "}" if "{" in k else k))
            continue
        row = normalise_series(*sk, cache=norm_cache)
        t = tuple(row.values())
        sid = attr_sid.get(t)
        if sid is None:  # keys that normalise alike (Hostname= vs hostname=) share a series
            sid = attr_sid[t] = len(rows)
            rows.append(row)
        kid_sid[kid] = sid
    ser = series_frame(rows).with_row_index("sid")
    return ser, kid_sid


def _failed_scrapes(
    bad, m_line, good_lines: pl.Series, ends_nl, last_line, name, log, all_failed_ok
):
    """Decide what bad lines cost: a truncated last line or failed scrapes are excluded (quality
    rows), anything else raises. Returns the line ranges [lo, hi) of excluded scrapes."""
    bad = sorted(bad)
    truncated = None
    if bad and not ends_nl and bad[-1][0] == last_line:
        truncated = bad.pop()

    def note_truncated() -> None:
        if truncated is not None:
            log.add(name, "truncated_line", "excluded",
                    f"the last line is cut off (no newline, not a sample): {truncated[2][:80]!r}",
                    n_lines=1, first_line=truncated[0])  # fmt: skip

    if not bad:
        note_truncated()
        return []
    bounds = sorted(m_line)

    def scrape(ln: int) -> int:
        return bisect.bisect_right(bounds, ln)

    good_scrapes = {}
    if good_lines.len():
        gs = (
            pl.DataFrame({"ln": good_lines})
            .select(
                pl.lit(pl.Series(bounds, dtype=pl.Int64))
                .search_sorted(pl.col("ln").cast(pl.Int64), side="right")
                .alias("s")
            )["s"]
            .value_counts()
        )
        good_scrapes = dict(gs.rows())
    bad_scrapes = sorted({scrape(ln) for ln, _, _ in bad})
    mixed = [s for s in bad_scrapes if good_scrapes.get(s, 0) > 0]
    all_failed = not good_scrapes
    if mixed:
        in_mixed = [b for b in bad if scrape(b[0]) in mixed]
        if len(in_mixed) >= good_lines.len():  # at least as much damage as data: not bounded
            raise DcgmFormatError(name, in_mixed[0][0], in_mixed[0][1], in_mixed[0][2])
        _note_malformed(in_mixed, name, log)
        bad = [b for b in bad if scrape(b[0]) not in mixed]
        if not bad:
            note_truncated()
            return []
    if (all_failed and not all_failed_ok) or not bounds:
        raise DcgmFormatError(name, bad[0][0], bad[0][1], bad[0][2])
    note_truncated()
    ranges = []
    for s in bad_scrapes:
        lo = bounds[s - 1] if s > 0 else 1
        hi = bounds[s] if s < len(bounds) else last_line + 1
        ranges.append((lo, hi))
    n_lines = sum(hi - lo for lo, hi in ranges)
    log.add(name, "failed_scrape", "excluded",
            f"{len(ranges)} scrapes with no readable sample (an HTTP error page or an exporter "
            f"error message instead of metrics), e.g. line {bad[0][0]}: {bad[0][2][:80]!r}",
            n_lines=n_lines, first_line=bad[0][0])  # fmt: skip
    return ranges


def _note_malformed(bad: list[tuple[int, str, str]], name: str, log: QualityLog) -> None:
    """One ``malformed_line`` row for the unreadable lines among readable samples (excluded)."""
    ln, expect, text = bad[0]
    n = len(bad)
    log.add(name, "malformed_line", "excluded",
            f"{n} {'line is' if n == 1 else 'lines are'} not readable among readable samples "
            f"(a line cut off mid-line, garbage bytes, malformed labels or value), e.g. line {ln}: "
            f"expected {expect}; got {text[:80]!r}", n_lines=n, first_line=ln)  # fmt: skip


def _keyed(parts: pl.DataFrame, keys: bool = True) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """Number the distinct keys: parts get ``kid`` (UInt32), keys are (kid, k, lineno) in first-seen
    order (None with ``keys=False``). The number is the key's code in a polars Categorical (one
    native hashing pass, exact: equal codes are equal strings), instead of grouping and joining on
    the ~250-byte strings; the categories are freed with the column."""
    k = pl.col("k")
    code = (k if parts.schema["k"] == pl.Categorical else k.cast(pl.Categorical)).to_physical()
    parts = parts.with_columns(code.alias("kid"))
    if not keys:
        return parts, None
    first = parts.filter(pl.col("kid").is_first_distinct())
    return parts, first.select("kid", k.cast(pl.String), "lineno")


def _sid_of_kid(kid: pl.Series, kid_sid: dict[int, int]) -> pl.Expr:
    """``kid`` (the key codes of :func:`_keyed`) -> series id (UInt32, null for a kid not in
    ``kid_sid``): a table lookup where the codes form one range (as a read's new Categorical codes
    do), else ``replace_strict`` (a hash per row: 4 ms of 320k samples)."""
    if kid_sid and kid.len():
        lo, hi = min(kid_sid), max(kid_sid)
        # codes of the keys read with the comments and markers (a code each): a table with gaps
        if hi - lo + 1 <= 4 * len(kid_sid) + 65536 and lo <= kid.min() and kid.max() <= hi:
            get = kid_sid.get
            table = pl.Series([get(i) for i in range(lo, hi + 1)], dtype=pl.UInt32)
            return pl.lit(table).gather(pl.col("kid") - lo)
    return pl.col("kid").replace_strict(
        list(kid_sid), list(kid_sid.values()), default=None, return_dtype=pl.UInt32
    )


def _exposition_fast(
    data: bytes | str,
    name: str,
    default_us: int | None,
    line_offset: int = 0,
    log: QualityLog | None = None,
    all_failed_ok: bool = False,
) -> Reading:
    log = log if log is not None else QualityLog(category=DcgmWarning)
    pending: list = []
    lines = _read_split(data, name, line_offset, pending)
    if lines.height == 0:
        if not all_failed_ok:  # a whole file (not a chunk of one) of 0 bytes
            log.add(name, "empty_file", "flagged", "empty file (0 bytes): no samples", n_lines=0)
        return Reading.empty(name, log.frame())
    last_line = int(lines["lineno"][-1])
    k = pl.col("k")
    lines = lines.with_columns(k.cat.starts_with("#").alias("_c"))  # once per distinct key
    bad: list[tuple[int, str, str]] = []
    # comments other than HELP/TYPE and lines without "}": tested on the categories (once per
    # distinct text), only those few lines cast to text (HELP/TYPE are most comment lines)
    help_type = k.cat.starts_with("# HELP ") | k.cat.starts_with("# TYPE ")
    cand = pl.col("_c") | (pl.col("r").is_null() & k.is_not_null())
    other = lines.filter(cand & ~help_type).drop("_c").with_columns(k.cast(pl.String))
    sample_lines = lines.filter(pl.col("r").is_not_null() & ~pl.col("_c"))
    # a large file: the values split in a thread (polars, the GIL released) while this one reads
    # the markers and turns the distinct keys into series (Python), as if every value reads (the
    # common case; checked after, else done again from the lines that read). Issue 41: the two
    # were 0.009 s and 0.007 s of one core each on the 100 MB archive.
    split = _POOL.submit(_fast_values, sample_lines) if lines.height >= OVERLAP_LINES else None
    m_line, m_us, slow_lines = _other_lines(other, bad)
    guess = None
    if split is not None:
        _, keys = _keyed(sample_lines.select("lineno", "k"))
        g_bad: list = []
        g_retry: list = []
        guess = (keys, g_bad, g_retry, *_series_of_keys(keys, g_bad, g_retry))
    parts = split.result() if split is not None else _fast_values(sample_lines)
    if parts["_ok"].all():  # the common case: no line to re-split (two filters less)
        redo, parts = [], parts.drop("_ok")
    else:
        redo = parts.filter(~pl.col("_ok"))["lineno"].to_list()
        parts = parts.filter(pl.col("_ok")).drop("_ok")
        guess = None  # the keys of the lines that read may be fewer
    retry: list = []
    if guess is not None:  # the keys of every sample line are those of the lines that read
        parts, _ = _keyed(parts.select("lineno", "k", "value", "ts_ms"), keys=False)
        keys, g_bad, retry, series, kid_sid = guess
        bad += g_bad
    else:
        parts, keys = _keyed(parts)
        # keys -> series (Python over the distinct keys only)
        series, kid_sid = _series_of_keys(keys, bad, retry)
    if retry:
        rk = [kid for kid, _, _ in retry if kid not in kid_sid]
        not_sample = [kid for kid, _, text in retry if kid in kid_sid]  # marked: leading junk
        for kid in not_sample:
            del kid_sid[kid]
        junk = parts.filter(pl.col("kid").is_in(not_sample))
        for ln, kk in junk.select("lineno", pl.col("k").cast(pl.String)).rows():
            bad.append((ln, _EXPECT_LINE, kk + "}"))
        redo += parts.filter(pl.col("kid").is_in(rk))["lineno"].to_list()
        parts = parts.filter(~pl.col("kid").is_in([kid for kid, _, _ in retry]))
    parts = parts.with_columns(_sid_of_kid(parts["kid"], kid_sid).alias("sid")).drop("kid", "k")
    if redo or slow_lines:
        series, parts = _add_slow(data, sorted(set(redo) | set(slow_lines)), line_offset, series,
                                  parts, bad)  # fmt: skip
    ranges = _failed_scrapes(bad, m_line, parts["lineno"], _ends_with_newline(data), last_line,
                             name, log, all_failed_ok)  # fmt: skip
    for args, kw in pending:  # the file is readable (no error above): record and warn
        log.add(*args, **kw)
    if parts.height == 0:
        if not all_failed_ok and not log.rows:
            log.add(name, "empty_file", "flagged",
                    "no samples: the file holds only comments or blank lines", n_lines=last_line)  # fmt: skip
        return Reading.empty(name, log.frame())
    samples = _stamp(parts, m_line, m_us, default_us, name, data, line_offset)
    if ranges:
        cond = pl.lit(False)
        for lo, hi in ranges:
            cond = cond | pl.col("line").is_between(lo, hi, closed="left")
        samples = samples.filter(~cond)
    return finish(series.with_columns(pl.col("sid").cast(pl.UInt32)), samples, name, log)


def _add_slow(data, linenos, line_offset, series, parts, bad):
    """Regex-split lines the fast split did not fit and add their samples (and new series)."""
    slow = _slow_parse(_full_lines(data, linenos, line_offset), bad)
    if slow.height == 0:
        return series, parts
    slow, skeys = _keyed(slow)
    extra, kid_sid = _series_of_keys(skeys, bad, None)
    attr = {tuple(r[1:]): r[0] for r in series.drop("_is_int", "_is_double").rows()}
    ex_rows = extra.drop("_is_int", "_is_double").rows()
    remap, new = {}, []
    for row in ex_rows:  # a key seen on the fast path (same attributes) keeps its series
        t = tuple(row[1:])
        if t in attr:
            remap[row[0]] = attr[t]
        else:
            remap[row[0]] = series.height + len(new)
            new.append(row[0])
    if new:
        add = extra.filter(pl.col("sid").is_in(new)).with_columns(
            pl.col("sid").replace_strict(new, [remap[i] for i in new], return_dtype=pl.UInt32)
        )
        series = pl.concat([series, add.cast(series.schema)])
    kid2 = {kid: remap[s] for kid, s in kid_sid.items()}
    bad_ln = {b[0] for b in bad}
    slow = slow.filter(pl.col("kid").is_in(list(kid2)) & ~pl.col("lineno").is_in(list(bad_ln)))
    slow = slow.with_columns(
        pl.col("kid")
        .replace_strict(list(kid2), list(kid2.values()), return_dtype=pl.UInt32)
        .alias("sid")
    ).select(parts.columns)
    return series, pl.concat([parts, slow]).sort("lineno")


def _stamp(parts, m_line, m_us, default_us, name, data, line_offset) -> pl.DataFrame:
    """Samples with their time: per-sample ms > scrape marker > default."""
    if m_line:
        # the time of the last marker at or before each sample's line: the markers' times with a
        # null first, gathered at the count of marker lines up to the sample's (one select where
        # join_asof took a sort and a join; issue 41)
        order = sorted(range(len(m_line)), key=m_line.__getitem__)
        lines = pl.Series([m_line[i] for i in order], dtype=pl.UInt32)
        times = pl.Series([None] + [m_us[i] for i in order], dtype=pl.Int64)
        scrape = pl.lit(times).gather(pl.lit(lines).search_sorted(pl.col("lineno"), side="right"))
    else:
        scrape = pl.lit(None, pl.Int64)
    s = parts.select(
        "sid",
        pl.coalesce(pl.col("ts_ms") * 1000, scrape, pl.lit(default_us, pl.Int64)).alias(
            "timestamp"
        ),
        "value",
        pl.col("lineno").cast(pl.Int64).alias("line"),
    )
    if s["timestamp"].null_count():
        missing = s.filter(pl.col("timestamp").is_null())
        ln = int(missing["line"][0])
        raise DcgmFormatError(
            name, ln,
            "a sample time: a scrape marker line before it, a per-sample ms timestamp, or timestamp=",
            _full_lines(data, [ln], line_offset)[ln],
        )  # fmt: skip
    return s


def _empty() -> pl.DataFrame:
    return empty_frame()
