"""Identical outputs (issue 16): the rewritten MLPerf loader against the old one on every bundled log.

The old implementation (one mlperf-logging ``string_to_logline`` per event, a second ``json.loads``
and two ``json.dumps``) is kept verbatim in ``tests/mlperf_reference.py`` as the reference only.
"""

from __future__ import annotations

import subprocess
import sys

import mlperf_reference as old
import polars as pl
import pytest
from helpers import MLPERF
from mlperf_logging.result_summarizer import result_summarizer as rs
from polars.testing import assert_frame_equal

from trainperf import mlperf
from trainperf.mlperf import rules


@pytest.fixture(scope="module")
def both():
    return old.load_results(MLPERF), mlperf.load_results(MLPERF)


def test_events_identical(both):
    ref, new = both
    assert new.events.height == ref.events.height > 40_000
    assert_frame_equal(new.events, ref.events)


# the benchmarks the old loader knew; llama31_405b (v5.0) came later, and its samples_to_converge
# from samples_count with it (issue 24)
KNOWN = pl.col("benchmark").is_in(["gpt3", "llama2_70b_lora"])


def test_runs_identical_in_the_old_columns(both):
    ref, new = both
    assert_frame_equal(new.runs.select(ref.runs.columns).filter(KNOWN), ref.runs.filter(KNOWN))
    # the new column is empty on clean logs, and no data-quality row fired
    assert set(new.runs["quality"].to_list()) == {""}
    assert new.quality.height == 0 and new.warnings == ref.warnings == []


def test_scores_identical(both):
    ref, new = both
    assert_frame_equal(new.scores, ref.scores)


def test_throughput_and_eval_curve_identical(both):
    ref, new = both
    # GPT-3 rows: LoRA and llama31_405b rows gained end-to-end FLOPs since (issue 24)
    gpt3 = pl.col("benchmark") == "gpt3"
    before = old.throughput(ref).filter(gpt3)
    # the columns the reference had are unchanged; later columns (FP4, samples, the run's own
    # precision) are new
    now = mlperf.throughput(new).filter(gpt3)
    assert_frame_equal(now.select(before.columns).drop("note"), before.drop("note"))
    # the note says more now (the precision the log states, or which peak each MFU assumes)
    for a, b in zip(now["note"], before["note"], strict=True):
        assert a.endswith(b)
    assert_frame_equal(mlperf.eval_curve(new).filter(KNOWN), old.eval_curve(ref).filter(KNOWN))
    assert_frame_equal(mlperf.blocks(new.events), old.blocks(ref.events))
    # the v5.x logs' "train_step_time" (NVIDIA's name since v5.0) is read now: the files the
    # reference timed keep their rows
    was = old.step_times(ref.events)
    now_st = mlperf.step_times(new.events)
    assert_frame_equal(now_st.filter(pl.col("file").is_in(was["file"].unique().to_list())), was)


def test_parse_log_identical_on_each_file():
    for f in mlperf.find_result_files(MLPERF):
        assert_frame_equal(mlperf.parse_log(f), old.parse_log(f), check_exact=True)


def test_olympic_rule_is_the_summarizers_code():
    # the function compiled from the package's source is the one the module defines
    ours = rules.summarizer_function("_compute_olympic_average")
    assert ours.__code__.co_code == rs._compute_olympic_average.__code__.co_code
    for case in ([3.0, 1.0, 2.0], 0, 1), ([5.0, 1.0, 2.0, 4.0, 3.0] * 2, 0, 1), ([2.0, 1.0], 1, 1):
        assert ours(list(case[0]), case[1], case[2]) == rs._compute_olympic_average(
            list(case[0]), case[1], case[2]
        )


def test_power_olympic_rule_is_the_summarizers_code_without_importing_it():
    # the power score's olympic mean is compiled from the package's source like the time score's:
    # the same code, and the summarizer module (which pulls in pandas and scipy, ~190 MB per record
    # worker) is not imported for it
    code = (
        "import sys\n"
        "from trainperf.mlperf.rules import summarizer_function\n"
        "f = summarizer_function('_index_olympic_average')\n"
        # scores 10, 20, 30, 40, 50 sorted by index [4,0,1,2,3]: 50,10,20,30,40; drop one each end,
        # none dropped before: (10 + 20 + 30) / 3 = 20
        "print(f([10.0, 20.0, 30.0, 40.0, 50.0], [4, 0, 1, 2, 3], 0, 1))\n"
        "print('pandas' in sys.modules, 'scipy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["20.0", "False False"]
    ours = rules.summarizer_function("_index_olympic_average")
    assert ours.__code__.co_code == rs._index_olympic_average.__code__.co_code
