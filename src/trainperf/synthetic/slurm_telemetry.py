"""SYNTHETIC GPU telemetry for one job of a SYNTHETIC sacct dump (:mod:`trainperf.synthetic.slurm`).

The bundled accounting history has no telemetry; the operations chapter's per-job GPU utilisation
table needs samples that belong to a job of it, on its nodes and inside its time window. This
module generates them with :mod:`trainperf.synthetic.telemetry` for one chosen job. Not measured data.
"""

from __future__ import annotations

import datetime as _dt

import polars as pl

from trainperf import dcgm
from trainperf.synthetic import telemetry as synth_telemetry

__all__ = ["job_telemetry"]


def job_telemetry(
    jobs: pl.DataFrame, *, interval_s: float = 60.0, margin_s: float = 120.0
) -> tuple[pl.DataFrame, str | None]:
    """SYNTHETIC ``DCGM_FI_DEV_GPU_UTIL`` samples for one job of a synthetic dump, at its own time.

    The bundled dump carries no telemetry, so the book's per-job utilisation table needs some: this
    picks the successful job (state COMPLETED) with the most nodes among those placed on the first
    hosts ``gpu001 .. gpuN`` (the hosts :mod:`trainperf.synthetic.telemetry` names), longest first,
    and generates its nodes' GPU utilisation with :func:`trainperf.synthetic.telemetry.iter_frames`
    following the phases of the bundled Eos MLPerf GPT-3 log, shifted to start ``margin_s`` after the
    job's start. The samples cover only that run (about an hour) of the job's window: the values are
    the generator's model (100 % in training, 98 % in evaluation, 25 % in initialisation, 0 idle),
    not a measurement.

    Returns:
        ``(frame with trainperf.dcgm.SCHEMA, JobID)``; an empty frame and None when no job fits.
    """

    done = jobs.filter((pl.col("state") == "COMPLETED") & (pl.col("n_nodes").fill_null(0) > 0))
    first_hosts = pl.col("nodes") == pl.int_ranges(1, pl.col("n_nodes") + 1).list.eval(
        pl.format("gpu{}", pl.element().cast(pl.Utf8).str.zfill(3))
    )
    fits = done.filter(first_hosts).sort(["n_nodes", "elapsed_s"], descending=True)
    if fits.height == 0:
        return pl.DataFrame(schema=dcgm.SCHEMA), None
    job = fits.row(0, named=True)
    other = (
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        "DCGM_FI_PROF_PCIE_RX_BYTES",
        "DCGM_FI_PROF_NVLINK_TX_BYTES",
        "DCGM_FI_PROF_NVLINK_RX_BYTES",
    )
    fields = tuple(f for f in synth_telemetry.GPU_FIELDS if f != "DCGM_FI_DEV_GPU_UTIL") + other
    cfg = synth_telemetry.SyntheticConfig(
        n_nodes=job["n_nodes"],
        job_nodes=job["n_nodes"],
        job_id=job["JobID"],
        interval_s=interval_s,
        margin_s=margin_s,
        start=job["start"] + _dt.timedelta(seconds=margin_s),
        exclude_fields=fields,
        nic=False,
    )
    phases = synth_telemetry.default_phases()
    frame = pl.concat(list(synth_telemetry.iter_frames(cfg, phases)), how="vertical_relaxed")
    frame = frame.filter(pl.col("field") == "DCGM_FI_DEV_GPU_UTIL")
    return frame, job["JobID"]
