"""GPU energy of a user's MLPerf run from cluster telemetry (the config's ``telemetry:``): a
dcgm-exporter exposition file and the same samples as CSV, built here, whose energy per run and per
phase a hand integration of the same samples confirms (issue 42: "a user's telemetry gives energy
per run and per token that a hand integration of the same samples confirms").

The fixture: an MLPerf Llama 2 70B LoRA log of our own (init 0-10 s, run 10-60 s: train 10-30 and
35-55 s, eval 30-35 and 55-60 s, 320 samples) and 1 Hz telemetry of three hosts: ``n1`` with the
energy counter (``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION``, mJ, which the integration must prefer),
``n2`` with board power only (``DCGM_FI_DEV_POWER_USAGE``, W: the trapezoid rule), both in Slurm
job 4242, and ``n3`` running another job, which must not count."""

from __future__ import annotations

import json

import pytest

from trainperf.telemetry.energy_source import run_energy_from_telemetry

T0 = 1796670000  # epoch s of init_start
SAMPLES = list(range(-5, 66))  # sample times, s after T0, 1 Hz
PHASES = {"init": [(0, 10)], "train": [(10, 30), (35, 55)], "eval": [(30, 35), (55, 60)]}
RUN = (10, 60)
HOSTS = {"n1": ("4242", True), "n2": ("4242", False), "n3": ("999", True)}  # job, has counter


def _power(t: int, gpu: int) -> float:
    """Board power of a GPU at t (W): low in init, high in training, half in eval, never the same
    value twice in a row (a value repeated bit for bit is a stale field the reader drops)."""
    jitter = 0.37 * ((7 * t + 3 * gpu) % 11)
    if t < 10:
        return 150.0 + 10 * gpu + jitter
    if any(a <= t < b for a, b in PHASES["eval"]):
        return 300.0 + gpu + jitter
    return 650.0 + 20 * gpu + 5 * (t % 3) + jitter


def _counter(t_index: int, gpu: int) -> float:
    """The energy counter (mJ) at sample t_index: a base since the driver loaded, plus each second's
    power x 1 s (the counter's increase between two samples is the energy between them)."""
    return 5e9 + gpu * 1e8 + sum(_power(t, gpu) * 1000.0 for t in SAMPLES[1 : t_index + 1])


def _series():
    for host, (job, has_counter) in HOSTS.items():
        for gpu in (0, 1):
            for i, t in enumerate(SAMPLES):
                labels = {
                    "gpu": str(gpu),
                    "UUID": f"GPU-{host}-{gpu}",
                    "Hostname": host,
                    "hpc_job": job,
                }
                yield t, "DCGM_FI_DEV_POWER_USAGE", labels, _power(t, gpu)
                if has_counter:
                    yield t, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", labels, _counter(i, gpu)


def _exposition(path):
    lines = []
    for t in SAMPLES:
        lines.append(f"# SCRAPE {T0 + t}.000")
        for ts, name, labels, v in _series():
            if ts == t:
                lab = ",".join(f'{k}="{val}"' for k, val in labels.items())
                lines.append(f"{name}{{{lab}}} {v:.3f} {(T0 + t) * 1000}")
    path.write_text("\n".join(lines) + "\n")
    return path


def _csv(path):
    rows = ["timestamp,field,value,hostname,gpu,UUID,hpc_job"]
    for t, name, lab, v in _series():
        rows.append(
            f"{T0 + t},{name},{v:.3f},{lab['Hostname']},{lab['gpu']},{lab['UUID']},{lab['hpc_job']}"
        )
    path.write_text("\n".join(rows) + "\n")
    return path


