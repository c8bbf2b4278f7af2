"""Tests for trainperf.slurm: sacct --parsable2 / --json readers and job statistics.

Every expected value is computed by hand in the test (arithmetic written out), never by the code
under test. Fixtures: tests/data/slurm/synthetic (hand-written, one trap each, see its README) and
tests/data/slurm/real (output of a real Slurm 22.05.8 made by scripts/slurm_fixtures.sh).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import warnings
from datetime import datetime, timezone
from pathlib import Path

import hostlist
import polars as pl
import pytest
import slurm_reference
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from trainperf import jobs, slurm
from trainperf import jobs as jobstats
from trainperf.errors import InputError
from trainperf.quality import QUALITY_SCHEMA
from trainperf.slurm import SacctParseError, SacctWarning, checks
from trainperf.slurm import columns as C
from trainperf.slurm.columns import WHITESPACE, _list_series

sys.path.insert(0, str(Path(__file__).parent / "fuzz"))
import sacct_mutations as M  # noqa: E402  tests/fuzz: the fuzz scripts' mutations

# readers warn about every sacct field missing from an input; the small inline inputs here omit many
# on purpose. Tests that check a warning use pytest.warns, which sees it regardless of this filter.
pytestmark = pytest.mark.filterwarnings("ignore::trainperf.slurm.SacctWarning")

DATA = Path(__file__).parent / "data" / "slurm"
SYN = DATA / "synthetic"
REAL = DATA / "real"
UTC = timezone.utc  # noqa: UP017 (py3.10)


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def row(df: pl.DataFrame, job_id: str) -> dict:
    rows = df.filter(pl.col("JobID") == job_id).to_dicts()
    assert len(rows) == 1, f"{job_id}: {len(rows)} rows"
    return rows[0]


# ------------------------------------------------------------------------------------------------
# scalar parsers
# ------------------------------------------------------------------------------------------------


def test_elapsed_with_days():
    # 2-03:04:05 = 2*86400 + 3*3600 + 4*60 + 5 = 172800 + 10800 + 240 + 5 = 183845 s
    assert slurm.parse_duration("2-03:04:05") == 183845


def test_cpu_time_minutes_seconds_millis():
    # 17:18.067 = 17*60 + 18.067 = 1020 + 18.067 = 1038.067 s
    assert slurm.parse_duration("17:18.067") == pytest.approx(1038.067, abs=1e-9)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("00:00.081", 0.081),  # MM:SS.mmm
        ("02:55:00", 2 * 3600 + 55 * 60),  # 10500
        ("00:05:07", 5 * 60 + 7),  # 307, the 00:MM:SS form
        ("1-02:03:04", 86400 + 2 * 3600 + 3 * 60 + 4),  # 93784
        ("03:43:27", 3 * 3600 + 43 * 60 + 27),  # 13407
        ("", None),
    ],
)
def test_duration_grammars(text, seconds):
    got = slurm.parse_duration(text)
    assert got == (pytest.approx(seconds) if seconds is not None else None)


@pytest.mark.parametrize("bad", ["UNLIMITED", "one hour", "1:2:3:4", "12:75", "-1"])
def test_duration_rejects_garbage(bad):
    with pytest.raises(ValueError):
        slurm.parse_duration(bad)


def test_timelimit_words():
    assert slurm.parse_timelimit("UNLIMITED") == (None, "UNLIMITED")
    assert slurm.parse_timelimit("Partition_Limit") == (None, "Partition_Limit")
    assert slurm.parse_timelimit("INVALID") == (None, "INVALID")
    assert slurm.parse_timelimit("3-00:00:00") == (3 * 86400, None)  # 259200
    assert slurm.parse_timelimit("") == (None, None)


def test_state_cancelled_by_uid():
    assert slurm.parse_state("CANCELLED by 0") == ("CANCELLED", 0, False)
    assert slurm.parse_state("CANCELLED by 223988") == ("CANCELLED", 223988, False)
    assert slurm.parse_state("CANCELLED+") == ("CANCELLED", None, True)
    assert slurm.parse_state("OUT_OF_MEMORY") == ("OUT_OF_MEMORY", None, False)
    with pytest.raises(ValueError):
        slurm.parse_state("cancelled by someone")


def test_exit_code():
    assert slurm.parse_exit_code("0:15") == (0, 15)
    assert slurm.parse_exit_code("2:0") == (2, 0)
    with pytest.raises(ValueError):
        slurm.parse_exit_code("2")


def test_gpu_double_counting_untyped_and_typed_are_the_same_gpus():
    # gres/gpu=8 and gres/gpu:h100=8 describe the same 8 GPUs: 8, not 16
    assert slurm.gpus_from_tres("billing=8,cpu=8,gres/gpu=8,gres/gpu:h100=8,mem=400G,node=1") == (
        8,
        "h100",
    )
    # order of keys does not matter (jobstats fixture has gres/gpu after node)
    assert slurm.gpus_from_tres("billing=1,cpu=1,mem=350M,node=1,gres/gpu=1") == (1, None)
    # typed only, two types: 4 + 4 = 8
    assert slurm.gpus_from_tres("cpu=8,gres/gpu:a100=4,gres/gpu:h100=4,node=1") == (8, "a100,h100")
    # no GPU key: 0 GPUs; empty allocation (never started): 0 GPUs; field absent: unknown
    assert slurm.gpus_from_tres("billing=40,cpu=40,mem=10G,node=1") == (0, None)
    assert slurm.gpus_from_tres("") == (0, None)
    assert slurm.gpus_from_tres(None) == (None, None)


def test_hostlist_expansion():
    assert slurm.expand_nodelist("gpu[001-004,007]") == [
        "gpu001",
        "gpu002",
        "gpu003",
        "gpu004",
        "gpu007",
    ]
    assert slurm.expand_nodelist("a[1-2],b3") == ["a1", "a2", "b3"]
    assert slurm.expand_nodelist("localhost") == ["localhost"]
    assert slurm.expand_nodelist("None assigned") == []
    with pytest.raises(ValueError):
        slurm.expand_nodelist("gpu[003-001")


@pytest.mark.parametrize(
    ("jobid", "kind", "task", "het", "step", "parent"),
    [
        ("123", "job", None, None, None, "123"),
        ("39889258_1426.batch", "step", 1426, None, "batch", "39889258_1426"),
        ("39889258_1426", "array_task", 1426, None, None, "39889258_1426"),
        ("123_[5-10]", "array_pending", None, None, None, "123_[5-10]"),
        ("1853+1", "het_component", None, 1, None, "1853+1"),
        ("1853+0.0", "step", None, 0, "0", "1853+0"),
        ("7.extern", "step", None, None, "extern", "7"),
    ],
)
def test_job_id_forms(jobid, kind, task, het, step, parent):
    d = slurm.parse_job_id(jobid)
    assert (d["kind"], d["array_task_id"], d["het_offset"], d["step"], d["parent"]) == (
        kind,
        task,
        het,
        step,
        parent,
    )


# ------------------------------------------------------------------------------------------------
# --parsable2, synthetic traps
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def traps() -> slurm.SacctData:
    return slurm.read_sacct_parsable(SYN / "parsable2_traps.txt")


def test_traps_split_jobs_and_steps(traps):
    assert traps.jobs.get_column("JobID").to_list() == [
        "100",
        "101",
        "102",
        "103",
        "104_3",
        "104_[5-10]",
        "105+0",
        "105+1",
        "107",
        "108",
    ]
    assert traps.steps.get_column("JobID").to_list() == [
        "100.batch",
        "100.extern",
        "100.0",
        "104_3.batch",
        "105+0.0",
    ]
    assert traps.steps.get_column("step_kind").to_list() == [
        "batch",
        "extern",
        "srun",
        "batch",
        "srun",
    ]
    assert traps.jobs.schema["start"] == pl.Datetime("us", "UTC")
    assert traps.jobs.schema["elapsed_s"] == pl.Int64
    assert traps.jobs.schema["nodes"] == pl.List(pl.Utf8)


def test_traps_big_job(traps):
    r = row(traps.jobs, "100")
    assert r["elapsed_s"] == 183845  # 2-03:04:05, see test_elapsed_with_days
    assert r["total_cpu_s"] == pytest.approx(1038.067)  # 17:18.067
    assert r["timelimit_s"] == 259200 and r["timelimit_flag"] is None  # 3 days * 86400
    assert r["nodes"] == ["gpu001", "gpu002", "gpu003", "gpu004", "gpu007"]
    assert r["n_nodes"] == 5
    assert r["n_gpus"] == 40  # gres/gpu=40 and gres/gpu:h100=40 are the same 40 GPUs
    assert r["gpu_type"] == "h100"
    # 40 GPUs * 183845 s / 3600 = 7353800 / 3600 = 2042.7222... GPU-hours
    assert r["gpu_hours"] == pytest.approx(7353800 / 3600)
    # times printed with TZ=UTC: taken as UTC by default
    assert r["start"] == utc(2024, 6, 1, 10, 0, 0)
    assert r["end"] == utc(2024, 6, 3, 13, 4, 5)
    assert r["source_line"] == 2
    step0 = row(traps.steps, "100.0")
    assert step0["total_cpu_s"] == 93784  # 1-02:03:04 = 86400 + 7200 + 180 + 4
    assert step0["elapsed_s"] == 183835  # 2-03:03:55 = 172800 + 10800 + 180 + 55
    assert step0["parent_job_id"] == "100" and step0["job_id_raw"] == 100


def test_traps_unlimited_and_partition_limit(traps):
    r101 = row(traps.jobs, "101")
    assert (r101["timelimit_s"], r101["timelimit_flag"]) == (None, "UNLIMITED")
    r102 = row(traps.jobs, "102")
    assert (r102["timelimit_s"], r102["timelimit_flag"]) == (None, "Partition_Limit")


def test_traps_cancelled_by_0_and_unknown_times(traps):
    r = row(traps.jobs, "101")
    assert r["State"] == "CANCELLED by 0"
    assert (r["state"], r["cancelled_by"]) == ("CANCELLED", 0)
    assert r["start"] is None  # "None"
    assert r["end"] == utc(2024, 6, 2, 1, 0, 0)
    assert r["nodes"] == []  # "None assigned"
    assert r["n_gpus"] == 0  # empty AllocTRES: nothing allocated
    r102 = row(traps.jobs, "102")
    assert r102["start"] is None and r102["end"] is None  # "Unknown"


def test_traps_array_and_het(traps):
    t = row(traps.jobs, "104_3")
    assert (t["kind"], t["array_job_id"], t["array_task_id"], t["job_id_raw"]) == (
        "array_task",
        104,
        3,
        110,
    )
    assert (t["n_gpus"], t["gpu_type"]) == (8, "a100,h100")  # typed only: 4 + 4
    assert t["total_cpu_s"] == pytest.approx(599.5)  # 09:59.500 = 540 + 59.5
    p = row(traps.jobs, "104_[5-10]")
    assert (p["kind"], p["array_job_id"], p["array_task_id"]) == ("array_pending", 104, None)
    h0, h1 = row(traps.jobs, "105+0"), row(traps.jobs, "105+1")
    assert (h0["kind"], h0["het_job_id"], h0["het_offset"], h0["job_id_raw"]) == (
        "het_component",
        105,
        0,
        105,
    )
    assert (h1["het_job_id"], h1["het_offset"], h1["job_id_raw"]) == (105, 1, 106)
    s = row(traps.steps, "105+0.0")
    assert (s["het_job_id"], s["het_offset"], s["step_id"], s["signal"]) == (105, 0, "0", 15)


def test_traps_gres_after_mem_and_oom(traps):
    assert row(traps.jobs, "103")["n_gpus"] == 8
    oom = row(traps.jobs, "108")
    assert (oom["state"], oom["exit_code"], oom["signal"]) == ("OUT_OF_MEMORY", 0, 125)
    # 8 GPUs * 400 s (00:06:40) / 3600 = 0.888... GPU-hours
    assert oom["gpu_hours"] == pytest.approx(8 * 400 / 3600)


def test_pipe_in_jobname_recovered_when_last(traps):
    r = row(traps.jobs, "107")
    assert r["JobName"] == "train|v2|final"
    assert r["elapsed_s"] == 1800 and r["n_gpus"] == 8  # nothing shifted


def test_pipe_in_jobname_in_the_middle_raises_naming_the_line():
    path = SYN / "parsable2_pipe_in_middle.txt"
    with pytest.raises(SacctParseError) as exc:
        slurm.read_sacct_parsable(path)
    assert isinstance(exc.value, ValueError)
    assert exc.value.line == 3
    msg = str(exc.value)
    assert "parsable2_pipe_in_middle.txt, line 3" in msg and "JobName" in msg


def test_bad_value_names_file_line_and_field():
    with pytest.raises(SacctParseError) as exc:
        slurm.read_sacct_parsable(SYN / "parsable2_bad_elapsed.txt")
    assert exc.value.line == 3
    assert "parsable2_bad_elapsed.txt, line 3" in str(exc.value) and "Elapsed" in str(exc.value)
    assert "one hour" in str(exc.value)


def test_noheader_needs_fields():
    with pytest.raises(SacctParseError) as exc:
        slurm.read_sacct_parsable(SYN / "noheader_epoch_caret.txt", delimiter="^|^")
    assert exc.value.line == 1 and "header" in str(exc.value)


EPOCH_FIELDS = (
    "JobID,JobIDRaw,State,ExitCode,Start,End,Elapsed,TimelimitRaw,NNodes,NodeList,AllocTRES,JobName"
)


def test_noheader_epoch_seconds_custom_delimiter():
    d = slurm.read_sacct_parsable(
        SYN / "noheader_epoch_caret.txt", fields=EPOCH_FIELDS, delimiter="^|^"
    )
    r = row(d.jobs, "300")
    # 1717200000 s = 19875 days * 86400 (1970-01-01 .. 2024-06-01) = 2024-06-01T00:00:00Z
    assert r["start"] == utc(2024, 6, 1, 0, 0, 0)
    assert r["end"] == utc(2024, 6, 1, 1, 0, 0)  # +3600 s
    assert r["JobName"] == "name|with|pipes"  # | is not the delimiter here
    assert r["timelimit_s"] == 60 * 60  # TimelimitRaw is minutes
    assert row(d.jobs, "301")["end"] is None  # Unknown


def test_epoch_sentinels_are_null_in_text():
    d = slurm.read_sacct_parsable(
        SYN / "noheader_epoch_caret.txt", fields=EPOCH_FIELDS, delimiter="^|^"
    )
    r = row(d.jobs, "302")
    assert r["start"] is None  # 0
    assert r["end"] is None  # 4294967294 (NO_VAL)
    assert (r["timelimit_s"], r["timelimit_flag"]) == (None, "UNLIMITED")  # 4294967295 (INFINITE)
    assert (r["state"], r["cancelled_by"]) == ("CANCELLED", 1234)


def test_epoch_times_ignore_tz():
    d = slurm.read_sacct_parsable(
        SYN / "noheader_epoch_caret.txt", fields=EPOCH_FIELDS, delimiter="^|^", tz="Asia/Tokyo"
    )
    assert row(d.jobs, "300")["start"] == utc(2024, 6, 1, 0, 0, 0)


def test_fields_given_and_header_present_is_tolerated():
    text = "JobID|State|Elapsed\n1|COMPLETED|00:01:00\n"
    d = slurm.parse_sacct_parsable(text, fields=["JobID", "State", "Elapsed%20"])
    assert d.jobs.get_column("elapsed_s").to_list() == [60]


def test_newline_inside_last_field_jobname():
    text = "JobID|State|JobName\n1|COMPLETED|two\nlines\n2|COMPLETED|ok\n"
    d = slurm.parse_sacct_parsable(text)
    assert d.jobs.get_column("JobName").to_list() == ["two\nlines", "ok"]


def test_header_only_gives_empty_frames_with_schema():
    d = slurm.parse_sacct_parsable("JobID|State|Elapsed\n")
    assert d.jobs.height == 0 and d.steps.height == 0
    assert d.jobs.schema["elapsed_s"] == pl.Int64 and d.steps.schema["step_id"] == pl.Utf8


def test_parsable_trailing_delimiter():
    d = slurm.read_sacct_parsable(SYN / "parsable_trailing.txt")
    assert d.jobs.get_column("JobName").to_list() == ["trail"]
    assert d.jobs.get_column("elapsed_s").to_list() == [300]  # 00:05:00
    assert d.steps.get_column("JobID").to_list() == ["400.batch"]


def test_missing_alloctres_warns_and_leaves_gpus_null():
    with pytest.warns(SacctWarning, match="AllocTRES"):
        d = slurm.read_sacct_parsable(SYN / "parsable2_missing_alloctres.txt")
    r = row(d.jobs, "500")
    assert r["n_gpus"] is None and r["gpu_hours"] is None  # unknown, never 0
    assert r["elapsed_s"] == 3600 and r["n_nodes"] == 4


# ------------------------------------------------------------------------------------------------
# time zones
# ------------------------------------------------------------------------------------------------

TZ_TEXT = (
    "JobID|State|Start|End|Elapsed\n1|COMPLETED|2024-07-01T12:00:00|2024-07-01T13:00:00|01:00:00\n"
)


def test_local_times_converted_with_tz():
    # Asia/Tokyo is UTC+9 all year: 12:00 JST = 03:00 UTC
    d = slurm.parse_sacct_parsable(TZ_TEXT, tz="Asia/Tokyo")
    assert row(d.jobs, "1")["start"] == utc(2024, 7, 1, 3, 0, 0)
    # default tz is UTC
    assert row(slurm.parse_sacct_parsable(TZ_TEXT).jobs, "1")["start"] == utc(2024, 7, 1, 12, 0, 0)
    # America/New_York in July is EDT, UTC-4: 12:00 EDT = 16:00 UTC
    d_ny = slurm.parse_sacct_parsable(TZ_TEXT, tz="America/New_York")
    assert row(d_ny.jobs, "1")["end"] == utc(2024, 7, 1, 17, 0, 0)


@pytest.mark.parametrize(
    "when",
    [
        "2024-11-03T01:30:00",  # clocks go back 02:00 EDT -> 01:00 EST: 01:30 happens twice
        "2024-03-10T02:30:00",  # clocks go forward 02:00 EST -> 03:00 EDT: 02:30 never happens
    ],
)
def test_dst_ambiguous_local_time_raises(when):
    text = f"JobID|State|Start|End|Elapsed\n1|COMPLETED|2024-01-01T00:00:00|2024-01-01T00:00:00|00:00:00\n2|COMPLETED|{when}|Unknown|00:00:00\n"
    with pytest.raises(SacctParseError) as exc:
        slurm.parse_sacct_parsable(text, tz="America/New_York", source="dst.txt")
    assert exc.value.line == 3 and "SLURM_TIME_FORMAT=%s" in str(exc.value)


# ------------------------------------------------------------------------------------------------
# --json, synthetic shapes of each release
# ------------------------------------------------------------------------------------------------

JSON_VERSIONS = ["21_08", "22_05", "23_02", "23_11", "24_11", "25_05"]


@pytest.mark.parametrize("version", JSON_VERSIONS)
def test_json_versions_give_the_same_frames(version):
    d = slurm.read_sacct_json(SYN / f"json_{version}.json")
    assert d.meta["slurm_version"] == version.replace("_", ".") + ".1"
    assert d.jobs.get_column("JobID").to_list() == ["200", "201", "209_7"]
    a = row(d.jobs, "200")
    assert a["state"] == "COMPLETED" and a["exit_code"] == 0
    # submission 1717200000 = 2024-06-01T00:00Z; start +3600 s; end +10800 s
    assert (a["submit"], a["start"], a["end"]) == (
        utc(2024, 6, 1, 0, 0),
        utc(2024, 6, 1, 1, 0),
        utc(2024, 6, 1, 3, 0),
    )
    assert a["elapsed_s"] == 7200
    assert a["timelimit_s"] == 1440 * 60  # limit is in minutes: 86400 s
    assert a["nodes"] == ["gpu001", "gpu002", "gpu003", "gpu004"] and a["n_nodes"] == 4
    assert (a["n_gpus"], a["gpu_type"]) == (32, "h100")  # gpu=32 and gpu:h100=32 are the same GPUs
    assert a["gpu_hours"] == pytest.approx(32 * 7200 / 3600)  # 64 GPU-h
    b = row(d.jobs, "201")
    assert (b["state"], b["cancelled_by_user"]) == ("CANCELLED", "bob")
    assert b["start"] is None  # 0 / 4294967294 / unset object
    assert (b["timelimit_s"], b["timelimit_flag"]) == (None, "UNLIMITED")
    assert b["nodes"] == [] and b["n_gpus"] == 0
    c = row(d.jobs, "209_7")
    assert (c["kind"], c["array_job_id"], c["array_task_id"], c["job_id_raw"]) == (
        "array_task",
        209,
        7,
        210,
    )
    assert (c["state"], c["exit_code"], c["timelimit_s"]) == ("FAILED", 2, 3600)
    steps = d.steps
    assert steps.get_column("JobID").to_list() == ["200.batch", "200.0"]
    assert steps.get_column("step_kind").to_list() == ["batch", "srun"]
    s0 = row(steps, "200.0")
    assert (s0["start"], s0["end"], s0["elapsed_s"]) == (
        utc(2024, 6, 1, 1, 0, 10),
        utc(2024, 6, 1, 2, 59, 50),
        7180,
    )
    assert s0["n_nodes"] == 4 and s0["n_gpus"] == 32
    assert s0["total_cpu_s"] == pytest.approx(3600.0)
    assert row(steps, "200.batch")["total_cpu_s"] == pytest.approx(1.5)  # 1 s + 500000 us


@pytest.mark.parametrize(
    ("version", "shape"), [("22_05", str), ("23_02", str), ("23_11", list), ("25_05", list)]
)
def test_json_state_current_string_or_list(version, shape):
    raw = json.loads((SYN / f"json_{version}.json").read_text())
    assert isinstance(raw["jobs"][0]["state"]["current"], shape)  # the fixture really differs
    d = slurm.read_sacct_json(SYN / f"json_{version}.json")
    assert row(d.jobs, "200")["state"] == "COMPLETED"
    assert row(d.jobs, "200")["state_flags"] == []


def test_json_state_list_with_flags_and_sentinels_inline():
    doc = json.loads((SYN / "json_25_05.json").read_text())
    j = doc["jobs"][0]
    j["state"]["current"] = ["FAILED", "REQUEUED"]
    j["time"]["start"] = 4294967295
    j["time"]["end"] = 4294967294
    j["time"]["submission"] = 0
    j["exit_code"]["return_code"]["number"] = 1
    d = slurm.parse_sacct_json(doc)
    r = row(d.jobs, "200")
    assert (r["state"], r["state_flags"], r["exit_code"]) == ("FAILED", ["REQUEUED"], 1)
    assert (r["start"], r["end"], r["submit"]) == (None, None, None)


def test_json_banner_is_skipped():
    d = slurm.read_sacct_json(SYN / "json_23_11_with_banner.json")
    assert d.jobs.height == 3


def test_json_invalid_names_the_line():
    with pytest.raises(SacctParseError) as exc:
        slurm.read_sacct_json(SYN / "json_broken.json")
    assert exc.value.line == 3 and "json_broken.json, line 3" in str(exc.value)


def test_json_without_jobs_list():
    with pytest.raises(SacctParseError, match='"jobs" list'):
        slurm.parse_sacct_json('{"meta": {}}', source="x.json")


def test_read_sacct_dispatches_on_content():
    assert slurm.read_sacct(SYN / "json_22_05.json").meta["format"] == "json"
    assert slurm.read_sacct(SYN / "parsable2_traps.txt").meta["format"] == "parsable"


# ------------------------------------------------------------------------------------------------
# real Slurm 22.05.8 output (scripts/slurm_fixtures.sh)
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_ids() -> dict:
    return json.loads((REAL / "jobs.json").read_text())


@pytest.fixture(scope="module")
def real_text() -> slurm.SacctData:
    return slurm.read_sacct_parsable(REAL / "sacct_parsable2.txt")


@pytest.fixture(scope="module")
def real_json() -> slurm.SacctData:
    with pytest.warns(SacctWarning, match="exit code 0 with state FAILED"):
        return slurm.read_sacct_json(REAL / "sacct.json")


def check_real_states(d: slurm.SacctData, ids: dict, *, text: bool) -> None:
    """What scripts/slurm_fixtures.sh ran (see tests/data/slurm/real/README.md)."""
    j = d.jobs
    assert row(j, str(ids["timeout"]))["state"] == "TIMEOUT"
    assert row(j, str(ids["timeout"]))["timelimit_s"] == 60  # --time=1 (minutes)
    assert row(j, str(ids["ok"]))["state"] == "COMPLETED"
    assert row(j, str(ids["ok"]))["n_gpus"] == 2  # gres/gpu:h100=2,gres/gpu=2: 2 GPUs, not 4
    assert row(j, str(ids["fail"]))["state"] == "FAILED"
    cancel = row(j, str(ids["cancel"]))
    assert cancel["state"] == "CANCELLED"
    assert cancel["timelimit_flag"] == "UNLIMITED"  # no --time, partition MaxTime=UNLIMITED
    arr = j.filter(pl.col("array_job_id") == ids["array"]).sort("array_task_id")
    assert arr.get_column("array_task_id").to_list() == [0, 1, 2]
    assert set(arr.get_column("state").to_list()) == {"COMPLETED"}
    assert row(j, str(ids["steps"]))["state"] == "COMPLETED"
    st = d.steps.filter(pl.col("parent_job_id") == str(ids["steps"])).sort("JobID")
    assert st.get_column("step_id").to_list() == ["0", "1", "2", "batch"]
    assert st.get_column("state").to_list() == ["COMPLETED", "COMPLETED", "FAILED", "COMPLETED"]
    assert row(j, str(ids["evil"]))["JobName"] == "pipe|name <img src=x onerror=alert(1)>"
    het = j.filter(pl.col("het_job_id") == ids["het"]).sort("het_offset")
    assert het.get_column("het_offset").to_list() == [0, 1]
    assert set(het.get_column("state").to_list()) == {"CANCELLED"}
    assert het.get_column("start").to_list() == [None, None]  # never started: "None" / unset
    if text:
        assert row(j, str(ids["fail"]))["exit_code"] == 3  # exit 3 -> ExitCode 3:0
        assert cancel["cancelled_by"] == 0  # "CANCELLED by 0": scancel as root
        assert row(d.steps, f"{ids['steps']}.2")["exit_code"] == 1  # srun false
        assert set(het.get_column("cancelled_by").to_list()) == {0}
    else:
        assert cancel["cancelled_by_user"] == "root"
        # Slurm 22.05 JSON says exit_code SUCCESS/0 for the FAILED job: must not come out as 0
        assert row(j, str(ids["fail"]))["exit_code"] is None


def test_real_parsable2_loads_and_states_match(real_text, real_ids):
    assert real_ids["slurm_version"].endswith("22.05.8")
    check_real_states(real_text, real_ids, text=True)
    # every timed-out job's batch step is CANCELLED by signal 15
    b = row(real_text.steps, f"{real_ids['timeout']}.batch")
    assert (b["state"], b["exit_code"], b["signal"]) == ("CANCELLED", 0, 15)


def test_real_json_loads_and_states_match(real_json, real_ids):
    assert real_json.meta["slurm_version"] == "22.05.8"
    check_real_states(real_json, real_ids, text=False)


def test_real_json_and_text_agree(real_text, real_json):
    cols = ["JobID", "state", "start", "end", "elapsed_s", "n_gpus", "nodes"]
    a = real_text.jobs.select(cols).sort("JobID")
    b = real_json.jobs.select(cols).sort("JobID")
    assert a.equals(b)
    s_cols = ["JobID", "state", "elapsed_s", "n_gpus"]
    assert (
        real_text.steps.select(s_cols)
        .sort("JobID")
        .equals(real_json.steps.select(s_cols).sort("JobID"))
    )


def test_real_epoch_dump_with_custom_delimiter_matches_iso_dump(real_text):
    fields = "JobID,JobIDRaw,User,Partition,State,ExitCode,Submit,Start,End,Elapsed,Timelimit,TotalCPU,NNodes,NCPUS,NodeList,AllocTRES,ReqTRES,MaxRSS,JobName"
    d = slurm.read_sacct_parsable(
        REAL / "sacct_noheader_epoch_delim.txt", fields=fields, delimiter="^|^"
    )
    cols = ["JobID", "JobName", "submit", "start", "end", "elapsed_s", "n_gpus", "total_cpu_s"]
    assert d.jobs.select(cols).equals(real_text.jobs.select(cols))


def test_real_jobname_in_middle_raises_on_the_pipe_line():
    path = REAL / "sacct_parsable2_jobname_middle.txt"
    # the line number, found independently of the reader
    expected = next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if "pipe|name" in ln)
    with pytest.raises(SacctParseError) as exc:
        slurm.read_sacct_parsable(path)
    assert exc.value.line == expected


# ------------------------------------------------------------------------------------------------
# statistics
# ------------------------------------------------------------------------------------------------

STATS_TEXT = """JobID|State|ExitCode|Start|End|Elapsed|NNodes|AllocTRES
1|COMPLETED|0:0|2024-06-01T00:00:00|2024-06-01T01:00:00|01:00:00|1|gres/gpu=8,node=1
2|COMPLETED|0:0|2024-06-01T00:00:00|2024-06-01T02:00:00|02:00:00|2|gres/gpu=16,node=2
3|FAILED|1:0|2024-06-01T00:00:00|2024-06-01T00:30:00|00:30:00|4|gres/gpu=32,node=4
4|CANCELLED by 0|0:0|2024-06-01T00:00:00|2024-06-09T00:00:00|8-00:00:00|20|gres/gpu=160,node=20
4.batch|CANCELLED|0:15|2024-06-01T00:00:00|2024-06-09T00:00:00|8-00:00:00|1|gres/gpu=8,node=1
4.0|CANCELLED|0:15|2024-06-01T00:00:00|2024-06-08T00:00:00|7-00:00:00|20|gres/gpu=160,node=20
5|TIMEOUT|0:0|2024-06-01T00:00:00|2024-06-02T00:00:00|1-00:00:00|40|gres/gpu=320,node=40
6|RUNNING|0:0|2024-06-01T00:00:00|Unknown|01:00:00|1|gres/gpu=8,node=1
7|COMPLETED|0:0|2024-06-01T00:00:00|2024-06-01T03:00:00|03:00:00|1|gres/gpu=8,node=1
"""
# GPU-hours by hand: 1: 8*1 = 8; 2: 16*2 = 32; 3: 32*0.5 = 16; 4: 160*192 h = 30720;
# 5: 320*24 = 7680; 7: 8*3 = 24. Finished jobs: 1,2,3,4,5,7 (6 is RUNNING).
# Total finished GPU-h = 8 + 32 + 16 + 30720 + 7680 + 24 = 38480.


@pytest.fixture(scope="module")
def stats() -> slurm.SacctData:
    return slurm.parse_sacct_parsable(STATS_TEXT)


def test_size_bins():
    df = pl.DataFrame({"n": [1, 2, 3, 4, 5, 16, 17, 32, 33, None, 0]})
    got = df.select(jobstats.size_bin("n")).to_series().cast(pl.Utf8).to_list()
    assert got == ["1", "2", "3-4", "3-4", "5-16", "5-16", "17-32", "17-32", ">32", None, None]


def test_successful_jobs(stats):
    r = jobstats.successful_jobs(stats.jobs).to_dicts()[0]
    assert r["n_jobs"] == 6 and r["n_successful"] == 3  # jobs 1, 2, 7
    assert r["successful_share"] == pytest.approx(0.5)
    assert r["successful_gpu_hours"] == pytest.approx(8 + 32 + 24)


def test_longest_job_and_task(stats):
    out = jobstats.longest_job_and_task(stats.jobs, stats.steps)
    assert out.get_column("what").to_list() == ["job", "task"]
    assert out.get_column("JobID").to_list() == ["4", "4.0"]  # .batch is not a task
    assert out.get_column("elapsed_s").to_list() == [8 * 86400, 7 * 86400]  # 691200, 604800
    assert out.get_column("elapsed_days").to_list() == [8.0, 7.0]


def test_runtime_distribution(stats):
    out = jobstats.runtime_distribution(stats.jobs, quantiles=(0.0, 0.25, 0.5, 1.0))
    # successful run times 3600, 7200, 10800; q0.25 by linear interpolation: 3600 + 0.5*3600 = 5400
    assert out.get_column("elapsed_s").to_list() == [3600.0, 5400.0, 7200.0, 10800.0]
    assert out.get_column("elapsed_h").to_list() == [1.0, 1.5, 2.0, 3.0]
    assert set(out.get_column("n_jobs").to_list()) == {3}


def test_runtime_histogram(stats):
    out = jobstats.runtime_histogram(stats.jobs, edges_s=(0, 3600, 7200))
    # [0,3600): none; [3600,7200): 3600; [7200, inf): 7200, 10800
    assert out.get_column("n_jobs").to_list() == [0, 1, 2]
    assert out.get_column("bin_hi_s").to_list() == [3600.0, 7200.0, None]


def test_share_by_state(stats):
    out = jobstats.share_by_state(stats.jobs)
    d = {r["state"]: r for r in out.to_dicts()}
    assert set(d) == {"CANCELLED", "TIMEOUT", "COMPLETED", "FAILED"}  # RUNNING is not final
    assert out.get_column("state").to_list()[0] == "CANCELLED"  # most GPU-hours first
    assert d["CANCELLED"]["gpu_hours"] == pytest.approx(30720)
    assert d["CANCELLED"]["gpu_hours_share"] == pytest.approx(30720 / 38480)
    assert d["COMPLETED"]["n_jobs"] == 3 and d["COMPLETED"]["job_share"] == pytest.approx(3 / 6)
    assert d["FAILED"]["gpu_hours_share"] == pytest.approx(16 / 38480)
    assert out.get_column("gpu_hours_share").sum() == pytest.approx(1.0)


def test_share_by_size(stats):
    out = jobstats.share_by_size(stats.jobs)
    assert out.get_column("size_bin").cast(pl.Utf8).to_list() == [
        "1",
        "2",
        "3-4",
        "5-16",
        "17-32",
        ">32",
    ]
    assert out.get_column("n_jobs").to_list() == [2, 1, 1, 0, 1, 1]  # 1 node: jobs 1 and 7
    assert out.get_column("gpu_hours").to_list() == pytest.approx([8 + 24, 32, 16, 0, 30720, 7680])
    # jobs with <= 4 nodes: 1, 2, 3, 7 = 4 of 6
    assert out.filter(pl.col("size_bin") == "3-4")["cum_job_share"][0] == pytest.approx(4 / 6)
    assert out.filter(pl.col("size_bin") == "17-32")["gpu_hours_share"][0] == pytest.approx(
        30720 / 38480
    )


def test_runtime_tails_by_size(stats):
    out = jobstats.runtime_tails_by_size(stats.jobs, quantiles=(0.5,), over_days=(1, 7))
    d = {r["size_bin"]: r for r in out.to_dicts()}
    assert d["1"]["elapsed_p50_s"] == pytest.approx(7200)  # median of 3600 and 10800
    assert d["17-32"]["share_over_7d"] == 1.0  # 8 days > 7 days
    assert d[">32"]["share_over_1d"] == 0.0  # exactly 1 day is not *more* than a day
    assert d[">32"]["elapsed_max_s"] == 86400
    assert "5-16" not in d


def test_gpu_hours_over_time():
    text = (
        "JobID|State|Start|End|Elapsed|NNodes|AllocTRES\n"
        "1|COMPLETED|2024-06-01T23:30:00|2024-06-02T00:30:00|01:00:00|1|gres/gpu=8,node=1\n"
        "2|RUNNING|2024-06-02T12:00:00|Unknown|02:00:00|2|gres/gpu=16,node=2\n"
    )
    out = jobstats.gpu_hours_over_time(slurm.parse_sacct_parsable(text).jobs, every="1d")
    got = [(r["period_start"], str(r["size_bin"]), r["gpu_hours"]) for r in out.to_dicts()]
    # job 1: 30 min on each day * 8 GPUs = 4 GPU-h per day; job 2 (running): 2 h * 16 = 32 on 06-02
    assert got == [
        (utc(2024, 6, 1), "1", pytest.approx(4.0)),
        (utc(2024, 6, 2), "1", pytest.approx(4.0)),
        (utc(2024, 6, 2), "2", pytest.approx(32.0)),
    ]


# ------------------------------------------------------------------------------------------------
# live Slurm (the fixture script itself)
# ------------------------------------------------------------------------------------------------


@pytest.mark.slurm
@pytest.mark.skipif(
    shutil.which("slurmctld") is None,
    reason="slurmctld not installed (apt-get install slurm-wlm slurmdbd mariadb-server munge)",
)
@pytest.mark.skipif(os.geteuid() != 0, reason="the fixture script runs the Slurm daemons as root")
def test_fixture_script_runs_a_real_cluster(tmp_path):
    script = Path(__file__).parents[1] / "scripts" / "slurm_fixtures.sh"
    env = dict(os.environ, SLURM_FIXTURES_QUICK="1")
    subprocess.run(
        [str(script), str(tmp_path)], check=True, env=env, timeout=400, capture_output=True
    )
    ids = json.loads((tmp_path / "jobs.json").read_text())
    d = slurm.read_sacct_parsable(tmp_path / "sacct_parsable2.txt")
    assert row(d.jobs, str(ids["ok"]))["state"] == "COMPLETED"
    assert row(d.jobs, str(ids["fail"]))["exit_code"] == 3
    assert row(d.jobs, str(ids["cancel"]))["cancelled_by"] == 0
    assert row(d.jobs, str(ids["evil"]))["JobName"] == "pipe|name <img src=x onerror=alert(1)>"
    assert slurm.read_sacct_json(tmp_path / "sacct.json").jobs.height == d.jobs.height


@pytest.mark.slurm
@pytest.mark.skipif(
    shutil.which("slurmctld") is None,
    reason="slurmctld not installed (apt-get install slurm-wlm slurmdbd mariadb-server munge)",
)
@pytest.mark.skipif(os.geteuid() != 0, reason="the fixture script runs the Slurm daemons as root")
def test_damage_fixture_script_on_a_real_cluster(tmp_path):
    """scripts/slurm_fixtures_damage.sh on this machine's Slurm: a NODE_FAIL job has no exit status
    (0:0 in text, SUCCESS/0 in JSON), and both readers report it as unknown, flagged."""
    script = Path(__file__).parents[1] / "scripts" / "slurm_fixtures_damage.sh"
    subprocess.run([str(script), str(tmp_path)], check=True, timeout=300, capture_output=True)
    ids = json.loads((tmp_path / "jobs.json").read_text())
    raw = (tmp_path / "sacct_parsable2.txt").read_text(encoding="utf-8", errors="replace")
    nf_line = next(ln for ln in raw.splitlines() if ln.startswith(f"{ids['node_fail']}|"))
    assert nf_line.split("|")[4:6] == ["NODE_FAIL", "0:0"]
    for d in (
        slurm.read_sacct_parsable(tmp_path / "sacct_parsable2.txt"),
        slurm.read_sacct_json(tmp_path / "sacct.json"),
    ):
        r = row(d.jobs, str(ids["node_fail"]))
        assert (r["state"], r["exit_code"], r["data_flags"]) == (
            "NODE_FAIL",
            None,
            ["exit_code_unknown"],
        )
        assert "exit_code_unknown" in d.quality["check"].to_list()


# ------------------------------------------------------------------------------------------------
# merged dumps, published marginals, summary, ECDF, occupancy
# ------------------------------------------------------------------------------------------------


def test_read_sacct_dumps_merges_and_keeps_the_last_record(tmp_path):
    a = tmp_path / "a.txt"
    b = tmp_path / "b.txt"
    a.write_text(
        "JobID|State|ExitCode|Start|End|Elapsed|NNodes|AllocTRES\n"
        "1|RUNNING|0:0|2024-06-01T00:00:00|Unknown|01:00:00|1|gres/gpu=8,node=1\n"
        "2|COMPLETED|0:0|2024-06-01T00:00:00|2024-06-01T02:00:00|02:00:00|1|gres/gpu=8,node=1\n"
    )
    # the later dump sees job 1 finished, and a new job 3
    b.write_text(
        "JobID|State|ExitCode|Start|End|Elapsed|NNodes|AllocTRES\n"
        "1|COMPLETED|0:0|2024-06-01T00:00:00|2024-06-01T05:00:00|05:00:00|1|gres/gpu=8,node=1\n"
        "3|FAILED|1:0|2024-06-02T00:00:00|2024-06-02T00:10:00|00:10:00|1|gres/gpu=8,node=1\n"
    )
    d = slurm.read_sacct_dumps([a, b], format="parsable2")
    assert sorted(d.jobs["JobID"].to_list()) == ["1", "2", "3"]
    assert row(d.jobs, "1")["state"] == "COMPLETED" and row(d.jobs, "1")["elapsed_s"] == 5 * 3600
    assert d.meta["n_duplicates_dropped"] == 1 and d.meta["format"] == "parsable"
    with pytest.raises(ValueError, match="format"):
        slurm.read_sacct_dumps([a], format="xml")
    with pytest.raises(ValueError):
        slurm.read_sacct_dumps([])


def test_read_sacct_dumps_mixed_formats():
    d = slurm.read_sacct_dumps([SYN / "parsable2_traps.txt", SYN / "json_22_05.json"])
    assert d.meta["format"] == "mixed"
    assert {"200", "104_3"} <= set(d.jobs["JobID"].to_list())


def test_workload_marginals_by_hand(stats):
    # the SAKURAONE paper's shares (arXiv 2604.13600 section 4.1; data/reference/workload_marginals.csv)
    out = jobstats.workload_marginals(
        stats.jobs, published=jobstats.published_marginals("SAKURAONE")
    )
    m = {r["metric"]: r for r in out.to_dicts()}
    assert list(m) == list(jobstats.MARGINAL_METRICS)
    # finished jobs 1,2,3,4,5,7 (GPU-h 8, 32, 16, 30720, 7680, 24; total 38480)
    assert m["cancelled_gpu_hours_share"]["value"] == pytest.approx(30720 / 38480)
    assert m["failed_job_share"]["value"] == pytest.approx(1 / 6)  # job 3
    assert m["failed_gpu_hours_share"]["value"] == pytest.approx(16 / 38480)
    assert m["nodes_1_job_share"]["value"] == pytest.approx(2 / 6)  # jobs 1 and 7
    assert m["nodes_le4_gpu_hours_share"]["value"] == pytest.approx((8 + 32 + 16 + 24) / 38480)
    assert m["nodes_ge17_job_share"]["value"] == pytest.approx(2 / 6)  # 20 and 40 nodes
    assert m["nodes_17_32_over_7d_share"]["value"] == 1.0  # job 4: 8 days
    # difference in percentage points: 100 * (1/6 - 0.169) = -0.2333...
    assert m["failed_job_share"]["difference_pp"] == pytest.approx(100 * (1 / 6 - 0.169))
    none = jobstats.workload_marginals(stats.jobs, published={})
    assert none["published"].null_count() == none.height
    # no case-study default: without published values, none
    default = jobstats.workload_marginals(stats.jobs)
    assert default["published"].null_count() == default.height


def test_accounting_summary(stats):
    s = jobstats.accounting_summary(stats.jobs, stats.steps).to_dicts()[0]
    assert (s["n_job_records"], s["n_finished"], s["n_successful"]) == (7, 6, 3)
    assert s["gpu_hours"] == pytest.approx(38480)
    assert s["n_steps"] == 2 and s["n_users"] is None  # no User column in the fixture
    assert s["last_end"] == utc(2024, 6, 9)


def test_runtime_ecdf(stats):
    out = jobstats.runtime_ecdf(stats.jobs)
    # successful run times: 3600 (1 node), 7200 (2 nodes), 10800 (1 node)
    all_ = out.filter(pl.col("group") == "all sizes")
    assert all_["elapsed_s"].to_list() == [3600.0, 7200.0, 10800.0]
    assert all_["ecdf"].to_list() == pytest.approx([1 / 3, 2 / 3, 1.0])
    one = out.filter(pl.col("group") == "1 node")
    assert one["ecdf"].to_list() == [0.5, 1.0] and set(one["n_jobs"].to_list()) == {2}
    assert out.filter(pl.col("group") == "2 nodes")["ecdf"].to_list() == [1.0]


def test_cluster_occupancy():
    text = (
        "JobID|State|Start|End|Elapsed|NNodes|AllocTRES\n"
        "1|COMPLETED|2024-06-01T00:00:00|2024-06-01T12:00:00|12:00:00|2|gres/gpu=16,node=2\n"
    )
    out = jobstats.cluster_occupancy(
        slurm.parse_sacct_parsable(text).jobs, cluster_nodes=4, gpus_per_node=8, every="1d"
    )
    r = out.to_dicts()[0]
    # 16 GPUs x 12 h = 192 GPU-h; capacity 4 x 8 x 24 h = 768 GPU-h; 192 / 768 = 0.25
    assert r["gpu_hours"] == pytest.approx(192) and r["capacity_gpu_hours"] == 768
    assert r["occupancy"] == pytest.approx(0.25)
    with pytest.raises(ValueError):
        jobstats.cluster_occupancy(
            slurm.parse_sacct_parsable(text).jobs, cluster_nodes=0, gpus_per_node=8
        )


def test_runtime_edges_are_log_spaced():
    e = jobstats.RUNTIME_EDGES_LOG_S
    assert e[0] == 10 and e[4] == pytest.approx(100) and e[-1] == pytest.approx(10**6.75)


# ------------------------------------------------------------------------------------------------
# per-job GPU utilisation from DCGM samples
# ------------------------------------------------------------------------------------------------

UTIL_JOBS = """JobID|State|Start|End|Elapsed|NNodes|NodeList|AllocTRES
10|COMPLETED|2024-06-01T00:00:00|2024-06-01T00:04:00|00:04:00|2|n[1-2]|gres/gpu=16,node=2
11|COMPLETED|2024-06-01T00:04:00|2024-06-01T00:06:00|00:02:00|1|n1|gres/gpu=8,node=1
12|RUNNING|2024-06-01T00:05:00|Unknown|00:02:00|1|n3|gres/gpu=8,node=1
13|COMPLETED|2024-06-01T01:00:00|2024-06-01T02:00:00|01:00:00|1|n4|gres/gpu=8,node=1
"""
# GPU_UTIL (%) per (host, gpu) at minutes 0, 1, ..., 6 after 2024-06-01T00:00Z
UTIL_VALUES = {
    ("n1", 0): [100, 90, 10, 80, 5, 15, 50],
    ("n1", 1): [100, 100, 100, 100, 0, 0, 0],
    ("n2", 0): [50, 50, 50, 50, 50, 50, 50],
    ("n2", 1): [0, 10, 20, 30, 40, 50, 60],
    ("n3", 0): [30] * 7,
    ("n3", 1): [10] * 7,
}


def util_frame() -> pl.DataFrame:
    rows = []
    for (host, gpu), vals in UTIL_VALUES.items():
        for minute, v in enumerate(vals):
            t = utc(2024, 6, 1, 0, minute)
            rows.append((t, host, gpu, "DCGM_FI_DEV_GPU_UTIL", 203, float(v)))
            rows.append((t, host, gpu, "DCGM_FI_DEV_POWER_USAGE", 155, 700.0))  # ignored
    return pl.DataFrame(
        rows,
        schema={
            "timestamp": pl.Datetime("us", "UTC"),
            "hostname": pl.String,
            "gpu": pl.Int32,
            "field": pl.String,
            "field_id": pl.Int32,
            "value": pl.Float64,
        },
        orient="row",
    )


def test_job_gpu_utilisation_by_hand():
    jobs = slurm.parse_sacct_parsable(UTIL_JOBS).jobs
    out = {r["JobID"]: r for r in jobstats.job_gpu_utilisation(jobs, util_frame()).to_dicts()}
    # job 13 has no samples: absent, not 0 %
    assert set(out) == {"10", "11", "12"}
    # job 10: window [0, 4) min on n1, n2 -> minutes 0..3 of 4 GPUs = 16 samples:
    #   n1/0: 100 90 10 80; n1/1: 100 100 100 100; n2/0: 50 50 50 50; n2/1: 0 10 20 30
    #   sorted: 0 10 10 20 30 50 50 50 50 80 90 100 100 100 100 100 -> median (50 + 50) / 2 = 50
    #   mean (280 + 400 + 200 + 60) / 16 = 940 / 16 = 58.75; below 20: 0, 10, 10 -> 3 / 16 = 0.1875
    j10 = out["10"]
    assert (j10["n_samples"], j10["n_hosts_seen"], j10["n_gpus_seen"]) == (16, 2, 4)
    assert j10["util_median"] == 50.0 and j10["util_mean"] == pytest.approx(58.75)
    assert j10["low_share"] == pytest.approx(0.1875)
    # job 11: window [4, 6) on n1 -> minutes 4, 5 (minute 6 is its end, excluded):
    #   n1/0: 5 15; n1/1: 0 0 -> sorted 0 0 5 15: median 2.5, mean 20 / 4 = 5, all below 20 -> 1.0
    j11 = out["11"]
    assert (j11["n_samples"], j11["util_median"], j11["util_mean"]) == (4, 2.5, 5.0)
    assert j11["low_share"] == 1.0
    # job 12 (running, end = start + 2 min): [5, 7) on n3 -> minutes 5, 6: 30 30 10 10
    #   median (10 + 30) / 2 = 20, mean 20, below 20: 2 / 4 = 0.5
    j12 = out["12"]
    assert (j12["util_median"], j12["util_mean"], j12["low_share"]) == (20.0, 20.0, 0.5)


def test_gpu_utilisation_by_size_by_hand():
    jobs = slurm.parse_sacct_parsable(UTIL_JOBS).jobs
    out = {
        str(r["size_bin"]): r
        for r in jobstats.gpu_utilisation_by_size(jobs, util_frame()).to_dicts()
    }
    # 1-node jobs 11 and 12: samples 5 15 0 0 | 30 30 10 10 -> sorted 0 0 5 10 10 15 30 30
    #   median (10 + 10) / 2 = 10; below 20: 6 of 8 = 0.75
    assert (out["1"]["n_jobs"], out["1"]["n_samples"]) == (2, 8)
    assert out["1"]["util_median"] == 10.0 and out["1"]["low_share"] == 0.75
    # 2-node job 10: as in the per-job test
    assert out["2"]["util_median"] == 50.0 and out["2"]["low_share"] == pytest.approx(0.1875)


def test_job_gpu_utilisation_shared_nodes_use_the_interval_join():
    # job 14 shares n1 with job 10 during [0, 2) min: both get n1's samples of minutes 0 and 1
    text = (
        UTIL_JOBS
        + "14|COMPLETED|2024-06-01T00:00:00|2024-06-01T00:02:00|00:02:00|1|n1|gres/gpu=8,node=1\n"
    )
    jobs = slurm.parse_sacct_parsable(text).jobs
    out = {r["JobID"]: r for r in jobstats.job_gpu_utilisation(jobs, util_frame()).to_dicts()}
    # job 14: n1/0 100 90, n1/1 100 100 -> median (100 + 100) / 2 = 100, mean 390 / 4 = 97.5
    assert (out["14"]["n_samples"], out["14"]["util_median"]) == (4, 100.0)
    assert out["14"]["util_mean"] == pytest.approx(97.5)
    assert out["10"]["n_samples"] == 16 and out["10"]["util_median"] == 50.0  # unchanged


def test_job_gpu_utilisation_needs_the_columns():
    jobs = slurm.parse_sacct_parsable(UTIL_JOBS).jobs
    with pytest.raises(ValueError, match="hostname"):
        jobstats.job_gpu_utilisation(jobs, util_frame().drop("hostname"))
    with pytest.raises(ValueError, match="nodes"):
        jobstats.job_gpu_utilisation(jobs.drop("nodes"), util_frame())


def test_header_missing_a_column_is_an_error_not_a_shift(tmp_path):
    # the real 22.05 dump with AllocTRES deleted from the header only: every data line then has one
    # field more than the header; without the check ReqTRES would silently receive AllocTRES values
    real = (
        (Path(__file__).parent / "data" / "slurm" / "real" / "sacct_parsable2.txt")
        .read_text()
        .splitlines()
    )
    header = real[0].split("|")
    header.remove("AllocTRES")
    bad = tmp_path / "missing.txt"
    bad.write_text("|".join(header) + "\n" + "\n".join(real[1:]) + "\n")
    with pytest.raises(slurm.SacctParseError, match=r"line 1: .*lacks 1 field"):
        slurm.read_sacct(bad)


# ------------------------------------------------------------------------------------------------
# the vectorised reader gives the frames of the line-by-line reader it replaced
# ------------------------------------------------------------------------------------------------

BUNDLED = Path(__file__).parents[1] / "data" / "slurm" / "synthetic" / "sacct_parsable2.txt"
REAL_FIELDS = (
    "JobID,JobIDRaw,User,Partition,State,ExitCode,Submit,Start,End,Elapsed,Timelimit,TotalCPU,"
    "NNodes,NCPUS,NodeList,AllocTRES,ReqTRES,MaxRSS,JobName"
)
REFERENCE_CASES = [
    (BUNDLED, {}),
    (REAL / "sacct_parsable2.txt", {}),
    (REAL / "sacct_noheader_epoch_delim.txt", {"fields": REAL_FIELDS, "delimiter": "^|^"}),
    (REAL / "damage" / "sacct_parsable2.txt", {}),
    (SYN / "parsable2_traps.txt", {}),
    (SYN / "parsable_trailing.txt", {}),
    (SYN / "parsable2_missing_alloctres.txt", {}),
    (SYN / "noheader_epoch_caret.txt", {"fields": EPOCH_FIELDS, "delimiter": "^|^"}),
]


@pytest.mark.parametrize(("path", "kw"), REFERENCE_CASES, ids=lambda x: getattr(x, "name", ""))
def test_vectorised_reader_matches_the_reference(path, kw):
    """Frame for frame, every column of the old reader (tests/slurm_reference.py), values and dtypes.

    The one deliberate difference (issue 15): exit code 0:0 of a FAILED, OUT_OF_MEMORY or NODE_FAIL
    record is null; those records carry ``exit_code_unknown`` and are compared after the same
    correction is applied to the reference.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the reference's own SacctWarning class
        old = slurm_reference.read_sacct_parsable(path, **kw)
    new = slurm.read_sacct_parsable(path, **kw)
    for name in ("jobs", "steps"):
        a, b = getattr(old, name), getattr(new, name)
        assert b.columns == a.columns + ["data_flags"] or b.columns == [
            *a.columns[: a.columns.index("source_line") + 1],
            "data_flags",
            *a.columns[a.columns.index("source_line") + 1 :],
        ]
        unknown = b["data_flags"].list.contains("exit_code_unknown")
        fixed = a.with_columns(
            exit_code=pl.when(~unknown).then(pl.col("exit_code")),
            signal=pl.when(~unknown).then(pl.col("signal")),
        )
        # those records are exactly the 0:0 ones with the three states
        doubt = a.filter(
            pl.col("state").is_in(["FAILED", "OUT_OF_MEMORY", "NODE_FAIL"])
            & (pl.col("exit_code") == 0)
            & (pl.col("signal") == 0)
        )
        assert int(unknown.sum()) == doubt.height
        assert_frame_equal(fixed, b.select(a.columns))


