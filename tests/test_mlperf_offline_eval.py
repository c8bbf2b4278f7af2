"""Checkpoints evaluated after the clock stopped (MLPerf Training rules, training_rules.adoc,
"Quality" and Stable Diffusion: evaluation offline, run_stop stamped with the first passing
checkpoint's time): the eval events are logged after training with later times and run_stop comes
last with an earlier time. That is not a clock step back nor a time out of order; a real step back
inside training still is. Expected values by hand."""

from __future__ import annotations

import pytest
from helpers import load_results_warned as load
from helpers import mllog

T0 = 1_700_000_000_000
MIN = 60_000


def sd_run(step_back_ms: int = 0, stop_min: float = 16.0) -> list[str]:
    """A Stable Diffusion-shaped log: run_start at T0, 10 training blocks of 2 min (block_stop at
    2, 4, ..., 20 min; checkpoints at 8 and 16 min), then the offline evaluation of the two
    checkpoints at 30, 100, 170 and 240 min after T0 (FID and CLIP each), then run_stop stamped
    at ``stop_min`` (the first passing checkpoint, 16 min). ``step_back_ms`` steps the clock back
    from the 6th block on (blocks 6..10 and the stamped run_stop read that much earlier)."""
    lines = [
        mllog("submission_benchmark", "stable_diffusion", T0 - 5000),
        mllog("global_batch_size", 1024, T0 - 4000),
        mllog("seed", 1, T0 - 4000),
        mllog("init_start", None, T0 - 3000, event_type="INTERVAL_START"),
        mllog("init_stop", None, T0 - 10, event_type="INTERVAL_END"),
        mllog("run_start", None, T0, event_type="INTERVAL_START"),
    ]
    for b in range(10):
        shift = -step_back_ms if b >= 5 else 0
        meta = {"samples_count": 51200 * b}
        lines.append(mllog("block_start", "training_step", T0 + b * 2 * MIN + 1 + shift, meta,
                           "INTERVAL_START"))  # fmt: skip
        meta = {"samples_count": 51200 * (b + 1)}
        lines.append(mllog("block_stop", "training_step", T0 + (b + 1) * 2 * MIN + shift, meta,
                           "INTERVAL_END"))  # fmt: skip
    for i, (samples, fid, clip) in enumerate([(204800, 120.0, 0.12), (409600, 85.0, 0.16)]):
        t = T0 + (30 + 140 * i) * MIN
        meta = {"samples_count": samples}
        lines.append(mllog("eval_start", None, t, meta, "INTERVAL_START"))
        lines.append(mllog("eval_stop", None, t + 70 * MIN - 2, meta, "INTERVAL_END"))
        lines.append(mllog("eval_accuracy", fid, t + 70 * MIN - 1, {**meta, "metric": "FID"}))
        lines.append(mllog("eval_accuracy", clip, t + 70 * MIN, {**meta, "metric": "CLIP"}))
    stop = T0 + int(stop_min * MIN) - (step_back_ms if step_back_ms else 0)
    lines.append(mllog("run_stop", None, stop, {"status": "success"}, "INTERVAL_END"))
    return lines


def test_offline_evaluation_after_run_stop_keeps_the_time_to_train(results_tree):
    # run_stop (16 min after run_start, the passing checkpoint) is logged after evaluations 30 to
    # 240 min after run_start: 4 h below the evaluations before it in the file. The time to train
    # is run_stop - run_start = 16 min, as mlperf-logging's summarizer takes it; nothing flagged.
    results_tree.add("sysA", "stable_diffusion", 0, sd_run())
    r, msgs = load(results_tree.root)
    row = r.runs.row(0, named=True)
    assert row["status"] == "success"
    assert row["time_to_train_min"] == pytest.approx(16.0)
    assert "clock_step_back" not in row["quality"] and "time_out_of_order" not in row["quality"]
    assert not any("clock_step_back" in m or "time_out_of_order" in m for m in msgs)


