"""Throughput from real logs of another submitter (fresh-user trial, issue 24).

Fixtures: tests/data/trial/SOURCES.md (repo, commit, sha256, licence).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from trainperf.compare import side_from_results
from trainperf.mlperf import load_results, throughput

TRIAL = Path(__file__).parent / "data" / "trial"
HABANA = TRIAL / "v3.1" / "Intel-HabanaLabs"


@pytest.fixture(scope="module")
def habana():
    return load_results(HABANA)


def test_block_spanning_evaluations_gives_no_step_throughput(habana):
    # The log's only block: block_start at 0 with epoch_count 50,331,648 (one evaluation
    # interval), block_stop at run_stop; 24 evaluations (epoch_num 50,331,648 ... 1,207,959,552)
    # lie inside it. Tokens of the block over its duration were 50,331,648 / 9,215.017 s / 384
    # = 14.2 tokens/s/GPU, 24x too low: no step-level figure may come from such a block.
    t = throughput(habana).row(0, named=True)
    assert t["step_source"] is None
    assert t["tokens_per_s_per_gpu_step"] is None
    assert "holds 23 evaluations beyond its end" in t["note"]
    # End to end: run_start 1696546892494 -> run_stop 1696556107511 ms = 9,215,017 ms
    # = 153.58362 min; tokens to converge = the last eval's epoch_num 1,207,959,552;
    # 1,207,959,552 / (9,215.017 s x 384 GPUs) = 341.37 tokens/s/GPU.
    assert t["tokens_per_s_per_gpu_e2e"] == pytest.approx(1_207_959_552 / (9215.017 * 384), rel=1e-6)


def test_comparison_side_uses_end_to_end_basis(habana):
    side = side_from_results(habana, "Gaudi2", gpus_per_node=8, keep_unscored=True).row(
        0, named=True
    )
    assert side["n_gpus"] == 384
    assert side["throughput_basis"] == "e2e"
    assert side["tokens_per_s_per_gpu"] == pytest.approx(341.37, abs=0.01)
