"""``sacct --parsable2`` / ``--parsable`` text → :class:`~trainperf.slurm.fields.SacctData`.

The reader splits records with polars (one pass over all lines; only lines with fewer fields than
the header, which a newline inside a free-text value makes, are handled one by one in Python) and
parses every value column with the vectorised parsers of :mod:`trainperf.slurm.columns`.
"""

from __future__ import annotations

import bisect
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from trainperf.quality import QualityLog
from trainperf.slurm import columns as C
from trainperf.slurm.fields import (
    _CPU_TIME_FIELDS,
    _FREE_TEXT_FIELDS,
    _INFINITE,
    _JOBID_RE,
    _LIMIT_FLAGS,
    _NO_VAL,
    JOB_STATES,
    ZERO_EXIT_UNKNOWN,
    SacctData,
    SacctParseError,
    SacctWarning,
    assemble,
    decode_utf8,
    escape_surrogates,
    expand_nodelist,
    gpus_from_tres,
    parse_exit_code,
    parse_state,
    parse_timelimit,
    parse_tres,
)

__all__ = ["BAD_LINES", "parse_sacct_parsable", "read_sacct_parsable"]

#: What the readers do with a record that cannot be read: ``"raise"`` a :class:`SacctParseError`
#: naming the line, or ``"skip"`` it (left out, with a warning and a data-quality row).
BAD_LINES = ("raise", "skip")

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
    bad_lines: str = "raise",
) -> SacctData:
    """Read a ``sacct --parsable2`` (``-P``) or ``--parsable`` (``-p``) dump from a file.

    Bytes that are not UTF-8 (a job name typed in Latin-1 or Shift_JIS) are kept as ``\\xNN`` text,
    and their lines are flagged (``invalid_utf8``). See :func:`parse_sacct_parsable` for the other
    arguments, the columns and the errors; the file name is used in messages.
    """
    p = Path(path)
    text, bad_utf8 = decode_utf8(p.read_bytes())
    return _parse(
        text,
        fields=fields,
        delimiter=delimiter,
        tz=tz,
        source=str(p),
        bad_lines=bad_lines,
        bad_utf8=bad_utf8,
    )


