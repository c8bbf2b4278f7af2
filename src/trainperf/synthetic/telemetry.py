"""Seeded SYNTHETIC telemetry of a GPU cluster during one MLPerf GPT-3 run (not measured data).

What it makes: dcgm-exporter series for every GPU of an ``n_nodes x gpus_per_node`` cluster and
node-exporter NIC counters for every rail, sampled every ``interval_s`` seconds, following the
phases of a real MLPerf log (:func:`trainperf.telemetry.phases_from_log`: initialization, each
training block, each evaluation), optionally shifted in time. The job's nodes (the first
``job_nodes`` hosts) run the phases; the other nodes idle. Every series carries
``synthetic="true"`` (see :func:`trainperf.telemetry.is_synthetic`) and the job's series carry the
Slurm job id as ``hpc_job`` (dcgm-exporter's HPC job mapping).

Fields (names, ids and units as dcgm-exporter exports them, :data:`trainperf.dcgm.FIELDS`):

===========================================  =======  ============================================
metric                                       unit     model (train / eval / init / idle means)
===========================================  =======  ============================================
DCGM_FI_PROF_PIPE_TENSOR_ACTIVE (1004)       ratio    0.45 / 0.15 / 0.002 / 0; 0.45 echoes the
                                                      talk's "tensor core ~45%" (speakerdeck.com/
                                                      yuukit/sakuraone-llm-training-benchmarking;
                                                      its definition is not stated)
DCGM_FI_PROF_SM_ACTIVE (1002)                ratio    0.82 / 0.45 / 0.05 / 0
DCGM_FI_PROF_DRAM_ACTIVE (1005)              ratio    0.38 / 0.30 / 0.02 / 0
DCGM_FI_DEV_GPU_UTIL (203)                   %        100 / 98 / 25 / 0
DCGM_FI_DEV_POWER_USAGE (155)                W        640 / 430 / 140 / 72
DCGM_FI_DEV_SM_CLOCK (100)                   MHz      1755 / 1890 / 1980 / 345
DCGM_FI_DEV_FB_USED (252)                    MiB      72000 / 74000 / 40000 / 1
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (156)   mJ       counter: integral of the power
DCGM_FI_PROF_PCIE_TX/RX_BYTES (1009/1010)    B/s      TX + RX = ``pcie_Bps`` x rail factor in
                                                      training (half each way)
DCGM_FI_PROF_NVLINK_TX/RX_BYTES (1011/1012)  B/s      TX + RX = ``nvlink_Bps`` x rail factor
node_network_transmit_bytes_total /          bytes    node-exporter counters, label
node_network_receive_bytes_total                      ``device="ens<r+1>np0"`` = rail r = GPU r;
                                                      rate TX + RX = ``rail_Bps`` (``slow_rail_Bps``
                                                      on ``slow_rails``) in training
===========================================  =======  ============================================

Network defaults follow job B of the SAKURAONE paper (arXiv 2604.13600 section 7, as relayed by a
third-party summary; not checked against the paper: 60-s averages, 32 nodes): 18.9 GB/s per NIC port on 6 rails and 8.0 GB/s on 2, per-GPU NVLink 114.5 GB/s and
PCIe 17.4 GB/s (TX + RX). Whether the paper's NIC figure is one direction or TX + RX is not stated;
here it is TX + RX. The imbalance (the rail factor ``slow_rail_Bps / rail_Bps``) applies to NIC,
PCIe and NVLink of the slow rails, as the paper saw it in all three. Evaluation, initialization and
idle scale the training rates by 0.15, 0.05 and 0.0005. Noise: Gaussian, per sample, plus a small
static per-GPU offset; the ratios are clipped to 0-1.

Outputs, identical values in both (values are rounded as the exporter prints them):

* :func:`write_exposition`: a Prometheus text archive, one sample per line with its own
  millisecond timestamp (readable by :func:`trainperf.dcgm.read_exposition`), written scrape by
  scrape;
* :func:`write_parquet`: the partitioned store of :func:`trainperf.dcgm.write_parquet_partitioned`
  (read with :func:`trainperf.dcgm.scan_parquet`), written host by host in chunks of at most
  ``flush_rows`` rows.

Memory stays bounded: values are made per (host, block of ``BLOCK_SCRAPES`` scrapes) with a
random generator seeded by ``(seed, host, block)``, and counters carry their state from block to
block, so output does not depend on the writer and 800 GPUs x 24 h at 10 s is possible.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import shutil
import uuid as _uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import polars as pl

from trainperf import dcgm, project_root, telemetry
from trainperf.atomic import write_text_atomic
from trainperf.dcgm import store as dcgm_store
from trainperf.dcgm.series import normalise_series, series_frame
from trainperf.tables import PACKAGE_TABLES

__all__ = [
    "BLOCK_SCRAPES",
    "DEFAULT_LOG",
    "GPU_FIELDS",
    "SyntheticConfig",
    "SyntheticField",
    "default_phases",
    "hostnames",
    "iter_frames",
    "job_hostnames",
    "nic_devices",
    "scrape_times",
    "ensure_parquet",
    "store_key",
    "write_exposition",
    "write_parquet",
]

DEFAULT_LOG = "data/mlperf/v4.1/NVIDIA/results/eos_n64_ngc24.09_nemo/gpt3/result_0.txt"
"""The bundled MLPerf log whose phases the default dataset follows (relative to the repo root)."""

BLOCK_SCRAPES = 360
"""Scrapes per generation block (1 h at 10 s); fixed so that values do not depend on the writer."""

KINDS = ("idle", "init", "train", "eval")
_K = {k: i for i, k in enumerate(KINDS)}


class SyntheticField(NamedTuple):
    """How the generator draws one field (a value of :data:`GPU_FIELDS`)."""

    decimals: int  # decimals written
    lo: float  # values clipped to lo..hi
    hi: float
    by_kind: tuple[tuple[float, float], ...]  # (mean, sd) per phase kind, in KINDS order


# field -> how it is drawn
GPU_FIELDS: dict[str, SyntheticField] = {
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": SyntheticField(
        6,
        0.0,
        1.0,
        ((0.0, 0.0), (0.002, 0.002), (0.45, 0.015), (0.15, 0.03)),
    ),
    "DCGM_FI_PROF_SM_ACTIVE": SyntheticField(
        6, 0.0, 1.0, ((0.0, 0.0), (0.05, 0.03), (0.82, 0.02), (0.45, 0.05))
    ),
    "DCGM_FI_PROF_DRAM_ACTIVE": SyntheticField(
        6,
        0.0,
        1.0,
        ((0.0, 0.0), (0.02, 0.01), (0.38, 0.02), (0.30, 0.03)),
    ),
    "DCGM_FI_DEV_GPU_UTIL": SyntheticField(
        0, 0.0, 100.0, ((0.0, 0.0), (25.0, 15.0), (100.0, 0.5), (98.0, 2.0))
    ),
    "DCGM_FI_DEV_POWER_USAGE": SyntheticField(
        3,
        50.0,
        700.0,
        ((72.0, 2.0), (140.0, 20.0), (640.0, 25.0), (430.0, 30.0)),
    ),
    "DCGM_FI_DEV_SM_CLOCK": SyntheticField(
        0,
        345.0,
        1980.0,
        ((345.0, 0.0), (1980.0, 0.0), (1755.0, 40.0), (1890.0, 40.0)),
    ),
    "DCGM_FI_DEV_FB_USED": SyntheticField(
        0,
        0.0,
        81559.0,
        ((1.0, 0.0), (40000.0, 15000.0), (72000.0, 300.0), (74000.0, 300.0)),
    ),
}
"""Gauge model of the GPU fields: (decimals, clip low, clip high, (mean, sd) per kind idle/init/train/eval)."""

_RATE_MULT = np.array([0.0005, 0.05, 1.0, 0.15])  # idle, init, train, eval
_PCI_BUS = [f"00000000:{b}:00.0" for b in ("18", "2A", "3A", "5D", "9A", "AB", "BA", "DB")]


@dataclass(frozen=True)
class SyntheticConfig:
    """Parameters of the synthetic cluster (all defaults: the book's default dataset).

    Attributes:
        n_nodes, gpus_per_node: cluster size (rails = GPUs per node).
        interval_s: scrape interval, s.
        seed: random seed; equal configs and phases give byte-identical output.
        hostname_format: ``str.format`` pattern of the node names (1-based).
        job_id: Slurm job id put as ``hpc_job`` on the job nodes' GPU series (None: no label).
        job_nodes: how many nodes (the first ones) run the job; the rest idle.
        slow_rails: rails (= NIC = GPU index) slowed on the slow nodes.
        slow_nodes: how many of the job's nodes have slow rails (None: all of them).
        rail_Bps, slow_rail_Bps: NIC TX + RX per rail in training, B/s.
        pcie_Bps, nvlink_Bps: per-GPU PCIe / NVLink TX + RX in training on a normal rail, B/s.
        margin_s: idle time recorded before the first and after the last phase, s.
        start: shift the phases so that the first starts here (datetime / epoch s / ISO); None
            keeps the log's own times.
        model_name, driver_version: ``modelName`` and ``DCGM_FI_DRIVER_VERSION`` labels.
        exclude_fields: GPU fields not to emit (e.g. ``("DCGM_FI_PROF_SM_ACTIVE",)``, off by
            default in dcgm-exporter), to exercise "what cannot be computed".
        nic: emit the node-exporter NIC counters.
    """

    n_nodes: int = 100
    gpus_per_node: int = 8
    interval_s: float = 10.0
    seed: int = 0
    hostname_format: str = "gpu{:03d}"
    job_id: str | None = "424242"
    job_nodes: int = 64
    slow_rails: tuple[int, ...] = (2, 5)
    slow_nodes: int | None = None
    rail_Bps: float = 18.9e9
    slow_rail_Bps: float = 8.0e9
    pcie_Bps: float = 17.4e9
    nvlink_Bps: float = 114.5e9
    margin_s: float = 120.0
    start: Any = None
    model_name: str = "NVIDIA H100 80GB HBM3"
    driver_version: str = "550.90.07"
    exclude_fields: tuple[str, ...] = field(default_factory=tuple)
    nic: bool = True

    def __post_init__(self) -> None:
        if self.n_nodes < 1 or self.gpus_per_node < 1 or self.interval_s <= 0:
            raise ValueError("n_nodes, gpus_per_node and interval_s must be positive")
        if not 0 <= self.job_nodes <= self.n_nodes:
            raise ValueError(f"job_nodes must be in 0..n_nodes ({self.n_nodes})")
        bad = [r for r in self.slow_rails if not 0 <= r < self.gpus_per_node]
        if bad:
            raise ValueError(f"slow_rails {bad} outside 0..{self.gpus_per_node - 1}")
        unknown = [
            f for f in self.exclude_fields if f not in GPU_FIELDS and dcgm.field_id(f) is None
        ]
        if unknown:
            raise ValueError(f"exclude_fields: unknown fields {unknown}")


def default_phases(log: str | Path | None = None) -> pl.DataFrame:
    """Phases of the bundled Eos v4.1 GPT-3 log (:data:`DEFAULT_LOG`) or of ``log``."""
    if log is None:
        log = project_root() / DEFAULT_LOG
    return telemetry.phases_from_log(log)


def hostnames(cfg: SyntheticConfig) -> list[str]:
    """All node names of the synthetic cluster."""
    return [cfg.hostname_format.format(i + 1) for i in range(cfg.n_nodes)]


def job_hostnames(cfg: SyntheticConfig) -> list[str]:
    """Node names running the job (the first ``job_nodes``)."""
    return hostnames(cfg)[: cfg.job_nodes]


def nic_devices(cfg: SyntheticConfig) -> list[str]:
    """NIC device names, position = rail = GPU index (``ens1np0`` serves GPU 0)."""
    return [f"ens{r + 1}np0" for r in range(cfg.gpus_per_node)]


def _phases(cfg: SyntheticConfig, phases: pl.DataFrame) -> pl.DataFrame:
    return telemetry.shift_phases(phases, cfg.start) if cfg.start is not None else phases


def scrape_times(cfg: SyntheticConfig, phases: pl.DataFrame) -> np.ndarray:
    """Scrape times, epoch seconds (float64, multiples of ``interval_s``) covering the phases
    plus ``margin_s`` on each side."""
    p = _phases(cfg, phases)
    t0 = p["start"].min().timestamp() - cfg.margin_s
    t1 = p["end"].max().timestamp() + cfg.margin_s
    iv = cfg.interval_s
    first = math.ceil(t0 / iv) * iv
    n = int(math.floor((t1 - first) / iv)) + 1
    return first + iv * np.arange(max(n, 0), dtype=np.float64)


def _kind_at(t: np.ndarray, phases: pl.DataFrame) -> np.ndarray:
    """KINDS index at each time (idle outside phases); phase [start, end)."""
    k = np.full(t.shape, _K["idle"], dtype=np.int8)
    for kind, s, e in phases.select("kind", "start", "end").iter_rows():
        m = (t >= s.timestamp()) & (t < e.timestamp())
        k[m] = _K[kind]
    return k


def _gpu_uuid(seed: int, host: str, gpu: int) -> str:
    h = hashlib.sha256(f"synthetic:{seed}:{host}:{gpu}".encode()).digest()[:16]
    return "GPU-" + str(_uuid.UUID(bytes=h))


def _series(cfg: SyntheticConfig, host_i: int) -> list[tuple[str, dict[str, str], str]]:
    """(metric name, labels, kind) of every series of one host, in output order."""
    host = cfg.hostname_format.format(host_i + 1)
    in_job = host_i < cfg.job_nodes
    out = []
    names = [f for f in GPU_FIELDS if f not in cfg.exclude_fields]
    extra = [
        f
        for f in (
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
            "DCGM_FI_PROF_PCIE_TX_BYTES",
            "DCGM_FI_PROF_PCIE_RX_BYTES",
            "DCGM_FI_PROF_NVLINK_TX_BYTES",
            "DCGM_FI_PROF_NVLINK_RX_BYTES",
        )
        if f not in cfg.exclude_fields
    ]
    for name in names + extra:
        for g in range(cfg.gpus_per_node):
            lab = {
                "gpu": str(g),
                "UUID": _gpu_uuid(cfg.seed, host, g),
                "pci_bus_id": _PCI_BUS[g % len(_PCI_BUS)],
                "device": f"nvidia{g}",
                "modelName": cfg.model_name,
                "hostname": host,
                "DCGM_FI_DRIVER_VERSION": cfg.driver_version,
            }
            if in_job and cfg.job_id is not None:
                lab["hpc_job"] = str(cfg.job_id)
            lab["synthetic"] = "true"
            out.append((name, lab, "gpu"))
    if cfg.nic:
        for name in (telemetry.NIC_TX, telemetry.NIC_RX):
            for dev in nic_devices(cfg):
                lab = {
                    "device": dev,
                    "instance": f"{host}:9100",
                    "job": "node-exporter",
                    "synthetic": "true",
                }
                out.append((name, lab, "nic"))
    return out


def _rail_factor(cfg: SyntheticConfig, host_i: int) -> np.ndarray:
    f = np.ones(cfg.gpus_per_node)
    n_slow = cfg.job_nodes if cfg.slow_nodes is None else min(cfg.slow_nodes, cfg.job_nodes)
    if host_i < n_slow:
        for r in cfg.slow_rails:
            f[r] = cfg.slow_rail_Bps / cfg.rail_Bps
    return f


def _host_block(
    cfg: SyntheticConfig,
    host_i: int,
    block: int,
    t: np.ndarray,
    kind: np.ndarray,
    state: dict[str, np.ndarray],
) -> np.ndarray:
    """Values of one host for the scrapes ``t`` of one block: array (n_series, n_t), in
    :func:`_series` order. ``state`` carries the counters between blocks (updated in place)."""
    G, n = cfg.gpus_per_node, t.size
    rng = np.random.default_rng([cfg.seed, host_i, block])
    static = np.random.default_rng([cfg.seed, host_i, 1_000_000_007])
    gpu_scale = 1.0 + 0.01 * static.standard_normal(G)  # static per-GPU offsets
    power_off = 8.0 * static.standard_normal(G)
    if host_i >= cfg.job_nodes:
        kind = np.full(n, _K["idle"], dtype=np.int8)
    rows: list[np.ndarray] = []
    power = None
    for name, (dec, lo, hi, prof) in GPU_FIELDS.items():
        mean = np.array([m for m, _ in prof])[kind]  # (n,)
        sd = np.array([s for _, s in prof])[kind]
        z = rng.standard_normal((G, n))
        v = mean[None, :] + sd[None, :] * z
        if name.startswith("DCGM_FI_PROF"):
            v = v * gpu_scale[:, None]
        if name == "DCGM_FI_DEV_POWER_USAGE":
            v = v + power_off[:, None] * (kind != _K["idle"])[None, :]
        v = np.round(np.clip(v, lo, hi), dec)
        if name == "DCGM_FI_DEV_POWER_USAGE":
            power = v
        if name not in cfg.exclude_fields:
            rows.append(v)
    dt = cfg.interval_s
    # energy counter, mJ: integral of the power over each interval
    if "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" not in cfg.exclude_fields:
        if "energy" not in state:
            state["energy"] = np.floor(static.uniform(1e9, 5e10, G))
        inc = np.round(power * dt * 1000.0)
        e = state["energy"][:, None] + np.cumsum(inc, axis=1)
        state["energy"] = e[:, -1].copy()
        rows.append(e)
    mult = _RATE_MULT[kind][None, :]  # (1, n)
    rf = _rail_factor(cfg, host_i)[:, None]  # (G, 1)
    for total, names in (
        (cfg.pcie_Bps, ("DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES")),
        (cfg.nvlink_Bps, ("DCGM_FI_PROF_NVLINK_TX_BYTES", "DCGM_FI_PROF_NVLINK_RX_BYTES")),
    ):
        for nm in names:
            v = 0.5 * total * rf * mult * (1.0 + 0.03 * rng.standard_normal((G, n)))
            if nm not in cfg.exclude_fields:
                rows.append(np.round(np.clip(v, 0.0, None)))
    if cfg.nic:
        for key in ("tx", "rx"):
            rate = 0.5 * cfg.rail_Bps * rf * mult * (1.0 + 0.03 * rng.standard_normal((G, n)))
            inc = np.round(np.clip(rate, 0.0, None) * dt)
            if key not in state:
                state[key] = np.floor(static.uniform(1e12, 1e14, G))
            c = state[key][:, None] + np.cumsum(inc, axis=1)
            state[key] = c[:, -1].copy()
            rows.append(c)
    return np.concatenate(rows, axis=0)


def _blocks(
    cfg: SyntheticConfig, phases: pl.DataFrame
) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    p = _phases(cfg, phases)
    t = scrape_times(cfg, phases)
    for b, i in enumerate(range(0, t.size, BLOCK_SCRAPES)):
        tb = t[i : i + BLOCK_SCRAPES]
        yield b, tb, _kind_at(tb, p)


def _series_table(cfg: SyntheticConfig, host_i: int) -> tuple[pl.DataFrame, list[str]]:
    """Reader-schema series attributes (via dcgm's own label normalisation) and exposition keys."""
    ser = _series(cfg, host_i)
    rows = [normalise_series(name, lab) for name, lab, _ in ser]
    table = series_frame(rows).drop("_is_int", "_is_double").with_row_index("sid")
    keys = []
    for name, lab, _ in ser:
        body = ",".join(f'{k}="{v}"' for k, v in lab.items())
        keys.append(f"{name}{{{body}}}")
    return table, keys


def iter_frames(
    cfg: SyntheticConfig, phases: pl.DataFrame, *, flush_rows: int = 500_000
) -> Iterator[pl.DataFrame]:
    """Yield the synthetic telemetry as reader frames (:data:`trainperf.dcgm.SCHEMA`), host by host.

    Each frame holds one host's samples for consecutive blocks, at most about ``flush_rows`` rows
    (one block is never split). Values are in the units of :data:`trainperf.dcgm.FIELDS`; NIC
    counters have a null ``field_id`` and ``field`` = the node-exporter metric name.
    """
    blocks = list(_blocks(cfg, phases))
    for h in range(cfg.n_nodes):
        table, _ = _series_table(cfg, h)
        n_s = table.height
        state: dict[str, np.ndarray] = {}
        buf: list[pl.DataFrame] = []
        rows = 0
        for b, tb, kb in blocks:
            vals = _host_block(cfg, h, b, tb, kb, state)
            ts_us = np.round(tb * 1e6).astype(np.int64)
            obs = pl.DataFrame(
                {
                    "sid": np.repeat(np.arange(n_s, dtype=np.uint32), tb.size),
                    "timestamp": np.tile(ts_us, n_s),
                    "value": vals.reshape(-1),
                }
            )
            buf.append(obs)
            rows += obs.height
            if rows >= flush_rows:
                yield _to_schema(pl.concat(buf), table)
                buf, rows = [], 0
        if buf:
            yield _to_schema(pl.concat(buf), table)


def _to_schema(obs: pl.DataFrame, table: pl.DataFrame) -> pl.DataFrame:
    return (
        obs.join(table, on="sid", how="left", maintain_order="left")
        .with_columns(pl.col("timestamp").cast(pl.Datetime("us", "UTC")))
        .select([pl.col(c).cast(t) for c, t in dcgm.SCHEMA.items()])
    )


def write_parquet(
    cfg: SyntheticConfig, phases: pl.DataFrame, out_dir: str | Path, *, flush_rows: int = 500_000
) -> list[Path]:
    """Write the synthetic telemetry as a partitioned Parquet store (host x UTC day).

    Uses :func:`trainperf.dcgm.write_parquet_partitioned` on each chunk of :func:`iter_frames`,
    plus ``out_dir/SYNTHETIC.json`` describing the configuration (the store is synthetic).

    Returns:
        the Parquet files written.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    for frame in iter_frames(cfg, phases, flush_rows=flush_rows):
        files += dcgm.write_parquet_partitioned(frame, out)
    (out / "SYNTHETIC.json").write_text(json.dumps(_describe(cfg, phases), indent=2) + "\n")
    return files


KEY_FILE = "SYNTHETIC.key"
"""File of a synthetic store holding :func:`store_key` of what made it (written last)."""


def store_key(cfg: SyntheticConfig, phases: pl.DataFrame) -> str:
    """SHA-256 of everything the synthetic store depends on: the configuration, the phases, the
    generator's source (this module, the DCGM field table and the Parquet writer's module) and the
    polars version (which writes the files)."""

    h = hashlib.sha256()
    h.update(json.dumps(_describe(cfg, phases), sort_keys=True, default=str).encode())
    h.update(_phases(cfg, phases).write_csv().encode())
    for f in (Path(__file__), Path(dcgm_store.__file__), PACKAGE_TABLES / "dcgm_fields.csv"):
        h.update(f.read_bytes())
    h.update(pl.__version__.encode())
    return h.hexdigest()


def ensure_parquet(
    cfg: SyntheticConfig,
    phases: pl.DataFrame,
    out_dir: str | Path,
    *,
    progress: Any = print,
) -> bool:
    """Make ``out_dir`` hold the synthetic store of ``cfg`` and ``phases``, reusing it when its
    :func:`store_key` says it was made from the same inputs (the main job then skips 4-5 s of
    generation on every run).

    A store without a key, or with another one, is deleted and written again
    (:func:`write_parquet`); the key file is written last, so a killed generation is never
    reused.

    Args:
        progress: called with one line saying "reusing" or "generating" (None: silent).

    Returns:
        True when the store was reused, False when it was generated.
    """

    out = Path(out_dir)
    key = store_key(cfg, phases)
    kf = out / KEY_FILE
    if kf.is_file() and kf.read_text().strip() == key:
        if progress:
            progress(
                f"synthetic telemetry: reusing {out} (key {key[:12]}: same config, phases, generator)"
            )
        return True
    if progress:
        progress(f"synthetic telemetry: generating {out} (key {key[:12]})")
    if out.exists():
        shutil.rmtree(out)
    write_parquet(cfg, phases, out)
    write_text_atomic(key + "\n", kf)
    return False


def _describe(cfg: SyntheticConfig, phases: pl.DataFrame) -> dict[str, Any]:
    d = {k: getattr(cfg, k) for k in cfg.__dataclass_fields__}
    d["start"] = None if cfg.start is None else str(cfg.start)
    d["slow_rails"] = list(cfg.slow_rails)
    d["exclude_fields"] = list(cfg.exclude_fields)
    p = _phases(cfg, phases)
    d["phases_start"] = p["start"].min().isoformat()
    d["phases_end"] = p["end"].max().isoformat()
    d["note"] = "SYNTHETIC telemetry generated by trainperf.synthetic.telemetry; not measured data"
    return d


def _fmt1(x: float, dec: int) -> str:
    return str(int(x)) if dec == 0 else f"{x:.{dec}f}"


def _decimals(name: str) -> int:
    if name in GPU_FIELDS:
        return GPU_FIELDS[name].decimals
    return 0


def write_exposition(cfg: SyntheticConfig, phases: pl.DataFrame, path: str | Path) -> Path:
    """Write the synthetic telemetry as a Prometheus text archive with per-sample timestamps.

    Each line is ``name{labels} value timestamp_ms``; a ``# SCRAPE <epoch s>`` marker line
    starts each scrape (both forms :func:`trainperf.dcgm.read_exposition` accepts). Doubles are
    printed with the decimals of :data:`GPU_FIELDS` (ratios 6, as the exporter's ``%f``), ints and
    counters as integers. Written scrape by scrape (values are made per block of
    :data:`BLOCK_SCRAPES` scrapes, text per scrape), so memory stays bounded; Python formats every
    line, so a cluster-day (about 1e8 lines) takes long: use :func:`write_parquet` at that scale.
    ``.gz`` paths are gzip-compressed.

    Returns:
        ``path``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    opener = gzip.open if path.suffix == ".gz" else open
    keys = [_series_table(cfg, h)[1] for h in range(cfg.n_nodes)]
    decs = [[_decimals(name) for name, _, _ in _series(cfg, h)] for h in range(cfg.n_nodes)]
    states: list[dict[str, np.ndarray]] = [{} for _ in range(cfg.n_nodes)]
    with opener(path, "wt", encoding="utf-8", newline="\n") as fh:
        fh.write(
            "# SYNTHETIC dcgm-exporter + node-exporter telemetry generated by trainperf.synthetic.telemetry "
            f"(seed {cfg.seed}); not measured data\n"
        )
        for b, tb, kb in _blocks(cfg, phases):
            # one block of values for all hosts (floats); text is made one scrape at a time
            per_host = [_host_block(cfg, h, b, tb, kb, states[h]) for h in range(cfg.n_nodes)]
            for j, ts in enumerate(tb):
                ms = int(round(ts * 1000))
                lines = [f"# SCRAPE {ts:.0f}"]
                for h in range(cfg.n_nodes):
                    kh, dh, col = keys[h], decs[h], per_host[h][:, j]
                    lines.extend(f"{kh[s]} {_fmt1(col[s], dh[s])} {ms}" for s in range(len(kh)))
                fh.write("\n".join(lines) + "\n")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m trainperf.synthetic.telemetry --out DIR [--format parquet|exposition] ...``."""

    ap = argparse.ArgumentParser(
        description="Write SYNTHETIC cluster telemetry (not measured data)."
    )
    ap.add_argument("--out", required=True, help="Parquet store folder, or .prom/.prom.gz file")
    ap.add_argument("--format", choices=["parquet", "exposition"], default="parquet")
    ap.add_argument("--log", default=None, help=f"MLPerf result file (default {DEFAULT_LOG})")
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--job-nodes", type=int, default=64)
    ap.add_argument("--interval", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", default=None, help="shift the run to start here (ISO 8601)")
    a = ap.parse_args(argv)
    cfg = SyntheticConfig(
        n_nodes=a.nodes, job_nodes=a.job_nodes, interval_s=a.interval, seed=a.seed, start=a.start
    )
    ph = default_phases(a.log)
    if a.format == "parquet":
        n = len(write_parquet(cfg, ph, a.out))
        print(f"wrote {n} Parquet files under {a.out} (synthetic)")
    else:
        print(f"wrote {write_exposition(cfg, ph, a.out)} (synthetic)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
