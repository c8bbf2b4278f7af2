"""Reader for PyTorch profiler (Kineto) Chrome-trace JSON files of one run, one file per rank.

The format and the parsing of one file are in :mod:`trainperf.trace.parse`; the names of kernels
and collectives in :mod:`trainperf.trace.names`; what is returned (:class:`TraceSet`, the frames'
schemas, :class:`TraceFormatError`, :class:`TraceWarning`) in :mod:`trainperf.trace.schema`. This
module reads several files, numbers their ranks, assembles one :class:`TraceSet` and checks the
files against one another.

Checks (one row each in ``quality`` when they fire, columns as ``trainperf.quality.QUALITY_SCHEMA``;
a :class:`TraceWarning` names the file): those of one file (:mod:`trainperf.trace.parse`: ``read``,
which skips the file in :func:`read_traces` and raises in :func:`read_trace`, ``no_gpu_activity``,
``no_profiler_steps`` / ``one_profiler_step``, ``duplicate_events``, ``duplicate_steps``,
``bad_duration``, ``stream_overlap``, ``clock``); across files (:func:`read_traces`):
``rank_unknown`` (numbered), ``duplicate_rank`` (later file excluded), ``mixed_runs`` (different
``trainperf.run_id`` or ``world_size``, or profiled windows that do not overlap in time: flagged,
:attr:`TraceSet.consistent` is False), ``missing_ranks``.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path

import polars as pl

from trainperf.trace.names import COLLECTIVES, collective_kind, kernel_category
from trainperf.trace.parse import One, as_int, parse_one
from trainperf.trace.schema import (
    CPU_COMM_SCHEMA,
    KERNEL_SCHEMA,
    QUALITY_SCHEMA,
    RANK_SCHEMA,
    STEP_SCHEMA,
    TraceFormatError,
    TraceSet,
    TraceWarning,
    quality_row,
)

__all__ = [
    "COLLECTIVES",
    "CPU_COMM_SCHEMA",
    "KERNEL_SCHEMA",
    "QUALITY_SCHEMA",
    "RANK_SCHEMA",
    "STEP_SCHEMA",
    "TraceFormatError",
    "TraceSet",
    "TraceWarning",
    "collective_kind",
    "kernel_category",
    "read_trace",
    "read_traces",
]


def _trace_files(source: str | os.PathLike | Iterable[str | os.PathLike]) -> list[Path]:
    if isinstance(source, (str, os.PathLike)):
        p = Path(source)
        if p.is_dir():
            files = sorted(
                f for f in p.iterdir() if f.is_file() and f.name.endswith((".json", ".json.gz"))
            )
            if not files:
                raise FileNotFoundError(f"{p}: no *.json or *.json.gz trace files")
            return files
        if not p.exists():
            raise FileNotFoundError(f"{p}: no such trace file or folder")
        return [p]
    return [Path(s) for s in source]


def read_trace(path: str | os.PathLike) -> TraceSet:
    """Read one trace file (a single rank) into a :class:`TraceSet`.

    Raises:
        FileNotFoundError: no such file.
        TraceFormatError: unreadable, truncated or invalid JSON (with the line), not a trace.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no such trace file")
    return _assemble([(p, parse_one(p))])


def read_traces(
    source: str | os.PathLike | Sequence[str | os.PathLike], *, progress: bool = False
) -> TraceSet:
    """Read the traces of one run: a folder of ``*.json[.gz]``, one file, or a list of files.

    Each file is one rank (``distributedInfo.rank``, else ``trainperf.rank``, else ``rank<N>`` in
    the file name, else the next free number, flagged). A file that cannot be read is recorded in
    ``ranks`` (status ``error``) and ``quality`` (check ``read``, with the line) and costs no other
    file. The checks across files are in the module docstring.

    Args:
        source: folder, file or files.
        progress: print one line per file read.

    Returns:
        :class:`TraceSet` (frames sorted by rank and time).

    Raises:
        FileNotFoundError: the folder holds no trace, a path does not exist.
    """
    parsed: list[tuple[Path, One | TraceFormatError]] = []
    for p in _trace_files(source):
        if not p.is_file():
            raise FileNotFoundError(f"{p}: no such trace file")
        try:
            one: One | TraceFormatError = parse_one(p)
        except TraceFormatError as exc:
            one = exc
        if progress:
            print(f"trainperf.trace: read {p}", flush=True)
        parsed.append((p, one))
    return _assemble(parsed)


