"""The sacct --parsable2 reader as it was before the vectorised rewrite (issue 16), kept only as the
reference of ``tests/test_slurm.py::test_vectorised_reader_matches_the_reference_*``.

Copied verbatim from ``src/trainperf/slurm/__init__.py`` at commit ffda09c (one ``strptime`` and one
Python call per value), minus the JSON reader and the job statistics. Not used by the product.
"""

# ruff: noqa
from __future__ import annotations

import datetime as _dt
import json
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hostlist
import polars as pl

from trainperf.errors import DataWarning, InputError

# ------------------------------------------------------------------------------------------------
# errors, result type, constants
# ------------------------------------------------------------------------------------------------


class SacctParseError(InputError):
    """Input that cannot be read without guessing.

    Attributes:
        source: the file name (or ``"<text>"``) the input came from.
        line: 1-based line number in that input, or ``None`` when the problem is not tied to a line.
        expected: what the reader expected to find there.
    """

    def __init__(self, source: str, line: int | None, expected: str, found: str | None = None):
        self.source = source
        self.line = line
        self.expected = expected
        self.found = found
        where = f"{source}, line {line}" if line is not None else source
        msg = f"{where}: expected {expected}"
        if found is not None:
            shown = found if len(found) <= 200 else found[:200] + "..."
            msg += f"; found {shown!r}"
        super().__init__(msg)


class SacctWarning(DataWarning):
    """Partial input: a field is missing or a value is unusable, and the derived value is null."""


@dataclass(frozen=True)
class SacctData:
    """Accounting records split into allocations and steps.

    Attributes:
        jobs: one row per job, array task or heterogeneous-job component (see :data:`JOB_COLUMNS`).
        steps: one row per job step (``.batch``, ``.extern``, ``.interactive``, ``.0``, ...), same
            derived columns plus ``step_id``, ``step_kind`` and ``parent_job_id``.
        meta: what is known about the producer: ``format`` (``"parsable"`` / ``"json"``),
            ``source``, and for JSON ``slurm_version`` (``"22.05.8"``) and ``data_parser``.
    """

    jobs: pl.DataFrame
    steps: pl.DataFrame
    meta: dict[str, Any] = field(default_factory=dict)


#: Job size bins in nodes, as used by the SAKURAONE workload study (1, 2, 3–4, 5–16, 17–32, >32).
SIZE_BINS: tuple[str, ...] = ("1", "2", "3-4", "5-16", "17-32", ">32")
_SIZE_EDGES = (1, 2, 4, 16, 32)  # upper bounds (inclusive) of the first five bins
SIZE_BIN_DTYPE = pl.Enum(list(SIZE_BINS))

#: Slurm job states (https://slurm.schedmd.com/job_state_codes.html).
JOB_STATES = frozenset(
    """BOOT_FAIL CANCELLED COMPLETED COMPLETING CONFIGURING DEADLINE FAILED NODE_FAIL OUT_OF_MEMORY
    PENDING PREEMPTED RUNNING REQUEUED REQUEUE_FED REQUEUE_HOLD RESIZING RESV_DEL_HOLD REVOKED
    SIGNALING SPECIAL_EXIT STAGE_OUT STOPPED SUSPENDED TIMEOUT LAUNCH_FAILED POWER_UP_NODE
    RECONFIG_FAIL UPDATE_DB""".split()
)
#: States after which a job record no longer changes.
FINAL_STATES = frozenset(
    "BOOT_FAIL CANCELLED COMPLETED DEADLINE FAILED NODE_FAIL OUT_OF_MEMORY PREEMPTED TIMEOUT "
    "REVOKED SPECIAL_EXIT REQUEUED".split()
)

# 32-bit sentinels: NO_VAL (0xfffffffe) and INFINITE (0xffffffff) from slurm/slurm.h
_NO_VAL = 4294967294
_INFINITE = 4294967295
_UNSET_EPOCHS = frozenset({0, _NO_VAL, _INFINITE})
# step ids that older JSON gives as numbers (slurm/slurm.h: SLURM_PENDING_STEP ... SLURM_INTERACTIVE_STEP)
_SPECIAL_STEPS = {
    4294967290: "interactive",
    4294967291: "batch",
    4294967292: "extern",
    4294967293: "pending",
}

# sacct fields whose text is free (user supplied) and may contain the delimiter
_FREE_TEXT_FIELDS = frozenset(
    f.lower()
    for f in (
        "JobName AdminComment Comment SystemComment WCKey Reason SubmitLine WorkDir Constraints "
        "Container Extra Licenses StdOut StdErr StdIn FailedNode"
    ).split()
)
_TIME_FIELDS = ("Submit", "Start", "End", "Eligible")
_CPU_TIME_FIELDS = {
    "totalcpu": "total_cpu_s",
    "usercpu": "user_cpu_s",
    "systemcpu": "system_cpu_s",
    "cputime": "cpu_time_s",
}

