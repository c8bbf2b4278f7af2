"""The NVML backend of the collector: reads the :data:`~trainperf.capture.fields.FIELDS` values.

NVML through nvidia-ml-py (module ``pynvml``, imported when a backend opens); GPM metrics where
the GPU supports them (Hopper and newer), else the legacy PCIe counters. Field mapping and units:
:mod:`trainperf.capture.fields`.
"""

from __future__ import annotations

import math
import socket
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from trainperf.capture.fields import GPM_MAP, MIB
from trainperf.capture.render import Sample
from trainperf.errors import TrainperfError

__all__ = ["Backend", "NvmlBackend", "NvmlUnavailableError"]


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
        # deferred: nvidia-ml-py is the optional [gpu] extra; without it the backend says so
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
    """Reads the :data:`~trainperf.capture.fields.FIELDS` values of every (or the chosen) GPU through NVML.

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
        wanted = [(getattr(nv, c, None), f, s) for c, f, s in GPM_MAP]
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