def test_ten_copies_of_the_bundled_dump_read_as_the_dump_once(tmp_path):
    """The benchmark's 10x file (benchmarks/bench_slurm.py): every record after the first copy repeats one of it,
    so the frames are those of the dump read once (which the test above checks against the
    reference reader), and one quality row counts the repeats: 9 copies x 8,358 records =
    75,222, the first at line 8,360 (header line 1, first copy lines 2-8,359). The other quality
    rows are the dump's, with ten times the lines."""
    head, body = BUNDLED.read_text(encoding="utf-8").split("\n", 1)
    assert body.count("\n") == 8358
    big = tmp_path / "sacct_10x.txt"
    big.write_text(head + "\n" + body * 10, encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SacctWarning)
        once, ten = slurm.read_sacct_parsable(BUNDLED), slurm.read_sacct_parsable(big)
    assert_frame_equal(ten.jobs, once.jobs)
    assert_frame_equal(ten.steps, once.steps)
    extra = ten.quality.filter(pl.col("check") == "duplicate_record")
    assert extra.select("action", "n_lines", "first_line").rows() == [("excluded", 75222, 8360)]
    # the checks on values run before repeats are dropped: each fires on all ten copies
    other = pl.col("check") != "duplicate_record"
    a, b = ten.quality.filter(other), once.quality.filter(other)
    assert (
        a.select("check", "action", "first_line").rows()
        == b.select("check", "action", "first_line").rows()
    )
    assert a["n_lines"].to_list() == [10 * k for k in b["n_lines"].to_list()]


