"""GPU telemetry sampler on NVML (nvidia-ml-py), written as dcgm-exporter exposition text.

Use it where no DCGM / dcgm-exporter runs (a laptop, a cloud VM, a container without the host
engine) to get a capture that :func:`trainperf.dcgm.read_exposition` reads like a real
dcgm-exporter archive::

    python -m trainperf.capture.collect --interval 1 --out telemetry.prom --duration 600
    python -m trainperf.capture.collect --interval 1 --out telemetry.prom -- python train.py ...

The second form samples while the command runs and exits with the command's exit code.
Without ``--duration`` and without a command it samples until SIGTERM or SIGINT.

Output
------
One block per scrape, formatted in memory, then appended to ``--out`` with a single
``os.write`` on an ``O_APPEND`` descriptor (``--fsync`` adds an ``fsync``). SIGTERM/SIGINT only
set a flag checked between scrapes, so a stopped collector leaves whole blocks only; just a
SIGKILL or power loss in the middle of a write can truncate the last block::

    # SCRAPE 1731000000.123
    # HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).
    # TYPE DCGM_FI_DEV_POWER_USAGE gauge
    DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-...",pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA H200",Hostname="node1",DCGM_FI_DRIVER_VERSION="580.65.06"} 512.345000 1731000000123

Every sample carries its own timestamp (epoch **milliseconds**, Prometheus text format); the
``# SCRAPE`` line (epoch seconds) is the scrape marker :mod:`trainperf.dcgm` also accepts.
Labels follow dcgm-exporter's render template (``gpu``, ``UUID``, ``pci_bus_id``, ``device``,
``modelName``, host label, ``DCGM_FI_DRIVER_VERSION``; plus ``hpc_job`` when a Slurm job id is
known). The host label is ``Hostname`` as dcgm-exporter wrote it until commit d5e5f51
(2026-05-12); ``--host-label hostname`` gives the new spelling. Values use dcgm-exporter's
number formats: doubles with 6 decimals (``%f``), int64 fields as integers. A value NVML does
not give (not supported, no permission, first GPM interval) is left out, as the current
exporter drops DCGM blank values.

Field mapping
-------------
Units are those of the DCGM field (ids and units: ``dcgmlib/dcgm_fields.h`` in
https://github.com/NVIDIA/DCGM and
https://docs.nvidia.com/datacenter/dcgm/latest/dcgm-api/dcgm-api-field-ids.html; NVML calls:
https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html; GPM:
https://docs.nvidia.com/deploy/nvml-api/group__nvmlGpmEnums.html and
https://docs.nvidia.com/deploy/nvml-api/group__nvmlGpmFunctions.html).

=====================================  ====  ======  ===============================================
DCGM field written                     id    unit    NVML source and conversion
=====================================  ====  ======  ===============================================
DCGM_FI_PROF_GR_ENGINE_ACTIVE          1001  ratio   GPM ``GRAPHICS_UTIL`` (%) / 100
DCGM_FI_PROF_SM_ACTIVE                 1002  ratio   GPM ``SM_UTIL`` (%) / 100
DCGM_FI_PROF_SM_OCCUPANCY              1003  ratio   GPM ``SM_OCCUPANCY`` (%) / 100
DCGM_FI_PROF_PIPE_TENSOR_ACTIVE        1004  ratio   GPM ``ANY_TENSOR_UTIL`` (%) / 100
DCGM_FI_PROF_PIPE_TENSOR_HMMA_ACTIVE   1014  ratio   GPM ``HMMA_TENSOR_UTIL`` (%) / 100
DCGM_FI_PROF_DRAM_ACTIVE               1005  ratio   GPM ``DRAM_BW_UTIL`` (%) / 100
DCGM_FI_PROF_PCIE_TX_BYTES             1009  B/s     GPM ``PCIE_TX_PER_SEC`` (MiB/s) x 2**20
DCGM_FI_PROF_PCIE_RX_BYTES             1010  B/s     GPM ``PCIE_RX_PER_SEC`` (MiB/s) x 2**20
DCGM_FI_PROF_NVLINK_TX_BYTES           1011  B/s     GPM ``NVLINK_TOTAL_TX_PER_SEC`` (MiB/s) x 2**20
DCGM_FI_PROF_NVLINK_RX_BYTES           1012  B/s     GPM ``NVLINK_TOTAL_RX_PER_SEC`` (MiB/s) x 2**20
DCGM_FI_DEV_GPU_UTIL                   203   %       ``nvmlDeviceGetUtilizationRates().gpu`` (0–100)
DCGM_FI_DEV_POWER_USAGE                155   W       ``nvmlDeviceGetPowerUsage`` (mW) / 1000
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION   156   mJ      ``nvmlDeviceGetTotalEnergyConsumption`` (mJ)
DCGM_FI_DEV_SM_CLOCK                   100   MHz     ``nvmlDeviceGetClockInfo(NVML_CLOCK_SM)``
DCGM_FI_DEV_FB_USED                    252   MiB     ``nvmlDeviceGetMemoryInfo`` (v2) ``.used`` // 2**20
DCGM_FI_DEV_GPU_TEMP                   150   C       ``nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU)``
DCGM_FI_DEV_PCIE_TX_THROUGHPUT         200   KB/s    ``nvmlDeviceGetPcieThroughput`` – only without GPM
DCGM_FI_DEV_PCIE_RX_THROUGHPUT         201   KB/s    ``nvmlDeviceGetPcieThroughput`` – only without GPM
=====================================  ====  ======  ===============================================

How the GPM metrics differ from the DCGM profiling fields they stand for:

* **Scale.** Every GPM utilisation metric is a percent 0.0–100.0; every DCGM ``PROF`` activity
  field is a ratio 0–1. They are divided by 100 here. GPM throughputs are MiB/s (2**20 B);
  DCGM's are B/s.
* **Averaging window.** A GPM metric is computed from two GPM samples
  (``nvmlGpmSampleGet``, ``nvmlGpmMetricsGet``); this collector takes one GPM sample per scrape,
  so each value averages over the scrape interval (``--interval``) that ends at the sample's
  timestamp. DCGM samples profiling fields at 1 Hz internally and dcgm-exporter reports the
  latest sample (NVIDIA/dcgm-exporter#53), so DCGM values average over ~1 s whatever the scrape
  interval. At ``--interval 1`` the two agree; at longer intervals ours are smoother.
  The first scrape's GPM values cover the time since the collector started.
* **SM activity.** GPM ``SM_UTIL``: "percentage of SMs that were busy"; DCGM ``SM_ACTIVE``:
  "fraction of cycles an SM has at least one warp assigned, averaged over all SMs". Averaged over
  an interval both are the busy fraction of SM-cycles; NVIDIA does not document that they read
  the same counters.
* **Tensor activity.** GPM ``ANY_TENSOR_UTIL``: "percentage of time the GPU's SMs were doing ANY
  tensor operations" (HMMA, IMMA, DMMA/DFMA). DCGM ``PIPE_TENSOR_ACTIVE`` (1004): "ratio of cycles
  any tensor pipe is active" (dcgm-exporter's HELP says "(HMMA)"). We map ANY to 1004 and GPM
  ``HMMA_TENSOR_UTIL`` (FP16/BF16; on Hopper FP8 tensor work is not split out) to 1014. For a
  bf16 training job the two should be nearly equal; for FP8 or INT8 work only 1004 sees it.
* **DRAM.** GPM ``DRAM_BW_UTIL``: "DRAM bandwidth used vs theoretical maximum"; DCGM
  ``DRAM_ACTIVE``: "ratio of cycles the memory interface is sending or receiving". Both are
  relative to peak; they can differ by protocol overheads.
* **PCIe / NVLink bytes.** DCGM ``PCIE_*_BYTES`` count protocol headers and payload
  (dcgm-exporter HELP); NVML does not say whether GPM ``PCIE_*_PER_SEC`` includes headers.
  GPM ``NVLINK_TOTAL_RX`` is "NvLink read bandwidth", ``TX`` "write bandwidth", all links.
* **Not emitted without GPM.** GPM needs a Hopper or newer GPU and a driver that supports it
  (``nvmlGpmQueryDeviceSupport``); on older GPUs, or where GPM is refused (containers, MIG),
  the ``PROF`` fields are left out and the legacy NVML PCIe counters (fields 200/201, KB/s,
  a 20 ms window per call) are written instead.

The non-GPM fields read the same NVML calls DCGM reads for those fields: GPU_UTIL is NVML's
coarse "a kernel was running" percentage, not SM coverage; power is the driver's averaged
board power; energy is a counter in mJ since the driver was loaded (it resets on reload);
FB_USED is MiB (2**20 bytes).

Checked on 2026-11-29 on 2x H200 (Firecracker VM, driver 580.159.04, nvidia-ml-py from the
CUDA image): GPM was supported and every field above except 200/201 was written; the
GPM DRAM metric was missing in the first interval only. gpt2-medium training gave
PIPE_TENSOR_ACTIVE 0.37 at 373 model TFLOP/s (989 dense peak) and, under 2-GPU DDP,
NVLINK_TX 12.6 GB/s = the fp32 gradient all-reduce (``data/telemetry/README.md``).

Python API: :func:`format_exposition` (pure: samples in, text out), :class:`NvmlBackend` (reads
NVML), :class:`Collector` (the scrape loop that appends blocks to a file).
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from trainperf.errors import TrainperfError

__all__ = [
    "FIELDS",
    "Collector",
    "FieldSpec",
    "NvmlBackend",
    "NvmlUnavailableError",
    "Sample",
    "format_exposition",
    "format_value",
    "main",
]

MIB = 2**20
"""Bytes in one MiB (GPM throughputs are MiB/s; DCGM FB_USED is MiB)."""


@dataclass(frozen=True)
class FieldSpec:
    """One DCGM field the collector writes.

    Attributes:
        name: dcgm-exporter metric name.
        field_id: DCGM numeric field id (``dcgmlib/dcgm_fields.h``).
        dtype: ``"double"`` (printed ``%f``) or ``"int64"`` (printed as an integer).
        prom_type: ``# TYPE`` written (``gauge`` or ``counter``, as dcgm-exporter's
            ``etc/default-counters.csv``).
        help: ``# HELP`` text, with the unit.
        source: the NVML call or GPM metric it comes from and the conversion.
    """

    name: str
    field_id: int
    dtype: str
    prom_type: str
    help: str
    source: str


FIELDS: tuple[FieldSpec, ...] = (
    FieldSpec(
        "DCGM_FI_DEV_SM_CLOCK",
        100,
        "int64",
        "gauge",
        "SM clock frequency (in MHz).",
        "nvmlDeviceGetClockInfo(NVML_CLOCK_SM), MHz",
    ),
    FieldSpec(
        "DCGM_FI_DEV_GPU_TEMP",
        150,
        "int64",
        "gauge",
        "GPU temperature (in C).",
        "nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU), C",
    ),
    FieldSpec(
        "DCGM_FI_DEV_POWER_USAGE",
        155,
        "double",
        "gauge",
        "Power draw (in W).",
        "nvmlDeviceGetPowerUsage, mW / 1000",
    ),
    FieldSpec(
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        156,
        "int64",
        "counter",
        "Total energy consumption since the driver was loaded (in mJ).",
        "nvmlDeviceGetTotalEnergyConsumption, mJ",
    ),
    FieldSpec(
        "DCGM_FI_DEV_GPU_UTIL",
        203,
        "int64",
        "gauge",
        "GPU utilization (in %).",
        "nvmlDeviceGetUtilizationRates().gpu, percent 0-100",
    ),
    FieldSpec(
        "DCGM_FI_DEV_FB_USED",
        252,
        "int64",
        "gauge",
        "Framebuffer memory used (in MiB).",
        "nvmlDeviceGetMemoryInfo (v2) .used bytes // 2**20",
    ),
    FieldSpec(
        "DCGM_FI_DEV_PCIE_TX_THROUGHPUT",
        200,
        "int64",
        "gauge",
        "PCIe transmit throughput, 20 ms window (in KB/s); written only without GPM.",
        "nvmlDeviceGetPcieThroughput(NVML_PCIE_UTIL_TX_BYTES), KB/s",
    ),
    FieldSpec(
        "DCGM_FI_DEV_PCIE_RX_THROUGHPUT",
        201,
        "int64",
        "gauge",
        "PCIe receive throughput, 20 ms window (in KB/s); written only without GPM.",
        "nvmlDeviceGetPcieThroughput(NVML_PCIE_UTIL_RX_BYTES), KB/s",
    ),
    FieldSpec(
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        1001,
        "double",
        "gauge",
        "Ratio of time the graphics engine is active (0-1; NVML GPM GRAPHICS_UTIL / 100).",
        "GPM NVML_GPM_METRIC_GRAPHICS_UTIL, percent / 100",
    ),
    FieldSpec(
        "DCGM_FI_PROF_SM_ACTIVE",
        1002,
        "double",
        "gauge",
        "Ratio of cycles an SM has at least 1 warp assigned (0-1; NVML GPM SM_UTIL / 100).",
        "GPM NVML_GPM_METRIC_SM_UTIL, percent / 100",
    ),
    FieldSpec(
        "DCGM_FI_PROF_SM_OCCUPANCY",
        1003,
        "double",
        "gauge",
        "Ratio of resident warps to the maximum (0-1; NVML GPM SM_OCCUPANCY / 100).",
        "GPM NVML_GPM_METRIC_SM_OCCUPANCY, percent / 100",
    ),
    FieldSpec(
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        1004,
        "double",
        "gauge",
        "Ratio of cycles any tensor pipe is active (0-1; NVML GPM ANY_TENSOR_UTIL / 100).",
        "GPM NVML_GPM_METRIC_ANY_TENSOR_UTIL, percent / 100",
    ),
    FieldSpec(
        "DCGM_FI_PROF_DRAM_ACTIVE",
        1005,
        "double",
        "gauge",
        "Ratio of cycles the device memory interface is active (0-1; NVML GPM DRAM_BW_UTIL / 100).",
        "GPM NVML_GPM_METRIC_DRAM_BW_UTIL, percent / 100",
    ),
    FieldSpec(
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        1009,
        "int64",
        "gauge",
        "Rate of data transmitted over PCIe (in B/s; NVML GPM PCIE_TX_PER_SEC MiB/s x 2^20).",
        "GPM NVML_GPM_METRIC_PCIE_TX_PER_SEC, MiB/s x 2**20",
    ),
    FieldSpec(
        "DCGM_FI_PROF_PCIE_RX_BYTES",
        1010,
        "int64",
        "gauge",
        "Rate of data received over PCIe (in B/s; NVML GPM PCIE_RX_PER_SEC MiB/s x 2^20).",
        "GPM NVML_GPM_METRIC_PCIE_RX_PER_SEC, MiB/s x 2**20",
    ),
    FieldSpec(
        "DCGM_FI_PROF_NVLINK_TX_BYTES",
        1011,
        "int64",
        "gauge",
        "Rate of data transmitted over NVLink, all links (in B/s; NVML GPM NVLINK_TOTAL_TX_PER_SEC MiB/s x 2^20).",
        "GPM NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, MiB/s x 2**20",
    ),
    FieldSpec(
        "DCGM_FI_PROF_NVLINK_RX_BYTES",
        1012,
        "int64",
        "gauge",
        "Rate of data received over NVLink, all links (in B/s; NVML GPM NVLINK_TOTAL_RX_PER_SEC MiB/s x 2^20).",
        "GPM NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, MiB/s x 2**20",
    ),
    FieldSpec(
        "DCGM_FI_PROF_PIPE_TENSOR_HMMA_ACTIVE",
        1014,
        "double",
        "gauge",
        "Ratio of cycles the HMMA (FP16/BF16) tensor pipe is active (0-1; NVML GPM HMMA_TENSOR_UTIL / 100).",
        "GPM NVML_GPM_METRIC_HMMA_TENSOR_UTIL, percent / 100",
    ),
)
"""Fields written, in output order (dcgm-exporter orders by its counters file; so do we)."""

_BY_NAME: dict[str, FieldSpec] = {f.name: f for f in FIELDS}

# GPM metric constant name (pynvml) -> (DCGM field, scale to the DCGM unit)
_GPM_MAP: tuple[tuple[str, str, float], ...] = (
    ("NVML_GPM_METRIC_GRAPHICS_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0.01),
    ("NVML_GPM_METRIC_SM_UTIL", "DCGM_FI_PROF_SM_ACTIVE", 0.01),
    ("NVML_GPM_METRIC_SM_OCCUPANCY", "DCGM_FI_PROF_SM_OCCUPANCY", 0.01),
    ("NVML_GPM_METRIC_ANY_TENSOR_UTIL", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 0.01),
    ("NVML_GPM_METRIC_HMMA_TENSOR_UTIL", "DCGM_FI_PROF_PIPE_TENSOR_HMMA_ACTIVE", 0.01),
    ("NVML_GPM_METRIC_DRAM_BW_UTIL", "DCGM_FI_PROF_DRAM_ACTIVE", 0.01),
    ("NVML_GPM_METRIC_PCIE_TX_PER_SEC", "DCGM_FI_PROF_PCIE_TX_BYTES", float(MIB)),
    ("NVML_GPM_METRIC_PCIE_RX_PER_SEC", "DCGM_FI_PROF_PCIE_RX_BYTES", float(MIB)),
    ("NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC", "DCGM_FI_PROF_NVLINK_TX_BYTES", float(MIB)),
    ("NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC", "DCGM_FI_PROF_NVLINK_RX_BYTES", float(MIB)),
)


# --------------------------------------------------------------------------------------------
# Formatting (pure)
# --------------------------------------------------------------------------------------------


@dataclass
class Sample:
    """One GPU's readings at one instant.

    Attributes:
        timestamp_ms: epoch milliseconds (UTC) of the reading.
        gpu: NVML/DCGM GPU index (``gpu`` label).
        uuid: ``GPU-...`` (``UUID`` label).
        device: ``nvidia<minor>`` (``device`` label).
        model_name: product name, e.g. ``NVIDIA H200`` (``modelName`` label).
        pci_bus_id: ``00000000:18:00.0`` (``pci_bus_id`` label; left out when empty).
        values: DCGM field name -> value in the field's unit (:data:`FIELDS`); ``None`` or a
            missing key leaves the line out.
    """

    timestamp_ms: int
    gpu: int
    uuid: str
    device: str
    model_name: str
    pci_bus_id: str = ""
    values: dict[str, float | int | None] = field(default_factory=dict)


def _escape(v: str) -> str:
    """Escape a label value per the Prometheus text format (backslash, quote, newline)."""
    return str(v).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def format_value(spec: FieldSpec, value: float | int) -> str:
    """Format one value as dcgm-exporter does: ``%f`` for doubles, an integer for int64 fields.

    Raises:
        ValueError: NaN or infinite value (the exposition would carry no information).
    """
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{spec.name}: value {value!r} is not finite")
    if spec.dtype == "int64":
        return str(int(round(v)))
    return f"{v:f}"


def format_exposition(
    samples: Iterable[Sample | Mapping[str, Any]],
    hostname: str,
    *,
    host_label: str = "Hostname",
    driver_version: str | None = None,
    job_id: str | None = None,
    scrape_time_ms: int | None = None,
    help_lines: bool = True,
) -> str:
    """Render one scrape as dcgm-exporter Prometheus exposition text with per-sample timestamps.

    Pure function: no NVML, no clock, no I/O.

    Args:
        samples: :class:`Sample` objects, or mappings with the same keys (``timestamp_ms``,
            ``gpu``, ``uuid``, ``device``, ``model_name``, optional ``pci_bus_id``, ``values``).
        hostname: value of the host label.
        host_label: ``"Hostname"`` (dcgm-exporter until 2026-05) or ``"hostname"``.
        driver_version: adds ``DCGM_FI_DRIVER_VERSION="..."`` to every series when given.
        job_id: adds ``hpc_job="..."`` (dcgm-exporter's HPC job label) when given.
        scrape_time_ms: writes a ``# SCRAPE <epoch s>`` marker line first when given.
        help_lines: write ``# HELP``/``# TYPE`` before each metric's samples.

    Returns:
        Text ending in a newline ("" if no sample has any value). Metrics come in
        :data:`FIELDS` order, each with all GPUs in the order given; lines look like
        ``NAME{gpu="0",UUID="...",...} VALUE TIMESTAMP_MS``.

    Raises:
        KeyError: a value keyed by a name not in :data:`FIELDS`.
        ValueError: a non-finite value.
    """
    rows = [s if isinstance(s, Sample) else Sample(**dict(s)) for s in samples]
    for s in rows:
        for k in s.values:
            if k not in _BY_NAME:
                raise KeyError(f"unknown field {k!r}; known: {sorted(_BY_NAME)}")
    out: list[str] = []
    if scrape_time_ms is not None:
        out.append(f"# SCRAPE {scrape_time_ms // 1000}.{scrape_time_ms % 1000:03d}")
    for spec in FIELDS:
        lines = []
        for s in rows:
            v = s.values.get(spec.name)
            if v is None:
                continue
            labels = [
                ("gpu", str(s.gpu)),
                ("UUID", s.uuid),
                ("pci_bus_id", s.pci_bus_id),
                ("device", s.device),
                ("modelName", s.model_name),
                (host_label, hostname),
            ]
            if driver_version:
                labels.append(("DCGM_FI_DRIVER_VERSION", driver_version))
            if job_id:
                labels.append(("hpc_job", job_id))
            body = ",".join(f'{k}="{_escape(v_)}"' for k, v_ in labels if v_ != "" or k == "gpu")
            lines.append(f"{spec.name}{{{body}}} {format_value(spec, v)} {int(s.timestamp_ms)}")
        if not lines:
            continue
        if help_lines:
            out.append(f"# HELP {spec.name} {spec.help}")
            out.append(f"# TYPE {spec.name} {spec.prom_type}")
        out.extend(lines)
    if len(out) <= (1 if scrape_time_ms is not None else 0):
        return ""
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------------
# NVML backend
# --------------------------------------------------------------------------------------------


class NvmlUnavailableError(TrainperfError, RuntimeError):
    """NVML cannot be used here (package missing, no driver, no GPU, no permission)."""


class Backend(Protocol):
    """What :class:`Collector` needs from a telemetry source (see :class:`NvmlBackend`)."""

    hostname: str
    driver_version: str | None

    def read(self) -> list[Sample]:
        """One :class:`Sample` per GPU, values in DCGM units."""
        ...

    def close(self) -> None:
        """Release the source."""
        ...


def _import_pynvml():
    try:
        import pynvml
    except ImportError as exc:
        raise NvmlUnavailableError(
            "nvidia-ml-py is not installed (it provides the 'pynvml' module): "
            "pip install nvidia-ml-py"
        ) from exc
    return pynvml


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


@dataclass
class _Gpu:
    index: int
    handle: Any
    uuid: str
    name: str
    device: str
    pci_bus_id: str
    gpm: bool = False
    gpm_prev: Any = None
    gpm_next: Any = None
    unsupported: set[str] = field(default_factory=set)


class NvmlBackend:
    """Reads the :data:`FIELDS` values of every (or the chosen) GPU through NVML.

    Args:
        gpus: NVML indices to sample (default: all). NVML indices follow PCI order, which
            is DCGM's ``gpu`` id; they are not the ``CUDA_VISIBLE_DEVICES`` order.
        use_gpm: read GPM metrics where the GPU supports them (Hopper and newer).
        hostname: host label value (default: ``socket.gethostname()``).

    Raises:
        NvmlUnavailableError: nvidia-ml-py missing, NVML fails to initialise (no driver,
            no permission), no GPU, or an index out of range. The message says which.
    """

    def __init__(
        self,
        gpus: Sequence[int] | None = None,
        use_gpm: bool = True,
        hostname: str | None = None,
    ) -> None:
        nv = self._nv = _import_pynvml()
        try:
            nv.nvmlInit()
        except nv.NVMLError as exc:
            raise NvmlUnavailableError(
                f"NVML could not be initialised ({exc}): is the NVIDIA driver loaded and "
                "/dev/nvidia* visible to this process?"
            ) from exc
        self._closed = False
        try:
            count = nv.nvmlDeviceGetCount()
            if count == 0:
                raise NvmlUnavailableError("NVML sees no GPU on this machine")
            wanted = list(range(count)) if gpus is None else list(gpus)
            bad = [i for i in wanted if not 0 <= i < count]
            if bad:
                raise NvmlUnavailableError(f"GPU index {bad} out of range: NVML sees {count}")
            self.hostname = hostname or socket.gethostname()
            try:
                self.driver_version: str | None = _text(nv.nvmlSystemGetDriverVersion())
            except nv.NVMLError:
                self.driver_version = None
            self.gpus = [self._open(i, use_gpm) for i in wanted]
        except BaseException:
            self.close()
            raise

    def _open(self, i: int, use_gpm: bool) -> _Gpu:
        nv = self._nv
        h = nv.nvmlDeviceGetHandleByIndex(i)
        try:
            minor = nv.nvmlDeviceGetMinorNumber(h)
        except nv.NVMLError:
            minor = i
        try:
            bus = _text(nv.nvmlDeviceGetPciInfo(h).busId)
        except nv.NVMLError:
            bus = ""
        g = _Gpu(
            index=i,
            handle=h,
            uuid=_text(nv.nvmlDeviceGetUUID(h)),
            name=_text(nv.nvmlDeviceGetName(h)),
            device=f"nvidia{minor}",
            pci_bus_id=bus,
        )
        if use_gpm and hasattr(nv, "nvmlGpmQueryDeviceSupport"):
            try:
                if nv.nvmlGpmQueryDeviceSupport(h).isSupportedDevice:
                    g.gpm_prev = nv.nvmlGpmSampleAlloc()
                    g.gpm_next = nv.nvmlGpmSampleAlloc()
                    nv.nvmlGpmSampleGet(h, g.gpm_prev)
                    g.gpm = True
            except nv.NVMLError as exc:
                print(
                    f"trainperf.capture.collect: GPU {i}: GPM unavailable ({exc}); "
                    "DCGM_FI_PROF_* fields will be missing",
                    file=sys.stderr,
                )
                g.gpm = False
        return g

    @property
    def gpm_enabled(self) -> dict[int, bool]:
        """GPU index -> whether GPM metrics are read."""
        return {g.index: g.gpm for g in self.gpus}

    def _call(self, g: _Gpu, key: str, fn: Callable[[], Any]) -> Any:
        """Run one NVML query; remember NOT_SUPPORTED / NO_PERMISSION and skip it next time."""
        if key in g.unsupported:
            return None
        nv = self._nv
        try:
            return fn()
        except nv.NVMLError as exc:
            code = getattr(exc, "value", None)
            if code in (
                getattr(nv, "NVML_ERROR_NOT_SUPPORTED", -1),
                getattr(nv, "NVML_ERROR_NO_PERMISSION", -1),
                getattr(nv, "NVML_ERROR_FUNCTION_NOT_FOUND", -1),
            ):
                g.unsupported.add(key)
            return None

    def _gpm(self, g: _Gpu) -> dict[str, float | None]:
        nv = self._nv
        try:
            nv.nvmlGpmSampleGet(g.handle, g.gpm_next)
        except nv.NVMLError:
            return {}
        wanted = [(getattr(nv, c, None), f, s) for c, f, s in _GPM_MAP]
        wanted = [w for w in wanted if w[0] is not None]
        try:
            mg = nv.c_nvmlGpmMetricsGet_t()
            mg.version = nv.NVML_GPM_METRICS_GET_VERSION
            mg.sample1 = g.gpm_prev
            mg.sample2 = g.gpm_next
            mg.numMetrics = len(wanted)
            for k, (mid, _, _) in enumerate(wanted):
                mg.metrics[k].metricId = mid
            nv.nvmlGpmMetricsGet(mg)
        except nv.NVMLError:
            return {}
        finally:
            g.gpm_prev, g.gpm_next = g.gpm_next, g.gpm_prev
        out: dict[str, float | None] = {}
        for k, (_, fname, scale) in enumerate(wanted):
            m = mg.metrics[k]
            ok = m.nvmlReturn == nv.NVML_SUCCESS and math.isfinite(m.value)
            out[fname] = m.value * scale if ok else None
        return out

    def read(self) -> list[Sample]:
        """Read every GPU once. Values NVML refuses are ``None`` (left out of the output)."""
        nv = self._nv
        out = []
        for g in self.gpus:
            h = g.handle
            ts = int(time.time() * 1000)
            v: dict[str, float | int | None] = {}
            util = self._call(g, "util", lambda h=h: nv.nvmlDeviceGetUtilizationRates(h))
            v["DCGM_FI_DEV_GPU_UTIL"] = util.gpu if util is not None else None
            mw = self._call(g, "power", lambda h=h: nv.nvmlDeviceGetPowerUsage(h))
            v["DCGM_FI_DEV_POWER_USAGE"] = mw / 1000.0 if mw is not None else None
            v["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"] = self._call(
                g, "energy", lambda h=h: nv.nvmlDeviceGetTotalEnergyConsumption(h)
            )
            v["DCGM_FI_DEV_SM_CLOCK"] = self._call(
                g, "smclk", lambda h=h: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)
            )
            v["DCGM_FI_DEV_GPU_TEMP"] = self._call(
                g, "temp", lambda h=h: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)
            )
            mem = self._call(
                g, "mem_v2", lambda h=h: nv.nvmlDeviceGetMemoryInfo(h, nv.nvmlMemory_v2)
            )
            if mem is None:
                mem = self._call(g, "mem", lambda h=h: nv.nvmlDeviceGetMemoryInfo(h))
            v["DCGM_FI_DEV_FB_USED"] = mem.used // MIB if mem is not None else None
            if g.gpm:
                v.update(self._gpm(g))
            else:
                for name, counter in (
                    ("DCGM_FI_DEV_PCIE_TX_THROUGHPUT", "NVML_PCIE_UTIL_TX_BYTES"),
                    ("DCGM_FI_DEV_PCIE_RX_THROUGHPUT", "NVML_PCIE_UTIL_RX_BYTES"),
                ):
                    v[name] = self._call(
                        g,
                        name,
                        lambda h=h, c=counter: nv.nvmlDeviceGetPcieThroughput(h, getattr(nv, c)),
                    )
            out.append(Sample(ts, g.index, g.uuid, g.device, g.name, g.pci_bus_id, v))
        return out

    def close(self) -> None:
        """Free GPM samples and shut NVML down (idempotent)."""
        if getattr(self, "_closed", True):
            return
        self._closed = True
        nv = self._nv
        for g in getattr(self, "gpus", []):
            for s in (g.gpm_prev, g.gpm_next):
                if s is not None:
                    try:
                        nv.nvmlGpmSampleFree(s)
                    except nv.NVMLError:
                        pass
        try:
            nv.nvmlShutdown()
        except nv.NVMLError:
            pass

    def __enter__(self) -> NvmlBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------------------------
# Scrape loop
# --------------------------------------------------------------------------------------------


class Collector:
    """Scrapes a backend at a fixed interval and appends one exposition block per scrape.

    Each block is written with a single ``os.write`` on a file opened with ``O_APPEND`` and
    flushed (``fsync`` when ``fsync=True``), so concurrent readers and a crash leave only
    whole blocks. Scrapes are scheduled on a fixed grid (``start + k * interval``); a scrape
    that overruns skips the missed ticks rather than bunching up.

    Args:
        backend: :class:`NvmlBackend` or any object with ``read()``, ``hostname``,
            ``driver_version`` (tests use a fake).
        out: file to append to (created if missing; parent folders too).
        interval: seconds between scrapes (> 0).
        host_label, job_id, help_lines: passed to :func:`format_exposition`.
        fsync: ``os.fsync`` after each block (durable on power loss; slower on network FS).
        clock: ``time.time``-like function (tests inject a fake).
    """

    def __init__(
        self,
        backend: Backend,
        out: str | os.PathLike,
        interval: float = 1.0,
        *,
        host_label: str = "Hostname",
        job_id: str | None = None,
        help_lines: bool = True,
        fsync: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not interval > 0:
            raise ValueError(f"interval must be > 0 seconds, got {interval!r}")
        self.backend = backend
        self.out = os.fspath(out)
        self.interval = float(interval)
        self.host_label = host_label
        self.job_id = job_id
        self.help_lines = help_lines
        self.fsync = fsync
        self.clock = clock
        self.n_scrapes = 0
        self.n_bytes = 0
        parent = os.path.dirname(os.path.abspath(self.out))
        os.makedirs(parent, exist_ok=True)

    def scrape_once(self) -> str:
        """Read the backend once and append the block; returns the text written."""
        now_ms = int(self.clock() * 1000)
        text = format_exposition(
            self.backend.read(),
            self.backend.hostname,
            host_label=self.host_label,
            driver_version=self.backend.driver_version,
            job_id=self.job_id,
            scrape_time_ms=now_ms,
            help_lines=self.help_lines,
        )
        if text:
            data = text.encode("utf-8")
            fd = os.open(self.out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                view = memoryview(data)
                while view:
                    n = os.write(fd, view)
                    view = view[n:]
                if self.fsync:
                    os.fsync(fd)
            finally:
                os.close(fd)
            self.n_bytes += len(data)
        self.n_scrapes += 1
        return text

    def run(
        self,
        stop: threading.Event,
        duration: float | None = None,
        until: Callable[[], bool] | None = None,
    ) -> int:
        """Scrape until ``stop`` is set, ``duration`` seconds have passed or ``until()`` is true.

        A first scrape is taken at once and a last one when the loop ends (so the energy
        counter covers the whole run). Returns the number of scrapes.
        """
        start = self.clock()
        deadline = start + duration if duration is not None else math.inf
        self.scrape_once()
        k = 1
        while not stop.is_set() and not (until and until()):
            now = self.clock()
            if now >= deadline:
                break
            next_t = start + k * self.interval
            if next_t <= now:  # overran: skip missed ticks
                k = int((now - start) / self.interval) + 1
                next_t = start + k * self.interval
            wait = min(next_t, deadline) - now
            if stop.wait(max(wait, 0.0)):
                break
            if until and until():
                break
            if self.clock() >= deadline:
                break
            self.scrape_once()
            k += 1
        self.scrape_once()
        return self.n_scrapes


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m trainperf.capture.collect",
        description=(
            "Sample GPU telemetry through NVML (incl. Hopper GPM profiling metrics) and append "
            "dcgm-exporter exposition text with per-sample timestamps. Optionally wrap a "
            "command: everything after '--' is run and sampled until it exits."
        ),
        epilog="Example: python -m trainperf.capture.collect --interval 1 --out run/telemetry.prom -- "
        "python -m trainperf.capture.smoke --preset gpt2-medium --minutes 4 --out-dir run/gpt_smoke",
    )
    p.add_argument("--out", required=True, help="exposition file to append to (created if missing)")
    p.add_argument(
        "--interval", type=float, default=1.0, help="seconds between scrapes (default 1)"
    )
    p.add_argument(
        "--duration",
        type=float,
        default=None,
        help="stop after this many seconds (default: no limit)",
    )
    p.add_argument(
        "--gpus", default=None, help="NVML GPU indices to sample, e.g. 0,1 (default all)"
    )
    p.add_argument("--no-gpm", action="store_true", help="do not read GPM profiling metrics")
    p.add_argument("--hostname", default=None, help="host label value (default: this host's name)")
    p.add_argument(
        "--host-label",
        default="Hostname",
        choices=("Hostname", "hostname"),
        help="host label name: dcgm-exporter wrote 'Hostname' until 2026-05, 'hostname' since",
    )
    p.add_argument(
        "--job-id",
        default=os.environ.get("SLURM_JOB_ID"),
        help='adds hpc_job="ID" to every series (default: $SLURM_JOB_ID if set)',
    )
    p.add_argument("--no-help", action="store_true", help="omit # HELP / # TYPE lines")
    p.add_argument("--fsync", action="store_true", help="fsync after every scrape")
    p.add_argument(
        "command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...] to run and sample"
    )
    return p


def _exit_code(rc: int) -> int:
    """Popen returncode -> shell-style exit status (killed by signal N -> 128 + N)."""
    return 128 - rc if rc < 0 else rc


def main(
    argv: Sequence[str] | None = None, backend_factory: Callable[..., Backend] | None = None
) -> int:
    """CLI entry point; returns the exit status (the wrapped command's, when one is given).

    Args:
        argv: arguments (default ``sys.argv[1:]``).
        backend_factory: called as ``factory(gpus=..., use_gpm=..., hostname=...)``; default
            :class:`NvmlBackend` (tests pass a fake).
    """
    args = _parser().parse_args(argv)
    cmd = list(args.command)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if args.command and not cmd:
        print(
            "trainperf.capture.collect: error: '--' given but no command after it", file=sys.stderr
        )
        return 2
    gpus = None
    if args.gpus:
        try:
            gpus = [int(x) for x in args.gpus.split(",") if x.strip()]
        except ValueError:
            print(
                f"trainperf.capture.collect: error: --gpus {args.gpus!r}: expected e.g. 0,1",
                file=sys.stderr,
            )
            return 2
    factory = backend_factory or NvmlBackend
    try:
        backend = factory(gpus=gpus, use_gpm=not args.no_gpm, hostname=args.hostname)
    except NvmlUnavailableError as exc:
        print(f"trainperf.capture.collect: error: {exc}", file=sys.stderr)
        return 2
    try:
        collector = Collector(
            backend,
            args.out,
            args.interval,
            host_label=args.host_label,
            job_id=args.job_id or None,
            help_lines=not args.no_help,
            fsync=args.fsync,
        )
    except ValueError as exc:
        backend.close()
        print(f"trainperf.capture.collect: error: {exc}", file=sys.stderr)
        return 2

    stop = threading.Event()
    proc: subprocess.Popen | None = None
    received: list[int] = []

    def on_signal(signum, _frame):
        received.append(signum)
        if proc is not None and proc.poll() is None:
            # forward to the wrapped command; keep sampling until it exits
            try:
                proc.send_signal(signum)
            except ProcessLookupError:
                pass
        else:
            stop.set()

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    rc = 0
    try:
        if cmd:
            try:
                proc = subprocess.Popen(cmd)
            except OSError as exc:
                print(
                    f"trainperf.capture.collect: error: cannot run {cmd[0]!r}: {exc}",
                    file=sys.stderr,
                )
                return 127
            collector.run(stop, args.duration, until=lambda: proc.poll() is not None)
            if proc.poll() is None:  # --duration ran out first: leave the command alone
                print(
                    f"trainperf.capture.collect: --duration reached; waiting for {cmd[0]!r} to exit "
                    "without sampling",
                    file=sys.stderr,
                )
            rc = _exit_code(proc.wait())
        else:
            collector.run(stop, args.duration)  # SIGTERM/SIGINT end it cleanly: status 0
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        backend.close()
        print(
            f"trainperf.capture.collect: {collector.n_scrapes} scrapes, {collector.n_bytes} bytes -> {args.out}",
            file=sys.stderr,
        )
    return rc


if __name__ == "__main__":
    sys.exit(main())
