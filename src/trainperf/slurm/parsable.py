"""``sacct --parsable2`` / ``--parsable`` text → :class:`~trainperf.slurm.fields.SacctData`.

The reader splits records with polars (one pass over all lines; only lines with fewer fields than
the header, which a newline inside a free-text value makes, are handled one by one in Python) and
parses every value column with the vectorised parsers of :mod:`trainperf.slurm.columns`.
"""

from __future__ import annotations

import bisect
import io
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from trainperf.quality import QualityLog
from trainperf.slurm import columns as C
from trainperf.slurm.derive import Derive
from trainperf.slurm.fields import (
    FREE_TEXT_FIELDS,
    JOBID_RE,
    SacctData,
    SacctParseError,
    SacctWarning,
    decode_utf8,
    escape_surrogates,
)

__all__ = ["BAD_LINES", "parse_sacct_parsable", "read_sacct_parsable"]

#: What the readers do with a record that cannot be read: ``"raise"`` a :class:`SacctParseError`
#: naming the line, or ``"skip"`` it (left out, with a warning and a data-quality row).
BAD_LINES = ("raise", "skip")

_KNOWN_FIELD_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")

#: Bytes from which :func:`_read_well_formed` runs the CSV read in a thread beside its byte counts.
OVERLAP_BYTES = 8_000_000
_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trainperf-sacct-read")


def _read_lines(data: bytes) -> pl.Series | None:
    """The lines of a file's bytes as polars' CSV reader splits them: natively, in parallel on
    every core (issue 41: one ``str.split`` of the whole text was a fifth of the reader and used
    one core), one column, no quoting, a separator byte the file does not hold; the last line
    dropped when empty, as a split of the text at ``\\n`` gives them.

    None where that could differ from the split (a ``\\r``, which the CSV reader takes as part of
    a line end; a UTF-8 byte-order mark, which it drops; no free separator byte) or the bytes are
    not UTF-8: the caller splits the text itself."""
    if b"\r" in data or data.startswith(b"\xef\xbb\xbf"):
        return None
    sep = next((c for c in ("\x1f", "\x1e", "\x00") if c.encode() not in data), None)
    if sep is None:
        return None
    try:
        frame = pl.read_csv(
            io.BytesIO(data),
            has_header=False,
            separator=sep,
            quote_char=None,
            schema={"text": pl.String},
            raise_if_empty=False,
        )
    except pl.exceptions.ComputeError:  # not UTF-8
        return None
    return frame.get_column("text").fill_null("")  # a blank line is read as null


