"""The DCGM fields the NVML collector writes, their units, and the NVML/GPM source of each.

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
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BY_NAME", "FIELDS", "GPM_MAP", "MIB", "FieldSpec"]

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

BY_NAME: dict[str, FieldSpec] = {f.name: f for f in FIELDS}

# GPM metric constant name (pynvml) -> (DCGM field, scale to the DCGM unit)
GPM_MAP: tuple[tuple[str, str, float], ...] = (
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
