"""Regenerate the synthetic DCGM fixtures in this folder: ``python tests/data/dcgm/generate.py``.

All values are made up; the *formats* follow dcgm-exporter's render template
(internal/pkg/rendermetrics/render_metrics.go), dcgmi dmon (dcgmi/DeviceMonitor.cpp),
the Prometheus HTTP API and Grafana's CSV export. See README.md.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
UUIDS = [
    "GPU-81d79b08-40a0-40ae-3fc5-82b8ff8b8138",
    "GPU-3d0c5a6e-1f1b-4a51-9c0e-4c7d8f9a0b11",
    "GPU-8d76cfcf-a144-5e43-876b-a4b71f2aecd1",
    "GPU-5b2e7c19-77aa-4e0d-b1c2-90f1e2d3c4b5",
]
BUS = ["00000000:53:00.0", "00000000:64:00.0", "00000000:75:00.0", "00000000:86:00.0"]
# a GPU of another node has another UUID (UUIDs identify a GPU, whatever its host is called)
UUIDS_NODE02 = ["GPU-c4f1e2a7-9b3d-4e8f-a1b2-3c4d5e6f7a80"]
DRV = "580.105.08"
MODEL = "NVIDIA H100 80GB HBM3"


def labels(gpu: int, host: str, host_key: str = "Hostname", extra: str = "") -> str:
    s = (
        f'gpu="{gpu}",UUID="{(UUIDS_NODE02 if host == "gpu-node-02" else UUIDS)[gpu]}",pci_bus_id="{BUS[gpu]}",device="nvidia{gpu}",'
        f'modelName="{MODEL}",{host_key}="{host}",DCGM_FI_DRIVER_VERSION="{DRV}"'
    )
    return s + extra


HELP = {
    "DCGM_FI_DEV_GPU_UTIL": ("gauge", "GPU utilization (in %)."),
    "DCGM_FI_DEV_POWER_USAGE": ("gauge", "Power draw (in W)."),
    "DCGM_FI_DEV_MEMORY_TEMP": ("gauge", "Memory temperature (in C)."),
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": (
        "counter",
        "Total energy consumption since boot (in mJ).",
    ),
    "DCGM_FI_DEV_FB_USED": ("gauge", "Framebuffer memory used (in MiB)."),
    "DCGM_FI_DEV_XID_ERRORS": ("gauge", "Value of the last XID error encountered."),
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": (
        "counter",
        "Total number of NVLink bandwidth counters for all lanes.",
    ),
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": ("gauge", "Ratio of time the graphics engine is active."),
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": (
        "gauge",
        "Ratio of cycles the tensor (HMMA) pipe is active.",
    ),
    "DCGM_FI_PROF_DRAM_ACTIVE": (
        "gauge",
        "Ratio of cycles the device memory interface is active sending or receiving data.",
    ),
    # dcgm-exporter's 1.x CSV declared these `counter`; they are B/s rates
    "DCGM_FI_PROF_PCIE_TX_BYTES": (
        "counter",
        "The number of bytes of active pcie tx data including both header and payload.",
    ),
    "DCGM_FI_PROF_NVLINK_TX_BYTES": (
        "gauge",
        "The rate of data transmitted over NVLink, in bytes per second.",
    ),
    "DCGM_FI_PROF_NVLINK_RX_BYTES": (
        "gauge",
        "The rate of data received over NVLink, in bytes per second.",
    ),
}


def block(metric: str, rows: list[tuple[str, str]]) -> list[str]:
    typ, help_ = HELP[metric]
    out = [f"# HELP {metric} {help_}", f"# TYPE {metric} {typ}"]
    out += [f"{metric}{{{lab}}} {val}" for lab, val in rows]
    return out


def w(name: str, lines: list[str]) -> None:
    (HERE / name).write_text("\n".join(lines) + "\n")


def main() -> None:
    host = "gpu-node-01"
    # 1. single scrape, 2 GPUs; GPU 1 carries pod labels; MEMORY_TEMP on GPU 1 is the
    #    INT64 "not supported" sentinel; GR_ENGINE_ACTIVE on GPU 1 is the FP64 blank.
    pod = ',container="main",namespace="train",pod="llama-0",pod_uid=""'
    L = []
    L += block(
        "DCGM_FI_DEV_GPU_UTIL", [(labels(0, host), "97"), (labels(1, host, extra=pod), "45")]
    )
    L += block(
        "DCGM_FI_DEV_POWER_USAGE",
        [(labels(0, host), "612.125000"), (labels(1, host, extra=pod), "110.786000")],
    )
    L += block(
        "DCGM_FI_DEV_MEMORY_TEMP",
        [(labels(0, host), "41"), (labels(1, host, extra=pod), "9223372036854775794")],
    )
    L += block(
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        [(labels(0, host), "123456789"), (labels(1, host, extra=pod), "98765432")],
    )
    L += block(
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        [(labels(0, host), "0.981000"), (labels(1, host, extra=pod), "140737488355328.000000")],
    )
    L += block(
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        [(labels(0, host), "0.612000"), (labels(1, host, extra=pod), "0.000000")],
    )
    w("scrape_single.prom", L)

    # 2. archive: 3 scrapes, 15 s apart, markers in the three accepted forms; scrapes 1-2
    #    use Hostname=, scrape 3 hostname= (dcgm-exporter after #655). PCIe TX is
    #    declared counter and goes DOWN between scrapes 1 and 2 (it is a rate).
    t0 = 1767225600  # 2026-01-01T00:00:00Z
    pcie = [(5_000_000_000, 7_000_000), (1_250_000_000, 6_000_000), (3_000_000_000, 8_000_000)]
    util = [(90, 10), (95, 20), (99, 30)]
    L = []
    markers = [str(t0), "2026-01-01T00:00:15Z", "# SCRAPE 2026-01-01T00:00:30+00:00"]
    for k in range(3):
        hk = "Hostname" if k < 2 else "hostname"
        L.append(markers[k])
        L += block("DCGM_FI_DEV_GPU_UTIL", [(labels(g, host, hk), str(util[k][g])) for g in (0, 1)])
        L += block(
            "DCGM_FI_PROF_PCIE_TX_BYTES", [(labels(g, host, hk), str(pcie[k][g])) for g in (0, 1)]
        )
    w("archive_mixed_hostname.prom", L)

    # 3. per-sample timestamps (ms), no markers
    L = block(
        "DCGM_FI_DEV_POWER_USAGE",
        [
            (labels(0, host), "500.500000 1767225600000"),
            (labels(0, host), "501.250000 1767225601500"),
        ],
    )
    w("per_sample_ts.prom", L)

    # 4. a host exporting no DCGM_FI_PROF_* series (e.g. DCP held by Nsight / unsupported)
    L = ["# SCRAPE 2026-01-01T00:00:00Z"]
    L += block("DCGM_FI_DEV_GPU_UTIL", [(labels(0, "gpu-node-02"), "88")])
    L += block("DCGM_FI_DEV_FB_USED", [(labels(0, "gpu-node-02"), "70123")])
    L += ["# SCRAPE 2026-01-01T00:00:00Z"]
    L += block("DCGM_FI_DEV_GPU_UTIL", [(labels(0, host), "91")])
    L += block("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", [(labels(0, host), "0.550000")])
    w("no_prof_host.prom", L)

    # 5. NVLink reported twice: 449 in MB/s (GPUs 0, 1) and 1011+1012 in B/s (GPU 0)
    L = [str(t0)]
    L += block(
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        [(labels(0, host), "300000"), (labels(1, host), "120000")],
    )
    L += block("DCGM_FI_PROF_NVLINK_TX_BYTES", [(labels(0, host), "150000000000")])
    L += block("DCGM_FI_PROF_NVLINK_RX_BYTES", [(labels(0, host), "149000000000")])
    w("nvlink_two_fields.prom", L)

    # 6. XID 79 held for an hour by the gauge: 121 scrapes every 30 s, t0 .. t0+3600
    L = []
    for k in range(121):
        L.append(str(t0 + 30 * k))
        L += block("DCGM_FI_DEV_XID_ERRORS", [(labels(0, host), "0"), (labels(3, host), "79")])
    w("xid_hour.prom", L)

    # 7. malformed labels on line 3
    w(
        "bad_labels.prom",
        [
            "# TYPE DCGM_FI_DEV_GPU_UTIL gauge",
            f"DCGM_FI_DEV_GPU_UTIL{{{labels(0, host)}}} 97",
            'DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID=GPU-3d0c} 45',
        ],
    )

    # 8. dcgmi dmon -e 1001,1004,1005, 2 GPUs, 32 ticks, untimed. Tick 0 all N/A;
    #    header printed before tick 0, then before ticks 15 and 29 (DeviceMonitor.cpp:
    #    first repeat after 15 blocks, then every 14). GRACT gpu0=0.900, gpu1=0.400;
    #    TENSO gpu0=0.500, gpu1 N/A; DRAMA 0.250 both.
    hdr = [
        "#Entity   GRACT        TENSO        DRAMA",
        "ID",
    ]
    L = []
    for t in range(32):
        if t in (0, 15, 29):
            L += hdr
        for g in (0, 1):
            if t == 0:
                cells = ["N/A"] * 3
            else:
                cells = ["0.900" if g == 0 else "0.400", "0.500" if g == 0 else "N/A", "0.250"]
            L.append(f"GPU {g}     " + "".join(c.ljust(13) for c in cells).rstrip())
    w("dmon_untimed.txt", L)

    # 9. timestamped dmon (| ts '%Y-%m-%dT%H:%M:%.SZ'), with GPU-I, per-link rows and
    #    the Ctrl-C trailer; fields -e 203,155,1011
    ts = ["2026-01-01T00:00:00.012345Z", "2026-01-01T00:00:01.013001Z"]
    L = [
        f"{ts[0]} #Entity          GPUTL        POWER        NVLTX",
        f"{ts[0]} ID                            W",
    ]
    for k, t in enumerate(ts):
        L += [
            f"{t} GPU 0           {97 + k}           650.125      N/A",
            f"{t} GPU-I 21        N/A          N/A          N/A",
            f"{t} GPU 0 LINK 2    N/A          N/A          {1000 * (k + 1)}",
        ]
    L.append(f"{ts[1]} dmon was stopped due to receiving a signal.")
    w("dmon_timed.txt", L)

    # 10. dmon with a short row (2 cells for 3 columns) on line 4
    w(
        "bad_dmon.txt",
        [
            "#Entity   GRACT        TENSO        DRAMA",
            "ID",
            "GPU 0     0.100        0.200        0.300",
            "GPU 1     0.100        0.200",
        ],
    )

    # 11. Prometheus API vector and matrix
    metric0 = {
        "__name__": "DCGM_FI_DEV_GPU_UTIL",
        "gpu": "0",
        "UUID": UUIDS[0],
        "Hostname": host,
        "instance": "10.0.0.5:9400",
        "job": "nvidia-dcgm-exporter",
        "namespace": "gpu-operator",
        "exported_namespace": "train",
        "hpc_job": "4242",
    }
    vec = {
        "status": "success",
        "data": {
            "resultType": "vector",
            "result": [{"metric": metric0, "value": [1767225600.5, "97"]}],
        },
    }
    (HERE / "api_vector.json").write_text(json.dumps(vec, indent=1) + "\n")
    metric1 = {
        "__name__": "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "gpu": "1",
        "UUID": UUIDS[1],
        "hostname": host,
    }
    mat = {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {
                    "metric": metric1,
                    "values": [[1767225600, "0.5"], [1767225630, "NaN"], [1767225660, "0.75"]],
                },
            ],
        },
    }
    (HERE / "api_matrix.json").write_text(json.dumps(mat, indent=1) + "\n")

    # 12. long CSV and Grafana wide CSV (raw export: epoch ms, doubled quotes in headers)
    (HERE / "long.csv").write_text(
        "timestamp,hostname,gpu,UUID,field,value,hpc_job\n"
        f"2026-01-01T00:00:00Z,{host},0,{UUIDS[0]},DCGM_FI_DEV_GPU_UTIL,97,4242\n"
        f"2026-01-01T00:00:15Z,{host},0,{UUIDS[0]},DCGM_FI_DEV_GPU_UTIL,N/A,4242\n"
        f"2026-01-01T00:00:30Z,{host},0,{UUIDS[0]},dcgm_gpu_utilization,93,4242\n"
        f"2026-01-01T00:00:00Z,{host},0,{UUIDS[0]},DCGM_FI_DEV_FB_USED,81000,4242\n"
    )
    h0 = f'"{{__name__=""DCGM_FI_DEV_POWER_USAGE"", gpu=""0"", Hostname=""{host}"", UUID=""{UUIDS[0]}""}}"'
    h1 = f'"{{__name__=""DCGM_FI_DEV_POWER_USAGE"", gpu=""1"", Hostname=""{host}"", UUID=""{UUIDS[1]}""}}"'
    (HERE / "grafana_wide.csv").write_text(
        f'"Time",{h0},{h1}\n1767225600000,650.5,320\n1767225615000,,321.5\n1767225630000,655,322\n'
    )
    (HERE / "grafana_formatted.csv").write_text(f'"Time",{h0}\n2026-01-01 00:00:00,650.5 W\n')


if __name__ == "__main__":
    main()
