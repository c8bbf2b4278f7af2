"""The memory chart's node axis says the cluster's own GPUs per node (trial of 2026-12-08: the
Wiwynn GB200 book, 4 GPUs per tray, drew 'nodes (8 GPUs each)' under per-GPU values computed for
4 GPUs per node)."""

from __future__ import annotations

import pytest

from trainperf import flops
from trainperf.report import charts
from trainperf.report.charts import i18n


def _axis_title(gpus_per_node: int) -> tuple[str, float]:
    spec = flops.RECIPES["mixed_adam_fp32_grads"]
    by_nodes = flops.memory_vs_nodes(
        flops.LLAMA2_70B, [1, 2, 4], spec, gpus_per_node=gpus_per_node, n_params=139.1e9 / 18
    )
    one = by_nodes.filter(by_nodes["n_nodes"] == 1)["bytes_per_gpu_perfect"][0]
    layers = charts.memory_per_gpu(by_nodes, 186.0, "Llama 2 70B LoRA").to_dict()["layer"]
    return next(la["encoding"]["x"]["title"] for la in layers if "x" in la.get("encoding", {})), one


def test_a_four_gpu_tray_is_named_on_the_axis():
    title, one_node = _axis_title(4)
    assert title == "nodes (4 GPUs each)"
    # 139.1 GB of model state over the 4 GPUs of one node: 34.8 GB each (by hand)
    assert one_node / 1e9 == pytest.approx(139.1 / 4, rel=1e-6)
    assert _axis_title(8)[0] == "nodes (8 GPUs each)"
    assert i18n.translate("nodes (4 GPUs each)", "ja") == "ノード数 (各 4 GPU)"