def _read_well_formed(
    data: bytes, delimiter: str, source: str
) -> tuple[pl.DataFrame, pl.Series] | None:
    """``(raw Utf8 frame, 1-based line numbers)`` of a file whose every line after the header
    (its first line) has exactly the header's fields, read by polars' CSV reader alone (issue
    41: the lines split first, then each line's delimiters counted, were a quarter of the
    reader's time); None for any other file (the caller's path applies its rules).

    Proof that the file is such: with ``m`` lines, ``n`` fields and no line ending with the
    delimiter, the file holds ``(n - 1) * m`` delimiters, the reader gives ``m`` rows, and the
    bytes of the fields it gives plus ``(n - 1) * m`` and the newlines are the file's size. A
    line short of ``a`` delimiters adds ``a`` to that size (its missing fields are read as
    ``""``); a longer one, with ``b`` more, removes the ``b`` delimiters and the non-empty text
    after the last one (the CSV reader drops the extra fields), more than ``b`` bytes. The
    delimiter count makes the ``a`` and ``b`` equal in sum, so the size can only hold when
    both are zero."""
    db = delimiter.encode()
    if len(db) != 1 or delimiter in "\n\r" or b"\r" in data or data.startswith(b"\xef\xbb\xbf"):
        return None
    end = data.find(b"\n")
    if end <= 0 or data.endswith(db):
        return None
    try:
        head = data[:end].decode("utf-8")
    except UnicodeDecodeError:
        return None
    if head.strip() == "" or head.split(delimiter)[-1] == "":
        return None
    try:
        names, start, _ = _header(pl.Series("text", [head]), None, delimiter, source)
    except SacctParseError:
        return None  # the caller's path raises it
    n = len(names)
    if n < 2:
        return None
    import numpy as np  # noqa: PLC0415 - deferred: only this path needs it (bytes.count: 4x slower)

    def read() -> pl.DataFrame | None:
        try:
            return pl.read_csv(
                io.BytesIO(data),
                has_header=False,
                separator=delimiter,
                quote_char=None,
                schema=dict.fromkeys(names, pl.String),
                truncate_ragged_lines=True,
                empty_string_is_null=False,
            )
        except pl.exceptions.PolarsError:  # not UTF-8, or not a CSV the reader takes
            return None

    # a large file: the CSV read runs in a thread beside the byte counts below (both release
    # the GIL), as the counts decide only whether its frame is used (issue 41: at 174 MB the
    # counts were 0.06-0.1 s of one core in which the read could run; a damaged file wastes
    # the read); a small one reads after them (a thread costs more than it saves)
    pending = _POOL.submit(read) if len(data) >= OVERLAP_BYTES else None
    arr = np.frombuffer(data, dtype=np.uint8)
    at_nl = np.flatnonzero(arr == 10)
    newlines = len(at_nl)
    m = newlines + (not data.endswith(b"\n"))
    # a line ending with the delimiter (--parsable, or a name ending so), or a line with another
    # number of fields than the header's: the caller's path
    ends_with_delimiter = bool((arr[at_nl[at_nl > 0] - 1] == db[0]).any())
    if ends_with_delimiter or int(np.count_nonzero(arr == db[0])) != (n - 1) * m:
        if pending is not None:
            pending.result()
        return None
    frame = pending.result() if pending is not None else read()
    if frame is None:
        return None
    if frame.height != m:
        return None
    size = frame.select(pl.sum_horizontal(pl.all().str.len_bytes().sum())).item()
    if size is None or size + (n - 1) * m + newlines != len(data):
        return None
    raw = frame.slice(start)
    line_no = pl.int_range(start + 1, m + 1, dtype=pl.Int64, eager=True).alias("source_line")
    return raw, line_no


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
    data = p.read_bytes()
    if fields is None and bad_lines in BAD_LINES:
        whole = _read_well_formed(data, delimiter, str(p))
        if whole is not None:
            quality = QualityLog(SacctWarning)
            derive = Derive(*whole, tz=tz, source=str(p), bad_lines=bad_lines, quality=quality)
            return derive.run({"invalid_utf8": [], "delimiter_in_free_text": []})
    lines = _read_lines(data)
    if lines is not None:
        return _parse(lines, has_cr=False, fields=fields, delimiter=delimiter, tz=tz,
                      source=str(p), bad_lines=bad_lines, bad_utf8=[], split=False,
                      data=data)  # fmt: skip
    try:  # UTF-8 checked in polars: no Python str of the whole file
        text: str | pl.Series = pl.Series("text", [data], dtype=pl.Binary).cast(pl.Utf8)
        bad_utf8: list[int] = []
    except pl.exceptions.ComputeError:  # not UTF-8: find the lines in Python
        text, bad_utf8 = decode_utf8(data)
    return _parse(
        text,
        has_cr=b"\r" in data,
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
        has_cr="\r" in text,
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
    text: str | pl.Series,
    *,
    has_cr: bool,
    fields: str | Sequence[str] | None,
    delimiter: str,
    tz: str,
    source: str,
    bad_lines: str,
    bad_utf8: list[int],
    split: bool = True,
    data: bytes | None = None,
) -> SacctData:
    if delimiter == "":
        raise ValueError("delimiter must not be empty")
    if bad_lines not in BAD_LINES:
        raise ValueError(f"bad_lines must be one of {', '.join(BAD_LINES)}, not {bad_lines!r}")
    quality = QualityLog(SacctWarning)
    if isinstance(text, str):
        text = pl.Series("text", [escape_surrogates(text) if bad_utf8 else text], dtype=pl.Utf8)
    if split:
        lines = text.str.split("\n").explode()
        if lines.len() and lines[-1] == "":
            lines = lines.head(-1)
    else:  # the lines already (_read_lines)
        lines = text
    if has_cr:
        lines = lines.str.strip_suffix("\r")
    names, start, header_from_text = _header(lines, fields, delimiter, source)
    rec = _Records(lines, names, delimiter, header_from_text, source, bad_lines, quality, data=data)
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
    derive = Derive(
        raw,
        line_no,
        tz=tz,
        source=source,
        bad_lines=bad_lines,
        quality=quality,
    )
    return derive.run(flags)


def _header(
    lines: pl.Series, fields: str | Sequence[str] | None, delimiter: str, source: str
) -> tuple[list[str], int, bool]:
    """``(field names, index of the first data line, header read from the text)``."""
    start = 0
    if fields is None:
        n = lines.len()
        while start < n and lines[start].strip() == "":
            start += 1
        if start == n:
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


