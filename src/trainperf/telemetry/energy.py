"""GPU energy of an MLPerf run and of its phases, from DCGM telemetry: GPU boards only.

What it measures: the energy the GPU boards drew, nothing else (no CPUs, memory, NICs, switches,
storage, fans, PSU losses or cooling). It is never an MLPerf power figure, which is measured at the
nodes' PSUs (mlcommons/training_policies ``power_measurement.adoc``; :mod:`trainperf.power`).

Sources, per GPU series, first that is present:

* ``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`` (field 156, mJ since the driver loaded; NVML
  ``nvmlDeviceGetTotalEnergyConsumption``): the energy between two times is the counter's increase.
  The counter's damage is handled by the rule :func:`trainperf.dcgm.counter_increase` uses: a step
  down to less than half the value before is a reset (driver reload: the counter restarts near
  zero; the step counts the new value, the energy between the two samples before it is lost:
  flagged ``counter_reset``); a smaller step down is a dip (back to about the old level), not a
  reset: the increase is counted from the highest value seen since the last reset, so a dip and
  the climb back add nothing (flagged ``counter_dip``).
* else ``DCGM_FI_DEV_POWER_USAGE`` (field 155, W): the trapezoid rule over the samples.

Either becomes a cumulative energy ``E(t)`` per GPU at its sample times; the energy of ``[a, b]``
is ``E(b) - E(a)`` with ``E`` linear between samples (the counter's increase over a 1 s scrape
spread evenly, the trapezoid's own assumption). A phase the samples do not cover is clipped to
them and flagged ``coverage``.
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass, field

import polars as pl

from trainperf.dcgm.monotonic import glitch_expr, reset_expr
from trainperf.quality import QualityLog, empty_quality

__all__ = [
    "CUMULATIVE_ENERGY_SCHEMA",
    "ENERGY_FIELD",
    "GPU_ENERGY_PHASE_SCHEMA",
    "GPU_ENERGY_SUMMARY_SCHEMA",
    "GpuEnergy",
    "POWER_FIELD",
    "cumulative_energy",
    "gpu_energy",
    "trained_units",
]

ENERGY_FIELD = 156  # DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, mJ
POWER_FIELD = 155  # DCGM_FI_DEV_POWER_USAGE, W
_J_PER_KWH = 3.6e6
_GAP_FACTOR = 3.0  # a sample interval over 3x the series' median is a gap (flagged)

GPU_ENERGY_PHASE_SCHEMA: dict[str, pl.DataType] = {
    "hostname": pl.String(),
    "gpu": pl.Int32(),
    "phase": pl.String(),
    "kind": pl.String(),
    "start": pl.Datetime("us", "UTC"),
    "end": pl.Datetime("us", "UTC"),
    "duration_s": pl.Float64(),
    "covered_s": pl.Float64(),
    "energy_j": pl.Float64(),
    "mean_power_w": pl.Float64(),
    "source": pl.String(),
}
"""Columns of :attr:`GpuEnergy.phases`: one row per (GPU, phase); ``phase`` is ``run`` (run_start ..
run_stop, the timed region), ``init``, ``train_NN`` or ``eval_NN``; covered_s the part of the phase
the GPU's samples span; source ``counter`` or ``power``."""

CUMULATIVE_ENERGY_SCHEMA: dict[str, pl.DataType] = {
    "hostname": pl.String(),
    "gpu": pl.Int32(),
    "timestamp": pl.Datetime("us", "UTC"),
    "t_s": pl.Float64(),
    "energy_j": pl.Float64(),
    "source": pl.String(),
}
"""Columns of :func:`cumulative_energy`."""

GPU_ENERGY_SUMMARY_SCHEMA: dict[str, pl.DataType] = {
    "kind": pl.String(),
    "n_gpus": pl.Int64(),
    "duration_s": pl.Float64(),
    "energy_j": pl.Float64(),
    "energy_kwh": pl.Float64(),
    "mean_power_w_per_gpu": pl.Float64(),
    "tokens": pl.Int64(),
    "j_per_token": pl.Float64(),
    "samples": pl.Int64(),
    "j_per_sample": pl.Float64(),
    "source": pl.String(),
    "scope": pl.String(),
}
"""Columns of :attr:`GpuEnergy.summary`: one row per kind (``run``, ``init``, ``train``, ``eval``),
all GPUs summed: duration_s (s, the kind's phases summed), energy_j (J), energy_kwh (J / 3.6e6),
mean_power_w_per_gpu (W: energy / duration / GPUs), tokens and samples (the run's, on the ``run``
and ``train`` rows), j_per_token, j_per_sample (J), source (``counter``, ``power`` or ``mixed``),
scope (always ``GPU boards only``)."""


