"""Executing the main job's notebooks and batch runs (the part of :func:`trainperf.report.job.run_report`
between the plan and the book): each notebook gets its stand-in page (input not given), is skipped
(unchanged since its last run, :mod:`trainperf.report.rerun`), or is executed; the batch runs and
the notebooks to execute go to :func:`trainperf.report.schedule.run_work`, ``jobs`` at a time.

A notebook's figure exports are logged to its own file (``<out>/figure_logs/<name>.jsonl``), so
that the figures it wrote are known even while other notebooks write to the same folder; after it
ends they are appended to the run's log ``<out>/figures.jsonl``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from trainperf.atomic import write_text_atomic
from trainperf.errors import BatchRunError
from trainperf.report import batch
from trainperf.report.absent import write_absent_notebook
from trainperf.report.batch.executors import crashed
from trainperf.report.charts import export as figure_export
from trainperf.report.notebooks import NotebookError, NotebookSpec, execute_notebook
from trainperf.report.outdir import remove_tree
from trainperf.report.preview import csv_outputs
from trainperf.report.rerun import NotebookRun
from trainperf.report.schedule import Work, run_work

__all__ = ["write_table_csvs"]


def rel_path(path: str | Path, root: Path) -> str:
    path = Path(path)
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def write_table_csvs(executed: Path, folder: Path) -> list[Path]:
    """Write the full-detail tables of an executed notebook (its ``text/csv`` outputs) into
    ``folder`` (replaced as a whole), one ``<label>.csv`` per table. Returns the files."""
    remove_tree(folder)  # a file in there that trainperf did not write stays (report.outdir)
    written = []
    for _, _, name, text in csv_outputs(executed):
        write_text_atomic(text, folder / name)
        written.append(folder / name)
    return written


def _execute_notebook_task(task: dict) -> dict:
    """One notebook of the main job (in a worker process, or in this one when ``jobs`` is 1):
    executed with its figure exports logged to its own file. Returns ``{"seconds": ...}``.

    Raises:
        NotebookError: a cell failed.
    """

    t0 = time.monotonic()
    with figure_export.job_environment(task["figure_log"], task["langs"]):
        execute_notebook(task["source"], task["target"], task["params"], progress=task["progress"])
    return {"seconds": round(time.monotonic() - t0, 1)}


@dataclass
class _Pending:
    """A notebook about to be executed, and what its completion needs."""

    step: str
    spec: NotebookSpec
    check: object  # trainperf.report.rerun.NotebookRun; None until it starts (after_batch)
    values_file: Path | None
    figure_log: Path
    task: dict


@dataclass
class ReportJob:
    """The notebooks (and batch runs) of one run of the main job and what became of each."""

    root: Path
    out: Path
    figures: Path
    log: object
    progress: bool
    force: bool
    fail_fast: bool
    figure_langs: list[str]
    figure_log: Path
    #: which parameters name inputs (:func:`trainperf.report.job.is_input_path_parameter`)
    is_input: Callable[[str], bool]
    executed: list = field(default_factory=list)
    tables: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    not_given: list = field(default_factory=list)
    ran: list = field(default_factory=list)
    failed: dict = field(default_factory=dict)

    def _shown(self, spec: NotebookSpec, nb_out: Path) -> list[Path]:
        self.executed.append((spec, nb_out))
        written = write_table_csvs(nb_out, self.out / "notebooks" / spec.name)
        self.tables += written
        return written

    def run(self, plan, absent: dict[str, str], jobs: int) -> None:
        """Plan every notebook (stand-in page, unchanged, or to execute), then execute the batch
        runs and the notebooks to execute, ``jobs`` at a time (:func:`run_work`); the notebooks
        that read a batch's summary wait for its runs."""

        self._plan = plan
        items: list[Work] = []
        waiting_for: dict[str, str] = {}  # batch summary path -> group of its runs
        self._batches: dict[str, tuple[str, object]] = {}
        for grid_file, grid in plan.batches:
            planned = batch.plan_batch(grid)
            group = f"batch {grid_file}"
            self._batches[group] = (grid_file, planned)
            self.log(
                f"batch {grid_file}: {len(grid.runs)} runs into {rel_path(grid.output, self.root)}"
                + (
                    f" ({len(planned.records)} reused, {len(planned.tasks)} to execute)"
                    if planned.records
                    else ""
                )
            )
            if not planned.tasks:
                self._batch_done(group)
                continue
            waiting_for[str(grid.output / "summary.parquet")] = group
            items += [
                Work(f"{group}: {t['slug']}", batch.execute_run, t, group=group)
                for t in planned.tasks
            ]
        inline = jobs <= 1
        self._pending: dict[str, _Pending] = {}
        n = len(plan.notebooks)
        for i, (spec, params) in enumerate(plan.notebooks, start=1):
            after = next((g for path, g in waiting_for.items() if path in params.values()), None)
            pending = self._prepare(
                f"[{i}/{n}]", spec, params, absent.get(spec.name), inline, after is not None
            )
            if pending is None:
                continue
            self._pending[spec.name] = pending
            items.append(Work(spec.name, _execute_notebook_task, pending.task, after=after))
        if items:
            if not inline and len(items) > 1:
                n_runs = sum(1 for w in items if w.group)
                n_nbs = len(items) - n_runs
                what = f"{n_nbs} notebook{'' if n_nbs == 1 else 's'}" + (
                    f" and {n_runs} batch run{'' if n_runs == 1 else 's'}" if n_runs else ""
                )
                self.log(f"executing {what}, {jobs} at a time, each with its own kernel")
            try:
                run_work(items, jobs, self._started, self._done, self._batch_done)
            finally:
                self._in_plan_order([spec.name for spec, _ in plan.notebooks])

    def _in_plan_order(self, names: list[str]) -> None:
        """What finished side by side, listed in the job's notebook order."""
        rank = {n: i for i, n in enumerate(names)}
        self.executed.sort(key=lambda e: rank.get(e[0].name, len(rank)))
        self.ran.sort(key=lambda n: rank.get(n, len(rank)))
        self.tables.sort(key=lambda p: rank.get(Path(p).parent.name, len(rank)))

    def _prepare(
        self,
        step: str,
        spec: NotebookSpec,
        params: dict,
        absent: str | None,
        inline: bool,
        after_batch: bool = False,
    ) -> _Pending | None:
        """The stand-in page of a notebook whose input is not given, or the skip of one unchanged
        since its last run (both None), or what executing it needs.

        ``after_batch``: the notebook reads the summary of batch runs about to execute, so it is
        executed too, and its fingerprint is taken when it starts (once the runs are there)."""
        log = self.log
        source = self.root / "notebooks" / f"{spec.name}.ipynb"
        target = self.out / "notebooks" / f"{spec.name}.ipynb"
        values_file = Path(params["values_path"]) if params.get("values_path") else None
        if absent is not None:
            log(f"{step} notebooks/{spec.name}.ipynb not executed: input not given")
            target.with_suffix(".run.json").unlink(missing_ok=True)  # never skipped as unchanged
            if values_file:
                values_file.unlink(missing_ok=True)
            self.not_given.append(spec.name)
            self._shown(spec, write_absent_notebook(source, target, absent))
            return None
        check = None if after_batch else self._check(source, target, params)
        if check is not None and check.unchanged():
            log(
                f"{step} notebooks/{spec.name}.ipynb unchanged "
                "(source, parameters, inputs and library as in its last run): skipped"
            )
            self.skipped.append(spec.name)
            self.executed.append((spec, target))
            self.tables += sorted((self.out / "notebooks" / spec.name).glob("*.csv"))
            return None
        figure_log = self.out / "figure_logs" / f"{spec.name}.jsonl"
        task = {
            "source": str(source),
            "target": str(target),
            "params": params,
            "figure_log": str(figure_log),
            "langs": self.figure_langs,
            "progress": self.progress and inline,
        }
        return _Pending(step, spec, check, values_file, figure_log, task)

    def _check(self, source: Path, target: Path, params: dict):
        """The re-run check of one notebook (:class:`trainperf.report.rerun.NotebookRun`)."""

        return NotebookRun(
            source,
            target,
            {
                **{
                    k: self._plan.fingerprints.get(v, v) if isinstance(v, str) else v
                    for k, v in params.items()
                },
                "_figure_languages": self.figure_langs,  # a CJK font installed later: run again
            },
            [k for k in params if self.is_input(k)],
            self.root / "data",
            force=self.force,
        )

    def _started(self, work: Work) -> None:
        pending = self._pending.get(work.key) if not work.group else None
        if pending is None:
            return
        self.log(f"{pending.step} executing notebooks/{pending.spec.name}.ipynb")
        if pending.check is None:  # waited for batch runs: fingerprinted now that they are done
            task = pending.task
            pending.check = self._check(Path(task["source"]), Path(task["target"]), task["params"])
        pending.check.start()
        if pending.values_file:
            pending.values_file.unlink(missing_ok=True)
        pending.figure_log.parent.mkdir(parents=True, exist_ok=True)
        pending.figure_log.unlink(missing_ok=True)

    def _done(self, work: Work, result, exc: BaseException | None) -> None:
        if work.group:  # a batch run: recorded; its failure is the batch's (see _batch_done)
            rec = result if exc is None else crashed(work.arg, exc)  # its worker died
            planned = self._batches[work.group][1]
            planned.done(rec)
            n_done = sum(1 for t in planned.tasks if t["slug"] in planned.records)
            took = f" in {rec['duration_s']:.1f} s" if rec.get("duration_s") is not None else ""
            self.log(
                f"  {work.group} [{n_done}/{len(planned.tasks)}]: {rec['run']} {rec['status']}{took}"
            )
            return

        pending = self._pending[work.key]
        spec, step, log = pending.spec, pending.step, self.log
        records = figure_export.read_export_log(pending.figure_log)
        pending.figure_log.unlink(missing_ok=True)
        with open(self.figure_log, "a", encoding="utf-8") as fh:  # the run's export log
            fh.writelines(json.dumps(r) + "\n" for r in records)
        if exc is not None:
            if isinstance(exc, NotebookError) and exc.ename == "KeyboardInterrupt":
                raise KeyboardInterrupt(str(exc))  # Ctrl-C reached the kernel: the job stops
            if not isinstance(exc, NotebookError) or self.fail_fast:
                raise exc
            self.failed[spec.name] = str(exc)
            log(f"{step} failed: {exc}")
            why = (
                f"{exc} (the executed copy is {rel_path(exc.executed, self.root)})"
                if exc.executed
                else str(exc)
            )
            stand_in = write_absent_notebook(
                Path(pending.task["source"]),
                Path(pending.task["target"]),
                why,
                heading="Not executed: the notebook failed.",
            )
            self._shown(spec, stand_in)
            return
        log(f"{step} notebooks/{spec.name}.ipynb done in {result['seconds']} s")
        exports = figure_export.summarize_exports(records)
        if exports:
            log(f"  {exports}")
        self.ran.append(spec.name)
        written = self._shown(spec, Path(pending.task["target"]))
        figure_files = [
            Path(r["outdir"]) / f"{r['name']}.{fmt}"
            for r in records
            for fmt in [*r.get("written", []), *r.get("skipped", [])]
        ]
        pending.check.finish(
            [*written, *([pending.values_file] if pending.values_file else [])],
            figures=figure_files,
        )

    def _batch_done(self, group: str) -> None:
        grid_file, planned = self._batches[group]
        summary_df = planned.summarize()
        failed = summary_df.filter(pl.col("status") == "failed")
        if failed.height:
            raise BatchRunError(
                f"batch {grid_file}: {failed.height} run(s) failed, first: {failed['run'][0]}: {failed['error'][0]}"
            )
        if planned.tasks:
            n = len(planned.tasks)
            self.log(f"batch {grid_file}: {n} run{'s' if n != 1 else ''} done")
