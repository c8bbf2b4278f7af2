"""``sacct --json`` output of Slurm 21.08 to 25.05 → :class:`~trainperf.slurm.fields.SacctData`.

One record at a time (the JSON is a tree, not a table), every value checked for its type and range
before it reaches a frame, so a damaged record is named by its JSON path (``jobs[12].time.start``)
instead of surfacing as a polars or Python error.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
import warnings
from pathlib import Path
from typing import Any, NamedTuple

import hostlist
import polars as pl

from trainperf.quality import QualityLog
from trainperf.slurm.fields import (
    INFINITE,
    JOB_COLUMNS,
    JOB_STATES,
    NO_VAL,
    SPECIAL_STEPS,
    STEP_COLUMNS,
    ZERO_EXIT_UNKNOWN,
    SacctData,
    SacctParseError,
    SacctWarning,
    assemble,
    decode_utf8,
    escape_surrogates,
    expand_nodelist,
    gpus_from_tres,
    parse_epoch,
    parse_tres,
)

__all__ = ["parse_sacct_json", "read_sacct_json"]


_RAW_NAMES = (
    "JobID",
    "JobIDRaw",
    "JobName",
    "User",
    "Account",
    "Partition",
    "QOS",
    "Cluster",
    "State",
    "ExitCode",
    "NodeList",
    "AllocTRES",
    "ReqTRES",
)
_EXTRA = {"user_cpu_s": pl.Float64(), "system_cpu_s": pl.Float64()}
_I64 = 2**63


def read_sacct_json(path: str | Path, *, bad_lines: str = "raise") -> SacctData:
    """Read ``sacct --json`` output from a file. See :func:`parse_sacct_json`.

    Bytes that are not UTF-8 are kept as ``\\xNN`` text in the string they belong to, and that
    record is flagged (``invalid_utf8``, with its JSON path and line).
    """
    p = Path(path)
    text, bad = decode_utf8(p.read_bytes())
    return _parse(text, source=str(p), bad_lines=bad_lines, bad_utf8=bad)


def parse_sacct_json(
    text: str | dict, *, source: str = "<text>", bad_lines: str = "raise"
) -> SacctData:
    """Parse ``sacct --json`` output (Slurm 21.08 … 25.05) into :class:`SacctData`.

    Handles the schema drift between versions: ``meta.Slurm`` / ``meta.slurm`` with int or string
    version numbers; ``state.current`` as ``"COMPLETED"`` (≤ 23.02) or ``["COMPLETED"]`` (23.11+,
    further list items become ``state_flags``); numbers as plain values or ``{set, infinite,
    number}`` objects (23.02+, also step times in 24.x/25.x); ``step.id`` as ``"4.batch"`` (23.11+),
    a bare ``"batch"``/``0`` with ``step.job_id`` (21.08/22.05), or ``{job_id, step_id}``; epochs 0,
    4294967294 (NO_VAL) and 4294967295 (INFINITE) meaning unset; ``nodes == "None assigned"``; text
    (e.g. a login banner) before the first ``{``.

    The frames have the same derived columns as :func:`parse_sacct_parsable` (see its table; all
    times are UTC because JSON carries epoch seconds) and these sacct-named Utf8 columns built from
    the JSON: ``JobID`` (``123``, ``123_4``, ``1853+1``, ``123.batch``), ``JobIDRaw``, ``JobName``,
    ``User``, ``Account``, ``Partition``, ``QOS``, ``Cluster``, ``State`` (first state word),
    ``ExitCode`` (``code:signal``), ``NodeList``, ``AllocTRES`` (sacct-like string, memory in M),
    ``ReqTRES``. ``cancelled_by`` (uid) is null; the name is in ``cancelled_by_user``.
    ``n_nodes`` is ``allocation_nodes`` (0 for a job that never started, where ``sacct -P`` shows
    the requested count). ``meta`` gets ``slurm_version`` and ``data_parser``.

    Damage handled, each with a :class:`SacctWarning`, a ``quality`` row and the check's name in
    the record's ``data_flags``:

    * ``exit_code_unknown``: exit code 0 with state FAILED, OUT_OF_MEMORY or NODE_FAIL
      (:data:`ZERO_EXIT_UNKNOWN`) is set to null, never reported as 0.
    * ``nodes_from_job_resources``: a record without top-level ``nodes`` (or with ``"None
      assigned"``) whose nodes are under ``job_resources`` (``nodes`` as a host list, ``nodes.list``
      or ``nodes.allocation[].name`` in data_parser v0.0.41+, ``allocated_nodes[].nodename`` in
      v0.0.39/40) takes them from there. ``nodes_missing``: a started record with
      ``allocation_nodes`` > 0 and no node names anywhere gets ``nodes`` null (unknown), not ``[]``.
    * ``invalid_utf8``: strings with bytes that are not UTF-8, kept as ``\\xNN`` text.
    * ``bad_record`` (with ``bad_lines="skip"``): a record whose values are not of the expected
      type or range is left out, named by its JSON path.

    Raises:
        SacctParseError: invalid JSON (with its line), no ``jobs`` list, or (with
            ``bad_lines="raise"``) a record whose id, state, times, TRES or host list is not of an
            expected shape (naming the JSON path, e.g. ``jobs[3].steps[1]``).
        ValueError: an unknown ``bad_lines``.

    Sources: https://slurm.schedmd.com/rest_api.html (data_parser v0.0.39–v0.0.43 schemas),
    https://slurm.schedmd.com/sacct.html (``--json``), SchedMD/slurm CHANGELOG 23.11 (step id as
    string), 24.11 (empty objects as null).
    """
    if isinstance(text, dict):
        return _parse(text, source=source, bad_lines=bad_lines, bad_utf8=[])
    text, bad = decode_utf8(text)
    return _parse(text, source=source, bad_lines=bad_lines, bad_utf8=bad)


# ------------------------------------------------------------------------------------------------
# value helpers: each returns a checked Python value or raises ValueError naming what it found
# ------------------------------------------------------------------------------------------------


def _unwrap(v: Any) -> tuple[Any, bool]:
    """``(value, infinite)`` of a plain value or a ``{set, infinite, number}`` object (v0.0.39+)."""
    if isinstance(v, dict) and "number" in v and ("set" in v or "infinite" in v):
        if v.get("infinite"):
            return None, True
        if not v.get("set", True):
            return None, False
        return v.get("number"), False
    return v, False


def _num(v: Any) -> Any:
    return _unwrap(v)[0]


def _int(v: Any) -> int | None:
    """A whole number that fits in 64 bits (plain or wrapped), or None."""
    v = _num(v)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"not a number: {v!r}")
    if isinstance(v, float) and (not math.isfinite(v) or v != int(v)):
        raise ValueError(f"not a whole number: {v!r}")
    if not -_I64 <= v < _I64:
        raise ValueError(f"number out of the 64-bit range: {v!r}")
    return int(v)


def _int_text(v: str | None) -> int | None:
    """An integer from TRES text (``cpu=8``); None for no value. Raises ValueError for garbage."""
    if v is None or v.strip() == "":
        return None
    return int(v)


def _str(v: Any) -> str | None:
    if v is None or isinstance(v, str):
        return v
    raise ValueError(f"not a string: {v!r}")


def _dict(v: Any) -> dict:
    if v is None:
        return {}
    if isinstance(v, dict):
        return v
    raise ValueError(f"not an object: {v!r}")


def _epoch(v: Any) -> _dt.datetime | None:
    val = _num(v)
    return parse_epoch(val) if isinstance(val, (int, float)) else None


def _states(v: Any) -> list[str]:
    if v is None:
        return []
    if isinstance(v, str):
        return [v] if v else []
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return list(v)
    raise ValueError(f"state is neither a string nor a list of strings: {v!r}")


def _tres_string(items: Any) -> str | None:
    """A JSON ``tres.allocated`` list → a sacct-like TRES string (mem in M)."""
    if items is None:
        return None
    if not isinstance(items, list):
        raise ValueError(f"TRES is not a list: {items!r}")
    parts = []
    for t in items:
        t = _dict(t)
        typ, name = _str(t.get("type")), _str(t.get("name"))
        count = _int(t.get("count"))
        if count is None or count < 0:
            continue  # energy -2 etc.: not recorded
        key = f"{typ}/{name}" if name else str(typ)
        value = f"{count}M" if typ == "mem" else str(count)
        parts.append(f"{key}={value}")
    return ",".join(parts)


def _exit(v: Any) -> tuple[int | None, int | None]:
    if v is None:
        return None, None
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return _int(v), None
    v = _dict(v)
    rc = _int(v.get("return_code"))
    sig = v.get("signal") or {}
    s = _int(sig.get("id", sig.get("signal_id"))) if isinstance(sig, dict) else None
    status = _states(v.get("status"))
    if "SIGNALED" in status and rc is None:
        rc = 0
    if s is None and rc is not None:
        s = 0
    return rc, s


def _limit(v: Any) -> tuple[int | None, str | None]:
    """time.limit (minutes) → (seconds, flag)."""
    if isinstance(v, dict):
        val, inf = _unwrap(v)
        if inf:
            return None, "UNLIMITED"
        if val is None:
            return None, "Partition_Limit"
    else:
        val = v
    if val is None:
        # dbv0.0.37/38 (21.08, 22.05) print INFINITE and NO_VAL limits as null; the real 22.05
        # fixture shows null for a job that sacct -P reports as UNLIMITED
        return None, "UNLIMITED"
    val = _int(val)
    if val == INFINITE:
        return None, "UNLIMITED"
    if val == NO_VAL:
        return None, "Partition_Limit"
    if not 0 <= val < 2**32:
        raise ValueError(f"time limit out of range: {val!r} minutes")
    return val * 60, None


def _cpu_seconds(v: Any) -> float | None:
    if not isinstance(v, dict):
        return None
    s, us = _int(v.get("seconds")), _int(v.get("microseconds"))
    if s is None and us is None:
        return None
    return float(s or 0) + float(us or 0) / 1e6


def _slurm_version(meta: Any) -> str | None:
    if not isinstance(meta, dict):
        return None
    sl = meta.get("Slurm") or meta.get("slurm") or {}
    ver = sl.get("version") if isinstance(sl, dict) else None
    if isinstance(ver, dict) and ver.get("major") is not None:
        try:
            major, minor, micro = (int(ver.get(k) or 0) for k in ("major", "minor", "micro"))
        except (TypeError, ValueError, OverflowError):
            return None
        return f"{major}.{minor:02d}.{micro}"
    if isinstance(sl, dict) and sl.get("release"):
        return str(sl["release"])
    return None


def _resource_nodes(res: Any) -> tuple[str | None, list[str]]:
    """``(host list, names)`` under ``job_resources`` (shapes of data_parser v0.0.39 to v0.0.43)."""
    if not isinstance(res, dict):
        return None, []
    nodes = res.get("nodes")
    if isinstance(nodes, str):  # v0.0.39/40: "nodes": "gpu[001-004]"
        return nodes, expand_nodelist(nodes)
    if isinstance(nodes, dict):  # v0.0.41+: {"count", "list": "gpu[001-004]", "allocation": [...]}
        if isinstance(nodes.get("list"), str):
            return nodes["list"], expand_nodelist(nodes["list"])
        alloc = nodes.get("allocation")
        names = [_str(_dict(a).get("name")) for a in alloc] if isinstance(alloc, list) else []
    else:  # v0.0.39/40 also list "allocated_nodes": [{"nodename": ...}] (or an index-keyed object)
        alloc = res.get("allocated_nodes")
        if isinstance(alloc, dict):
            alloc = list(alloc.values())
        names = [_str(_dict(a).get("nodename")) for a in alloc] if isinstance(alloc, list) else []
    names = [n for n in names if n]
    if not names:
        return None, []
    return hostlist.collect_hostlist(names), names


# ------------------------------------------------------------------------------------------------
# document → rows → frames
# ------------------------------------------------------------------------------------------------


def _load(text: str | dict, source: str, bad_utf8: list[int], quality: QualityLog) -> dict:
    if isinstance(text, dict):
        doc = text
    else:
        brace = text.find("{")
        if brace < 0:
            raise SacctParseError(source, None, "a JSON object from sacct --json", text[:80])
        skipped_lines = text.count("\n", 0, brace)
        try:
            doc = json.loads(text[brace:])
        except json.JSONDecodeError as exc:
            raise SacctParseError(
                source, exc.lineno + skipped_lines, f"valid JSON ({exc.msg}, column {exc.colno})"
            ) from exc
        except RecursionError as exc:
            raise SacctParseError(
                source, None, "JSON nested less deeply than Python's limit"
            ) from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        raise SacctParseError(
            source, None, 'a JSON object with a "jobs" list (sacct --json output)'
        )
    if not isinstance(text, dict) and _SURROGATE_ESCAPE.search(text):
        _lone_surrogates(doc, text, source, quality)
    if bad_utf8:
        paths = _escape_strings(doc)
        shown = ", ".join(paths[:3]) + (" ..." if len(paths) > 3 else "")
        quality.add(
            source,
            "invalid_utf8",
            "flagged",
            f"bytes that are not UTF-8 in {len(paths)} string(s) ({shown}), kept as \\xNN text; the "
            "original encoding is unknown",
            n_samples=len(paths),
            n_lines=len(bad_utf8),
            first_line=bad_utf8[0],
        )
    return doc


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONE = re.compile("[\ud800-\udfff]")


def _lone_surrogates(doc: Any, text: str, source: str, quality: QualityLog) -> None:
    """JSON ``\\ud800`` escapes that are not half of a pair: ``json.loads`` gives a string no UTF-8
    column can hold. Each is written as the text ``\\ud800`` in place (check ``lone_surrogate``,
    flagged, with the JSON paths and the first line), so one such record costs nothing else."""
    paths = _rewrite_strings(
        doc,
        lambda v: v.encode("utf-8", "backslashreplace").decode("utf-8") if _LONE.search(v) else v,
    )
    if not paths:
        return  # only valid pairs
    m = _SURROGATE_ESCAPE.search(text)
    line = text.count("\n", 0, m.start()) + 1 if m else None
    shown = ", ".join(paths[:3]) + (" ..." if len(paths) > 3 else "")
    quality.add(source, "lone_surrogate", "flagged",
                f"{len(paths)} string(s) with a lone surrogate escape such as \\ud800 ({shown}), "
                "which no UTF-8 text can hold; kept as the escape text", n_samples=len(paths),
                first_line=line)  # fmt: skip


def _rewrite_strings(doc: Any, rewrite) -> list[str]:
    """Replace every string value ``v`` of ``doc`` by ``rewrite(v)`` in place; return the sorted
    JSON paths of those it changed."""
    paths: list[str] = []
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:
        node, path = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for k, v in items:
            p = f"{path}.{k}" if isinstance(node, dict) else f"{path}[{k}]"
            if isinstance(v, str):
                e = rewrite(v)
                if e != v:
                    node[k] = e
                    paths.append(p.lstrip("."))
            elif isinstance(v, (dict, list)):
                stack.append((v, p))
    return sorted(paths)


def _escape_strings(doc: Any) -> list[str]:
    """Write lone surrogates of every string value as ``\\xNN`` in place; return their paths."""
    return _rewrite_strings(doc, escape_surrogates)


def _meta(doc: dict, source: str) -> tuple[str | None, Any]:
    meta_in = doc.get("meta") if isinstance(doc.get("meta"), dict) else {}
    version = _slurm_version(meta_in)
    plugins = meta_in.get("plugin") or meta_in.get("plugins") or {}
    data_parser = (
        plugins.get("data_parser") or plugins.get("type") if isinstance(plugins, dict) else None
    )
    if version is None:
        warnings.warn(f"{source}: no Slurm version in meta", SacctWarning, stacklevel=4)
    else:
        try:
            major = int(version.split(".")[0])
        except ValueError:
            major = 0
        if major > 25 or major < 21:
            warnings.warn(
                f"{source}: Slurm {version} is outside the tested range 21.08-25.05",
                SacctWarning,
                stacklevel=4,
            )
    return version, data_parser if isinstance(data_parser, str) else None


def _parse(text: str | dict, *, source: str, bad_lines: str, bad_utf8: list[int]) -> SacctData:
    if bad_lines not in ("raise", "skip"):
        raise ValueError(f"bad_lines must be 'raise' or 'skip', not {bad_lines!r}")
    quality = QualityLog(SacctWarning)
    doc = _load(text, source, bad_utf8, quality)
    version, data_parser = _meta(doc, source)
    rows: list[dict[str, Any]] = []
    fired: dict[str, list[str]] = {}  # check -> JobIDs (or paths)
    for i, job in enumerate(doc["jobs"]):
        where = f"jobs[{i}]"
        try:
            recs = [(where, _json_job_row(job))]
            for k, step in enumerate(_dict(job).get("steps") or []):
                where = f"jobs[{i}].steps[{k}]"
                recs.append((where, _json_step_row(step, recs[0][1])))
            for _, r in recs:
                _check_row(r)
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as exc:
            if bad_lines == "raise":
                raise SacctParseError(
                    source,
                    None,
                    f"a sacct --json job record at {where} ({type(exc).__name__}: {exc})",
                ) from exc
            fired.setdefault("bad_record", []).append(f"{where}: {type(exc).__name__}: {exc}")
            continue
        for path, r in recs:
            for flag in r["data_flags"]:
                fired.setdefault(flag, []).append(f"{path} ({r['JobID']})")
        rows.extend(r for _, r in recs)
    _report(fired, source, version, quality)
    if bad_utf8:
        for r in rows:
            if any("\\x" in (r.get(c) or "") for c in _RAW_NAMES):
                r["data_flags"].append("invalid_utf8")
    return _frames(rows, source, version, data_parser, quality)


_MESSAGES = {
    "exit_code_unknown": (  # the record is kept, its exit code flagged unknown (issue 39)
        "flagged",
        "exit code 0 with state FAILED, OUT_OF_MEMORY or NODE_FAIL{v}: not a clean exit "
        "(Slurm 22.05 JSON loses the code, a failed node leaves none); exit_code left empty (unknown)",
    ),
    "nodes_from_job_resources": (
        "corrected",
        "no top-level node list; the nodes were taken from job_resources",
    ),
    "nodes_missing": (
        "flagged",
        "allocation_nodes > 0 but no node names anywhere; nodes left empty (unknown), not an empty list",
    ),
    "node_count_mismatch": ("flagged", "the node list and allocation_nodes disagree"),
    "unknown_state": (
        "flagged",
        "a state that is not a Slurm job state (https://slurm.schedmd.com/job_state_codes.html)",
    ),
    # a job record without one of the objects every sacct --json job has (slurmrestd
    # v0.0.39+ job schema): the job is kept, the values that object gives left empty (unknown)
    "missing_time": (
        "flagged",
        "job record(s) without a time object: elapsed, start, end and the time limit left empty (unknown)",
    ),
    "missing_state": (
        "flagged",
        "job record(s) without a state: state left empty (unknown)",
    ),
    "missing_tres": (
        "flagged",
        "job record(s) without tres: the allocated GPUs and CPUs left empty (unknown)",
    ),
    "bad_record": ("excluded", "records that are not of the sacct --json shape, left out"),
}


def _report(fired: dict[str, list[str]], source: str, version: str | None, q: QualityLog) -> None:
    for check, ids in fired.items():
        action, text = _MESSAGES[check]
        text = text.format(v=f" (Slurm {version} JSON)" if version else "")
        shown = ", ".join(ids[:5]) + (" ..." if len(ids) > 5 else "")
        q.add(source, check, action, f"{len(ids)} record(s): {text}; {shown}", n_series=len(ids))


def _check_row(r: dict[str, Any]) -> None:
    """Every value of the shape its column needs (so that no polars error can follow)."""
    for name in _RAW_NAMES:
        _str(r.get(name))
    schema = {**JOB_COLUMNS, **STEP_COLUMNS, **_EXTRA}
    for name, dtype in schema.items():
        v = r.get(name)
        if v is None:
            continue
        if dtype == pl.Int64() and (
            isinstance(v, bool) or not isinstance(v, int) or not -_I64 <= v < _I64
        ):
            raise ValueError(f"{name}: not a 64-bit integer: {v!r}")
        if dtype == pl.Float64() and not (isinstance(v, float) and math.isfinite(v)):
            raise ValueError(f"{name}: not a finite number: {v!r}")
        if dtype == pl.Utf8() and not isinstance(v, str):
            raise ValueError(f"{name}: not a string: {v!r}")
        if isinstance(dtype, pl.List) and not (
            isinstance(v, list) and all(isinstance(x, str) for x in v)
        ):
            raise ValueError(f"{name}: not a list of strings: {v!r}")


def _frames(
    rows: list[dict], source: str, version: str | None, data_parser: str | None, q: QualityLog
) -> SacctData:
    raw = pl.DataFrame(
        {n: pl.Series(n, [r.get(n) for r in rows], dtype=pl.Utf8) for n in _RAW_NAMES}
    )
    cols: dict[str, Any] = {}
    for name in [*JOB_COLUMNS, *STEP_COLUMNS, *_EXTRA]:
        if name in ("submit", "start", "end"):
            cols[name] = pl.Series(
                name, [r.get(name) for r in rows], dtype=pl.Datetime("us", "UTC")
            )
        elif name != "gpu_hours":
            cols[name] = [r.get(name) for r in rows]
    meta = {
        "format": "json",
        "source": source,
        "slurm_version": version,
        "data_parser": data_parser,
    }
    return assemble(raw, cols, meta, q.frame())


class _JobIds(NamedTuple):
    """A JSON job's identifiers, as the parsable2 reader derives them from ``JobID``."""

    JobID: str  # sacct's JobID text: 123, 123_4, 123_[1-9], 123+0
    kind: str  # job, array_task, array_pending, het_component
    job_id: int
    array_job_id: int | None
    array_task_id: int | None
    het_job_id: int | None
    het_offset: int | None


