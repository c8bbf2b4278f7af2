"""Telemetry collector: exposition formatting, round trip through trainperf.dcgm, NVML backend
logic on a fake pynvml, the scrape loop and the CLI (command wrapping, signals). No GPU needed."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import sys
import threading
import time
import types

import pytest

from trainperf.capture import collect
from trainperf.capture.collect import Collector, Sample, format_exposition, format_value
from trainperf.capture.fields import BY_NAME

H200 = "NVIDIA H200"
UUID0 = "GPU-11111111-2222-3333-4444-555555555555"
UUID1 = "GPU-66666666-7777-8888-9999-000000000000"


def two_gpus(t_ms: int = 1_700_000_000_123) -> list[Sample]:
    return [
        Sample(
            t_ms,
            0,
            UUID0,
            "nvidia0",
            H200,
            "00000000:18:00.0",
            {
                "DCGM_FI_DEV_SM_CLOCK": 1980,
                "DCGM_FI_DEV_POWER_USAGE": 512.25,
                "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": 123456789,
                "DCGM_FI_DEV_GPU_UTIL": 100,
                "DCGM_FI_DEV_FB_USED": 81234,
                "DCGM_FI_PROF_SM_ACTIVE": 0.875,
                "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.5,
                "DCGM_FI_PROF_DRAM_ACTIVE": 0.25,
                "DCGM_FI_PROF_PCIE_TX_BYTES": 3 * 2**20,
                "DCGM_FI_PROF_NVLINK_RX_BYTES": 0,
            },
        ),
        Sample(
            t_ms + 1,
            1,
            UUID1,
            "nvidia1",
            H200,
            "00000000:2A:00.0",
            {
                "DCGM_FI_DEV_SM_CLOCK": 1755,
                "DCGM_FI_DEV_POWER_USAGE": 99.5,
                "DCGM_FI_PROF_SM_ACTIVE": None,  # not available: line left out
            },
        ),
    ]


L0 = (
    'gpu="0",UUID="GPU-11111111-2222-3333-4444-555555555555",pci_bus_id="00000000:18:00.0",'
    'device="nvidia0",modelName="NVIDIA H200",Hostname="node-a",DCGM_FI_DRIVER_VERSION="580.65.06"'
)
L1 = (
    'gpu="1",UUID="GPU-66666666-7777-8888-9999-000000000000",pci_bus_id="00000000:2A:00.0",'
    'device="nvidia1",modelName="NVIDIA H200",Hostname="node-a",DCGM_FI_DRIVER_VERSION="580.65.06"'
)

EXPECTED = f"""\
# SCRAPE 1700000000.100
# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{{{L0}}} 1980 1700000000123
DCGM_FI_DEV_SM_CLOCK{{{L1}}} 1755 1700000000124
# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{{{L0}}} 512.250000 1700000000123
DCGM_FI_DEV_POWER_USAGE{{{L1}}} 99.500000 1700000000124
# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since the driver was loaded (in mJ).
# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{L0}}} 123456789 1700000000123
# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{{{L0}}} 100 1700000000123
# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{{{L0}}} 81234 1700000000123
# HELP DCGM_FI_PROF_SM_ACTIVE Ratio of cycles an SM has at least 1 warp assigned (0-1; NVML GPM SM_UTIL / 100).
# TYPE DCGM_FI_PROF_SM_ACTIVE gauge
DCGM_FI_PROF_SM_ACTIVE{{{L0}}} 0.875000 1700000000123
# HELP DCGM_FI_PROF_PIPE_TENSOR_ACTIVE Ratio of cycles any tensor pipe is active (0-1; NVML GPM ANY_TENSOR_UTIL / 100).
# TYPE DCGM_FI_PROF_PIPE_TENSOR_ACTIVE gauge
DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{L0}}} 0.500000 1700000000123
# HELP DCGM_FI_PROF_DRAM_ACTIVE Ratio of cycles the device memory interface is active (0-1; NVML GPM DRAM_BW_UTIL / 100).
# TYPE DCGM_FI_PROF_DRAM_ACTIVE gauge
DCGM_FI_PROF_DRAM_ACTIVE{{{L0}}} 0.250000 1700000000123
# HELP DCGM_FI_PROF_PCIE_TX_BYTES Rate of data transmitted over PCIe (in B/s; NVML GPM PCIE_TX_PER_SEC MiB/s x 2^20).
# TYPE DCGM_FI_PROF_PCIE_TX_BYTES gauge
DCGM_FI_PROF_PCIE_TX_BYTES{{{L0}}} 3145728 1700000000123
# HELP DCGM_FI_PROF_NVLINK_RX_BYTES Rate of data received over NVLink, all links (in B/s; NVML GPM NVLINK_TOTAL_RX_PER_SEC MiB/s x 2^20).
# TYPE DCGM_FI_PROF_NVLINK_RX_BYTES gauge
DCGM_FI_PROF_NVLINK_RX_BYTES{{{L0}}} 0 1700000000123
"""


# ------------------------------------------------------------------------------------------
# format_exposition (pure)
# ------------------------------------------------------------------------------------------


def test_format_exposition_matches_hand_written_text():
    text = format_exposition(
        two_gpus(), "node-a", driver_version="580.65.06", scrape_time_ms=1_700_000_000_100
    )
    assert text == EXPECTED


def test_format_without_help_with_new_host_label_and_job():
    s = [Sample(1000, 3, "GPU-x", "nvidia3", "M", "", {"DCGM_FI_DEV_GPU_UTIL": 7})]
    text = format_exposition(s, "n1", host_label="hostname", job_id="77", help_lines=False)
    assert text == (
        'DCGM_FI_DEV_GPU_UTIL{gpu="3",UUID="GPU-x",device="nvidia3",modelName="M",'
        'hostname="n1",hpc_job="77"} 7 1000\n'
    )


def test_format_escapes_label_values_and_accepts_mappings():
    s = {
        "timestamp_ms": 5,
        "gpu": 0,
        "uuid": "GPU-0",
        "device": "nvidia0",
        "model_name": 'odd "name"\\x',
        "values": {"DCGM_FI_DEV_POWER_USAGE": 1},
    }
    text = format_exposition([s], "h", help_lines=False)
    assert 'modelName="odd \\"name\\"\\\\x"' in text
    assert text.endswith(" 1.000000 5\n")


def test_format_empty_and_errors():
    assert format_exposition([], "h", scrape_time_ms=1) == ""
    assert format_exposition([Sample(1, 0, "u", "d", "m", "", {})], "h") == ""
    with pytest.raises(KeyError, match="unknown field"):
        format_exposition([Sample(1, 0, "u", "d", "m", "", {"DCGM_FI_NOPE": 1})], "h")
    spec = BY_NAME["DCGM_FI_DEV_POWER_USAGE"]
    with pytest.raises(ValueError, match="not finite"):
        format_value(spec, float("nan"))
    assert format_value(BY_NAME["DCGM_FI_DEV_FB_USED"], 12.6) == "13"


def test_fields_agree_with_the_dcgm_field_table():
    dcgm = pytest.importorskip("trainperf.dcgm")
    for f in collect.FIELDS:
        info = dcgm.FIELDS[f.field_id]
        assert info.name == f.name
        assert info.dtype == f.dtype, f.name


# ------------------------------------------------------------------------------------------
# Round trip through the project's DCGM reader
# ------------------------------------------------------------------------------------------


class FakeBackend:
    """Two GPUs; every read advances the fake clock by one second."""

    hostname = "node-a"
    driver_version = "580.65.06"

    def __init__(self, t0_ms: int = 1_700_000_000_123) -> None:
        self.t_ms = t0_ms
        self.reads = 0
        self.closed = False

    def read(self) -> list[Sample]:
        out = two_gpus(self.t_ms)
        self.t_ms += 1000
        self.reads += 1
        return out

    def close(self) -> None:
        self.closed = True


def test_round_trip_through_dcgm_reader(tmp_path):
    dcgm = pytest.importorskip("trainperf.dcgm")
    if not hasattr(dcgm, "read_exposition"):
        pytest.skip("trainperf.dcgm has no read_exposition yet")
    out = tmp_path / "t.prom"
    backend = FakeBackend()
    clock = iter(1_700_000_000 + x / 10 for x in range(10**6))
    c = Collector(backend, out, 1.0, job_id="4242", clock=lambda: next(clock))
    for _ in range(3):
        c.scrape_once()
    df = dcgm.read_exposition(out)
    n_per_scrape = 10 + 2  # GPU 0: 10 values; GPU 1: 2 (SM_ACTIVE None is left out)
    assert df.height == 3 * n_per_scrape
    assert set(df["hostname"]) == {"node-a"}
    assert set(df["job_id"]) == {"4242"}
    assert set(df["uuid"]) == {UUID0, UUID1}
    assert set(df["entity"]) == {"GPU"}
    g0 = df.filter(df["gpu"] == 0)
    # per-sample timestamps (ms) win over the scrape marker
    want = [dt.datetime(2023, 11, 14, 22, 13, 20 + k, 123000, dt.UTC) for k in range(3)]
    assert sorted(set(g0["timestamp"])) == want
    vals = {
        (r["field"], r["field_id"]): r["value"]
        for r in g0.filter(g0["timestamp"] == want[0]).iter_rows(named=True)
    }
    assert vals == {
        ("DCGM_FI_DEV_SM_CLOCK", 100): 1980.0,
        ("DCGM_FI_DEV_POWER_USAGE", 155): 512.25,
        ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 156): 123456789.0,
        ("DCGM_FI_DEV_GPU_UTIL", 203): 100.0,
        ("DCGM_FI_DEV_FB_USED", 252): 81234.0,
        ("DCGM_FI_PROF_SM_ACTIVE", 1002): 0.875,
        ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 1004): 0.5,
        ("DCGM_FI_PROF_DRAM_ACTIVE", 1005): 0.25,
        ("DCGM_FI_PROF_PCIE_TX_BYTES", 1009): 3145728.0,
        ("DCGM_FI_PROF_NVLINK_RX_BYTES", 1012): 0.0,
    }
    labels = json.loads(g0["labels"][0])
    assert labels == {
        "DCGM_FI_DRIVER_VERSION": "580.65.06",
        "device": "nvidia0",
        "modelName": H200,
        "pci_bus_id": "00000000:18:00.0",
    }
    # the blocks are whole: the file is 3 x the expected block (timestamps shifted)
    text = out.read_text()
    assert text.count("# SCRAPE ") == 3
    assert text.count("# TYPE DCGM_FI_DEV_SM_CLOCK gauge") == 3


# ------------------------------------------------------------------------------------------
# Scrape loop
# ------------------------------------------------------------------------------------------


class FakeClock:
    """time.time stand-in that advances only when the loop waits (Event.wait is patched)."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class SteppingEvent(threading.Event):
    def __init__(self, clock: FakeClock) -> None:
        super().__init__()
        self.clock = clock
        self.waits: list[float] = []

    def wait(self, timeout=None):
        self.waits.append(timeout)
        self.clock.t += timeout
        return self.is_set()


