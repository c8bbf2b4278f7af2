"""Output safety of ``trainperf report --out`` (issue 26): the folders it refuses, the manifest it
writes, files it did not write never touched, and output modes that follow the umask."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from trainperf.errors import ConfigError
from trainperf.report import cli, outdir
from trainperf.report import job as report

ROOT = Path(__file__).resolve().parents[1]


def _mode(p: Path) -> int:
    return stat.S_IMODE(os.stat(p).st_mode)


@pytest.mark.parametrize(
    ("out", "why"),
    [
        ("/", "the file system root"),
        (str(Path.home()), "your home folder"),
        (str(ROOT), "the repository root"),
        ("..", "a folder above the repository root"),
    ],
)
def test_refused_folders(out, why):
    with pytest.raises(ConfigError, match=f"--out {out}: is {why}"):
        outdir.check_out(out, ROOT, force=True)  # even with --force


def test_cli_refuses_root_in_one_line_before_anything_runs(capsys):
    assert cli.main(["report", "--out", "/"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--out /: is the file system root" in err[0]


def test_foreign_non_empty_folder_refused_without_force(tmp_path):
    (tmp_path / "thesis.tex").write_text("mine")
    with pytest.raises(ConfigError, match=r"did not create \(thesis\.tex\).*--force"):
        outdir.claim_out(tmp_path, ROOT)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["thesis.tex"]  # nothing written


def test_force_refuses_a_folder_holding_a_name_it_would_replace(tmp_path):
    (tmp_path / "comparison.csv").write_text("my own numbers")
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "index.html").write_text("my homepage")
    with pytest.raises(
        ConfigError, match=r"holds comparison\.csv, site, which a report would replace"
    ):
        outdir.claim_out(tmp_path, ROOT, force=True)
    assert (tmp_path / "comparison.csv").read_text() == "my own numbers"
    assert (tmp_path / "site" / "index.html").read_text() == "my homepage"


def test_empty_and_new_folders_and_own_manifest_accepted(tmp_path):
    new = tmp_path / "a" / "b"
    assert outdir.claim_out(new, ROOT) == new.resolve()
    doc = json.loads((new / outdir.MANIFEST).read_text())
    assert doc["written_by"] == "trainperf" and "site" in doc["entries"]
    (new / "values.yml").write_text("x: 1\n")  # what a run writes
    assert outdir.claim_out(new, ROOT) == new.resolve()  # its own folder again: no --force needed


def _tiny_run(out: Path, **kw) -> dict:
    return report.run_report(out=out, notebooks=[], run_batches=False, use_quarto=False,
                             progress=False, log=lambda *_: None, **kw)  # fmt: skip


def test_force_writes_beside_user_files_and_never_touches_them(tmp_path):
    out = tmp_path / "mixed"
    out.mkdir()
    mine = out / "notes.txt"
    mine.write_text("my notes")
    os.utime(mine, ns=(1_000_000_000, 1_000_000_000))
    with pytest.raises(ConfigError, match="did not create"):
        _tiny_run(out)
    _tiny_run(out, force_out=True)
    _tiny_run(out)  # the manifest is there now: a second run needs no --force
    assert mine.read_text() == "my notes" and os.stat(mine).st_mtime_ns == 1_000_000_000
    doc = json.loads((out / outdir.MANIFEST).read_text())
    assert "notes.txt" not in doc["files"] and "notes.txt" not in doc["entries"]
    assert {"comparison.csv", "values.yml", "site/index.html"} <= set(doc["files"])


@pytest.mark.parametrize(
    ("umask", "dmode", "fmode"), [(0o022, 0o755, 0o644), (0o027, 0o750, 0o640)]
)
def test_output_modes_follow_the_umask(tmp_path, umask, dmode, fmode):
    old = os.umask(umask)
    try:
        _tiny_run(tmp_path / "o")
    finally:
        os.umask(old)
    o = tmp_path / "o"
    assert _mode(o / "site") == dmode  # was 0700 (mkdtemp) on every rebuild
    assert _mode(o / "comparison.csv") == fmode
    assert _mode(o / "values.yml") == fmode
    assert _mode(o / "site" / "index.html") == fmode


# ------------------------------------------------------------------ the manifest, per file


def _doc(out: Path) -> dict:
    return json.loads((out / outdir.MANIFEST).read_text())


def test_manifest_lists_every_file_the_run_wrote_relative(tmp_path):
    out = tmp_path / "o"
    _tiny_run(out)
    doc = _doc(out)
    on_disk = sorted(
        p.relative_to(out).as_posix()
        for p in out.rglob("*")
        if (p.is_file() or p.is_symlink()) and p.name != outdir.MANIFEST
    )
    # every file under the folder is the run's (a fresh folder): the manifest lists exactly them,
    # relative, and the run is marked complete with nothing kept
    assert doc["files"] == on_disk and doc["complete"] is True and doc["kept"] == []
    assert {"comparison.csv", "values.yml", "site/index.html"} <= set(doc["files"])
    assert not any(f.startswith("/") or ".." in f.split("/") for f in doc["files"])


def test_user_file_inside_site_survives_reruns(tmp_path):
    out = tmp_path / "o"
    _tiny_run(out)
    mine = out / "site" / "sub" / "my_notes.html"
    mine.parent.mkdir()
    mine.write_text("<p>mine</p>")
    os.utime(mine, ns=(1_000_000_000, 1_000_000_000))
    # a file of the first run that this run no longer writes is the run's own: it goes
    stale = out / "site" / "old_page.html"
    stale.write_text("old")
    doc = _doc(out)
    doc["files"].append("site/old_page.html")
    (out / outdir.MANIFEST).write_text(json.dumps(doc))
    _tiny_run(out)  # site/ is rebuilt as a whole
    assert mine.read_text() == "<p>mine</p>" and os.stat(mine).st_mtime_ns == 1_000_000_000
    assert not stale.exists()
    doc = _doc(out)
    assert doc["kept"] == ["site/sub/my_notes.html"]
    assert "site/sub/my_notes.html" not in doc["files"] and "site/index.html" in doc["files"]
    _tiny_run(out)  # and again: still the user's, still there
    assert mine.read_text() == "<p>mine</p>" and _doc(out)["kept"] == ["site/sub/my_notes.html"]


def _executed_with_table(path: Path) -> Path:
    nb = {
        "cells": [{
            "cell_type": "code", "execution_count": 1, "id": "a", "metadata": {},
            "source": "#| label: tbl-x\nt", "outputs": [{
                "output_type": "execute_result", "execution_count": 1, "metadata": {},
                "data": {"text/csv": "a,b\n1,2\n", "text/plain": "t"},
            }],
        }],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    }  # fmt: skip
    path.write_text(json.dumps(nb))
    return path


def test_user_file_inside_a_notebook_folder_survives_the_tables_rewrite(tmp_path):
    out = tmp_path / "o"
    outdir.claim_out(out, ROOT)
    folder = out / "notebooks" / "telemetry"
    folder.mkdir(parents=True)
    (folder / "tbl-gone.csv").write_text("x\n1\n")  # a table of the run, not written again
    outdir.record_files(out)
    mine = folder / "analysis.txt"
    mine.write_text("my analysis")
    outdir.claim_out(out, ROOT)  # the next run finds the file it did not write: kept
    assert _doc(out)["kept"] == ["notebooks/telemetry/analysis.txt"]
    written = report.write_table_csvs(_executed_with_table(tmp_path / "nb.ipynb"), folder)
    assert [p.name for p in written] == ["tbl-x.csv"]
    assert sorted(p.name for p in folder.iterdir()) == ["analysis.txt", "tbl-x.csv"]
    assert mine.read_text() == "my analysis"  # the run's old table went, the user's file stayed
    outdir.record_files(out)
    doc = _doc(out)
    assert "notebooks/telemetry/tbl-x.csv" in doc["files"]
    assert "notebooks/telemetry/analysis.txt" not in doc["files"]


def test_unlink_owned_and_remove_tree_spare_kept_files(tmp_path):
    out = tmp_path / "o"
    outdir.claim_out(out, ROOT)
    (out / "values").mkdir()
    (out / "values" / "old_nb.json").write_text("{}")
    (out / "appendix" / "deep").mkdir(parents=True)
    (out / "appendix" / "deep" / "ours.ipynb").write_text("{}")
    outdir.record_files(out)
    (out / "values" / "notes.json").write_text('{"mine": 1}')
    (out / "appendix" / "deep" / "mine.ipynb").write_text("{}")
    outdir.claim_out(out, ROOT)
    assert _doc(out)["kept"] == ["appendix/deep/mine.ipynb", "values/notes.json"]
    assert outdir.unlink_owned(out / "values" / "old_nb.json") is True
    assert outdir.unlink_owned(out / "values" / "notes.json") is False
    outdir.remove_tree(out / "appendix")
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        ".trainperf-manifest.json", "appendix/deep/mine.ipynb", "values/notes.json",
    ]  # fmt: skip


def test_a_run_that_stopped_early_leaves_its_files_its_own(tmp_path):
    # claim_out marks the manifest incomplete; the run stops before record_files. What it wrote
    # is not the user's: the next run may replace it (kept stays empty)
    out = tmp_path / "o"
    outdir.claim_out(out, ROOT)
    (out / "site").mkdir()
    (out / "site" / "index.html").write_text("half a site")
    assert _doc(out)["complete"] is False
    outdir.claim_out(out, ROOT)
    assert _doc(out)["kept"] == []


def test_a_manifest_of_the_earlier_format_is_read_as_complete(tmp_path):
    # main's earlier manifest had entries and files but no complete/kept: its files list is what
    # that run wrote, so a file found beside them is the user's
    out = tmp_path / "o"
    (out / "site").mkdir(parents=True)
    (out / "site" / "index.html").write_text("ours")
    (out / "site" / "mine.html").write_text("yours")
    (out / outdir.MANIFEST).write_text(json.dumps({
        "written_by": "trainperf", "entries": sorted(outdir.ENTRIES), "files": ["site/index.html"],
    }))  # fmt: skip
    outdir.claim_out(out, ROOT)
    assert _doc(out)["kept"] == ["site/mine.html"]
