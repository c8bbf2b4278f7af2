"""Command line: ``trainperf init FILE`` (a commented cluster config), ``trainperf report [--config
FILE]`` (the main job), ``trainperf compare --config FILE`` (the comparison alone), ``trainperf batch GRID.yaml`` (papermill over a parameter grid) and
``trainperf runs PATH`` (a quick look at MLPerf logs) and ``trainperf record build DIR...`` (the MLPerf record).

A failure prints one line (``trainperf: error: ...``) and exits 1; ``--debug`` (or TRAINPERF_DEBUG=1)
shows the traceback instead.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from trainperf import __version__, project_root
from trainperf.errors import ConfigError, print_error
from trainperf.report import runs_cli


@dataclass(frozen=True)
class LazyCommand:
    """A sub-command whose module is imported only when it runs (``trainperf --help`` and the other
    sub-commands never import it: issue 41).

    Attributes:
        name: the sub-command (``trainperf NAME``).
        help: its line in ``trainperf --help``.
        module: dotted module name, imported when ``trainperf NAME ...`` is parsed.
        add: the module's function that adds the sub-command's arguments to its parser.
        run: the module's function ``run(args) -> int`` (the exit status) that runs it.
    """

    name: str
    help: str
    module: str
    add: str = "add_arguments"
    run: str = "run"

    def function(self, attr: str):
        return getattr(importlib.import_module(self.module), attr)


# Adding a sub-command is one line here: its module defines add_arguments(parser) and run(args).
LAZY_COMMANDS = (
    LazyCommand(
        "batch",
        "execute a notebook over a grid of parameter sets (YAML)",
        "trainperf.report.batch.cli",
        add="add_batch_arguments",
        run="run_from_args",
    ),
)


class _LazySubParsers(argparse._SubParsersAction):
    """Sub-parsers that add a :class:`LazyCommand`'s arguments when that sub-command is chosen."""

    def __call__(self, parser, namespace, values, option_string=None):
        command = _lazy().get(values[0]) if values else None
        sub = self._name_parser_map.get(values[0]) if values else None
        if command is not None and sub is not None and not getattr(sub, "_lazy_added", False):
            command.function(command.add)(sub)
            sub._lazy_added = True
        return super().__call__(parser, namespace, values, option_string)


def _lazy() -> dict[str, LazyCommand]:
    return {c.name: c for c in LAZY_COMMANDS}


class _VersionAction(argparse.Action):
    """``--version``: the package metadata is read only when asked (importlib.metadata scans
    every installed distribution)."""

    def __init__(
        self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None
    ):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        sys.stdout.write(f"trainperf {package_version()}\n")  # stdout, as argparse's own --version
        parser.exit()


def _positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of 1 or more, got {text!r}")
    return n