def test_run_with_duration_keeps_a_fixed_grid(tmp_path):
    clock = FakeClock()
    stop = SteppingEvent(clock)
    c = Collector(FakeBackend(), tmp_path / "x.prom", 0.5, clock=clock)
    n = c.run(stop, duration=2.0)
    # t = 0, 0.5, 1.0, 1.5 on the grid, then the final scrape at the deadline
    assert n == 5
    assert stop.waits == [0.5, 0.5, 0.5, 0.5]
    assert (tmp_path / "x.prom").read_text().count("# SCRAPE") == 5


def test_run_stops_when_until_is_true(tmp_path):
    clock = FakeClock()
    stop = SteppingEvent(clock)
    calls = iter([False, False, True])
    c = Collector(FakeBackend(), tmp_path / "x.prom", 1.0, clock=clock)
    assert c.run(stop, until=lambda: next(calls, True)) == 3  # first, one more, final


def test_interval_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match="interval"):
        Collector(FakeBackend(), tmp_path / "x.prom", 0)


# ------------------------------------------------------------------------------------------
# NVML backend on a fake pynvml
# ------------------------------------------------------------------------------------------


class _NVMLError(Exception):
    def __init__(self, value):
        super().__init__(f"NVML error {value}")
        self.value = value


def fake_pynvml(gpm_supported=True, power_unsupported=False, init_fails=False):
    """A module object with the slice of the pynvml API NvmlBackend uses."""
    nv = types.ModuleType("pynvml")
    nv.NVMLError = _NVMLError
    nv.NVML_SUCCESS = 0
    nv.NVML_ERROR_NOT_SUPPORTED = 3
    nv.NVML_ERROR_NO_PERMISSION = 4
    nv.NVML_ERROR_FUNCTION_NOT_FOUND = 13
    nv.NVML_CLOCK_SM = 1
    nv.NVML_TEMPERATURE_GPU = 0
    nv.NVML_PCIE_UTIL_TX_BYTES = 0
    nv.NVML_PCIE_UTIL_RX_BYTES = 1
    nv.nvmlMemory_v2 = 0x02000028
    nv.NVML_GPM_METRICS_GET_VERSION = 1
    gpm_ids = {
        "NVML_GPM_METRIC_GRAPHICS_UTIL": 1,
        "NVML_GPM_METRIC_SM_UTIL": 2,
        "NVML_GPM_METRIC_SM_OCCUPANCY": 3,
        "NVML_GPM_METRIC_ANY_TENSOR_UTIL": 5,
        "NVML_GPM_METRIC_HMMA_TENSOR_UTIL": 7,
        "NVML_GPM_METRIC_DRAM_BW_UTIL": 10,
        "NVML_GPM_METRIC_PCIE_TX_PER_SEC": 20,
        "NVML_GPM_METRIC_PCIE_RX_PER_SEC": 21,
        "NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC": 60,
        "NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC": 61,
    }
    for k, v in gpm_ids.items():
        setattr(nv, k, v)
    # GPM values in NVML units: percent, MiB/s. id 3 (occupancy) fails per-metric.
    gpm_values = {
        1: 97.0,
        2: 91.5,
        5: 62.5,
        7: 60.0,
        10: 37.5,
        20: 2.0,
        21: 0.5,
        60: 1024.0,
        61: 512.0,
    }
    state = {"shutdown": 0, "freed": 0, "samples": 0}
    nv.state = state

    def init():
        if init_fails:
            raise _NVMLError(12)

    nv.nvmlInit = init
    nv.nvmlShutdown = lambda: state.__setitem__("shutdown", state["shutdown"] + 1)
    nv.nvmlDeviceGetCount = lambda: 2
    nv.nvmlSystemGetDriverVersion = lambda: b"580.65.06"
    nv.nvmlDeviceGetHandleByIndex = lambda i: ("h", i)
    nv.nvmlDeviceGetMinorNumber = lambda h: h[1] + 4
    nv.nvmlDeviceGetPciInfo = lambda h: types.SimpleNamespace(busId=f"00000000:{h[1]:02X}:00.0")
    nv.nvmlDeviceGetUUID = lambda h: f"GPU-{h[1]}"
    nv.nvmlDeviceGetName = lambda h: "NVIDIA H200"
    nv.nvmlGpmQueryDeviceSupport = lambda h: types.SimpleNamespace(
        isSupportedDevice=int(gpm_supported)
    )
    nv.nvmlGpmSampleAlloc = lambda: object()

    def sample_get(h, s):
        state["samples"] += 1
        return s

    nv.nvmlGpmSampleGet = sample_get
    nv.nvmlGpmSampleFree = lambda s: state.__setitem__("freed", state["freed"] + 1)

    class Metric:
        metricId = 0
        nvmlReturn = 0
        value = 0.0

    class MetricsGet:
        def __init__(self):
            self.metrics = [Metric() for _ in range(98)]

    nv.c_nvmlGpmMetricsGet_t = MetricsGet

    def metrics_get(mg):
        assert mg.version == 1 and mg.sample1 is not mg.sample2
        for m in mg.metrics[: mg.numMetrics]:
            if m.metricId in gpm_values:
                m.value = gpm_values[m.metricId]
            else:
                m.nvmlReturn = 3
        return mg

    nv.nvmlGpmMetricsGet = metrics_get
    nv.nvmlDeviceGetUtilizationRates = lambda h: types.SimpleNamespace(gpu=99, memory=40)

    def power(h):
        if power_unsupported:
            raise _NVMLError(3)
        return 512250  # mW

    nv.nvmlDeviceGetPowerUsage = power
    nv.nvmlDeviceGetTotalEnergyConsumption = lambda h: 987654321
    nv.nvmlDeviceGetClockInfo = lambda h, c: 1980
    nv.nvmlDeviceGetTemperature = lambda h, s: 45
    nv.nvmlDeviceGetMemoryInfo = lambda h, version=None: types.SimpleNamespace(
        used=81234 * 2**20 + 5
    )
    nv.nvmlDeviceGetPcieThroughput = lambda h, c: 1234 + c
    return nv


