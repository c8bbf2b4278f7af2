"""The accounting's GPU type against the config's accelerator (trainperf.slurm.gpu_type).

Expected rows are worked out by hand from the gres types below: Slurm writes a typed allocation as
``gres/gpu:<type>`` with the site's gres.conf ``Type=`` (https://slurm.schedmd.com/gres.conf.html),
e.g. ``nvidia_h100_80gb_hbm3`` when the type is autodetected from NVML.
"""

from __future__ import annotations

import warnings

import polars as pl
import pytest
from helpers import ROOT, notebook_cell

from trainperf import slurm
from trainperf.quality import QUALITY_SCHEMA
from trainperf.slurm import SacctWarning, accelerator_family, gpu_type_mismatch


def _jobs(types: list[str | None]) -> pl.DataFrame:
    # one record per type, on lines 2, 3, ... (line 1 is the header of a parsable2 dump)
    return pl.DataFrame(
        {"gpu_type": types, "source_line": list(range(2, 2 + len(types)))},
        schema={"gpu_type": pl.String, "source_line": pl.Int64},
    )


@pytest.mark.parametrize(
    ("canonical", "family"),
    [
        ("H100 SXM", "h100"),
        ("GB300", "gb300"),
        ("MI355X", "mi355x"),
        ("L40S", "l40s"),
        ("RTX 4090", None),
    ],
)
def test_family_token_of_table_names(canonical, family):
    assert accelerator_family(canonical) == family


def test_same_family_in_any_spelling_is_not_flagged():
    jobs = _jobs(["h100", "H100", "nvidia_h100_80gb_hbm3", None, ""])
    assert gpu_type_mismatch(jobs, "H100 SXM", source="d.txt").height == 0


def test_other_family_flagged_once_per_type_with_count_and_first_line():
    # a100 on lines 3 and 5, gb200 on line 6; h100 (line 2) agrees; "big" is a site's own word (line 4)
    jobs = _jobs(["h100", "a100", "big", "a100", "gb200"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        q = gpu_type_mismatch(jobs, "H100 SXM", source="d.txt")
    assert [str(w.message).split(" names")[0] for w in caught] == [
        "d.txt:3: AllocTRES gres/gpu:a100",
        "d.txt:6: AllocTRES gres/gpu:gb200",
    ]
    assert all(w.category is SacctWarning for w in caught)
    assert q.schema == pl.Schema(QUALITY_SCHEMA)
    assert q.select("check", "action", "n_samples", "first_line").rows() == [
        ("gpu_type_differs", "flagged", 2, 3),
        ("gpu_type_differs", "flagged", 1, 6),
    ]
    assert "config's accelerator is H100 SXM" in q["detail"][0]


def test_longer_token_is_not_its_substring():
    # "gb200" holds the letters of "b200" but is another part: a B200 config flags it, a GB200 one not
    jobs = _jobs(["gb200"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SacctWarning)
        assert gpu_type_mismatch(jobs, "B200").height == 1
    assert gpu_type_mismatch(jobs, "GB200").height == 0


def test_several_dumps_give_no_line():
    q = gpu_type_mismatch(
        _jobs(["mi300x"]), "H100 SXM", source="a.txt, b.txt", lines=False, warn=False
    )
    assert q["first_line"].to_list() == [None] and q["source"].to_list() == ["a.txt, b.txt"]


def test_unknown_accelerator_or_no_types_gives_nothing():
    assert gpu_type_mismatch(_jobs(["a100"]), "no such GPU", warn=False).height == 0
    assert gpu_type_mismatch(_jobs([None]), "H100 SXM", warn=False).height == 0


def test_bundled_dump_agrees_with_its_h100_config():
    # the synthetic history allocates gres/gpu:h100 (trainperf.synthetic.slurm_sacct)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SacctWarning)
        data = slurm.read_sacct_dumps([ROOT / "data/slurm/synthetic/sacct_parsable2.txt"])
    assert data.jobs["gpu_type"].drop_nulls().unique().to_list() == ["h100"]
    assert gpu_type_mismatch(data.jobs, "H100 SXM").height == 0
    assert gpu_type_mismatch(data.jobs, "MI300X", warn=False)["n_samples"].to_list() == [
        data.jobs["gpu_type"].drop_nulls().len()
    ]


def test_notebook_lists_the_differing_type_in_its_quality_table():
    # the chapter's reading cell, run as papermill would with the config's accelerator injected
    cell = notebook_cell("slurm_jobs.ipynb", "slurm.read_sacct_dumps(")
    ns = {
        "dump_paths": [str(ROOT / "data/slurm/synthetic/sacct_parsable2.txt")],
        "format": "auto", "tz": "UTC", "synthetic": False, "accelerator": "MI300X",
    }  # fmt: skip
    exec(compile(cell, "<slurm_jobs reading cell>", "exec"), ns)  # noqa: S102 - the project's notebook
    q = ns["data"].quality.filter(pl.col("check") == "gpu_type_differs")
    assert q["detail"].str.contains("gres/gpu:h100 names H100").to_list() == [True]
    assert q["source"].to_list() == ["sacct_parsable2.txt"]
    ns["accelerator"] = "H100 SXM"
    exec(compile(cell, "<slurm_jobs reading cell>", "exec"), ns)  # noqa: S102
    assert "gpu_type_differs" not in ns["data"].quality["check"].to_list()
