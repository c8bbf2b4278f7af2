"""Shared constants and helpers of :mod:`trainperf.telemetry` (lazy frames, host batches, time parsing)."""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any

import polars as pl

SYNTHETIC_LABEL = ("synthetic", "true")
"""Label (name, value) that :mod:`trainperf.synthetic.telemetry` puts on every series it generates."""

NIC_TX = "node_network_transmit_bytes_total"
NIC_RX = "node_network_receive_bytes_total"

ACTIVITY_FIELDS: dict[str, tuple[int, str]] = {
    "tensor_active": (1004, "ratio"),
    "sm_active": (1002, "ratio"),
    "dram_active": (1005, "ratio"),
    "power": (155, "W"),
    "sm_clock": (100, "MHz"),
}
"""Metric name -> (DCGM field id, unit) of the per-phase distributions."""

METRIC_NAMES: dict[str, str] = {
    "tensor_active": "Tensor active",  # DCGM_FI_PROF_PIPE_TENSOR_ACTIVE
    "sm_active": "SM active",  # DCGM_FI_PROF_SM_ACTIVE
    "dram_active": "DRAM active",  # DCGM_FI_PROF_DRAM_ACTIVE
    "power": "Power",  # DCGM_FI_DEV_POWER_USAGE
    "sm_clock": "SM clock",  # DCGM_FI_DEV_SM_CLOCK
}
"""How a table or chart names each metric of :data:`ACTIVITY_FIELDS` for a reader (the frames
keep the ids); the unit follows in parentheses."""

PHASE_KIND_NAMES: dict[str, str] = {
    "init": "Initialisation",
    "train": "Training",
    "eval": "Evaluation",
}
"""How a table names each phase ``kind`` of :data:`PHASE_SCHEMA` for a reader (MLPerf's
``init_start``/``init_stop``, ``block_*`` and ``eval_*`` intervals)."""

WANTED: tuple[str, ...] = (
    "tensor_active",
    "sm_active",
    "dram_active",
    "gpu_util",
    "power",
    "energy",
    "fb_used",
    "pcie_bytes",
    "nvlink_bytes",
    "nic_bytes",
)
"""What the telemetry chapter wants; keys of :data:`trainperf.dcgm.METRIC_REQUIREMENTS` + ``nic_bytes``."""

PHASE_SCHEMA: dict[str, pl.DataType] = {
    "phase": pl.String(),
    "kind": pl.String(),
    "index": pl.Int32(),
    "start": pl.Datetime("us", "UTC"),
    "end": pl.Datetime("us", "UTC"),
    "duration_s": pl.Float64(),
}
"""Schema of :func:`phases_from_log`."""

DATETIME_US = pl.Datetime("us", "UTC")


def as_lazy(data: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    if isinstance(data, pl.LazyFrame):
        return data
    if isinstance(data, pl.DataFrame):
        return data.lazy()
    raise TypeError(f"expected a polars DataFrame or LazyFrame, not {type(data).__name__}")


def to_datetime(x: Any) -> _dt.datetime:
    """datetime / epoch seconds / ISO 8601 string -> aware UTC datetime."""
    if isinstance(x, _dt.datetime):
        return x if x.tzinfo else x.replace(tzinfo=_dt.UTC)
    if isinstance(x, (int, float)):
        return _dt.datetime.fromtimestamp(float(x), tz=_dt.UTC)
    s = str(x).strip()
    if re.fullmatch(r"\d+(\.\d+)?", s):
        return _dt.datetime.fromtimestamp(float(s), tz=_dt.UTC)
    d = _dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
    return d if d.tzinfo else d.replace(tzinfo=_dt.UTC)


def every_us(every: Any) -> int:
    if isinstance(every, _dt.timedelta):
        return int(every.total_seconds() * 1_000_000)
    if isinstance(every, (int, float)):
        return int(float(every) * 1_000_000)
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*", str(every))
    if not m:
        raise ValueError(f"every={every!r}: expected seconds, a timedelta or e.g. '30s', '2m'")
    mult = {"ms": 1_000, "s": 1_000_000, None: 1_000_000, "m": 60_000_000, "h": 3_600_000_000}
    return int(float(m.group(1)) * mult[m.group(2)])


def natural_key(s: str) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def collect(lf: pl.LazyFrame) -> pl.DataFrame:
    """Collect a query (one place to choose the engine; the in-memory engine was faster than the
    streaming one on a 97M-row cluster-day store, at the same peak memory)."""
    return lf.collect()


def gpu_rows(lf: pl.LazyFrame) -> pl.LazyFrame:
    return lf.filter((pl.col("entity") == "GPU") & pl.col("gpu").is_not_null())


BATCH_ROWS = 2_000_000
"""Input rows per collect of the per-host analyses (``phase_stats(level="gpu")``,
:func:`link_throughput`, :func:`nic_throughput`): above it they run host batch by host batch and
concatenate, so peak memory follows the batch, not the store (the in-memory engine materialises
its whole filtered input: 62 M rows took 7.4 GB at once; 2 M rows per batch keep the per-GPU
quantiles of one batch near 150 MB). Results are the same, since every group
of these analyses lies within one host."""


def host_batches(lf: pl.LazyFrame, batch_rows: int | None = None) -> list[list[str | None] | None]:
    """Host lists of about ``batch_rows`` input rows each; ``[None]`` = one batch of everything.

    Costs a row count (Parquet metadata for a store) and a streaming ``unique`` of the host
    column; each batch's host filter prunes whole files of a partitioned store."""
    batch_rows = BATCH_ROWS if batch_rows is None else batch_rows
    n = lf.select(pl.len()).collect(engine="streaming").item()
    if n <= batch_rows:
        return [None]
    hosts = lf.select(pl.col("hostname").unique()).collect(engine="streaming")["hostname"].to_list()
    # null first, as polars sorts: phase_stats relies on the batches coming in host order
    hosts.sort(key=lambda h: (h is not None, h or ""))
    per = max(1, int(batch_rows * len(hosts) / n))
    return [hosts[i : i + per] for i in range(0, len(hosts), per)]


def only_hosts(lf: pl.LazyFrame, hosts: list[str | None] | None) -> pl.LazyFrame:
    if hosts is None:
        return lf
    named = [h for h in hosts if h is not None]
    cond = pl.col("hostname").is_in(named)
    if len(named) < len(hosts):
        cond = cond | pl.col("hostname").is_null()
    return lf.filter(cond)


# --------------------------------------------------------------------------------------
# Phases
