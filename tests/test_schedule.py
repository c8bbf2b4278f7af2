"""trainperf.report.schedule: the main job's notebooks and batch runs side by side."""

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


def test_two_jobs_run_side_by_side_in_other_processes():
    items = [Work(n, _stamp, {"name": n, "sleep": 1.0}) for n in ("a", "b")]
    _, done, _ = _run(items, 2)
    a, b = done["a"][0], done["b"][0]
    assert a["pid"] != os.getpid() and b["pid"] != os.getpid() and a["pid"] != b["pid"]
    # they overlap in time: each started before the other ended (no wall-time bound: the machine
    # may be busy; the speed-up itself is measured by benchmarks/bench_report.py)
    assert a["start"] < b["end"] and b["start"] < a["end"]


def test_one_job_runs_here_in_the_given_order():
    items = [Work(n, _stamp, {"name": n, "sleep": 0.01}) for n in ("a", "b", "c")]
    started, done, _ = _run(items, 1)
    assert [k for k, _ in started] == ["a", "b", "c"]
    assert {r["pid"] for r, _ in done.values()} == {os.getpid()}
    runs = [done[k][0] for k in "abc"]
    assert runs[0]["end"] <= runs[1]["start"] and runs[1]["end"] <= runs[2]["start"]


@pytest.mark.parametrize("jobs", [1, 2])
def test_an_item_waits_for_its_group_and_the_others_go_on(jobs):
    items = [
        # b2 runs on well after b1 ends: the free item starts in b1's worker meanwhile
        Work("b1", _stamp, {"name": "b1", "sleep": 0.2}, group="batch"),
        Work("b2", _stamp, {"name": "b2", "sleep": 2.0}, group="batch"),
        Work("reads-batch", _stamp, {"name": "reads-batch", "sleep": 0.01}, after="batch"),
        Work("free", _stamp, {"name": "free", "sleep": 0.01}),
    ]
    started, done, groups = _run(items, jobs)
    assert groups == ["batch"]
    order = [k for k, _ in started]
    waited = done["reads-batch"][0]
    assert waited["start"] >= max(done["b1"][0]["end"], done["b2"][0]["end"])
    if jobs == 2:
        # the free item, listed after the waiting one, did not wait for the batch
        assert order.index("free") < order.index("reads-batch")
    else:  # one at a time: the batch is complete when its second run ends
        assert order == ["b1", "b2", "reads-batch", "free"]


def test_at_most_jobs_items_at_a_time():
    items = [Work(str(i), _stamp, {"name": str(i), "sleep": 0.3}) for i in range(5)]
    _, done, _ = _run(items, 2)
    spans = [(r["start"], r["end"]) for r, _ in done.values()]
    for t in sorted(s for s, _ in spans):
        running = sum(1 for s, e in spans if s <= t < e)
        assert running <= 2


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
    items = [Work(str(i), _stamp, {{"name": str(i), "sleep": 60, "pid_dir": {pids!r}}}) for i in range(4)]
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
    deadline = time.time() + 60
    while len(list(pids.glob("*.pid"))) < 2 and time.time() < deadline:
        time.sleep(0.1)
    workers = [int(p.stem) for p in pids.glob("*.pid")]
    assert len(workers) == 2  # both items of the first round started, in two workers
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=30)
    assert out.splitlines() == ["interrupted"]  # nothing finished, nothing else started
    time.sleep(0.5)
    for pid in workers:  # the workers were terminated, not left sleeping
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
