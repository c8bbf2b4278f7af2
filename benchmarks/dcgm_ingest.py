"""Benchmark: ingesting a dcgm-exporter exposition archive.

Generates a synthetic archive (the ``while true; do date -u +%s; curl -s host:9400/metrics;
sleep 15; done`` form: a bare epoch line, then one full scrape of an 8-GPU H100 node with
HELP/TYPE lines and dcgm-exporter's label template) of ``--size-mb`` MB (default 500) in a
temp folder, then measures, each in a fresh subprocess:

* ``trainperf``: :func:`trainperf.dcgm.read_exposition` (engine="fast"), whole file;
* ``prometheus_client``: ``text_string_to_metric_families`` on each scrape. If the whole
  file would take longer than ``--pc-budget-s`` it runs on the first ``--pc-sample-mb`` MB
  and the time is extrapolated linearly by bytes (reported as such);
* ``polars_csv``: polars reading the same bytes as a one-column CSV (no parsing of the
  lines): the near-physical floor for any reader built on polars.

Reports wall time, MB/s and peak RSS (``resource.getrusage(RUSAGE_SELF).ru_maxrss`` of the
subprocess, which includes the interpreter and imports; a baseline of the bare imports is
shown too). Usage::

    python benchmarks/dcgm_ingest.py            # 500 MB
    python benchmarks/dcgm_ingest.py --quick    # ~20 MB
    python benchmarks/dcgm_ingest.py --size-mb 100 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

METRICS = [
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "int"),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "int"),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "int"),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "int"),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "float"),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "int"),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "int"),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "int"),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "int"),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "int"),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "int"),
    ("DCGM_FI_DEV_FB_USED", "gauge", "int"),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "int"),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "float"),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "float"),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "float"),
    ("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", "int"),
    ("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", "int"),
]


def _value(metric: str, kind: str, rng) -> str:
    """A value in the field's physical range (ratios 0-1, percent 0-100, H100 power below 700 W)."""
    if kind == "float":
        return f"{rng.uniform(50, 700):.3f}" if "POWER" in metric else f"{rng.random():.6f}"
    if metric.endswith(("_UTIL", "_TEMP")):
        return str(rng.randrange(101))
    return str(rng.randrange(100000))


def _write_scrapes(path: Path, target: int, hosts: int, gpus: int, labs: dict, fields: list,
                   stamp, rng) -> dict:  # fmt: skip
    """Scrapes of every host, 15 s apart, until ``target`` bytes: a ``stamp(t)`` line, then per field
    its HELP and TYPE lines and one sample per GPU. Returns bytes, samples and scrapes written."""
    t = 1767225600
    written = samples = scrapes = 0
    with open(path, "w") as fh:
        while written < target:
            for h in range(hosts):
                out = [stamp(t)]
                for m, typ, kind, help_ in fields:
                    out.append(f"# HELP {m} {help_}")
                    out.append(f"# TYPE {m} {typ}")
                    for g in range(gpus):
                        out.append(f"{m}{{{labs[h, g]}}} {_value(m, kind, rng)}")
                        samples += 1
                s = "\n".join(out) + "\n"
                fh.write(s)
                written += len(s)
                scrapes += 1
            t += 15
    return {"bytes": written, "samples": samples, "scrapes": scrapes}


def generate(path: Path, size_mb: float, hosts: int = 4, gpus: int = 8) -> dict:
    """Write the archive; return counts."""
    rng = random.Random(0)
    target = int(size_mb * 1e6)
    labs = {
        (h, g): (
            f'gpu="{g}",UUID="GPU-{h:04x}{g:04x}-40a0-40ae-3fc5-82b8ff8b8138",pci_bus_id="00000000:{0x53 + g:02X}:00.0",'
            f'device="nvidia{g}",modelName="NVIDIA H100 80GB HBM3",Hostname="gpu-node-{h:03d}",'
            f'DCGM_FI_DRIVER_VERSION="580.105.08",hpc_job="{100000 + h}"'
        )
        for h in range(hosts)
        for g in range(gpus)
    }
    fields = [(m, typ, kind, "synthetic") for m, typ, kind in METRICS]
    return _write_scrapes(path, target, hosts, gpus, labs, fields, str, rng)