@pytest.mark.parametrize("collide", [False, True], ids=["hash", "collision"])
def test_repeated_records_found_by_hash_are_those_of_a_full_comparison(monkeypatch, collide):
    """trainperf.slurm.checks finds repeats from a row hash; the result must be that of
    ``pl.struct(...).is_first_distinct()`` (the definition), also when hashes collide (forced
    here: every row hashes to 0) and for float columns (-0.0 and 0.0 compare equal, NaN)."""
    df = pl.DataFrame(
        {
            "JobID": ["1", "2", "1", "3", "2", "1", "4", "4"],
            "n": [1, 2, 1, 3, 2, 1, None, None],
            "x": [0.0, 1.5, -0.0, float("nan"), 1.5, 0.0, None, None],
            "nodes": [["a"], [], ["a"], ["b", "c"], [], ["a"], None, None],
        }
    )
    if collide:
        monkeypatch.setattr(
            pl.DataFrame,
            "hash_rows",
            lambda self, *a, **k: pl.Series([0] * self.height, dtype=pl.UInt64),
        )
    want = df.select(pl.struct(df.columns).is_first_distinct()).to_series()
    got = checks._first_distinct(df, df.columns)
    # by hand: rows 2 and 5 repeat row 0 (-0.0 == 0.0), row 4 repeats row 1, row 7 row 6
    assert want.to_list() == [True, True, False, True, False, False, True, False]
    assert got.to_list() == want.to_list()