def _job_id(job: dict[str, Any]) -> _JobIds:
    """:class:`_JobIds` ``(JobID, kind, job_id, array_job_id, array_task_id, het_job_id,
    het_offset)``."""
    job_id = _int(job["job_id"])
    if job_id is None:
        raise ValueError("job_id is null")
    arr, het = _dict(job.get("array")), _dict(job.get("het"))
    task_id, array_job_id = _int(arr.get("task_id")), _int(arr.get("job_id"))
    task_spec = _str(arr.get("task")) or ""
    het_job_id, het_offset = _int(het.get("job_id")), _int(het.get("job_offset"))
    if task_id is not None and task_id != NO_VAL and array_job_id:
        return _JobIds(
            f"{array_job_id}_{task_id}", "array_task", job_id, array_job_id, task_id, None, None
        )
    if task_spec and array_job_id:
        jid = f"{array_job_id}_[{task_spec.strip('[]')}]"
        return _JobIds(jid, "array_pending", job_id, array_job_id, None, None, None)
    if het_job_id and het_offset is not None and het_offset != NO_VAL:
        return _JobIds(
            f"{het_job_id}+{het_offset}",
            "het_component",
            job_id,
            None,
            None,
            het_job_id,
            het_offset,
        )
    return _JobIds(str(job_id), "job", job_id, None, None, None, None)