def parse_sacct_parsable(
    text: str,
    *,
    fields: str | Sequence[str] | None = None,
    delimiter: str = "|",
    tz: str = "UTC",
    source: str = "<text>",
    bad_lines: str = "raise",
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
        bad_lines: ``"raise"`` (default): a record that cannot be read raises; ``"skip"``: it is
            left out with a :class:`SacctWarning` naming the line and a row in ``quality``
            (check ``bad_line`` or ``bad_value``, action ``excluded``).

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
        data_flags                List(Utf8)              data-quality checks that fired on this
                                                          record (``invalid_utf8``,
                                                          ``delimiter_in_free_text``); ``[]`` if none
        parent_job_id (steps)     Utf8                    JobID of the allocation (``123_4`` of
                                                          ``123_4.batch``)
        step_id / step_kind       Utf8                    ``batch``/``extern``/``interactive``/``0``;
                                                          kind ``batch``, ``extern``, ``interactive``,
                                                          ``srun``
        ========================  ======================  ===============================================

        ``UserCPU``, ``SystemCPU`` and ``CPUTime``, when present, add ``user_cpu_s``,
        ``system_cpu_s``, ``cpu_time_s`` (Float64 seconds). A derived column whose source field is
        not in the input is null and a :class:`SacctWarning` names the field. ``quality`` has one
        row per check that fired (:data:`trainperf.quality.QUALITY_SCHEMA`).

    Raises:
        SacctParseError: (a ``ValueError``) naming ``source``, the line and what was expected: no
            header / unknown header, no ``JobID``/``JobIDRaw`` field, a header with fewer fields than
            every data line; with ``bad_lines="raise"`` also a line with fewer fields than the
            header, a line with more fields (a delimiter inside a free-text value such as JobName)
            unless the **last** field is free text (then the surplus is joined back into it), or a
            value that does not parse (duration, time, TRES, state, exit code, host list).
        ValueError: an empty ``delimiter``, an unknown ``bad_lines`` or time zone.

    Sources: https://slurm.schedmd.com/sacct.html (``--parsable2``, ``--delimiter``, ``--noheader``,
    ``SLURM_TIME_FORMAT``, field list), https://slurm.schedmd.com/tres.html.
    """
    text, bad_utf8 = decode_utf8(text)
    return _parse(
        text,
        fields=fields,
        delimiter=delimiter,
        tz=tz,
        source=source,
        bad_lines=bad_lines,
        bad_utf8=bad_utf8,
    )


# ------------------------------------------------------------------------------------------------
# lines → records
# ------------------------------------------------------------------------------------------------


def _parse(
    text: str,
    *,
    fields: str | Sequence[str] | None,
    delimiter: str,
    tz: str,
    source: str,
    bad_lines: str,
    bad_utf8: list[int],
) -> SacctData:
    if delimiter == "":
        raise ValueError("delimiter must not be empty")
    if bad_lines not in BAD_LINES:
        raise ValueError(f"bad_lines must be one of {', '.join(BAD_LINES)}, not {bad_lines!r}")
    quality = QualityLog(SacctWarning)
    if bad_utf8:
        text = escape_surrogates(text)
    lines = pl.Series("text", [text], dtype=pl.Utf8).str.split("\n").explode()
    if lines.len() and lines[-1] == "":
        lines = lines.head(-1)
    lines = lines.str.strip_suffix("\r")
    names, start, header_from_text = _header(lines, fields, delimiter, source)
    rec = _Records(lines, names, delimiter, header_from_text, source, bad_lines, quality)
    raw, line_no, joined = rec.build(start)
    if bad_utf8:
        quality.add(
            source,
            "invalid_utf8",
            "flagged",
            f"bytes that are not UTF-8 on {len(bad_utf8)} line(s), kept as \\xNN text (e.g. in "
            "JobName); the sacct host wrote them as given, so the original encoding is unknown",
            n_lines=len(bad_utf8),
            first_line=bad_utf8[0],
        )
    flags = {"invalid_utf8": bad_utf8, "delimiter_in_free_text": joined}
    return _Derive(raw, line_no, tz=tz, source=source, bad_lines=bad_lines, quality=quality).run(
        flags
    )


def _header(
    lines: pl.Series, fields: str | Sequence[str] | None, delimiter: str, source: str
) -> tuple[list[str], int, bool]:
    """``(field names, index of the first data line, header read from the text)``."""
    start = 0
    if fields is None:
        nonblank = (C.strip(pl.col("text")) != "").alias("nb")
        idx = lines.to_frame().select(nonblank).to_series().arg_true()
        if idx.len() == 0:
            raise SacctParseError(source, None, "a header line of sacct field names", "empty input")
        start = int(idx[0])
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
        start += 1
    else:
        names = _normalise_fields(fields)
        if not names:
            raise ValueError("fields is empty")
    where = start if fields is None else None
    lower = [n.lower() for n in names]
    if len(set(lower)) != len(lower):
        raise SacctParseError(source, where, "distinct field names", delimiter.join(names))
    if "jobid" not in lower and "jobidraw" not in lower:
        raise SacctParseError(source, where, "a JobID or JobIDRaw field", delimiter.join(names))
    return names, start, fields is None


@dataclass
class _Records:
    """Splits data lines into records of ``len(names)`` fields (the old one-line-at-a-time rules)."""

    lines: pl.Series
    names: list[str]
    delimiter: str
    header_from_text: bool
    source: str
    bad_lines: str
    quality: QualityLog
    errors: list[tuple[int, SacctParseError]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.n = len(self.names)
        self.lower = [x.lower() for x in self.names]
        self.last_free = self.lower[-1] in _FREE_TEXT_FIELDS
        self.other_free = [
            self.names[i] for i in range(self.n - 1) if self.lower[i] in _FREE_TEXT_FIELDS
        ]

    def _error_fields(self, lineno: int, parts: list[str], line: str) -> SacctParseError:
        if len(parts) < self.n:
            return SacctParseError(
                self.source,
                lineno,
                f"{self.n} fields separated by {self.delimiter!r} ({self.delimiter.join(self.names)})",
                f"{len(parts)} fields: {line}",
            )
        return SacctParseError(
            self.source,
            lineno,
            f"{self.n} fields ({self.delimiter.join(self.names)}); this line has {len(parts)}, probably "
            f"because a free-text value such as JobName contains the delimiter {self.delimiter!r}. "
            "Re-export with JobName as the last field or with a --delimiter that cannot occur in names",
            line,
        )

    def _finish(self, parts: list[str], lineno: int, line: str) -> tuple[list[str], bool] | None:
        """``(fields, surplus joined)`` after the trailing-delimiter and free-last-field rules, or
        None for a line that cannot be a record (its error is recorded)."""
        if len(parts) == self.n + 1 and parts[-1] == "":
            parts.pop()  # --parsable trailing delimiter
        if len(parts) < self.n or (len(parts) > self.n and not self.last_free):
            self.errors.append((lineno - 1, self._error_fields(lineno, parts, line)))
            return None
        if len(parts) > self.n:
            return parts[: self.n - 1] + [self.delimiter.join(parts[self.n - 1 :])], True
        return parts, False

    def build(self, start: int) -> tuple[pl.DataFrame, pl.Series, list[int]]:
        """``(raw Utf8 frame, 1-based line numbers, lines whose surplus delimiters were joined)``."""
        d, n = self.delimiter, self.n
        frame = self.lines.slice(start).to_frame().with_row_index("idx", offset=start)
        frame = frame.with_columns(
            blank=C.strip(pl.col("text")) == "",
            nparts=pl.col("text").str.count_matches(d, literal=True).cast(pl.Int64) + 1,
            trailing=pl.col("text").str.ends_with(d),
        )
        data = frame.filter(~pl.col("blank")).drop("blank")
        counts = data.get_column("nparts") - data.get_column("trailing").cast(pl.Int64)
        if data.height >= 2 and (extra := int(counts.min()) - n) > 0:
            raise SacctParseError(
                self.source,
                start if self.header_from_text else None,
                f"data lines with the {n} fields of the header ({d.join(self.names)})",
                f"every one of the {data.height} data lines has at least {n + extra} fields: the header "
                f"(or the fields= list) lacks {extra} field(s); re-export with the same --format for "
                "header and data",
            )
        # --parsable: one trailing delimiter (only when it makes the count right, as before)
        fix = pl.col("trailing") & (pl.col("nparts") == n + 1)
        data = data.with_columns(
            text=pl.when(fix).then(pl.col("text").str.strip_suffix(d)).otherwise(pl.col("text")),
            nparts=pl.when(fix).then(pl.col("nparts") - 1).otherwise(pl.col("nparts")),
            raw_text=pl.col("text"),
        )
        drop: set[int] = set()
        if not self.header_from_text:
            for idx, text in data.head(8).select("idx", "raw_text").iter_rows():
                if [x.lower() for x in text.split(d)][:n] != self.lower:
                    break
                drop.add(idx)  # header present although fields were given
        long = data.filter(pl.col("nparts") > n)
        if not self.last_free and long.height:
            for idx, text in long.select("idx", "raw_text").iter_rows():
                self.errors.append((idx, self._error_fields(idx + 1, text.split(d), text)))
            drop.update(long.get_column("idx").to_list())
            long = long.clear()
        patched = self._short_lines(data, drop)
        self._handle_errors()
        regular = data.filter(~pl.col("idx").is_in(list(drop | patched.keys())))
        joined = sorted(
            [
                i + 1
                for i in long.filter(~pl.col("idx").is_in(list(drop))).get_column("idx").to_list()
            ]
            + [i + 1 for i, (_, j) in patched.items() if j]
        )
        if joined:
            note = (
                f"; this assumes {', '.join(self.other_free)} contain no {d!r}"
                if self.other_free
                else ""
            )
            self.quality.add(
                self.source,
                "delimiter_in_free_text",
                "corrected",
                f"{len(joined)} line(s) with more than {n} fields: the extra {d!r} joined back into "
                f"the last field {self.names[-1]}{note}",
                n_lines=len(joined),
                first_line=joined[0],
                warn=bool(self.other_free),
            )
        split = regular.select(
            "idx", pl.col("text").str.splitn(d, n).struct.rename_fields(self.names).alias("f")
        ).unnest("f")
        if patched:
            rows = {
                nm: [patched[i][0][k] for i in sorted(patched)] for k, nm in enumerate(self.names)
            }
            extra_rows = pl.DataFrame(
                {"idx": sorted(patched), **rows},
                schema={"idx": split.schema["idx"], **dict.fromkeys(self.names, pl.Utf8)},
            )
            split = pl.concat([split, extra_rows]).sort("idx")
        line_no = (split.get_column("idx").cast(pl.Int64) + 1).alias("source_line")
        return split.drop("idx"), line_no, joined

    def _short_lines(self, data: pl.DataFrame, drop: set[int]) -> dict[int, tuple[list[str], bool]]:
        """Records made from lines with fewer fields than the header (newlines in free text).

        Follows the rules of the line-by-line reader: a short line that does not start with a JobID
        continues the last field of the previous record when that field is free text; otherwise the
        following lines are appended while the field they continue is free text. Lines taken into
        a record are added to ``drop``.
        """
        n, d = self.n, self.delimiter
        short = data.filter((pl.col("nparts") < n) & ~pl.col("idx").is_in(list(drop)))
        if short.height == 0:
            return {}
        regular_idx = (
            data.filter((pl.col("nparts") >= n) & ~pl.col("idx").is_in(list(drop)))
            .get_column("idx")
            .to_list()
        )
        patched: dict[int, tuple[list[str], bool]] = {}  # idx -> (fields, surplus joined)
        last_rec, consumed_upto = -1, -1
        n_lines = self.lines.len()
        for idx in short.get_column("idx").to_list():
            if idx <= consumed_upto:
                continue
            line = self.lines[idx]
            parts = line.split(d)
            k = bisect.bisect_left(regular_idx, idx) - 1
            prev = regular_idx[k] if k >= 0 and regular_idx[k] > consumed_upto else -1
            target = max(prev, last_rec)
            if target >= 0 and self.last_free and not _JOBID_RE.match(parts[0].strip()):
                # continuation of a newline inside the last (free-text) field of the previous record
                if target not in patched:
                    tl = self.lines[target]
                    done = self._finish(tl.split(d), target + 1, tl)
                    assert done is not None  # a regular line of a free last field always fits
                    patched[target] = (list(done[0]), done[1])
                patched[target][0][-1] += "\n" + line
                drop.add(idx)
                continue
            # a newline inside a free-text value in the middle splits one record over several lines
            j = idx + 1
            while (
                len(parts) < n and j < n_lines and self.lower[len(parts) - 1] in _FREE_TEXT_FIELDS
            ):
                nxt = self.lines[j].split(d)
                parts[-1] = parts[-1] + "\n" + nxt[0]
                parts.extend(nxt[1:])
                j += 1
            done = self._finish(parts, idx + 1, line)
            if done is None:  # error recorded; in "skip" mode the line alone is left out
                drop.add(idx)
                continue
            patched[idx] = done
            last_rec, consumed_upto = idx, max(consumed_upto, j - 1)
            drop.update(range(idx + 1, j))
        return patched

    def _handle_errors(self) -> None:
        if not self.errors:
            return
        self.errors.sort(key=lambda e: e[0])
        if self.bad_lines == "raise":
            raise self.errors[0][1]
        first = self.errors[0][1]
        self.quality.add(
            self.source,
            "bad_line",
            "excluded",
            f"{len(self.errors)} line(s) that cannot be split into records left out; first: "
            f"{first}",
            n_lines=len(self.errors),
            first_line=first.line,
        )


# ------------------------------------------------------------------------------------------------
# records → derived columns
# ------------------------------------------------------------------------------------------------


def _int_or_none(v: Any) -> int | None:
    if v is None:
        return None
    t = str(v).strip()
    return None if t == "" else int(t)


def _raw_limit(v: str) -> tuple[int | None, str | None]:
    """``TimelimitRaw`` (whole minutes, or the 32-bit sentinels) → ``(seconds, flag)``."""
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


def _state_tuple(v: str) -> tuple[str | None, int | None, list[str] | None]:
    state, uid, truncated = parse_state(v)
    return state, uid, ["TRUNCATED"] if truncated else []


def _tres_tuple(v: str) -> tuple[int | None, str | None, int | None, int | None]:
    """AllocTRES → ``(n_gpus, gpu_type, node count, cpu count)``."""
    t = parse_tres(v)
    n_gpus, gpu_type = gpus_from_tres(v)
    return n_gpus, gpu_type, _int_or_none(t.get("node")), _int_or_none(t.get("cpu"))


def _step_kind(step: pl.Expr) -> pl.Expr:
    base = step.str.splitn("+", 2).struct.field("field_0")
    return (
        pl.when(step.is_null())
        .then(None)
        .when(base.is_in(["batch", "extern", "interactive"]))
        .then(base)
        .when(base.str.contains(r"^[0-9]+$"))
        .then(pl.lit("srun"))
        .otherwise(base)
    )


@dataclass
class _Derive:
    """The derived columns of one parsed dump (one method per group of sacct fields)."""

    raw: pl.DataFrame
    lines: pl.Series
    tz: str
    source: str
    bad_lines: str
    quality: QualityLog
    cols: dict[str, Any] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    # (field, what was expected, bad mask) in the order the line-by-line reader checked them
    bad: list[tuple[str, str, pl.Series]] = field(default_factory=list)

    def name(self, want: str) -> str | None:
        for c in self.raw.columns:
            if c.lower() == want.lower():
                return c
        return None

    def expr(self, want: str) -> pl.Expr | None:
        c = self.name(want)
        return None if c is None else pl.col(c)

    def eval(self, **exprs: pl.Expr) -> dict[str, pl.Series]:
        out = self.raw.select(**exprs)
        return {k: out.get_column(k) for k in exprs}

    def nulls(self, dtype: pl.DataType) -> pl.Series:
        return pl.Series([None] * self.raw.height, dtype=dtype)

    def run(self, flags: dict[str, list[int]]) -> SacctData:
        self.ids()
        self.state_and_exit()
        self.times()
        self.elapsed_and_limit()
        self.resources()
        self.cpu_times()
        self.cols["source_line"] = self.lines
        keep = self.check_values()
        flags = {**flags, "exit_code_unknown": self.zero_exit_unknown(keep)}
        if self.missing:
            msg = (
                f"sacct fields missing from the input: {', '.join(self.missing)}; the columns "
                "derived from them are null"
            )
            warnings.warn(f"{self.source}: {msg}", SacctWarning, stacklevel=4)
            self.quality.add(self.source, "missing_field", "flagged", msg, warn=False)
        self.unknown_states()
        line = pl.col("source_line")
        flag_exprs = [
            pl.when(line.is_in(rows)).then(pl.lit(name)) for name, rows in flags.items() if rows
        ]
        self.cols["data_flags"] = (
            self.lines.to_frame().select(pl.concat_list(flag_exprs).list.drop_nulls()).to_series()
            if flag_exprs and self.raw.height
            else None
        )
        raw, cols = self.raw, self.cols
        if keep is not None:
            raw = raw.filter(keep)
            cols = {
                k: (v.filter(keep) if isinstance(v, pl.Series) else pl.Series(v).filter(keep))
                for k, v in cols.items()
                if v is not None
            }
        meta = {"format": "parsable", "source": self.source}
        return assemble(raw, cols, meta, self.quality.frame())

    def ids(self) -> None:
        jobid, jobidraw = self.expr("JobID"), self.expr("JobIDRaw")
        parts, bad = C.job_id_parts(jobid if jobid is not None else jobidraw)
        array = parts["array_task_id"].is_not_null() | parts["array_pending"].is_not_null()
        het = parts["het_offset"].is_not_null()
        # without JobIDRaw, only a plain job's JobID is its numeric id (array tasks and het
        # components have their own raw ids that JobID does not show)
        job_id_raw = pl.when(~array & ~het).then(parts["id"])
        bad_raw = pl.lit(False)
        if jobidraw is not None:
            raw_parts, bad_raw = C.job_id_parts(jobidraw)
            job_id_raw = raw_parts["id"]
        got = self.eval(
            job_id_raw=job_id_raw,
            kind=parts["kind"],
            array_job_id=pl.when(array).then(parts["id"]),
            array_task_id=parts["array_task_id"],
            het_job_id=pl.when(het).then(parts["id"]),
            het_offset=parts["het_offset"],
            parent_job_id=parts["parent"],
            step_id=parts["step"],
            step_kind=_step_kind(parts["step"]),
            _bad=bad,
            _bad_raw=bad_raw,
        )
        self.bad.append(("JobID", "a JobID", got.pop("_bad")))
        bad_raw = got.pop("_bad_raw")
        if jobidraw is not None:
            self.bad.append(("JobIDRaw", "a JobIDRaw", bad_raw))
        self.cols.update(got)
        if jobid is None:  # an array record's kind is only visible in JobID
            self.missing.append("JobID (array and het ids)")

    def state_and_exit(self) -> None:
        state = self.name("State")
        if state is not None:
            out, bad = C.map_unique(
                self.raw.get_column(state),
                _state_tuple,
                {"state": pl.Utf8, "cancelled_by": pl.Int64, "state_flags": pl.List(pl.Utf8)},
            )
            self.bad.append(("State", "a job state (STATE or 'CANCELLED by <uid>')", bad))
            self.cols.update({c: out.get_column(c) for c in out.columns})
        else:
            self.missing.append("State")
        exitc = self.name("ExitCode")
        if exitc is not None:
            out, bad = C.map_unique(
                self.raw.get_column(exitc),
                parse_exit_code,
                {"exit_code": pl.Int64, "signal": pl.Int64},
            )
            self.bad.append(("ExitCode", "an exit code <code>:<signal>", bad))
            self.cols.update({c: out.get_column(c) for c in out.columns})
        else:
            self.missing.append("ExitCode")

    def times(self) -> None:
        for fname, out in (("Submit", "submit"), ("Start", "start"), ("End", "end")):
            e = self.expr(fname)
            if e is None:
                self.missing.append(fname)
                continue
            utc, naive, bad = C.epoch_or_iso_times(e)
            got = self.eval(utc=utc, naive=naive, bad=bad)
            what = (
                f"a time in field {fname} as YYYY-MM-DDTHH:MM:SS, epoch seconds "
                "(SLURM_TIME_FORMAT=%s), Unknown or None"
            )
            self.bad.append((fname, what, got["bad"]))
            value = got["utc"]
            if got["naive"].is_not_null().any():
                try:
                    local = got["naive"].dt.replace_time_zone(
                        self.tz, ambiguous="null", non_existent="null"
                    )
                except Exception as exc:  # unknown zone name
                    raise ValueError(f"unknown time zone {self.tz!r}") from exc
                dst = got["naive"].is_not_null() & local.is_null()
                self.bad.append(
                    (
                        fname,
                        f"a local time that exists exactly once in {self.tz} (daylight-saving "
                        "change makes it ambiguous or non-existent; export with "
                        "SLURM_TIME_FORMAT=%s or TZ=UTC)",
                        dst,
                    )
                )
                value = local.dt.convert_time_zone("UTC").fill_null(value)
            self.cols[out] = value

    def elapsed_and_limit(self) -> None:
        raw, el = self.expr("ElapsedRaw"), self.expr("Elapsed")
        if raw is not None:
            v, bad = C.int_column(raw)
            got = self.eval(v=v, bad=bad)
            self.bad.append(("ElapsedRaw", "whole seconds", got["bad"]))
            self.cols["elapsed_s"] = got["v"]
        elif el is not None:
            secs, bad = C.duration_seconds(el, words_null=("INVALID",))
            got = self.eval(v=C.rounded_seconds(secs), bad=bad)
            self.bad.append(("Elapsed", "a duration [D-]HH:MM:SS", got["bad"]))
            self.cols["elapsed_s"] = got["v"]
        else:
            self.missing.append("Elapsed")
        tl, tlraw = self.name("Timelimit"), self.name("TimelimitRaw")
        schema = {"timelimit_s": pl.Int64, "timelimit_flag": pl.Utf8}
        if tl is not None:
            out, bad = C.map_unique(self.raw.get_column(tl), parse_timelimit, schema)
            what = "a time limit ([D-]HH:MM:SS, UNLIMITED, Partition_Limit)"
            self.bad.append(("Timelimit", what, bad))
        elif tlraw is not None:
            out, bad = C.map_unique(self.raw.get_column(tlraw), _raw_limit, schema)
            self.bad.append(("TimelimitRaw", "whole minutes", bad))
        else:
            self.missing.append("Timelimit")
            return
        self.cols.update({c: out.get_column(c) for c in out.columns})

    def resources(self) -> None:
        nodelist, alloc = self.name("NodeList"), self.name("AllocTRES")
        if nodelist is not None:
            out, bad = C.map_unique(
                self.raw.get_column(nodelist),
                lambda v: (expand_nodelist(v),),
                {"nodes": pl.List(pl.Utf8)},
            )
            self.bad.append(("NodeList", "a host list such as gpu[001-004,007]", bad))
            self.cols["nodes"] = out.get_column("nodes")
        tres = None
        if alloc is not None:
            tres, bad = C.map_unique(
                self.raw.get_column(alloc),
                _tres_tuple,
                {"n_gpus": pl.Int64, "gpu_type": pl.Utf8, "node": pl.Int64, "cpu": pl.Int64},
            )
            self.bad.append(("AllocTRES", "a TRES list key=value,... with integer counts", bad))
        nnodes = self.expr("NNodes")
        if nnodes is not None:
            v, bad = C.int_column(nnodes)
            got = self.eval(v=v, bad=bad)
            self.bad.append(("NNodes", "an integer", got["bad"]))
            self.cols["n_nodes"] = got["v"]
        elif nodelist is not None:
            n = self.cols["nodes"].list.len()
            self.cols["n_nodes"] = n.cast(pl.Int64).replace(0, None)
        elif tres is not None:
            self.cols["n_nodes"] = tres.get_column("node")
        else:
            self.missing.append("NNodes")
        ncpus = self.expr("NCPUS") if self.raw.height or self.name("AllocCPUS") is None else None
        ncpus = ncpus if ncpus is not None else self.expr("AllocCPUS")
        if ncpus is not None:
            v, bad = C.int_column(ncpus)
            got = self.eval(v=v, bad=bad)
            self.bad.append(("NCPUS", "an integer", got["bad"]))
            self.cols["n_cpus"] = got["v"]
        elif tres is not None:
            self.cols["n_cpus"] = tres.get_column("cpu")
        if tres is not None:
            self.cols["n_gpus"] = tres.get_column("n_gpus")
            self.cols["gpu_type"] = tres.get_column("gpu_type")
        else:
            self.missing.append("AllocTRES")

    def cpu_times(self) -> None:
        for fname, out in _CPU_TIME_FIELDS.items():
            e = self.expr(fname)
            if e is None:
                continue
            secs, bad = C.duration_seconds(e)
            got = self.eval(v=secs, bad=bad)
            self.bad.append((fname, "a CPU time (MM:SS.mmm, [D-]HH:MM:SS)", got["bad"]))
            self.cols[out] = got["v"]

    def check_values(self) -> pl.Series | None:
        """Raise for the first bad value, or (``bad_lines="skip"``) the rows to keep."""
        fired = [(f, what, mask) for f, what, mask in self.bad if mask.any()]
        if not fired:
            return None
        if self.bad_lines == "raise":
            f, what, mask = fired[0]
            k = int(mask.arg_true()[0])
            col = self.name(f) or f
            found = self.raw.get_column(col)[k] if col in self.raw.columns else None
            raise SacctParseError(self.source, int(self.lines[k]), f"{what} in field {f}", found)
        drop = pl.Series([False] * self.raw.height)
        for f, what, mask in fired:
            k = int(mask.arg_true()[0])
            col = self.name(f) or f
            self.quality.add(
                self.source,
                "bad_value",
                "excluded",
                f"{int(mask.sum())} record(s) whose {f} is not {what}, left out; first: "
                f"{self.raw.get_column(col)[k]!r}",
                n_lines=int(mask.sum()),
                first_line=int(self.lines[k]),
            )
            drop = drop | mask
        return ~drop

    def zero_exit_unknown(self, keep: pl.Series | None) -> list[int]:
        """Exit code 0:0 of a FAILED, OUT_OF_MEMORY or NODE_FAIL record → null (lines returned)."""
        st, rc, sig = (self.cols.get(c) for c in ("state", "exit_code", "signal"))
        if not all(isinstance(x, pl.Series) for x in (st, rc, sig)):
            return []
        doubt = st.is_in(list(ZERO_EXIT_UNKNOWN)) & (rc == 0) & (sig.fill_null(0) == 0)
        if keep is not None:
            doubt = doubt & keep
        if not doubt.any():
            return []
        lines = self.lines.filter(doubt).to_list()
        kept = pl.DataFrame({"rc": rc, "sig": sig, "d": doubt}).select(
            exit_code=pl.when(~pl.col("d")).then("rc"), signal=pl.when(~pl.col("d")).then("sig")
        )
        self.cols.update(exit_code=kept["exit_code"], signal=kept["signal"])
        self.quality.add(
            self.source,
            "exit_code_unknown",
            "excluded",
            f"{len(lines)} record(s) with exit code 0:0 and state FAILED, OUT_OF_MEMORY or NODE_FAIL: "
            "not a clean exit (a failed node leaves no exit status); exit_code set to null",
            n_lines=len(lines),
            first_line=lines[0],
        )
        return lines

    def unknown_states(self) -> None:
        st = self.cols.get("state")
        if not isinstance(st, pl.Series):
            return
        unknown = st.is_not_null() & ~st.is_in(list(JOB_STATES))
        if unknown.any():
            k = int(unknown.arg_true()[0])
            self.quality.add(
                self.source,
                "unknown_state",
                "flagged",
                f"{int(unknown.sum())} record(s) with a state that is not a Slurm job state "
                f"(https://slurm.schedmd.com/job_state_codes.html), e.g. {st[k]!r}",
                n_lines=int(unknown.sum()),
                first_line=int(self.lines[k]),
            )
