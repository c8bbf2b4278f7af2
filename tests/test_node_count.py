"""Nodes of an evaluated result when the config's GPUs per node and the logs disagree.

The bundled v4.1 result ``eos_n32_ngc24.09_nemo`` is 256 H100 GPUs on 32 nodes of 8
(mlcommons/training_results_v4.1 NVIDIA/systems/eos_n32_ngc24.09_nemo.json: number_of_nodes 32,
accelerators_per_node 8).
"""

from __future__ import annotations

import polars as pl
import pytest
from helpers import MLPERF

from trainperf.compare.evaluated import _node_count, side_from_results
from trainperf.mlperf import load_results


@pytest.fixture(scope="module")
def eos_n32_v41():
    return load_results(MLPERF / "v4.1")


def _row(results, gpus_per_node):
    side = side_from_results(results, "Eos", gpus_per_node=gpus_per_node)
    return side.filter(pl.col("result") == "eos_n32_ngc24.09_nemo").row(0, named=True)


def test_config_agreeing_with_the_logs_adds_no_note(eos_n32_v41):
    r = _row(eos_n32_v41, 8)
    assert (r["n_gpus"], r["n_nodes"], r["note"]) == (256, 32, None)


def test_wrong_gpus_per_node_keeps_the_logged_nodes_and_says_so(eos_n32_v41):
    # 3 GPUs per node would make ceil(256 / 3) = 86 nodes; the systems JSON says 32
    r = _row(eos_n32_v41, 3)
    assert r["n_nodes"] == 32
    assert "gives 32 nodes" in r["note"] and "would give 86 for 256 GPUs" in r["note"]


def test_no_logged_nodes_uses_the_config_and_flags_a_remainder():
    # 16 GPUs, 3 per node: ceil(16 / 3) = 6 nodes, and 16 is not a multiple of 3
    nodes, note = _node_count(16, None, 3)
    assert nodes == 6 and "do not divide the run's 16 GPUs" in note
    assert _node_count(16, None, 8) == (2, None)
    assert _node_count(16, 2, None) == (2, None)