@dataclass
class GpuEnergy:
    """What :func:`gpu_energy` returns: ``phases`` (:data:`GPU_ENERGY_PHASE_SCHEMA`), ``summary``
    (:data:`GPU_ENERGY_SUMMARY_SCHEMA`) and ``quality`` (:data:`trainperf.quality.QUALITY_SCHEMA`)."""

    phases: pl.DataFrame
    summary: pl.DataFrame
    quality: pl.DataFrame = field(default_factory=empty_quality)


def cumulative_energy(
    frame: pl.DataFrame, log: QualityLog | None = None, source: str = "telemetry"
) -> pl.DataFrame:
    """Cumulative GPU energy per (hostname, gpu) at each sample time, from the counter where a GPU
    has one, else from board power (module docstring for the rules).

    Args:
        frame: a :mod:`trainperf.dcgm` reader frame (:data:`trainperf.dcgm.SCHEMA`).
        log: quality rows go here (``counter_reset``, ``counter_dip``, ``gap``); none kept without one.
        source: the name the quality rows give (the telemetry file).

    Returns:
        :data:`CUMULATIVE_ENERGY_SCHEMA`: hostname (String), gpu (Int32), timestamp
        (Datetime[us, UTC]), ``t_s`` (Float64, epoch s),
        ``energy_j`` (Float64, J since the GPU's first sample), ``source`` (String), sorted.
    """
    log = log if log is not None else QualityLog()
    f = frame.filter(
        pl.col("field_id").is_in([ENERGY_FIELD, POWER_FIELD]) & pl.col("value").is_not_null()
    )
    # device rows: one series per GPU (MIG instance rows repeat the device's value)
    f = f.unique(["hostname", "gpu", "field_id", "timestamp"], keep="first", maintain_order=True)
    out = []
    for (host, gpu), g in f.group_by(["hostname", "gpu"], maintain_order=True):
        has_counter = g.filter(pl.col("field_id") == ENERGY_FIELD).height >= 2
        fid = ENERGY_FIELD if has_counter else POWER_FIELD
        s = g.filter(pl.col("field_id") == fid)
        # a counter whose time goes back in file order (a clock stepped back, the reader's check
        # clock_step) is taken in file order, where its values are right (trainperf.dcgm.counter_increase)
        if fid != ENERGY_FIELD or not bool((s["timestamp"].dt.epoch("us").diff() < 0).any()):
            s = s.sort("timestamp")
        if s.height < 2:
            continue
        s = s.with_columns((pl.col("timestamp").dt.epoch("us") / 1e6).alias("t_s"))
        where = f"{source} (host {host}, GPU {gpu})"
        if fid == ENERGY_FIELD:
            prev = pl.col("value").shift(1)
            # the rule of trainperf.dcgm.counter_increase: a one-sample glitch is taken as the value
            # before it; a reset counts from zero (trainperf.dcgm.monotonic)
            glitch = glitch_expr(pl.col("value"), prev, pl.col("value").shift(-1))
            n_glitch = int(s.select(glitch.sum()).item())
            s = s.with_columns(pl.when(glitch).then(prev).otherwise(pl.col("value")).alias("value"))
            if n_glitch:
                log.add(
                    where,
                    "counter_glitch",
                    "flagged",
                    f"energy counter dropped to under half for {n_glitch} single sample(s) and was back at or above the old level at the next: a glitch, not a reset; nothing counted for it",
                    n_series=1,
                    n_gpus=1,
                    n_samples=n_glitch,
                )
            reset = reset_expr(pl.col("value"), prev).fill_null(False)
            s = s.with_columns(reset.cast(pl.UInt32).cum_sum().alias("_seg"))
            s = s.with_columns(pl.col("value").cum_max().over("_seg").alias("_top"))
            first = (pl.col("_seg") != pl.col("_seg").shift(1)).fill_null(False)
            inc = pl.when(first).then(pl.col("value")).otherwise(pl.col("_top").diff().over("_seg"))
            s = s.with_columns(
                inc.fill_null(0.0).alias("_inc"),
                (pl.col("value") < prev).fill_null(False).alias("_down"),
            )
            n_reset = int(s["_seg"].max() or 0)
            n_dip = int(s.filter(pl.col("_down"))["_down"].len()) - n_reset
            if n_reset:
                log.add(
                    where,
                    "counter_reset",
                    "flagged",
                    f"energy counter reset {n_reset} time(s) (step down to under half): counted from zero again; the energy between the samples around each reset is lost",
                    n_series=1,
                    n_gpus=1,
                    n_samples=n_reset,
                )
            if n_dip > 0:
                log.add(
                    where,
                    "counter_dip",
                    "corrected",
                    f"energy counter stepped down {n_dip} time(s) without a reset: counted from the highest value before (a dip adds nothing)",
                    n_series=1,
                    n_gpus=1,
                    n_samples=n_dip,
                )
            s = s.with_columns((pl.col("_inc").cum_sum() / 1000.0).alias("energy_j"))  # mJ -> J
            kind = "counter"
        else:
            dt = pl.col("t_s").diff().fill_null(0.0)
            seg = 0.5 * (pl.col("value") + pl.col("value").shift(1)).fill_null(0.0) * dt
            s = s.with_columns(seg.cum_sum().alias("energy_j"))
            kind = "power"
        steps = s["t_s"].diff().drop_nulls()
        med = steps.median()
        if med and steps.max() > _GAP_FACTOR * med:
            n_gap = int((steps > _GAP_FACTOR * med).sum())
            log.add(
                where,
                "gap",
                "flagged",
                f"{n_gap} sample gap(s), longest {steps.max():.1f} s (median {med:.1f} s): energy taken as linear across",
                n_series=1,
                n_gpus=1,
                n_samples=n_gap,
            )
        out.append(
            s.select(
                "hostname", "gpu", "timestamp", "t_s", "energy_j", pl.lit(kind).alias("source")
            )
        )
    if not out:
        return pl.DataFrame(schema=CUMULATIVE_ENERGY_SCHEMA)
    return pl.concat(out).sort("hostname", "gpu", "timestamp")


