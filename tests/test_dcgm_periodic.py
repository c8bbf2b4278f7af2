"""The checks' path for an archive of scrapes of one layout (issue 41) gives what the sorted path gives.

Where every scrape lists its series in one order, a series' previous sample is ``p`` rows back
(``_checkutil._period``) and the checks skip their sort by series:

* ``_period`` finds ``p`` only where that holds (the first ``p`` sids distinct, every later sid equal
  to the one ``p`` rows before; a last scrape cut short is allowed);
* ``staleness._has_long_run`` finds a run of ``min_run`` equal values off the bounds exactly where a
  plain Python walk over each series finds one (the expected values are that walk, not the code);
* ``monotonic.note_clock_steps`` / ``note_counter_dips`` give the same quality rows on the archive as
  on the same samples in shuffled row order (where ``line`` is out of order: the sorting path), and
  the rows name the planted damage (counted by hand below);
* the reader end to end: an archive written with one series order in every scrape (the path without
  a sort) and the same archive with the order shuffled per scrape (the sorting path) give the same
  checks and samples, and the rows' lines are the hand-counted ones.
"""

from __future__ import annotations

import random

import polars as pl
import pytest

from trainperf import dcgm
from trainperf.dcgm import monotonic, staleness
from trainperf.dcgm._checkutil import _period
from trainperf.dcgm.fields import DcgmWarning
from trainperf.quality import QualityLog

SCHEMA = {"sid": pl.UInt32, "timestamp": pl.Int64, "value": pl.Float64, "line": pl.Int64}


def _frame(sids, ts, values) -> pl.DataFrame:
    return pl.DataFrame(
        {"sid": sids, "timestamp": ts, "value": values, "line": range(1, len(sids) + 1)},
        schema=SCHEMA,
    )


@pytest.mark.parametrize(
    ("sids", "p"),
    [
        ([3, 1, 2, 3, 1, 2, 3, 1, 2], 3),
        ([3, 1, 2, 3, 1, 2, 3], 3),  # the last scrape cut short
        ([5, 5, 5], 1),
        ([3, 1, 2, 3, 2, 1], None),  # the order changes in the second scrape
        ([3, 1, 3, 1, 2], None),  # a series appears in a later scrape only
        ([3, 1, 2], None),  # one scrape: no repeat
        ([3, 1, 1, 3, 1, 1], None),  # a series twice in a scrape
    ],
)
def test_period(sids, p):
    assert _period(pl.Series(sids, dtype=pl.UInt32)) == p


def _python_long_run(df: pl.DataFrame, chk, min_run, lo, hi) -> bool:
    """Runs of equal values per series in input order (time order here), walked in Python."""
    by: dict[int, list[float]] = {}
    for sid, _, v, _ in df.rows():
        if sid in chk:
            by.setdefault(sid, []).append(v)
    for sid, vs in by.items():
        i = 0
        while i < len(vs):
            j = i
            while j + 1 < len(vs) and vs[j + 1] == vs[i]:
                j += 1
            at_bound = vs[i] == lo[sid] or vs[i] == hi[sid]
            if j - i + 1 >= min_run[sid] and not at_bound:
                return True
            i = j + 1
    return False


@pytest.mark.parametrize("seed", range(40))
def test_has_long_run_without_sort_equals_python_walk(seed):
    rng = random.Random(seed)
    n_series, n_scrapes = rng.randint(1, 6), rng.randint(2, 30)
    order = rng.sample(range(8), n_series)  # sids in scrape order (not sorted)
    min_run = [rng.choice([2, 3, 5, 10]) for _ in range(8)]
    lo, hi = [0.0] * 8, [100.0] * 8
    values = {s: [] for s in order}
    for s in order:  # runs of random length, some at a bound (0 or 100: never stale)
        while len(values[s]) < n_scrapes:
            v = rng.choice([0.0, 100.0, rng.uniform(1, 99)])
            values[s] += [v] * rng.randint(1, 12)
    sids, ts, vals = [], [], []
    cut = rng.randint(0, n_series)  # the last scrape may be cut short
    for k in range(n_scrapes):
        for i, s in enumerate(order):
            if k == n_scrapes - 1 and i >= max(cut, 1):
                break
            sids.append(s)
            ts.append(1_000_000 * k)
            vals.append(values[s][k])
    df = _frame(sids, ts, vals)
    chk = sorted(set(order) - {order[0]}) if n_series > 1 and seed % 3 == 0 else order
    at_bound = (pl.col("value") == staleness._per_sid(lo, pl.Float64)) | (
        pl.col("value") == staleness._per_sid(hi, pl.Float64)
    )
    expected = _python_long_run(df, set(chk), min_run, lo, hi)
    n_min = min(min_run[i] for i in chk)
    assert staleness._has_long_run(df, chk, min_run, n_min, at_bound) is expected
    # the same rows shuffled: the sorting path (series by time) must agree
    shuffled = df.sample(fraction=1.0, shuffle=True, seed=seed)
    assert staleness._has_long_run(shuffled, chk, min_run, n_min, at_bound) is expected