#: Derived columns of :attr:`SacctData.jobs` and their dtypes (raw sacct columns come first, as Utf8).
JOB_COLUMNS: dict[str, pl.DataType] = {
    "job_id_raw": pl.Int64(),
    "kind": pl.Utf8(),
    "array_job_id": pl.Int64(),
    "array_task_id": pl.Int64(),
    "het_job_id": pl.Int64(),
    "het_offset": pl.Int64(),
    "state": pl.Utf8(),
    "state_flags": pl.List(pl.Utf8()),
    "cancelled_by": pl.Int64(),
    "cancelled_by_user": pl.Utf8(),
    "exit_code": pl.Int64(),
    "signal": pl.Int64(),
    "submit": pl.Datetime("us", "UTC"),
    "start": pl.Datetime("us", "UTC"),
    "end": pl.Datetime("us", "UTC"),
    "elapsed_s": pl.Int64(),
    "timelimit_s": pl.Int64(),
    "timelimit_flag": pl.Utf8(),
    "n_nodes": pl.Int64(),
    "nodes": pl.List(pl.Utf8()),
    "n_cpus": pl.Int64(),
    "n_gpus": pl.Int64(),
    "gpu_type": pl.Utf8(),
    "gpu_hours": pl.Float64(),
    "total_cpu_s": pl.Float64(),
    "source_line": pl.Int64(),
}
#: Extra derived columns of :attr:`SacctData.steps`.
STEP_COLUMNS: dict[str, pl.DataType] = {
    "parent_job_id": pl.Utf8(),
    "step_id": pl.Utf8(),
    "step_kind": pl.Utf8(),
}

# ------------------------------------------------------------------------------------------------
# scalar parsers (public: each is small, documented and tested on its own)
# ------------------------------------------------------------------------------------------------

_DURATION_RE = re.compile(
    r"^(?:(?P<d>\d+)-)?(?:(?P<h>\d+):)??(?P<m>\d+):(?P<s>\d+(?:\.\d+)?)$|^(?P<donly>\d+)-(?P<honly>\d+)$"
)


def parse_duration(text: str | None) -> float | None:
    """Seconds in a sacct duration string, or ``None`` for an empty value.

    Grammars (``secs2time_str`` in ``src/common/parse_time.c`` and ``_elapsed_time`` in
    ``src/sacct/print.c``): ``D-HH:MM:SS`` (≥ 1 day), ``HH:MM:SS``, ``MM:SS.mmm`` (CPU-time fields
    below one hour carry milliseconds) and ``D-HH`` (accepted as input by Slurm). Examples:
    ``"2-03:04:05"`` → 183845.0, ``"17:18.067"`` → 1038.067.

    Raises:
        ValueError: for anything else, including ``UNLIMITED``/``Partition_Limit``/``INVALID``
            (use :func:`parse_timelimit` for limits).
    """
    if text is None:
        return None
    t = text.strip()
    if t == "":
        return None
    m = _DURATION_RE.match(t)
    if not m:
        raise ValueError(f"not a Slurm duration ([D-]HH:MM:SS or MM:SS.mmm): {text!r}")
    if m.group("donly") is not None:
        return float(int(m.group("donly")) * 86400 + int(m.group("honly")) * 3600)
    days = int(m.group("d") or 0)
    hours = int(m.group("h") or 0)
    minutes = int(m.group("m"))
    seconds = float(m.group("s"))
    if minutes >= 60 and m.group("h") is not None or seconds >= 60:
        raise ValueError(f"not a Slurm duration (minutes or seconds >= 60): {text!r}")
    return days * 86400 + hours * 3600 + minutes * 60 + seconds


_LIMIT_FLAGS = {
    "UNLIMITED": "UNLIMITED",
    "PARTITION_LIMIT": "Partition_Limit",
    "INVALID": "INVALID",
}


def parse_timelimit(text: str | None) -> tuple[int | None, str | None]:
    """``(seconds, flag)`` for a ``Timelimit`` value.

    ``UNLIMITED`` → ``(None, "UNLIMITED")``; ``Partition_Limit`` (job submitted without a limit, the
    partition's applies) → ``(None, "Partition_Limit")``; ``INVALID`` → ``(None, "INVALID")``;
    ``""`` (steps have no limit) → ``(None, None)``; ``"1-00:00:00"`` → ``(86400, None)``.

    Raises:
        ValueError: when the value is neither a duration nor one of these words.
    """
    if text is None or text.strip() == "":
        return None, None
    flag = _LIMIT_FLAGS.get(text.strip().upper())
    if flag is not None:
        return None, flag
    secs = parse_duration(text)
    return (None if secs is None else int(round(secs))), None


_STATE_RE = re.compile(r"^(?P<state>[A-Z_]+)(?P<plus>\+)?(?: by (?P<uid>\d+))?$")