def test_bundled_dump_exit_code_correction_by_hand():
    # the generator writes NODE_FAIL jobs as 0:0 (as the real 22.05.8 NODE_FAIL fixture shows) and
    # their .batch/.0 steps too; OOM as 0:125 and FAILED with a non-zero code: only NODE_FAIL changes
    d = slurm.read_sacct_parsable(BUNDLED)
    nf = d.jobs.filter(pl.col("state") == "NODE_FAIL")
    assert nf.height > 0 and nf["exit_code"].null_count() == nf.height
    assert all(f == ["exit_code_unknown"] for f in nf["data_flags"].to_list())
    oom = d.jobs.filter(pl.col("state") == "OUT_OF_MEMORY")
    assert set(zip(oom["exit_code"], oom["signal"], strict=True)) == {(0, 125)}


def test_python_whitespace_table():
    assert set(WHITESPACE) == {chr(c) for c in range(0x110000) if chr(c).isspace()}


def test_values_with_surrounding_whitespace_parse_as_before():
    # sacct never pads, but a hand-edited dump may: the old reader stripped every value
    text = (
        "JobID|State|Start|End|Elapsed|NNodes|AllocTRES\n"
        " 7 | COMPLETED |2024-06-01T00:00:00 | 2024-06-01T01:00:00| 01:00:00 | 2 |gres/gpu=16\n"
    )
    r = row(slurm.parse_sacct_parsable(text).jobs, " 7 ")
    assert (r["state"], r["n_nodes"], r["elapsed_s"], r["n_gpus"]) == ("COMPLETED", 2, 3600, 16)
    assert (r["start"], r["end"]) == (utc(2024, 6, 1, 0), utc(2024, 6, 1, 1))


