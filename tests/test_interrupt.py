"""Ctrl-C stops ``trainperf report`` every time (issue 40): a real ``trainperf report`` subprocess is
interrupted once a notebook's kernel runs, by SIGINT to the job alone or to its whole process group
(what a terminal's Ctrl-C does); it exits non-zero with ``trainperf: interrupted`` and no process it
started is left. No timing is asserted: every wait is for a condition, with a generous bound."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
from helpers import ROOT

psutil = pytest.importorskip("psutil")

BOUND_S = 600  # a bound for a busy machine, never a measurement


def wait_for(cond, what: str):
    deadline = time.monotonic() + BOUND_S
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.2)
    pytest.fail(f"no {what} within {BOUND_S} s")


def kernels_below(pid: int) -> list:
    try:
        kids = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    out = []
    for k in kids:
        try:
            if "ipykernel" in " ".join(k.cmdline()):
                out.append(k)
        except psutil.Error:
            pass
    return out


def ignore_sigint() -> None:
    # what a script's background job (`trainperf report ... &`) starts with: SIGINT ignored
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("jobs", "to_group", "started_ignoring"),
    [("2", False, False), ("2", True, False), ("1", False, False), ("2", False, True)],
)
def test_sigint_stops_the_report_and_its_kernels(tmp_path, jobs, to_group, started_ignoring):
    log = (tmp_path / "log.txt").open("w")
    env = {**os.environ, "TRAINPERF_CACHE": str(tmp_path / "cache")}  # batch runs of its own
    p = subprocess.Popen(
        [str(ROOT / ".venv" / "bin" / "trainperf"), "report", "--out", str(tmp_path / "out"),
         "--no-quarto", "-j", jobs],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        preexec_fn=ignore_sigint if started_ignoring else None,  # noqa: PLW1509 - one call
    )  # fmt: skip
    try:
        wait_for(lambda: kernels_below(p.pid) or p.poll() is not None, "kernel started")
        assert p.poll() is None, (tmp_path / "log.txt").read_text()[-2000:]
        started = psutil.Process(p.pid).children(recursive=True)
        if to_group:
            os.killpg(p.pid, signal.SIGINT)
        else:
            p.send_signal(signal.SIGINT)
        rc = p.wait(timeout=BOUND_S)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        log.close()
    text = (tmp_path / "log.txt").read_text()
    assert rc != 0 and "trainperf: interrupted" in text, text[-2000:]
    assert "9/9" not in text  # it stopped, not ran every notebook to the end
    _, alive = psutil.wait_procs(started, timeout=BOUND_S)
    assert [a for a in alive if a.status() != psutil.STATUS_ZOMBIE] == []
