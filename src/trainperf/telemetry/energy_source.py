"""GPU energy of a cluster's MLPerf run from the config's telemetry: the source read, the run's
job selected, :func:`trainperf.telemetry.energy.gpu_energy` over the run's phases.

The sources are those of the config's ``telemetry.source`` (:class:`trainperf.config.TelemetryInput`)
and of the telemetry chapter: a dcgm-exporter exposition file (``.prom``/``.txt``, ``.gz`` ok;
streamed into a Parquet store in bounded memory, :func:`trainperf.dcgm.ingest_exposition`), a
dcgm-exporter / DCGM CSV or a Prometheus API JSON dump (:func:`trainperf.dcgm.load`), a Parquet
store folder (:func:`trainperf.dcgm.scan_parquet`), or an ``http(s)://`` Prometheus URL (queried
over the run, :class:`trainperf.promsource.PrometheusSource`). Only the two energy fields are
read: ``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`` (156, mJ) and ``DCGM_FI_DEV_POWER_USAGE`` (155, W).

Damage never raises: a source that cannot be read, a job not in it, or no energy field for the
run's GPUs gives an empty result with one data-quality row saying why (the energy chapter shows
it, and the MLPerf power results beside it are not lost).
"""

from __future__ import annotations

import datetime as _dt
import shutil
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from trainperf.errors import InputError, TrainperfError
from trainperf.quality import QualityLog, empty_quality
from trainperf.telemetry.energy import (
    ENERGY_FIELD,
    GPU_ENERGY_PHASE_SCHEMA,
    GPU_ENERGY_SUMMARY_SCHEMA,
    POWER_FIELD,
    GpuEnergy,
    gpu_energy,
    trained_units,
)

__all__ = ["RunTelemetryEnergy", "run_energy_from_telemetry"]

_MARGIN_S = 120.0  # samples this long before run_start / after run_stop kept (the phases' edges)


@dataclass
class RunTelemetryEnergy:
    """What :func:`run_energy_from_telemetry` returns.

    Attributes:
        energy: :class:`~trainperf.telemetry.energy.GpuEnergy` of the run (empty frames when the
            telemetry gave none; ``energy.quality`` holds the reader's and the energy's checks).
        source: the telemetry's name as a book shows it (file or folder name, or the URL).
        run: the MLPerf log's ``result_*.txt`` name and system, ``(file, system)``.
        synthetic: the samples carry the ``synthetic="true"`` label of
            :mod:`trainperf.synthetic.telemetry` (generated, never a measurement).
        n_hosts: hosts whose GPUs gave energy.
    """

    energy: GpuEnergy
    source: str
    run: tuple[str, str] = ("", "")
    synthetic: bool = False
    n_hosts: int = 0
    quality: pl.DataFrame = field(default_factory=empty_quality)


def _empty(quality: pl.DataFrame) -> GpuEnergy:
    return GpuEnergy(
        pl.DataFrame(schema=GPU_ENERGY_PHASE_SCHEMA),
        pl.DataFrame(schema=GPU_ENERGY_SUMMARY_SCHEMA),
        quality,
    )


def _load(source: str, start, end, job_id: str, nodelist: str, scratch_dir: Path | None):
    """(lazy reader frame, reader quality rows, the source's name)."""
    from trainperf import dcgm  # noqa: PLC0415 - the readers load with the first telemetry

    if source.startswith(("http://", "https://")):
        from trainperf import promsource  # noqa: PLC0415 - only for a Prometheus URL

        prom = promsource.PrometheusSource(source)
        frame = prom.fetch(
            start,
            end,
            fields=[ENERGY_FIELD, POWER_FIELD],
            job_id=job_id or None,
            hostnames=nodelist or None,
        )
        return frame.lazy(), prom.quality(), source
    path = Path(source)
    name = path.name  # never the build machine's path
    if path.is_dir() and any(path.rglob("*.parquet")):
        return dcgm.scan_parquet(path), dcgm.store_quality(path), name
    if path.is_file() and dcgm.detect_format(path) == "exposition" and scratch_dir is not None:
        store = Path(scratch_dir) / "ingested"
        if store.exists():
            shutil.rmtree(store)  # our own scratch store, rebuilt for this file
        quality = dcgm.ingest_exposition(path, store)["quality"]
        return dcgm.scan_parquet(store), quality, name
    reading = dcgm.load(path)  # CSV, JSON dumps, dmon; a folder of such files
    return reading.frame().lazy(), reading.quality, name