def parse_state(text: str | None) -> tuple[str | None, int | None, bool]:
    """``(base state, cancelled-by uid, truncated)`` for a sacct ``State`` value.

    ``"CANCELLED by 0"`` → ``("CANCELLED", 0, False)``; ``"CANCELLED+"`` (fixed-width output cut the
    text) → ``("CANCELLED", None, True)``; ``"COMPLETED"`` → ``("COMPLETED", None, False)``.

    Raises:
        ValueError: when the text is not ``STATE``, ``STATE+`` or ``STATE by <uid>``.
    """
    if text is None or text.strip() == "":
        return None, None, False
    m = _STATE_RE.match(text.strip())
    if not m:
        raise ValueError(f"not a Slurm job state: {text!r}")
    uid = m.group("uid")
    return m.group("state"), (int(uid) if uid is not None else None), m.group("plus") is not None


def parse_exit_code(text: str | None) -> tuple[int | None, int | None]:
    """``(exit code, signal)`` for an ``ExitCode`` value ``"<code>:<signal>"`` (``"0:15"`` → ``(0, 15)``).

    Raises:
        ValueError: when the text is not two colon-separated integers.
    """
    if text is None or text.strip() == "":
        return None, None
    m = re.match(r"^(\d+):(\d+)$", text.strip())
    if not m:
        raise ValueError(f"not an exit code <code>:<signal>: {text!r}")
    return int(m.group(1)), int(m.group(2))


_JOBID_RE = re.compile(
    r"^(?P<id>\d+)"
    r"(?:_(?P<task>\d+|\[[^\]]*\]))?"
    r"(?:\+(?P<het>\d+))?"
    r"(?:\.(?P<step>[A-Za-z]+|\d+)(?:\+(?P<stephet>\d+))?)?$"
)


def parse_job_id(text: str) -> dict[str, Any]:
    """Split a sacct ``JobID`` into its parts.

    Returns a dict with ``id`` (int, the number before any suffix), ``array_task_id`` (int or
    ``None``), ``array_pending`` (the ``[5-10]`` spec of a pending array record, else ``None``),
    ``het_offset`` (int or ``None``), ``step`` (``"batch"``, ``"extern"``, ``"0"``... or ``None``),
    ``parent`` (the JobID without the step part) and ``kind`` (``"job"``, ``"array_task"``,
    ``"array_pending"``, ``"het_component"`` or ``"step"``).

    Examples: ``"39889258_1426.batch"``, ``"1853+0.0"``, ``"123_[5-10]"``.

    Raises:
        ValueError: for any other form.
    """
    m = _JOBID_RE.match(text.strip())
    if not m:
        raise ValueError(f"not a Slurm JobID: {text!r}")
    task = m.group("task")
    step = m.group("step")
    if m.group("stephet") is not None:
        step = f"{step}+{m.group('stephet')}"
    out: dict[str, Any] = {
        "id": int(m.group("id")),
        "array_task_id": int(task) if task is not None and task.isdigit() else None,
        "array_pending": task if task is not None and not task.isdigit() else None,
        "het_offset": int(m.group("het")) if m.group("het") is not None else None,
        "step": step,
        "parent": text.strip().split(".", 1)[0],
    }
    if step is not None:
        out["kind"] = "step"
    elif out["array_pending"] is not None:
        out["kind"] = "array_pending"
    elif out["array_task_id"] is not None:
        out["kind"] = "array_task"
    elif out["het_offset"] is not None:
        out["kind"] = "het_component"
    else:
        out["kind"] = "job"
    return out


def parse_tres(text: str | None) -> dict[str, str]:
    """``{"cpu": "4", "mem": "32G", "gres/gpu": "8", "gres/gpu:h100": "8", ...}`` from a TRES string.

    The empty string gives ``{}``; ``None`` gives ``{}``.

    Raises:
        ValueError: when an item is not ``key=value``.
    """
    if text is None or text.strip() == "":
        return {}
    out: dict[str, str] = {}
    for item in text.strip().split(","):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"not a TRES list key=value,...: {text!r}")
        out[key.strip()] = value.strip()
    return out


def gpus_from_tres(text: str | None) -> tuple[int | None, str | None]:
    """``(number of GPUs, GPU type)`` from an ``AllocTRES``/``ReqTRES`` string.

    With ``AccountingStorageTRES=gres/gpu,gres/gpu:h100`` Slurm records the same GPUs twice,
    ``gres/gpu=8`` and ``gres/gpu:h100=8`` (https://slurm.schedmd.com/tres.html): the untyped count is
    the total and typed counts are never added to it. Without an untyped entry the typed counts are
    summed (different types). No ``gres/gpu`` key at all → ``(0, None)``; ``None`` → ``(None, None)``.
    The type is the typed key's suffix (several types joined by ``,`` in sorted order).

    Raises:
        ValueError: when a GPU count is not an integer.
    """
    if text is None:
        return None, None
    tres = parse_tres(text)
    untyped = tres.get("gres/gpu")
    typed = {k.split(":", 1)[1]: v for k, v in tres.items() if k.startswith("gres/gpu:")}
    try:
        typed_n = {k: int(v) for k, v in typed.items()}
        n = int(untyped) if untyped is not None else (sum(typed_n.values()) if typed_n else 0)
    except ValueError:
        raise ValueError(f"GPU count is not an integer in TRES {text!r}") from None
    gpu_type = ",".join(sorted(k for k, v in typed_n.items() if v > 0)) or None
    return n, gpu_type