def _at(t: list[float], e: list[float], x: float) -> float:
    """``E(x)``, linear between samples; ``x`` inside ``[t[0], t[-1]]``."""
    lo, hi = 0, len(t) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if t[mid] <= x:
            lo = mid
        else:
            hi = mid
    if t[hi] == t[lo]:
        return e[hi]
    return e[lo] + (e[hi] - e[lo]) * (x - t[lo]) / (t[hi] - t[lo])


def _epoch_s(v) -> float:
    return v.timestamp() if isinstance(v, _dt.datetime) else float(v)


def trained_units(results, file: str | None = None) -> tuple[int | None, int | None]:
    """Tokens and samples one MLPerf run trained on, from its log.

    Tokens: ``tokens_to_converge`` of :func:`trainperf.mlperf.load_results` (the final evaluation's
    count), else the smoke benchmark's ``smoke_summary`` ``tokens``; samples: ``samples_to_converge``.

    Args:
        results: a :class:`trainperf.mlperf.Results`.
        file: which result file when it holds several (default: the first).

    Returns:
        (tokens or None, samples or None).
    """
    runs = results.runs if file is None else results.runs.filter(pl.col("result_file") == file)
    if runs.height == 0:
        return None, None
    row = runs.row(0, named=True)
    tokens, samples = row.get("tokens_to_converge"), row.get("samples_to_converge")
    if tokens is None:
        ev = results.events.filter(
            (pl.col("key") == "smoke_summary") & (pl.col("file") == row["result_file"])
        )
        if ev.height:
            try:
                tokens = int(json.loads(ev["value"][0])["tokens"])
            except (ValueError, TypeError, KeyError):
                tokens = None
    return tokens, samples


