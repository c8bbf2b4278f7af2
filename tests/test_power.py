"""MLPerf power logs: the reader's checks, energy by the rules (hand computations), and equality with
mlcommons/logging's result summarizer (its own functions on the same files, and on the published
Dell v4.1 and Lenovo v5.0 folders when the mirror is here)."""

from __future__ import annotations

import hashlib
import subprocess
import warnings
from pathlib import Path

import polars as pl
import pytest
from helpers import gpt3_run, mllog
from mlperf_logging.compliance_checker.mlp_parser import parse_file
from mlperf_logging.result_summarizer import result_summarizer as rs

from trainperf.mlperf import load_results
from trainperf.power import energy as power_energy
from trainperf.power import energy_to_train, file_energy, read_power_log

T0 = 1_700_000_000_000


def _power_lines(start, stop, readings, eff=0.95, host="node_0", extra=()):
    """A node power log: start/stop markers and readings [(time_ms, W)], as power_measurement.py writes."""
    lines = [mllog("power_measurement_start", None, start, event_type="INTERVAL_START")]
    if eff is not None:
        lines.append(mllog("conversion_eff", eff, start, {"measurement_type": "AC"}))
    lines += [mllog("power_reading", w, t, {"host": host}) for t, w in readings]
    lines += list(extra)
    if stop is not None:
        lines.append(mllog("power_measurement_stop", None, stop, event_type="INTERVAL_END"))
    return lines


def _write(path: Path, lines) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def _small_node(tmp_path):
    # start at T0; readings +1 s 100 W, +2 s 200 W, +2 s again 999 W (duplicate: zero duration),
    # +4 s 300 W (after a 2 s gap); stop at +4 s; conversion_eff 0.9
    readings = [(T0 + 1000, 100.0), (T0 + 2000, 200.0), (T0 + 2000, 999.0), (T0 + 4000, 300.0)]
    return _write(tmp_path / "node_0.txt", _power_lines(T0, T0 + 4000, readings, eff=0.9))


def test_file_energy_by_hand(tmp_path):
    log = read_power_log(_small_node(tmp_path))
    # sum P*dt = 100*1 + 200*1 + 999*0 + 300*2 = 900 J over a 4 s window (mean 225 W);
    # x eff 0.9 = 810 J, scaled to a 3 s time to train: 810 * 3/4 = 607.5 J
    row, issues = file_energy(log, 3000.0, T0 + 500, T0 + 3500)
    assert row["energy_j"] == pytest.approx(607.5, rel=1e-12)
    assert row["mean_power_w"] == pytest.approx(202.5, rel=1e-12)  # 0.9 * 225 W
    checks = {i.check: i for i in issues}
    assert checks["duplicate_reading"].line == 5 and checks["duplicate_reading"].n_samples == 1
    assert checks["gap"].line == 6  # the 300 W reading after 2 s
    assert checks["too_few_readings"].n_samples == 4


def test_file_energy_equals_summarizer_functions(tmp_path):
    """The summarizer's own per-file functions (``_compute_power_node`` / ``_compute_power_sw``) on the
    same files give the same energy."""
    node = _small_node(tmp_path)
    sw = _write(
        tmp_path / "sw_0.txt",
        [mllog("conversion_eff", 0.98, T0), mllog("interconnect_power_est", 250.0, T0)],
    )
    for path, fn in ((node, rs._compute_power_node), (sw, rs._compute_power_sw)):
        loglines, _ = parse_file(str(path), ruleset="4.1.0")
        expected = fn(loglines, 3000.0)
        row, _ = file_energy(read_power_log(path), 3000.0)
        assert row["energy_j"] == pytest.approx(expected, rel=1e-12)
    # and the switch by hand: 0.98 * 250 W * 3 s
    assert file_energy(read_power_log(sw), 3000.0)[0]["energy_j"] == pytest.approx(735.0)


def _folder(results_tree, minutes=(1.0, 2.0, 5.0), node_hosts=("node_0", "node_1")):
    """Runs of 1, 2 and 5 minutes; two nodes at a constant 1000 W (AC, eff 0.95) read every second from
    2 s before run_start to 1 s after run_stop; a switch estimated at 200 W (eff 1.0)."""
    starts = []
    for i, m in enumerate(minutes):
        t0 = T0 + i * 3_600_000
        res = results_tree.add("sysP", "gpt3", i, gpt3_run(t0=t0, minutes=m), nodes=2)
        stop = int(t0 + m * 60_000) + 1000
        pdir = res.parent / "power" / f"result_{i}"
        readings = [(t, 1000.0) for t in range(t0 - 1000, stop + 1, 1000)]
        for k, host in enumerate(node_hosts):
            _write(pdir / f"node_{k}.txt", _power_lines(t0 - 2000, stop, readings, host=host))
        _write(
            pdir / "sw_0.txt",
            [mllog("conversion_eff", 1.0, t0), mllog("interconnect_power_est", 200.0, t0)],
        )
        starts.append(t0)
    return res.parent