# dcgm-exporter 3.x/4.x: the default counters' HELP texts (etc/default-counters.csv) and two more
# fields of its profiling set, 20 in all
EXPORTER_FIELDS = [
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "int", "SM frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "int", "Memory frequency (in MHz)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "int", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "int", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "float", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "int",
     "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "int", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "int", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "int", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "int", "Encoder utilization (in %)."),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "int", "Decoder utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "int", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "int", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "int", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "int",
     "Total number of NVLink bandwidth counters for all lanes."),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "float", "Ratio of time the graphics engine is active."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "float",
     "Ratio of cycles the tensor (HMMA) pipe is active."),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "float",
     "Ratio of cycles the device memory interface is active sending or receiving data."),
    ("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", "int", "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes per second."),
    ("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", "int", "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per second."),
]  # fmt: skip


def generate_exporter_archive(path: Path, size_mb: float, hosts: int = 8, gpus: int = 8) -> dict:
    """A dcgm-exporter archive as a scrape loop writes it: ``hosts`` nodes x ``gpus`` H100s, the 20
    fields of :data:`EXPORTER_FIELDS` with their HELP/TYPE lines in every scrape, a ``# TIMESTAMP
    <epoch s>`` line before each, and the labels dcgm-exporter 3.x/4.x writes on Kubernetes: gpu,
    UUID, pci_bus_id, device, modelName, Hostname, DCGM_FI_DRIVER_VERSION, and container,
    namespace, pod of the job's pod on the GPU (one training pod per node). Returns counts."""
    rng = random.Random(0)
    target = int(size_mb * 1e6)
    labs = {
        (h, g): (
            f'gpu="{g}",UUID="GPU-{h:04x}{g:04x}-40a0-40ae-3fc5-82b8ff8b8138",'
            f'pci_bus_id="00000000:{(0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)[g % 8]:02X}:00.0",'
            f'device="nvidia{g}",modelName="NVIDIA H100 80GB HBM3",Hostname="gpu-node-{h:03d}",'
            f'DCGM_FI_DRIVER_VERSION="570.124.06",container="pytorch",namespace="training",'
            f'pod="llama31-405b-worker-{h}"'
        )
        for h in range(hosts)
        for g in range(gpus)
    }
    return _write_scrapes(
        path, target, hosts, gpus, labs, EXPORTER_FIELDS, "# TIMESTAMP {}".format, rng
    )


CHILD = r"""
import json, resource, sys, time
mode, path, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
import polars as pl
import io
if mode == "trainperf":
    from trainperf import dcgm
    t = time.perf_counter(); f = dcgm.read_exposition(path); el = time.perf_counter() - t
    n, nbytes = f.height, limit
elif mode == "polars_csv":
    t = time.perf_counter()
    f = pl.read_csv(path, has_header=False, separator="\x1f", quote_char=None, new_columns=["line"],
                    schema={"line": pl.String})
    el = time.perf_counter() - t
    n, nbytes = f.height, limit
elif mode == "prometheus_client":
    from prometheus_client.parser import text_string_to_metric_families
    with open(path, "rb") as fh:
        data = fh.read(limit)
    data = data[: data.rfind(b"\n") + 1].decode()
    nbytes = len(data)
    t = time.perf_counter()
    n = 0
    chunk = []
    def flush():
        global n
        if chunk:
            for fam in text_string_to_metric_families("".join(chunk)):
                n += len(fam.samples)
    for line in data.splitlines(keepends=True):
        if line[:1].isdigit():
            flush(); chunk = []
        else:
            chunk.append(line)
    flush()
    el = time.perf_counter() - t
elif mode == "baseline":
    from trainperf import dcgm
    import prometheus_client.parser
    el, n, nbytes = 0.0, 0, 0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"mode": mode, "seconds": el, "rows": n, "bytes": nbytes, "peak_rss": rss}))
"""


