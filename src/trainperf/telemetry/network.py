"""Network telemetry: NIC counters, PCIe and NVLink per rail, node totals and rail imbalance."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import polars as pl

from trainperf.telemetry._common import (
    DATETIME_US,
    NIC_RX,
    NIC_TX,
    as_lazy,
    collect,
    gpu_rows,
    host_batches,
    natural_key,
    only_hosts,
)
from trainperf.telemetry.phases import in_span, interval_expr, interval_table


def _rail_map(devices: Iterable[tuple[str, str]], rail_devices: Any) -> pl.DataFrame:
    rows = []
    if isinstance(rail_devices, Mapping):
        m = {str(k): int(v) for k, v in rail_devices.items()}
        for h, d in devices:
            if d in m:
                rows.append((h, d, m[d]))
    elif rail_devices is not None:
        m = {str(d): i for i, d in enumerate(rail_devices)}
        for h, d in devices:
            if d in m:
                rows.append((h, d, m[d]))
    else:
        per_host: dict[str, list[str]] = {}
        for h, d in devices:
            per_host.setdefault(h, []).append(d)
        for h, ds in per_host.items():
            for i, d in enumerate(sorted(set(ds), key=natural_key)):
                rows.append((h, d, i))
    return pl.DataFrame(
        rows, schema={"hostname": pl.String, "device": pl.String, "rail": pl.Int32}, orient="row"
    )


def nic_throughput(
    data: pl.DataFrame | pl.LazyFrame,
    rail_devices: Sequence[str] | Mapping[str, int] | None = None,
) -> pl.DataFrame:
    """Per-rail NIC throughput (TX + RX, B/s) from node-exporter byte counters.

    Rate between consecutive samples of one (host, device, direction) counter:
    ``(v_k - v_{k-1}) / (t_k - t_{k-1})``; a negative step is a counter reset (reboot, driver
    reload) and counts as ``v_k`` bytes since 0, as Prometheus ``increase()`` does. The rate is
    stamped at ``t_k``. TX and RX are summed where both are present at a timestamp.

    Args:
        data: reader frame with ``node_network_{transmit,receive}_bytes_total`` series (label
            ``device``).
        rail_devices: device -> rail mapping (a sequence: position = rail); default: each host's
            devices in natural sort order are rails 0, 1, ... (rail i serves GPU i).

    Returns:
        hostname (String), rail (Int32), device (String), timestamp (Datetime[us, UTC]),
        tx_Bps, rx_Bps, bytes_per_s (Float64, B/s); sorted by host, rail, time. Empty when no
        NIC counters are present.
    """
    nic_rows = as_lazy(data).filter(pl.col("field").is_in([NIC_TX, NIC_RX]))
    batches = host_batches(nic_rows)
    if len(batches) > 1:  # counters are per host: run host batch by host batch
        return pl.concat([_nic_batch(only_hosts(nic_rows, h), rail_devices) for h in batches]).sort(
            "hostname", "rail", "timestamp"
        )
    return _nic_batch(nic_rows, rail_devices)


def _nic_batch(nic_rows: pl.LazyFrame, rail_devices: Any) -> pl.DataFrame:
    """:func:`nic_throughput` of rows already restricted to the NIC counters, in one collect."""
    key = ["hostname", "device", "field"]
    lf = nic_rows.select(
        "hostname",
        "field",
        "timestamp",
        "value",
        pl.col("labels").str.json_path_match("$.device").alias("device"),
    ).sort([*key, "timestamp"])
    dv = pl.col("value").diff().over(key)
    dt = pl.col("timestamp").diff().over(key).dt.total_microseconds() / 1e6
    rates = (
        lf.with_columns((pl.when(dv < 0).then(pl.col("value")).otherwise(dv) / dt).alias("rate"))
        .filter(pl.col("rate").is_not_null() & pl.col("rate").is_finite())
        .group_by("hostname", "device", "timestamp")
        .agg(
            pl.col("rate").filter(pl.col("field") == NIC_TX).mean().alias("tx_Bps"),
            pl.col("rate").filter(pl.col("field") == NIC_RX).mean().alias("rx_Bps"),
        )
        .pipe(collect)
    )
    schema = {
        "hostname": pl.String,
        "rail": pl.Int32,
        "device": pl.String,
        "timestamp": DATETIME_US,
        "tx_Bps": pl.Float64,
        "rx_Bps": pl.Float64,
        "bytes_per_s": pl.Float64,
    }
    if rates.height == 0:
        return pl.DataFrame(schema=schema)
    devs = rates.select("hostname", "device").unique().rows()
    rm = _rail_map(devs, rail_devices)
    return (
        rates.join(rm, on=["hostname", "device"], how="inner")
        .with_columns(
            (pl.col("tx_Bps").fill_null(0) + pl.col("rx_Bps").fill_null(0)).alias("bytes_per_s")
        )
        .select(list(schema))
        .sort("hostname", "rail", "timestamp")
    )


def _stat(expr: pl.Expr, stat: str) -> pl.Expr:
    if stat == "mean":
        return expr.mean()
    if stat == "max":
        return expr.max()
    m = re.fullmatch(r"p(\d{1,2})", stat)
    if m:
        return expr.quantile(int(m.group(1)) / 100, "linear")
    raise ValueError(f"stat must be 'mean', 'max' or 'pNN', not {stat!r}")


def link_throughput(
    data: pl.DataFrame | pl.LazyFrame,
    phases: pl.DataFrame | None = None,
    *,
    kind: str | None = "train",
    stat: str = "mean",
    rail_devices: Sequence[str] | Mapping[str, int] | None = None,
) -> pl.DataFrame:
    """Per node and rail: NIC, PCIe and NVLink throughput (TX + RX, B/s) in one phase kind.

    Rail i = NIC i = GPU i (rail-optimized fabric). Per timestamp TX + RX is formed first
    (PCIe: ``DCGM_FI_PROF_PCIE_TX_BYTES`` + ``_RX_BYTES``; NVLink: ``DCGM_FI_PROF_NVLINK_TX_BYTES``
    + ``_RX_BYTES``, else ``DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL`` x 1e6; NIC: :func:`nic_throughput`),
    then ``stat`` over the samples in phases of ``kind``.

    Args:
        data: reader frame (eager or lazy).
        phases: :func:`phases_from_log`; None = every sample.
        kind: ``train``, ``eval``, ``init`` or None (all phases).
        stat: ``mean``, ``max`` or a quantile ``p95``/``p50``...
        rail_devices: see :func:`nic_throughput`.

    Returns:
        hostname (String), rail (Int32), nic_Bps, pcie_Bps, nvlink_Bps (Float64, B/s; null where
        the source is absent), sorted by host and rail.
    """

    lf_all = as_lazy(data)
    # the samples of phases of ``kind``, by interval number (no strings per sample); two filters,
    # since polars pushes no part of a predicate holding search_sorted into the scan
    in_phase: list[pl.Expr] | None = None
    if phases is not None:
        bounds, table = interval_table(phases)
        ivs = (table.filter(pl.col("kind") == kind) if kind else table)["_iv"].to_list()
        if len(bounds) < 2 or not ivs:
            in_phase = [pl.lit(False)]
        else:
            in_phase = [in_span(bounds), interval_expr(bounds).is_in(ivs)]
    # every result row is one host's: run host batch by host batch (the phase table is made once)
    parts = [
        _link_batch(only_hosts(lf_all, hosts), in_phase, stat, rail_devices)
        for hosts in host_batches(lf_all)
    ]
    if len(parts) == 1:
        return parts[0]
    return pl.concat(parts).sort("hostname", "rail")


def _link_batch(
    lf_all: pl.LazyFrame, in_phase: list[pl.Expr] | None, stat: str, rail_devices: Any
) -> pl.DataFrame:
    """:func:`link_throughput` of one host batch; ``in_phase``: the filters of the samples to use
    (:func:`trainperf.telemetry.phases.with_phases` + the kind, as interval numbers), None = all.
    Filtering on the interval number keeps the samples, and their order, that the inner join of
    :func:`~trainperf.telemetry.phases.with_phases` on it followed by the kind filter kept."""

    def keep(lf):
        for f in in_phase or []:
            lf = lf.filter(f)
        return lf

    g = gpu_rows(lf_all).filter(pl.col("field_id").is_in([1009, 1010, 1011, 1012, 449]))
    per_ts = (
        keep(g)
        .group_by("hostname", "gpu", "timestamp")
        .agg(
            pl.col("value").filter(pl.col("field_id") == 1009).mean().alias("_ptx"),
            pl.col("value").filter(pl.col("field_id") == 1010).mean().alias("_prx"),
            pl.col("value").filter(pl.col("field_id") == 1011).mean().alias("_ntx"),
            pl.col("value").filter(pl.col("field_id") == 1012).mean().alias("_nrx"),
            (pl.col("value").filter(pl.col("field_id") == 449).mean() * 1e6).alias("_n449"),
        )
        .with_columns(
            (pl.col("_ptx") + pl.col("_prx")).alias("pcie"),
            pl.coalesce(pl.col("_ntx") + pl.col("_nrx"), pl.col("_n449")).alias("nvlink"),
        )
    )
    gpu = (
        per_ts.group_by("hostname", "gpu")
        .agg(
            _stat(pl.col("pcie"), stat).alias("pcie_Bps"),
            _stat(pl.col("nvlink"), stat).alias("nvlink_Bps"),
        )
        .rename({"gpu": "rail"})
        .pipe(collect)
    )
    nic = _nic_batch(lf_all.filter(pl.col("field").is_in([NIC_TX, NIC_RX])), rail_devices)
    if nic.height:
        nic = keep(nic)
    nic = nic.group_by("hostname", "rail").agg(_stat(pl.col("bytes_per_s"), stat).alias("nic_Bps"))
    out = gpu.join(nic, on=["hostname", "rail"], how="full", coalesce=True)
    return out.select(
        "hostname", pl.col("rail").cast(pl.Int32), "nic_Bps", "pcie_Bps", "nvlink_Bps"
    ).sort("hostname", "rail")


def node_throughput(link: pl.DataFrame) -> pl.DataFrame:
    """Per node totals and rail spread of :func:`link_throughput`.

    Returns:
        hostname (String), n_rails (UInt32), nic_total_Bps, pcie_total_Bps, nvlink_total_Bps
        (Float64, B/s, sum over rails), nic_min_Bps, nic_median_Bps, nic_max_Bps (Float64, B/s
        over rails), sorted by host.
    """
    return (
        link.group_by("hostname")
        .agg(
            pl.len().alias("n_rails"),
            pl.col("nic_Bps").sum().alias("nic_total_Bps"),
            pl.col("pcie_Bps").sum().alias("pcie_total_Bps"),
            pl.col("nvlink_Bps").sum().alias("nvlink_total_Bps"),
            pl.col("nic_Bps").min().alias("nic_min_Bps"),
            pl.col("nic_Bps").median().alias("nic_median_Bps"),
            pl.col("nic_Bps").max().alias("nic_max_Bps"),
        )
        .with_columns(pl.col("n_rails").cast(pl.UInt32))
        .sort("hostname")
    )


def rail_imbalance(
    link: pl.DataFrame, column: str = "nic_Bps", *, threshold: float = 0.5
) -> pl.DataFrame:
    """Rails whose throughput is below ``threshold`` x the median of their node's rails.

    The node median is polars' median over the node's rails with a non-null value (the mean of
    the two middle values for an even count). A node whose median is 0 flags nothing.

    Args:
        link: :func:`link_throughput` (or any frame with hostname, rail and ``column``).
        column: ``nic_Bps``, ``pcie_Bps`` or ``nvlink_Bps``.
        threshold: fraction of the node median.

    Returns:
        the flagged rails only: hostname (String), rail (Int32), value (Float64, B/s),
        node_median (Float64, B/s), ratio (Float64, value / node_median); sorted by host, rail.
    """
    d = link.filter(pl.col(column).is_not_null()).with_columns(
        pl.col(column).median().over("hostname").alias("node_median")
    )
    return (
        d.filter((pl.col("node_median") > 0) & (pl.col(column) < threshold * pl.col("node_median")))
        .select(
            "hostname",
            pl.col("rail").cast(pl.Int32),
            pl.col(column).alias("value"),
            "node_median",
            (pl.col(column) / pl.col("node_median")).alias("ratio"),
        )
        .sort("hostname", "rail")
    )


def rail_summary(link: pl.DataFrame) -> pl.DataFrame:
    """Per rail, across nodes: median and min of NIC, PCIe and NVLink throughput.

    Args:
        link: :func:`link_throughput`.

    Returns:
        rail (Int32), n_nodes (UInt32), then for each of nic, pcie, nvlink: ``<x>_median_GBps`` and
        ``<x>_min_GBps`` (Float64, GB/s = 1e9 B/s); sorted by rail.
    """
    aggs: list[pl.Expr] = [pl.col("hostname").n_unique().alias("n_nodes")]
    for x in ("nic", "pcie", "nvlink"):
        c = pl.col(f"{x}_Bps") / 1e9
        aggs += [c.median().alias(f"{x}_median_GBps"), c.min().alias(f"{x}_min_GBps")]
    return link.group_by("rail").agg(aggs).sort("rail")


def imbalance_summary(link: pl.DataFrame, *, threshold: float = 0.5) -> pl.DataFrame:
    """:func:`rail_imbalance` for NIC, PCIe and NVLink, counted per rail.

    Returns:
        source (String: ``NIC``, ``PCIe``, ``NVLink``), rail (Int32), n_flagged_nodes (UInt32),
        n_nodes (UInt32, nodes with a value for that source), median_ratio (Float64, median of
        value / node median over the flagged nodes); only rails flagged on at least one node.
    """
    parts = []
    for col, name in (("nic_Bps", "NIC"), ("pcie_Bps", "PCIe"), ("nvlink_Bps", "NVLink")):
        if col not in link.columns:
            continue
        n_nodes = link.filter(pl.col(col).is_not_null())["hostname"].n_unique()
        f = rail_imbalance(link, col, threshold=threshold)
        parts.append(
            f.group_by("rail")
            .agg(
                pl.len().cast(pl.UInt32).alias("n_flagged_nodes"),
                pl.col("ratio").median().alias("median_ratio"),
            )
            .with_columns(pl.lit(name).alias("source"), pl.lit(n_nodes, pl.UInt32).alias("n_nodes"))
            .select("source", "rail", "n_flagged_nodes", "n_nodes", "median_ratio")
        )
    schema = {
        "source": pl.String,
        "rail": pl.Int32,
        "n_flagged_nodes": pl.UInt32,
        "n_nodes": pl.UInt32,
        "median_ratio": pl.Float64,
    }
    if not parts:
        return pl.DataFrame(schema=schema)
    return pl.concat(parts).cast(schema).sort("source", "rail")


# --------------------------------------------------------------------------------------
# What cannot be computed
