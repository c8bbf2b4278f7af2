"""Rendering samples as dcgm-exporter Prometheus exposition text (pure: samples in, text out).

Labels follow dcgm-exporter's render template (``gpu``, ``UUID``, ``pci_bus_id``, ``device``,
``modelName``, host label, ``DCGM_FI_DRIVER_VERSION``; plus ``hpc_job`` when a Slurm job id is
known); values use dcgm-exporter's number formats (doubles ``%f``, int64 fields as integers);
every sample carries its own timestamp (epoch ms). The format: :mod:`trainperf.capture.collect`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from trainperf.capture.fields import BY_NAME, FIELDS, FieldSpec

__all__ = ["Sample", "format_exposition", "format_value"]


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
            if k not in BY_NAME:
                raise KeyError(f"unknown field {k!r}; known: {sorted(BY_NAME)}")
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