# ------------------------------------------------------------------------------------------------
# issue 15: damaged input gives the right value or a visible flag
# ------------------------------------------------------------------------------------------------


def test_json_nodes_only_under_job_resources():
    path = SYN / "json_job_resources.json"
    with pytest.warns(
        SacctWarning, match=r"json_job_resources\.json.*nodes were taken from job_resources"
    ):
        d = slurm.read_sacct_json(path)
    j = d.jobs
    # 300: job_resources.nodes.list "gpu[001-004]" (v0.0.42 object), allocation_nodes 4
    r = row(j, "300")
    assert r["nodes"] == ["gpu001", "gpu002", "gpu003", "gpu004"] and r["n_nodes"] == 4
    assert r["NodeList"] == "gpu[001-004]" and r["data_flags"] == ["nodes_from_job_resources"]
    # 301: job_resources.nodes as a host list string; 302: allocated_nodes[].nodename only
    assert row(j, "301")["nodes"] == ["gpu005", "gpu006"]
    assert row(j, "302")["nodes"] == ["gpu007", "gpu009"]
    assert row(j, "302")["NodeList"] == "gpu[007,009]"
    # 303: 4 allocated nodes but no names anywhere: unknown, not an empty list
    r = row(j, "303")
    assert r["nodes"] is None and r["n_nodes"] == 4 and r["data_flags"] == ["nodes_missing"]
    # 304: top-level nodes present: nothing changed, nothing flagged
    assert row(j, "304")["nodes"] == ["gpu011", "gpu012"] and row(j, "304")["data_flags"] == []
    q = {r["check"]: r for r in d.quality.to_dicts()}
    assert q["nodes_from_job_resources"]["n_series"] == 3
    assert q["nodes_from_job_resources"]["action"] == "corrected"
    assert "jobs[0] (300)" in q["nodes_from_job_resources"]["detail"]
    assert q["nodes_missing"]["n_series"] == 1 and "jobs[3] (303)" in q["nodes_missing"]["detail"]
    assert d.quality.schema == pl.Schema(QUALITY_SCHEMA)


