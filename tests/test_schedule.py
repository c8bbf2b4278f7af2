"""trainperf.report.schedule: the main job's notebooks and batch runs side by side.

No test depends on the machine's speed: items prove what ran when with marker files (an item that
must run beside another waits for the other's marker, bounded by :data:`BOUND_S`), never with
sleeps or clock times."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trainperf.report.notebooks import NotebookError
from trainperf.report.schedule import Work, default_jobs, run_work

BOUND_S = 300.0  # a bound for a busy machine, never a measurement


def _wait_for(path: Path) -> bool:
    """Whether ``path`` appeared within :data:`BOUND_S`."""
    deadline = time.monotonic() + BOUND_S
    while not path.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _marked(arg: dict) -> dict:
    """A work item that proves order and overlap with marker files in ``arg["dir"]``: it writes
    ``<name>.started``, counts the items running beside it (``*.running`` files), waits for the
    markers named in ``arg["wait_for"]`` (bounded), writes ``<name>.done``, and returns what it saw."""
    d = Path(arg["dir"])
    name = arg["name"]
    running = d / f"{name}.running"
    running.write_text("")
    (d / f"{name}.started").write_text(str(os.getpid()))
    beside = len(list(d.glob("*.running")))
    seen = {w: _wait_for(d / w) for w in arg.get("wait_for", [])}
    before = sorted(p.name for p in d.glob("*.done"))
    running.unlink()
    (d / f"{name}.done").write_text("")
    if arg.get("fail"):
        raise ValueError(f"{name} failed")
    return {"name": name, "pid": os.getpid(), "seen": seen, "beside": beside, "done_before": before}


def _stamp(arg: dict) -> dict:
    """A work item: sleeps, returns when and where it ran (and leaves its pid in ``pid_dir``)."""
    t0 = time.time()
    if arg.get("pid_dir"):
        (Path(arg["pid_dir"]) / f"{os.getpid()}.pid").write_text(arg["name"])
    time.sleep(arg["sleep"])
    if arg.get("fail"):
        raise ValueError(f"{arg['name']} failed")
    return {"name": arg["name"], "pid": os.getpid(), "start": t0, "end": time.time()}


def _run(items, jobs):
    started, done, groups = [], {}, []
    run_work(
        items,
        jobs,
        lambda w: started.append((w.key, time.time())),
        lambda w, result, exc: done.__setitem__(w.key, (result, exc)),
        groups.append,
    )
    return started, done, groups


def test_two_jobs_run_side_by_side_in_other_processes(tmp_path):
    # each item waits for the other's start marker: both return having seen it only if they ran
    # at the same time (one after the other, the first would wait BOUND_S in vain)
    items = [
        Work(n, _marked, {"name": n, "dir": str(tmp_path), "wait_for": [f"{o}.started"]})
        for n, o in (("a", "b"), ("b", "a"))
    ]
    _, done, _ = _run(items, 2)
    a, b = done["a"][0], done["b"][0]
    assert a["pid"] != os.getpid() and b["pid"] != os.getpid() and a["pid"] != b["pid"]
    assert a["seen"] == {"b.started": True} and b["seen"] == {"a.started": True}


def test_one_job_runs_here_in_the_given_order(tmp_path):
    items = [Work(n, _marked, {"name": n, "dir": str(tmp_path)}) for n in ("a", "b", "c")]
    started, done, _ = _run(items, 1)
    assert [k for k, _ in started] == ["a", "b", "c"]
    assert {r["pid"] for r, _ in done.values()} == {os.getpid()}
    # each saw the ones before it done, and nothing running beside it
    assert [done[k][0]["done_before"] for k in "abc"] == [[], ["a.done"], ["a.done", "b.done"]]
    assert [done[k][0]["beside"] for k in "abc"] == [1, 1, 1]


@pytest.mark.parametrize("jobs", [1, 2])
def test_an_item_waits_for_its_group_and_the_others_go_on(tmp_path, jobs):
    d = str(tmp_path)
    items = [
        Work("b1", _marked, {"name": "b1", "dir": d}, group="batch"),
        # with 2 workers, b2 ends only once the free item has started: the free item, listed after
        # the waiting one, must have been handed out while the batch was still running
        Work(
            "b2",
            _marked,
            {"name": "b2", "dir": d, "wait_for": ["free.started"] if jobs == 2 else []},
            group="batch",
        ),  # fmt: skip
        Work("reads-batch", _marked, {"name": "reads-batch", "dir": d}, after="batch"),
        Work("free", _marked, {"name": "free", "dir": d}),
    ]
    started, done, groups = _run(items, jobs)
    assert groups == ["batch"]
    order = [k for k, _ in started]
    waited = done["reads-batch"][0]
    assert {"b1.done", "b2.done"} <= set(waited["done_before"])  # the batch ended before it began
    if jobs == 2:
        assert done["b2"][0]["seen"] == {"free.started": True}
        assert order.index("free") < order.index("reads-batch")
    else:  # one at a time: the batch is complete when its second run ends
        assert order == ["b1", "b2", "reads-batch", "free"]


def test_at_most_jobs_items_at_a_time(tmp_path):
    # each item counts the items running when it starts (their *.running markers, its own
    # included: a marker lives from an item's start to its return, and a worker is handed a new
    # item only once its last returned); items 0 and 1 wait for each other: two at once
    d = str(tmp_path)
    items = [
        Work(
            str(i),
            _marked,
            {"name": str(i), "dir": d, "wait_for": [f"{1 - i}.started"] if i < 2 else []},
        )  # fmt: skip
        for i in range(5)
    ]
    _, done, _ = _run(items, 2)
    beside = [done[str(i)][0]["beside"] for i in range(5)]
    assert all(1 <= b <= 2 for b in beside), beside
    assert done["0"][0]["seen"] == {"1.started": True} and done["1"][0]["seen"] == {
        "0.started": True
    }


def test_an_item_exception_reaches_on_done_and_the_rest_run():
    items = [
        Work("bad", _stamp, {"name": "bad", "sleep": 0.01, "fail": True}),
        Work("good", _stamp, {"name": "good", "sleep": 0.01}),
    ]
    _, done, _ = _run(items, 2)
    assert done["bad"][0] is None and str(done["bad"][1]) == "bad failed"
    assert done["good"][1] is None and done["good"][0]["name"] == "good"


@pytest.mark.parametrize("jobs", [1, 2])
def test_what_on_done_raises_stops_the_run(jobs):
    items = [Work(str(i), _stamp, {"name": str(i), "sleep": 0.2}) for i in range(6)]
    seen = []

    def on_done(w, result, exc):
        seen.append(w.key)
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        run_work(items, jobs, lambda w: None, on_done)
    assert len(seen) == 1  # nothing handed out after the first end was taken


def test_waiting_for_a_group_without_items_is_refused():
    with pytest.raises(ValueError, match="waits for group 'batch'"):
        run_work([Work("x", _stamp, {}, after="batch")], 2, lambda w: None, lambda *a: None)


def test_default_jobs_follow_the_cpus_this_process_may_use(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2})
    assert default_jobs() == 3
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)))
    assert default_jobs() == 4  # each worker holds a kernel: at most 4 by default
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {5})
    assert default_jobs() == 1


def test_a_notebook_error_crosses_from_a_worker_with_its_fields():
    err = NotebookError(
        "notebooks/x.ipynb", 5, "tbl-x", "ValueError", "bad value\nmore", Path("/o/x.failed.ipynb")
    )
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is NotebookError and str(back) == str(err)
    assert str(back) == "notebooks/x.ipynb, cell 5 (tbl-x): ValueError: bad value"
    assert (back.cell_index, back.label, back.ename, back.executed) == (
        5,
        "tbl-x",
        "ValueError",
        Path("/o/x.failed.ipynb"),
    )


_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
from test_schedule import _stamp
from trainperf.report.schedule import Work, run_work

if __name__ == "__main__":
    items = [Work(str(i), _stamp, {{"name": str(i), "sleep": 3600, "pid_dir": {pids!r}}}) for i in range(4)]
    try:
        run_work(items, 2, lambda w: None, lambda w, r, e: print("done", w.key, flush=True))
    except KeyboardInterrupt:
        print("interrupted", flush=True)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_stops_the_run_and_its_workers(tmp_path, sig):
    pids = tmp_path / "pids"
    pids.mkdir()
    script = tmp_path / "run.py"
    script.write_text(_SCRIPT.format(tests=str(Path(__file__).parent), pids=str(pids)))
    proc = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + BOUND_S
    while len(list(pids.glob("*.pid"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    workers = [int(p.stem) for p in pids.glob("*.pid")]
    assert len(workers) == 2  # both items of the first round started, in two workers
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=BOUND_S)
    assert out.splitlines() == ["interrupted"]  # nothing finished, nothing else started
    for pid in workers:  # the workers were terminated, not left sleeping
        assert _gone(pid), f"worker {pid} left running"


def _gone(pid: int) -> bool:
    """Whether process ``pid`` is gone (or a zombie) within :data:`BOUND_S`."""
    deadline = time.monotonic() + BOUND_S
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            if Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
                return True
        except (OSError, IndexError):
            return True
        time.sleep(0.05)
    return False
