"""Energy to train of MLPerf Training power results, by the rules and as mlcommons/logging computes it.

Rules (mlcommons/training_policies ``power_measurement.adoc``, "Scoring"): the energy of a run is the
sum over all systems under test (nodes) of ``power reading x duration since the previous reading``
over the readings covering the timed portion of the run, plus, for components whose power is
estimated (an interconnect), ``maximum specified power x duration of the run x provisioning ratio``;
the score is the olympic mean over the same runs as the performance score.

Computation (mlcommons/logging ``result_summarizer.py``, ``_compute_total_power``,
``_compute_power_node``, ``_compute_power_sw``, ``_index_olympic_average``), followed here step by step:

* node file: ``E = eff x sum_i P_i (t_i - t_{i-1}) x T / (t_stop - t_start)``, readings between
  ``power_measurement_start`` (``t_0 = t_start``) and ``power_measurement_stop`` in time order, ``eff``
  the file's ``conversion_eff`` (1.0 without one), ``T`` the run's time to train (``run_stop -
  run_start`` of its result file): the window's mean power times the time to train;
* switch file: ``E = eff x interconnect_power_est x T`` (the estimate the rules allow; a switch file
  holding only readings adds nothing, as in the summarizer, and is flagged);
* run: the sum over its ``node_*.txt`` and ``sw_*.txt``; score: the olympic mean of the energies of
  the runs the time-to-train score keeps (sorted by time to train), times ``scaling.json``'s factor.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from trainperf.mlperf import load_results, score_runs
from trainperf.mlperf.rules import scaling_factor, summarizer_function
from trainperf.power.read import Issue, PowerLog, PowerLogWarning, read_power_log
from trainperf.quality import QualityLog, empty_quality

__all__ = [
    "FILE_ENERGY_SCHEMA",
    "GAP_MS",
    "MIN_READINGS",
    "PowerResult",
    "RUN_ENERGY_SCHEMA",
    "SCORE_ENERGY_SCHEMA",
    "energy_to_train",
    "file_energy",
    "find_power_folders",
]

#: Readings further apart than this (ms) are a gap: the rules ask for one reading per second
#: ("Report 1 Measurement per Second"); 1.5 s leaves room for a late reading.
GAP_MS = 1500.0
#: Fewest readings in a run's window ("Measure max(a run, 60 power samples)").
MIN_READINGS = 60
#: The window may miss the timed run by one reading interval (1 s) without a flag.
_WINDOW_SLACK_MS = 1000.0
_J_PER_KWH = 3.6e6
#: A node file whose mean power is under this, W, is flagged ``implausible_power``: product choice, a
#: training node (CPUs, memory, NICs, fans, and its accelerators) draws hundreds of W idle; a mean
#: under 50 W is readings logged in kW (a kW/W slip) or of another device.
MIN_NODE_MEAN_W = 50.0

FILE_ENERGY_SCHEMA: dict[str, pl.DataType] = {
    "benchmark_dir": pl.String(),
    "result": pl.String(),  # result_N
    "file": pl.String(),
    "kind": pl.String(),  # node | switch
    "host": pl.String(),
    "n_readings": pl.Int64(),  # readings inside the window
    "window_s": pl.Float64(),
    "conversion_eff": pl.Float64(),
    "mean_power_w": pl.Float64(),  # DC: eff x mean over the window (switch: eff x estimate)
    "energy_j": pl.Float64(),
}
"""Columns of :attr:`PowerResult.files`, one row per power file."""

RUN_ENERGY_SCHEMA: dict[str, pl.DataType] = {
    "round": pl.String(),
    "submitter": pl.String(),
    "system": pl.String(),
    "benchmark": pl.String(),
    "result_file": pl.String(),
    "status": pl.String(),
    "time_to_train_min": pl.Float64(),
    "n_node_files": pl.Int64(),
    "n_switch_files": pl.Int64(),
    "mean_power_kw": pl.Float64(),
    "node_energy_j": pl.Float64(),
    "interconnect_energy_j": pl.Float64(),
    "energy_j": pl.Float64(),
    "energy_kwh": pl.Float64(),
    "in_score": pl.Boolean(),
    "note": pl.String(),
}
"""Columns of :attr:`PowerResult.runs`, one row per result file (see :func:`energy_to_train`)."""

SCORE_ENERGY_SCHEMA: dict[str, pl.DataType] = {
    "round": pl.String(),
    "submitter": pl.String(),
    "system": pl.String(),
    "benchmark": pl.String(),
    "n_accelerators": pl.Int64(),
    "n_runs": pl.Int64(),
    "n_runs_with_energy": pl.Int64(),
    "score_min": pl.Float64(),
    "scaling_factor": pl.Float64(),
    "energy_to_train_j": pl.Float64(),
    "energy_to_train_kwh": pl.Float64(),
    "note": pl.String(),
}
"""Columns of :attr:`PowerResult.scores`, one row per benchmark folder (see :func:`energy_to_train`)."""


@dataclass
class PowerResult:
    """What :func:`energy_to_train` returns.

    Attributes:
        runs: :data:`RUN_ENERGY_SCHEMA`, one row per result file.
        files: :data:`FILE_ENERGY_SCHEMA`, one row per power file.
        scores: :data:`SCORE_ENERGY_SCHEMA`, one row per benchmark folder.
        quality: data-quality rows (:data:`trainperf.quality.QUALITY_SCHEMA`) of the power logs, one per
            (benchmark folder, check, action); the result logs' own are ``load_results``'.
        warnings: the quality rows as text (``file:line: what (check: action)``).
    """

    runs: pl.DataFrame
    files: pl.DataFrame
    scores: pl.DataFrame
    quality: pl.DataFrame = field(default_factory=empty_quality)
    warnings: list[str] = field(default_factory=list)


def find_power_folders(path: str | Path) -> list[Path]:
    """Benchmark folders at or under ``path`` that hold ``result_*.txt`` and a ``power/`` folder, sorted."""
    path = Path(path)
    if not path.is_dir():
        return []
    cands = [path, *(p.parent for p in path.rglob("power") if p.is_dir())]
    return sorted({c for c in cands if (c / "power").is_dir() and any(c.glob("result_*.txt"))})


def _in_window(log: PowerLog, stop_ms: float) -> pl.Expr:
    """Readings the summarizer's loop counts: after the start marker and before the stop marker in
    (time, line) order (its sort by time is stable, so equal times keep file order)."""
    t, line = pl.col("time_ms"), pl.col("line")
    after = (t > log.start_ms) | ((t == log.start_ms) & (line > (log.start_line or 0)))
    if log.stop_line is None:
        return after & (t <= stop_ms)
    return after & ((t < stop_ms) | ((t == stop_ms) & (line < log.stop_line)))


def file_energy(
    log: PowerLog,
    time_to_train_ms: float,
    run_start_ms: float | None = None,
    run_stop_ms: float | None = None,
) -> tuple[dict, list[Issue]]:
    """Energy of one power file for a run of ``time_to_train_ms``, and the checks that fired.

    Node file: ``eff x sum P_i (t_i - t_{i-1}) x T / (t_stop - t_start)`` (module docstring); switch file:
    ``eff x interconnect_power_est x T``. Times in ms, power in W, energy in J.

    Checks: ``measurement_marker`` (no start: no energy, as the summarizer refuses; no stop: the
    last reading taken, as it does), ``readings_outside_window`` (not counted), ``duplicate_reading``
    (a reading at the time of the one before: zero duration, adds nothing), ``gap`` (readings more
    than :data:`GAP_MS` apart: the later reading stands for the gap, as the rules' sum does),
    ``too_few_readings`` (under :data:`MIN_READINGS`), ``window_misses_run`` (the window starts
    after ``run_start`` or stops before ``run_stop`` by more than 1 s: the window's mean power stands
    for the missed time), ``readings_outside_run`` (no reading inside the timed run: the energy is
    the mean power of another time, flagged), ``switch_readings_not_counted``.

    Returns:
        (row with the keys of :data:`FILE_ENERGY_SCHEMA` from ``kind`` on, issues).
    """
    issues: list[Issue] = []
    r = log.readings.sort("time_ms", "line", maintain_order=True)
    hosts = r["host"].drop_nulls().unique().sort().to_list()
    eff = log.conversion_eff if log.conversion_eff is not None else 1.0
    row = {
        "kind": log.kind,
        "host": ",".join(hosts) or None,
        "n_readings": 0,
        "window_s": None,
        "conversion_eff": eff,
        "mean_power_w": None,
        "energy_j": None,
    }
    if len(hosts) > 1:
        issues.append(
            Issue(
                "mixed_hosts",
                "flagged",
                int(r["line"][0]),
                r.height,
                f"readings of {len(hosts)} hosts in one file: {', '.join(hosts[:3])}",
            )
        )
    if log.kind == "switch":
        if log.interconnect_power_est_w is not None:
            row["mean_power_w"] = eff * log.interconnect_power_est_w
            row["energy_j"] = row["mean_power_w"] * time_to_train_ms / 1000.0
        else:
            row["energy_j"] = 0.0
            if r.height:
                issues.append(
                    Issue(
                        "switch_readings_not_counted",
                        "flagged",
                        int(r["line"][0]),
                        r.height,
                        "switch power readings without interconnect_power_est: not counted (mlcommons/logging counts only the estimate)",
                    )
                )
        if r.height and run_start_ms is not None and run_stop_ms is not None:
            inside = r.filter(pl.col("time_ms").is_between(run_start_ms, run_stop_ms)).height
            if inside == 0:
                issues.append(_outside_run(r, run_start_ms, run_stop_ms))
        return row, issues
    if log.start_ms is None:
        issues.append(
            Issue(
                "measurement_marker",
                "excluded",
                None,
                r.height,
                "no power_measurement_start: the run's energy is not computed",
            )
        )
        return row, issues
    stop = log.stop_ms
    if stop is None:
        after = r.filter(pl.col("time_ms") >= log.start_ms)
        if after.height == 0:
            issues.append(
                Issue(
                    "measurement_marker",
                    "excluded",
                    log.start_line,
                    0,
                    "no power_measurement_stop and no reading after the start",
                )
            )
            return row, issues
        stop = float(after["time_ms"].max())
        issues.append(
            Issue(
                "measurement_marker",
                "corrected",
                log.start_line,
                0,
                "no power_measurement_stop: the last reading taken as the stop",
            )
        )
    inside = r.filter(_in_window(log, stop))
    n_out = r.height - inside.height
    if n_out:
        first = int(r.filter(~_in_window(log, stop))["line"][0])
        issues.append(
            Issue(
                "readings_outside_window",
                "excluded",
                first,
                n_out,
                f"{n_out} readings outside the measurement window",
            )
        )
    window = stop - log.start_ms
    row["n_readings"] = inside.height
    row["window_s"] = window / 1000.0
    if window <= 0 or inside.height == 0:
        issues.append(
            Issue(
                "measurement_marker",
                "excluded",
                log.start_line,
                inside.height,
                f"empty measurement window ({window / 1000:.3f} s, {inside.height} readings)",
            )
        )
        return row, issues
    t = inside["time_ms"]
    dt = t.diff().fill_null(t[0] - log.start_ms)
    dup = inside.filter(dt == 0)
    if dup.height:
        issues.append(
            Issue(
                "duplicate_reading",
                "flagged",
                int(dup["line"][0]),
                dup.height,
                f"{dup.height} readings at the time of the one before (zero duration, no energy)",
            )
        )
    gaps = dt.filter(dt > GAP_MS)
    if gaps.len():
        g_line = int(inside.filter(dt > GAP_MS)["line"][0])
        issues.append(
            Issue(
                "gap",
                "flagged",
                g_line,
                int(gaps.len()),
                f"{gaps.len()} gaps over {GAP_MS / 1000:g} s, longest {gaps.max() / 1000:g} s (the next reading stands for the gap)",
            )
        )
    if inside.height < MIN_READINGS:
        issues.append(
            Issue(
                "too_few_readings",
                "flagged",
                log.start_line,
                inside.height,
                f"{inside.height} readings in the window, under the {MIN_READINGS} the rules ask",
            )
        )
    window_j = eff * float((inside["power_w"] * dt).sum()) / 1000.0
    row["mean_power_w"] = window_j * 1000.0 / window
    row["energy_j"] = window_j * time_to_train_ms / window
    if row["mean_power_w"] < MIN_NODE_MEAN_W:
        issues.append(
            Issue(
                "implausible_power",
                "flagged",
                int(inside["line"][0]),
                inside.height,
                f"mean node power {row['mean_power_w']:.3g} W, under {MIN_NODE_MEAN_W:g} W: no "
                "training node draws so little (readings in kW logged as W?); energy kept as logged",
            )
        )
    if run_start_ms is not None and run_stop_ms is not None:
        in_run = inside.filter(pl.col("time_ms").is_between(run_start_ms, run_stop_ms)).height
        if in_run == 0:
            issues.append(_outside_run(inside, run_start_ms, run_stop_ms))
        else:
            missed = max(0.0, log.start_ms - run_start_ms) + max(0.0, run_stop_ms - stop)
            if missed > _WINDOW_SLACK_MS:
                issues.append(
                    Issue(
                        "window_misses_run",
                        "flagged",
                        log.start_line,
                        0,
                        f"the measurement window misses {missed / 1000:.1f} s of the timed run",
                    )
                )
    return row, issues


def _outside_run(r: pl.DataFrame, run_start_ms: float, run_stop_ms: float) -> Issue:
    lo, hi = float(r["time_ms"].min()), float(r["time_ms"].max())
    off = (lo - run_stop_ms) if lo > run_stop_ms else (hi - run_start_ms)
    return Issue(
        "readings_outside_run",
        "flagged",
        int(r["line"][0]),
        r.height,
        f"no reading inside the timed run (readings {off / 1000:+.0f} s off it: a clock or time-zone error?)",
    )


def _ms(value) -> float | None:
    """A Datetime (ms, UTC) of the runs frame as epoch milliseconds."""
    return None if value is None else value.timestamp() * 1000.0


def _run_rows(
    folder: Path,
    runs: pl.DataFrame,
    issues: dict,
    files: list[dict],
    interconnect: dict[str, bool] | None = None,
) -> list[dict]:
    """The run rows of one folder; ``interconnect`` gets, per result name, whether a switch file of
    the run logs ``interconnect_power_est`` (its energy counts the interconnect)."""
    interconnect = {} if interconnect is None else interconnect
    out = []
    for run in runs.iter_rows(named=True):
        name = Path(run["result_file"]).stem
        pdir = folder / "power" / name
        nodes, sws = sorted(pdir.glob("node_*.txt")), sorted(pdir.glob("sw_*.txt"))
        notes = []
        ttt = run["time_to_train_min"]
        rec = {
            k: run.get(k)
            for k in ("round", "submitter", "system", "benchmark", "result_file", "status")
        }
        rec |= {"time_to_train_min": ttt, "n_node_files": len(nodes), "n_switch_files": len(sws)}
        energies = {"node": [], "switch": []}
        power = []
        host_of: dict[str, list[str]] = defaultdict(list)
        if not nodes:
            notes.append("no node power file")
            issues[("missing_power_log", "flagged")].append(
                (
                    pdir,
                    Issue(
                        "missing_power_log",
                        "flagged",
                        None,
                        0,
                        "no power/<result>/node_*.txt for this result",
                    ),
                )
            )
        interconnect[name] = False
        for path in [*nodes, *sws]:
            log = read_power_log(path)
            if log.kind == "switch" and log.interconnect_power_est_w is not None:
                interconnect[name] = True
            if ttt is None:
                row, found = {"kind": log.kind}, log.issues
            else:
                row, found = file_energy(
                    log, ttt * 60000.0, _ms(run["run_start"]), _ms(run["run_stop"])
                )
                found = log.issues + found
            for iss in found:
                issues[(iss.check, iss.action)].append((path, iss))
            files.append({"benchmark_dir": str(folder), "result": name, "file": str(path), **row})
            energies[log.kind].append(row.get("energy_j"))
            if log.kind == "node":
                power.append(row.get("mean_power_w"))
                if row.get("host"):
                    host_of[row["host"]].append(path.name)
        for host, names in host_of.items():
            if len(names) > 1:
                issues[("duplicate_host", "flagged")].append(
                    (
                        pdir / names[1],
                        Issue(
                            "duplicate_host",
                            "flagged",
                            None,
                            len(names),
                            f"host {host!r} in {len(names)} node files: {', '.join(names)}",
                        ),
                    )
                )
        n_nodes = run.get("n_nodes")
        if nodes and n_nodes is not None and n_nodes != len(nodes):
            issues[("node_count", "flagged")].append(
                (
                    pdir,
                    Issue(
                        "node_count",
                        "flagged",
                        None,
                        len(nodes),
                        f"{len(nodes)} node power files for a run on {n_nodes} nodes (the rules measure all nodes)",
                    ),
                )
            )
        node_e, sw_e = energies["node"], energies["switch"]
        ok = bool(node_e) and all(e is not None for e in node_e + sw_e) and ttt is not None
        rec["node_energy_j"] = sum(node_e) if ok else None
        rec["interconnect_energy_j"] = sum(sw_e) if ok else None
        rec["energy_j"] = rec["node_energy_j"] + rec["interconnect_energy_j"] if ok else None
        rec["energy_kwh"] = rec["energy_j"] / _J_PER_KWH if ok else None
        rec["mean_power_kw"] = (
            sum(power) / 1000.0 if ok and all(p is not None for p in power) else None
        )
        if ttt is None:
            notes.append("no time to train")
        elif nodes and not ok:
            notes.append("a power file gives no energy (see the quality table)")
        rec["note"] = "; ".join(notes)
        out.append(rec)
    return out


def _olympic(
    runs: pl.DataFrame, benchmark: str | None, factor: float | None
) -> tuple[float | None, list[str], list[str]]:
    """Olympic mean of the energies over the runs the time score keeps (mlperf-logging's
    ``_index_olympic_average``: sorted by time to train, drop max_dropped at each end, a failed run
    counting as a dropped slowest one), times the scaling factor. Returns (J or None, kept result
    files, notes)."""
    ok = runs.filter((pl.col("status") == "success") & pl.col("time_to_train_min").is_not_null())
    dropped = runs.height - ok.height
    max_dropped = 4 if benchmark == "unet3d" else 1
    if dropped > max_dropped or factor is None:
        return None, [], ["the time-to-train score does not stand, so neither does the energy"]
    order = ok.with_row_index("i").sort("time_to_train_min", maintain_order=True)
    kept = order.slice(max_dropped, max(0, ok.height - max_dropped - (max_dropped - dropped)))
    if kept.height == 0:
        return None, [], ["too few runs for an olympic mean"]
    if kept["energy_j"].null_count():
        return None, kept["result_file"].to_list(), ["a run the score keeps has no energy"]
    avg = summarizer_function("_index_olympic_average")(
        ok["energy_j"].to_list(), order["i"].to_list(), dropped, max_dropped
    )
    return (None if avg is None else avg * factor), kept["result_file"].to_list(), []


def _across_runs(folder: Path, runs: pl.DataFrame, ic: dict[str, bool], qlog: QualityLog) -> None:
    """Checks across the runs of one folder: ``interconnect_inconsistent`` (some runs' switch files log
    ``interconnect_power_est``, others' do not: their energies count the interconnect differently)
    and ``orphan_power_log`` (a ``power/<name>`` folder with no result file ``<name>.txt``)."""
    with_ic = sorted(n for n, v in ic.items() if v)
    without = sorted(n for n, v in ic.items() if not v)
    if with_ic and without:
        qlog.add(
            str(folder / "power"),
            "interconnect_inconsistent",
            "flagged",
            f"interconnect_power_est in the switch files of {len(with_ic)} run(s) "
            f"({', '.join(with_ic[:3])}) but not of {len(without)} ({', '.join(without[:3])}): "
            "those runs' energies leave the interconnect out, so the runs are not comparable",
            n_series=len(without),
        )
    pdir = folder / "power"
    if not pdir.is_dir():
        return
    stems = {Path(f).stem for f in runs["result_file"].drop_nulls().to_list()}
    orphans = sorted(d.name for d in pdir.iterdir() if d.is_dir() and d.name not in stems)
    if orphans:
        qlog.add(
            str(pdir / orphans[0]),
            "orphan_power_log",
            "flagged",
            f"{len(orphans)} power folder(s) with no result file ({', '.join(orphans[:3])}): "
            "not counted (no run to give a time to train)",
            n_series=len(orphans),
        )


def _folder(folder: Path, runs: pl.DataFrame | None, qlog: QualityLog, files: list[dict]):
    if runs is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the result logs' own checks are load_results' report
            runs = load_results(folder).runs
    else:
        here = folder.resolve()
        runs = runs.filter(
            pl.col("result_file").map_elements(
                lambda f: Path(f).resolve().parent == here, return_dtype=pl.Boolean
            )
        )
    issues: dict[tuple[str, str], list[tuple[Path, Issue]]] = defaultdict(list)
    ic: dict[str, bool] = {}
    rows = [{**r, "in_score": None} for r in _run_rows(folder, runs, issues, files, ic)]
    _across_runs(folder, runs, ic, qlog)
    run_rows = (
        pl.DataFrame(rows, schema=RUN_ENERGY_SCHEMA)
        if rows
        else pl.DataFrame(schema=RUN_ENERGY_SCHEMA)
    )
    n_files = len({(f["result"], f["file"]) for f in files if f["benchmark_dir"] == str(folder)})
    for (check, action), hits in issues.items():
        path, first = hits[0]
        n_file = len({p for p, _ in hits})
        qlog.add(
            str(path),
            check,
            action,
            f"{n_file} of {n_files} power files (first {path.name} of {path.parent.name}): {first.detail}"
            if n_files > 1
            else first.detail,
            n_series=n_file,
            n_samples=sum(i.n_samples for _, i in hits),
            first_line=first.line,
        )
    try:
        factor = scaling_factor(folder)
    except ValueError:
        factor = None
    bench = runs["benchmark"].drop_nulls()
    benchmark = bench[0] if bench.len() else None
    energy, kept, notes = (
        _olympic(run_rows, benchmark, factor) if run_rows.height else (None, [], ["no runs"])
    )
    run_rows = run_rows.with_columns(pl.col("result_file").is_in(kept).alias("in_score")).select(
        list(RUN_ENERGY_SCHEMA)
    )
    score = score_runs(runs).row(0, named=True) if runs.height else {}
    if factor is not None and factor != 1.0 and energy is not None:
        notes.append(f"scaled by scaling.json factor {factor}")
    srow = {
        k: score.get(k)
        for k in (
            "round",
            "submitter",
            "system",
            "benchmark",
            "n_accelerators",
            "n_runs",
            "score_min",
            "scaling_factor",
        )
    }
    srow |= {
        "n_runs_with_energy": int(run_rows["energy_j"].is_not_null().sum()),
        "energy_to_train_j": energy,
        "energy_to_train_kwh": None if energy is None else energy / _J_PER_KWH,
        "note": "; ".join(notes),
    }
    return run_rows, srow


def energy_to_train(result_dir: str | Path, runs: pl.DataFrame | None = None) -> PowerResult:
    """Energy to train of every MLPerf power result at or under ``result_dir``, as the rules and
    mlcommons/logging's result summarizer compute it (module docstring).

    Args:
        result_dir: a benchmark folder (``.../results/<system>/<benchmark>`` holding ``result_*.txt``
            and ``power/result_*/node_*.txt``) or any folder above such folders. Folders without
            ``power/`` give no rows.
        runs: the ``runs`` frame of :func:`trainperf.mlperf.load_results` for these folders, if the
            caller has it (the MLPerf record does); read here otherwise.

    Returns:
        :class:`PowerResult`: ``scores`` (:data:`SCORE_ENERGY_SCHEMA`: round, submitter, system,
        benchmark, n_accelerators, n_runs, n_runs_with_energy, score_min (min, the time-to-train
        score), scaling_factor, energy_to_train_j (J, the olympic mean over the runs the score keeps
        x scaling factor; null when the score or a kept run's energy is missing),
        energy_to_train_kwh (kWh = J / 3.6e6), note); ``runs`` (:data:`RUN_ENERGY_SCHEMA`:
        mean_power_kw is the sum of the nodes' DC mean power over their windows, node_energy_j and
        interconnect_energy_j the two terms of the rules, in_score whether the olympic mean keeps
        the run); ``files`` (:data:`FILE_ENERGY_SCHEMA`, one row per power log file); ``quality``; ``warnings``. Damage never raises: each check is a
        quality row and a :class:`~trainperf.power.read.PowerLogWarning` naming the first file and line.
    """
    qlog = QualityLog(category=PowerLogWarning)
    files: list[dict] = []
    run_frames, score_rows = [], []
    for folder in find_power_folders(result_dir):
        rr, srow = _folder(folder, runs, qlog, files)
        run_frames.append(rr)
        score_rows.append(srow)
    quality = qlog.frame()
    texts = [
        f"{r['source']}{':' + str(r['first_line']) if r['first_line'] is not None else ''}: {r['detail']} ({r['check']}: {r['action']})"
        for r in quality.iter_rows(named=True)
    ]
    return PowerResult(
        runs=pl.concat(run_frames) if run_frames else pl.DataFrame(schema=RUN_ENERGY_SCHEMA),
        files=pl.DataFrame(files, schema=FILE_ENERGY_SCHEMA)
        if files
        else pl.DataFrame(schema=FILE_ENERGY_SCHEMA),
        scores=pl.DataFrame(score_rows, schema=SCORE_ENERGY_SCHEMA),
        quality=quality,
        warnings=texts,
    )