def expand_nodelist(text: str | None) -> list[str]:
    """Host names of a Slurm host list (``"gpu[001-004,007]"`` → ``gpu001 ... gpu004, gpu007``).

    ``"None assigned"`` (job never started) and ``""`` give ``[]``. Uses python-hostlist.

    Raises:
        ValueError: when the text is not a valid host list.
    """
    if text is None:
        return []
    t = text.strip()
    if t == "" or t.lower() in ("none assigned", "(null)"):
        return []
    try:
        return list(hostlist.expand_hostlist(t))
    except hostlist.BadHostlist as exc:
        raise ValueError(f"not a Slurm host list: {text!r} ({exc})") from None


def _parse_epoch(value: Any) -> _dt.datetime | None:
    """Epoch seconds → aware UTC datetime; 0, NO_VAL, INFINITE, None → None."""
    if value is None:
        return None
    v = int(value)
    if v in _UNSET_EPOCHS:
        return None
    return _dt.datetime.fromtimestamp(v, tz=_dt.timezone.utc)  # noqa: UP017 (3.10)


# ------------------------------------------------------------------------------------------------
# --parsable2 text
# ------------------------------------------------------------------------------------------------

_KNOWN_FIELD_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def _normalise_fields(fields: str | Sequence[str]) -> list[str]:
    if isinstance(fields, str):
        fields = fields.split(",")
    out = []
    for f in fields:
        name = f.strip().split("%", 1)[0]  # drop -o widths like JobName%30
        if name:
            out.append(name)
    return out


def read_sacct_parsable(
    path: str | Path,
    *,
    fields: str | Sequence[str] | None = None,
    delimiter: str = "|",
    tz: str = "UTC",
) -> SacctData:
    """Read a ``sacct --parsable2`` (``-P``) or ``--parsable`` (``-p``) dump from a file.

    See :func:`parse_sacct_parsable` for arguments, columns and errors; the file name is used in
    error messages.
    """
    p = Path(path)
    text = p.read_bytes().decode("utf-8", errors="replace")
    return parse_sacct_parsable(text, fields=fields, delimiter=delimiter, tz=tz, source=str(p))


