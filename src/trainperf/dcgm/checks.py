"""The data checks every DCGM reader applies to what it read, and the :class:`~trainperf.dcgm.Reading`
they produce.

:func:`finish` takes a reader's series table and samples and, in this order:

1. drops DCGM *blank sentinels* (int64 fields ``>= 0x7ffffffffffffff0``, double fields ``>= 2**47``,
   fields of unknown type ``>= 0x7ffffffffffffff0`` or exactly ``2**47 + 0..3``;
   ``testing/python3/dcgmvalue.py`` in NVIDIA/DCGM), ``NaN`` and ``±Inf`` (check ``blank_value``,
   recorded without a warning: DCGM documents them as "no data");
2. excludes values outside the physical range of their unit (check ``out_of_range``; ranges are the
   package table ``dcgm_ranges.csv``: ratio 0–1, percent 0–100, power 0 .. the board limit of
   ``accelerator_power.csv`` x 1.2 for the exporter's ``modelName``);
3. keeps one sample per series and time (check ``duplicate_sample``: the same sample line twice,
   e.g. a scrape appended twice to an archive; the first in input order is kept; where the values
   differ the detail says how many);
4. keeps one sample per GPU, field and time where several series describe the same GPU (check
   ``duplicate_series``: two exporters scraping one GPU, several ``hpc_job``/pod labels on a shared
   GPU). Samples at the same time are merged into one (the first in input order; the job ids of a
   shared GPU are joined, sorted, with ``,``); series of one GPU and field that interleave in time
   without coinciding (two unsynchronised exporters) keep the series with the most samples;
5. excludes profiling samples frozen at a constant while the GPU is busy (check ``frozen``): every
   ``DCGM_FI_PROF_*`` field of the GPU unchanged for at least :data:`FROZEN_MIN_SAMPLES` consecutive
   samples while ``DCGM_FI_DEV_GPU_UTIL`` >= :data:`BUSY_UTIL_PCT` % (a field DCGM has not yet
   watched, or frozen after an nv-hostengine restart). Without ``GPU_UTIL`` nothing is flagged;
6. excludes every frozen field of a GPU whose board power stopped changing (check ``stale``: the
   exporter serving its last values after an nv-hostengine restart);
7. excludes one field frozen while the rest of its GPU is live (check ``stale_field``, per field):
   a run of bit-identical values of at least ``min_run`` samples while other fields of the GPU
   change or the GPU is busy; the rule of each field (``varies``, ``increases`` or ``may_hold``,
   with its reason) is the package table ``dcgm_staleness.csv``; values at a bound of their range
   (an idle pipe at 0, an engine saturated at 100 %) and ``may_hold`` fields (clocks, temperatures,
   frame buffer, error counters) are never flagged;
8. re-attributes jobs where the ``gpu`` label (DCGM index) and the ``device`` label (``nvidiaN``,
   the device minor) disagree (check ``label_mismatch``): dcgm-exporter reads the job of GPU *i*
   from the HPC job-mapping file named *i*, which Slurm prolog scripts write per Slurm GPU index,
   i.e. per device minor; so the job belongs to the GPU whose minor is *i*. Action ``corrected``
   where every GPU and field has one series, else ``flagged``;
9. flags a ``gpu`` label that is not a GPU index and keeps a series whose ``GPU_I_ID`` is not an
   instance id as a MIG instance (checks ``bad_gpu_label``, ``bad_instance_id``,
   :mod:`trainperf.dcgm.ids`);
10. flags a cumulative counter that steps down without resetting to near zero (check
   ``counter_dip``, :mod:`trainperf.dcgm.monotonic`).

Every check that fires adds one row to the quality frame (:data:`trainperf.quality.QUALITY_SCHEMA`)
and, except ``blank_value``, a :class:`~trainperf.dcgm.DcgmWarning` naming the file and the first line.

Each check lives in the module of its concern, this one runs them in order: value ranges and blanks
(:mod:`trainperf.dcgm.ranges`), sample times (:mod:`trainperf.dcgm.sampletimes`), repeated samples and
series (:mod:`trainperf.dcgm.duplicates`), frozen and stale values (:mod:`trainperf.dcgm.staleness`),
GPU labels and MIG rows (:mod:`trainperf.dcgm.gpulabels`, :mod:`trainperf.dcgm.ids`), counters and
clocks (:mod:`trainperf.dcgm.monotonic`). The public names of those modules listed in ``__all__``
stay importable from here.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import polars as pl

# each check lives in the module of its concern; the names below stay importable from here
from trainperf.dcgm.duplicates import _dedupe, _drop_repeated, _unify_hosts
from trainperf.dcgm.duplicates import _increasing_keys as _increasing_keys  # tests use it here
from trainperf.dcgm.fields import DcgmWarning
from trainperf.dcgm.gpulabels import _fix_gpu_device, _note_mig
from trainperf.dcgm.ids import check_entity_ids
from trainperf.dcgm.monotonic import note_clock_steps, note_counter_dips
from trainperf.dcgm.ranges import RANGES_SCHEMA as _RANGES_SCHEMA
from trainperf.dcgm.ranges import _drop_blank, _drop_out_of_range, range_table, value_bounds
from trainperf.dcgm.sampletimes import PLAUSIBLE_US, _check_times
from trainperf.dcgm.series import Reading
from trainperf.dcgm.staleness import (
    BUSY_GR_RATIO,
    BUSY_UTIL_PCT,
    FROZEN_MIN_SAMPLES,
    STALE_RULES,
    STALENESS_SCHEMA,
    _drop_frozen,
    _drop_stale,
    _drop_stale_fields,
    staleness_table,
)
from trainperf.quality import QualityLog

__all__ = [
    "BUSY_GR_RATIO", "BUSY_UTIL_PCT", "FROZEN_MIN_SAMPLES", "PLAUSIBLE_US", "STALE_RULES", "across_sources", "finish",
    "RANGES_SCHEMA", "range_table", "staleness_table", "STALENESS_SCHEMA", "value_bounds",
]  # fmt: skip

RANGES_SCHEMA: dict[str, pl.DataType] = _RANGES_SCHEMA  # the same dict as ranges.RANGES_SCHEMA
"""Columns of :func:`range_table`."""


def finish(
    series: pl.DataFrame,
    samples: pl.DataFrame,
    source: str,
    log: QualityLog | None = None,
    *,
    frozen_min_samples: int = FROZEN_MIN_SAMPLES,
    checks: bool = True,
) -> Reading:
    """Apply the checks (module docstring) and return the :class:`Reading`.

    Args:
        series: ``sid`` (UInt32, equal to the row number) + the columns of
            :data:`trainperf.dcgm.series.SERIES_SCHEMA`.
        samples: :data:`trainperf.dcgm.series.SAMPLE_SCHEMA` rows, in input order.
        source: file name for messages.
        log: quality log to add to (a new one if None); its rows are the reading's quality frame.
        frozen_min_samples: see :data:`FROZEN_MIN_SAMPLES`.
        checks: False: only drop blank sentinels / NaN / Inf (for results that are not samples,
            e.g. PromQL aggregates such as ``count_over_time`` pushed down to Prometheus).

    Returns:
        the reading, samples in input order.
    """
    log = log if log is not None else QualityLog(category=DcgmWarning)
    if samples.height:
        samples = _drop_blank(series, samples, source, log)
    late, stale, start = None, None, (series, samples)
    if samples.height >= OVERLAP_SAMPLES and checks:
        # the staleness checks (steps 5-7) and the counter and clock checks (the last two; they
        # change nothing) start now in threads (polars, the GIL released) on the series and
        # samples as they are, guessing that the checks between (times, ranges, repeats) change
        # neither, and the staleness checks drop nothing for the last two (the common case: checked
        # by identity below, else they run again in turn); their rows and warnings are replayed
        # in the order of the steps in turn (issue 41: 0.007 s, 0.007 s and 0.003 s of one core on
        # the 100 MB archive, beside the 0.007 s of the checks between)
        staled, counter, clock = _Replay(), _Replay(), _Replay()
        args = (series, samples, source, staled, frozen_min_samples)
        stale = (_POOL.submit(_staleness, *args), staled)
        late = [
            (_POOL.submit(note_counter_dips, series, samples, source, counter), counter),
            (_POOL.submit(note_clock_steps, samples, source, clock), clock),
        ]
    if samples.height and checks:
        samples = _check_times(series, samples, source, log)
    if samples.height and checks:
        samples = _drop_out_of_range(series, samples, source, log)
    if samples.height and checks:
        samples = _drop_repeated(series, samples, source, log)
    if samples.height and checks:
        series = _unify_hosts(series, samples, source, log)
        series, samples = _dedupe(series, samples, source, log)
    if stale is not None and series is start[0] and samples is start[1]:
        samples = stale[0].result()  # the guess held: the staleness checks' own result
        stale[1].replay(log)
    elif samples.height and checks:
        samples = _staleness(series, samples, source, log, frozen_min_samples)
    if series is not start[0] or samples is not start[1]:
        late = None  # a check changed them: the last two run again below, in turn
    if samples.height and checks:
        series = _fix_gpu_device(series, samples, source, log)
    if samples.height and checks:
        series = check_entity_ids(series, samples, source, log)
    if samples.height and checks:
        _note_mig(series, samples, source, log)
    if samples.height and checks and late is None:
        note_counter_dips(series, samples, source, log)
        note_clock_steps(samples, source, log)
    for done, rows in late or ():
        done.result()
        rows.replay(log)
    series = series.drop("_is_int", "_is_double")
    return Reading(series, samples.select("sid", "timestamp", "value", "line"), log.frame(), source)


#: Samples from which :func:`finish` runs the staleness, counter and clock checks in threads beside
#: the others.
OVERLAP_SAMPLES = 50_000
_POOL = ThreadPoolExecutor(max_workers=3, thread_name_prefix="trainperf-dcgm-checks")


def _staleness(series: pl.DataFrame, samples: pl.DataFrame, source: str, log: QualityLog,
               frozen_min_samples: int) -> pl.DataFrame:  # fmt: skip
    """Steps 5-7 of :func:`finish` in turn (``frozen``, ``stale``, ``stale_field``)."""
    if samples.height:
        samples = _drop_frozen(series, samples, source, log, frozen_min_samples)
    if samples.height:
        samples = _drop_stale(series, samples, source, log, frozen_min_samples)
    if samples.height:
        samples = _drop_stale_fields(series, samples, source, log)
    return samples


class _Replay:
    """Stands in for a :class:`~trainperf.quality.QualityLog` in a thread: keeps each ``add`` and
    replays them on the real log later (rows and warnings in the order of the steps in turn)."""

    def __init__(self) -> None:
        self.calls: list[tuple[tuple, dict]] = []

    def add(self, *args, **kwargs) -> None:
        self.calls.append((args, kwargs))

    def replay(self, log: QualityLog) -> None:
        for args, kwargs in self.calls:
            log.add(*args, **kwargs)


def across_sources(reading: Reading, log: QualityLog, sources: list[str] | None = None) -> Reading:
    """The identity checks of :func:`finish` over several files read one by one
    (:func:`trainperf.dcgm.load`): one host name per GPU UUID (``host_alias``) and one sample per GPU,
    field and time (``duplicate_series``: two exporters writing two files). Rows go to ``log``,
    naming the file (``sources``: the file of each series id) and line of the first sample
    concerned.
    """
    if reading.samples.height == 0 or reading.series.height == 0:
        return reading
    where = reading.source
    series = _unify_hosts(reading.series, reading.samples, where, log, sources)
    series, samples = _dedupe(series, reading.samples, where, log, sources)
    return Reading(series, samples, reading.quality, reading.source)
