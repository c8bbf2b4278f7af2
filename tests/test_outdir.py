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