def test_json_zero_exit_of_oom_node_fail_failed_is_unknown():
    path = SYN / "json_damage_22_05.json"
    with pytest.warns(
        SacctWarning, match=r"json_damage_22_05\.json.*exit code 0 with state FAILED"
    ):
        d = slurm.read_sacct_json(path)
    j = d.jobs
    for jid in ("400", "401", "402"):  # OOM, NODE_FAIL, FAILED, all "SUCCESS"/0 in the JSON
        r = row(j, jid)
        assert (r["exit_code"], r["signal"], r["ExitCode"]) == (None, None, None), jid
        assert r["data_flags"] == ["exit_code_unknown"]
    assert (row(j, "403")["exit_code"], row(j, "403")["signal"]) == (0, 0)  # COMPLETED: kept
    assert (row(j, "404")["exit_code"], row(j, "404")["signal"]) == (0, 125)  # SIGNALED 125: kept
    q = d.quality.filter(pl.col("check") == "exit_code_unknown").to_dicts()[0]
    # the records are kept (they are in d.jobs above), their exit codes flagged unknown
    assert (q["action"], q["n_series"]) == ("flagged", 3)
    assert "jobs[0] (400)" in q["detail"] and "jobs[2] (402)" in q["detail"]


def test_real_node_fail_has_no_exit_code_in_either_format():
    # scripts/slurm_fixtures_damage.sh: a job whose node went DOWN under it (Slurm 22.05.8)
    ids = json.loads((REAL / "damage" / "jobs.json").read_text())
    raw = (REAL / "damage" / "sacct_parsable2.txt").read_text().splitlines()
    line = next(i for i, ln in enumerate(raw, 1) if ln.startswith(f"{ids['node_fail']}|"))
    assert raw[line - 1].split("|")[4:6] == ["NODE_FAIL", "0:0"]  # what sacct printed
    with pytest.warns(SacctWarning, match=rf"sacct_parsable2\.txt:{line}: .*NODE_FAIL"):
        text = slurm.read_sacct_parsable(REAL / "damage" / "sacct_parsable2.txt")
    js = slurm.read_sacct_json(REAL / "damage" / "sacct.json")
    for d in (text, js):
        r = row(d.jobs, str(ids["node_fail"]))
        assert (r["state"], r["exit_code"], r["signal"]) == ("NODE_FAIL", None, None)
        assert r["data_flags"] == ["exit_code_unknown"]
    q = text.quality.filter(pl.col("check") == "exit_code_unknown").to_dicts()[0]
    assert (q["n_lines"], q["first_line"]) == (1, line)
    assert q["action"] == "flagged"  # kept, as the operations chapter says (issue 39)
    # Slurm itself replaced the non-UTF-8 bytes of the other job's name by "?"
    assert row(text.jobs, str(ids["non_utf8_name"]))["JobName"] == "caf?-??"


