"""GPU error and throttle events from DCGM telemetry, and node down/drain events from Slurm.

Two event frames feed the failure taxonomy (:mod:`trainperf.reliability.taxonomy`) and the
telemetry join (:func:`trainperf.reliability.join.events_vs_jobs`):

:data:`GPU_EVENT_SCHEMA` (one row per event, from :func:`gpu_events`):

==========  ==================  ===========================================================
column      dtype               meaning
==========  ==================  ===========================================================
hostname    String              node
gpu         Int32               DCGM GPU index (null if the series has none)
timestamp   Datetime[us, UTC]   first sample that shows the event
kind        String              ``xid``, ``ecc_dbe``, ``row_remap_uncorrectable``,
                                ``row_remap_failure``, ``throttle``
code        Int64               XID code (``xid``), increase of the counter (ECC/row remap),
                                1 (``row_remap_failure``), clock-event bitmask (``throttle``)
detail      String              XID name from ``xid_catalogue.csv``, or the throttle reasons
infra       Boolean             counts as infrastructure evidence (XID catalogue column
                                ``counts_as_infra``; every uncorrectable ECC / row-remap event;
                                never a throttle)
job_id      String              Slurm job of the DCGM job label, null when absent
==========  ==================  ===========================================================

:data:`NODE_EVENT_SCHEMA` (one row per node event, :func:`node_events_frame`): ``hostname``
(String), ``start``/``end`` (Datetime[us, UTC]; ``end`` null while the event is open), ``state``
(String: ``DOWN``, ``DRAIN``, ``FAIL``, ...), ``reason`` (String), as ``sacctmgr show event``
prints them (https://slurm.schedmd.com/sacctmgr.html, entity ``event``).

Sources: DCGM field ids and kinds in ``trainperf/tables/dcgm_fields.csv`` (``dcgmlib/dcgm_fields.h``
of github.com/NVIDIA/DCGM): 230 ``DCGM_FI_DEV_XID_ERRORS`` (last XID seen, a gauge), 311
``DCGM_FI_DEV_ECC_DBE_VOL_TOTAL`` (volatile double-bit = uncorrectable ECC count, counter), 313
``..._AGG_TOTAL`` (its lifetime twin, used only where 311 is absent), 393
``DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS`` (counter), 395 ``DCGM_FI_DEV_ROW_REMAP_FAILURE`` (0/1),
112 ``DCGM_FI_DEV_CLOCKS_EVENT_REASONS`` (bitmask, ``clock_event_reasons.csv``). XID meanings:
NVIDIA's XID catalogue, https://docs.nvidia.com/deploy/xid-errors/index.html
(``xid_catalogue.csv``).
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from zoneinfo import ZoneInfo

import polars as pl

from trainperf.dcgm import counter_increase, xid_events
from trainperf.dcgm.derived import device_rows_per_gpu
from trainperf.errors import DataWarning, InputError
from trainperf.quality import QualityLog, empty_quality
from trainperf.tables import read_table

__all__ = [
    "GPU_EVENT_SCHEMA",
    "NODE_EVENT_SCHEMA",
    "ReliabilityWarning",
    "clock_event_reasons",
    "gpu_event_rows",
    "gpu_events",
    "node_events_frame",
    "read_node_events",
    "xid_catalogue",
]


class ReliabilityWarning(DataWarning):
    """A record the reliability analysis cannot use (no End, negative elapsed, event outside a job)."""


GPU_EVENT_SCHEMA: dict[str, pl.DataType] = {
    "hostname": pl.String(),
    "gpu": pl.Int32(),
    "timestamp": pl.Datetime("us", "UTC"),
    "kind": pl.String(),
    "code": pl.Int64(),
    "detail": pl.String(),
    "infra": pl.Boolean(),
    "job_id": pl.String(),
}
NODE_EVENT_SCHEMA: dict[str, pl.DataType] = {
    "hostname": pl.String(),
    "start": pl.Datetime("us", "UTC"),
    "end": pl.Datetime("us", "UTC"),
    "state": pl.String(),
    "reason": pl.String(),
}

_XID, _DBE_VOL, _DBE_AGG, _REMAP_UNC, _REMAP_FAIL, _CLOCK_EVENTS = 230, 311, 313, 393, 395, 112


#: How a table names each GPU event ``kind`` for a reader (the frames keep the ids).
GPU_EVENT_KIND_NAMES: dict[str, str] = {
    "xid": "XID",
    "ecc_dbe": "Uncorrectable ECC",
    "row_remap_uncorrectable": "Row remapped (uncorrectable)",
    "row_remap_failure": "Row remap failed",
    "throttle": "Clock throttle",
}


def xid_catalogue() -> pl.DataFrame:
    """The XID table (``trainperf/tables/xid_catalogue.csv``): ``xid`` (Int64), ``name``,
    ``category``, ``counts_as_infra`` (Boolean), ``source`` (NVIDIA's XID catalogue)."""
    return read_table("xid_catalogue").with_columns(pl.col("counts_as_infra").cast(pl.Boolean))


def clock_event_reasons() -> pl.DataFrame:
    """The clock-event (throttle) bits of field 112: ``bit``, ``mask`` (Int64), ``name``,
    ``counts_as_throttle`` (Boolean), ``source`` (``nvml.h``)."""
    return read_table("clock_event_reasons").with_columns(
        pl.col("counts_as_throttle").cast(pl.Boolean)
    )


def _empty_events() -> pl.DataFrame:
    return pl.DataFrame(schema=GPU_EVENT_SCHEMA)


def _counter_events(frame: pl.DataFrame, fid: int, kind: str, what: str) -> pl.DataFrame:
    inc = counter_increase(frame, fid)
    job = (
        frame.filter(pl.col("field_id") == fid)
        .select("hostname", "gpu", "timestamp", "job_id")
        .unique(["hostname", "gpu", "timestamp"], keep="first")
    )
    ev = inc.filter(pl.col("increase") > 0).join(
        job, on=["hostname", "gpu", "timestamp"], how="left"
    )
    return ev.select(
        "hostname",
        pl.col("gpu").cast(pl.Int32),
        "timestamp",
        kind=pl.lit(kind),
        code=pl.col("increase").round(0).cast(pl.Int64),
        detail=pl.lit(what),
        infra=pl.lit(True),
        job_id="job_id",
    )


def _rising(frame: pl.DataFrame, fid: int, value: pl.Expr) -> pl.DataFrame:
    """Samples where ``value`` becomes non-zero (first sample of each run), per host and GPU."""
    key = ["hostname", "gpu"]
    d = frame.filter(pl.col("field_id") == fid).sort([*key, "timestamp"], nulls_last=True)
    d = d.with_columns(_v=value)
    prev = pl.col("_v").shift(1).over(key).fill_null(0)
    return d.filter((pl.col("_v") != 0) & (prev == 0))


_XID_COUNT = "DCGM_EXP_XID_ERRORS_COUNT"


def gpu_event_rows() -> pl.Expr:
    """The rows of a DCGM frame :func:`gpu_events` reads (a filter for a large telemetry store):
    fields 230, 311, 313, 393, 395, 112 and dcgm-exporter's ``DCGM_EXP_XID_ERRORS_COUNT``, which
    has no DCGM field id."""
    return pl.col("field_id").is_in(
        [_XID, _DBE_VOL, _DBE_AGG, _REMAP_UNC, _REMAP_FAIL, _CLOCK_EVENTS]
    ) | (pl.col("field") == _XID_COUNT)


def _xid_count_events(dcgm: pl.DataFrame) -> pl.DataFrame | None:
    """XID events from dcgm-exporter's ``DCGM_EXP_XID_ERRORS_COUNT`` (its xid collector: per GPU and
    ``xid`` label, the number of XIDs of that code within a sliding window, ``window_size_in_ms``;
    github.com/NVIDIA/dcgm-exporter ``pkg/dcgmexporter/xid_collector.go``).

    Rule: per (host, GPU, xid), each sample whose count is above the previous sample's (the first
    sample: above 0) is one event at that time, ``code`` the ``xid`` label; a fall is the window
    forgetting old XIDs, not an event. GPUs that also export the 230 gauge keep the gauge's events
    alone (the same XIDs, not counted twice). A series without a readable ``xid`` label is left
    out. None when the frame has no such series.
    """
    if "field" not in dcgm.columns:
        return None
    d = dcgm.filter(pl.col("field") == _XID_COUNT)
    if d.height == 0:
        return None
    gauge = dcgm.filter(pl.col("field_id") == _XID).select("hostname", "gpu").unique()
    d = d.join(gauge, on=["hostname", "gpu"], how="anti", nulls_equal=True)
    d = d.with_columns(
        xid=pl.col("labels")
        .str.json_path_match("$.xid")
        .str.strip_chars()
        .cast(pl.Int64, strict=False)
    ).filter(pl.col("xid").is_not_null() & (pl.col("xid") >= 0))
    if d.height == 0:
        return None
    key = ["hostname", "gpu", "uuid", "xid"]
    d = d.sort([*key, "timestamp"], nulls_last=True)
    prev = pl.col("value").shift(1).over(key).fill_null(0.0)
    d = d.filter(pl.col("value") > prev)
    cat = xid_catalogue().select("xid", detail="name", infra="counts_as_infra")
    return d.join(cat, on="xid", how="left").select(
        "hostname",
        pl.col("gpu").cast(pl.Int32),
        "timestamp",
        kind=pl.lit("xid"),
        code=pl.col("xid"),
        detail=pl.col("detail").fill_null("unknown XID"),
        infra=pl.col("infra").fill_null(True),
        job_id="job_id",
    )


def gpu_events(dcgm: pl.DataFrame) -> pl.DataFrame:
    """XID, uncorrectable-ECC, row-remap and clock-throttle events of a DCGM long frame.

    Args:
        dcgm: a frame with :data:`trainperf.dcgm.SCHEMA` (any reader's output); fields other than
            230, 311/313, 393, 395 and 112 are ignored.

    Returns:
        :data:`GPU_EVENT_SCHEMA`, sorted by hostname, timestamp. Rules: an XID event is each change
        of the 230 gauge to a non-zero code (:func:`trainperf.dcgm.xid_events`); ``ecc_dbe`` and
        ``row_remap_uncorrectable`` are positive reset-aware increases of counters 311 (else 313)
        and 393 (:func:`trainperf.dcgm.counter_increase`); ``row_remap_failure`` is 395 becoming
        1; ``throttle`` is field 112 gaining a bit whose ``counts_as_throttle`` is true (software or
        hardware power cap, thermal or hardware slowdown), with the reasons named in ``detail``.
        An XID code missing from the catalogue is kept with ``detail`` ``"unknown XID"`` and
        ``infra`` true (an unknown driver error is treated as the hardware's until shown otherwise).
        Where the export has no 230 gauge for a GPU but dcgm-exporter's
        ``DCGM_EXP_XID_ERRORS_COUNT{xid="79"}`` counter, its rises are the XID events
        (:func:`_xid_count_events`). MIG instance rows of a GPU count once
        (:func:`trainperf.dcgm.derived.device_rows_per_gpu`).
    """
    if dcgm.height == 0 or "field_id" not in dcgm.columns:
        return _empty_events()
    dcgm = device_rows_per_gpu(dcgm)
    parts: list[pl.DataFrame] = []
    xid_count = _xid_count_events(dcgm)
    if xid_count is not None:
        parts.append(xid_count)
    if dcgm.filter(pl.col("field_id") == _XID).height:
        cat = xid_catalogue().select(
            pl.col("xid").cast(pl.Int32), detail="name", infra="counts_as_infra"
        )
        x = xid_events(dcgm).join(cat, on="xid", how="left")
        parts.append(
            x.select(
                "hostname",
                pl.col("gpu").cast(pl.Int32),
                timestamp="first_seen",
                kind=pl.lit("xid"),
                code=pl.col("xid").cast(pl.Int64),
                detail=pl.col("detail").fill_null("unknown XID"),
                infra=pl.col("infra").fill_null(True),
                job_id="job_id",
            )
        )
    ids = set(dcgm.get_column("field_id").drop_nulls().unique().to_list())
    dbe = _DBE_VOL if _DBE_VOL in ids else (_DBE_AGG if _DBE_AGG in ids else None)
    if dbe is not None:
        parts.append(_counter_events(dcgm, dbe, "ecc_dbe", "uncorrectable (double-bit) ECC errors"))
    if _REMAP_UNC in ids:
        parts.append(
            _counter_events(
                dcgm,
                _REMAP_UNC,
                "row_remap_uncorrectable",
                "rows remapped for uncorrectable errors",
            )
        )
    if _REMAP_FAIL in ids:
        r = _rising(dcgm, _REMAP_FAIL, (pl.col("value") >= 0.5).cast(pl.Int64))
        parts.append(
            r.select(
                "hostname",
                pl.col("gpu").cast(pl.Int32),
                "timestamp",
                kind=pl.lit("row_remap_failure"),
                code=pl.lit(1, pl.Int64),
                detail=pl.lit("row remapping failed"),
                infra=pl.lit(True),
                job_id="job_id",
            )
        )
    if _CLOCK_EVENTS in ids:
        bits = clock_event_reasons().filter("counts_as_throttle")
        mask = int(bits.get_column("mask").sum())
        r = _rising(
            dcgm, _CLOCK_EVENTS, pl.col("value").round(0).cast(pl.Int64).fill_null(0) & mask
        )
        names = pl.concat_str(
            [
                pl.when((pl.col("_v") & m) != 0).then(pl.lit(n)).otherwise(None)
                for m, n in zip(bits["mask"], bits["name"], strict=True)
            ],
            separator=", ",
            ignore_nulls=True,
        )
        parts.append(
            r.select(
                "hostname",
                pl.col("gpu").cast(pl.Int32),
                "timestamp",
                kind=pl.lit("throttle"),
                code=pl.col("_v"),
                detail=names,
                infra=pl.lit(False),
                job_id="job_id",
            )
        )
    if not parts:
        return _empty_events()
    out = pl.concat([p.cast(GPU_EVENT_SCHEMA) for p in parts], how="vertical")  # type: ignore[arg-type]
    return out.sort(["hostname", "timestamp", "gpu"], nulls_last=True)


def node_events_frame(rows: list[dict] | pl.DataFrame) -> pl.DataFrame:
    """Node events as :data:`NODE_EVENT_SCHEMA` (from dicts or a frame with those columns)."""
    if isinstance(rows, pl.DataFrame):
        return rows.select(list(NODE_EVENT_SCHEMA)).cast(NODE_EVENT_SCHEMA)  # type: ignore[arg-type]
    return pl.DataFrame(rows, schema=NODE_EVENT_SCHEMA)


_EVENT_COLUMNS = {
    "nodename": "hostname",
    "node": "hostname",
    "timestart": "start",
    "start": "start",
    "timeend": "end",
    "end": "end",
    "state": "state",
    "reason": "reason",
}


def _parse_time(text: str, tz: str) -> _dt.datetime | None:
    t = text.strip()
    if t == "" or t.lower() in {"unknown", "none", "n/a"}:
        return None
    if t.isdigit():
        return _dt.datetime.fromtimestamp(int(t), _dt.UTC)
    d = _dt.datetime.fromisoformat(t)
    if d.tzinfo is None:
        d = d.replace(tzinfo=ZoneInfo(tz))
    return d.astimezone(_dt.UTC)


def read_node_events(
    path: str | Path, *, tz: str = "UTC", delimiter: str = "|"
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Read node events exported with ``sacctmgr show event``.

    Recommended export (https://slurm.schedmd.com/sacctmgr.html, entity ``event``; epoch times)::

        SLURM_TIME_FORMAT=%s sacctmgr --parsable2 show event Start=2024-06-01 End=2025-04-01 \\
          format=NodeName,TimeStart,TimeEnd,State,Reason > node_events.txt

    The header names the columns (``NodeName``/``Node``, ``TimeStart``, ``TimeEnd``, ``State``,
    ``Reason``; case and spaces ignored). Times are epoch seconds or ISO local times of ``tz``;
    ``Unknown`` ends are open events (null ``end``). Cluster-wide rows (empty node name) are left
    out: they do not name a node.

    Returns:
        (events with :data:`NODE_EVENT_SCHEMA`, quality rows with
        :data:`trainperf.quality.QUALITY_SCHEMA`): a line that cannot be read (wrong field count,
        bad time) is left out with a ``bad_line`` row and a :class:`ReliabilityWarning` naming
        the file and the line.

    Raises:
        trainperf.errors.InputError: no header with NodeName and TimeStart.
    """

    p = Path(path)
    log = QualityLog(ReliabilityWarning)
    lines = p.read_text(encoding="utf-8", errors="replace").splitlines()
    if not lines:
        return node_events_frame([]), empty_quality()
    header = [h.strip().replace(" ", "").lower() for h in lines[0].split(delimiter)]
    cols = [_EVENT_COLUMNS.get(h) for h in header]
    if "hostname" not in cols or "start" not in cols:
        raise InputError(
            f"{p}, line 1: expected a header with NodeName and TimeStart; found {lines[0][:200]!r}"
        )
    rows, bad = [], []
    for i, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        vals = line.split(delimiter)
        if len(vals) != len(header):
            bad.append(i)
            continue
        rec = {c: v for c, v in zip(cols, vals, strict=True) if c is not None}
        if not rec.get("hostname", "").strip():
            continue
        try:
            start = _parse_time(rec["start"], tz)
            end = _parse_time(rec.get("end", ""), tz)
        except ValueError:
            bad.append(i)
            continue
        if start is None:
            bad.append(i)
            continue
        rows.append(
            {
                "hostname": rec["hostname"].strip(),
                "start": start,
                "end": end,
                "state": rec.get("state", "").strip().upper() or None,
                "reason": rec.get("reason", "").strip() or None,
            }
        )
    if bad:
        log.add(
            str(p),
            "bad_line",
            "excluded",
            f"{len(bad)} node-event line(s) with a wrong field count or an unreadable TimeStart/TimeEnd",
            n_lines=len(bad),
            first_line=bad[0],
        )
    return node_events_frame(rows), log.frame()