def _archive_with_damage() -> tuple[pl.DataFrame, pl.DataFrame]:
    """4 series (sid 0 energy counter, 1 power, 2 energy counter, 3 util) in one scrape order
    (2, 0, 3, 1), 40 scrapes 15 s apart. Planted: the clock steps back 30 s at scrape 10 (every series:
    4 samples) and forward 2 h at scrape 30 (4 samples); counter sid 0 dips from 10_000 to 9_990 at
    scrape 20 (one dip), counter sid 2 glitches to 0 at scrape 25 and is back at scrape 26."""
    order = [2, 0, 3, 1]
    sids, ts, vals = [], [], []
    t = 1_767_225_600_000_000
    for k in range(40):
        t += -30_000_000 if k == 10 else 7_200_000_000 if k == 30 else 15_000_000
        for s in order:
            if s in (0, 2):
                v = 1000.0 * (k + 1)
                if s == 0 and k == 20:
                    v = 1000.0 * k - 10  # 20_000 then 19_990: a dip (not under half)
                if s == 2 and k == 25:
                    v = 0.0  # a glitch: the next sample is back above 25_000
            else:
                v = 50.0 + (k % 7)
            sids.append(s)
            ts.append(t)
            vals.append(v)
    series = pl.DataFrame(
        {
            "sid": [0, 1, 2, 3],
            "field_id": [156, 155, 156, 203],
            "field": [
                "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                "DCGM_FI_DEV_POWER_USAGE",
                "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                "DCGM_FI_DEV_GPU_UTIL",
            ],
        },
        schema={"sid": pl.UInt32, "field_id": pl.Int64, "field": pl.String},
    )
    return series, _frame(sids, ts, vals)


def _rows(fn, *args) -> list[tuple]:
    log = QualityLog(category=DcgmWarning)
    with pytest.warns(DcgmWarning):
        fn(*args, "a.prom", log)
    return log.frame().select("check", "n_series", "n_samples", "first_line").rows()


def test_clock_steps_and_counter_dips_same_on_archive_and_shuffled():
    series, s = _archive_with_damage()
    assert _period(s["sid"]) == 4  # the archive takes the path without a sort
    shuffled = s.sample(fraction=1.0, shuffle=True, seed=1)
    assert _period(shuffled["sid"]) is None or shuffled["line"].is_sorted() is False

    got = _rows(monotonic.note_clock_steps, s)
    assert got == _rows(monotonic.note_clock_steps, shuffled)
    # back: scrape 10 (lines 41..44), 4 series; forward: scrape 30 (lines 121..124)
    assert got == [("clock_step", 4, 4, 41), ("clock_step", 4, 4, 121)]

    got = _rows(monotonic.note_counter_dips, series, s)
    assert got == _rows(monotonic.note_counter_dips, series, shuffled)
    # sid 2 is first in each scrape: scrape 25 -> line 101; sid 0 second: scrape 20 -> line 82
    assert got == [("counter_glitch", 1, 1, 101), ("counter_dip", 1, 1, 82)]


def _write_archive(path, shuffle_seed: int | None = None) -> None:
    """20 scrapes, 15 s apart, of 2 GPUs x (power, util, energy): 6 series, one line each after
    the ``# TIMESTAMP`` marker, so scrape k's marker is line 7k + 1 and its samples lines 7k + 2 ..
    7k + 7 (util g0, util g1, power g0, power g1, energy g0, energy g1). Planted: energy of GPU 1
    steps down by 10 mJ at scrape 10 (line 77); the marker of scrape 15 is 5 s before scrape 14's
    time (every series goes back: lines 107..112). ``shuffle_seed``: the series in another order
    in every scrape (no period: the checks sort)."""
    rng = random.Random(shuffle_seed)
    out = []
    for k in range(20):
        t = 1_767_225_600 + 15 * k if k != 15 else 1_767_225_600 + 15 * 14 - 5
        out.append(f"# TIMESTAMP {t}")
        rows = []
        for g in (0, 1):
            energy = 1_000_000 + 1000 * k - (1010 if (g, k) == (1, 10) else 0)
            for name, val in (
                ("DCGM_FI_DEV_POWER_USAGE", f"{300 + 1.37 * k + g:.2f}"),
                ("DCGM_FI_DEV_GPU_UTIL", str(60 + (k + g) % 9)),
                ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", str(energy)),
            ):
                rows.append((name, g, f'{name}{{gpu="{g}",UUID="GPU-{g}",Hostname="n1"}} {val}'))
        rows = [r for _, _, r in sorted(rows)]  # util, power, energy (by name), GPU 0 first
        if shuffle_seed is not None:
            rng.shuffle(rows)
        out += rows
    path.write_text("\n".join(out) + "\n")


def test_reader_end_to_end_same_checks_with_and_without_a_period(tmp_path):
    periodic, shuffled = tmp_path / "a.prom", tmp_path / "b.prom"
    _write_archive(periodic)
    _write_archive(shuffled, shuffle_seed=3)
    with pytest.warns(DcgmWarning):
        a = dcgm.read_exposition_reading(periodic)
    with pytest.warns(DcgmWarning):
        b = dcgm.read_exposition_reading(shuffled)
    assert _period(a.samples["sid"]) == 6 and _period(b.samples["sid"]) is None
    rows = a.quality.select("check", "n_series", "n_samples", "first_line").rows()
    # hand-counted above: one dip (energy GPU 1, line 77), 6 samples back in time (lines 107..112)
    assert sorted(rows) == [("clock_step", 6, 6, 107), ("counter_dip", 1, 1, 77)]
    counts = sorted(b.quality.select("check", "n_series", "n_samples").rows())
    assert counts == [("clock_step", 6, 6), ("counter_dip", 1, 1)]
    assert a.samples.height == b.samples.height == 120
    # the same samples, whatever the order the series were written in
    key = ["timestamp", "field", "gpu"]
    assert a.frame().sort(key).drop("labels").equals(b.frame().sort(key).drop("labels"))
