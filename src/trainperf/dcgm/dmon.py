"""``dcgmi dmon -e <ids>`` text output (DCGM's command-line field monitor) as DCGM telemetry.

Format: ``dcgmi/DeviceMonitor.cpp`` in NVIDIA/DCGM 4.6.0 (a ``#Entity`` header with the fields'
short names, an ``ID`` units line, then one row per entity and tick; headers repeat every 14 ticks).
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo

import polars as pl

from trainperf.dcgm.checks import finish
from trainperf.dcgm.fields import DMON_SHORT_NAMES, FIELDS, DcgmFormatError, resolve_ids
from trainperf.dcgm.series import (
    SERIES_SCHEMA,
    Reading,
    epoch_us,
    interval_us,
    read_bytes,
    src_name,
)

__all__ = ["read_dmon", "read_dmon_reading"]

_DMON_TS_RE = re.compile(
    r"^(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?|\d{9,11}(?:\.\d+)?)\s+(.*)$"
)
_DMON_HEADER_RE = re.compile(r"^#\s*Entity\b\s*(.*)$", re.I)
_DMON_UNITS_RE = re.compile(r"^(ID|Id)\b", re.I)
_DMON_ROW_RE = re.compile(r"^([A-Za-z][A-Za-z-]*)\s+(\d+)(?:\s+(LINK|Link|link)\s+(\d+))?\s+(.*)$")
_DMON_NOISE = ("dmon was stopped", "Note:")
_INT32 = 2**31


def _local_us(s: str, tz: str, name: str, lineno: int) -> int:
    if re.fullmatch(r"\d+(\.\d+)?", s):
        return int(round(float(s) * 1_000_000))
    try:
        d = _dt.datetime.fromisoformat(s.replace("Z", "+00:00").replace(",", "."))
    except ValueError:
        raise DcgmFormatError(name, lineno, "an ISO-8601 or epoch-seconds line prefix", s) from None
    if d.tzinfo is None:
        d = d.replace(tzinfo=ZoneInfo(tz))
    return int(round(d.timestamp() * 1_000_000))


@dataclass
class _Parse:
    """State of one pass over a dmon text: ticks and the samples of each."""

    name: str
    fixed_ids: list[int] | None
    tz: str
    cols: list[int] | None = None
    tick: int = -1
    seen: set = field(default_factory=set)
    tick_us: list = field(default_factory=list)
    timed: bool | None = None
    r_tick: list = field(default_factory=list)
    r_ent: list = field(default_factory=list)
    r_fid: list = field(default_factory=list)
    r_val: list = field(default_factory=list)
    r_line: list = field(default_factory=list)

    def header(self, shorts: list[str], lineno: int, line: str) -> None:
        if self.fixed_ids is not None:
            if len(shorts) != len(self.fixed_ids):
                raise DcgmFormatError(
                    self.name, lineno, f"{len(self.fixed_ids)} columns as in fields=", line
                )
            self.cols = self.fixed_ids
            return
        cols = []
        for s in shorts:
            if s.upper() not in DMON_SHORT_NAMES:
                raise DcgmFormatError(
                    self.name, lineno,
                    f"a known dmon column ({', '.join(sorted(DMON_SHORT_NAMES))}) or pass fields=", s,
                )  # fmt: skip
            cols.append(DMON_SHORT_NAMES[s.upper()])
        self.cols = cols

    def row(self, r: re.Match, ts_us: int | None, lineno: int, raw: str) -> None:
        if self.cols is None:
            raise DcgmFormatError(
                self.name, lineno, "a '#Entity ...' header before the first data row", raw
            )
        is_timed = ts_us is not None
        if self.timed is None:
            self.timed = is_timed
        elif self.timed != is_timed:
            raise DcgmFormatError(self.name, lineno, "every data row timestamped, or none", raw)
        etype, eid, link = r.group(1), int(r.group(2)), r.group(4)
        if eid >= _INT32 or (link is not None and int(link) >= _INT32):
            raise DcgmFormatError(self.name, lineno, "an entity id below 2**31", raw)
        if link is not None:
            ent = ("NVLink", eid, int(link))
        elif etype.upper() == "GPU":
            ent = ("GPU", eid, eid)
        else:
            ent = ("GPU-I" if etype.upper() == "GPU-I" else etype, None, eid)
        if self.tick < 0 or ent in self.seen:
            self.tick += 1
            self.seen = set()
            self.tick_us.append(ts_us)
        self.seen.add(ent)
        cells = r.group(5).split()
        if len(cells) != len(self.cols):
            raise DcgmFormatError(
                self.name, lineno, f"{len(self.cols)} values (one per header column)", raw
            )
        for fid, c in zip(self.cols, cells, strict=True):
            if c in ("N/A", "<<<NULL>>>", "-"):
                continue
            try:
                v = float(c)
            except ValueError:
                raise DcgmFormatError(
                    self.name, lineno, "a number or N/A in every cell", c
                ) from None
            self.r_tick.append(self.tick)
            self.r_ent.append(ent)
            self.r_fid.append(fid)
            self.r_val.append(v)
            self.r_line.append(lineno)

    def line(self, lineno: int, raw: str) -> None:
        line = raw.strip()
        if not line:
            return
        ts_us = None
        m = _DMON_TS_RE.match(line)
        if m and not line.startswith(("GPU", "#")):
            ts_us = _local_us(m.group(1), self.tz, self.name, lineno)
            line = m.group(2).strip()
        if not line or line.startswith(_DMON_NOISE):
            return
        h = _DMON_HEADER_RE.match(line)
        if h:
            self.header(h.group(1).split(), lineno, line)
            return
        if line.startswith("#") or _DMON_UNITS_RE.match(line):
            return
        r = _DMON_ROW_RE.match(line)
        if not r:
            raise DcgmFormatError(
                self.name, lineno, "a row 'GPU <n> <values...>' or a '#Entity' header", raw
            )
        self.row(r, ts_us, lineno, raw)


def _frames(p: _Parse, hostname: str | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The parse as a series table (one per entity x field) and samples."""
    ents = list(dict.fromkeys(zip(p.r_ent, p.r_fid, strict=True)))
    sid_of = {e: i for i, e in enumerate(ents)}
    srows = []
    for (etype, gpu, eid), fid in ents:
        info = FIELDS.get(fid)
        srows.append({
            "hostname": hostname, "gpu": gpu, "uuid": None, "entity": etype, "entity_id": eid,
            "field_id": fid, "field": info.name if info else str(fid), "job_id": None,
            "labels": "{}", "_is_int": bool(info and info.dtype == "int64"),
            "_is_double": bool(info and info.dtype == "double"),
        })  # fmt: skip
    series = pl.DataFrame(srows, schema=SERIES_SCHEMA, orient="row").with_row_index("sid")
    samples = pl.DataFrame(
        {
            "sid": [sid_of[k] for k in zip(p.r_ent, p.r_fid, strict=True)],
            "timestamp": [p.tick_us[t] for t in p.r_tick],
            "value": p.r_val,
            "line": p.r_line,
        },
        schema={"sid": pl.UInt32, "timestamp": pl.Int64, "value": pl.Float64, "line": pl.Int64},
    )
    return series, samples


