"""The exposition reader's fast paths (issue 29) give what the paths they short-cut give.

* ``normalise_series(..., cache=)`` / ``split_series_key(..., cache=)``: the label part worked out
  once per label set must equal the uncached result for every key, and a cached dict must never be
  changed by a later key (``__name__`` is popped from a copy);
* ``checks._increasing_keys``: the native pass that skips the (sid, timestamp) hashing may only say
  "no duplicates" where there are none; a duplicate anywhere still gives ``duplicate_sample``.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from trainperf.dcgm import checks, exposition
from trainperf.dcgm.exposition import _sid_of_kid
from trainperf.dcgm.fields import DcgmFormatError
from trainperf.dcgm.series import normalise_series, series_frame
from trainperf.dcgm.text import split_series_key
from trainperf.quality import QualityLog

ROOT = Path(__file__).resolve().parents[1]

KEYS = [
    'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",Hostname="n1",hpc_job="7"}',
    'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-1",Hostname="n1",hpc_job="7"}',
    'DCGM_FI_DEV_NVSWITCH_TEMPERATURE{gpu="0",UUID="GPU-1",Hostname="n1",hpc_job="7"}',
    'DCGM_FI_PROF_NVLINK_TX_BYTES{gpu="0",UUID="GPU-1",Hostname="n1",hpc_job="7",link="3"}',
    '{__name__="DCGM_FI_DEV_SM_CLOCK",gpu="1",instance="n2:9400"}',
    '{__name__="DCGM_FI_DEV_MEM_CLOCK",gpu="1",instance="n2:9400"}',
    'DCGM_FI_DEV_FB_USED{gpu="1",exported_gpu="2",Hostname="a",exported_Hostname="b"}',
    'DCGM_FI_DEV_FB_FREE{gpu="1",exported_gpu="2",Hostname="a",exported_Hostname="b"}',
    'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="3",GPU_I_ID="1",Hostname="n3"}',
    'custom_metric_total{gpu="3",GPU_I_ID="1",Hostname="n3"}',
    'DCGM_FI_DEV_GPU_TEMP{gpu="x",Hostname="n3",hostname="n3b"}',
    "DCGM_FI_DEV_GPU_TEMP",
    'DCGM_FI_DEV_GPU_TEMP{gpu="0",broken}',
    'DCGM_FI_DEV_GPU_TEMP{gpu="0",broken}',
]


def test_cached_split_and_normalise_equal_uncached():
    label_cache: dict = {}
    norm_cache: dict = {}
    for key in KEYS * 2:  # the second round is served from the caches
        plain = split_series_key(key)
        cached = split_series_key(key, label_cache)
        assert cached == plain, key
        if plain is None:
            continue
        assert normalise_series(*cached, cache=norm_cache) == normalise_series(*plain), key
    # the label text with __name__ is cached with __name__ still in it (popped from a copy)
    assert any("__name__" in (v or {}) for v in label_cache.values())


def _samples(sids: list[int], ts: list[int | None]) -> pl.DataFrame:
    return pl.DataFrame(
        {"sid": sids, "timestamp": ts, "value": [1.0] * len(sids), "line": range(1, len(sids) + 1)},
        schema={"sid": pl.UInt32, "timestamp": pl.Int64, "value": pl.Float64, "line": pl.Int64},
    )


@pytest.mark.parametrize(
    ("sids", "ts", "increasing"),
    [
        ([0, 1, 2, 0, 1, 2], [10, 10, 10, 20, 20, 20], True),  # scrapes in time order
        ([0, 1, 0, 1], [10, 10, 10, 20], False),  # sid 0 at 10 twice
        ([0, 1, 2, 1], [10, 10, 20, 10], False),  # back in time: not increasing (no duplicate)
        ([0, 1], [None, 10], False),  # a null time: the exact path
        ([0, 1], [-(2**62), 2**62], False),  # the packed key would not fit an Int64
        ([0], [10], False),  # nothing to compare
    ],
)
def test_increasing_keys(sids, ts, increasing):
    s = _samples(sids, ts)
    assert checks._increasing_keys(s) is increasing
    if increasing:  # its claim, checked by hashing: no (sid, timestamp) twice
        assert s.select(pl.struct("sid", "timestamp").is_unique().all()).item()


def test_duplicate_still_found_behind_the_fast_path():
    # in time order except the last scrape repeats the first sample: 1 duplicate_sample
    s = _samples([0, 1, 0, 1, 0], [10, 10, 20, 20, 20])
    log = QualityLog(category=checks.DcgmWarning)
    with pytest.warns(checks.DcgmWarning, match="duplicate_sample|repeat"):
        rows = [normalise_series("DCGM_FI_DEV_GPU_UTIL", {"gpu": g}) for g in ("0", "1")]
        series = series_frame(rows).with_row_index("sid")
        kept = checks._drop_repeated(series, s, "f.prom", log)
    assert kept["line"].to_list() == [1, 2, 3, 4]
    assert [r["check"] for r in log.rows] == ["duplicate_sample"]


@pytest.mark.parametrize(
    ("kids", "kid_sid"),
    [
        ([7, 5, 6, 5, 7], {5: 0, 6: 1, 7: 0}),  # one range of codes: the table lookup
        ([9, 5, 9], {5: 1, 9: 0}),  # a gap: replace_strict
        ([5, 8], {5: 0, 6: 1}),  # a code outside the table: null, as replace_strict gives
        ([], {5: 0}),
    ],
)
def test_sid_of_kid_as_replace_strict(kids, kid_sid):
    df = pl.DataFrame({"kid": kids}, schema={"kid": pl.UInt32})
    got = df.select(_sid_of_kid(df["kid"], kid_sid).alias("sid"))["sid"]
    want = df.select(
        pl.col("kid").replace_strict(
            list(kid_sid), list(kid_sid.values()), default=None, return_dtype=pl.UInt32
        )
    )["kid"]
    assert got.dtype == pl.UInt32 and got.to_list() == want.to_list()


_DAMAGED = (
    "# TIMESTAMP 1767225600\n"
    'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",Hostname="n1"} 50\n'
    'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-1",Hostname="n1"} 300.5\n'
    '  DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-1",Hostname="n1"} 40\n'  # leading junk
    'DCGM_FI_DEV_SM_CLOCK{gpu="0",broken} 1400\n'  # malformed labels
    "1767225615\n"
    'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",Hostname="n1"} 60\n'
    'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-1",Hostname="n1"} x\n'  # a value that does not read
    'DCGM_FI_DEV_MEM_CLOCK{gpu="0",UUID="GPU-1",Hostname="n1",note="a}b"} 1593\n'  # } in a label
    'DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-1",Hostname="n1"} 7 1767225616000\n'
)


# a counter sample out of range (dropped), which read as kept would be a one-sample glitch of the
# counter: the counter check must see the samples after the drop
_COUNTER_DROPPED = "".join(
    f"{1767225600 + 15 * i}\n"
    f'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu="0",UUID="GPU-1",Hostname="n1"}} {v}\n'
    for i, v in enumerate([100000, 200000, -5, 300000])
)


@pytest.mark.parametrize(
    "source",
    [
        *sorted((ROOT / "tests" / "data" / "dcgm").glob("*.prom")),
        "damaged",
        "damaged_keys",
        "counter_dropped",
    ],  # fmt: skip
    ids=lambda p: getattr(p, "name", p),
)
def test_values_split_beside_the_keys_read_as_in_turn(source, tmp_path, monkeypatch):
    """Issue 41: on a large file the values are split in a thread while the keys become series,
    guessing that every value reads, and the staleness, counter and clock checks run in threads
    beside the others (their rows replayed in turn). Forced on every fixture, on damaged lines
    (leading junk, malformed labels, a value that does not read, ``}`` in a label, a per-sample
    time) and on a counter sample that a check drops (neither the staleness nor the counter check
    may see it), the reading (series, samples, quality rows) is the one of the steps in turn."""
    if source in ("damaged", "damaged_keys"):
        text = _DAMAGED  # damaged_keys: every value reads (the guess holds), the keys are damaged
        if source == "damaged_keys":
            text = "".join(ln for ln in text.splitlines(keepends=True) if not ln.endswith("} x\n"))
        source = tmp_path / f"{source}.prom"
        source.write_text(text)
    elif source == "counter_dropped":
        source = tmp_path / "counter_dropped.prom"
        source.write_text(_COUNTER_DROPPED)

    def read(overlap: int):
        monkeypatch.setattr(exposition, "OVERLAP_LINES", overlap)
        monkeypatch.setattr(checks, "OVERLAP_SAMPLES", overlap)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                return exposition.read_exposition_reading(source, timestamp=1767225600)
            except DcgmFormatError as exc:  # too much damage: the same error either way
                return str(exc)

    want, got = read(10**12), read(0)
    if isinstance(want, str):
        assert got == want
        return
    for a, b in ((want.series, got.series), (want.samples, got.samples),
                 (want.quality, got.quality)):  # fmt: skip
        assert_frame_equal(a, b)
    assert want.samples.height > 0
