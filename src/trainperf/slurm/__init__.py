"""Slurm accounting (``sacct``) readers and job statistics.

Two input forms are read into the same two polars frames, returned as :class:`SacctData`:

* ``sacct --parsable2`` text (:func:`read_sacct_parsable`, :func:`parse_sacct_parsable`): with a header
  line, or ``--noheader`` plus the ``-o/--format`` field list passed as ``fields``; ``|`` or a custom
  ``--delimiter``; also ``--parsable`` (trailing delimiter).
* ``sacct --json`` output of Slurm 21.08 to 25.05 (:func:`read_sacct_json`, :func:`parse_sacct_json`).

:func:`read_sacct` picks one of the two by looking at the file.

Recommended export (times as epoch seconds, so no time-zone guessing; JobName last, so a ``|`` in a
job name can be recovered)::

    SLURM_TIME_FORMAT=%s sacct --parsable2 --allusers --duplicates -S 2024-06-01 -E 2025-04-01 \\
      -o JobID,JobIDRaw,User,Account,Partition,State,ExitCode,Submit,Start,End,Elapsed,Timelimit,\\
    NNodes,NCPUS,NodeList,AllocTRES,ReqTRES,TotalCPU,JobName > sacct.txt

Without ``SLURM_TIME_FORMAT=%s``, sacct prints local wall-clock time of the host that ran it, with no
offset (``_make_time_str_internal`` in ``src/common/parse_time.c``); pass that host's zone as ``tz``
(or run sacct with ``TZ=UTC``). ``--json`` always carries epoch seconds.

The job statistics (:func:`successful_jobs`, :func:`longest_job_and_task`,
:func:`runtime_distribution`, :func:`runtime_histogram`, :func:`share_by_state`,
:func:`share_by_size`, :func:`runtime_tails_by_size`, :func:`gpu_hours_over_time`,
:func:`workload_marginals`, :func:`accounting_summary`, :func:`runtime_ecdf`,
:func:`cluster_occupancy`) take the ``jobs`` frame and return frames; :func:`read_sacct_dumps` merges
several dumps; :func:`job_gpu_utilisation` and :func:`gpu_utilisation_by_size` join jobs with DCGM
telemetry. Plotting is left to :mod:`trainperf.report.charts`.

Sources:

* sacct manual (fields, ``--parsable2``, ``--delimiter``, ``SLURM_TIME_FORMAT``, job states):
  https://slurm.schedmd.com/sacct.html
* Job state codes: https://slurm.schedmd.com/job_state_codes.html
* TRES strings (``gres/gpu`` and typed ``gres/gpu:<type>`` tracked side by side):
  https://slurm.schedmd.com/tres.html
* Job arrays (``JobID`` ``<array id>_<task id>`` vs ``JobIDRaw``): https://slurm.schedmd.com/job_array.html
* Heterogeneous jobs (``<id>+<offset>``): https://slurm.schedmd.com/heterogeneous_jobs.html
* Host lists (``gpu[001-004,007]``): https://slurm.schedmd.com/hostlist.html , expanded with the
  python-hostlist library (https://www.nsc.liu.se/~kent/python-hostlist/)
* ``--json`` output schema and its changes between versions: https://slurm.schedmd.com/rest_api.html
  and https://github.com/SchedMD/slurm/blob/master/CHANGELOG/ ; real outputs of 21.08 to 25.05 in
  https://github.com/mila-iqia/SARC (``tests/functional/jobs/sacct_outputs``, ``tests/data/sacct``).
"""

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

__all__ = [
    "SacctParseError",
    "SacctWarning",
    "SacctData",
    "SIZE_BINS",
    "JOB_COLUMNS",
    "STEP_COLUMNS",
    "FINAL_STATES",
    "read_sacct",
    "read_sacct_parsable",
    "parse_sacct_parsable",
    "read_sacct_json",
    "parse_sacct_json",
    "parse_duration",
    "parse_timelimit",
    "parse_state",
    "parse_exit_code",
    "parse_job_id",
    "parse_tres",
    "gpus_from_tres",
    "expand_nodelist",
    "size_bin",
    "successful_jobs",
    "longest_job_and_task",
    "runtime_distribution",
    "runtime_histogram",
    "share_by_state",
    "share_by_size",
    "runtime_tails_by_size",
    "gpu_hours_over_time",
    "read_sacct_dumps",
    "SAKURAONE_MARGINALS",
    "workload_marginals",
    "accounting_summary",
    "runtime_ecdf",
    "cluster_occupancy",
    "GPU_UTIL_FIELD",
    "job_gpu_utilisation",
    "gpu_utilisation_by_size",
    "RUNTIME_EDGES_LOG_S",
]


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
# ------------------------------------------------------------------------------------------------


def read_sacct_json(path: str | Path) -> SacctData:
    """Read ``sacct --json`` output from a file. See :func:`parse_sacct_json`."""
    p = Path(path)
    return parse_sacct_json(p.read_bytes().decode("utf-8", errors="replace"), source=str(p))


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


def _epoch(v: Any) -> _dt.datetime | None:
    val = _num(v)
    return _parse_epoch(val) if isinstance(val, (int, float)) else None


def _states(v: Any) -> list[str]:
    if v is None:
        return []
    if isinstance(v, str):
        return [v] if v else []
    if isinstance(v, list):
        return [str(x) for x in v]
    raise ValueError(f"state is neither a string nor a list: {v!r}")


def _tres_string(items: Any) -> str | None:
    """A JSON ``tres.allocated`` list → a sacct-like TRES string (mem in M)."""
    if items is None:
        return None
    if not isinstance(items, list):
        raise ValueError(f"TRES is not a list: {items!r}")
    parts = []
    for t in items:
        typ = t.get("type")
        name = t.get("name")
        count = _num(t.get("count"))
        if count is None or (isinstance(count, (int, float)) and count < 0):
            continue  # energy -2 etc.: not recorded
        key = f"{typ}/{name}" if name else str(typ)
        value = f"{count}M" if typ == "mem" else str(count)
        parts.append(f"{key}={value}")
    return ",".join(parts)


def _exit(v: Any) -> tuple[int | None, int | None]:
    if v is None:
        return None, None
    if isinstance(v, (int, float)):
        return int(v), None
    rc = _num(v.get("return_code"))
    sig = v.get("signal") or {}
    s = _num(sig.get("id", sig.get("signal_id"))) if isinstance(sig, dict) else None
    status = _states(v.get("status"))
    if "SIGNALED" in status and rc is None:
        rc = 0
    if s is None and rc is not None:
        s = 0
    return (int(rc) if rc is not None else None), (int(s) if s is not None else None)


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
    val = int(val)
    if val == _INFINITE:
        return None, "UNLIMITED"
    if val == _NO_VAL:
        return None, "Partition_Limit"
    return val * 60, None


def _cpu_seconds(v: Any) -> float | None:
    if not isinstance(v, dict):
        return None
    s = _num(v.get("seconds"))
    us = _num(v.get("microseconds"))
    if s is None and us is None:
        return None
    return float(s or 0) + float(us or 0) / 1e6