def read_dmon_reading(
    source: str | os.PathLike | bytes,
    *,
    hostname: str | None = None,
    fields: Sequence[int | str] | None = None,
    start: _dt.datetime | float | str | None = None,
    interval: float | str | _dt.timedelta | None = None,
    tz: str = "UTC",
) -> Reading:
    """:func:`read_dmon`, returning the normalised :class:`~trainperf.dcgm.Reading`."""
    name = src_name(source)
    text = read_bytes(source).decode("utf-8", errors="replace")
    p = _Parse(name, resolve_ids(fields) if fields is not None else None, tz)
    for lineno, raw in enumerate(text.splitlines(), start=1):
        p.line(lineno, raw)
    if p.tick < 0:
        return Reading.empty(name)
    if not p.timed:
        if start is None or interval is None:
            raise DcgmFormatError(
                name, None,
                "timestamped lines (see read_dmon docs) or start= and interval= arguments",
                "no timestamps",
            )  # fmt: skip
        s_us, i_us = epoch_us(start, name), interval_us(interval)
        p.tick_us = [s_us + i * i_us for i in range(p.tick + 1)]
    if not p.r_val:
        return Reading.empty(name)
    series, samples = _frames(p, hostname)
    return finish(series, samples, name)


def read_dmon(
    source: str | os.PathLike | bytes,
    *,
    hostname: str | None = None,
    fields: Sequence[int | str] | None = None,
    start: _dt.datetime | float | str | None = None,
    interval: float | str | _dt.timedelta | None = None,
    tz: str = "UTC",
) -> pl.DataFrame:
    """Read ``dcgmi dmon -e <ids>`` text output.

    ``dcgmi dmon`` prints no timestamps. Two capture forms are accepted:

    * **timestamped** (recommended): each line prefixed by an ISO-8601 time or epoch
      seconds, e.g.::

          dcgmi dmon -e 1001,1004,1005 -d 1000 | ts '%Y-%m-%dT%H:%M:%.SZ'   # TZ=UTC, moreutils
          dcgmi dmon -e 1001,1004 | gawk '{ print strftime("%Y-%m-%dT%H:%M:%SZ", systime(), 1), $0; fflush() }'
          dcgmi dmon -e 1001,1004 | ts '%.s'                                 # epoch seconds

      Timestamps without an offset are read in ``tz``.
    * **untimed**: pass ``start`` (time of the first tick) and ``interval`` (the ``-d``
      delay; seconds, timedelta or ``"1s"``/``"500ms"``); tick *i* is at
      ``start + i * interval``.

    Rows are grouped into ticks: a tick ends when an entity repeats. All rows of a tick
    get the tick's time (the first row's time in the timestamped form). A tick whose
    cells are all ``N/A`` yields no rows but still counts. Header lines (``#Entity``,
    ``# Entity``, ``ID``/``Id``) may recur anywhere (dmon repeats them every 14 ticks);
    the ``dmon was stopped ...`` trailer and blank lines are skipped. Columns are mapped
    to field ids by ``fields`` (the ``-e`` list, in order) or else by
    :data:`trainperf.dcgm.DMON_SHORT_NAMES`. Entities: ``GPU n`` -> (GPU, gpu=n), ``GPU-I n`` ->
    (GPU-I, entity_id=n, gpu null: DCGM instance ids are not GPU indices),
    ``GPU n LINK k`` -> (NVLink, gpu=n, entity_id=k); others keep their printed type.
    The value checks of :mod:`trainperf.dcgm.checks` apply (ranges, frozen profiling fields).

    Returns:
        a frame with :data:`trainperf.dcgm.SCHEMA`; ``uuid``, ``job_id`` null, ``labels`` ``"{}"``,
        ``hostname`` = ``hostname``.

    Raises:
        DcgmFormatError: data before any header, a row whose cell count differs from the
            header, an unknown column name without ``fields``, a non-numeric cell, mixed
            timed/untimed rows, or no timestamps and no ``start``/``interval``.
    """
    return read_dmon_reading(
        source, hostname=hostname, fields=fields, start=start, interval=interval, tz=tz
    ).frame()
