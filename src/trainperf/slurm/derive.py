"""The derived columns of a parsed ``--parsable2`` dump: one lazy polars query for the per-row
values (ids, times, durations, counts) and one per-value parser call per distinct value of the
low-cardinality fields (states, exit codes, limits, host lists, TRES)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import polars as pl

from trainperf.quality import QualityLog
from trainperf.slurm import columns as C
from trainperf.slurm.fields import (
    CPU_TIME_FIELDS,
    INFINITE,
    JOB_STATES,
    LIMIT_FLAGS,
    NO_VAL,
    ZERO_EXIT_UNKNOWN,
    SacctData,
    SacctParseError,
    SacctWarning,
    assemble,
    expand_nodelist,
    gpus_from_tres,
    parse_exit_code,
    parse_state,
    parse_timelimit,
    parse_tres,
)

__all__ = ["Derive"]

_FAST = (C.job_id_parts, C.epoch_or_iso_times, C.duration_seconds)  # parsers with a fast form
_BY_VALUE = (C.epoch_or_iso_times, C.duration_seconds)  # per distinct value in a large dump
_DISTINCT_ROWS = 32_768
#: Records from which the parse query runs once per polars thread over row chunks (issue 41,
#: measured on the bench_slurm dumps at a load average of 6: 174 MB 2.17 s CPU in chunks against
#: 2.40 s in one query; 17 MB 0.160 s against 0.138 s, as an earlier measurement found too).
CHUNKED_PARSE_ROWS = 200_000


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
    flag = LIMIT_FLAGS.get(t.upper())
    if flag:
        return None, flag
    minutes = int(t)
    if minutes == INFINITE:
        return None, "UNLIMITED"
    if minutes == NO_VAL:
        return None, "Partition_Limit"
    return minutes * 60, None


def _state_tuple(v: str) -> tuple[str | None, int | None, list[str] | None]:
    state, uid, truncated = parse_state(v)
    return state, uid, ["TRUNCATED"] if truncated else []


class _Tres(NamedTuple):
    """What an AllocTRES value gives (a row of its value table, in the table's column order)."""

    n_gpus: int | None
    gpu_type: str | None
    node: int | None  # node count
    cpu: int | None  # cpu count


def _tres_tuple(v: str) -> _Tres:
    """AllocTRES → :class:`_Tres` ``(n_gpus, gpu_type, node count, cpu count)``."""
    t = parse_tres(v)
    n_gpus, gpu_type = gpus_from_tres(v)
    return _Tres(n_gpus, gpu_type, _int_or_none(t.get("node")), _int_or_none(t.get("cpu")))


class _RowSpec(NamedTuple):
    """How :meth:`Derive.parse_rows` parses one per-row field."""

    parser: Any  # a columns parser: (column, prefix, strip_values=..., **options) -> Parse
    column: str  # the dump's column
    prefix: str  # of the parser's output columns
    options: dict[str, Any]


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


def _id_exprs(p: C.Parse) -> dict[str, pl.Expr]:
    """The id columns from the columns of JobID's parse ``p``."""
    c = lambda k: pl.col(p.out[k])  # noqa: E731
    array = c("array_task_id").is_not_null() | c("array_pending").is_not_null()
    het = c("het_offset").is_not_null()
    return {
        # without JobIDRaw, only a plain job's JobID is its numeric id (array tasks and het
        # components have their own raw ids that JobID does not show)
        "job_id_raw": pl.when(~array & ~het).then(c("id")),
        "kind": c("kind"),
        "array_job_id": pl.when(array).then(c("id")),
        "array_task_id": c("array_task_id"),
        "het_job_id": pl.when(het).then(c("id")),
        "het_offset": c("het_offset"),
        "parent_job_id": c("parent"),
        "step_id": c("step"),
        "step_kind": _step_kind(c("step")),
    }


def _utc_exprs(plans: dict[str, C.Parse]) -> dict[str, pl.Expr]:
    """With tz UTC (no daylight saving: nothing is ambiguous), the time columns from the columns
    of their parses: ISO text as UTC, else the epoch's time."""
    out = {}
    for fname, name in (("Submit", "submit"), ("Start", "start"), ("End", "end")):
        if fname in plans:
            naive, utc = pl.col(plans[fname].out["naive"]), pl.col(plans[fname].out["utc"])
            out[name] = naive.dt.replace_time_zone("UTC").fill_null(utc)
    return out


@dataclass
class Derive:
    """The derived columns of one parsed dump (one method per group of sacct fields).

    ``bad`` collects ``(field, what was expected, bad mask)`` in the order the line-by-line reader
    checked the fields, so that ``bad_lines="raise"`` names the same first error.
    """

    raw: pl.DataFrame
    lines: pl.Series
    tz: str
    source: str
    bad_lines: str
    quality: QualityLog
    cols: dict[str, Any] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    bad: list[tuple[str, str, pl.Series]] = field(default_factory=list)
    res: pl.DataFrame | None = None
    mapped: dict[str, tuple[pl.DataFrame, pl.Series]] = field(default_factory=dict)

    def name(self, want: str) -> str | None:
        """The input's column named ``want`` in any case (the first such), or None."""
        names = self.__dict__.get("_names")
        if names is None:  # built once: a read asks about 30 times
            names = {}
            for c in self.raw.columns:
                names.setdefault(c.lower(), c)
            self.__dict__["_names"] = names
        return names.get(want.lower())

    def column(self, want: str) -> pl.Series | None:
        c = self.name(want)
        return None if c is None else self.raw.get_column(c)

    def out(self, p: C.Parse, key: str) -> pl.Series:
        return self.res.get_column(p.out[key])

    def specs(self) -> dict[str, _RowSpec]:
        """``key → (parser, column, prefix, options)`` of the per-row fields present."""
        specs: dict[str, _RowSpec] = {}
        name = self.name
        specs["JobID"] = _RowSpec(C.job_id_parts, name("JobID") or name("JobIDRaw"), "_jid_", {})
        if name("JobIDRaw"):
            # the first pass takes JobID's number where the texts are equal (see parse_rows)
            specs["JobIDRaw"] = _RowSpec(C.job_id_number, name("JobIDRaw"), "_jraw_", {})
        for f in ("Submit", "Start", "End"):
            if name(f):
                specs[f] = _RowSpec(C.epoch_or_iso_times, name(f), f"_{f}_", {})
        if name("ElapsedRaw"):
            specs["ElapsedRaw"] = _RowSpec(C.int_column, name("ElapsedRaw"), "_elraw_", {})
        elif name("Elapsed"):
            specs["Elapsed"] = _RowSpec(
                C.duration_seconds,
                name("Elapsed"),
                "_el_",
                {"words_null": ("INVALID",)},
            )
        if name("NNodes"):
            specs["NNodes"] = _RowSpec(C.int_column, name("NNodes"), "_nn_", {})
        if name("NCPUS") or name("AllocCPUS"):
            specs["NCPUS"] = _RowSpec(C.int_column, name("NCPUS") or name("AllocCPUS"), "_nc_", {})
        for f in CPU_TIME_FIELDS:
            if name(f):
                specs[f] = _RowSpec(C.duration_seconds, name(f), f"_{f}_", {})
        return specs

    def value_specs(self) -> dict[str, tuple[str, Any, dict[str, pl.DataType]]]:
        """``field → (column, per-value parser, output schema)`` of the low-cardinality fields
        present, parsed once per distinct value in Python (:func:`columns.value_table`)."""
        specs: dict[str, tuple[str, Any, dict[str, pl.DataType]]] = {}
        limit = {"timelimit_s": pl.Int64, "timelimit_flag": pl.Utf8}
        for f, fn, schema in (
            (
                "State",
                _state_tuple,
                {"state": pl.Utf8, "cancelled_by": pl.Int64, "state_flags": pl.List(pl.Utf8)},
            ),
            ("ExitCode", parse_exit_code, {"exit_code": pl.Int64, "signal": pl.Int64}),
            ("Timelimit", parse_timelimit, limit),
            ("TimelimitRaw", _raw_limit, limit),
            ("NodeList", lambda v: (expand_nodelist(v),), {"nodes": pl.List(pl.Utf8)}),
            (
                "AllocTRES",
                _tres_tuple,
                {"n_gpus": pl.Int64, "gpu_type": pl.Utf8, "node": pl.Int64, "cpu": pl.Int64},
            ),
        ):
            if self.name(f) is not None and not (f == "TimelimitRaw" and "Timelimit" in specs):
                specs[f] = (self.name(f), fn, schema)
        return specs

    def parse_rows(self) -> dict[str, C.Parse]:
        """Run the per-row parsers, their fast forms first (``fast=True``: the forms sacct prints on
        almost every record); the values those leave ``bad`` (other forms, values that do not
        parse) are parsed again by the full parsers with surrounding whitespace stripped (a rare
        case, so the common one pays no strip pass and no regex groups). Every parser is
        elementwise and the fast forms give the full parsers' values, so the values are those of
        the full parsers on every row.

        One lazy query does it all (each query and each eager step has a fixed cost of its own
        that dominated a dump of a few thousand records): the per-row parsers (JobID,
        JobIDRaw, counts; times and durations too, or in a large dump once per distinct value
        and joined back) and the per-value tables of the low-cardinality fields, joined on the
        value."""
        specs = self.specs()
        first = {  # int_column and job_id_number have no fast form (one regex each)
            k: {**kw, "fast": True} if fn in _FAST else dict(kw)
            for k, (fn, _, _, kw) in specs.items()
        }
        if "JobIDRaw" in first:  # JobID's parse is in the same query
            first["JobIDRaw"]["same_as"] = "_jid_"
        plans = {
            k: fn(col, pre, strip_values=False, **first[k])
            for k, (fn, col, pre, _) in specs.items()
        }
        # times and durations of a large dump: parsed once per distinct value (Submit, Start and
        # End share one table) and joined back, as a job's steps repeat its times; below
        # _DISTINCT_ROWS rows the fixed cost of the tables and joins is more than they save
        # (measured: 8,358 records row by row 3 ms less, 83,580 records 15-30 ms more)
        per_row = [
            k for k in specs if self.raw.height < _DISTINCT_ROWS or specs[k].parser not in _BY_VALUE
        ]
        groups: dict[tuple, list[str]] = {}
        for k, (fn, _, _, _) in specs.items():
            if k not in per_row:
                groups.setdefault((fn, tuple(sorted(first[k].items()))), []).append(k)
        joins: list[tuple[pl.LazyFrame, str, str]] = []  # (table, column, the table's key)
        for (fn, kw_items), keys in groups.items():
            plan = fn("_v", "_u_", strip_values=False, **dict(kw_items))
            uniq = pl.concat(
                [self.raw.lazy().select(pl.col(specs[k].column).alias("_v")) for k in keys]
            )
            table = C.stages_of(uniq.unique(), [plan]).select("_v", *plan.out.values())
            for k in keys:
                renamed = table.rename({plan.out[o]: plans[k].out[o] for o in plan.out})
                joins.append((renamed, specs[k].column, "_v"))
        out = sorted({c for k in specs for c in plans[k].out.values()})
        vspecs = self.value_specs()
        if vspecs and self.raw.height:
            # the distinct values of every such field in one query, their tables joined below
            distinct = self.raw.select(
                pl.col(col).unique(maintain_order=True).implode().alias(f)
                for f, (col, _, _) in vspecs.items()
            ).row(0, named=True)
            for i, (f, (col, fn, schema)) in enumerate(vspecs.items()):
                table = C.value_table(distinct[f], fn, schema)
                names = {c: f"_m{i}_{c}" for c in [*schema, "_bad"]}
                joins.append((table.lazy().rename(names), col, "_value"))
                out += names.values()
        # one query per polars thread from CHUNKED_PARSE_ROWS rows (below, one query costs less)
        h = self.raw.height
        chunks = C.row_chunks(h) if h >= CHUNKED_PARSE_ROWS else [(0, h)]
        if len(chunks) > 1 and joins:
            # the distinct-value tables once (each is a query over every row), joined per chunk
            got = pl.collect_all([t for t, _, _ in joins], engine="in-memory")
            joins = [(g.lazy(), c, k) for g, (_, c, k) in zip(got, joins, strict=True)]

        def query(rows: pl.DataFrame) -> pl.LazyFrame:
            lf = C.stages_of(rows.lazy(), [plans[k] for k in per_row])
            for table, col, key in joins:
                lf = lf.join(table, left_on=col, right_on=key, how="left", nulls_equal=True,
                             maintain_order="left")  # fmt: skip
            # the id and UTC time columns in the same query (each query has a fixed cost; at 174
            # MB the ids were a query of 0.05 s on one core); used unless values are parsed again
            fused = [e.alias(f"_ids_{k}") for k, e in _id_exprs(plans["JobID"]).items()]
            if self.tz == "UTC":
                fused += [e.alias(f"_utc_{k}") for k, e in _utc_exprs(plans).items()]
            return lf.select(*out, *fused)

        if len(chunks) > 1:
            # one query a core, collected together (issue 41: the one query's joins ran on one
            # core of two, its wall time most of the reader's at 174 MB)
            res = pl.concat(
                pl.collect_all([query(self.raw.slice(o, n)) for o, n in chunks], engine="in-memory")
            )
        else:
            res = query(self.raw).collect(engine="in-memory")
        self.mapped = {}
        for i, (f, (_, _, schema)) in enumerate(vspecs.items()):
            if not self.raw.height:
                self.mapped[f] = (pl.DataFrame(schema=schema), pl.Series([], dtype=pl.Boolean))
                continue
            # the columns themselves, renamed (a select per field was a query each)
            got = {c: res.get_column(f"_m{i}_{c}").alias(c) for c in [*schema, "_bad"]}
            bad = got.pop("_bad")
            self.mapped[f] = (pl.DataFrame(list(got.values())), bad)
        self.res = self._again(res, specs, plans)
        self.__dict__["_fused"] = self.res is res  # nothing parsed again: the fused columns hold
        return plans

    def _again(
        self, res: pl.DataFrame, specs: dict[str, _RowSpec], plans: dict[str, C.Parse]
    ) -> pl.DataFrame:
        """``res`` with the rows where a fast parser left a value ``bad`` parsed again by the full
        parsers of the fields with such values, values stripped, in one query. Every parser is
        elementwise, and where a value parses as it is it has no surrounding whitespace and the
        fast parser's outputs are the full parser's, so all outputs of those fields on those rows
        may be replaced (a query costs per expression, so only those parsers run)."""
        keys = [k for k in specs if res.get_column(plans[k].out["bad"]).any()]
        if not keys:
            return res
        bad = res.select(pl.any_horizontal(plans[k].out["bad"] for k in keys)).to_series()
        idx = bad.arg_true()
        sub = self.raw.select(sorted({specs[k].column for k in keys})).gather(idx)
        again = C.run_stages(
            sub,
            [fn(col, pre, strip_values=True, **kw) for fn, col, pre, kw in map(specs.get, keys)],
        )
        return res.with_columns(
            res.get_column(c).scatter(idx, again.get_column(c)) for c in again.columns
        )

    def run(self, flags: dict[str, list[int]]) -> SacctData:
        plans = self.parse_rows()
        self.ids(plans)
        self.state_and_exit()
        self.times(plans)
        self.elapsed_and_limit(plans)
        self.resources(plans)
        self.cpu_times(plans)
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
        self.data_flags(flags)
        raw, cols = self.raw, self.cols
        if keep is not None:
            raw = raw.filter(keep)
            cols = {k: v.filter(keep) for k, v in cols.items() if v is not None}
        meta = {"format": "parsable", "source": self.source}
        # every derived column is a function of the record's sacct text (the parsers are
        # elementwise), so two records are repeats when their sacct columns are equal
        return assemble(raw, cols, meta, self.quality.frame(), record_key=raw.columns)

    def ids(self, plans: dict[str, C.Parse]) -> None:
        p = plans["JobID"]
        self.bad.append(("JobID", "a JobID", self.out(p, "bad")))
        if self.__dict__.get("_fused"):  # made in the parse query (parse_rows)
            got = self.res.select(pl.col(f"_ids_{k}").alias(k) for k in _id_exprs(p))
        else:  # values parsed again since: from the parse's columns
            got = self.res.select(**_id_exprs(p))
        self.cols.update({c: got.get_column(c) for c in got.columns})
        if "JobIDRaw" in plans:
            self.bad.append(("JobIDRaw", "a JobIDRaw", self.out(plans["JobIDRaw"], "bad")))
            self.cols["job_id_raw"] = self.out(plans["JobIDRaw"], "id")
        if self.name("JobID") is None:  # an array record's kind is only visible in JobID
            self.missing.append("JobID (array and het ids)")

    def state_and_exit(self) -> None:
        if "State" in self.mapped:
            out, bad = self.mapped["State"]
            self.bad.append(("State", "a job state (STATE or 'CANCELLED by <uid>')", bad))
            self.cols.update({c: out.get_column(c) for c in out.columns})
        else:
            self.missing.append("State")
        if "ExitCode" in self.mapped:
            out, bad = self.mapped["ExitCode"]
            self.bad.append(("ExitCode", "an exit code <code>:<signal>", bad))
            self.cols.update({c: out.get_column(c) for c in out.columns})
        else:
            self.missing.append("ExitCode")

    def times(self, plans: dict[str, C.Parse]) -> None:
        utc: dict[str, pl.Expr] = {}  # tz UTC: every time column in one query of the parse
        for fname, out in (("Submit", "submit"), ("Start", "start"), ("End", "end")):
            if fname not in plans:
                self.missing.append(fname)
                continue
            p = plans[fname]
            what = (
                f"a time in field {fname} as YYYY-MM-DDTHH:MM:SS, epoch seconds "
                "(SLURM_TIME_FORMAT=%s), Unknown or None"
            )
            self.bad.append((fname, what, self.out(p, "bad")))
            if self.tz == "UTC":  # no daylight saving: nothing is ambiguous
                naive_c, utc_c = pl.col(p.out["naive"]), pl.col(p.out["utc"])
                utc[out] = naive_c.dt.replace_time_zone("UTC").fill_null(utc_c)
                continue
            value, naive = self.out(p, "utc"), self.out(p, "naive")
            if naive.is_not_null().any():
                try:
                    local = naive.dt.replace_time_zone(
                        self.tz, ambiguous="null", non_existent="null"
                    )
                except Exception as exc:  # unknown zone name
                    raise ValueError(f"unknown time zone {self.tz!r}") from exc
                what = (
                    f"a local time that exists exactly once in {self.tz} (daylight-saving "
                    "change makes it ambiguous or non-existent; export with "
                    "SLURM_TIME_FORMAT=%s or TZ=UTC)"
                )
                self.bad.append((fname, what, naive.is_not_null() & local.is_null()))
                value = local.dt.convert_time_zone("UTC").fill_null(value)
            self.cols[out] = value
        if utc and self.__dict__.get("_fused"):  # made in the parse query (parse_rows)
            self.cols.update({k: self.res.get_column(f"_utc_{k}").alias(k) for k in utc})
        elif utc:
            got = self.res.select(**utc)
            self.cols.update({c: got.get_column(c) for c in got.columns})

    def elapsed_and_limit(self, plans: dict[str, C.Parse]) -> None:
        if "ElapsedRaw" in plans:
            self.bad.append(("ElapsedRaw", "whole seconds", self.out(plans["ElapsedRaw"], "bad")))
            self.cols["elapsed_s"] = self.out(plans["ElapsedRaw"], "value")
        elif "Elapsed" in plans:
            p = plans["Elapsed"]
            self.bad.append(("Elapsed", "a duration [D-]HH:MM:SS", self.out(p, "bad")))
            self.cols["elapsed_s"] = C.rounded_seconds(self.out(p, "value"))
        else:
            self.missing.append("Elapsed")
        if "Timelimit" in self.mapped:
            out, bad = self.mapped["Timelimit"]
            what = "a time limit ([D-]HH:MM:SS, UNLIMITED, Partition_Limit)"
            self.bad.append(("Timelimit", what, bad))
        elif "TimelimitRaw" in self.mapped:
            out, bad = self.mapped["TimelimitRaw"]
            self.bad.append(("TimelimitRaw", "whole minutes", bad))
        else:
            self.missing.append("Timelimit")
            return
        self.cols.update({c: out.get_column(c) for c in out.columns})

    def resources(self, plans: dict[str, C.Parse]) -> None:
        nodelist = "NodeList" in self.mapped
        if nodelist:
            out, bad = self.mapped["NodeList"]
            self.bad.append(("NodeList", "a host list such as gpu[001-004,007]", bad))
            self.cols["nodes"] = out.get_column("nodes")
        tres = None
        if "AllocTRES" in self.mapped:
            tres, bad = self.mapped["AllocTRES"]
            self.bad.append(("AllocTRES", "a TRES list key=value,... with integer counts", bad))
        if "NNodes" in plans:
            self.bad.append(("NNodes", "an integer", self.out(plans["NNodes"], "bad")))
            self.cols["n_nodes"] = self.out(plans["NNodes"], "value")
        elif nodelist:
            self.cols["n_nodes"] = self.cols["nodes"].list.len().cast(pl.Int64).replace(0, None)
        elif tres is not None:
            self.cols["n_nodes"] = tres.get_column("node")
        else:
            self.missing.append("NNodes")
        if "NCPUS" in plans:
            self.bad.append(("NCPUS", "an integer", self.out(plans["NCPUS"], "bad")))
            self.cols["n_cpus"] = self.out(plans["NCPUS"], "value")
        elif tres is not None:
            self.cols["n_cpus"] = tres.get_column("cpu")
        if tres is not None:
            self.cols["n_gpus"] = tres.get_column("n_gpus")
            self.cols["gpu_type"] = tres.get_column("gpu_type")
        else:
            self.missing.append("AllocTRES")

    def cpu_times(self, plans: dict[str, C.Parse]) -> None:
        for fname, out in CPU_TIME_FIELDS.items():
            if fname in plans:
                what = "a CPU time (MM:SS.mmm, [D-]HH:MM:SS)"
                self.bad.append((fname, what, self.out(plans[fname], "bad")))
                self.cols[out] = self.out(plans[fname], "value")

    def check_values(self) -> pl.Series | None:
        """Raise for the first bad value, or (``bad_lines="skip"``) the rows to keep."""
        fired = [(f, what, mask) for f, what, mask in self.bad if mask.any()]
        if not fired:
            return None
        if self.bad_lines == "raise":
            f, what, mask = fired[0]
            k = int(mask.arg_true()[0])
            col = self.name(f) or (self.name("JobIDRaw") if f == "JobID" else None)
            found = self.raw.get_column(col)[k] if col is not None else None
            raise SacctParseError(self.source, int(self.lines[k]), f"{what} in field {f}", found)
        drop = pl.Series([False] * self.raw.height)
        for f, what, mask in fired:
            k = int(mask.arg_true()[0])
            col = self.name(f) or (self.name("JobIDRaw") if f == "JobID" else None)
            found = self.raw.get_column(col)[k] if col is not None else None
            self.quality.add(
                self.source,
                "bad_value",
                "excluded",
                f"{int(mask.sum())} record(s) whose {f} is not {what}, left out; first: {found!r}",
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
        doubt = (
            pl.DataFrame([st.alias("st"), rc.alias("rc"), sig.alias("sig")])
            .select(
                pl.col("st").is_in(list(ZERO_EXIT_UNKNOWN))
                & (pl.col("rc") == 0)
                & (pl.col("sig").fill_null(0) == 0)
            )
            .to_series()
        )
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
            "flagged",  # the record is kept, only its exit code is unknown (issue 39)
            f"{len(lines)} record(s) with exit code 0:0 and state FAILED, OUT_OF_MEMORY or NODE_FAIL: "
            "not a clean exit (a failed node leaves no exit status); exit_code left empty (unknown)",
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

    def data_flags(self, flags: dict[str, list[int]]) -> None:
        """``data_flags``: the checks that fired on each record (a join of the few flagged lines)."""
        pairs = [(ln, name) for name, rows in flags.items() for ln in rows]
        if not pairs or not self.raw.height:
            return
        marks = (
            pl.DataFrame(pairs, schema={"source_line": pl.Int64, "flag": pl.Utf8}, orient="row")
            .lazy()
            .group_by("source_line", maintain_order=True)
            .agg(data_flags=pl.col("flag"))
        )
        self.cols["data_flags"] = (  # one query (each eager step was a query of its own)
            self.lines.to_frame()
            .lazy()
            .join(marks, on="source_line", how="left", maintain_order="left")
            .select(pl.col("data_flags").fill_null(pl.lit([], dtype=pl.List(pl.Utf8))))
            .collect(engine="in-memory")
            .get_column("data_flags")
        )