def _job_nodes(job: dict[str, Any], n_nodes: int | None, started: bool, flags: list[str]):
    """``(NodeList text, nodes)``: top-level ``nodes``, else ``job_resources`` (flagged)."""
    text = _str(job.get("nodes"))
    nodes: list[str] | None = expand_nodelist(text)
    if not nodes:
        alt_text, alt = _resource_nodes(job.get("job_resources"))
        if alt:
            text, nodes = alt_text, alt
            flags.append("nodes_from_job_resources")
    if not nodes and started and (n_nodes or 0) > 0:
        flags.append("nodes_missing")
        return text, None
    if nodes and n_nodes and len(nodes) != n_nodes:
        flags.append("node_count_mismatch")
    return text, nodes


def _exit_flags(row: dict[str, Any]) -> None:
    if row["state"] in ZERO_EXIT_UNKNOWN and row["exit_code"] == 0 and not row["signal"]:
        row["exit_code"] = row["signal"] = row["ExitCode"] = None
        row["data_flags"].append("exit_code_unknown")
    if row["state"] is not None and row["state"] not in JOB_STATES:
        row["data_flags"].append("unknown_state")


def _json_job_row(job: Any) -> dict[str, Any]:
    job = _dict(job)
    jid, kind, job_id, array_job_id, task_id, het_job_id, het_offset = _job_id(job)
    state_obj = job.get("state") or {}
    states = _states(state_obj.get("current") if isinstance(state_obj, dict) else state_obj)
    rc, sig = _exit(job.get("exit_code"))
    t = _dict(job.get("time"))
    lim_s, lim_flag = _limit(t.get("limit"))
    tres = _dict(job.get("tres"))
    alloc = _tres_string(tres.get("allocated"))
    n_gpus, gpu_type = gpus_from_tres(alloc)
    alloc_t = parse_tres(alloc)
    elapsed = _int(t.get("elapsed"))
    n_nodes = _int(job.get("allocation_nodes"))
    start = _epoch(t.get("start"))
    flags: list[str] = [f"missing_{k}" for k in ("time", "state", "tres") if job.get(k) is None]
    node_text, nodes = _job_nodes(job, n_nodes, start is not None, flags)
    cpus = alloc_t.get("cpu")
    row = {
        "JobID": jid,
        "JobIDRaw": str(job_id),
        "JobName": _str(job.get("name")),
        "User": _str(job.get("user")),
        "Account": _str(job.get("account")),
        "Partition": _str(job.get("partition")),
        "QOS": _str(job.get("qos")),
        "Cluster": _str(job.get("cluster")),
        "State": states[0] if states else None,
        "ExitCode": f"{rc}:{sig}" if rc is not None else None,
        "NodeList": node_text,
        "AllocTRES": alloc,
        "ReqTRES": _tres_string(tres.get("requested")),
        "job_id_raw": job_id,
        "kind": kind,
        "array_job_id": array_job_id,
        "array_task_id": task_id,
        "het_job_id": het_job_id,
        "het_offset": het_offset,
        "state": states[0] if states else None,
        "state_flags": states[1:],
        "cancelled_by": None,
        "cancelled_by_user": _str(job.get("kill_request_user")) or None,
        "exit_code": rc,
        "signal": sig,
        "submit": _epoch(t.get("submission")),
        "start": start,
        "end": _epoch(t.get("end")),
        "elapsed_s": elapsed,
        "timelimit_s": lim_s,
        "timelimit_flag": lim_flag,
        "n_nodes": n_nodes,
        "nodes": nodes,
        "n_cpus": _int_text(cpus),
        "n_gpus": n_gpus,
        "gpu_type": gpu_type,
        "total_cpu_s": _cpu_seconds(t.get("total")),
        "user_cpu_s": _cpu_seconds(t.get("user")),
        "system_cpu_s": _cpu_seconds(t.get("system")),
        "source_line": None,
        "data_flags": flags,
    }
    _exit_flags(row)
    return row


