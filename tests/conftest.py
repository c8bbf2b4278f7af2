"""Shared fixtures (the helpers tests import, paths and MLPerf log writers, are in helpers.py)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from helpers import MLPERF, ROOT

# first: the stand-in for rfc3987_syntax (trainperf.report), before any test module imports
# jsonschema (through altair, nbformat or papermill); ~2 s less of every worker's collection
import trainperf.report  # noqa: F401


@pytest.fixture
def results_tree(tmp_path):
    """A results folder in the MLCommons layout: write runs with ``add(system, bench, i, lines)``."""

    class Tree:
        root = tmp_path / "training_results_v4.1"

        def add(self, system, bench, i, lines, nodes=64, per_node=8, newline="\n"):
            d = self.root / "Acme" / "results" / system / bench
            d.mkdir(parents=True, exist_ok=True)
            sysdir = self.root / "Acme" / "systems"
            sysdir.mkdir(parents=True, exist_ok=True)
            (sysdir / f"{system}.json").write_text(
                json.dumps(
                    {
                        "submitter": "Acme",
                        "number_of_nodes": str(nodes),
                        "accelerators_per_node": str(per_node),
                        "accelerator_model_name": "NVIDIA H100-SXM5-80GB",
                    }
                )
            )
            p = d / f"result_{i}.txt"
            p.write_bytes((newline.join(lines) + newline).encode("utf-8"))
            return p

    return Tree()


@pytest.fixture
def bundled_copy(tmp_path):
    """A writable copy of the bundled MLPerf data (tests must never modify data/)."""
    dst = tmp_path / "mlperf"
    shutil.copytree(MLPERF, dst)
    return dst


@pytest.fixture(scope="session")
def main_job(tmp_path_factory):
    """The main job run once for the whole test session, into temporary folders (preview site, no
    Quarto): returns (tmp folder, run_report summary). Outputs in ``tmp/out``, figures in
    ``tmp/figures``; everything the run printed (its log lines, and whatever the process and its
    kernels wrote to stdout and stderr) in ``tmp/run_output.txt``. One optional output the job
    does not ask for is written too, for the test that reads it instead of executing the
    notebook again: ``tmp/out/scratch/rails.parquet`` (telemetry's ``results_path``), inside the
    output folder, so that the appendix shows it relative to it like every output path."""
    # deferred: trainperf.report.job takes ~1.9 s to import (python -X importtime), which a
    # focused run of a test file that needs no report would pay at collection
    from trainperf.report import job as report  # noqa: PLC0415

    tmp = tmp_path_factory.mktemp("report")
    lines = []
    sys.stdout.flush(), sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(tmp / "fd_output.txt", "wb") as sink:
        os.dup2(sink.fileno(), 1), os.dup2(sink.fileno(), 2)
        try:
            summary = report.run_report(
                out=tmp / "out",
                figures=tmp / "figures",
                root=ROOT,
                use_quarto=False,
                log=lines.append,
                progress=False,
                fail_fast=True,  # a notebook failing in the suite shows its own error here
                overrides={
                    "telemetry": {"results_path": str(tmp / "out" / "scratch" / "rails.parquet")},
                },
            )
        finally:
            sys.stdout.flush(), sys.stderr.flush()
            os.dup2(saved[0], 1), os.dup2(saved[1], 2)
            os.close(saved[0]), os.close(saved[1])
    (tmp / "run_output.txt").write_text(
        "\n".join(lines) + "\n" + (tmp / "fd_output.txt").read_text(errors="replace")
    )
    return tmp, summary


@pytest.fixture(scope="session")
def built_site(main_job, tmp_path_factory):
    """The site a reader browses: the Quarto book (rendered in a copy of the checkout) when quarto is
    on PATH, otherwise the preview site of :func:`main_job`. Returns the folder holding index.html."""
    from trainperf.report import job as report  # noqa: PLC0415  as in main_job

    if shutil.which("quarto") is None:
        return Path(main_job[1].site).parent
    work = tmp_path_factory.mktemp("book") / "repo"
    shutil.copytree(
        ROOT, work, ignore=shutil.ignore_patterns(".venv", ".git", "_book", "_output", "figures")
    )
    report.run_report(
        root=work, use_quarto=True, log=lambda *_: None, progress=False, fail_fast=True
    )
    return work / "_book"


@pytest.fixture(scope="session", autouse=True)
def _trainperf_cache_session(tmp_path_factory):
    """The reference batch cache (``$TRAINPERF_CACHE``) of fixtures shared by several tests: in the
    session's temporary folder, never the user's ``~/.cache/trainperf``."""
    old = os.environ.get("TRAINPERF_CACHE")
    os.environ["TRAINPERF_CACHE"] = str(tmp_path_factory.mktemp("trainperf-cache"))
    yield
    if old is None:
        os.environ.pop("TRAINPERF_CACHE", None)
    else:
        os.environ["TRAINPERF_CACHE"] = old


@pytest.fixture(autouse=True)
def _trainperf_cache(tmp_path_factory, monkeypatch):
    """Each test its own reference batch cache: no test's outcome depends on another's runs."""
    monkeypatch.setenv("TRAINPERF_CACHE", str(tmp_path_factory.mktemp("cache")))


# --- optional components, and the grouping of tests for pytest-xdist ------------------------------

#: Fixtures whose result depends on an optional component: the main job (a CJK font decides the
#: Japanese figures, HolisticTraceAnalysis the trace notebook's engine), the site (Quarto), the
#: browser (Chromium), a real Slurm cluster, a real Prometheus server.
COMPONENT_FIXTURES = frozenset({"main_job", "built_site", "browser", "slurm_cluster", "prom"})

#: Test modules whose tests depend on an optional component without (only) those fixtures: they
#: run the main job or its notebooks themselves (the CJK font, HTA), or need Slurm, Prometheus,
#: Chromium, Quarto, PyTorch or HolisticTraceAnalysis and skip without it.
COMPONENT_MODULES = frozenset(
    {
        "test_batch",
        "test_browser",
        "test_charts_i18n",
        "test_config",
        "test_promsource",
        "test_quarto_books",
        "test_report",
        "test_rerun",
        "test_slurm",
        "test_smoke",
        "test_trace",
        "test_trace_torch",
    }
)

#: Tests sharing one expensive session fixture run in one pytest-xdist worker (``--dist
#: loadgroup``), so that it is made once: the main job (and the site built from it), the Slurm
#: cluster. The live Slurm tests start their own daemons: one at a time, in the same group.
SHARED_GROUPS = {"main_job": "main_job", "built_site": "main_job", "slurm_cluster": "slurm"}


def _xdist_group(item) -> str | None:
    names = set(item.fixturenames)
    for fixture, group in SHARED_GROUPS.items():
        if fixture in names:
            return group
    if item.get_closest_marker("slurm"):
        return "slurm"
    # a module- or class-scoped fixture is set up once per worker that runs one of its tests:
    # keep those tests together
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    if any(d and d[-1].scope in ("module", "class", "package") for d in defs.values()):
        return item.nodeid.split("::")[0]
    return None


# pytest-xdist 3.8's --dist loadgroup appends "@group" to ``item._nodeid``, which pytest 9.2 no
# longer reads (``nodeid`` comes from ``item._id``): every test would be scheduled alone and each
# worker would run the main job. So the workers write each grouped test's group to a file
# (``TRAINPERF_XDIST_GROUPS``, set by the controller before it starts them) and the scheduler
# below (``--dist loadgroup``, what `make test` uses) sends a group's tests to one worker.
_GROUPS_ENV = "TRAINPERF_XDIST_GROUPS"


def pytest_configure(config):
    if getattr(config, "workerinput", None) is None and config.getoption("numprocesses", None):
        os.environ[_GROUPS_ENV] = tempfile.mkdtemp(prefix="trainperf-xdist-groups-")


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook
def pytest_xdist_make_scheduler(config, log):
    if config.getoption("dist") != "loadgroup":
        return None
    # deferred: a pytest-xdist hook (optionalhook), called only where xdist runs the session
    from xdist.scheduler import LoadScopeScheduling  # noqa: PLC0415

    class GroupScheduling(LoadScopeScheduling):
        """One work unit per group of tests/conftest.py (:data:`SHARED_GROUPS`); every other
        test on its own. Handed out longest first, as far as known: the groups (most tests
        first, as pytest-xdist orders them), then the ``slow`` tests, then the rest, so that no
        worker starts a notebook-executing test while the other has nothing left to do."""

        _groups: dict[str, str] | None = None
        _slow: set[str] = set()
        _ordered = False

        def _read(self):
            self._groups, slow = {}, set()
            for f in Path(os.environ[_GROUPS_ENV]).glob("*.json"):
                doc = json.loads(f.read_text())
                self._groups.update(doc["groups"])
                slow.update(doc["slow"])
            self._slow = slow

        def _split_scope(self, nodeid):
            if self._groups is None:
                self._read()
            return self._groups.get(nodeid, nodeid)

        def _assign_work_unit(self, node):
            if not self._ordered:  # the first assignment: the work queue is complete
                self._ordered = True

                def rank(unit):
                    scope, tests = unit
                    return 0 if len(tests) > 1 else 1 if scope in self._slow else 2

                units = sorted(self.workqueue.items(), key=rank)  # stable
                self.workqueue.clear()
                self.workqueue.update(units)
            super()._assign_work_unit(node)

    return GroupScheduling(config, log)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    """Mark ``component`` the tests whose behaviour depends on an optional component (those using
    :data:`COMPONENT_FIXTURES`, those of :data:`COMPONENT_MODULES`, and every ``slow`` one: they
    execute notebooks; scripts/plain_tests.sh runs them with every component hidden), and group for pytest-xdist
    the tests that share an expensive fixture (:data:`SHARED_GROUPS`)."""
    for item in items:
        module = getattr(getattr(item, "module", None), "__name__", "")
        # a `slow` test executes notebooks, whose figures depend on the CJK font
        if (
            set(item.fixturenames) & COMPONENT_FIXTURES
            or module in COMPONENT_MODULES
            or item.get_closest_marker("slow")
        ):
            item.add_marker(pytest.mark.component)
    groups = {}
    for item in items:
        group = _xdist_group(item)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
            groups[item.nodeid] = group
    worker = getattr(config, "workerinput", None)
    if worker is not None and os.environ.get(_GROUPS_ENV):
        # every worker collects the same tests; each writes its own file (atomically)
        dst = Path(os.environ[_GROUPS_ENV]) / f"{worker['workerid']}.json"
        tmp = dst.with_suffix(".tmp")
        slow = [item.nodeid for item in items if item.get_closest_marker("slow")]
        tmp.write_text(json.dumps({"groups": groups, "slow": slow}))
        tmp.replace(dst)