def build_parser() -> argparse.ArgumentParser:
    """The `trainperf` argument parser; it imports no sub-command's module (see :class:`LazyCommand`)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show the full traceback on errors",
    )
    p = argparse.ArgumentParser(
        prog="trainperf", description="LLM training performance report", parents=[common]
    )
    p.add_argument("--version", action=_VersionAction, help="show the version and exit")
    sub = p.add_subparsers(dest="command", required=True, action=_LazySubParsers)
    r = sub.add_parser(
        "report",
        parents=[common],
        help="execute the notebooks, export figures, build the book or the preview site",
        description="The main job. Override a notebook parameter with -p NOTEBOOK.PARAM=VALUE (VALUE is "
        "YAML: numbers, true/false, [lists]; relative paths are taken from the current folder), e.g. "
        "-p telemetry.telemetry_source=/data/dcgm.prom -p slurm_jobs.dump_paths=[/data/sacct.txt]",
    )
    r.add_argument(
        "--config",
        metavar="FILE.yaml",
        help="the cluster config (trainperf init writes a template); default: the demo, "
        "configs/sakuraone.yaml",
    )
    r.add_argument(
        "--out",
        default="_output",
        help="folder for executed notebooks, comparison.csv and the preview site (default _output)",
    )
    r.add_argument(
        "--figures",
        default=None,
        help="figure folder (default: figures, the book's; with --config and an --out other than "
        "_output: OUT/figures)",
    )
    r.add_argument(
        "--no-quarto",
        action="store_true",
        help="build the preview site even when quarto is on PATH",
    )
    r.add_argument(
        "-p",
        "--param",
        action="append",
        default=[],
        metavar="NOTEBOOK.PARAM=VALUE",
        help="override a notebook parameter (repeatable)",
    )
    r.add_argument(
        "--params", metavar="FILE.yaml", help="overrides as YAML: {notebook: {param: value}}"
    )
    r.add_argument(
        "--force",
        action="store_true",
        help="execute every notebook (default: skip those whose inputs did not change since their "
        "last run), and write into an --out folder that holds other files (never over them)",
    )
    r.add_argument(
        "--fail-fast",
        action="store_true",
        help="stop at the first notebook that fails (default: a stand-in page says it failed, the "
        "other notebooks and the site are still built, and the exit status is 1)",
    )
    r.add_argument(
        "-j",
        "--jobs",
        type=_positive_int,
        default=None,
        metavar="N",
        help="notebooks and batch runs executed side by side, each with its own kernel (default: "
        "one per CPU this process may use, at most 4; 1: one after another with per-cell progress bars)",
    )
    i = sub.add_parser(
        "init",
        parents=[common],
        help="write a commented cluster-config template",
        description="Write a commented cluster config to FILE; then edit it and run "
        "trainperf report --config FILE --out DIR.",
    )
    i.add_argument("file", help="where to write the template (refused if it exists)")
    i.add_argument("--force", action="store_true", help="overwrite an existing file")
    c = sub.add_parser(
        "compare",
        parents=[common],
        help="the cluster against the reference from the logs, without the book",
        description="The comparison of comparison.csv (trainperf.compare.cluster_comparison) from "
        "the config's logs, in seconds: no notebook is executed and no book is built.",
        epilog="table: rounded, with the summary sentence. csv: every column of "
        "trainperf.compare.COMPARISON_SCHEMA. json: {config, rows, summary, warnings}. A comparison "
        "against another MLPerf round than the evaluated result's own is one warning line on stderr.",
    )
    c.add_argument("--config", metavar="FILE.yaml", required=True, help="the cluster config")
    c.add_argument("--format", choices=("table", "csv", "json"), default="table")
    s = sub.add_parser(
        "runs",
        parents=[common],
        help="print the runs and scores of MLPerf logs under PATH",
        description=runs_cli.__doc__.split("\n\n", 1)[0],
        epilog="table: for people (rounded, human headers). csv: one table (--table), the library's "
        "column names, full precision. json: {trainperf_version, path, runs, scores, quality}. "
        "Columns: trainperf.mlperf.load_results (runs), score_runs (scores), "
        "trainperf.quality.QUALITY_SCHEMA (quality). A damaged file is a parse_error row; exit 0.",
    )
    s.add_argument(
        "path",
        help="an MLCommons results folder (any depth), a folder in that layout, or one result_*.txt",
    )
    s.add_argument("--format", choices=runs_cli.FORMATS, default="table", help="output format")
    s.add_argument(
        "--table", choices=runs_cli.TABLES, default="runs", help="the table --format csv prints"
    )
    v = sub.add_parser(
        "serve",
        parents=[common],
        help="serve the built book on http://127.0.0.1 (search works over http, not from disk)",
    )
    v.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (default 8000)")
    v.add_argument("--out", default="_output", help="the report's output folder (preview site)")
    rec = sub.add_parser(
        "record",
        parents=[common],
        help="the MLPerf record: every published result, one row per submission",
    )
    rec_sub = rec.add_subparsers(dest="record_command", required=True)
    rb = rec_sub.add_parser(
        "build",
        parents=[common],
        help="read checkouts of mlcommons/training_results_vX.Y into the record (CSV or Parquet)",
        description="Read every result folder under DIR (checkouts of "
        "github.com/mlcommons/training_results_vX.Y, folders named so) with trainperf's MLPerf "
        "reader and write one row per (round, division, submitter, system, benchmark).",
    )
    rb.add_argument(
        "dirs", nargs="+", metavar="DIR", help="a results checkout (or a folder in one)"
    )
    rb.add_argument(
        "--out",
        default="mlperf_record.csv",
        help="the record (.csv, or .parquet); default mlperf_record.csv",
    )
    rb.add_argument(
        "--jobs",
        type=_positive_int,
        default=None,
        metavar="N",
        help="worker processes (default: one per CPU this process may use)",
    )
    for command in LAZY_COMMANDS:  # their modules load polars, papermill...: only when they run
        sub.add_parser(command.name, help=command.help, description=command.help)
    return p


def package_version() -> str:
    """The installed package's version (``importlib.metadata``), else ``trainperf.__version__``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("trainperf")
    except PackageNotFoundError:
        return __version__