def parse_sacct_parsable(
    text: str,
    *,
    fields: str | Sequence[str] | None = None,
    delimiter: str = "|",
    tz: str = "UTC",
    source: str = "<text>",
) -> SacctData:
    """Parse ``sacct --parsable2`` text into :class:`SacctData`.

    Args:
        text: the output of ``sacct -P`` (or ``-p``: one trailing delimiter per line is accepted).
        fields: the ``-o/--format`` field list when the output was made with ``--noheader``
            (a list or the comma string given to ``-o``; ``%N`` widths are ignored). ``None``: the first
            line is the header.
        delimiter: the ``--delimiter`` string (default ``|``).
        tz: IANA zone of the host that ran sacct, used for ISO times without offset (sacct prints
            local time). Epoch-second times (``SLURM_TIME_FORMAT=%s``) ignore it.
        source: name used in error messages.

    Returns:
        :class:`SacctData`. Both frames start with the sacct columns present in the input, as Utf8
        with sacct's names (``JobID``, ``JobName``, ``State``, ``AllocTRES``...), followed by the derived
        columns of :data:`JOB_COLUMNS` (steps also :data:`STEP_COLUMNS`):

        ========================  ======================  ===============================================
        column                    dtype                   meaning
        ========================  ======================  ===============================================
        job_id_raw                Int64                   JobIDRaw (steps: of the parent allocation)
        kind                      Utf8                    job, array_task, array_pending, het_component
                                                          (steps: step)
        array_job_id              Int64                   ``123`` of ``123_4``; null otherwise
        array_task_id             Int64                   ``4`` of ``123_4``; null otherwise
        het_job_id / het_offset   Int64                   ``1853`` / ``1`` of ``1853+1``
        state                     Utf8                    base state: ``CANCELLED`` of ``CANCELLED by 0``
        state_flags               List(Utf8)              extra state words (JSON lists, ``TRUNCATED``
                                                          for ``CANCELLED+``)
        cancelled_by              Int64                   uid of ``CANCELLED by <uid>``
        cancelled_by_user         Utf8                    user name (JSON ``kill_request_user``)
        exit_code / signal        Int64                   ``ExitCode`` ``code:signal``
        submit / start / end      Datetime(us, UTC)       null for ``Unknown``, ``None``, epoch 0 and
                                                          the 32-bit sentinels 4294967294 / 4294967295
        elapsed_s                 Int64                   seconds of ``Elapsed`` (``ElapsedRaw``)
        timelimit_s               Int64                   seconds of ``Timelimit`` (``TimelimitRaw`` is
                                                          minutes); null when not a duration
        timelimit_flag            Utf8                    ``UNLIMITED``, ``Partition_Limit``,
                                                          ``INVALID`` or null
        n_nodes                   Int64                   ``NNodes``
        nodes                     List(Utf8)              ``NodeList`` expanded; ``[]`` for
                                                          ``None assigned``
        n_cpus                    Int64                   ``NCPUS`` / ``AllocCPUS`` / AllocTRES ``cpu``
        n_gpus                    Int64                   AllocTRES GPUs, untyped and typed entries not
                                                          added (:func:`gpus_from_tres`)
        gpu_type                  Utf8                    ``h100`` of ``gres/gpu:h100``
        gpu_hours                 Float64                 ``n_gpus * elapsed_s / 3600`` (GPU·h)
        total_cpu_s               Float64                 ``TotalCPU`` in seconds (ms resolution)
        source_line               Int64                   1-based line of the record in the input
        parent_job_id (steps)     Utf8                    JobID of the allocation (``123_4`` of
                                                          ``123_4.batch``)
        step_id / step_kind       Utf8                    ``batch``/``extern``/``interactive``/``0``;
                                                          kind ``batch``, ``extern``, ``interactive``,
                                                          ``srun``
        ========================  ======================  ===============================================

        ``UserCPU``, ``SystemCPU`` and ``CPUTime``, when present, add ``user_cpu_s``,
        ``system_cpu_s``, ``cpu_time_s`` (Float64 seconds). A derived column whose source field is
        not in the input is null and a :class:`SacctWarning` names the field.

    Raises:
        SacctParseError: (a ``ValueError``) naming ``source``, the line and what was expected: no
            header / unknown header, no ``JobID``/``JobIDRaw`` field, a line with fewer fields than the
            header, a line with more fields (a delimiter inside a free-text value such as JobName)
            unless the **last** field is free text (then the surplus is joined back into it), or a
            value that does not parse (duration, time, TRES, state, exit code, host list).

    Sources: https://slurm.schedmd.com/sacct.html (``--parsable2``, ``--delimiter``, ``--noheader``,
    ``SLURM_TIME_FORMAT``, field list), https://slurm.schedmd.com/tres.html.
    """
    if delimiter == "":
        raise ValueError("delimiter must not be empty")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]

    start = 0
    header_from_text = False
    if fields is None:
        while start < len(lines) and lines[start].strip() == "":
            start += 1
        if start == len(lines):
            raise SacctParseError(source, None, "a header line of sacct field names", "empty input")
        names = lines[start].split(delimiter)
        if names and names[-1] == "":
            names.pop()  # --parsable: trailing delimiter
        if not names or not all(_KNOWN_FIELD_RE.match(n) for n in names):
            raise SacctParseError(
                source,
                start + 1,
                f"a header line of sacct field names separated by {delimiter!r} "
                "(for --noheader output pass fields=...)",
                lines[start],
            )
        header_from_text = True
        start += 1
    else:
        names = _normalise_fields(fields)
        if not names:
            raise ValueError("fields is empty")
    lower = [n.lower() for n in names]
    if len(set(lower)) != len(lower):
        raise SacctParseError(
            source,
            start if header_from_text else None,
            "distinct field names",
            delimiter.join(names),
        )
    if "jobid" not in lower and "jobidraw" not in lower:
        raise SacctParseError(
            source,
            start if header_from_text else None,
            "a JobID or JobIDRaw field",
            delimiter.join(names),
        )
    n = len(names)
    last_free = lower[-1] in _FREE_TEXT_FIELDS
    other_free = [names[i] for i in range(n - 1) if lower[i] in _FREE_TEXT_FIELDS]

    # every data line longer than the header by the same count: the header, not a JobName, is wrong
    counts = {
        len(ln.split(delimiter)) - (ln.endswith(delimiter) and delimiter != "")
        for ln in lines[start:]
        if ln.strip()
    }
    data_lines = [ln for ln in lines[start:] if ln.strip()]
    if len(data_lines) >= 2 and (extra := min(counts) - n) > 0:
        raise SacctParseError(
            source,
            start if header_from_text else None,
            f"data lines with the {n} fields of the header ({delimiter.join(names)})",
            f"every one of the {len(data_lines)} data lines has at least {n + extra} fields: the header (or the "
            f"fields= list) lacks {extra} field(s); re-export with the same --format for header and data",
        )

    records: list[list[str]] = []
    line_numbers: list[int] = []
    i = start
    while i < len(lines):
        line = lines[i]
        lineno = i + 1
        i += 1
        if line.strip() == "":
            continue
        if (
            not header_from_text
            and records == []
            and [x.lower() for x in line.split(delimiter)][:n] == lower
        ):
            continue  # header present although fields were given
        parts = line.split(delimiter)
        if len(parts) < n and records and last_free and not _JOBID_RE.match(parts[0].strip()):
            # continuation of a newline inside the last (free-text) field of the previous record
            records[-1][-1] = records[-1][-1] + "\n" + line
            continue
        # a newline inside a free-text value in the middle splits one record over several lines
        while len(parts) < n and i < len(lines) and lower[len(parts) - 1] in _FREE_TEXT_FIELDS:
            nxt = lines[i].split(delimiter)
            parts[-1] = parts[-1] + "\n" + nxt[0]
            parts.extend(nxt[1:])
            i += 1
        if len(parts) == n + 1 and parts[-1] == "":
            parts.pop()  # --parsable trailing delimiter
        if len(parts) < n:
            raise SacctParseError(
                source,
                lineno,
                f"{n} fields separated by {delimiter!r} ({delimiter.join(names)})",
                f"{len(parts)} fields: {line}",
            )
        if len(parts) > n:
            if not last_free:
                raise SacctParseError(
                    source,
                    lineno,
                    f"{n} fields ({delimiter.join(names)}); this line has {len(parts)}, probably because "
                    f"a free-text value such as JobName contains the delimiter {delimiter!r}. Re-export "
                    "with JobName as the last field or with a --delimiter that cannot occur in names",
                    line,
                )
            if other_free:
                warnings.warn(
                    f"{source}, line {lineno}: {len(parts) - n} extra {delimiter!r} joined into the last "
                    f"field {names[-1]}; this assumes {', '.join(other_free)} contain no {delimiter!r}",
                    SacctWarning,
                    stacklevel=2,
                )
            parts = parts[: n - 1] + [delimiter.join(parts[n - 1 :])]
        records.append(parts)
        line_numbers.append(lineno)

    columns = {name: [r[k] for r in records] for k, name in enumerate(names)}
    raw = pl.DataFrame(
        {name: pl.Series(name, vals, dtype=pl.Utf8) for name, vals in columns.items()}
        if records
        else {name: pl.Series(name, [], dtype=pl.Utf8) for name in names}
    )
    return _derive_from_text(raw, line_numbers, tz=tz, source=source)