def test_energy_to_train_olympic_by_hand(results_tree):
    folder = _folder(results_tree)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a clean folder warns nothing
        res = energy_to_train(folder)
    # a run draws 2 x 0.95 x 1000 W + 200 W = 2100 W: 126 kJ, 252 kJ, 630 kJ for 60, 120, 300 s
    runs = res.runs.sort("time_to_train_min")
    assert runs["energy_j"].to_list() == pytest.approx([126_000.0, 252_000.0, 630_000.0])
    assert runs["interconnect_energy_j"].to_list() == pytest.approx([12_000.0, 24_000.0, 60_000.0])
    assert runs["in_score"].to_list() == [False, True, False]
    s = res.scores.row(0, named=True)
    # olympic mean over the run the time score keeps (the 2-minute one), not the mean of all (336 kJ)
    assert s["energy_to_train_j"] == pytest.approx(252_000.0)
    assert s["energy_to_train_kwh"] == pytest.approx(252_000.0 / 3.6e6)
    assert s["score_min"] == pytest.approx(2.0)
    assert res.quality.height == 0


def test_the_record_passes_its_own_runs(results_tree, monkeypatch):
    """The MLPerf record (issue 36) has the runs already: passed in, with relative paths, they give the
    same energy, and the result logs are not read again."""
    folder = _folder(results_tree)
    runs = load_results(folder).runs
    monkeypatch.chdir(folder.parent)
    rel = runs.with_columns(pl.col("result_file").str.replace(f"^{folder.parent}/", ""))
    monkeypatch.setattr(power_energy, "load_results", None)  # would fail if called
    res = energy_to_train(folder.name, runs=rel)
    assert res.scores["energy_to_train_j"][0] == pytest.approx(252_000.0)


def test_damage_is_flagged_with_file_and_line(results_tree):
    folder = _folder(results_tree, node_hosts=("node_0", "node_0"))  # a node's file copied
    p = folder / "power" / "result_1" / "node_1.txt"
    text = p.read_text().splitlines()
    text.insert(3, mllog("power_reading", "n/a", T0, {"host": "node_0"}))  # not a number
    text.insert(4, "this line is not MLLOG")  # ignored: no token
    text.insert(5, ":::MLLOG {broken")
    p.write_text("\n".join(text) + "\n")
    q = folder / "power" / "result_2" / "node_0.txt"
    q.write_text(q.read_text().replace('"value": 0.95', '"value": 95'))  # a percent, not a fraction
    with pytest.warns(Warning) as rec:
        res = energy_to_train(folder)
    qual = {r["check"]: r for r in res.quality.iter_rows(named=True)}
    assert qual["duplicate_host"]["n_series"] == 3  # one per run
    assert qual["out_of_range"]["first_line"] == 4 and qual["out_of_range"]["source"].endswith(
        "result_1/node_1.txt"
    )
    assert qual["parse_error"]["first_line"] == 6
    assert qual["conversion_eff"]["action"] == "excluded"
    assert any("node_1.txt:4" in str(w.message) for w in rec)
    # the bad conversion_eff is dropped: that node counts at 1.0 (DC assumed, flagged), the energy stays finite
    run2 = res.runs.filter(pl.col("result_file").str.ends_with("result_2.txt")).row(0, named=True)
    assert run2["energy_j"] == pytest.approx((1000.0 + 950.0 + 200.0) * 300.0)


def test_missing_start_gives_no_energy_and_no_exception(results_tree):
    folder = _folder(results_tree)
    p = folder / "power" / "result_1" / "node_0.txt"
    p.write_text(
        "\n".join(x for x in p.read_text().splitlines() if "power_measurement_start" not in x)
        + "\n"
    )
    with pytest.warns(Warning, match="no power_measurement_start"):
        res = energy_to_train(folder)
    assert (
        res.runs.filter(pl.col("result_file").str.ends_with("result_1.txt"))["energy_j"][0] is None
    )
    s = res.scores.row(0, named=True)
    assert s["energy_to_train_j"] is None and "has no energy" in s["note"]
    assert res.runs["energy_j"].null_count() == 1  # the other runs keep theirs