def _json_step_id(step: dict[str, Any]) -> str:
    s = _dict(step.get("step"))
    sid = s.get("id")
    if isinstance(sid, dict):  # {job_id, step_id} (some 22.05/23.02 builds)
        sid = sid.get("step_id", sid.get("id"))
    if sid is None:
        sid = s.get("step_id")
    if isinstance(sid, str) and "." in sid:
        return sid.split(".", 1)[1]
    if isinstance(sid, bool):
        raise ValueError(f"step id of unknown shape: {sid!r}")
    if isinstance(sid, (int, float)) or (isinstance(sid, str) and sid.isascii() and sid.isdigit()):
        n = _int(int(sid) if isinstance(sid, str) else sid)
        return SPECIAL_STEPS.get(n, str(n))
    if isinstance(sid, str) and sid:
        return sid
    raise ValueError(f"step id missing or of unknown shape: {s!r}")


def _step_kind(step: str | None) -> str | None:
    if step is None:
        return None
    base = step.split("+", 1)[0]
    if base in ("batch", "extern", "interactive"):
        return base
    if base.isdigit():
        return "srun"
    return base


def _json_step_row(step: Any, parent: dict[str, Any]) -> dict[str, Any]:
    step = _dict(step)
    sid = _json_step_id(step)
    het_comp = _int(_dict(_dict(step.get("step")).get("het")).get("component"))
    if het_comp is not None and het_comp != NO_VAL and "+" not in sid:
        sid = f"{sid}+{het_comp}"
    t = _dict(step.get("time"))
    states = _states(step.get("state"))
    rc, sig = _exit(step.get("exit_code"))
    nodes_obj = step.get("nodes")
    if isinstance(nodes_obj, dict):
        node_text = _str(nodes_obj.get("range"))
        if node_text is None and isinstance(nodes_obj.get("list"), list):
            node_text = ",".join(_str(x) or "" for x in nodes_obj["list"])
        n_nodes = _int(nodes_obj.get("count"))
    else:
        node_text, n_nodes = _str(nodes_obj), None
    nodes = expand_nodelist(node_text)
    if n_nodes is None and node_text is not None:
        n_nodes = len(nodes)
    tres = step.get("tres") or {}
    alloc = _tres_string(tres.get("allocated")) if isinstance(tres, dict) else None
    n_gpus, gpu_type = gpus_from_tres(alloc)
    cpus = parse_tres(alloc).get("cpu")
    row = {
        "JobID": f"{parent['JobID']}.{sid}",
        "JobIDRaw": f"{parent['JobIDRaw']}.{sid}",
        "JobName": _str(_dict(step.get("step")).get("name")),
        "State": states[0] if states else None,
        "ExitCode": f"{rc}:{sig}" if rc is not None else None,
        "NodeList": node_text,
        "AllocTRES": alloc,
        "job_id_raw": parent["job_id_raw"],
        "kind": "step",
        "array_job_id": parent["array_job_id"],
        "array_task_id": parent["array_task_id"],
        "het_job_id": parent["het_job_id"],
        "het_offset": parent["het_offset"],
        "state": states[0] if states else None,
        "state_flags": states[1:],
        "cancelled_by": None,
        "cancelled_by_user": _str(step.get("kill_request_user")) or None,
        "exit_code": rc,
        "signal": sig,
        "submit": None,
        "start": _epoch(t.get("start")),
        "end": _epoch(t.get("end")),
        "elapsed_s": _int(t.get("elapsed")),
        "timelimit_s": None,
        "timelimit_flag": None,
        "n_nodes": n_nodes,
        "nodes": nodes,
        "n_cpus": _int_text(cpus),
        "n_gpus": n_gpus,
        "gpu_type": gpu_type,
        "total_cpu_s": _cpu_seconds(t.get("total")),
        "user_cpu_s": _cpu_seconds(t.get("user")),
        "system_cpu_s": _cpu_seconds(t.get("system")),
        "source_line": None,
        "data_flags": [],
        "parent_job_id": parent["JobID"],
        "step_id": sid,
        "step_kind": _step_kind(sid),
    }
    _exit_flags(row)
    return row
