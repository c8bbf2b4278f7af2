"""sacct dumps, round 3 (issue 26): one bad record costs only itself, a lone surrogate escape costs
nothing else, and job names in the Slurm tables are escaped exactly once. Expected values by hand."""

from __future__ import annotations

import ast
import json
import warnings
from pathlib import Path

import polars as pl
import pytest

from trainperf import jobs as jobstats
from trainperf import slurm
from trainperf.report.display import Col, table

ROOT = Path(__file__).resolve().parents[1]
SYN = Path(__file__).parent / "data" / "slurm" / "synthetic"


def test_one_bad_json_record_costs_only_that_record(tmp_path):
    # json_23_11.json holds jobs 200, 201, 210; job 210's elapsed is made 1.5 (not whole seconds)
    doc = json.loads((SYN / "json_23_11.json").read_text())
    assert [j["job_id"] for j in doc["jobs"]] == [200, 201, 210]
    doc["jobs"][2]["time"]["elapsed"] = {"set": True, "infinite": False, "number": 1.5}
    p = tmp_path / "dump.json"
    p.write_text(json.dumps(doc))
    with pytest.warns(slurm.SacctWarning, match=r"dump\.json: 1 record\(s\).*jobs\[2\]"):
        d = slurm.read_sacct(p)
    assert d.jobs["JobID"].to_list() == ["200", "201"]  # the two good records, not nothing
    q = d.quality.filter(pl.col("check") == "bad_record").row(0, named=True)
    assert q["action"] == "excluded" and q["n_series"] == 1 and "jobs[2]" in q["detail"]
    # the strict mode is still there for who wants it
    with pytest.raises(slurm.SacctParseError, match=r"jobs\[2\]"):
        slurm.read_sacct(p, bad_lines="raise")


def test_lone_surrogate_in_one_dump_costs_nothing_else(tmp_path):
    text = (SYN / "json_23_11.json").read_text()
    line = text[: text.index('"pretrain"')].count("\n") + 1
    bad = tmp_path / "a.json"
    bad.write_text(text.replace('"pretrain"', '"pre\\ud800train"', 1))
    good = tmp_path / "b.json"  # jobs 300-304 (json_job_resources.json): none shared with a.json
    good.write_text((SYN / "json_job_resources.json").read_text())
    n_good = 5
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        d = slurm.read_sacct_dumps([bad, good])
    # every record of both dumps: 3 of a.json + 5 of b.json
    assert d.jobs.height == 3 + n_good
    assert "pre\\ud800train" in d.jobs["JobName"].to_list()  # kept as the escape text
    q = d.quality.filter(pl.col("check") == "lone_surrogate").row(0, named=True)
    assert q["source"] == str(bad) and q["first_line"] == line and "jobs[0].name" in q["detail"]
    assert any(f"a.json:{line}" in str(x.message) for x in w)


def _cell(label: str) -> str:
    nb = json.loads((ROOT / "notebooks" / "slurm_jobs.ipynb").read_text())
    for c in nb["cells"]:
        src = "".join(c["source"])
        if f"#| label: {label}" in src:
            return src
    raise AssertionError(label)


def _run_cell(src: str, ns: dict):
    tree = ast.parse(src)
    last = tree.body.pop()
    exec(compile(tree, "<cell>", "exec"), ns)  # noqa: S102 - the project's own notebook
    return eval(compile(ast.Expression(last.value), "<cell>", "eval"), ns)  # noqa: S307


def test_job_name_in_the_slurm_tables_escaped_exactly_once():
    pypandoc = pytest.importorskip("pypandoc")
    d = slurm.read_sacct(SYN / "json_23_11.json")
    jobs = d.jobs.with_columns(pl.lit("<script>x</script> & co").alias("JobName"))
    t = _run_cell(_cell("tbl-slurm-successful-longest"), {"pl": pl, "jobs": jobs, "Col": Col,
                                                              "table": table, "jobstats": jobstats})  # fmt: skip
    html = " ".join(pypandoc.convert_text(t.markdown, "html", format="markdown").split())
    # the name shows as the reader typed it: &lt; once in the HTML, never &amp;lt; (seen as "&lt;")
    assert "&lt;script&gt;x&lt;/" in html and "&amp;lt;" not in html and "<script>" not in html
    assert "&amp; co" in html and "&amp;amp;" not in html


def test_quality_detail_escaped_exactly_once():
    pypandoc = pytest.importorskip("pypandoc")
    q = pl.DataFrame({"source": ["x/a.json"], "check": ["bad_record"], "action": ["excluded"],
                      "n_series": [1], "n_gpus": [None], "n_samples": [None], "n_lines": [None],
                      "first_line": [3], "detail": ["value '<b>' & more"]},
                     schema_overrides={"n_gpus": pl.Int64, "n_samples": pl.Int64, "n_lines": pl.Int64})  # fmt: skip

    class D:
        quality = q

    t = _run_cell(_cell("tbl-slurm-quality"), {"pl": pl, "data": D, "paths": ["x/a.json"]})
    html = pypandoc.convert_text(t.markdown, "html", format="markdown")
    assert "value ‘&lt;b&gt;’ &amp; more" in html or "value '&lt;b&gt;' &amp; more" in html
    assert "&amp;lt;" not in html
