"""Prometheus HTTP API results (``/api/v1/query`` vector, ``/api/v1/query_range`` matrix) as DCGM telemetry.

See https://prometheus.io/docs/prometheus/latest/querying/api/ for the envelope.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from trainperf.dcgm.checks import finish
from trainperf.dcgm.fields import DcgmFormatError, DcgmWarning
from trainperf.dcgm.series import Reading, normalise_series, read_bytes, series_frame, src_name
from trainperf.quality import QualityLog

__all__ = ["read_prometheus_api", "read_prometheus_api_reading"]


def _decode(source: Any, name: str) -> list:
    if isinstance(source, (Mapping, list, tuple)):
        return [source] if isinstance(source, Mapping) else list(source)
    try:
        text = read_bytes(source).decode("utf-8")
    except UnicodeDecodeError as e:
        raise DcgmFormatError(
            name, None, "UTF-8 JSON", f"invalid byte at offset {e.start}"
        ) from None
    try:
        obj = json.loads(text)
        return obj if isinstance(obj, list) else [obj]
    except json.JSONDecodeError as e:
        if e.msg != "Extra data":  # not JSON Lines either: report the first error
            raise DcgmFormatError(name, e.lineno, f"JSON ({e.msg}, column {e.colno})") from e
    except RecursionError:
        raise DcgmFormatError(name, None, "JSON nested less deeply") from None
    docs = []
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            docs.append(json.loads(line))
        except json.JSONDecodeError as e2:
            raise DcgmFormatError(
                name, i, f"one JSON document per line ({e2.msg}, column {e2.colno})"
            ) from e2
        except RecursionError:
            raise DcgmFormatError(name, i, "JSON nested less deeply") from None
    return docs


def _labels(res: Any, name: str, path: str) -> dict[str, str]:
    m = res.get("metric") if isinstance(res, Mapping) else None
    if m is None:
        m = {}
    if not isinstance(m, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in m.items()
    ):
        raise DcgmFormatError(name, None, "'metric' as an object of string labels",
                              json.dumps(m, default=str)[:100], path)  # fmt: skip
    return dict(m)


def _envelope_error(doc: Any, name: str, where: str) -> DcgmFormatError | None:
    if not isinstance(doc, Mapping) or "status" not in doc:
        return DcgmFormatError(
            name, None, 'an API envelope {"status":..., "data":...}', str(doc)[:100], where
        )
    if doc["status"] != "success":
        return DcgmFormatError(
            name, None, 'status "success"',
            f"{doc.get('status')}: {doc.get('errorType')}: {doc.get('error')}", where,
        )  # fmt: skip
    data = doc.get("data") or {}
    if not isinstance(data, Mapping) or data.get("resultType") not in ("vector", "matrix"):
        rtype = data.get("resultType") if isinstance(data, Mapping) else type(data).__name__
        return DcgmFormatError(name, None, "resultType 'vector' or 'matrix'", str(rtype), where)
    if not isinstance(data.get("result") or [], list):
        return DcgmFormatError(
            name, None, "'result' as a list", str(data.get("result"))[:100], where
        )
    return None


def _note_partial(docs: list, name: str, log: QualityLog) -> None:
    """Envelopes with a ``warnings`` list (check ``partial_response``, flagged): Thanos, Cortex and
    Mimir answer ``"status": "success"`` with ``"warnings": ["partial response ..."]`` when a store
    or querier did not answer, so the result may lack series or samples; Prometheus itself puts
    query warnings there too (https://prometheus.io/docs/prometheus/latest/querying/api/, "Format
    overview": ``warnings`` "only set if there were warnings while executing the request")."""
    found = [
        (i, w)
        for i, doc in enumerate(docs)
        if isinstance(doc, Mapping) and isinstance(doc.get("warnings"), list) and doc["warnings"]
        for w in doc["warnings"][:1]
    ]
    if not found:
        return
    i, first = found[0]
    log.add(name, "partial_response", "flagged",
            f"{len(found)} of {len(docs)} API responses carry warnings (a partial response: series "
            f"or samples may be missing); first, document {i}: {str(first)[:300]}")  # fmt: skip


def read_prometheus_api_reading(
    source: str | os.PathLike | bytes | Mapping | Sequence,
    *,
    metric: str | None = None,
    checks: bool = True,
    name: str | None = None,
) -> Reading:
    """:func:`read_prometheus_api`, returning the normalised :class:`~trainperf.dcgm.Reading`.

    A list of several envelopes in which some failed (``status`` ``error``, a chunk of a range query
    that timed out) keeps the others: the failed ones are excluded with a ``failed_query``
    data-quality row. When every envelope failed, the first failure is raised. An envelope with
    ``warnings`` (a Thanos/Cortex partial response) is read and flagged (``partial_response``).
    ``name`` names a decoded object in messages (the server and query it came from; default
    ``<json>``).
    """
    if isinstance(source, (Mapping, list, tuple)):
        name = name or "<json>"
    else:
        name = name or src_name(source)
    docs = _decode(source, name)
    log = QualityLog(category=DcgmWarning)
    _note_partial(docs, name, log)
    rows: list[dict[str, Any]] = []
    sid_of: dict[tuple, int] = {}
    o_sid: list[int] = []
    o_ts: list[int] = []
    o_val: list[float] = []
    errors = []
    for di, doc in enumerate(docs):
        where = f"document {di}"
        err = _envelope_error(doc, name, where)
        if err is not None:
            errors.append(err)
            continue
        data = doc["data"]
        rtype = data["resultType"]
        for ri, res in enumerate(data.get("result") or []):
            path = f"{where}: data.result[{ri}]"
            labels = _labels(res, name, path)
            mname = labels.pop("__name__", None) or metric
            if not mname:
                raise DcgmFormatError(name, None, "a __name__ label or the metric= argument",
                                      json.dumps(labels)[:100], path)  # fmt: skip
            k = (mname, tuple(sorted(labels.items())))
            sid = sid_of.get(k)
            if sid is None:
                sid = sid_of[k] = len(rows)
                rows.append(normalise_series(mname, labels))
            pts = [res.get("value")] if rtype == "vector" else res.get("values")
            if not isinstance(pts, list):
                raise DcgmFormatError(name, None, "'value'" if rtype == "vector" else "'values'",
                                      json.dumps(res, default=str)[:100], path)  # fmt: skip
            for pi, pt in enumerate(pts):
                try:
                    ts, v = pt
                    if not isinstance(v, (str, int, float)) or isinstance(v, bool):
                        raise TypeError(v)
                    t_us = int(round(float(ts) * 1_000_000))
                    if not -9e18 < t_us < 9e18:  # beyond Datetime[us]: not a time
                        raise ValueError(ts)
                    o_val.append(float(v))
                    o_ts.append(t_us)
                except (TypeError, ValueError, OverflowError):
                    raise DcgmFormatError(name, None, '[<epoch seconds>, "<value>"]',
                                          json.dumps(pt, default=str)[:100],
                                          f"{path}.values[{pi}]") from None  # fmt: skip
                o_sid.append(sid)
    if errors:
        if len(errors) == len(docs):
            raise errors[0]
        log.add(name, "failed_query", "excluded",
                f"{len(errors)} of {len(docs)} API responses failed and were left out; "
                f"first: {errors[0]}")  # fmt: skip
    if not o_sid:
        return Reading.empty(name, log.frame())
    series = series_frame(rows).with_row_index("sid")
    obs = pl.DataFrame(
        {"sid": o_sid, "timestamp": o_ts, "value": o_val, "line": [None] * len(o_sid)},
        schema={"sid": pl.UInt32, "timestamp": pl.Int64, "value": pl.Float64, "line": pl.Int64},
    )
    return finish(series, obs, name, log, checks=checks)


def read_prometheus_api(
    source: str | os.PathLike | bytes | Mapping | Sequence,
    *,
    metric: str | None = None,
    checks: bool = True,
    name: str | None = None,
) -> pl.DataFrame:
    """Read Prometheus HTTP API results: ``/api/v1/query`` (vector) or ``/api/v1/query_range`` (matrix).

    Accepts one response envelope ``{"status":"success","data":{"resultType":...}}``, a
    JSON list of envelopes (chunked range queries), or JSON Lines with one envelope per
    line; as a path, bytes, or already-decoded object. Values are strings in the API
    (``"NaN"``, ``"+Inf"`` are dropped); timestamps are float epoch seconds.
    See https://prometheus.io/docs/prometheus/latest/querying/api/. The value checks of
    :mod:`trainperf.dcgm.checks` apply (duplicates of one GPU from two exporters coincide on the
    step times of a range query and are merged).

    Args:
        source: path / bytes / decoded JSON.
        metric: metric name for results whose ``metric`` has no ``__name__`` (e.g.
            after ``avg by (...)``).
        checks: False for results that are not samples (PromQL aggregates such as
            ``count_over_time``): only blank/NaN/Inf values are dropped.
        name: how messages name a decoded object (default ``<json>``; a path names itself).

    Returns:
        a frame with :data:`trainperf.dcgm.SCHEMA`.

    Raises:
        DcgmFormatError: invalid JSON (with its line), ``status`` not ``success`` (in every
            envelope), a ``resultType`` other than vector/matrix, or a malformed sample (JSON
            path given).
    """
    return read_prometheus_api_reading(source, metric=metric, checks=checks, name=name).frame()