def _slurm_version(meta: dict[str, Any]) -> str | None:
    sl = meta.get("Slurm") or meta.get("slurm") or {}
    ver = sl.get("version") if isinstance(sl, dict) else None
    if isinstance(ver, dict) and ver.get("major") is not None:
        major, minor, micro = (int(ver.get(k) or 0) for k in ("major", "minor", "micro"))
        return f"{major}.{minor:02d}.{micro}"
    if isinstance(sl, dict) and sl.get("release"):
        return str(sl["release"])
    return None


def parse_sacct_json(text: str | dict, *, source: str = "<text>") -> SacctData:
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

    Known defect, handled: Slurm 22.05 (dbv0.0.38) reports ``exit_code`` ``SUCCESS``/0 for jobs and
    steps that FAILED with a non-zero code (seen in ``tests/data/slurm/real``); an exit code 0 with
    state FAILED is therefore set to null with a :class:`SacctWarning`, never reported as 0.

    Raises:
        SacctParseError: invalid JSON (with its line), no ``jobs`` list, or a record whose id,
            state, TRES or host list is not of an expected shape (naming the ``jobs[i]`` index).

    Sources: https://slurm.schedmd.com/rest_api.html (data_parser v0.0.39–v0.0.43 schemas),
    https://slurm.schedmd.com/sacct.html (``--json``), SchedMD/slurm CHANGELOG 23.11 (step id as
    string), 24.11 (empty objects as null).
    """
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
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        raise SacctParseError(
            source, None, 'a JSON object with a "jobs" list (sacct --json output)'
        )
    meta_in = doc.get("meta") or {}
    version = _slurm_version(meta_in)
    plugins = meta_in.get("plugin") or meta_in.get("plugins") or {}
    data_parser = (
        plugins.get("data_parser") or plugins.get("type") if isinstance(plugins, dict) else None
    )
    if version is None:
        warnings.warn(f"{source}: no Slurm version in meta", SacctWarning, stacklevel=2)
    else:
        try:
            major = int(version.split(".")[0])
        except ValueError:
            major = 0
        if major > 25 or major < 21:
            warnings.warn(
                f"{source}: Slurm {version} is outside the tested range 21.08-25.05",
                SacctWarning,
                stacklevel=2,
            )

    rows: list[dict[str, Any]] = []
    inconsistent: list[str] = []
    for i, job in enumerate(doc["jobs"]):
        where = f"jobs[{i}]"
        try:
            jrow = _json_job_row(job)
            rows.append(jrow)
            if jrow["state"] == "FAILED" and jrow["exit_code"] == 0 and not jrow["signal"]:
                inconsistent.append(jrow["JobID"])
                jrow["exit_code"] = jrow["signal"] = jrow["ExitCode"] = None
            for k, step in enumerate(job.get("steps") or []):
                where = f"jobs[{i}].steps[{k}]"
                srow = _json_step_row(step, jrow)
                if srow["state"] == "FAILED" and srow["exit_code"] == 0 and not srow["signal"]:
                    inconsistent.append(srow["JobID"])
                    srow["exit_code"] = srow["signal"] = srow["ExitCode"] = None
                rows.append(srow)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise SacctParseError(
                source, None, f"a sacct --json job record at {where} ({type(exc).__name__}: {exc})"
            ) from exc
    if inconsistent:
        warnings.warn(
            f"{source}: exit code 0 with state FAILED for {', '.join(inconsistent[:10])}"
            f"{' ...' if len(inconsistent) > 10 else ''} (Slurm {version} JSON); exit_code set to null",
            SacctWarning,
            stacklevel=2,
        )

    raw_names = [
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
    ]
    raw = pl.DataFrame(
        {n: pl.Series(n, [r.get(n) for r in rows], dtype=pl.Utf8) for n in raw_names}
    )
    cols: dict[str, Any] = {}
    for name in list(JOB_COLUMNS) + list(STEP_COLUMNS) + ["user_cpu_s", "system_cpu_s"]:
        if name in ("submit", "start", "end"):
            cols[name] = pl.Series(
                name, [r.get(name) for r in rows], dtype=pl.Datetime("us", "UTC")
            )
        elif name != "gpu_hours":
            cols[name] = [r.get(name) for r in rows]
    return _assemble(
        raw,
        cols,
        meta={
            "format": "json",
            "source": source,
            "slurm_version": version,
            "data_parser": data_parser,
        },
    )


def _json_job_row(job: dict[str, Any]) -> dict[str, Any]:
    job_id = int(_num(job["job_id"]))
    arr = job.get("array") or {}
    task_id = _num(arr.get("task_id"))
    array_job_id = _num(arr.get("job_id"))
    task_spec = arr.get("task") or ""
    het = job.get("het") or {}
    het_job_id = _num(het.get("job_id"))
    het_offset = _num(het.get("job_offset"))
    if task_id is not None and task_id != _NO_VAL and array_job_id:
        kind, jid = "array_task", f"{array_job_id}_{task_id}"
    elif task_spec and array_job_id:
        kind, jid = "array_pending", f"{array_job_id}_[{task_spec.strip('[]')}]"
        task_id = None
    elif het_job_id and het_offset is not None and het_offset != _NO_VAL:
        kind, jid = "het_component", f"{het_job_id}+{het_offset}"
        task_id = None
    else:
        kind, jid = "job", str(job_id)
        task_id = None
    if kind != "het_component":
        het_job_id = het_offset = None
    if kind not in ("array_task", "array_pending"):
        array_job_id = None
    state_obj = job.get("state") or {}
    states = _states(state_obj.get("current") if isinstance(state_obj, dict) else state_obj)
    rc, sig = _exit(job.get("exit_code"))
    t = job.get("time") or {}
    lim_s, lim_flag = _limit(t.get("limit"))
    nodes = expand_nodelist(job.get("nodes"))
    tres = job.get("tres") or {}
    alloc = _tres_string(tres.get("allocated"))
    n_gpus, gpu_type = gpus_from_tres(alloc)
    alloc_t = parse_tres(alloc)
    kill = job.get("kill_request_user")
    elapsed = _num(t.get("elapsed"))
    return {
        "JobID": jid,
        "JobIDRaw": str(job_id),
        "JobName": job.get("name"),
        "User": job.get("user"),
        "Account": job.get("account"),
        "Partition": job.get("partition"),
        "QOS": job.get("qos"),
        "Cluster": job.get("cluster"),
        "State": states[0] if states else None,
        "ExitCode": f"{rc}:{sig}" if rc is not None else None,
        "NodeList": job.get("nodes"),
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
        "cancelled_by_user": kill or None,
        "exit_code": rc,
        "signal": sig,
        "submit": _epoch(t.get("submission")),
        "start": _epoch(t.get("start")),
        "end": _epoch(t.get("end")),
        "elapsed_s": int(elapsed) if elapsed is not None else None,
        "timelimit_s": lim_s,
        "timelimit_flag": lim_flag,
        "n_nodes": _int_or_none(_num(job.get("allocation_nodes"))),
        "nodes": nodes,
        "n_cpus": _int_or_none(alloc_t.get("cpu")),
        "n_gpus": n_gpus,
        "gpu_type": gpu_type,
        "total_cpu_s": _cpu_seconds(t.get("total")),
        "user_cpu_s": _cpu_seconds(t.get("user")),
        "system_cpu_s": _cpu_seconds(t.get("system")),
        "source_line": None,
    }


def _json_step_id(step: dict[str, Any], parent: dict[str, Any]) -> str:
    s = step.get("step") or {}
    sid = s.get("id")
    if isinstance(sid, dict):  # {job_id, step_id} (some 22.05/23.02 builds)
        sid = sid.get("step_id", sid.get("id"))
    if sid is None:
        sid = s.get("step_id")
    if isinstance(sid, str) and "." in sid:
        return sid.split(".", 1)[1]
    if isinstance(sid, (int, float)) or (isinstance(sid, str) and sid.isdigit()):
        sid = int(sid)
        return _SPECIAL_STEPS.get(sid, str(sid))
    if isinstance(sid, str) and sid:
        return sid
    raise ValueError(f"step id missing or of unknown shape: {s!r}")


def _json_step_row(step: dict[str, Any], parent: dict[str, Any]) -> dict[str, Any]:
    sid = _json_step_id(step, parent)
    het_comp = _num(((step.get("step") or {}).get("het") or {}).get("component"))
    if het_comp is not None and het_comp != _NO_VAL and "+" not in sid:
        sid = f"{sid}+{het_comp}"
    t = step.get("time") or {}
    states = _states(step.get("state"))
    rc, sig = _exit(step.get("exit_code"))
    nodes_obj = step.get("nodes")
    if isinstance(nodes_obj, dict):
        node_text = nodes_obj.get("range")
        if node_text is None and isinstance(nodes_obj.get("list"), list):
            node_text = ",".join(nodes_obj["list"])
        n_nodes = _int_or_none(_num(nodes_obj.get("count")))
    else:
        node_text, n_nodes = nodes_obj, None
    nodes = expand_nodelist(node_text)
    if n_nodes is None and node_text is not None:
        n_nodes = len(nodes)
    tres = step.get("tres") or {}
    alloc = _tres_string(tres.get("allocated")) if isinstance(tres, dict) else None
    n_gpus, gpu_type = gpus_from_tres(alloc)
    elapsed = _num(t.get("elapsed"))
    return {
        "JobID": f"{parent['JobID']}.{sid}",
        "JobIDRaw": f"{parent['JobIDRaw']}.{sid}",
        "JobName": (step.get("step") or {}).get("name"),
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
        "cancelled_by_user": step.get("kill_request_user") or None,
        "exit_code": rc,
        "signal": sig,
        "submit": None,
        "start": _epoch(t.get("start")),
        "end": _epoch(t.get("end")),
        "elapsed_s": int(elapsed) if elapsed is not None else None,
        "timelimit_s": None,
        "timelimit_flag": None,
        "n_nodes": n_nodes,
        "nodes": nodes,
        "n_cpus": _int_or_none(parse_tres(alloc).get("cpu")),
        "n_gpus": n_gpus,
        "gpu_type": gpu_type,
        "total_cpu_s": _cpu_seconds(t.get("total")),
        "user_cpu_s": _cpu_seconds(t.get("user")),
        "system_cpu_s": _cpu_seconds(t.get("system")),
        "source_line": None,
        "parent_job_id": parent["JobID"],
        "step_id": sid,
        "step_kind": _step_kind(sid),
    }


def read_sacct(path: str | Path, **kwargs: Any) -> SacctData:
    """Read a sacct dump, choosing :func:`read_sacct_json` or :func:`read_sacct_parsable`.

    A file whose first non-blank character is ``{`` (or whose name ends in ``.json``) is JSON;
    anything else is parsable text and ``kwargs`` (``fields``, ``delimiter``, ``tz``) go to
    :func:`read_sacct_parsable`.

    Raises:
        SacctParseError: see the two readers.
    """
    p = Path(path)
    head = p.read_bytes()[:4096].decode("utf-8", errors="replace").lstrip()
    if p.suffix.lower() == ".json" or head.startswith("{"):
        return read_sacct_json(p)
    return read_sacct_parsable(p, **kwargs)


# ------------------------------------------------------------------------------------------------
# job statistics
# ------------------------------------------------------------------------------------------------


def size_bin(n_nodes: pl.Expr | str = "n_nodes") -> pl.Expr:
    """Expression giving the job-size bin (:data:`SIZE_BINS`, an ordered ``Enum``) of a node count.

    1 → ``"1"``, 2 → ``"2"``, 3–4 → ``"3-4"``, 5–16 → ``"5-16"``, 17–32 → ``"17-32"``, 33+ → ``">32"``;
    null or < 1 → null.
    """
    n = pl.col(n_nodes) if isinstance(n_nodes, str) else n_nodes
    expr = pl.when(n.is_null() | (n < 1)).then(None)
    for edge, label in zip(_SIZE_EDGES, SIZE_BINS, strict=False):
        expr = expr.when(n <= edge).then(pl.lit(label))
    return expr.otherwise(pl.lit(SIZE_BINS[-1])).cast(SIZE_BIN_DTYPE)


def _finished(jobs: pl.DataFrame) -> pl.DataFrame:
    return jobs.filter(pl.col("state").is_in(list(FINAL_STATES)))


def _successful_expr() -> pl.Expr:
    return (pl.col("state") == "COMPLETED") & (pl.col("exit_code").fill_null(0) == 0)


def successful_jobs(jobs: pl.DataFrame) -> pl.DataFrame:
    """Total number of successful jobs.

    A job row (job, array task or het component) is successful when its state is ``COMPLETED`` and its
    exit code is 0 (or unknown). Only finished records count (state in ``FINAL_STATES``).

    Returns:
        One row: ``n_jobs`` (UInt32/Int64, finished job rows), ``n_successful`` (Int64),
        ``successful_share`` (Float64, 0–1), ``successful_gpu_hours`` (Float64, GPU·h).
    """
    f = _finished(jobs)
    n = f.height
    ok = f.filter(_successful_expr())
    return pl.DataFrame(
        {
            "n_jobs": [n],
            "n_successful": [ok.height],
            "successful_share": [ok.height / n if n else None],
            "successful_gpu_hours": [float(ok.get_column("gpu_hours").sum() or 0.0)],
        },
        schema={
            "n_jobs": pl.Int64,
            "n_successful": pl.Int64,
            "successful_share": pl.Float64,
            "successful_gpu_hours": pl.Float64,
        },
    )


_LONGEST_SCHEMA = {
    "what": pl.Utf8,
    "JobID": pl.Utf8,
    "name": pl.Utf8,
    "state": pl.Utf8,
    "n_nodes": pl.Int64,
    "n_gpus": pl.Int64,
    "start": pl.Datetime("us", "UTC"),
    "end": pl.Datetime("us", "UTC"),
    "elapsed_s": pl.Int64,
    "elapsed_days": pl.Float64,
}


def longest_job_and_task(jobs: pl.DataFrame, steps: pl.DataFrame | None = None) -> pl.DataFrame:
    """The longest job and the longest task.

    *Job*: the job row (job, array task or het component) with the largest ``elapsed_s``.
    *Task*: the job step started by ``srun`` (``step_kind == "srun"``, i.e. not ``.batch``/``.extern``)
    with the largest ``elapsed_s``. Ties: the earliest start.

    Returns:
        Up to two rows with columns ``what`` ("job" / "task"), ``JobID``, ``name``, ``state``,
        ``n_nodes``, ``n_gpus``, ``start``, ``end`` (Datetime UTC), ``elapsed_s`` (Int64),
        ``elapsed_days`` (Float64, ``elapsed_s / 86400``).
    """
    out = []
    for what, df in (("job", jobs), ("task", steps)):
        if df is None:
            continue
        if what == "task":
            df = df.filter(pl.col("step_kind") == "srun")
        df = df.filter(pl.col("elapsed_s").is_not_null())
        if df.height == 0:
            continue
        best = df.sort(["elapsed_s", "start"], descending=[True, False], nulls_last=True).head(1)
        out.append(
            best.select(
                what=pl.lit(what),
                JobID=pl.col("JobID") if "JobID" in best.columns else pl.lit(None, pl.Utf8),
                name=pl.col("JobName") if "JobName" in best.columns else pl.lit(None, pl.Utf8),
                state=pl.col("state"),
                n_nodes=pl.col("n_nodes"),
                n_gpus=pl.col("n_gpus"),
                start=pl.col("start"),
                end=pl.col("end"),
                elapsed_s=pl.col("elapsed_s"),
                elapsed_days=pl.col("elapsed_s") / 86400.0,
            ).cast(_LONGEST_SCHEMA)
        )
    return pl.concat(out) if out else pl.DataFrame(schema=_LONGEST_SCHEMA)


def runtime_distribution(
    jobs: pl.DataFrame,
    quantiles: Sequence[float] = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0),
    *,
    successful_only: bool = True,
    by_size: bool = False,
) -> pl.DataFrame:
    """Quantiles of the run time (``elapsed_s``) of successful jobs (or of all finished jobs).

    Quantiles use linear interpolation between order statistics.

    Returns:
        Columns ``size_bin`` (Enum, only with ``by_size``), ``quantile`` (Float64, 0–1), ``n_jobs``
        (Int64), ``elapsed_s`` (Float64 seconds), ``elapsed_h`` (Float64 hours).
    """
    df = _finished(jobs).filter(pl.col("elapsed_s").is_not_null())
    if successful_only:
        df = df.filter(_successful_expr())
    keys = ["size_bin"] if by_size else []
    if by_size:
        df = df.with_columns(size_bin=size_bin("n_nodes"))
    parts = []
    groups = df.partition_by(keys, as_dict=True, maintain_order=True) if keys else {(): df}
    for key, g in groups.items():
        vals = g.get_column("elapsed_s").cast(pl.Float64)
        for q in quantiles:
            row = {"quantile": float(q), "n_jobs": g.height}
            row["elapsed_s"] = vals.quantile(q, interpolation="linear") if g.height else None
            if by_size:
                row["size_bin"] = key[0]
            parts.append(row)
    schema = {"quantile": pl.Float64, "n_jobs": pl.Int64, "elapsed_s": pl.Float64}
    if by_size:
        schema = {"size_bin": SIZE_BIN_DTYPE, **schema}
    out = pl.DataFrame(parts, schema=schema) if parts else pl.DataFrame(schema=schema)
    out = out.with_columns(elapsed_h=pl.col("elapsed_s") / 3600.0)
    return out.sort(keys + ["quantile"]) if keys else out


_DEFAULT_EDGES_S = (0, 60, 600, 3600, 6 * 3600, 86400, 3 * 86400, 7 * 86400, 14 * 86400, 30 * 86400)


def runtime_histogram(
    jobs: pl.DataFrame,
    edges_s: Sequence[float] = _DEFAULT_EDGES_S,
    *,
    successful_only: bool = True,
) -> pl.DataFrame:
    """Counts of job run times in bins ``[lo, hi)`` (seconds); the last bin is ``[last edge, ∞)``.

    Returns:
        Columns ``bin_lo_s`` (Float64), ``bin_hi_s`` (Float64, null for the open last bin),
        ``n_jobs`` (Int64), ``job_share`` (Float64, 0–1 of the counted jobs).
    """
    edges = sorted(float(e) for e in edges_s)
    df = _finished(jobs).filter(pl.col("elapsed_s").is_not_null())
    if successful_only:
        df = df.filter(_successful_expr())
    vals = df.get_column("elapsed_s").to_list()
    total = len(vals)
    rows = []
    for k, lo in enumerate(edges):
        hi = edges[k + 1] if k + 1 < len(edges) else None
        cnt = sum(1 for v in vals if v >= lo and (hi is None or v < hi))
        rows.append(
            {
                "bin_lo_s": lo,
                "bin_hi_s": hi,
                "n_jobs": cnt,
                "job_share": cnt / total if total else None,
            }
        )
    return pl.DataFrame(
        rows,
        schema={
            "bin_lo_s": pl.Float64,
            "bin_hi_s": pl.Float64,
            "n_jobs": pl.Int64,
            "job_share": pl.Float64,
        },
    )


def _shares(df: pl.DataFrame, key: str) -> pl.DataFrame:
    total_jobs = df.height
    total_gh = float(df.get_column("gpu_hours").fill_null(0).sum() or 0.0)
    out = df.group_by(key).agg(
        n_jobs=pl.len().cast(pl.Int64),
        gpu_hours=pl.col("gpu_hours").fill_null(0).sum().cast(pl.Float64),
        n_unknown_gpu_hours=pl.col("gpu_hours").is_null().sum().cast(pl.Int64),
    )
    return out.with_columns(
        job_share=pl.col("n_jobs") / total_jobs if total_jobs else pl.lit(None, pl.Float64),
        gpu_hours_share=pl.col("gpu_hours") / total_gh
        if total_gh > 0
        else pl.lit(None, pl.Float64),
    )


def share_by_state(jobs: pl.DataFrame, *, final_only: bool = True) -> pl.DataFrame:
    """Share of jobs and of GPU-hours by final state.

    Args:
        final_only: keep only records in a final state (drops RUNNING, PENDING, ...).

    Returns:
        One row per ``state`` (Utf8), sorted by ``gpu_hours`` descending: ``n_jobs`` (Int64),
        ``job_share`` (Float64, 0–1), ``gpu_hours`` (Float64, GPU·h; unknown counted as 0),
        ``gpu_hours_share`` (Float64, 0–1), ``n_unknown_gpu_hours`` (Int64, rows whose GPU-hours are
        unknown).
    """
    df = _finished(jobs) if final_only else jobs
    out = _shares(df, "state")
    return out.select(
        "state", "n_jobs", "job_share", "gpu_hours", "gpu_hours_share", "n_unknown_gpu_hours"
    ).sort(["gpu_hours", "n_jobs", "state"], descending=[True, True, False])


def share_by_size(jobs: pl.DataFrame, *, final_only: bool = True) -> pl.DataFrame:
    """Share of jobs and GPU-hours by job size in nodes (:data:`SIZE_BINS`).

    Returns:
        One row per ``size_bin`` (Enum, in bin order; bins without jobs have 0): ``n_jobs`` (Int64),
        ``job_share``, ``gpu_hours`` (GPU·h), ``gpu_hours_share``, ``cum_job_share``,
        ``cum_gpu_hours_share`` (Float64, running totals from the smallest bin: e.g. the share of
        jobs with ≤ 4 nodes is ``cum_job_share`` at ``"3-4"``), ``n_unknown_gpu_hours`` (Int64).
        Rows without a node count are left out.
    """
    df = (_finished(jobs) if final_only else jobs).with_columns(size_bin=size_bin("n_nodes"))
    df = df.filter(pl.col("size_bin").is_not_null())
    agg = _shares(df, "size_bin")
    full = pl.DataFrame({"size_bin": pl.Series(SIZE_BINS, dtype=SIZE_BIN_DTYPE)}).join(
        agg, on="size_bin", how="left"
    )
    full = full.with_columns(
        pl.col("n_jobs", "n_unknown_gpu_hours").fill_null(0),
        pl.col("gpu_hours", "job_share", "gpu_hours_share").fill_null(0.0),
    ).sort("size_bin")
    return full.with_columns(
        cum_job_share=pl.col("job_share").cum_sum(),
        cum_gpu_hours_share=pl.col("gpu_hours_share").cum_sum(),
    ).select(
        "size_bin",
        "n_jobs",
        "job_share",
        "gpu_hours",
        "gpu_hours_share",
        "cum_job_share",
        "cum_gpu_hours_share",
        "n_unknown_gpu_hours",
    )


def runtime_tails_by_size(
    jobs: pl.DataFrame,
    quantiles: Sequence[float] = (0.5, 0.9, 0.99),
    over_days: Sequence[float] = (1, 7),
    *,
    final_only: bool = True,
) -> pl.DataFrame:
    """Run-time tails per job-size bin.

    Returns:
        One row per ``size_bin`` (Enum) with jobs: ``n_jobs`` (Int64), ``elapsed_p{100q}_s`` (Float64,
        linear interpolation; e.g. ``elapsed_p50_s``, ``elapsed_p99_s``), ``elapsed_max_s`` (Int64) and
        ``share_over_{d}d`` (Float64, 0–1: share of the bin's jobs with ``elapsed_s`` **strictly
        greater** than ``d`` days, e.g. ``share_over_7d`` = "ran for more than a week").
    """
    df = (_finished(jobs) if final_only else jobs).filter(pl.col("elapsed_s").is_not_null())
    df = df.with_columns(size_bin=size_bin("n_nodes")).filter(pl.col("size_bin").is_not_null())
    aggs = [pl.len().cast(pl.Int64).alias("n_jobs")]
    for q in quantiles:
        label = f"{q * 100:g}".replace(".", "_")
        aggs.append(
            pl.col("elapsed_s")
            .cast(pl.Float64)
            .quantile(q, interpolation="linear")
            .alias(f"elapsed_p{label}_s")
        )
    aggs.append(pl.col("elapsed_s").max().cast(pl.Int64).alias("elapsed_max_s"))
    for d in over_days:
        label = f"{d:g}".replace(".", "_")
        aggs.append(
            (pl.col("elapsed_s") > d * 86400).mean().cast(pl.Float64).alias(f"share_over_{label}d")
        )
    return df.group_by("size_bin").agg(aggs).sort("size_bin")


def gpu_hours_over_time(
    jobs: pl.DataFrame,
    every: str = "1d",
    *,
    by_size: bool = True,
    final_only: bool = False,
) -> pl.DataFrame:
    """GPU-hours per time period (and job-size bin), each job split over the periods it overlaps.

    A job occupies ``[start, end)``; for a running job (``end`` null) ``end = start + elapsed_s``.
    Its GPU-hours in a period are ``n_gpus × overlap / 3600``. Periods are UTC calendar periods of
    length ``every`` (a polars duration string: ``"1h"``, ``"1d"``, ``"1w"``, ``"1mo"``).
    Jobs without start, GPUs or end are left out. The sum over periods equals ``n_gpus × (end - start)``,
    which differs from ``gpu_hours`` only for suspended jobs.

    Returns:
        Columns ``period_start`` (Datetime UTC), ``size_bin`` (Enum, with ``by_size``),
        ``gpu_hours`` (Float64, GPU·h), ``n_jobs`` (Int64, jobs overlapping the period), sorted.
    """
    df = _finished(jobs) if final_only else jobs
    df = df.with_columns(
        _end=pl.coalesce(pl.col("end"), pl.col("start") + pl.duration(seconds=pl.col("elapsed_s")))
    ).filter(
        pl.col("start").is_not_null()
        & pl.col("_end").is_not_null()
        & (pl.col("_end") > pl.col("start"))
        & (pl.col("n_gpus").fill_null(0) > 0)
    )
    keys = ["period_start"] + (["size_bin"] if by_size else [])
    schema = {"period_start": pl.Datetime("us", "UTC")}
    if by_size:
        schema["size_bin"] = SIZE_BIN_DTYPE
    schema.update({"gpu_hours": pl.Float64, "n_jobs": pl.Int64})
    if df.height == 0:
        return pl.DataFrame(schema=schema)
    df = df.with_columns(size_bin=size_bin("n_nodes")).with_columns(
        period_start=pl.datetime_ranges(
            pl.col("start").dt.truncate(every), pl.col("_end"), interval=every, closed="left"
        )
    )
    df = df.explode("period_start").with_columns(
        period_end=pl.col("period_start").dt.offset_by(every)
    )
    overlap = (
        pl.min_horizontal("period_end", "_end") - pl.max_horizontal("period_start", "start")
    ).dt.total_microseconds() / 3.6e9
    df = df.with_columns(gpu_hours=pl.col("n_gpus") * overlap).filter(pl.col("gpu_hours") > 0)
    out = df.group_by(keys).agg(gpu_hours=pl.col("gpu_hours").sum(), n_jobs=pl.len().cast(pl.Int64))
    return out.sort(keys).cast(schema)


# ------------------------------------------------------------------------------------------------
# several dumps, published marginals, summary, ECDF, occupancy
# ------------------------------------------------------------------------------------------------


def read_sacct_dumps(
    paths: str | Path | Sequence[str | Path],
    *,
    format: str = "auto",  # noqa: A002 (the notebook parameter's name)
    tz: str = "UTC",
    **kwargs: Any,
) -> SacctData:
    """Read one or more sacct dumps and merge them.

    Args:
        paths: a path or a list of paths (e.g. one dump per month).
        format: ``"auto"`` (:func:`read_sacct` decides per file), ``"parsable2"`` or ``"json"``.
        tz: zone of the host that ran sacct, for parsable2 dumps with ISO times (see
            :func:`parse_sacct_parsable`).
        kwargs: passed to :func:`read_sacct_parsable` (``fields``, ``delimiter``).

    Returns:
        :class:`SacctData` with the rows of all dumps (frames concatenated diagonally: a sacct column
        missing from one dump is null there). A record present in several dumps (same ``JobID``;
        windows that overlap) is kept once, from the **last** dump that has it, since later dumps
        see later states. ``meta`` has ``format`` (one value, or ``"mixed"``), ``sources`` (list)
        and ``n_duplicates_dropped``.

    Raises:
        ValueError: unknown ``format`` or an empty list of paths.
        SacctParseError: from the readers, naming the file and line.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    paths = [Path(p) for p in paths]
    if not paths:
        raise ValueError("no sacct dump paths given")
    fmt = format.lower()
    if fmt not in ("auto", "parsable2", "parsable", "json"):
        raise ValueError(f"format must be 'auto', 'parsable2' or 'json', not {format!r}")
    parts: list[SacctData] = []
    for p in paths:
        if fmt == "json":
            parts.append(read_sacct_json(p))
        elif fmt in ("parsable2", "parsable"):
            parts.append(read_sacct_parsable(p, tz=tz, **kwargs))
        else:
            parts.append(read_sacct(p, tz=tz, **kwargs))
    if len(parts) == 1:
        d = parts[0]
        meta = dict(d.meta, sources=[str(paths[0])], n_duplicates_dropped=0)
        return SacctData(jobs=d.jobs, steps=d.steps, meta=meta)

    def merge(frames: list[pl.DataFrame]) -> tuple[pl.DataFrame, int]:
        tagged = [f.with_columns(_dump=pl.lit(i)) for i, f in enumerate(frames)]
        df = pl.concat(tagged, how="diagonal_relaxed")
        n = df.height
        df = df.unique(subset=["JobID"], keep="last", maintain_order=True).drop("_dump")
        return df, n - df.height

    jobs, dj = merge([d.jobs for d in parts])
    steps, ds = merge([d.steps for d in parts])
    formats = {d.meta.get("format") for d in parts}
    meta = {
        "format": formats.pop() if len(formats) == 1 else "mixed",
        "sources": [str(p) for p in paths],
        "n_duplicates_dropped": dj + ds,
    }
    return SacctData(jobs=jobs, steps=steps, meta=meta)


#: Workload marginals published for SAKURAONE (9 months, 2024-06 to 2025-03), shares 0-1, keyed by the
#: metric names of :func:`workload_marginals`. Source: Konishi, Tsubouchi, Tsuruta, "SAKURAONE ...
#: Observed Workload Dynamics ...", MLSys 2026 Industry Track (arXiv 2604.13600), as relayed in
#: ``/work/shared/research/sakuraone_paper.md`` §4.1 (to be checked against the paper's tables).
SAKURAONE_MARGINALS: dict[str, float] = {
    "cancelled_gpu_hours_share": 0.735,
    "failed_job_share": 0.169,
    "failed_gpu_hours_share": 0.003,
    "nodes_1_job_share": 0.769,
    "nodes_1_gpu_hours_share": 0.018,
    "nodes_le4_job_share": 0.864,
    "nodes_le4_gpu_hours_share": 0.046,
    "nodes_ge17_job_share": 0.033,
    "nodes_ge17_gpu_hours_share": 0.733,
    "nodes_17_32_over_7d_share": 0.136,
}

_MARGINAL_TEXT = {
    "cancelled_gpu_hours_share": "GPU-hours of CANCELLED jobs",
    "failed_job_share": "jobs that FAILED",
    "failed_gpu_hours_share": "GPU-hours of FAILED jobs",
    "nodes_1_job_share": "jobs on 1 node",
    "nodes_1_gpu_hours_share": "GPU-hours of 1-node jobs",
    "nodes_le4_job_share": "jobs on at most 4 nodes",
    "nodes_le4_gpu_hours_share": "GPU-hours of jobs on at most 4 nodes",
    "nodes_ge17_job_share": "jobs on 17 or more nodes",
    "nodes_ge17_gpu_hours_share": "GPU-hours of jobs on 17 or more nodes",
    "nodes_17_32_over_7d_share": "17-32-node jobs that ran more than 7 days",
}


def workload_marginals(
    jobs: pl.DataFrame, published: dict[str, float] | None = None
) -> pl.DataFrame:
    """The workload shares the SAKURAONE study publishes, computed from a ``jobs`` frame.

    Shares are over finished job records (states in :data:`FINAL_STATES`), as in
    :func:`share_by_state`, :func:`share_by_size` and :func:`runtime_tails_by_size`; job-size shares
    leave out records without a node count.

    Args:
        published: values to put beside (default :data:`SAKURAONE_MARGINALS`; ``{}`` for none).

    Returns:
        One row per metric of :data:`SAKURAONE_MARGINALS`, in that order: ``metric`` (Utf8),
        ``description`` (Utf8), ``value`` (Float64, 0-1; null when the data have no such jobs),
        ``published`` (Float64, 0-1 or null), ``difference_pp`` (Float64, percentage points,
        ``100 * (value - published)``).
    """
    published = SAKURAONE_MARGINALS if published is None else published
    st = {r["state"]: r for r in share_by_state(jobs).iter_rows(named=True)}
    sz = {str(r["size_bin"]): r for r in share_by_size(jobs).iter_rows(named=True)}
    tails = {
        str(r["size_bin"]): r
        for r in runtime_tails_by_size(jobs, quantiles=(), over_days=(7,)).iter_rows(named=True)
    }

    def get(d: dict, key: str, col: str) -> float | None:
        r = d.get(key)
        return None if r is None else r[col]

    def total(cols: Sequence[str], col: str) -> float | None:
        vals = [get(sz, c, col) for c in cols]
        return None if not sz else float(sum(v or 0.0 for v in vals))

    values = {
        "cancelled_gpu_hours_share": get(st, "CANCELLED", "gpu_hours_share") if st else None,
        "failed_job_share": (get(st, "FAILED", "job_share") or 0.0) if st else None,
        "failed_gpu_hours_share": (get(st, "FAILED", "gpu_hours_share") or 0.0) if st else None,
        "nodes_1_job_share": total(["1"], "job_share"),
        "nodes_1_gpu_hours_share": total(["1"], "gpu_hours_share"),
        "nodes_le4_job_share": total(["1", "2", "3-4"], "job_share"),
        "nodes_le4_gpu_hours_share": total(["1", "2", "3-4"], "gpu_hours_share"),
        "nodes_ge17_job_share": total(["17-32", ">32"], "job_share"),
        "nodes_ge17_gpu_hours_share": total(["17-32", ">32"], "gpu_hours_share"),
        "nodes_17_32_over_7d_share": get(tails, "17-32", "share_over_7d"),
    }
    rows = []
    for key in SAKURAONE_MARGINALS:
        v, p = values[key], published.get(key)
        rows.append(
            {
                "metric": key,
                "description": _MARGINAL_TEXT[key],
                "value": v,
                "published": p,
                "difference_pp": 100.0 * (v - p) if v is not None and p is not None else None,
            }
        )
    return pl.DataFrame(
        rows,
        schema={
            "metric": pl.Utf8,
            "description": pl.Utf8,
            "value": pl.Float64,
            "published": pl.Float64,
            "difference_pp": pl.Float64,
        },
    )


def accounting_summary(jobs: pl.DataFrame, steps: pl.DataFrame | None = None) -> pl.DataFrame:
    """One-row overview of a dump: period, counts, GPU-hours and successful jobs.

    Returns:
        Columns ``first_start``, ``last_end`` (Datetime UTC), ``n_job_records`` (Int64, all job
        rows), ``n_finished`` (Int64, rows in a final state), ``n_successful`` (Int64, COMPLETED with
        exit code 0, see :func:`successful_jobs`), ``successful_share`` (Float64, of finished),
        ``n_array_tasks`` (Int64), ``n_never_started`` (Int64, finished without a start time),
        ``n_users`` (Int64, distinct ``User``; null without that column), ``n_steps`` (Int64; null
        without ``steps``), ``gpu_hours`` (Float64, GPU·h of finished jobs) and
        ``successful_gpu_hours`` (Float64).
    """
    ok = successful_jobs(jobs).row(0, named=True)
    fin = _finished(jobs)
    return pl.DataFrame(
        {
            "first_start": [jobs.get_column("start").min()],
            "last_end": [jobs.get_column("end").max()],
            "n_job_records": [jobs.height],
            "n_finished": [fin.height],
            "n_successful": [ok["n_successful"]],
            "successful_share": [ok["successful_share"]],
            "n_array_tasks": [int((jobs.get_column("kind") == "array_task").sum())],
            "n_never_started": [int(fin.get_column("start").is_null().sum())],
            "n_users": [jobs.get_column("User").n_unique() if "User" in jobs.columns else None],
            "n_steps": [steps.height if steps is not None else None],
            "gpu_hours": [float(fin.get_column("gpu_hours").fill_null(0).sum() or 0.0)],
            "successful_gpu_hours": [ok["successful_gpu_hours"]],
        },
        schema={
            "first_start": pl.Datetime("us", "UTC"),
            "last_end": pl.Datetime("us", "UTC"),
            "n_job_records": pl.Int64,
            "n_finished": pl.Int64,
            "n_successful": pl.Int64,
            "successful_share": pl.Float64,
            "n_array_tasks": pl.Int64,
            "n_never_started": pl.Int64,
            "n_users": pl.Int64,
            "n_steps": pl.Int64,
            "gpu_hours": pl.Float64,
            "successful_gpu_hours": pl.Float64,
        },
    )


def runtime_ecdf(
    jobs: pl.DataFrame, *, successful_only: bool = True, by_size: bool = True
) -> pl.DataFrame:
    """Empirical CDF of job run times (for plotting on a log time axis).

    Jobs with ``elapsed_s`` null or 0 (never ran) are left out, since a log axis cannot show them.

    Returns:
        Columns ``group`` (Utf8: ``"all sizes"`` plus, with ``by_size``, the size bins as
        ``"1 node"``, ``"2 nodes"``, ``"3-4 nodes"``...), ``elapsed_s`` (Float64 seconds, sorted within
        a group), ``elapsed_h`` (Float64 hours), ``ecdf`` (Float64, share of the group's jobs with a run
        time <= ``elapsed_s``), ``n_jobs`` (Int64, jobs in the group).
    """
    df = _finished(jobs).filter(pl.col("elapsed_s").fill_null(0) > 0)
    if successful_only:
        df = df.filter(_successful_expr())
    df = df.select(pl.col("elapsed_s").cast(pl.Float64), size_bin=size_bin("n_nodes"))
    groups = [df.with_columns(group=pl.lit("all sizes"))]
    if by_size:
        label = pl.col("size_bin").cast(pl.Utf8) + pl.when(pl.col("size_bin") == "1").then(
            pl.lit(" node")
        ).otherwise(pl.lit(" nodes"))
        groups.append(df.filter(pl.col("size_bin").is_not_null()).with_columns(group=label))
    out = pl.concat(groups).sort(["group", "elapsed_s"])
    out = out.with_columns(
        n_jobs=pl.len().over("group").cast(pl.Int64),
        _rank=pl.int_range(1, pl.len() + 1).over("group"),
    ).with_columns(ecdf=pl.col("_rank") / pl.col("n_jobs"))
    return out.select(
        pl.col("group"),
        "elapsed_s",
        elapsed_h=pl.col("elapsed_s") / 3600.0,
        ecdf=pl.col("ecdf").cast(pl.Float64),
        n_jobs="n_jobs",
    )


def cluster_occupancy(
    jobs: pl.DataFrame, *, cluster_nodes: int, gpus_per_node: int, every: str = "1mo"
) -> pl.DataFrame:
    """Allocated GPU-hours per period against the cluster's capacity.

    Args:
        cluster_nodes, gpus_per_node: the cluster (e.g. 100 and 8).
        every: polars duration string of the periods (``"1d"``, ``"1w"``, ``"1mo"``).

    Returns:
        Columns ``period_start`` (Datetime UTC), ``period_end`` (Datetime UTC), ``gpu_hours``
        (Float64, from :func:`gpu_hours_over_time`, all jobs incl. running ones),
        ``capacity_gpu_hours`` (Float64, ``cluster_nodes * gpus_per_node * period hours``) and
        ``occupancy`` (Float64, 0-1: allocated, not utilised; above 1 means the dump and the cluster
        size disagree).

    Raises:
        ValueError: a non-positive cluster size.
    """
    if cluster_nodes <= 0 or gpus_per_node <= 0:
        raise ValueError("cluster_nodes and gpus_per_node must be positive")
    ov = gpu_hours_over_time(jobs, every, by_size=False)
    ov = ov.with_columns(period_end=pl.col("period_start").dt.offset_by(every))
    hours = (pl.col("period_end") - pl.col("period_start")).dt.total_seconds() / 3600.0
    return ov.select(
        "period_start",
        "period_end",
        "gpu_hours",
        capacity_gpu_hours=(hours * cluster_nodes * gpus_per_node).cast(pl.Float64),
    ).with_columns(occupancy=pl.col("gpu_hours") / pl.col("capacity_gpu_hours"))


# ------------------------------------------------------------------------------------------------
# per-job GPU utilisation from DCGM telemetry
# ------------------------------------------------------------------------------------------------

#: DCGM field of the GPU utilisation (NVML "GPU utilization", integer percent 0-100; field id 203).
GPU_UTIL_FIELD = "DCGM_FI_DEV_GPU_UTIL"
_GPU_UTIL_FIELD_ID = 203


def _job_gpu_samples(jobs: pl.DataFrame, dcgm: pl.DataFrame, field: str) -> pl.DataFrame:
    """(JobID, n_nodes, hostname, gpu, timestamp, value) for every sample inside a job's window."""
    for c in ("timestamp", "hostname", "value"):
        if c not in dcgm.columns:
            raise ValueError(f"DCGM frame lacks column {c!r} (see trainperf.dcgm.SCHEMA)")
    for c in ("JobID", "nodes", "start"):
        if c not in jobs.columns:
            raise ValueError(f"jobs frame lacks column {c!r} (see trainperf.slurm.JOB_COLUMNS)")
    sel = pl.col("field") == field if "field" in dcgm.columns else pl.lit(False)
    if field == GPU_UTIL_FIELD and "field_id" in dcgm.columns:
        sel = sel | (pl.col("field_id") == _GPU_UTIL_FIELD_ID)
    gpu = pl.col("gpu") if "gpu" in dcgm.columns else pl.lit(None, pl.Int32)
    samples = dcgm.filter(sel & pl.col("value").is_not_null()).select(
        "timestamp", "hostname", gpu=gpu, value=pl.col("value").cast(pl.Float64)
    )
    end = pl.coalesce(pl.col("end"), pl.col("start") + pl.duration(seconds=pl.col("elapsed_s")))
    win = (
        jobs.filter(pl.col("start").is_not_null())
        .select("JobID", "n_nodes", "nodes", "start", _end=end)
        .filter(pl.col("_end").is_not_null())
        .explode("nodes")
        .rename({"nodes": "hostname"})
        .filter(pl.col("hostname").is_not_null())
        .sort("hostname", "start")
    )
    overlap = win.select(
        (pl.col("start") < pl.col("_end").shift(1).over("hostname")).fill_null(False).any()
    ).item()
    if overlap:
        # shared nodes: every job window on a host gets the host's samples (interval join)
        joined = samples.join(win, on="hostname", how="inner").filter(
            (pl.col("timestamp") >= pl.col("start")) & (pl.col("timestamp") < pl.col("_end"))
        )
    else:
        # exclusive nodes: at most one job per host at a time, so a backward as-of join is exact
        joined = (
            samples.sort("timestamp")
            .join_asof(
                win.sort("start"),
                left_on="timestamp",
                right_on="start",
                by="hostname",
                strategy="backward",
                check_sortedness=False,  # both sides sorted on their key above
            )
            .filter(pl.col("JobID").is_not_null() & (pl.col("timestamp") < pl.col("_end")))
        )
    return joined.select("JobID", "n_nodes", "hostname", "gpu", "timestamp", "value")


def job_gpu_utilisation(
    jobs: pl.DataFrame,
    dcgm: pl.DataFrame,
    *,
    field: str = GPU_UTIL_FIELD,
    low_threshold: float = 20.0,
) -> pl.DataFrame:
    """Per-job GPU utilisation from DCGM samples, joined on the job's nodes and time window.

    A sample (``hostname``, ``gpu``, ``timestamp``, ``value``) belongs to a job when its host is in
    the job's ``nodes`` and ``start <= timestamp < end`` (``end`` of a running job: ``start +
    elapsed_s``). Every GPU of the node is attributed to the job, which is exact for whole-node
    allocations (the usual 8-GPU LLM job); on shared nodes sacct has no GPU index, so a node's GPUs
    are given to every job on it (telemetry_formats.md §A.5, item 3). With regular sampling, a share
    of samples is a share of time: ``low_share`` is the "time below 20 %" of the SAKURAONE study, and
    ``util_mean`` is the per-job mean that Princeton jobstats reports (``avg_over_time`` per GPU,
    averaged over GPUs when every GPU has the same number of samples).

    Args:
        jobs: :attr:`SacctData.jobs` (``JobID``, ``nodes``, ``start``, ``end``, ``elapsed_s``,
            ``n_nodes``).
        dcgm: long DCGM frame (:data:`trainperf.dcgm.SCHEMA`: ``timestamp`` Datetime UTC,
            ``hostname``, ``gpu``, ``field``, ``value``); rows of other fields are ignored.
        field: DCGM field name; the default ``DCGM_FI_DEV_GPU_UTIL`` (also matched by field id 203)
            is in percent 0-100.
        low_threshold: the "low utilisation" bound, in the field's unit (20 = 20 %).

    Returns:
        One row per job with at least one sample, sorted by ``JobID``: ``JobID`` (Utf8), ``n_nodes``
        (Int64), ``n_hosts_seen`` (UInt32/Int64, hosts with samples), ``n_gpus_seen`` (Int64,
        distinct host/GPU pairs), ``n_samples`` (Int64), ``util_median`` (Float64, median over all
        samples), ``util_mean`` (Float64), ``low_share`` (Float64, 0-1, samples ``< low_threshold``).
        Jobs without samples are absent (no telemetry is not zero utilisation).

    Raises:
        ValueError: a frame without the columns named above.
    """
    s = _job_gpu_samples(jobs, dcgm, field)
    out = s.group_by("JobID").agg(
        n_nodes=pl.col("n_nodes").first().cast(pl.Int64),
        n_hosts_seen=pl.col("hostname").n_unique().cast(pl.Int64),
        n_gpus_seen=pl.struct("hostname", "gpu").n_unique().cast(pl.Int64),
        n_samples=pl.len().cast(pl.Int64),
        util_median=pl.col("value").median(),
        util_mean=pl.col("value").mean(),
        low_share=(pl.col("value") < low_threshold).mean().cast(pl.Float64),
    )
    return out.sort("JobID")


def gpu_utilisation_by_size(
    jobs: pl.DataFrame,
    dcgm: pl.DataFrame,
    *,
    field: str = GPU_UTIL_FIELD,
    low_threshold: float = 20.0,
) -> pl.DataFrame:
    """GPU utilisation per job-size bin, over all samples of the bin's jobs (the SAKURAONE table).

    Same join as :func:`job_gpu_utilisation`.

    Returns:
        One row per ``size_bin`` (Enum, :data:`SIZE_BINS` order) with samples: ``n_jobs`` (Int64, jobs
        with samples), ``n_samples`` (Int64), ``util_median`` (Float64), ``low_share`` (Float64, 0-1).
    """
    s = _job_gpu_samples(jobs, dcgm, field).with_columns(size_bin=size_bin("n_nodes"))
    return (
        s.filter(pl.col("size_bin").is_not_null())
        .group_by("size_bin")
        .agg(
            n_jobs=pl.col("JobID").n_unique().cast(pl.Int64),
            n_samples=pl.len().cast(pl.Int64),
            util_median=pl.col("value").median(),
            low_share=(pl.col("value") < low_threshold).mean().cast(pl.Float64),
        )
        .sort("size_bin")
    )


#: Log-spaced run-time bin edges for :func:`runtime_histogram` (seconds): 10 s to 10**6.75 s (65 days),
#: four bins per decade (10, 17.8, 31.6, 56.2, 100, ...).
RUNTIME_EDGES_LOG_S: tuple[float, ...] = tuple(10 ** (1 + k / 4) for k in range(24))