def _assemble(parsed: list[tuple[Path, One | TraceFormatError]]) -> TraceSet:
    quality: list[dict] = []
    rank_rows: list[dict] = []
    good: dict[int, One] = {}
    used: set[int] = {o.rank for _, o in parsed if isinstance(o, One) and o.rank is not None}
    for p, one in parsed:
        if isinstance(one, TraceFormatError):
            quality.append(
                quality_row(str(p), "read", "parse_error", str(one), first_line=one.line)
            )
            rank_rows.append({"rank": None, "file": str(p), "status": "error"})
            continue
        quality.extend(one.quality)
        rank = one.rank
        if rank is None:
            rank = next(i for i in range(len(parsed) + len(used) + 1) if i not in used)
            used.add(rank)
            one.rank = rank
            one.kernels = one.kernels.with_columns(pl.lit(rank, pl.Int32).alias("rank"))
            one.steps = one.steps.with_columns(pl.lit(rank, pl.Int32).alias("rank"))
            one.cpu_comms = one.cpu_comms.with_columns(pl.lit(rank, pl.Int32).alias("rank"))
            if len(parsed) > 1:
                quality.append(
                    quality_row(
                        one.path,
                        "rank_unknown",
                        "corrected",
                        f"no rank in the trace (distributedInfo) or its name; numbered {rank}",
                    )
                )
        row = _rank_row(one)
        if rank in good:
            quality.append(
                quality_row(
                    one.path,
                    "duplicate_rank",
                    "excluded",
                    f"rank {rank} already read from {good[rank].path}; this file is left out "
                    "(two runs mixed in one folder?)",
                )
            )
            row["status"] = "excluded"
            rank_rows.append(row)
            continue
        good[rank] = one
        rank_rows.append(row)
    quality.extend(_cross_checks(good))
    out_q = (
        pl.DataFrame(quality, schema=QUALITY_SCHEMA)
        if quality
        else pl.DataFrame(schema=QUALITY_SCHEMA)
    )
    msgs = []
    for r in out_q.iter_rows(named=True):
        where = f"{r['source']}:{r['first_line']}" if r["first_line"] is not None else r["source"]
        msg = f"{where}: {r['detail']} ({r['check']}: {r['action']})"
        msgs.append(msg)
        warnings.warn(TraceWarning(msg), stacklevel=3)
    order = sorted(good)
    ranks = pl.DataFrame(rank_rows, schema=RANK_SCHEMA).sort(
        "rank", nulls_last=True, maintain_order=True
    )
    return TraceSet(
        ranks=ranks,
        kernels=_concat([good[r].kernels for r in order], KERNEL_SCHEMA),
        steps=_concat([good[r].steps for r in order], STEP_SCHEMA),
        cpu_comms=_concat([good[r].cpu_comms for r in order], CPU_COMM_SCHEMA),
        quality=out_q,
        meta={r: good[r].meta for r in order},
        files={r: good[r].path for r in order},
        warnings=msgs,
    )


def _concat(frames: list[pl.DataFrame], schema: dict) -> pl.DataFrame:
    frames = [f for f in frames if f.height]
    return pl.concat(frames) if frames else pl.DataFrame(schema=schema)


def _rank_row(one: One) -> dict:
    di = (
        one.meta.get("distributedInfo") if isinstance(one.meta.get("distributedInfo"), dict) else {}
    )
    tp = one.meta.get("trainperf") if isinstance(one.meta.get("trainperf"), dict) else {}
    devs = one.meta.get("deviceProperties") or []
    dev_name = devs[0].get("name") if devs and isinstance(devs[0], dict) else None
    status = "ok"
    if one.kernels.height == 0:
        status = "no_gpu_activity"
    elif one.steps.height == 0:
        status = "no_profiler_steps"
    return {
        "rank": one.rank,
        "file": one.path,
        "status": status,
        "host": one.meta.get("host_name"),
        "device_name": dev_name,
        "backend": di.get("backend"),
        "world_size": as_int(di.get("world_size", tp.get("world_size"))),
        "run_id": None if tp.get("run_id") is None else str(tp.get("run_id")),
        "start_ns": one.start_ns,
        "end_ns": one.end_ns,
        "n_events": one.n_events,
        "n_gpu_activities": one.kernels.height,
        "n_steps": one.steps.height,
    }


def _cross_checks(good: dict[int, One]) -> list[dict]:
    if len(good) < 2:
        return []
    rows = [_rank_row(o) for o in good.values()]
    out = []
    first = good[min(good)].path
    run_ids = {r["run_id"] for r in rows if r["run_id"] is not None}
    if len(run_ids) > 1:
        out.append(
            quality_row(
                first,
                "mixed_runs",
                "flagged",
                f"the files carry {len(run_ids)} different trainperf run ids ({', '.join(sorted(run_ids))}): "
                "ranks of different runs",
            )
        )
    sizes = {r["world_size"] for r in rows if r["world_size"] is not None}
    if len(sizes) > 1:
        out.append(
            quality_row(
                first,
                "mixed_runs",
                "flagged",
                f"the files disagree on world_size ({sorted(sizes)}): ranks of different runs",
            )
        )
    spans = [(r["start_ns"], r["end_ns"], r["file"]) for r in rows if r["start_ns"] is not None]
    if len(spans) > 1:
        latest_start = max(s for s, _, _ in spans)
        earliest_end = min(e for _, e, _ in spans)
        if latest_start > earliest_end:
            late = max(spans)[2]
            out.append(
                quality_row(
                    first,
                    "mixed_runs",
                    "flagged",
                    f"the profiled windows do not overlap in time ({late} starts "
                    f"{(latest_start - earliest_end) / 1e9:.1f} s after another rank's trace ends): "
                    "ranks of different runs",
                )
            )
    ranks = sorted(good)
    ws = next(iter(sizes)) if len(sizes) == 1 else None
    if ws is not None and ranks != list(range(ws)):
        missing = sorted(set(range(ws)) - set(ranks))
        if missing:
            out.append(
                quality_row(
                    first,
                    "missing_ranks",
                    "flagged",
                    f"world_size {ws} but no trace for rank(s) {missing[:16]}",
                    n_series=len(missing),
                )
            )
    return out