_SHORT, _EXACT, _TRAILING, _LONG = 0, 1, 2, 3  # parts of a line against the header's n


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
    #: the file's bytes, whose lines ``lines`` are (:func:`_read_lines`): enables :meth:`_fast_build`
    data: bytes | None = None

    def __post_init__(self) -> None:
        self.n = len(self.names)
        self.lower = [x.lower() for x in self.names]
        self.last_free = self.lower[-1] in FREE_TEXT_FIELDS
        self.other_free = [
            self.names[i] for i in range(self.n - 1) if self.lower[i] in FREE_TEXT_FIELDS
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
        fast = self._fast_build(start)
        if fast is not None:
            return fast
        d, n, names = self.delimiter, self.n, self.names
        # the number of parts of each line, read from the last field of splitn: null → fewer than
        # n (or a blank line); free of the delimiter → n; "x<d>" with x free of it → n + 1 with a
        # trailing delimiter (--parsable); anything else → more than n
        last = pl.col(names[-1])
        cls = (
            pl.when(last.is_null())
            .then(_SHORT)
            .when(~last.str.contains(d, literal=True))
            .then(_EXACT)
            .when(last.str.ends_with(d) & ~last.str.strip_suffix(d).str.contains(d, literal=True))
            .then(_TRAILING)
            .otherwise(_LONG)
        )
        if n == 1:  # one field: a blank line is not a record
            blank = last.str.contains(f"^[{re.escape(C.WHITESPACE)}]*$")
            cls = pl.when(blank.fill_null(True)).then(_SHORT).otherwise(cls)
        kinds = (_SHORT, _EXACT, _TRAILING, _LONG)
        body = self.lines.slice(start)
        parts = pl.collect_all(  # one query a core: the split, the class and count of each class
            [
                body.slice(o, ln)
                .to_frame()
                .lazy()
                .with_row_index("idx", offset=start + o)
                .select(
                    "idx", pl.col("text").str.splitn(d, n).struct.rename_fields(names).alias("f")
                )
                .unnest("f")
                .with_columns(_cls=cls)
                .with_columns((pl.col("_cls") == k).sum().alias(f"_n{k}") for k in kinds)
                for o, ln in C.row_chunks(body.len())
            ]
        )
        have = {k: sum(int(x[0, f"_n{k}"]) for x in parts if x.height) for k in kinds}
        if not any(x.height for x in parts):
            have = {}
        split = pl.concat([x.drop(f"_n{k}" for k in kinds) for x in parts])
        self._check_header_width(split, have, start)
        if have.get(_TRAILING):
            split = split.with_columns(
                pl.when(pl.col("_cls") == _TRAILING)
                .then(last.str.strip_suffix(d))
                .otherwise(last)
                .alias(names[-1])
            )
        drop: set[int] = set()
        if not self.header_from_text:
            for idx in split.head(8).get_column("idx").to_list():
                if self.lines[idx].strip() == "":
                    continue
                if [x.lower() for x in self.lines[idx].split(d)][:n] != self.lower:
                    break
                drop.add(idx)  # header present although fields were given
        long_idx = (
            split.filter(pl.col("_cls") == _LONG).get_column("idx").to_list()
            if have.get(_LONG)
            else []
        )
        if not self.last_free:
            for idx in long_idx:
                text = self.lines[idx]
                self.errors.append((idx, self._error_fields(idx + 1, text.split(d), text)))
            drop.update(long_idx)
            long_idx = []
        patched = self._short_lines(split, drop) if have.get(_SHORT) else {}
        self._handle_errors()
        skip = drop | patched.keys()
        regular = split.filter(~pl.col("idx").is_in(list(skip))) if skip else split
        joined = sorted(
            [i + 1 for i in long_idx if i not in drop]
            + [i + 1 for i, (_, j) in patched.items() if j]
        )
        if joined:
            self._note_joined(joined)
        regular = regular.drop("_cls")
        if patched:
            rows = {nm: [patched[i][0][k] for i in sorted(patched)] for k, nm in enumerate(names)}
            extra_rows = pl.DataFrame(
                {"idx": sorted(patched), **rows},
                schema={"idx": regular.schema["idx"], **dict.fromkeys(names, pl.Utf8)},
            )
            regular = pl.concat([regular, extra_rows]).sort("idx")
        line_no = (regular.get_column("idx").cast(pl.Int64) + 1).alias("source_line")
        return regular.drop("idx"), line_no, joined

    def _fast_build(self, start: int) -> tuple[pl.DataFrame, pl.Series, list[int]] | None:
        """:meth:`build` of a well-formed file by polars' CSV reader (issue 41: the split of the
        lines was a fifth to a quarter of the reader's time; the CSV reader splits the records
        natively): every data line has exactly the header's fields, or (the last field free
        text, as JobName) more, which the slow path joins back into the last field; here that
        field is the same text, the line's rest after its first ``n - 1`` delimiters.

        None (the caller takes the slow path, which also knows the damage's rules and messages)
        unless: the file's bytes are at hand, the header is its first line, the delimiter is
        one ASCII byte, and no data line has fewer fields, is blank, or ends with the
        ``--parsable`` trailing delimiter; the CSV reader must also give one row per line."""
        d, n, names = self.delimiter, self.n, self.names
        if (
            self.data is None
            or not self.header_from_text
            or start != 1
            or n < 2
            or len(d) != 1
            or not d.isascii()
            or d in "\n\r"
        ):
            return None
        body = self.lines.slice(start)
        counts = body.str.count_matches(d, literal=True)
        exact = counts == n - 1
        n_exact = int(exact.sum())
        if n_exact == 0:
            return None  # nothing fits the header (the slow path's header-width check)
        long_pos: list[int] = []
        if n_exact < body.len():
            if not self.last_free:
                return None
            other = body.filter(~exact)
            c_other = counts.filter(~exact)
            if (c_other < n - 1).any() or ((c_other == n) & other.str.ends_with(d)).any():
                return None  # short, blank or --parsable lines: the slow path's rules
            long_pos = (~exact).arg_true().to_list()
        frame = pl.read_csv(
            io.BytesIO(self.data),
            has_header=False,
            separator=d,
            quote_char=None,
            schema=dict.fromkeys(names, pl.String),
            truncate_ragged_lines=True,  # the long lines' last field is set below
            empty_string_is_null=False,
            raise_if_empty=False,
        )
        if frame.height != self.lines.len():
            return None  # not one row per line: never seen, but then the CSV rules differ
        raw = frame.slice(start)
        joined = [start + 1 + i for i in long_pos]
        if long_pos:
            rest = body.gather(long_pos).str.splitn(d, n).struct.field(f"field_{n - 1}")
            last = raw.get_column(names[-1]).scatter(long_pos, rest)
            raw = raw.with_columns(last.alias(names[-1]))
            self._note_joined(joined)
        line_no = pl.int_range(start + 1, start + 1 + raw.height, dtype=pl.Int64, eager=True)
        return raw, line_no.alias("source_line"), joined

    def _check_header_width(self, split: pl.DataFrame, have: dict[int, int], start: int) -> None:
        """Every data line longer than the header by the same count: the header, not a JobName,
        is wrong (a field deleted from the header only would shift every value after it)."""
        n, d = self.n, self.delimiter
        if have.get(_LONG, 0) < 2 or have.get(_EXACT) or have.get(_TRAILING):
            return  # some line fits the header
        by_cls = split.select("idx", "_cls")
        short = by_cls.filter(pl.col("_cls") == _SHORT).get_column("idx").to_list()
        if any(self.lines[i].strip() != "" for i in short):
            return  # a non-blank line with fewer fields
        texts = [self.lines[i] for i in by_cls.filter(pl.col("_cls") == _LONG)["idx"].to_list()]
        extra = min(len(t.split(d)) - t.endswith(d) for t in texts) - n
        if extra > 0:
            raise SacctParseError(
                self.source,
                start if self.header_from_text else None,
                f"data lines with the {n} fields of the header ({d.join(self.names)})",
                f"every one of the {len(texts)} data lines has at least {n + extra} fields: the "
                f"header (or the fields= list) lacks {extra} field(s); re-export with the same "
                "--format for header and data",
            )

    def _note_joined(self, joined: list[int]) -> None:
        d, n = self.delimiter, self.n
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

    def _short_lines(
        self, split: pl.DataFrame, drop: set[int]
    ) -> dict[int, tuple[list[str], bool]]:
        """Records made from lines with fewer fields than the header (newlines in free text).

        Follows the rules of the line-by-line reader: a blank line is skipped; a short line that
        does not start with a JobID continues the last field of the previous record when that
        field is free text; otherwise the following lines are appended while the field they
        continue is free text. Lines taken into a record are added to ``drop``.
        """
        n, d = self.n, self.delimiter
        short = split.filter(pl.col("_cls") == _SHORT).get_column("idx").to_list()
        regular_idx = split.filter(pl.col("_cls") != _SHORT).get_column("idx").to_list()
        regular_idx = [i for i in regular_idx if i not in drop]
        patched: dict[int, tuple[list[str], bool]] = {}  # idx -> (fields, surplus joined)
        last_rec, consumed_upto = -1, -1
        n_lines = self.lines.len()
        for idx in short:
            if idx <= consumed_upto:
                continue
            line = self.lines[idx]
            if line.strip() == "":
                drop.add(idx)
                continue
            parts = line.split(d)
            k = bisect.bisect_left(regular_idx, idx) - 1
            prev = regular_idx[k] if k >= 0 and regular_idx[k] > consumed_upto else -1
            target = max(prev, last_rec)
            if target >= 0 and self.last_free and not JOBID_RE.match(parts[0].strip()):
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
            while len(parts) < n and j < n_lines and self.lower[len(parts) - 1] in FREE_TEXT_FIELDS:
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