def run_energy_from_telemetry(
    source: str,
    mlperf_log: str,
    *,
    job_id: str = "",
    nodelist: str = "",
    time_window: str = "",
    scratch_dir: str | Path | None = None,
) -> RunTelemetryEnergy:
    """GPU-board energy of the MLPerf run ``mlperf_log`` and of its phases (init, train, eval) from
    the cluster telemetry ``source``: per GPU, summed, J per token / sample (module docstring).

    Args:
        source: telemetry (module docstring), as ``telemetry.source`` of the config.
        mlperf_log: the ``result_*.txt`` of the run (its run_start/run_stop, phases, tokens).
        job_id: Slurm job id of the run in the telemetry (``""``: the only job, or every host).
        nodelist: Slurm host list for telemetry without job labels (``""``: none).
        time_window: ``START/END`` ISO 8601 (``""``: the run's own, with a margin).
        scratch_dir: where an exposition file is ingested (None: read whole with
            :func:`trainperf.dcgm.load`).

    Returns:
        :class:`RunTelemetryEnergy`; its ``energy.summary`` is
        :data:`trainperf.telemetry.energy.GPU_ENERGY_SUMMARY_SCHEMA` (J, kWh, W per GPU, J per
        token and per sample, scope ``GPU boards only``).

    Raises:
        trainperf.errors.InputError: the MLPerf log cannot be read or holds no run (the config
            checked it exists; the chapter's other inputs are the caller's to keep).
    """
    from trainperf import mlperf  # noqa: PLC0415 - the loader with the first run
    from trainperf.telemetry.activity import is_synthetic, jobs_in, select_job  # noqa: PLC0415
    from trainperf.telemetry.phases import phases_from_log  # noqa: PLC0415

    log = QualityLog()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the log's own checks are the MLPerf chapter's
        res = mlperf.load_results(mlperf_log)
    if res.runs.height == 0:
        raise InputError(f"{mlperf_log}: no MLPerf run in this log")
    run = res.runs.row(0, named=True)
    phases = phases_from_log(res, file=run["result_file"])
    tokens, samples = trained_units(res, run["result_file"])
    start, end = run["run_start"], run["run_stop"]
    if isinstance(start, _dt.datetime):
        lo, hi = (start - _dt.timedelta(seconds=_MARGIN_S), end + _dt.timedelta(seconds=_MARGIN_S))
    else:
        lo, hi = start, end
    if phases.height:
        lo, hi = min(lo, phases["start"].min()), max(hi, phases["end"].max())
    shown = "/".join(Path(mlperf_log).parts[-3:])
    label = Path(source).name if not source.startswith(("http://", "https://")) else source
    runinfo = (Path(str(run["result_file"])).name, str(run.get("system") or ""))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the reader's checks come back as quality rows
            data, rq, label = _load(
                source, lo, hi, job_id, nodelist, Path(scratch_dir) if scratch_dir else None
            )
            synthetic = is_synthetic(data)
            job = job_id
            if not job and not nodelist:
                jobs = jobs_in(data)
                job = jobs["job_id"][0] if jobs.height == 1 else ""
            window = time_window.split("/") if time_window else [lo, hi]
            sel = select_job(
                data, job_id=job or None, hostnames=nodelist or None,
                start=window[0], end=window[1], source=label,
            )  # fmt: skip
            frame = sel.filter(pl.col("field_id").is_in([ENERGY_FIELD, POWER_FIELD])).collect()
    except (TrainperfError, OSError, ValueError, pl.exceptions.PolarsError) as exc:
        log.add(label, "unreadable", "excluded", f"no GPU energy from this telemetry: {exc}")
        q = log.frame()
        return RunTelemetryEnergy(_empty(q), label, runinfo, quality=q)
    if frame.height == 0:
        log.add(
            label,
            "no_energy_field",
            "excluded",
            f"no DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION or DCGM_FI_DEV_POWER_USAGE sample of the run "
            f"of {shown} (job {job or 'any'}): no GPU energy",
        )
        q = pl.concat([rq, log.frame()], how="diagonal_relaxed") if rq.height else log.frame()
        return RunTelemetryEnergy(_empty(q), label, runinfo, synthetic, quality=q)
    ge = gpu_energy(frame, phases, start, end, tokens=tokens, samples=samples, source=label)
    quality = [q for q in (rq, ge.quality) if q is not None and q.height]
    q = pl.concat(quality, how="diagonal_relaxed") if quality else empty_quality()
    ge.quality = q
    n_hosts = ge.phases["hostname"].n_unique() if ge.phases.height else 0
    return RunTelemetryEnergy(ge, label, runinfo, synthetic, n_hosts, q)
