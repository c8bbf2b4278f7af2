"""``Reading.frame()``: the long frame is each sample with its series' columns (issue 41: a gather of
the series rows where ``sid`` is the row number, a join otherwise), by hand."""

from __future__ import annotations

import datetime as dt

import polars as pl

from trainperf.dcgm import SCHEMA
from trainperf.dcgm.series import SERIES_SCHEMA, Reading, empty_quality

SERIES = {"hostname": ["a", "b"], "gpu": [0, 1], "uuid": ["GPU-a", "GPU-b"], "entity": ["GPU", "GPU"],
          "entity_id": [0, 1], "field_id": [155, 203], "field": ["DCGM_FI_DEV_POWER_USAGE",
          "DCGM_FI_DEV_GPU_UTIL"], "job_id": [None, "7"], "labels": ["x=1", "y=2"]}  # fmt: skip


def _reading(sids: list[int]) -> Reading:
    cols = {k: v for k, v in SERIES_SCHEMA.items() if not k.startswith("_")}
    series = pl.DataFrame({"sid": sids, **SERIES}, schema={"sid": pl.UInt32, **cols})
    # samples of series 2nd, 1st, 2nd (in input order), at 0, 1 and 2 s after the epoch
    samples = pl.DataFrame(
        {"sid": [sids[1], sids[0], sids[1]], "timestamp": [0, 1_000_000, 2_000_000],
         "value": [50.0, 300.5, 60.0], "line": [1, 2, 3]},
        schema={"sid": pl.UInt32, "timestamp": pl.Int64, "value": pl.Float64, "line": pl.Int64},
    )  # fmt: skip
    return Reading(series, samples, empty_quality(), "hand")


def test_each_sample_gets_its_series_columns():
    utc = dt.UTC
    want = [
        (dt.datetime(1970, 1, 1, tzinfo=utc), "b", 1, "GPU-b", "GPU", 1, 203,
         "DCGM_FI_DEV_GPU_UTIL", 50.0, "7", "y=2"),
        (dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=utc), "a", 0, "GPU-a", "GPU", 0, 155,
         "DCGM_FI_DEV_POWER_USAGE", 300.5, None, "x=1"),
        (dt.datetime(1970, 1, 1, 0, 0, 2, tzinfo=utc), "b", 1, "GPU-b", "GPU", 1, 203,
         "DCGM_FI_DEV_GPU_UTIL", 60.0, "7", "y=2"),
    ]  # fmt: skip
    for sids in ([0, 1], [7, 3]):  # sid the row number (gather), and not (join)
        got = _reading(sids).frame()
        assert got.schema == pl.Schema(SCHEMA)
        assert got.rows() == want