def test_parsable_non_utf8_names_kept_as_escapes_and_flagged():
    path = SYN / "parsable2_non_utf8.txt"
    raw = path.read_bytes().split(b"\n")
    assert b"caf\xe9" in raw[2] and b"\x82\xa0\x82\xa2" in raw[3]  # lines 3 and 4, not UTF-8
    with pytest.warns(
        SacctWarning, match=r"parsable2_non_utf8\.txt:3: bytes that are not UTF-8 on 2 line"
    ):
        d = slurm.read_sacct_parsable(path)
    # the bytes survive as \xNN text (distinct names stay distinct), never as U+FFFD
    assert row(d.jobs, "501")["JobName"] == "caf\\xe9"
    assert row(d.jobs, "502")["JobName"] == "\\x82\\xa0\\x82\\xa2"
    assert "\ufffd" not in "".join(d.jobs["JobName"].to_list())
    assert [row(d.jobs, j)["data_flags"] for j in ("500", "501", "502")] == [
        [],
        ["invalid_utf8"],
        ["invalid_utf8"],
    ]
    q = d.quality.filter(pl.col("check") == "invalid_utf8").to_dicts()[0]
    assert (q["action"], q["n_lines"], q["first_line"]) == ("flagged", 2, 3)


def test_json_non_utf8_name_kept_as_escapes_and_flagged():
    path = SYN / "json_damage_22_05.json"
    raw = path.read_bytes().split(b"\n")
    line = next(i for i, ln in enumerate(raw, 1) if b"caf\xe9" in ln)
    with pytest.warns(SacctWarning, match=rf"json_damage_22_05\.json:{line}: .*jobs\[5\]\.name"):
        d = slurm.read_sacct_json(path)
    r = row(d.jobs, "405")
    assert r["JobName"] == "caf\\xe9-\\x82\\xa0" and r["data_flags"] == ["invalid_utf8"]


def test_damaged_lines_skip_or_raise():
    path = SYN / "parsable2_damaged_lines.txt"
    # raise (default): the first problem in line order, as the line-by-line reader: line 5 cut off
    with pytest.raises(SacctParseError) as exc:
        slurm.read_sacct_parsable(path)
    assert exc.value.line == 5
    # skip: lines 3 (Elapsed 1:75:00), 5 (cut off) and 6 (month 13) left out, the rest read
    with pytest.warns(SacctWarning, match=r"parsable2_damaged_lines\.txt:3: .*Elapsed"):
        d = slurm.read_sacct_parsable(path, bad_lines="skip")
    assert d.jobs["JobID"].to_list() == ["600", "602", "605"]
    assert d.jobs["source_line"].to_list() == [2, 4, 7]
    q = {(r["check"], r["first_line"]): r for r in d.quality.to_dicts()}
    assert q[("bad_line", 5)]["action"] == "excluded" and q[("bad_line", 5)]["n_lines"] == 1
    assert "Elapsed" in q[("bad_value", 3)]["detail"] and "1:75:00" in q[("bad_value", 3)]["detail"]
    assert "2024-13-01T00:00:00" in q[("bad_value", 6)]["detail"]
    with pytest.raises(ValueError, match="bad_lines"):
        slurm.read_sacct_parsable(path, bad_lines="ignore")


def test_json_bad_record_skipped_with_its_path():
    doc = json.loads((SYN / "json_23_11.json").read_text())
    doc["jobs"][1]["time"]["start"] = "yesterday"  # a string where a number belongs: ignored
    doc["jobs"][2]["time"]["elapsed"] = float("inf")  # not a whole number: the record is bad
    with pytest.raises(SacctParseError, match=r"jobs\[2\]"):
        slurm.parse_sacct_json(doc, source="x.json")
    with pytest.warns(SacctWarning, match=r"x\.json: 1 record\(s\).*jobs\[2\]"):
        d = slurm.parse_sacct_json(doc, source="x.json", bad_lines="skip")
    assert d.jobs["JobID"].to_list() == ["200", "201"]
    assert d.quality.filter(pl.col("check") == "bad_record")["action"].to_list() == ["excluded"]


def test_one_damaged_dump_never_costs_the_others(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text('{"jobs": [ {"job_id": 1,')  # cut off
    missing = tmp_path / "never_written.txt"
    paths = [SYN / "parsable2_traps.txt", broken, SYN / "parsable2_damaged_lines.txt", missing]
    with pytest.warns(SacctWarning):
        d = slurm.read_sacct_dumps(paths)
    # traps: 10 job records; damaged lines: 3 of 6 kept; the broken and missing dumps: none
    assert d.jobs.height == 10 + 3
    assert d.meta["failed"] == [str(broken), str(missing)]
    q = d.quality
    pe = q.filter(pl.col("check") == "parse_error")
    assert pe["source"].to_list() == [str(broken), str(missing)]
    assert set(pe["action"].to_list()) == {"parse_error"}
    assert "valid JSON" in pe["detail"][0] and pe["first_line"][0] == 1
    assert q.filter(pl.col("source") == str(SYN / "parsable2_damaged_lines.txt")).height >= 3
    with pytest.raises(InputError, match="no sacct dump could be read"):
        slurm.read_sacct_dumps([broken, missing])


def test_quality_frame_of_the_real_dump_has_one_row():
    # the one thing the real 22.05.8 dump needs: the "|" in job 7's name, joined back (JobName last)
    ids = json.loads((REAL / "jobs.json").read_text())
    d = slurm.read_sacct_parsable(REAL / "sacct_parsable2.txt")
    assert d.quality.schema == pl.Schema(QUALITY_SCHEMA)
    raw = (REAL / "sacct_parsable2.txt").read_text().splitlines()
    line = next(i for i, ln in enumerate(raw, 1) if ln.startswith(f"{ids['evil']}|"))
    assert d.quality.select("check", "action", "n_lines", "first_line").rows() == [
        ("delimiter_in_free_text", "corrected", 1, line)
    ]
    flagged = d.jobs.filter(pl.col("data_flags").list.len() > 0)
    assert flagged["JobID"].to_list() == [str(ids["evil"])]


# ------------------------------------------------------------------------------------------------
# hypothesis: generated values against the per-value parsers, and a small fuzz of both readers
# ------------------------------------------------------------------------------------------------

_DIGITS = st.text("0123456789", min_size=1, max_size=3)
_DURATIONS = st.one_of(
    st.builds(lambda d, h, m, s: f"{d}-{h}:{m}:{s}", _DIGITS, _DIGITS, _DIGITS, _DIGITS),
    st.builds(lambda h, m, s: f"{h}:{m}:{s}", _DIGITS, _DIGITS, _DIGITS),
    st.builds(lambda m, s, ms: f"{m}:{s}.{ms}", _DIGITS, _DIGITS, _DIGITS),
    st.builds(lambda d, h: f"{d}-{h}", _DIGITS, _DIGITS),
    st.sampled_from(["", "INVALID", "UNLIMITED", "1:2:3:4", "-1", "12:75", "00:00:60"]),
    st.text("0123456789:-. ", max_size=12),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_DURATIONS, min_size=1, max_size=20))
def test_vectorised_durations_equal_parse_duration(values):
    frame = pl.DataFrame({"v": values})
    p = C.duration_seconds("v", "_t_")
    got = C.run_stages(frame, [p])
    for v, secs, bad in zip(values, got[p.out["value"]], got[p.out["bad"]], strict=True):
        try:
            want = slurm.parse_duration(v)
        except ValueError:
            assert bad and secs is None, v
        else:
            assert not bad and secs == want, v


_HOST = st.from_regex(r"[a-z]{1,4}[0-9]{0,2}", fullmatch=True)
_RANGE = st.builds(
    lambda a, w, n: f"{a:0{w}d}" if n == 0 else f"{a:0{w}d}-{a + n:0{w}d}",
    st.integers(0, 120),
    st.integers(1, 3),
    st.integers(0, 12),
)


@settings(max_examples=300, deadline=None)
@given(_HOST, st.lists(_RANGE, min_size=1, max_size=5), st.booleans())
def test_fast_host_list_expansion_equals_python_hostlist(prefix, ranges, bracket):
    text = f"{prefix}[{','.join(ranges)}]" if bracket else prefix
    try:
        want = hostlist.expand_hostlist(text)
    except hostlist.BadHostlist:
        with pytest.raises(ValueError):
            slurm.expand_nodelist(text)
    else:
        assert slurm.expand_nodelist(text) == want


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.data())
def test_fuzz_small_both_readers_raise_only_their_own_errors(tmp_path, data):
    """A few hundred mutated inputs per run (the seeded scripts in tests/fuzz do 20k each)."""
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    src = data.draw(
        st.sampled_from(
            [REAL / "sacct_parsable2.txt", SYN / "parsable2_traps.txt", SYN / "json_24_11.json"]
        )
    )
    path = tmp_path / f"fuzz{src.suffix}"
    path.write_bytes(M.mutate(src.read_bytes(), rng, []))
    mode = data.draw(st.sampled_from(["raise", "skip"]))
    try:
        if src.suffix == ".json":
            slurm.read_sacct_json(path, bad_lines=mode)
        else:
            slurm.read_sacct_parsable(path, bad_lines=mode)
    except SacctParseError as exc:
        assert str(path) in str(exc)