def run_child(mode: str, path: Path, limit: int) -> dict:
    r = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(path), str(limit)], capture_output=True, text=True
    )
    if r.returncode:
        raise RuntimeError(r.stderr)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size-mb", type=float, default=500.0)
    ap.add_argument("--quick", action="store_true", help="~20 MB archive")
    ap.add_argument(
        "--pc-budget-s",
        type=float,
        default=120.0,
        help="max seconds for prometheus_client on the full file",
    )
    ap.add_argument(
        "--pc-sample-mb",
        type=float,
        default=50.0,
        help="subsample size when extrapolating prometheus_client",
    )
    ap.add_argument("--json", type=Path, help="also write the results here")
    ap.add_argument("--keep", action="store_true", help="keep the generated archive")
    a = ap.parse_args(argv)
    size = 20.0 if a.quick else a.size_mb
    tmp = Path(tempfile.mkdtemp(prefix="dcgm_bench_"))
    path = tmp / "archive.prom"
    t = time.perf_counter()
    info = generate(path, size)
    print(
        f"generated {info['bytes'] / 1e6:.1f} MB, {info['samples']:,} samples, {info['scrapes']:,} scrapes "
        f"in {time.perf_counter() - t:.1f} s at {path}"
    )
    total = info["bytes"]
    res = {"archive": info, "results": {}}
    base = run_child("baseline", path, 0)
    res["results"]["baseline_imports"] = base
    ours = run_child("trainperf", path, total)
    res["results"]["trainperf"] = ours
    assert ours["rows"] == info["samples"], (ours["rows"], info["samples"])
    floor = run_child("polars_csv", path, total)
    res["results"]["polars_csv"] = floor
    # prometheus_client: measure ~5 MB first, then decide full vs subsample
    probe = run_child("prometheus_client", path, int(min(5e6, total)))
    est_full = probe["seconds"] * total / probe["bytes"]
    if est_full <= a.pc_budget_s:
        pc = run_child("prometheus_client", path, total)
        pc["extrapolated"] = False
    else:
        pc = run_child("prometheus_client", path, int(min(a.pc_sample_mb * 1e6, total)))
        pc["measured_seconds"] = pc["seconds"]
        pc["measured_bytes"] = pc["bytes"]
        pc["seconds"] = pc["seconds"] * total / pc["bytes"]
        pc["extrapolated"] = True
    res["results"]["prometheus_client"] = pc

    print(f"\n{'reader':<20}{'wall s':>10}{'MB/s':>10}{'peak RSS MB':>14}  note")
    for k in ("trainperf", "prometheus_client", "polars_csv", "baseline_imports"):
        r = res["results"][k]
        mbs = total / 1e6 / r["seconds"] if r["seconds"] else float("nan")
        note = ""
        if k == "prometheus_client" and r.get("extrapolated"):
            note = f"extrapolated from {r['measured_bytes'] / 1e6:.0f} MB in {r['measured_seconds']:.1f} s; RSS is for that subsample"
        if k == "baseline_imports":
            note = "interpreter + polars + trainperf + prometheus_client imports"
        print(f"{k:<20}{r['seconds']:>10.2f}{mbs:>10.1f}{r['peak_rss'] / 1e6:>14.0f}  {note}")
        r["mb_per_s"] = mbs
    speedup = pc["seconds"] / ours["seconds"]
    res["speedup_vs_prometheus_client"] = speedup
    res["fraction_of_polars_csv_speed"] = floor["seconds"] / ours["seconds"]
    print(
        f"\ntrainperf is {speedup:.1f}x faster than prometheus_client (target >= 20x); "
        f"{res['fraction_of_polars_csv_speed']:.0%} of the plain polars CSV read speed"
    )
    print(f"machine: {os.cpu_count()} CPUs, python {sys.version.split()[0]}")
    if a.json:
        a.json.write_text(json.dumps(res, indent=1))
    if not a.keep:
        path.unlink()
        tmp.rmdir()
    return res


if __name__ == "__main__":
    main()