def test_nvml_backend_converts_gpm_to_dcgm_units(monkeypatch):
    nv = fake_pynvml()
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    with collect.NvmlBackend(gpus=[1], hostname="node-b") as b:
        assert b.driver_version == "580.65.06"
        assert b.gpm_enabled == {1: True}
        (s,) = b.read()
    assert nv.state == {"shutdown": 1, "freed": 2, "samples": 2}
    assert (s.gpu, s.uuid, s.device, s.model_name, s.pci_bus_id) == (
        1,
        "GPU-1",
        "nvidia5",
        "NVIDIA H200",
        "00000000:01:00.0",
    )
    v = s.values
    assert v["DCGM_FI_DEV_GPU_UTIL"] == 99
    assert v["DCGM_FI_DEV_POWER_USAGE"] == pytest.approx(512.25)
    assert v["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"] == 987654321
    assert v["DCGM_FI_DEV_SM_CLOCK"] == 1980
    assert v["DCGM_FI_DEV_FB_USED"] == 81234
    assert v["DCGM_FI_PROF_GR_ENGINE_ACTIVE"] == pytest.approx(0.97)
    assert v["DCGM_FI_PROF_SM_ACTIVE"] == pytest.approx(0.915)
    assert v["DCGM_FI_PROF_SM_OCCUPANCY"] is None  # per-metric NVML error
    assert v["DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"] == pytest.approx(0.625)
    assert v["DCGM_FI_PROF_PIPE_TENSOR_HMMA_ACTIVE"] == pytest.approx(0.60)
    assert v["DCGM_FI_PROF_DRAM_ACTIVE"] == pytest.approx(0.375)
    assert v["DCGM_FI_PROF_PCIE_TX_BYTES"] == 2 * 2**20
    assert v["DCGM_FI_PROF_PCIE_RX_BYTES"] == 2**19
    assert v["DCGM_FI_PROF_NVLINK_RX_BYTES"] == 1024 * 2**20
    assert v["DCGM_FI_PROF_NVLINK_TX_BYTES"] == 512 * 2**20
    assert "DCGM_FI_DEV_PCIE_TX_THROUGHPUT" not in v
    # and it formats: occupancy line left out
    text = format_exposition([s], "node-b")
    assert "DCGM_FI_PROF_SM_OCCUPANCY{" not in text
    assert 'DCGM_FI_PROF_SM_ACTIVE{gpu="1",UUID="GPU-1",' in text