def _col(raw: pl.DataFrame, name: str) -> list[str] | None:
    for c in raw.columns:
        if c.lower() == name.lower():
            return raw.get_column(c).to_list()
    return None


def _apply(
    values: list[str], lines: list[int], fn, what: str, source: str, field_name: str
) -> list[Any]:
    out = []
    for v, ln in zip(values, lines, strict=True):
        try:
            out.append(fn(v))
        except ValueError as exc:
            raise SacctParseError(source, ln, f"{what} in field {field_name}", v) from exc
    return out


_EPOCH_RE = re.compile(r"^-?\d+$")
_ISO_FORMATS = ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M")


def _parse_times(
    values: list[str], lines: list[int], tz: str, source: str, field_name: str
) -> pl.Series:
    """Times as sacct prints them → Datetime(us, UTC)."""
    epochs: list[int | None] = []
    naive: list[_dt.datetime | None] = []
    for v, ln in zip(values, lines, strict=True):
        t = (v or "").strip()
        if t in ("", "Unknown", "None", "N/A"):
            epochs.append(None)
            naive.append(None)
        elif _EPOCH_RE.match(t):
            e = int(t)
            epochs.append(None if e in _UNSET_EPOCHS else e)
            naive.append(None)
        else:
            for fmt in _ISO_FORMATS:
                try:
                    naive.append(_dt.datetime.strptime(t, fmt))
                    break
                except ValueError:
                    continue
            else:
                raise SacctParseError(
                    source,
                    ln,
                    f"a time in field {field_name} as YYYY-MM-DDTHH:MM:SS, epoch seconds "
                    "(SLURM_TIME_FORMAT=%s), Unknown or None",
                    v,
                )
            epochs.append(None)
    from_epoch = pl.Series(
        field_name, [e * 1_000_000 if e is not None else None for e in epochs], dtype=pl.Int64
    )
    from_epoch = from_epoch.cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
    if all(x is None for x in naive):
        return from_epoch
    local = pl.Series(field_name, naive, dtype=pl.Datetime("us"))
    try:
        localised = local.dt.replace_time_zone(tz, ambiguous="null", non_existent="null")
    except Exception as exc:  # unknown zone name
        raise ValueError(f"unknown time zone {tz!r}") from exc
    bad = local.is_not_null() & localised.is_null()
    if bad.any():
        k = int(bad.arg_true()[0])
        raise SacctParseError(
            source,
            lines[k],
            f"a local time that exists exactly once in {tz} (daylight-saving change makes it ambiguous "
            "or non-existent; export with SLURM_TIME_FORMAT=%s or TZ=UTC)",
            values[k],
        )
    return localised.dt.convert_time_zone("UTC").fill_null(from_epoch).alias(field_name)


