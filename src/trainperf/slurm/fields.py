"""sacct field grammars: the result type, the column schema and one small parser per sacct value.

Each parser takes one value as sacct prints it and returns Python values or raises ``ValueError``;
the readers (:mod:`trainperf.slurm.parsable`, :mod:`trainperf.slurm.sacct_json`) apply them to whole
columns (:mod:`trainperf.slurm.columns` has the vectorised forms of the per-row ones).
"""

from __future__ import annotations

import bisect
import datetime as _dt
import re
from dataclasses import dataclass, field
from typing import Any

import hostlist
import polars as pl

from trainperf.errors import DataWarning, InputError
from trainperf.quality import QUALITY_SCHEMA, QualityLog, empty_quality
from trainperf.slurm.checks import check_records

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
        quality: the data-quality rows of the input (:data:`trainperf.quality.QUALITY_SCHEMA`:
            one row per source and check that fired, e.g. ``invalid_utf8``, ``bad_value``,
            ``exit_code_unknown``, ``nodes_from_job_resources``); empty when nothing fired. The
            rows a check touched also carry the check's name in their ``data_flags`` column.
    """

    jobs: pl.DataFrame
    steps: pl.DataFrame
    meta: dict[str, Any] = field(default_factory=dict)
    quality: pl.DataFrame = field(default_factory=empty_quality)


#: Slurm job states (https://slurm.schedmd.com/job_state_codes.html).
JOB_STATES = frozenset(
    """BOOT_FAIL CANCELLED COMPLETED COMPLETING CONFIGURING DEADLINE FAILED NODE_FAIL OUT_OF_MEMORY
    PENDING PREEMPTED RUNNING REQUEUED REQUEUE_FED REQUEUE_HOLD RESIZING RESV_DEL_HOLD REVOKED
    SIGNALING SPECIAL_EXIT STAGE_OUT STOPPED SUSPENDED TIMEOUT LAUNCH_FAILED POWER_UP_NODE
    RECONFIG_FAIL UPDATE_DB""".split()
)

#: States whose exit code 0 (``0:0``, JSON ``"SUCCESS"``) is not a clean exit, in either format: Slurm 22.05's JSON (dbv0.0.38)
#: reports ``SUCCESS``/0 for FAILED jobs and steps whose ``sacct -P`` code is non-zero (real fixture,
#: ``tests/data/slurm/real``) and for OUT_OF_MEMORY jobs that ``sacct -P`` shows as ``0:125``; a
#: NODE_FAIL job has no exit status at all (``0:0`` in both formats, real fixture
#: ``tests/data/slurm/real/damage``).
ZERO_EXIT_UNKNOWN = ("FAILED", "OUT_OF_MEMORY", "NODE_FAIL")

# 32-bit sentinels: NO_VAL (0xfffffffe) and INFINITE (0xffffffff) from slurm/slurm.h
NO_VAL = 4294967294
INFINITE = 4294967295
_UNSET_EPOCHS = frozenset({0, NO_VAL, INFINITE})
# step ids that older JSON gives as numbers (slurm/slurm.h: SLURM_PENDING_STEP ... SLURM_INTERACTIVE_STEP)
SPECIAL_STEPS = {
    4294967290: "interactive",
    4294967291: "batch",
    4294967292: "extern",
    4294967293: "pending",
}

# sacct fields whose text is free (user supplied) and may contain the delimiter
FREE_TEXT_FIELDS = frozenset(
    f.lower()
    for f in (
        "JobName AdminComment Comment SystemComment WCKey Reason SubmitLine WorkDir Constraints "
        "Container Extra Licenses StdOut StdErr StdIn FailedNode"
    ).split()
)
CPU_TIME_FIELDS = {
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
    "data_flags": pl.List(pl.Utf8()),
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
    below one hour carry milliseconds) and ``D-HH`` (accepted as input by Slurm).

    >>> parse_duration("2-03:04:05")  # 2 × 86400 + 3 × 3600 + 4 × 60 + 5
    183845.0
    >>> parse_duration("17:18.067")  # 17 × 60 + 18.067
    1038.067
    >>> parse_duration("1-02")  # D-HH
    93600.0
    >>> parse_duration("") is None
    True

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


LIMIT_FLAGS = {
    "UNLIMITED": "UNLIMITED",
    "PARTITION_LIMIT": "Partition_Limit",
    "INVALID": "INVALID",
}


def parse_timelimit(text: str | None) -> tuple[int | None, str | None]:
    """``(seconds, flag)`` for a ``Timelimit`` value.

    ``UNLIMITED`` → ``(None, "UNLIMITED")``; ``Partition_Limit`` (job submitted without a limit, the
    partition's applies) → ``(None, "Partition_Limit")``; ``INVALID`` → ``(None, "INVALID")``;
    ``""`` (steps have no limit) → ``(None, None)``; ``"1-00:00:00"`` → ``(86400, None)``.

    >>> parse_timelimit("1-00:00:00")
    (86400, None)
    >>> parse_timelimit("Partition_Limit")
    (None, 'Partition_Limit')

    Raises:
        ValueError: when the value is neither a duration nor one of these words.
    """
    if text is None or text.strip() == "":
        return None, None
    flag = LIMIT_FLAGS.get(text.strip().upper())
    if flag is not None:
        return None, flag
    secs = parse_duration(text)
    return (None if secs is None else int(round(secs))), None


_STATE_RE = re.compile(r"^(?P<state>[A-Z_]+)(?P<plus>\+)?(?: by (?P<uid>\d+))?$")


def parse_state(text: str | None) -> tuple[str | None, int | None, bool]:
    """``(base state, cancelled-by uid, truncated)`` for a sacct ``State`` value.

    ``"CANCELLED by 0"`` → ``("CANCELLED", 0, False)``; ``"CANCELLED+"`` (fixed-width output cut the
    text) → ``("CANCELLED", None, True)``; ``"COMPLETED"`` → ``("COMPLETED", None, False)``.

    >>> parse_state("CANCELLED by 0")
    ('CANCELLED', 0, False)
    >>> parse_state("CANCELLED+")
    ('CANCELLED', None, True)

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

    >>> parse_exit_code("0:15")
    (0, 15)

    Raises:
        ValueError: when the text is not two colon-separated integers.
    """
    if text is None or text.strip() == "":
        return None, None
    m = re.match(r"^(\d+):(\d+)$", text.strip())
    if not m:
        raise ValueError(f"not an exit code <code>:<signal>: {text!r}")
    return int(m.group(1)), int(m.group(2))


JOBID_RE = re.compile(
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

    >>> p = parse_job_id("39889258_1426.batch")
    >>> p["id"], p["array_task_id"], p["step"], p["parent"], p["kind"]
    (39889258, 1426, 'batch', '39889258_1426', 'step')
    >>> p = parse_job_id("1853+0.0")
    >>> p["het_offset"], p["step"], p["kind"]
    (0, '0', 'step')
    >>> parse_job_id("123_[5-10]")["array_pending"]
    '[5-10]'

    Raises:
        ValueError: for any other form.
    """
    m = JOBID_RE.match(text.strip())
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

    >>> parse_tres("cpu=4,mem=32G,gres/gpu=8,gres/gpu:h100=8")
    {'cpu': '4', 'mem': '32G', 'gres/gpu': '8', 'gres/gpu:h100': '8'}
    >>> parse_tres("")
    {}

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

    >>> gpus_from_tres("cpu=64,gres/gpu=8,gres/gpu:h100=8")  # the same 8 GPUs, recorded twice
    (8, 'h100')
    >>> gpus_from_tres("gres/gpu:a100=2,gres/gpu:h100=4")  # no untyped entry: typed counts summed
    (6, 'a100,h100')
    >>> gpus_from_tres("cpu=4,mem=16G")
    (0, None)

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


# python-hostlist's grammar for the two forms sacct prints most: a bare name, or one prefix with one
# bracketed list of numbers and ranges and nothing after it ("gpu[001-004,007]")
_SIMPLE_HOSTLIST = re.compile(r"^([^,\[\]]*)\[([0-9]+(?:-[0-9]+)?(?:,[0-9]+(?:-[0-9]+)?)*)\]$")


def _expand_simple(t: str) -> list[str] | None:
    """The two common forms expanded as python-hostlist does, or None to ask the library.

    Why not always the library: it costs about 30 µs per host list, the largest per-value cost
    of the reader; this path gives the same names (tests/test_slurm.py compares both on
    generated lists) and leaves every other form, duplicates and huge ranges to the library.
    """
    if "[" not in t and "]" not in t and "," not in t:
        return [t]
    m = _SIMPLE_HOSTLIST.match(t)
    if m is None:
        return None
    prefix, body = m.groups()
    out: list[str] = []
    parts = body.split(",")
    for r in parts:
        lo, sep, hi = r.partition("-")
        if not sep:
            out.append(prefix + r)
            continue
        a, b = int(lo), int(hi)
        if b < a or b - a > 10_000:
            return None
        w = len(lo)  # str(i).zfill(w) is f"{i:0{w}d}" for i >= 0, at half the cost
        out.extend([prefix + str(i).zfill(w) for i in range(a, b + 1)])
    # one number or one range cannot repeat a name
    return out if len(parts) == 1 or len(set(out)) == len(out) else None


def expand_nodelist(text: str | None) -> list[str]:
    """Host names of a Slurm host list (``"gpu[001-004,007]"`` → ``gpu001 ... gpu004, gpu007``).

    ``"None assigned"`` (job never started) and ``""`` give ``[]``. Uses python-hostlist (the plain
    and single-bracket forms are expanded the same way without it, for speed).

    >>> expand_nodelist("gpu[001-003,007]")
    ['gpu001', 'gpu002', 'gpu003', 'gpu007']
    >>> expand_nodelist("a[1-2],b3")  # several items: python-hostlist
    ['a1', 'a2', 'b3']
    >>> expand_nodelist("None assigned")
    []

    Raises:
        ValueError: when the text is not a valid host list.
    """
    if text is None:
        return []
    t = text.strip()
    if t == "" or t.lower() in ("none assigned", "(null)"):
        return []
    fast = _expand_simple(t)
    if fast is not None:
        return fast
    try:
        return list(hostlist.expand_hostlist(t))
    except hostlist.BadHostlist as exc:
        raise ValueError(f"not a Slurm host list: {text!r} ({exc})") from None
    except RecursionError:  # python-hostlist recurses once per bracket group
        raise ValueError(
            f"not a Slurm host list (too many bracket groups): {text[:80]!r}"
        ) from None


def parse_epoch(value: Any) -> _dt.datetime | None:
    """Epoch seconds → aware UTC datetime; 0, NO_VAL, INFINITE, None → None.

    Raises:
        ValueError: not a whole number of seconds in 0 .. 2**32 (Slurm's times are 32-bit epochs).
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"not epoch seconds: {value!r}")
    if not (0 <= value < 2**32) or value != int(value):
        raise ValueError(f"epoch seconds out of range 0 .. 2**32: {value!r}")
    v = int(value)
    if v in _UNSET_EPOCHS:
        return None
    return _dt.datetime.fromtimestamp(v, tz=_dt.timezone.utc)  # noqa: UP017 (3.10)


_EXTRA_FLOAT = ("system_cpu_s", "user_cpu_s", "cpu_time_s")


def assemble(
    raw: pl.DataFrame,
    cols: dict[str, Any],
    meta: dict[str, Any],
    quality: pl.DataFrame,
    *,
    record_key: list[str] | None = None,
) -> SacctData:
    """Frames of :class:`SacctData` from the raw sacct columns and the derived values.

    Args:
        raw: sacct-named Utf8 columns, one row per record.
        cols: derived column name → list or Series (:data:`JOB_COLUMNS`, :data:`STEP_COLUMNS`
            and the optional CPU-time floats); a missing name is null. ``data_flags`` missing is
            ``[]`` for every row.
        meta, quality: stored as they are; the rows of :func:`trainperf.slurm.checks.check_records`
            (run here, on every reader's records) are added to ``quality``.
        record_key: passed to :func:`~trainperf.slurm.checks.check_records` (columns that
            determine all the others; ``None``: all of them).
    """
    schema = dict(JOB_COLUMNS)
    schema.update(STEP_COLUMNS)
    extra = sorted(set(_EXTRA_FLOAT) & cols.keys())
    schema.update(dict.fromkeys(extra, pl.Float64))
    n = raw.height
    present, exprs = [], []  # the Series as given; one query casts them and adds the rest
    for name, dtype in schema.items():
        v = cols.get(name)
        if isinstance(v, pl.Series):
            present.append(v.alias(name))
            if v.dtype != dtype:  # a cast of every column cost its pass even where a no-op
                exprs.append(pl.col(name).cast(dtype))
        elif v is not None:
            present.append(pl.Series(name, v, dtype=dtype))
            exprs.append(pl.col(name))
        elif name == "data_flags":
            exprs.append(pl.lit([], dtype=dtype).alias(name))
        else:
            exprs.append(pl.lit(None, dtype=dtype).alias(name))
    derived = pl.DataFrame(present, height=n) if present else pl.DataFrame(height=n)
    df = (
        (pl.concat([raw, derived], how="horizontal") if raw.width else derived)
        .lazy()
        .with_columns(exprs)
        .select(*raw.columns, *schema)
        .with_columns(gpu_hours=pl.col("n_gpus") * pl.col("elapsed_s") / 3600.0)
        .collect(engine="in-memory")
    )
    log = QualityLog(SacctWarning)
    # repeats, ranges, order
    df = check_records(df, str(meta.get("source")), log, record_key=record_key)
    if log.rows:
        quality = pl.concat([quality.cast(QUALITY_SCHEMA), log.frame()])
    is_step = pl.col("kind") == "step"
    jobs = df.filter(~is_step).drop(list(STEP_COLUMNS))
    steps = df.filter(is_step)
    return SacctData(jobs=jobs, steps=steps, meta=meta, quality=quality)


_SURROGATE_RE = re.compile("[\udc80-\udcff]")


def escape_surrogates(text: str) -> str:
    """Lone surrogates of ``surrogateescape`` decoding as ``\\xNN`` text (the original bytes)."""
    return _SURROGATE_RE.sub(lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}", text)


def decode_utf8(data: bytes | str) -> tuple[str, list[int]]:
    """UTF-8 text with every invalid byte written as ``\\xNN``, and the 1-based lines that had one.

    sacct writes job names and other user text as the bytes the user gave, so a name typed in
    Latin-1 or Shift_JIS is not UTF-8. Replacing such bytes by U+FFFD would lose them and make
    different names equal; ``\\xNN`` keeps them (Python's ``backslashreplace``), and the lines are
    returned so that the reader can flag them. A ``str`` with lone surrogates (decoded with
    ``surrogateescape``) is treated the same way.
    """
    if isinstance(data, bytes):
        try:
            return data.decode("utf-8"), []
        except UnicodeDecodeError:
            text = data.decode("utf-8", errors="surrogateescape")
    else:
        text = data
        if text.isascii() or not _SURROGATE_RE.search(text):
            return text, []
    newlines = [m.start() for m in re.finditer("\n", text)]

    lines = sorted(
        {bisect.bisect_right(newlines, m.start()) + 1 for m in _SURROGATE_RE.finditer(text)}
    )
    return text, lines
