"""A full disk (``OSError: [Errno 28] No space left on device``) is one line naming the file being
written (issue 40). The error is a real one: writes go to ``/dev/full``, which fails every write with
ENOSPC (Linux ``null(4)``/``full(4)``)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from trainperf.atomic import write_text_atomic
from trainperf.errors import format_error
from trainperf.report.cli import main

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")


def full_disk_write_bytes(self: Path, data: bytes) -> int:
    # what Path.write_bytes does, on a device that is always full: the genuine OSError
    with open("/dev/full", "wb") as f:
        return f.write(data)


def test_real_enospc_is_one_line():
    with pytest.raises(OSError) as e:
        full_disk_write_bytes(Path("x"), b"x" * 10)
    assert e.value.errno == errno.ENOSPC and e.value.filename is None
    assert format_error(e.value).startswith("disk full (No space left on device)")


def test_atomic_write_on_a_full_disk_names_the_target(tmp_path, monkeypatch):
    monkeypatch.setattr(Path, "write_bytes", full_disk_write_bytes)
    target = tmp_path / "values.yml"
    with pytest.raises(OSError) as e:
        write_text_atomic("a: 1\n", target)
    assert e.value.errno == errno.ENOSPC and e.value.filename == str(target)
    assert list(tmp_path.iterdir()) == []  # no temporary file left behind


def test_cli_prints_one_line_naming_the_file(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(Path, "write_bytes", full_disk_write_bytes)
    target = tmp_path / "cluster.yaml"
    assert main(["init", str(target)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"trainperf: error: disk full writing {target} (No space left on device)")
