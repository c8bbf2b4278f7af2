"""The MLPerf Training benchmarks by the names readers know (one table for the book, the charts,
the comparison and the memory model; a leaf module, importing nothing of trainperf)."""

from __future__ import annotations

__all__ = ["BENCHMARK_NAMES", "benchmark_name"]

#: MLPerf Training benchmark ids (as in the logs' ``submission_benchmark``) and the names readers
#: know (the MLPerf Training results tables' names, mlcommons.org/benchmarks/training).
BENCHMARK_NAMES: dict[str, str] = {
    "gpt3": "GPT-3 175B",
    "llama2_70b_lora": "Llama 2 70B LoRA",
    "llama31_405b": "Llama 3.1 405B",
    "bert": "BERT-Large",
    "resnet": "ResNet-50",
    "stable_diffusion": "Stable Diffusion v2",
    "dlrm_dcnv2": "DLRM-dcnv2",
    "rnnt": "RNN-T",
    "maskrcnn": "Mask R-CNN",
    "ssd": "RetinaNet",
    "unet3d": "3D U-Net",
    "gnn": "R-GAT",
    "rgat": "R-GAT",
    "retinanet": "RetinaNet",
    "llama31_8b": "Llama 3.1 8B",
    "flux1": "FLUX.1",
}


def benchmark_name(benchmark: str) -> str:
    """The readable name of an MLPerf benchmark id (``gpt3`` -> ``GPT-3 175B``); unknown ids as given."""
    return BENCHMARK_NAMES.get(benchmark, benchmark)