def test_readings_outside_the_run_are_flagged(tmp_path):
    # a switch log whose clock is 5 h off (as Dell v4.1's sw_0.txt): readings, no estimate
    sw = _write(
        tmp_path / "sw_0.txt",
        _power_lines(T0 - 18_000_000, T0 - 17_000_000, [(T0 - 17_500_000, 700.0)], eff=0.96),
    )
    row, issues = file_energy(read_power_log(sw), 60_000.0, T0, T0 + 60_000)
    assert row["energy_j"] == 0.0  # the summarizer counts only interconnect_power_est
    assert {i.check for i in issues} == {"switch_readings_not_counted", "readings_outside_run"}


# --- the published folders (mirror only) --------------------------------------------------------

MIRROR = Path("/work/.mirror")
FOLDERS = [
    ("mlcommons+training_results_v4.1", "Dell/results/8xXE9680x8H100-SXM-80GB-POWER", "4.1.0"),
    ("mlcommons+training_results_v5.0", "Lenovo/results/SR780aV3-8xB200_SXM_180GB", "5.0.0"),
]


@pytest.mark.parametrize(("repo", "path", "ruleset"), FOLDERS)
def test_published_power_results_equal_the_summarizer(tmp_path, repo, path, ruleset):
    """Energy to train of every benchmark of a published power system equals mlcommons/logging's
    result summarizer (``_compute_strong_score_standalone``, per run and olympic)."""
    git_dir = MIRROR / repo / "repo"
    if not git_dir.is_dir():
        pytest.skip(f"mirror of {repo} not on this machine")
    tar = subprocess.run(
        ["git", f"--git-dir={git_dir}", "archive", "HEAD", path], capture_output=True, check=False
    )
    subprocess.run(["tar", "-x", "-C", str(tmp_path)], input=tar.stdout, check=True)
    system = tmp_path / path
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = energy_to_train(system)
    assert res.scores.height >= 1
    for s in res.scores.iter_rows(named=True):
        folder = system / s["benchmark"]
        tracks, power_tracks, _, power_score, _ = rs._compute_strong_score_standalone(
            s["benchmark"],
            system.name,
            True,
            str(folder),
            "training",
            ruleset,
            return_full_scores=True,
        )
        assert s["energy_to_train_j"] == pytest.approx(power_score, rel=1e-9)
        mine = dict(
            res.runs.filter(pl.col("benchmark") == s["benchmark"])
            .select("result_file", "energy_j")
            .iter_rows()
        )
        for f, e in power_tracks.items():
            assert mine[f] == pytest.approx(e, rel=1e-9)


# --- the bundled derived table ------------------------------------------------------------------

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "reference" / "mlperf_power_runs.csv"


def test_bundled_power_runs_hold_together():
    """data/reference/mlperf_power_runs.csv (scripts/derive_mlperf_power.py): each score is the olympic
    mean of the runs it keeps x scaling factor, and equals the summarizer's value recorded beside it."""
    t = pl.read_csv(REFERENCE)
    assert set(t["benchmark"]) >= {"llama2_70b_lora"}
    for (_, _, bench), g in t.group_by("round", "system", "benchmark"):
        kept = g.filter(pl.col("in_score"))
        # olympic: all runs but the fastest and the slowest (5 retinanet runs keep 3, 10 keep 8)
        assert kept.height == g.height - 2, bench
        assert set(kept["time_to_train_min"]) == set(
            g.sort("time_to_train_min")["time_to_train_min"][1:-1]
        )
        olympic = kept["energy_j"].mean() * g["scaling_factor"][0]
        assert g["energy_to_train_j"][0] == pytest.approx(olympic, rel=1e-12)
        assert g["energy_to_train_j"][0] == pytest.approx(
            g["summarizer_energy_to_train_j"][0], rel=1e-9
        )
        assert g["source"].str.contains("github.com/mlcommons/training_results_v").all()


def test_bundled_power_runs_name_the_mirrored_files(tmp_path):
    git_dir = MIRROR / FOLDERS[0][0] / "repo"
    if not git_dir.is_dir():
        pytest.skip("mirror of mlcommons/training_results_v4.1 not on this machine")

    path = f"{FOLDERS[0][1]}/llama2_70b_lora/power/result_0"
    tar = subprocess.run(
        ["git", f"--git-dir={git_dir}", "archive", "HEAD", path], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(tmp_path)], input=tar.stdout, check=True)
    files = sorted((tmp_path / path).glob("*.txt"))
    listing = "".join(f"{hashlib.sha256(f.read_bytes()).hexdigest()}  {f.name}\n" for f in files)
    row = (
        pl.read_csv(REFERENCE)
        .filter((pl.col("submitter") == "Dell") & (pl.col("result") == "result_0"))
        .row(0, named=True)
    )
    assert row["power_logs_sha256"] == hashlib.sha256(listing.encode()).hexdigest()