def parse_overrides(items: list[str], params_file: str | None = None) -> dict[str, dict]:
    """``NOTEBOOK.PARAM=VALUE`` strings (and a YAML file) to ``{notebook: {param: value}}``.

    Values are parsed as YAML; string values naming an existing relative path are made absolute
    (relative to the current folder), since notebooks run in ``notebooks/``.

    Raises:
        ConfigError: an item not of the form NOTEBOOK.PARAM=VALUE, a VALUE that is not YAML (naming
            the ``-p`` item), a ``--params`` file that is missing, not UTF-8, not YAML (naming the
            file and line) or not a mapping.
    """
    # deferred: trainperf.config loads polars and yaml (~1.5 s, -X importtime); only `report` parses -p
    from trainperf.config.yamlfile import load_yaml_file, load_yaml_text

    out: dict[str, dict] = {}
    if params_file:
        data = load_yaml_file(params_file, "--params") or {}
        if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
            raise ConfigError(
                f"--params {params_file}: expected a mapping {{notebook: {{param: value}}}}"
            )
        for nb, kv in data.items():
            out.setdefault(str(nb), {}).update(kv)
    for item in items:
        key, sep, value = item.partition("=")
        nb, dot, param = key.partition(".")
        if not (sep and dot and nb and param):
            raise ConfigError(
                f"-p {item!r}: expected NOTEBOOK.PARAM=VALUE, e.g. telemetry.telemetry_source=/data/dcgm.prom"
            )
        out.setdefault(nb, {})[param] = load_yaml_text(value, f"-p {key}") if value else ""

    def absolute(v):
        if isinstance(v, list):
            return [absolute(x) for x in v]
        if (
            isinstance(v, str)
            and v
            and not v.startswith(("http://", "https://"))
            and Path(v).exists()
        ):
            return str(Path(v).resolve())
        return v

    return {nb: {k: absolute(v) for k, v in kv.items()} for nb, kv in out.items()}


def _interruptible() -> None:
    """Ctrl-C (SIGINT) stops the command even where it started with SIGINT ignored (a background
    job of a script inherits SIG_IGN, and Python then never raises KeyboardInterrupt)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    debug = getattr(args, "debug", False) or os.environ.get("TRAINPERF_DEBUG") == "1"
    _interruptible()
    # deferred below: each command imports only what it runs (`trainperf --help` and `trainperf runs`
    # start in ~0.15 s, the report job's imports take ~3.4 s; -X importtime)
    try:
        if args.command in _lazy():
            command = _lazy()[args.command]
            return command.function(command.run)(args)
        if args.command == "init":
            from trainperf.config import write_template

            path = write_template(args.file, force=args.force)
            print(f"wrote {path}: edit it, then run trainperf report --config {path} --out DIR")
            return 0
        if args.command == "report":
            from trainperf.config import load_config

            overrides = parse_overrides(args.param, args.params)
            config = load_config(args.config) if args.config else None
            # after the config: a config error is told before the job's imports (papermill...)
            from trainperf.report.job import run_report

            out = Path(args.out).resolve() if args.config else args.out
            if Path(out).exists() and not Path(out).is_dir():
                raise ConfigError(f"--out {args.out}: is a file; --out must be a folder")
            from trainperf.report.outdir import check_out

            # refused at once, before the config's inputs are checked or anything runs
            check_out(out, project_root(), force=args.force)
            figures = args.figures
            if figures is None:  # a user's book elsewhere leaves the checkout's figures alone
                book_out = (project_root() / "_output").resolve()
                own = bool(args.config) and Path(out).resolve() != book_out
                figures = str(Path(out) / "figures") if own else "figures"
            summary = run_report(
                out=out,
                config=config,
                figures=figures,
                use_quarto=False if args.no_quarto else None,
                overrides=overrides,
                force=args.force,
                fail_fast=args.fail_fast,
                jobs=args.jobs,
                force_out=args.force,
            )
            failed = summary.failed
            if failed:
                n = len(failed)
                print(
                    f"trainperf: error: {n} notebook{'s' if n != 1 else ''} failed: {', '.join(failed)}; "
                    "their pages say why (the rest of the book was built)",
                    file=sys.stderr,
                )
                return 1
        elif args.command == "compare":
            from trainperf.config import load_config

            config = load_config(args.config)
            from trainperf.report.compare_cli import run_compare

            return run_compare(config, args.format)
        elif args.command == "serve":
            from trainperf.report.serve import serve

            return serve(project_root(), args.out, args.port)
        elif args.command == "record":
            from trainperf.report.record_cli import run_record_build

            return run_record_build(args.dirs, args.out, args.jobs)
        elif args.command == "runs":
            from trainperf.report.runs_cli import run_command

            return run_command(args.path, args.format, args.table, package_version())
        return 0
    except KeyboardInterrupt:
        from trainperf.report.schedule import kill_descendants  # kernels of a 1-process run

        kill_descendants()
        print("trainperf: interrupted", file=sys.stderr)
        if Path(sys.argv[0]).name == "trainperf":  # the console script, not a caller in Python
            from trainperf.report.schedule import exit_process

            exit_process(130)
        return 130
    except Exception as exc:  # one clear line by default; the traceback on request
        return print_error(exc, debug)


if __name__ == "__main__":
    sys.exit(main())