def test_nvml_backend_without_gpm_uses_legacy_pcie_and_skips_unsupported(monkeypatch):
    nv = fake_pynvml(gpm_supported=False, power_unsupported=True)
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    b = collect.NvmlBackend()
    first, second = b.read()
    b.close()
    b.close()  # idempotent
    assert nv.state["shutdown"] == 1
    assert first.values["DCGM_FI_DEV_POWER_USAGE"] is None
    assert first.values["DCGM_FI_DEV_PCIE_TX_THROUGHPUT"] == 1234
    assert first.values["DCGM_FI_DEV_PCIE_RX_THROUGHPUT"] == 1235
    assert not any(k.startswith("DCGM_FI_PROF") for k in first.values)
    assert second.gpu == 1


def test_nvml_unavailable_messages(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails
    with pytest.raises(collect.NvmlUnavailableError, match="pip install nvidia-ml-py"):
        collect.NvmlBackend()
    assert collect.main(["--out", str(tmp_path / "t.prom"), "--duration", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("trainperf.capture.collect: error: nvidia-ml-py")
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(init_fails=True))
    with pytest.raises(collect.NvmlUnavailableError, match="NVML could not be initialised"):
        collect.NvmlBackend()
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml())
    with pytest.raises(collect.NvmlUnavailableError, match="out of range"):
        collect.NvmlBackend(gpus=[5])
    assert not (tmp_path / "t.prom").exists()


# ------------------------------------------------------------------------------------------
# CLI
# ------------------------------------------------------------------------------------------


def _factory(store):
    def make(**kw):
        store["kw"] = kw
        store["backend"] = FakeBackend()
        return store["backend"]

    return make


def test_cli_wraps_a_command_and_returns_its_exit_code(tmp_path):
    store: dict = {}
    out = tmp_path / "w.prom"
    # the command ends once two scrapes are written (bounded: no dependence on the machine's speed)
    code = (
        "import pathlib, sys, time\n"
        f"p = pathlib.Path({str(out)!r}); end = time.monotonic() + 300\n"
        "while time.monotonic() < end and (not p.exists() or p.read_text().count('# SCRAPE') < 2):\n"
        "    time.sleep(0.02)\n"
        "sys.exit(3)\n"
    )
    rc = collect.main(
        ["--interval", "0.1", "--out", str(out), "--gpus", "0,1", "--", sys.executable, "-c", code],
        backend_factory=_factory(store),
    )
    assert rc == 3
    assert store["kw"] == {"gpus": [0, 1], "use_gpm": True, "hostname": None}
    assert store["backend"].closed
    n = out.read_text().count("# SCRAPE")
    assert n >= 3  # first, at least one on the grid (the command waited for it), final


def test_cli_sigterm_flushes_and_exits_cleanly(tmp_path):
    store: dict = {}
    out = tmp_path / "s.prom"
    before = signal.getsignal(signal.SIGTERM)

    def term_after_two_scrapes():  # bounded wait for a condition, not a time
        end = time.monotonic() + 300
        while time.monotonic() < end and not (
            out.exists() and out.read_text().count("# SCRAPE") >= 2
        ):
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGTERM)

    timer = threading.Thread(target=term_after_two_scrapes, daemon=True)
    timer.start()
    try:
        rc = collect.main(
            ["--interval", "0.05", "--out", str(out), "--no-help", "--job-id", "9"],
            backend_factory=_factory(store),
        )
    finally:
        timer.join(timeout=300)
    assert rc == 0
    text = out.read_text()
    assert "# HELP" not in text and 'hpc_job="9"' in text
    blocks = text.split("# SCRAPE")[1:]
    assert len(blocks) >= 3
    assert all(b.endswith("\n") for b in blocks)
    assert signal.getsignal(signal.SIGTERM) == before  # handler restored


def test_cli_usage_errors(tmp_path, capsys):
    out = str(tmp_path / "u.prom")
    assert collect.main(["--out", out, "--"], backend_factory=_factory({})) == 2
    assert collect.main(["--out", out, "--gpus", "a"], backend_factory=_factory({})) == 2
    assert collect.main(["--out", out, "--interval", "0"], backend_factory=_factory({})) == 2
    rc = collect.main(["--out", out, "--", "/nonexistent/cmd"], backend_factory=_factory({}))
    assert rc == 127
    assert "error" in capsys.readouterr().err