def _step_kind(step: str | None) -> str | None:
    if step is None:
        return None
    base = step.split("+", 1)[0]
    if base in ("batch", "extern", "interactive"):
        return base
    if base.isdigit():
        return "srun"
    return base


def _derive_from_text(raw: pl.DataFrame, lines: list[int], *, tz: str, source: str) -> SacctData:
    nrows = raw.height
    cols: dict[str, list[Any] | pl.Series] = {}
    missing: list[str] = []

    def get(name: str) -> list[str] | None:
        return _col(raw, name)

    # --- ids
    jobid = get("JobID")
    jobidraw = get("JobIDRaw")
    ids = _apply(
        jobid if jobid is not None else jobidraw, lines, parse_job_id, "a JobID", source, "JobID"
    )
    raw_ids = (
        _apply(jobidraw, lines, parse_job_id, "a JobIDRaw", source, "JobIDRaw")
        if jobidraw is not None
        else None
    )
    if raw_ids is not None:
        cols["job_id_raw"] = [r["id"] for r in raw_ids]
    else:
        # without JobIDRaw, only a plain job's JobID is its numeric id (array tasks and het
        # components have their own raw ids that JobID does not show)
        cols["job_id_raw"] = [
            d["id"]
            if d["array_task_id"] is None and d["array_pending"] is None and d["het_offset"] is None
            else None
            for d in ids
        ]
    cols["kind"] = [d["kind"] for d in ids]
    cols["array_job_id"] = [
        d["id"] if (d["array_task_id"] is not None or d["array_pending"]) else None for d in ids
    ]
    cols["array_task_id"] = [d["array_task_id"] for d in ids]
    cols["het_job_id"] = [d["id"] if d["het_offset"] is not None else None for d in ids]
    cols["het_offset"] = [d["het_offset"] for d in ids]
    cols["parent_job_id"] = [d["parent"] for d in ids]
    cols["step_id"] = [d["step"] for d in ids]
    cols["step_kind"] = [_step_kind(d["step"]) for d in ids]
    # an array record's kind is only visible in JobID
    if jobid is None:
        missing.append("JobID (array and het ids)")

    # --- state
    state = get("State")
    if state is not None:
        st = _apply(
            state,
            lines,
            parse_state,
            "a job state (STATE or 'CANCELLED by <uid>')",
            source,
            "State",
        )
        cols["state"] = [s[0] for s in st]
        cols["cancelled_by"] = [s[1] for s in st]
        cols["state_flags"] = [["TRUNCATED"] if s[2] else [] for s in st]
    else:
        missing.append("State")
        cols["state"] = [None] * nrows
        cols["cancelled_by"] = [None] * nrows
        cols["state_flags"] = [None] * nrows
    cols["cancelled_by_user"] = [None] * nrows

    exitc = get("ExitCode")
    if exitc is not None:
        ec = _apply(
            exitc, lines, parse_exit_code, "an exit code <code>:<signal>", source, "ExitCode"
        )
        cols["exit_code"] = [e[0] for e in ec]
        cols["signal"] = [e[1] for e in ec]
    else:
        missing.append("ExitCode")
        cols["exit_code"] = cols["signal"] = [None] * nrows

    # --- times
    for fname, out in (("Submit", "submit"), ("Start", "start"), ("End", "end")):
        vals = get(fname)
        if vals is None:
            missing.append(fname)
            cols[out] = pl.Series(out, [None] * nrows, dtype=pl.Datetime("us", "UTC"))
        else:
            cols[out] = _parse_times(vals, lines, tz, source, fname).alias(out)

    def dur_int(v: str) -> int | None:
        s = parse_duration(v)
        return None if s is None else int(round(s))

    elapsed = get("Elapsed")
    elapsed_raw = get("ElapsedRaw")
    if elapsed_raw is not None:
        cols["elapsed_s"] = _apply(
            elapsed_raw, lines, _int_or_none, "whole seconds", source, "ElapsedRaw"
        )
    elif elapsed is not None:

        def el(v: str) -> int | None:
            if v.strip().upper() == "INVALID":
                return None
            return dur_int(v)

        cols["elapsed_s"] = _apply(elapsed, lines, el, "a duration [D-]HH:MM:SS", source, "Elapsed")
    else:
        missing.append("Elapsed")
        cols["elapsed_s"] = [None] * nrows

    tl = get("Timelimit")
    tlraw = get("TimelimitRaw")
    if tl is not None:
        lim = _apply(
            tl,
            lines,
            parse_timelimit,
            "a time limit ([D-]HH:MM:SS, UNLIMITED, Partition_Limit)",
            source,
            "Timelimit",
        )
    elif tlraw is not None:

        def raw_limit(v: str) -> tuple[int | None, str | None]:
            t = v.strip()
            if t == "":
                return None, None
            flag = _LIMIT_FLAGS.get(t.upper())
            if flag:
                return None, flag
            minutes = int(t)
            if minutes == _INFINITE:
                return None, "UNLIMITED"
            if minutes == _NO_VAL:
                return None, "Partition_Limit"
            return minutes * 60, None

        lim = _apply(tlraw, lines, raw_limit, "whole minutes", source, "TimelimitRaw")
    else:
        missing.append("Timelimit")
        lim = [(None, None)] * nrows
    cols["timelimit_s"] = [x[0] for x in lim]
    cols["timelimit_flag"] = [x[1] for x in lim]

    # --- nodes, cpus, gpus
    nodelist = get("NodeList")
    if nodelist is not None:
        cols["nodes"] = _apply(
            nodelist,
            lines,
            expand_nodelist,
            "a host list such as gpu[001-004,007]",
            source,
            "NodeList",
        )
    else:
        cols["nodes"] = [None] * nrows
    alloc = get("AllocTRES")
    tres = (
        _apply(alloc, lines, parse_tres, "a TRES list key=value,...", source, "AllocTRES")
        if alloc is not None
        else None
    )
    nnodes = get("NNodes")
    if nnodes is not None:
        cols["n_nodes"] = _apply(nnodes, lines, _int_or_none, "an integer", source, "NNodes")
    elif nodelist is not None:
        cols["n_nodes"] = [len(x) if x else None for x in cols["nodes"]]
    elif tres is not None:
        cols["n_nodes"] = [_int_or_none(t.get("node")) for t in tres]
    else:
        missing.append("NNodes")
        cols["n_nodes"] = [None] * nrows
    ncpus = get("NCPUS") or get("AllocCPUS")
    if ncpus is not None:
        cols["n_cpus"] = _apply(ncpus, lines, _int_or_none, "an integer", source, "NCPUS")
    elif tres is not None:
        cols["n_cpus"] = [_int_or_none(t.get("cpu")) for t in tres]
    else:
        cols["n_cpus"] = [None] * nrows
    if alloc is not None:
        g = _apply(alloc, lines, gpus_from_tres, "integer GPU counts", source, "AllocTRES")
        cols["n_gpus"] = [x[0] for x in g]
        cols["gpu_type"] = [x[1] for x in g]
    else:
        missing.append("AllocTRES")
        cols["n_gpus"] = cols["gpu_type"] = [None] * nrows

    for fname, out in _CPU_TIME_FIELDS.items():
        vals = get(fname)
        if vals is not None:
            cols[out] = _apply(
                vals, lines, parse_duration, "a CPU time (MM:SS.mmm, [D-]HH:MM:SS)", source, fname
            )
        elif out == "total_cpu_s":
            cols[out] = [None] * nrows
    cols["source_line"] = lines

    if missing:
        warnings.warn(
            f"{source}: sacct fields missing from the input: {', '.join(missing)}; the columns derived "
            "from them are null",
            SacctWarning,
            stacklevel=3,
        )
    return _assemble(raw, cols, meta={"format": "parsable", "source": source})