def gpu_energy(
    frame: pl.DataFrame,
    phases: pl.DataFrame,
    run_start,
    run_stop,
    *,
    tokens: int | None = None,
    samples: int | None = None,
    source: str = "telemetry",
) -> GpuEnergy:
    """GPU-board energy of one MLPerf run and of each of its phases, every GPU in ``frame``.

    Args:
        frame: a :mod:`trainperf.dcgm` reader frame holding field 156 (energy, mJ) and/or 155
            (power, W) for the run's GPUs (select the run's job first: :func:`trainperf.telemetry.select_job`).
        phases: :func:`trainperf.telemetry.phases_from_log` of the run (init, train, eval).
        run_start, run_stop: the timed region (datetime or epoch s), e.g. ``Results.runs``' columns.
        tokens, samples: what the run trained on (:func:`trained_units`), for J per token / sample.
        source: the telemetry's name in quality rows.

    Returns:
        :class:`GpuEnergy`. Energy in J (kWh = J / 3.6e6), power in W, per GPU in ``phases`` and
        summed over GPUs in ``summary`` (:data:`GPU_ENERGY_SUMMARY_SCHEMA`, scope ``GPU boards only``). A GPU whose samples do not cover a
        phase gives the covered part only (``covered_s`` < ``duration_s``; quality check ``coverage``).
    """
    log = QualityLog()
    cum = cumulative_energy(frame, log, source)
    a0, b0 = _epoch_s(run_start), _epoch_s(run_stop)
    windows = [("run", "run", a0, b0)] + [
        (p["phase"], p["kind"], _epoch_s(p["start"]), _epoch_s(p["end"]))
        for p in phases.iter_rows(named=True)
    ]
    rows = []
    short: dict[str, float] = {}
    for (host, gpu), g in cum.group_by(["hostname", "gpu"], maintain_order=True):
        t, e = g["t_s"].to_list(), g["energy_j"].to_list()
        for name, kind, a, b in windows:
            lo, hi = max(a, t[0]), min(b, t[-1])
            covered = max(0.0, hi - lo)
            energy = _at(t, e, hi) - _at(t, e, lo) if covered > 0 else 0.0
            if covered < (b - a) - 1e-6:
                short[name] = max(short.get(name, 0.0), (b - a) - covered)
            rows.append(
                {
                    "hostname": host,
                    "gpu": gpu,
                    "phase": name,
                    "kind": kind,
                    "start": _dt.datetime.fromtimestamp(a, _dt.UTC),
                    "end": _dt.datetime.fromtimestamp(b, _dt.UTC),
                    "duration_s": b - a,
                    "covered_s": covered,
                    "energy_j": energy,
                    "mean_power_w": energy / covered if covered > 0 else None,
                    "source": g["source"][0],
                }
            )
    if short:
        worst = max(short, key=short.get)
        log.add(
            source,
            "coverage",
            "flagged",
            f"{len(short)} phase(s) not covered by the samples, at most {short[worst]:.1f} s of {worst}: energy of the covered part only",
            n_samples=len(short),
        )
    ph = (
        pl.DataFrame(rows, schema=GPU_ENERGY_PHASE_SCHEMA)
        if rows
        else pl.DataFrame(schema=GPU_ENERGY_PHASE_SCHEMA)
    )
    summary = []
    n_gpus = ph.select("hostname", "gpu").unique().height
    for kind in ("run", "init", "train", "eval"):
        k = ph.filter(pl.col("kind") == kind)
        if k.height == 0:
            continue
        dur = float(k.group_by("phase").agg(pl.col("duration_s").first())["duration_s"].sum())
        energy = float(k["energy_j"].sum())
        srcs = sorted(set(k["source"].to_list()))
        per_unit = kind in ("run", "train")
        summary.append(
            {
                "kind": kind,
                "n_gpus": n_gpus,
                "duration_s": dur,
                "energy_j": energy,
                "energy_kwh": energy / _J_PER_KWH,
                "mean_power_w_per_gpu": energy / dur / n_gpus if dur > 0 and n_gpus else None,
                "tokens": tokens if per_unit else None,
                "samples": samples if per_unit else None,
                "j_per_token": energy / tokens if per_unit and tokens else None,
                "j_per_sample": energy / samples if per_unit and samples else None,
                "source": srcs[0] if len(srcs) == 1 else "mixed",
                "scope": "GPU boards only",
            }
        )
    return GpuEnergy(ph, pl.DataFrame(summary, schema=GPU_ENERGY_SUMMARY_SCHEMA), log.frame())
