"""The ``prometheus_client`` engine of :func:`trainperf.dcgm.read_exposition`: slow (2-3 MB/s), kept to
cross-check the fast engine (``prometheus_client.parser.text_string_to_metric_families`` per scrape)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from trainperf.dcgm.checks import finish
from trainperf.dcgm.fields import DcgmFormatError
from trainperf.dcgm.series import Reading, normalise_series, series_frame
from trainperf.dcgm.text import EXPECT_MARKER, marker_us

__all__ = ["exposition_prometheus_client"]


def _split_scrapes(text: str, name: str) -> list[tuple[int | None, int, str]]:
    """Split an archive into (marker_us, first_line_no, text) chunks."""
    chunks: list[tuple[int | None, int, str]] = []
    cur: list[str] = []
    cur_us: int | None = None
    start = 1
    for i, line in enumerate(text.split("\n"), start=1):
        t = line.strip()
        us = None
        if t and not (t[0].isalpha() or t[0] in "_:{"):
            try:
                us = marker_us(t)
            except ValueError:
                raise DcgmFormatError(name, i, EXPECT_MARKER, t) from None
        if us is not None:
            if cur:
                chunks.append((cur_us, start, "\n".join(cur) + "\n"))
            cur, cur_us, start = [], us, i + 1
        else:
            cur.append(line)
    if cur:
        chunks.append((cur_us, start, "\n".join(cur) + "\n"))
    return chunks


def exposition_prometheus_client(data: bytes | str, name: str, default_us: int | None) -> Reading:
    # deferred: only the engine="prometheus_client" path needs its parser (0.2-1 s, -X importtime)
    from prometheus_client.parser import text_string_to_metric_families  # noqa: PLC0415

    if isinstance(data, str):
        data = Path(data).read_bytes()
    text = data.decode("utf-8", errors="replace")
    sid_of: dict[tuple, int] = {}
    rows: list[dict[str, Any]] = []
    o_sid: list[int] = []
    o_ts: list[int] = []
    o_val: list[float] = []
    o_line: list[int] = []
    for scrape_us, first_line, chunk in _split_scrapes(text, name):
        try:
            fams = list(text_string_to_metric_families(chunk))
        except Exception as e:  # prometheus_client raises bare ValueError/IndexError
            raise DcgmFormatError(
                name, first_line, f"valid Prometheus text in the scrape starting here ({e})"
            ) from e
        for fam in fams:
            for s in fam.samples:
                n = s.name
                if (
                    fam.type == "counter"
                    and n.endswith("_total")
                    and (n + "{") not in chunk
                    and (n + " ") not in chunk
                ):
                    n = n[:-6]  # prometheus_client appended _total to a counter sample
                row = normalise_series(n, s.labels)
                k = tuple(row.values())
                sid = sid_of.get(k)
                if sid is None:
                    sid = sid_of[k] = len(rows)
                    rows.append(row)
                ts = s.timestamp
                if ts is not None:
                    ts_us = int(round(float(ts) * 1_000_000))
                elif scrape_us is not None:
                    ts_us = scrape_us
                elif default_us is not None:
                    ts_us = default_us
                else:
                    raise DcgmFormatError(
                        name, first_line, "a sample time (scrape marker or timestamp=)"
                    )
                o_sid.append(sid)
                o_ts.append(ts_us)
                o_val.append(float(s.value))
                o_line.append(first_line)
    if not o_sid:
        return Reading.empty(name)
    series = series_frame(rows).with_row_index("sid")
    obs = pl.DataFrame(
        {"sid": o_sid, "timestamp": o_ts, "value": o_val, "line": o_line},
        schema={"sid": pl.UInt32, "timestamp": pl.Int64, "value": pl.Float64, "line": pl.Int64},
    )
    return finish(series, obs, name)
