"""Damaged sacct records that parse (fresh-user trial): a negative NNodes, an exact repeat of a
record, End before Start. Each gets a quality row naming the dump and the line; the value is
corrected or left empty, or the repeat dropped, so totals agree with the undamaged dump. The
expected numbers are read off the lines of the bundled dump (quoted below)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import polars as pl
import pytest

from trainperf import slurm
from trainperf.errors import InputError
from trainperf.jobs import share_by_size

# the bundled synthetic dumps carry 36 FAILED/OUT_OF_MEMORY/NODE_FAIL records with exit code 0:0,
# flagged exit_code_unknown on every read (tests/test_slurm.py checks that warning); expected here
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*exit_code_unknown:trainperf.slurm.fields.SacctWarning"
)

ROOT = Path(__file__).resolve().parents[1]
DUMP = ROOT / "data/slurm/synthetic/sacct_parsable2.txt"
JSON_DUMP = ROOT / "data/slurm/synthetic/sacct.json"

# line 31 of the bundled dump (1-based, the header is line 1):
# 100008|...|05:52:52|08:00:00|2|240|gpu[001-002]|...,gres/gpu=16,...|debug-2n
LINE_100008 = 31
# line 70: 100017|...|2024-06-07T12:22:39|2024-06-07T14:04:40|01:42:01|02:00:00|4|480|gpu[001-004]|
#   ...,gres/gpu=32,...|nccl-tests -> 32 GPUs x 1:42:01 = 32 * 6121 s / 3600 = 54.4089 GPU-h
LINE_100017 = 70


def lines() -> list[str]:
    return DUMP.read_text().splitlines()


def read(tmp_path: Path, text: list[str]) -> tuple[slurm.SacctData, dict[str, list[dict]]]:
    p = tmp_path / "sacct.txt"
    p.write_text("\n".join(text) + "\n")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        d = slurm.read_sacct_dumps([p])
    q: dict[str, list[dict]] = {}
    for row in d.quality.iter_rows(named=True):
        q.setdefault(row["check"], []).append(row)
        assert any(f"{p}" in str(x.message) for x in w)
    return d, q


@pytest.fixture(scope="module")
def clean() -> slurm.SacctData:
    return slurm.read_sacct_dumps([DUMP])


def test_bundled_dump_has_none_of_this_damage(clean):
    assert not clean.quality.filter(
        pl.col("check").is_in(["duplicate_record", "out_of_range", "end_before_start"])
    ).height


def test_negative_nnodes_corrected_from_nodelist(tmp_path, clean):
    t = lines()
    f = t[LINE_100008 - 1].split("|")
    assert f[0] == "100008" and f[12] == "2" and f[14] == "gpu[001-002]"
    f[12] = "-5"
    t[LINE_100008 - 1] = "|".join(f)
    d, q = read(tmp_path, t)
    row = q["out_of_range"][0]
    assert (row["action"], row["first_line"], row["n_lines"]) == ("corrected", LINE_100008, 1)
    assert d.jobs.filter(pl.col("JobID") == "100008")["n_nodes"].to_list() == [2]  # gpu001, gpu002
    a, b = share_by_size(d.jobs), share_by_size(clean.jobs)
    assert a["n_jobs"].sum() == b["n_jobs"].sum()  # the job keeps its place in the size table
    assert a["n_jobs"].to_list() == b["n_jobs"].to_list()


def test_negative_nnodes_without_nodelist_left_empty(tmp_path):
    t = lines()
    f = t[LINE_100008 - 1].split("|")
    f[12], f[14] = "-5", "None assigned"
    t[LINE_100008 - 1] = "|".join(f)
    d, q = read(tmp_path, t)
    assert q["out_of_range"][0]["action"] == "excluded"
    assert d.jobs.filter(pl.col("JobID") == "100008")["n_nodes"].to_list() == [None]


def test_repeated_job_record_counted_once(tmp_path, clean):
    t = lines()
    assert t[LINE_100017 - 1].startswith("100017|")
    t.insert(LINE_100017, t[LINE_100017 - 1])  # the copy is line 71
    d, q = read(tmp_path, t)
    row = q["duplicate_record"][0]
    assert (row["action"], row["first_line"], row["n_lines"]) == ("excluded", LINE_100017 + 1, 1)
    assert d.jobs.height == clean.jobs.height
    assert d.jobs.filter(pl.col("JobID") == "100017")["gpu_hours"].to_list() == [
        pytest.approx(32 * 6121 / 3600)
    ]
    assert d.jobs["gpu_hours"].sum() == pytest.approx(clean.jobs["gpu_hours"].sum())


def test_requeued_records_of_one_jobid_are_not_repeats(tmp_path, clean):
    t = lines()
    f = t[LINE_100017 - 1].split("|")
    f[5] = "REQUEUED"  # same JobID, another state: a different record (sacct --duplicates)
    t.insert(LINE_100017, "|".join(f))
    d, q = read(tmp_path, t)
    assert "duplicate_record" not in q
    assert d.jobs.height == clean.jobs.height + 1


def test_end_before_start_left_empty(tmp_path, clean):
    t = lines()
    f = t[LINE_100017 - 1].split("|")
    assert (f[8], f[9]) == ("2024-06-07T12:22:39", "2024-06-07T14:04:40")
    f[9] = "2020-01-01T00:00:00"
    t[LINE_100017 - 1] = "|".join(f)
    d, q = read(tmp_path, t)
    row = q["end_before_start"][0]
    assert (row["action"], row["first_line"]) == ("excluded", LINE_100017)
    job = d.jobs.filter(pl.col("JobID") == "100017")
    assert job["start"].to_list() == [None] and job["end"].to_list() == [None]
    assert job["gpu_hours"].to_list() == [pytest.approx(32 * 6121 / 3600)]  # from Elapsed
    assert d.jobs.height == clean.jobs.height


def test_json_repeated_record_counted_once(tmp_path):
    doc = json.loads(JSON_DUMP.read_text())
    n = len(doc["jobs"])
    clean = slurm.read_sacct_dumps([JSON_DUMP])
    doc["jobs"].insert(5, doc["jobs"][4])
    p = tmp_path / "sacct.json"
    p.write_text(json.dumps(doc))
    with pytest.warns(slurm.SacctWarning, match="duplicate_record: excluded"):
        d = slurm.read_sacct_dumps([p])
    assert len(doc["jobs"]) == n + 1 and d.jobs.height == clean.jobs.height
    assert d.jobs["gpu_hours"].sum() == pytest.approx(clean.jobs["gpu_hours"].sum())


def test_no_readable_dump_names_the_file_once(tmp_path):
    p = tmp_path / "sacct_empty.txt"
    p.write_text("")
    with pytest.raises(InputError) as err, pytest.warns(slurm.SacctWarning, match="dump not read"):
        slurm.read_sacct_dumps([p])
    assert str(err.value).count(str(p)) == 1, str(err.value)