def test_clock_step_back_during_training_before_an_offline_evaluation_is_flagged(results_tree):
    # the clock steps back 5 min at the 6th block: block_start 6 (line 17: 6 header lines,
    # blocks from line 7, two lines a block, the 6th block_start is line 7 + 2 * 5 = 17) reads
    # 10 min + 1 ms - 5 min = 5 min + 1 ms, 5 min - 1 ms below block_stop 5 (10 min): flagged,
    # damaged, no time to train
    results_tree.add("sysA", "stable_diffusion", 0, sd_run(step_back_ms=5 * MIN))
    r, _ = load(results_tree.root)
    row = r.runs.row(0, named=True)
    assert row["status"] == "damaged" and row["time_to_train_min"] is None
    q = r.quality.filter(r.quality["check"] == "clock_step_back").row(0, named=True)
    assert q["first_line"] == 17 and "5.00 min" in q["detail"]


def test_an_eval_logged_with_its_own_later_time_is_no_step_back(results_tree):
    # xFusion's v3.1 bert shape: the final eval_accuracy is logged with the time the evaluation
    # ended (12 min after run_start), then block_stop, epoch_stop and run_stop with the training
    # clock (10 min, 10 min, 10 min + 6 ms): 2 min below the eval, but not below the previous
    # training event (block_start at 0). Time to train (10 x 60,000 + 6) ms = 10.0001 min.
    lines = [
        mllog("submission_benchmark", "bert", T0 - 5000),
        mllog("global_batch_size", 4096, T0 - 4000),
        mllog("seed", 1, T0 - 4000),
        mllog("run_start", None, T0, event_type="INTERVAL_START"),
        mllog("block_start", None, T0 + 1, {"first_epoch_num": 1}, "INTERVAL_START"),
        mllog("eval_accuracy", 0.725, T0 + 12 * MIN, {"epoch_num": 3_000_000}),
        mllog("block_stop", None, T0 + 10 * MIN, {"first_epoch_num": 1}, "INTERVAL_END"),
        mllog("epoch_stop", None, T0 + 10 * MIN, {"epoch_num": 3_000_000}, "INTERVAL_END"),
        mllog("run_stop", None, T0 + 10 * MIN + 6, {"status": "success"}, "INTERVAL_END"),
    ]
    results_tree.add("sysA", "bert", 0, lines)
    r, _ = load(results_tree.root)
    row = r.runs.row(0, named=True)
    assert row["status"] == "success" and "clock_step_back" not in row["quality"]
    assert row["time_to_train_min"] == pytest.approx((10 * 60_000 + 6) / 60_000)


def test_few_long_epochs_do_not_put_run_stop_out_of_order(results_tree):
    # tinycorp's v5.0 retinanet shape: events 1 h 50 min apart (an epoch) and 1 h 25 min (its
    # eval); run_stop at the last eval_stop. Every time is in order; the median of run_stop's 5
    # file-order neighbours lags it by 1 h 25 min, which is no damage. 4 epochs + evals:
    # run_stop - run_start = 4 x (110 + 85) min = 780 min; the last eval, 0.35, meets 0.34.
    lines = [
        mllog("submission_benchmark", "retinanet", T0 - 5000),
        mllog("global_batch_size", 16, T0 - 4000),
        mllog("seed", 1, T0 - 4000),
        mllog("run_start", None, T0, event_type="INTERVAL_START"),
    ]
    t = T0
    for e in range(1, 5):
        lines.append(mllog("epoch_start", e, t, {"epoch_num": e}, "INTERVAL_START"))
        t += 110 * MIN
        lines.append(mllog("epoch_stop", e, t, {"epoch_num": e}, "INTERVAL_END"))
        lines.append(mllog("eval_start", e, t, {"epoch_num": e}, "INTERVAL_START"))
        t += 85 * MIN
        lines.append(mllog("eval_accuracy", 0.31 + 0.01 * e, t, {"epoch_num": e}))
        lines.append(mllog("eval_stop", e, t, {"epoch_num": e}, "INTERVAL_END"))
    lines.append(mllog("run_stop", None, t, {"status": "success"}, "INTERVAL_END"))
    results_tree.add("sysA", "retinanet", 0, lines)
    r, _ = load(results_tree.root)
    row = r.runs.row(0, named=True)
    assert row["quality"] == "" and row["status"] == "success"
    assert row["time_to_train_min"] == pytest.approx(780.0)