# ------------------------------------------------------------------------------------------------
# trainperf.jobs: the job statistics (documented under trainperf.slurm in 0.1.0) and their results
# ------------------------------------------------------------------------------------------------


def test_job_statistics_live_in_trainperf_jobs_and_stay_importable_from_slurm_with_a_warning():
    for name in (
        "successful_jobs",
        "longest_job_and_task",
        "share_by_state",
        "workload_marginals",
        "job_gpu_utilisation",
        "FINAL_STATES",
        "SIZE_BINS",
    ):
        with pytest.warns(DeprecationWarning, match=f"trainperf.jobs.{name}"):
            assert getattr(slurm, name) is getattr(jobs, name), name
        if callable(getattr(jobs, name)):
            assert getattr(jobs, name).__module__.startswith("trainperf.jobs."), name


def test_longest_successful_job(stats):
    out = jobs.longest_successful_job(stats.jobs)
    # successful (COMPLETED, exit 0): jobs 1 (1 h), 2 (2 h), 7 (3 h); job 4 ran 8 days but was
    # CANCELLED, job 5 a day but TIMEOUT: the longest successful one is job 7, 10800 s = 0.125 days
    assert out.to_dicts() == [
        {
            "what": "successful job",
            "JobID": "7",
            "name": None,
            "state": "COMPLETED",
            "n_nodes": 1,
            "n_gpus": 8,
            "start": utc(2024, 6, 1),
            "end": utc(2024, 6, 1, 3),
            "elapsed_s": 10800,
            "elapsed_days": 10800 / 86400,
        }
    ]
    assert jobstats.longest_job_and_task(stats.jobs)["JobID"].to_list() == [
        "4"
    ]  # the cancelled one
    none = jobs.longest_successful_job(stats.jobs.filter(pl.col("state") != "COMPLETED"))
    assert none.height == 0 and none.columns == out.columns


def test_job_gpu_utilisation_coverage_by_hand():
    # job 15 runs [0, 10) min on n3, whose GPUs have samples at minutes 0..6 only
    text = (
        "JobID|State|Start|End|Elapsed|NNodes|NodeList|AllocTRES\n"
        "15|COMPLETED|2024-06-01T00:00:00|2024-06-01T00:10:00|00:10:00|1|n3|gres/gpu=8,node=1\n"
    )
    jobs = slurm.parse_sacct_parsable(text).jobs
    r = jobstats.job_gpu_utilisation(jobs, util_frame()).to_dicts()[0]
    # samples every 60 s from 00:00 to 00:06: span 360 s + one interval 60 s = 420 s of 600 s
    assert (r["first_sample"], r["last_sample"]) == (utc(2024, 6, 1, 0, 0), utc(2024, 6, 1, 0, 6))
    assert (r["interval_s"], r["window_s"]) == (60.0, 600.0)
    assert r["coverage"] == pytest.approx(420 / 600)
    # jobs 10, 11 and 12 of UTIL_JOBS are covered for their whole window: 4, 2 and 2 minutes
    full = {
        x["JobID"]: x["coverage"]
        for x in jobstats.job_gpu_utilisation(
            slurm.parse_sacct_parsable(UTIL_JOBS).jobs, util_frame()
        ).to_dicts()
    }
    assert full == {"10": 1.0, "11": 1.0, "12": 1.0}


_HEADERS = [
    ["JobID", "State", "Elapsed", "JobName"],
    ["JobID", "JobName", "State", "Elapsed"],
    ["JobID", "JobIDRaw", "Start", "End", "NNodes", "NodeList", "AllocTRES", "Timelimit"],
]
_VALUES = {
    "jobid": ["1", "2.batch", "3_4", "3_[5-6]", "7+1", "7+0.0", "8.extern", "x", ""],
    "jobidraw": ["10", "10.batch", "11", "bad"],
    "state": ["COMPLETED", "CANCELLED by 0", "FAILED", "TIMEOUT", "CANCELLED+", "weird", ""],
    "elapsed": ["00:01:00", "1-02:03:04", "17:18.067", "INVALID", "12:75", "", "5"],
    "jobname": ["a", "b|c", "two\nlines", "", "x|y|z", "\n"],
    "start": ["2024-06-01T10:00:00", "Unknown", "None", "1717200000", "0", "2024-02-30T00:00:00"],
    "end": ["2024-06-01T11:00:00", "Unknown", "2024-06-01 11:00:00", "2024-06-01T11:00"],
    "nnodes": ["1", "2", "", "x"],
    "nodelist": ["gpu001", "gpu[001-002]", "None assigned", "gpu[2-1]"],
    "alloctres": ["gres/gpu=8,node=1", "", "cpu=2", "gres/gpu=x"],
    "timelimit": ["01:00:00", "UNLIMITED", "Partition_Limit", "soon"],
}


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_generated_dumps_read_as_the_reference_reader_reads_them(data):
    """Small generated dumps (delimiters and newlines in names, blank lines, bad values): the
    vectorised reader gives the old reader's frames, or the same error at the same line."""
    names = data.draw(st.sampled_from(_HEADERS))
    lines = ["|".join(names)]
    for _ in range(data.draw(st.integers(0, 6))):
        if data.draw(st.integers(0, 9)) == 0:
            lines.append(data.draw(st.sampled_from(["", "  ", "orphan"])))
            continue
        lines.append("|".join(data.draw(st.sampled_from(_VALUES[n.lower()])) for n in names))
    text = "\n".join(lines) + data.draw(st.sampled_from(["", "\n"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            old = slurm_reference.parse_sacct_parsable(text)
        except slurm_reference.SacctParseError as exc:
            with pytest.raises(SacctParseError) as new_exc:
                slurm.parse_sacct_parsable(text)
            # a dump with two bad lines: the readers check the columns in different orders, so
            # each may name another of them; the line the new one names is bad by the old reader
            # too (the header and that line alone fail there)
            got = new_exc.value
            if got.line != exc.line:
                rows = text.splitlines()
                with pytest.raises((slurm_reference.SacctParseError, ValueError)):
                    slurm_reference.parse_sacct_parsable(rows[0] + "\n" + rows[got.line - 1])
            return
        except ValueError as exc:  # e.g. Python ints beyond 64 bits in the old reader
            pytest.skip(f"old reader: {exc}")
        new = slurm.parse_sacct_parsable(text)
    for name in ("jobs", "steps"):
        a, b = getattr(old, name), getattr(new, name)
        # the one documented change since the old reader: an exact repeat of a record is dropped
        # (trainperf.slurm.checks, duplicate_record); drawn dumps of a few values repeat records
        key = [c for c in a.columns if c not in ("source_line", "data_flags")]
        a = a.filter(pl.struct(key).is_first_distinct()) if a.height else a
        assert b.select(a.columns).to_dicts() == a.to_dicts(), text


def test_numbers_beyond_64_bits_are_bad_values_not_errors():
    # found by tests/fuzz/fuzz_sacct_parsable.py: a TimelimitRaw of 30 nines (minutes) and a dump
    # without JobID whose JobIDRaw is not an id
    text = (
        "JobIDRaw|State|TimelimitRaw\n"
        "1|COMPLETED|999999999999999999999999999999\n"  # line 2: 6e31 s does not fit in Int64
        "x|COMPLETED|5\n"  # line 3: not a job id
        "2|COMPLETED|5\n"
    )
    with pytest.raises(SacctParseError) as exc:
        slurm.parse_sacct_parsable(text, source="big.txt")
    assert exc.value.line == 3 and "JobID" in str(exc.value)  # the JobID check comes first
    d = slurm.parse_sacct_parsable(text, source="big.txt", bad_lines="skip")
    assert d.jobs["JobIDRaw"].to_list() == ["2"] and d.jobs["timelimit_s"].to_list() == [300]
    bad = d.quality.filter(pl.col("check") == "bad_value").select("first_line", "detail").rows()
    assert [ln for ln, _ in bad] == [3, 3, 2]
    assert "'x'" in bad[0][1] and "'999999999999999999999999999999'" in bad[2][1]


def test_job_id_raw_equal_padded_and_different_texts_read_as_the_reference_reader():
    # JobIDRaw takes JobID's number where the two texts are equal (trainperf.slurm.columns
    # job_id_number same_as); padded equal texts, padded different ones and array tasks (raw
    # ids of their own) must still give the old reader's ids
    text = (
        "JobID|JobIDRaw|State\n"
        " 12 | 12 |COMPLETED\n"  # equal, padded: both parsed again stripped
        "13_1|14|COMPLETED\n"  # array task: its own raw id
        "15| 15|COMPLETED\n"  # different texts, same number
        "16.batch|16.batch|COMPLETED\n"
    )
    with pytest.warns(SacctWarning, match="missing"):  # no Start, End, ... in this dump
        new = slurm.parse_sacct_parsable(text)
    with pytest.warns(Warning):
        old = slurm_reference.parse_sacct_parsable(text)
    for name in ("jobs", "steps"):
        a, b = getattr(old, name), getattr(new, name)
        assert b.select(a.columns).to_dicts() == a.to_dicts()
    assert new.jobs["job_id_raw"].to_list() == [12, 14, 15]  # the JobIDRaw numbers, read by eye
    assert new.steps["job_id_raw"].to_list() == [16]


def test_list_columns_with_separator_characters_in_names():
    # List(Utf8) columns are built by joining each list with a character none of the names holds
    # and splitting in polars; names holding every candidate take the plain conversion
    names = [f"n{i}" for i in range(100)]
    for vals in (
        [names[:3], [], None, [""], ["a", ""], *[[n] for n in names]],
        [["a\x1fb", "c\x1ed", "e\x00f"], [], None, *[[n] for n in names]],
        [["a\x1fb"], ["x"], [], *[[n] for n in names]],
    ):
        got = _list_series("nodes", vals)
        assert got.dtype == pl.List(pl.Utf8)
        assert got.to_list() == vals


def test_job_statistics_under_their_old_slurm_name_warn_naming_trainperf_jobs():
    # trainperf.slurm documented the job statistics as its own in 0.1.0; they live in trainperf.jobs
    with pytest.warns(DeprecationWarning, match=r"import it from trainperf\.jobs"):
        old = slurm.share_by_state
    assert old is jobstats.share_by_state
    assert "share_by_state" not in slurm.__all__
    with pytest.raises(AttributeError):
        slurm.no_such_name  # noqa: B018