def _log(path):
    def ev(t, key, value=None, md=None, kind="POINT_IN_TIME"):
        return ":::MLLOG " + json.dumps({
            "namespace": "", "time_ms": (T0 + t) * 1000, "event_type": kind, "key": key,
            "value": value, "metadata": {"file": "train.py", "lineno": 1, **(md or {})},
        })  # fmt: skip

    s, e = "INTERVAL_START", "INTERVAL_END"
    lines = [ev(0, "submission_benchmark", "llama2_70b_lora"), ev(0, "submission_org", "Us"),
             ev(0, "submission_division", "closed"), ev(0, "submission_status", "onprem"),
             ev(0, "global_batch_size", 8), ev(0, "init_start", kind=s), ev(10, "init_stop", kind=e),
             ev(10, "run_start", kind=s)]  # fmt: skip
    done = 0
    for (a, b), (c, d) in zip(PHASES["train"], PHASES["eval"], strict=True):
        lines += [ev(a, "block_start", None, {"samples_count": done}, s)]
        done += 160
        lines += [ev(b, "block_stop", None, {"samples_count": done}, e),
                  ev(c, "eval_start", None, {"samples_count": done}, s),
                  ev(d, "eval_stop", None, {"samples_count": done}, e),
                  ev(d, "eval_accuracy", 0.92, {"samples_count": done})]  # fmt: skip
    lines.append(ev(60, "run_stop", None, {"status": "success", "samples_count": done}, e))
    path.write_text("\n".join(lines) + "\n")
    return path


def _hand(spans) -> float:
    """Energy (J) of the job's four GPUs over whole-second spans, by hand: n1 the counter's increase
    between the samples at a and b (mJ / 1000); n2 the trapezoid of its 1 Hz power samples."""
    total = 0.0
    for a, b in spans:
        ia, ib = SAMPLES.index(a), SAMPLES.index(b)
        for gpu in (0, 1):
            total += (_counter(ib, gpu) - _counter(ia, gpu)) / 1000.0  # n1: counter
            total += sum(
                0.5 * (_power(t, gpu) + _power(t + 1, gpu)) for t in range(a, b)
            )  # n2: trapezoid, 1 s apart
    return total


@pytest.mark.parametrize("kind", ["exposition", "csv"])
def test_a_users_telemetry_gives_energy_per_run_and_phase_as_a_hand_integration(tmp_path, kind):
    source = (
        _exposition(tmp_path / "dcgm.prom") if kind == "exposition" else _csv(tmp_path / "dcgm.csv")
    )
    log = _log(tmp_path / "result_0.txt")
    got = run_energy_from_telemetry(
        str(source), str(log), job_id="4242", scratch_dir=tmp_path / "scratch"
    )
    s = {r["kind"]: r for r in got.energy.summary.iter_rows(named=True)}
    run = _hand([RUN])
    # n1's counter: 2 GPUs x (650..680 W x 40 s of training + ~300 W x 10 s of eval) ~ 58 kJ;
    # the hand sum, not a constant: the samples above
    assert s["run"]["energy_j"] == pytest.approx(run, rel=1e-9)
    assert s["run"]["n_gpus"] == 4  # n3 (job 999) left out
    assert s["run"]["energy_kwh"] == pytest.approx(run / 3.6e6, rel=1e-9)
    assert s["run"]["mean_power_w_per_gpu"] == pytest.approx(run / 50.0 / 4, rel=1e-9)
    # the log's 320 samples (samples_to_converge of a LoRA run): J per sample
    assert s["run"]["j_per_sample"] == pytest.approx(run / 320, rel=1e-9)
    for phase in ("init", "train", "eval"):
        assert s[phase]["energy_j"] == pytest.approx(_hand(PHASES[phase]), rel=1e-9), phase
    assert s["run"]["source"] == "mixed"  # n1 from the counter, n2 from power
    assert s["run"]["scope"] == "GPU boards only"
    assert got.synthetic is False and got.n_hosts == 2
    assert got.source == source.name  # the file's name, never the build machine's path


def test_a_job_not_in_the_telemetry_is_one_quality_row_not_an_exception(tmp_path):
    with pytest.warns(UserWarning, match="job '7' not found"):  # the warning names file and job
        got = run_energy_from_telemetry(
            str(_csv(tmp_path / "dcgm.csv")), str(_log(tmp_path / "result_0.txt")), job_id="7"
        )
    assert got.energy.summary.height == 0
    q = got.quality.filter(got.quality["check"] == "unreadable")
    assert q.height == 1 and "7" in q["detail"][0] and "4242" in q["detail"][0]