def _int_or_none(v: Any) -> int | None:
    if v is None:
        return None
    t = str(v).strip()
    if t == "":
        return None
    return int(t)


_EXTRA_FLOAT = {"user_cpu_s", "system_cpu_s", "cpu_time_s"}


def _assemble(raw: pl.DataFrame, cols: dict[str, Any], meta: dict[str, Any]) -> SacctData:
    series = []
    schema = dict(JOB_COLUMNS)
    schema.update(STEP_COLUMNS)
    for name, dtype in schema.items():
        v = cols.get(name)
        if isinstance(v, pl.Series):
            series.append(v.alias(name).cast(dtype))
        else:
            series.append(pl.Series(name, v if v is not None else [None] * raw.height, dtype=dtype))
    for name in sorted(_EXTRA_FLOAT & cols.keys()):
        series.append(pl.Series(name, cols[name], dtype=pl.Float64))
    df = (
        pl.concat([raw, pl.DataFrame(series)], how="horizontal")
        if raw.width
        else pl.DataFrame(series)
    )
    df = df.with_columns(gpu_hours=pl.col("n_gpus") * pl.col("elapsed_s") / 3600.0)
    is_step = pl.col("kind") == "step"
    jobs = df.filter(~is_step).drop(list(STEP_COLUMNS))
    steps = df.filter(is_step)
    return SacctData(jobs=jobs, steps=steps, meta=meta)


# ------------------------------------------------------------------------------------------------
# --json
